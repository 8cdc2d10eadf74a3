# tests/local.mk: Check unit tests (one program per source file they test), integration
# scripts and benchmarks. `make check` runs TESTS in parallel; a test that needs what this
# machine lacks (a GPU, numpy) exits 77 and counts as skipped.
TEST_FIXTURES = $(abs_top_srcdir)/tests/fixtures
TEST_CPPFLAGS = $(AM_CPPFLAGS) $(CHECK_CFLAGS) $(JANSSON_CFLAGS) \
	-DGD_FIXTURES=\"$(TEST_FIXTURES)\" -DGD_SHARED_DIR=\"$(GD_SHARED_DIR)\" \
	-DGD_BUILDDIR=\"$(abs_top_builddir)\"
TEST_LIBS = libgpudiff.la $(CHECK_LIBS) $(JANSSON_LIBS)
EXTRA_DIST += tests/fixtures

if HAVE_CHECK
# ---- engine ----

# ---- server: linked against libsrv.la, gpudiffd less its main.c ----
SERVER_CHECKS = tests/server/check_blob tests/server/check_config tests/server/check_auth \
	tests/server/check_db
check_PROGRAMS += $(SERVER_CHECKS)
TESTS += $(SERVER_CHECKS)
SERVER_TEST_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/server $(SERVER_DEPS_CFLAGS) \
	-DGD_SRCDIR=\"$(abs_top_srcdir)\"
SERVER_TEST_LIBS = libsrv.la $(TEST_LIBS)
tests_server_check_blob_SOURCES = tests/server/check_blob.c
tests_server_check_blob_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_blob_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_config_SOURCES = tests/server/check_config.c
tests_server_check_config_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_config_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_auth_SOURCES = tests/server/check_auth.c
tests_server_check_auth_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_auth_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_db_SOURCES = tests/server/check_db.c
tests_server_check_db_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_db_LDADD = $(SERVER_TEST_LIBS)
endif

# ---- integration (shell scripts sharing tests/integration/env.sh) ----
TESTS += tests/integration/seed_cpu.sh
EXTRA_DIST += tests/integration/env.sh.in tests/integration/lenet_reference.py \
	tests/integration/seed_cpu.sh

# gpudiffd: each script starts its own daemon (tests/integration/server.sh).
SERVER_INTEGRATION = tests/integration/server_upload.sh tests/integration/server_bad_input.sh \
	tests/integration/server_crash.sh tests/integration/server_list.sh
TESTS += $(SERVER_INTEGRATION)
EXTRA_DIST += tests/integration/server.sh $(SERVER_INTEGRATION)
