# server/local.mk: gpudiffd. Everything but main.c is the convenience library libsrv.la,
# which the unit tests in tests/server/ link too.
noinst_LTLIBRARIES += libsrv.la
bin_PROGRAMS += gpudiffd

SERVER_SQL = schema/sql/001_init.sql schema/sql/002_diff_cache.sql \
	schema/sql/003_compare_jobs.sql
# web: the matrix cache (issue 13)
SERVER_SQL += schema/sql/005_matrix_cache.sql
SERVER_DEPS_CFLAGS = $(JANSSON_CFLAGS) $(SQLITE_CFLAGS) $(MHD_CFLAGS) $(ZSTD_CFLAGS) $(PQ_CFLAGS)
SERVER_DEPS_LIBS = $(JANSSON_LIBS) $(SQLITE_LIBS) $(MHD_LIBS) $(ZSTD_LIBS) $(PQ_LIBS)

libsrv_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/server $(SERVER_DEPS_CFLAGS)
libsrv_la_SOURCES = \
	server/server.h \
	server/db.h \
	server/blob.h \
	server/compare.h \
	server/run_doc.h \
	server/auth.c \
	server/blob.c \
	server/compare.c \
	server/config.c \
	server/db.c \
	server/db_blobs.c \
	server/db_diffs.c \
	server/db_compare_queue.c \
	server/db_layers.c \
	server/db_matrix.c \
	server/db_models.c \
	server/db_replays.c \
	server/db_runs.c \
	server/db_runs_list.c \
	server/db_tokens.c \
	server/device.c \
	server/errors.c \
	server/gate.c \
	server/gate.h \
	server/head.c \
	server/head.h \
	server/http.c \
	server/log.c \
	server/prom_metrics.c \
	server/pool.c \
	server/pool.h \
	server/retention.c \
	server/route_diff.c \
	server/route_health.c \
	server/route_layers.c \
	server/route_models.c \
	server/route_ops.c \
	server/route_knobs.c \
	server/route_runs.c \
	server/route_tokens.c \
	server/routes.c \
	server/run_doc.c \
	server/sql.h \
	server/sql.c \
	server/sql_sqlite.c \
	server/static.c \
	server/util.c
nodist_libsrv_la_SOURCES = server/migrations.c server/migrations_pg.c
libsrv_la_LIBADD = libgpudiff.la $(SERVER_DEPS_LIBS)

gpudiffd_SOURCES = server/main.c
gpudiffd_CPPFLAGS = $(libsrv_la_CPPFLAGS)
gpudiffd_LDADD = libsrv.la $(GD_ENGINE_LIBS)

# The migrations are compiled in, so the binary never depends on where schema/ is.
server/migrations.c: $(SERVER_SQL) $(top_srcdir)/server/embed_sql.sh
	$(AM_V_GEN)$(MKDIR_P) server && \
	$(SHELL) $(top_srcdir)/server/embed_sql.sh $(addprefix $(top_srcdir)/,$(sort $(SERVER_SQL))) \
		> $@.tmp && mv $@.tmp $@
BUILT_SOURCES += server/migrations.c server/migrations_pg.c
CLEANFILES += server/migrations.c server/migrations_pg.c
EXTRA_DIST += $(SERVER_SQL) server/embed_sql.sh schema/openapi.yaml \
	deploy/gpudiffd.conf.example

# sweeps (gpudiff-agent sweep --server): migration 004 follows 003 once that is merged
SERVER_SQL += schema/sql/004_sweeps.sql
libsrv_la_SOURCES += \
	server/sweep_doc.h \
	server/sweep_doc.c \
	server/db_sweeps.c \
	server/route_sweeps.c

# ---- fp: layer requests (fingerprints first, tensors on demand) ----
SERVER_SQL += schema/sql/006_layer_requests.sql
libsrv_la_SOURCES += server/db_requests.c server/route_requests.c

# ---- fleet (issue 15): storage backends, PostgreSQL, backups ----
# PostgreSQL's schema (schema/pg/NNN_name.sql): the same version numbers as SQLite's from
# 005 on, embedded even when libpq is not there (the tables' list stays one per build).
SERVER_PG_SQL = schema/pg/005_init.sql schema/pg/006_layer_requests.sql schema/pg/010_fleet.sql
SERVER_SQL += schema/sql/010_fleet.sql
server/migrations_pg.c: $(SERVER_PG_SQL) $(top_srcdir)/server/embed_sql.sh
	$(AM_V_GEN)$(MKDIR_P) server && \
	$(SHELL) $(top_srcdir)/server/embed_sql.sh --name srv_pg_migrations \
		$(addprefix $(top_srcdir)/,$(sort $(SERVER_PG_SQL))) > $@.tmp && mv $@.tmp $@
EXTRA_DIST += $(SERVER_PG_SQL)
if HAVE_PQ
libsrv_la_SOURCES += server/sql_pg.c
endif

# ---- front (issue 23): the device key from engine/core/knobs.def, migration 023 ----
SERVER_SQL += schema/sql/023_device_keys.sql
SERVER_PG_SQL += schema/pg/023_device_keys.sql

# ---- jobsrv: jobs run by agents as a service (issue 15 item 1), migration 011 ----
SERVER_SQL += schema/sql/011_jobs.sql
SERVER_PG_SQL += schema/pg/011_jobs.sql
# ---- fleet liveness (issue 24): device identity, lease offers, removed devices ----
SERVER_SQL += schema/sql/012_fleet_liveness.sql
SERVER_PG_SQL += schema/pg/012_fleet_liveness.sql
libsrv_la_SOURCES += server/health.c
libsrv_la_SOURCES += server/blob_get.c
libsrv_la_SOURCES += server/fleet.h server/fleet_check.c server/fleet_sweep.c server/spill.c \
	server/db_fleet_files.c server/db_devices.c server/db_fleet_jobs.c server/db_leases.c \
	server/route_files.c server/route_agents.c server/route_fleet_jobs.c server/route_leases.c
# ---- tls: gpudiffd's own TLS (issue 15 item 2) ----
SERVER_DEPS_CFLAGS += $(GNUTLS_CFLAGS)
SERVER_DEPS_LIBS += $(GNUTLS_LIBS)
libsrv_la_SOURCES += server/tls.h server/tls.c
# ---- sec (issue 25): run ownership, the diff cache's cap, bounded downloads ----
SERVER_SQL += schema/sql/020_run_owner.sql
SERVER_PG_SQL += schema/pg/020_run_owner.sql
libsrv_la_SOURCES += server/owner.c
SERVER_SQL += schema/sql/021_diff_cache_cap.sql
SERVER_PG_SQL += schema/pg/021_diff_cache_cap.sql

# ---- web (issue 26): the dashboard at LLM depth and fleet width: decoded tensors kept
# between diffs, a diff's summary and pages of rows (migration 013), overlays, heatmaps,
# standings ----
SERVER_SQL += schema/sql/013_diff_views.sql
SERVER_PG_SQL += schema/pg/013_diff_views.sql
libsrv_la_SOURCES += server/tensor_cache.h server/tensor_cache.c server/diff_view.h \
	server/diff_view.c server/db_diff_views.c server/db_standing.c \
	server/route_diff_views.c server/route_overlay.c server/route_standing.c
# ---- web (issue 26): the diff cache's sizes read from its eviction index, migration 024 ----
SERVER_SQL += schema/sql/024_diff_cache_index.sql
SERVER_PG_SQL += schema/pg/024_diff_cache_index.sql
