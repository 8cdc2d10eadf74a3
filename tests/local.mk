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
endif

# ---- integration (shell scripts sharing tests/integration/env.sh) ----
TESTS += tests/integration/seed_cpu.sh
EXTRA_DIST += tests/integration/env.sh.in tests/integration/lenet_reference.py \
	tests/integration/seed_cpu.sh
