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
# The op tests run one-node models through real sessions (op_harness.c) on the cases of
# tests/fixtures/ops, made by make_op_fixtures.py from the ONNX definitions, and check them
# within the bounds of docs/NUMERICS.md (tolerance.c).
OP_TEST_SOURCES = tests/engine/op_harness.c tests/engine/op_harness.h \
	tests/engine/op_fixture.c tests/engine/op_fixture.h \
	tests/engine/tolerance.c tests/engine/tolerance.h
OP_TESTS = tests/engine/check_op_conv \
	tests/engine/check_op_pool \
	tests/engine/check_op_norm \
	tests/engine/check_op_gemm \
	tests/engine/check_op_act \
	tests/engine/check_op_eltwise \
	tests/engine/check_op_reduce \
	tests/engine/check_op_shape \
	tests/engine/check_infer_errors \
	tests/engine/check_emulate \
	tests/engine/check_backend_ops
check_PROGRAMS += $(OP_TESTS)
TESTS += $(OP_TESTS)
tests_engine_check_op_conv_SOURCES = tests/engine/check_op_conv.c $(OP_TEST_SOURCES)
tests_engine_check_op_conv_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_op_conv_LDADD = $(TEST_LIBS)
tests_engine_check_op_pool_SOURCES = tests/engine/check_op_pool.c $(OP_TEST_SOURCES)
tests_engine_check_op_pool_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_op_pool_LDADD = $(TEST_LIBS)
tests_engine_check_op_norm_SOURCES = tests/engine/check_op_norm.c $(OP_TEST_SOURCES)
tests_engine_check_op_norm_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_op_norm_LDADD = $(TEST_LIBS)
tests_engine_check_op_gemm_SOURCES = tests/engine/check_op_gemm.c $(OP_TEST_SOURCES)
tests_engine_check_op_gemm_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_op_gemm_LDADD = $(TEST_LIBS)
tests_engine_check_op_act_SOURCES = tests/engine/check_op_act.c $(OP_TEST_SOURCES)
tests_engine_check_op_act_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_op_act_LDADD = $(TEST_LIBS)
tests_engine_check_op_eltwise_SOURCES = tests/engine/check_op_eltwise.c $(OP_TEST_SOURCES)
tests_engine_check_op_eltwise_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_op_eltwise_LDADD = $(TEST_LIBS)
tests_engine_check_op_reduce_SOURCES = tests/engine/check_op_reduce.c $(OP_TEST_SOURCES)
tests_engine_check_op_reduce_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_op_reduce_LDADD = $(TEST_LIBS)
tests_engine_check_op_shape_SOURCES = tests/engine/check_op_shape.c $(OP_TEST_SOURCES)
tests_engine_check_op_shape_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_op_shape_LDADD = $(TEST_LIBS)
tests_engine_check_infer_errors_SOURCES = tests/engine/check_infer_errors.c $(OP_TEST_SOURCES)
tests_engine_check_infer_errors_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_infer_errors_LDADD = $(TEST_LIBS)
tests_engine_check_emulate_SOURCES = tests/engine/check_emulate.c $(OP_TEST_SOURCES)
tests_engine_check_emulate_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_emulate_LDADD = $(TEST_LIBS)
tests_engine_check_backend_ops_SOURCES = tests/engine/check_backend_ops.c $(OP_TEST_SOURCES)
tests_engine_check_backend_ops_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_backend_ops_LDADD = $(TEST_LIBS)
endif

# ---- integration (shell scripts sharing tests/integration/env.sh) ----
TESTS += tests/integration/seed_cpu.sh
EXTRA_DIST += tests/integration/env.sh.in tests/integration/lenet_reference.py \
	tests/integration/seed_cpu.sh
