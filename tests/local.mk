# tests/local.mk: Check unit tests (one program per source file they test), integration
# scripts and benchmarks. `make check` runs TESTS in parallel; a test that needs what this
# machine lacks (a GPU, numpy) exits 77 and counts as skipped.
TEST_FIXTURES = $(abs_top_srcdir)/tests/fixtures
CHECK_CPPFLAGS = $(AM_CPPFLAGS) $(CHECK_CFLAGS) $(JANSSON_CFLAGS) \
	-DGD_FIXTURES=\"$(TEST_FIXTURES)\" -DGD_SHARED_DIR=\"$(GD_SHARED_DIR)\" \
	-DGD_BUILDDIR=\"$(abs_top_builddir)\"
CHECK_LDADD = libgpudiff.la $(CHECK_LIBS) $(JANSSON_LIBS)
EXTRA_DIST += tests/fixtures

if HAVE_CHECK
# ---- engine ----
check_PROGRAMS += tests/engine/check_metrics
TESTS += tests/engine/check_metrics
tests_engine_check_metrics_SOURCES = tests/engine/check_metrics.c
tests_engine_check_metrics_CPPFLAGS = $(CHECK_CPPFLAGS)
tests_engine_check_metrics_LDADD = $(CHECK_LDADD)
endif

# ---- benchmarks (built, not run by make check; tests/bench/*.py run them) ----
noinst_PROGRAMS += tests/bench/bench_metrics
tests_bench_bench_metrics_SOURCES = tests/bench/bench_metrics.c
tests_bench_bench_metrics_LDADD = libgpudiff.la
EXTRA_DIST += tests/bench/bench_metrics.py
