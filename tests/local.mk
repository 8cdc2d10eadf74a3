# tests/local.mk: Check unit tests (one program per source file they test), integration
# scripts and benchmarks. `make check` runs TESTS in parallel; a test that needs what this
# machine lacks (a GPU, numpy) exits 77 and counts as skipped.
TEST_FIXTURES = $(abs_top_srcdir)/tests/fixtures
TEST_CPPFLAGS = $(AM_CPPFLAGS) $(CHECK_CFLAGS) $(JANSSON_CFLAGS) \
	-DGD_FIXTURES=\"$(TEST_FIXTURES)\" -DGD_SHARED_DIR=\"$(GD_SHARED_DIR)\" \
	-DGD_BUILDDIR=\"$(abs_top_builddir)\"
TEST_LIBS = $(GD_ENGINE_LIBS) $(CHECK_LIBS) $(JANSSON_LIBS)
EXTRA_DIST += tests/fixtures

if HAVE_CHECK
# ---- engine ----
IO_CHECKS = tests/engine/check_npy tests/engine/check_npz tests/engine/check_safetensors \
	tests/engine/check_array tests/engine/check_ops
check_PROGRAMS += $(IO_CHECKS)
TESTS += $(IO_CHECKS)
tests_engine_check_npy_SOURCES = tests/engine/check_npy.c tests/engine/check_io.h
tests_engine_check_npy_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_npy_LDADD = $(TEST_LIBS)
tests_engine_check_npz_SOURCES = tests/engine/check_npz.c tests/engine/check_io.h
tests_engine_check_npz_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_npz_LDADD = $(TEST_LIBS)
tests_engine_check_safetensors_SOURCES = tests/engine/check_safetensors.c tests/engine/check_io.h
tests_engine_check_safetensors_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_safetensors_LDADD = $(TEST_LIBS)
tests_engine_check_array_SOURCES = tests/engine/check_array.c tests/engine/check_io.h
tests_engine_check_array_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_array_LDADD = $(TEST_LIBS)
tests_engine_check_ops_SOURCES = tests/engine/check_ops.c
tests_engine_check_ops_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_ops_LDADD = $(TEST_LIBS)

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
	tests/engine/check_backend_ops \
	tests/engine/check_gemm_kernel
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
tests_engine_check_gemm_kernel_SOURCES = tests/engine/check_gemm_kernel.c $(OP_TEST_SOURCES)
tests_engine_check_gemm_kernel_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_gemm_kernel_LDADD = $(TEST_LIBS)
tests_engine_check_backend_ops_SOURCES = tests/engine/check_backend_ops.c $(OP_TEST_SOURCES)
tests_engine_check_backend_ops_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_backend_ops_LDADD = $(TEST_LIBS)

# ---- server: linked against libsrv.la, gpudiffd less its main.c ----
SERVER_CHECKS = tests/server/check_blob tests/server/check_config tests/server/check_auth \
	tests/server/check_db tests/server/check_device tests/server/check_db_diffs \
	tests/server/check_compare tests/server/check_head tests/server/check_run_doc
check_PROGRAMS += $(SERVER_CHECKS)
TESTS += $(SERVER_CHECKS)
SERVER_TEST_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/server $(SERVER_DEPS_CFLAGS) \
	-DGD_SRCDIR=\"$(abs_top_srcdir)\"
SERVER_TEST_LIBS = libsrv.la $(TEST_LIBS)
DB_FIXTURE = tests/server/db_fixture.c tests/server/db_fixture.h
tests_server_check_blob_SOURCES = tests/server/check_blob.c
tests_server_check_blob_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_blob_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_config_SOURCES = tests/server/check_config.c
tests_server_check_config_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_config_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_auth_SOURCES = tests/server/check_auth.c
tests_server_check_auth_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_auth_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_db_SOURCES = tests/server/check_db.c $(DB_FIXTURE)
tests_server_check_db_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_db_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_device_SOURCES = tests/server/check_device.c
tests_server_check_device_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_device_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_db_diffs_SOURCES = tests/server/check_db_diffs.c $(DB_FIXTURE)
tests_server_check_db_diffs_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_db_diffs_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_compare_SOURCES = tests/server/check_compare.c $(DB_FIXTURE)
tests_server_check_compare_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_compare_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_head_SOURCES = tests/server/check_head.c
tests_server_check_head_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_head_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_run_doc_SOURCES = tests/server/check_run_doc.c
tests_server_check_run_doc_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_run_doc_LDADD = $(SERVER_TEST_LIBS)

# ---- agent: upload.c is compiled into its test (the agent has no library of its own) ----
check_PROGRAMS += tests/agent/check_upload
TESTS += tests/agent/check_upload
tests_agent_check_upload_SOURCES = tests/agent/check_upload.c agent/upload.c agent/upload.h
tests_agent_check_upload_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/agent $(CURL_CFLAGS)
tests_agent_check_upload_LDADD = $(TEST_LIBS) $(CURL_LIBS)
check_PROGRAMS += tests/engine/check_metrics
TESTS += tests/engine/check_metrics
tests_engine_check_metrics_SOURCES = tests/engine/check_metrics.c
tests_engine_check_metrics_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_metrics_LDADD = $(TEST_LIBS)
endif

# ---- integration (shell scripts sharing tests/integration/env.sh) ----
INTEGRATION_TESTS = tests/integration/seed_cpu.sh tests/integration/seed_diff.sh \
	tests/integration/seed_threads.sh \
	tests/integration/seed_cuda.sh tests/engine/backend_ops_cuda.sh \
	tests/integration/agent_bad_input.sh
TESTS += $(INTEGRATION_TESTS)
EXTRA_DIST += tests/integration/env.sh.in tests/integration/lenet_reference.py \
	$(INTEGRATION_TESTS)

# libFuzzer targets: every tests/fuzz/fuzz_*.c, linked against libsrv and the engine of a
# build configured with CC=clang and -fsanitize=fuzzer-no-link (tests/fuzz/run.sh makes that
# build, runs `make fuzz-targets` in it, then each target over tests/fuzz/corpus/NAME/).
EXTRA_DIST += tests/fuzz tests/fuzz/run.sh
FUZZ_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/server $(SERVER_DEPS_CFLAGS)
fuzz-targets: libsrv.la $(GD_ENGINE_LIBS)
	@$(MKDIR_P) tests/fuzz
	@for f in $(top_srcdir)/tests/fuzz/fuzz_*.c; do \
	    name=`basename $$f .c`; \
	    echo "  FUZZ     tests/fuzz/$$name"; \
	    $(CC) $(DEFS) $(FUZZ_CPPFLAGS) $(CPPFLAGS) $(AM_CFLAGS) $(CFLAGS) -c $$f \
	        -o tests/fuzz/$$name.o || exit 1; \
	    $(LIBTOOL) --silent --tag=CC --mode=link $(CC) $(AM_CFLAGS) $(CFLAGS) \
	        -fsanitize=fuzzer $(AM_LDFLAGS) $(LDFLAGS) -o tests/fuzz/$$name \
	        tests/fuzz/$$name.o libsrv.la $(GD_ENGINE_LIBS) $(LIBS) || exit 1; \
	done
.PHONY: fuzz-targets

# ---- benchmarks: programs, not tests (`make bench` builds them) ----
EXTRA_DIST += tests/bench/bench_util.h
EXTRA_PROGRAMS = tests/bench/bench_forward
tests_bench_bench_forward_SOURCES = tests/bench/bench_forward.c
tests_bench_bench_forward_CPPFLAGS = $(AM_CPPFLAGS) $(JANSSON_CFLAGS)
tests_bench_bench_forward_LDADD = $(GD_ENGINE_LIBS) $(JANSSON_LIBS)
EXTRA_DIST += tests/bench/bench_forward.py
CLEANFILES += $(EXTRA_PROGRAMS)
if HAVE_CUDA
EXTRA_PROGRAMS += tests/bench/bench_gpu
tests_bench_bench_gpu_SOURCES = tests/bench/bench_gpu.c
tests_bench_bench_gpu_CPPFLAGS = $(AM_CPPFLAGS) $(JANSSON_CFLAGS) $(CUDA_CFLAGS)
tests_bench_bench_gpu_LDADD = $(GD_ENGINE_LIBS) $(JANSSON_LIBS)
endif
EXTRA_DIST += tests/bench/bench_cuda.py
EXTRA_PROGRAMS += tests/bench/bench_metrics
tests_bench_bench_metrics_SOURCES = tests/bench/bench_metrics.c
tests_bench_bench_metrics_LDADD = $(GD_ENGINE_LIBS)
EXTRA_DIST += tests/bench/bench_metrics.py
# gpudiffd: ingest throughput against writing straight into SQLite, and /api/v1/diff latency
# under concurrent clients (docs/PERFORMANCE.md). Each starts a daemon of this build.
BENCH_SERVER_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/server -I$(top_srcdir)/agent \
	$(SERVER_DEPS_CFLAGS) $(CURL_CFLAGS) -DGD_BUILDDIR=\"$(abs_top_builddir)\"
BENCH_SERVER_SOURCES = tests/bench/bench_server.c tests/bench/bench_server.h agent/upload.c
EXTRA_PROGRAMS += tests/bench/bench_ingest tests/bench/bench_diff_latency
tests_bench_bench_ingest_SOURCES = tests/bench/bench_ingest.c $(BENCH_SERVER_SOURCES)
tests_bench_bench_ingest_CPPFLAGS = $(BENCH_SERVER_CPPFLAGS)
tests_bench_bench_ingest_LDADD = libsrv.la $(GD_ENGINE_LIBS) $(CURL_LIBS)
tests_bench_bench_diff_latency_SOURCES = tests/bench/bench_diff_latency.c $(BENCH_SERVER_SOURCES)
tests_bench_bench_diff_latency_CPPFLAGS = $(BENCH_SERVER_CPPFLAGS)
tests_bench_bench_diff_latency_LDADD = $(GD_ENGINE_LIBS) $(JANSSON_LIBS) $(CURL_LIBS)
# gpudiffd under 64 uploading clients: healthz, cached and uncached diff latency, RSS (srv).
EXTRA_PROGRAMS += tests/bench/bench_load
tests_bench_bench_load_SOURCES = tests/bench/bench_load.c $(BENCH_SERVER_SOURCES)
tests_bench_bench_load_CPPFLAGS = $(BENCH_SERVER_CPPFLAGS)
tests_bench_bench_load_LDADD = $(GD_ENGINE_LIBS) $(JANSSON_LIBS) $(CURL_LIBS) -lpthread
bench: $(EXTRA_PROGRAMS)
.PHONY: bench

# gpudiffd: each script starts its own daemon (tests/integration/server.sh).
SERVER_INTEGRATION = tests/integration/server_upload.sh tests/integration/server_bad_input.sh \
	tests/integration/server_crash.sh tests/integration/server_list.sh \
	tests/integration/server_e2e.sh tests/integration/server_crash_agent.sh
TESTS += $(SERVER_INTEGRATION)
EXTRA_DIST += tests/integration/server.sh $(SERVER_INTEGRATION)

# gpudiffd under hostile clients (srv): request kinds one by one, and the demo's port check.
SERVER_HOSTILE = tests/integration/server_hostile.sh tests/integration/server_hostile_conn.sh \
	tests/integration/server_hostile_work.sh tests/integration/demo_port.sh
TESTS += $(SERVER_HOSTILE)
EXTRA_DIST += $(SERVER_HOSTILE) tests/integration/hostile.py \
	tests/integration/hostile_requests.py tests/integration/hostile_conns.py \
	tests/integration/hostile_work.py

# ---- the dashboard in headless Chromium (tests/web/README.md) ----
WEB_TESTS = tests/web/dashboard.sh
TESTS += $(WEB_TESTS)
EXTRA_DIST += $(WEB_TESTS) tests/web/dashboard.test.mjs tests/web/package.json \
	tests/web/package-lock.json

# ---- cuda: TF32 errors in the range of a 10-bit mantissa (skipped without a GPU) ----
if HAVE_CHECK
check_PROGRAMS += tests/engine/check_cuda_tf32
TESTS += tests/engine/check_cuda_tf32
tests_engine_check_cuda_tf32_SOURCES = tests/engine/check_cuda_tf32.c tests/engine/op_harness.c \
	tests/engine/op_harness.h
tests_engine_check_cuda_tf32_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_cuda_tf32_LDADD = $(TEST_LIBS)
endif
EXTRA_DIST += tests/bench/gpu_session.sh
