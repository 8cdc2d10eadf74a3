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
	tests/engine/check_op_logic \
	tests/engine/check_op_shape \
	tests/engine/check_infer_errors \
	tests/engine/check_emulate \
	tests/engine/check_backend_ops \
	tests/engine/check_gemm_kernel
check_PROGRAMS += $(OP_TESTS)
TESTS += $(OP_TESTS)
# cuda --repro bitwise against cpu, bit for bit: run by tests/engine/repro_cuda.sh (CK_FORK=no)
check_PROGRAMS += tests/engine/check_repro
tests_engine_check_repro_SOURCES = tests/engine/check_repro.c $(OP_TEST_SOURCES)
tests_engine_check_repro_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_repro_LDADD = $(TEST_LIBS)
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
tests_engine_check_op_logic_SOURCES = tests/engine/check_op_logic.c $(OP_TEST_SOURCES)
tests_engine_check_op_logic_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_op_logic_LDADD = $(TEST_LIBS)
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
# Indexing, data movement and losses (ops-idx).
IDX_TESTS = tests/engine/check_op_index tests/engine/check_op_loss tests/engine/check_infer_index
check_PROGRAMS += $(IDX_TESTS)
TESTS += $(IDX_TESTS)
tests_engine_check_op_index_SOURCES = tests/engine/check_op_index.c $(OP_TEST_SOURCES)
tests_engine_check_op_index_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_op_index_LDADD = $(TEST_LIBS)
tests_engine_check_op_loss_SOURCES = tests/engine/check_op_loss.c $(OP_TEST_SOURCES)
tests_engine_check_op_loss_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_op_loss_LDADD = $(TEST_LIBS)
tests_engine_check_infer_index_SOURCES = tests/engine/check_infer_index.c $(OP_TEST_SOURCES)
tests_engine_check_infer_index_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_infer_index_LDADD = $(TEST_LIBS)
# ops-spatial: the executor's batching (session.c), and Resize (op_resize.c)
SPATIAL_CHECKS = tests/engine/check_session_batch tests/engine/check_op_resize
check_PROGRAMS += $(SPATIAL_CHECKS)
TESTS += $(SPATIAL_CHECKS)
tests_engine_check_session_batch_SOURCES = tests/engine/check_session_batch.c $(OP_TEST_SOURCES)
tests_engine_check_session_batch_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_session_batch_LDADD = $(TEST_LIBS)
tests_engine_check_op_resize_SOURCES = tests/engine/check_op_resize.c $(OP_TEST_SOURCES)
tests_engine_check_op_resize_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_op_resize_LDADD = $(TEST_LIBS)

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
tests_agent_check_upload_SOURCES = tests/agent/check_upload.c agent/upload.c agent/upload.h \
	agent/http.c agent/http.h agent/server_url.c agent/server_url.h
tests_agent_check_upload_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/agent $(CURL_CFLAGS)
tests_agent_check_upload_LDADD = $(TEST_LIBS) $(CURL_LIBS)
check_PROGRAMS += tests/agent/check_server_url
TESTS += tests/agent/check_server_url
tests_agent_check_server_url_SOURCES = tests/agent/check_server_url.c agent/server_url.c \
	agent/server_url.h
tests_agent_check_server_url_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/agent $(CURL_CFLAGS)
tests_agent_check_server_url_LDADD = $(TEST_LIBS) $(CURL_LIBS)
check_PROGRAMS += tests/engine/check_metrics
TESTS += tests/engine/check_metrics
tests_engine_check_metrics_SOURCES = tests/engine/check_metrics.c
tests_engine_check_metrics_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_metrics_LDADD = $(TEST_LIBS)
endif

# ---- integration (shell scripts sharing tests/integration/env.sh) ----
INTEGRATION_TESTS = tests/integration/seed_cpu.sh tests/integration/seed_diff.sh \
	tests/integration/seed_threads.sh \
	tests/integration/seed_cuda.sh tests/engine/backend_ops_cuda.sh tests/engine/repro_cuda.sh \
	tests/engine/backend_cases_elt.sh \
	tests/integration/agent_bad_input.sh
# ops-spatial
INTEGRATION_TESTS += tests/integration/batch_mixing.sh
# front (issue 23): every knob of knobs.def through run, run.json and its rerun record
INTEGRATION_TESTS += tests/integration/knobs_rerun.sh tests/integration/agent_bundle.sh
# the verdict's calibration corpus, a slice (the whole: tests/bench/calibration.sh)
INTEGRATION_TESTS += tests/engine/calibration.sh
TESTS += $(INTEGRATION_TESTS)
EXTRA_DIST += tests/integration/env.sh.in tests/integration/lenet_reference.py \
	$(INTEGRATION_TESTS) tests/engine/calibration.py tests/bench/calibration.sh

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
BENCH_SERVER_SOURCES = tests/bench/bench_server.c tests/bench/bench_server.h agent/upload.c \
	agent/http.c agent/server_url.c
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

# ---- web (issue 13): the run list's filters and the matrix cache ----
WEB_SERVER_CHECKS = tests/server/check_db_runs_list tests/server/check_db_matrix
check_PROGRAMS += $(WEB_SERVER_CHECKS)
TESTS += $(WEB_SERVER_CHECKS)
tests_server_check_db_runs_list_SOURCES = tests/server/check_db_runs_list.c $(DB_FIXTURE)
tests_server_check_db_runs_list_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_db_runs_list_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_db_matrix_SOURCES = tests/server/check_db_matrix.c $(DB_FIXTURE)
tests_server_check_db_matrix_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_db_matrix_LDADD = $(SERVER_TEST_LIBS)
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
# web: the scale steps, their data, the vendored library's check, the API's new parameters
TESTS += tests/web/vendor.sh tests/integration/server_web_api.sh
EXTRA_DIST += tests/web/harness.mjs tests/web/scale_steps.mjs tests/web/make_fleet.py \
	tests/web/vendor.sh tests/integration/server_web_api.sh tests/bench/web_views.mjs
# web2: the steps of the diagnosis's fields (truth, partial data, replay) and of sweeps
EXTRA_DIST += tests/web/truth_steps.mjs
EXTRA_DIST += tests/web/jobs_steps.mjs

# ---- cuda: TF32 errors in the range of a 10-bit mantissa (skipped without a GPU) ----
if HAVE_CHECK
check_PROGRAMS += tests/engine/check_cuda_tf32
TESTS += tests/engine/check_cuda_tf32
tests_engine_check_cuda_tf32_SOURCES = tests/engine/check_cuda_tf32.c tests/engine/op_harness.c \
	tests/engine/op_harness.h
tests_engine_check_cuda_tf32_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_cuda_tf32_LDADD = $(TEST_LIBS)
# ops-spatial: pools, Resize and normalizations on cuda, every case (skipped without a GPU)
check_PROGRAMS += tests/engine/check_cuda_spatial
TESTS += tests/engine/check_cuda_spatial
tests_engine_check_cuda_spatial_SOURCES = tests/engine/check_cuda_spatial.c $(OP_TEST_SOURCES)
tests_engine_check_cuda_spatial_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_cuda_spatial_LDADD = $(TEST_LIBS)
endif
EXTRA_DIST += tests/bench/gpu_session.sh tests/bench/gpu_ops-spatial.sh
EXTRA_DIST += tests/bench/gpu_ops-elt.sh

# ---- views: node outputs that are their input's bytes (engine/core/view.c) ----
if HAVE_CHECK
check_PROGRAMS += tests/engine/check_view
TESTS += tests/engine/check_view
tests_engine_check_view_SOURCES = tests/engine/check_view.c
tests_engine_check_view_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_view_LDADD = $(TEST_LIBS)
endif

# ---- sweep: the session calls it times and slices with, its grid, its reports ----
if HAVE_CHECK
check_PROGRAMS += tests/engine/check_session
TESTS += tests/engine/check_session
tests_engine_check_session_SOURCES = tests/engine/check_session.c tests/engine/session_graph.c \
	tests/engine/session_graph.h
tests_engine_check_session_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_session_LDADD = $(TEST_LIBS)
endif
if HAVE_CHECK
check_PROGRAMS += tests/engine/check_cuda_session
TESTS += tests/engine/check_cuda_session
tests_engine_check_cuda_session_SOURCES = tests/engine/check_cuda_session.c \
	tests/engine/session_graph.c tests/engine/session_graph.h
tests_engine_check_cuda_session_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_cuda_session_LDADD = $(TEST_LIBS)
endif
if HAVE_CHECK
check_PROGRAMS += tests/agent/check_sweep_grid
TESTS += tests/agent/check_sweep_grid
tests_agent_check_sweep_grid_SOURCES = tests/agent/check_sweep_grid.c agent/sweep_grid.c \
	agent/sweep.h
tests_agent_check_sweep_grid_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/agent
tests_agent_check_sweep_grid_LDADD = $(TEST_LIBS)
endif
if HAVE_CHECK
check_PROGRAMS += tests/agent/check_sweep_copy
TESTS += tests/agent/check_sweep_copy
tests_agent_check_sweep_copy_SOURCES = tests/agent/check_sweep_copy.c agent/sweep_copy.c agent/sweep.h
tests_agent_check_sweep_copy_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/agent
tests_agent_check_sweep_copy_LDADD = $(TEST_LIBS)
endif
SWEEP_INTEGRATION = tests/integration/sweep_seed.sh tests/integration/server_sweep.sh \
	tests/integration/sweep_h200_report.sh
TESTS += $(SWEEP_INTEGRATION)
EXTRA_DIST += $(SWEEP_INTEGRATION)
if HAVE_CHECK
SWEEP_SERVER_CHECKS = tests/server/check_db_sweeps tests/server/check_sweep_doc
check_PROGRAMS += $(SWEEP_SERVER_CHECKS)
TESTS += $(SWEEP_SERVER_CHECKS)
tests_server_check_db_sweeps_SOURCES = tests/server/check_db_sweeps.c $(DB_FIXTURE)
tests_server_check_db_sweeps_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_db_sweeps_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_sweep_doc_SOURCES = tests/server/check_sweep_doc.c
tests_server_check_sweep_doc_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_sweep_doc_LDADD = $(SERVER_TEST_LIBS)
endif
EXTRA_DIST += tests/bench/bench_sweep.sh tests/bench/gpu_sweep.sh tests/bench/sweep_torch.py
if HAVE_CHECK
check_PROGRAMS += tests/agent/check_sweep_summary
TESTS += tests/agent/check_sweep_summary
tests_agent_check_sweep_summary_SOURCES = tests/agent/check_sweep_summary.c \
	agent/sweep_summary.c agent/sweep.h
tests_agent_check_sweep_summary_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/agent
tests_agent_check_sweep_summary_LDADD = $(TEST_LIBS)
endif

# ---- ONNX: the loader's checks and the conformance run over the ONNX backend tests
# (docs/ONNX.md). The runner is a program; conformance.sh is the test that runs it. ----
if HAVE_CHECK
check_PROGRAMS += tests/engine/check_onnx
TESTS += tests/engine/check_onnx
tests_engine_check_onnx_SOURCES = tests/engine/check_onnx.c tests/engine/check_io.h
tests_engine_check_onnx_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_onnx_LDADD = $(TEST_LIBS)
endif
# libFuzzer target over the loader, built by hand like the others (top of the file); its
# seeds are tests/fuzz/corpus/onnx (made by tests/fixtures/onnx/make_onnx_fixtures.py).
EXTRA_DIST += tests/fuzz/fuzz_onnx.c tests/fuzz/corpus/onnx
check_PROGRAMS += tests/onnx/onnx_conformance
tests_onnx_onnx_conformance_SOURCES = tests/onnx/onnx_conformance.c
tests_onnx_onnx_conformance_CPPFLAGS = $(AM_CPPFLAGS)
tests_onnx_onnx_conformance_LDADD = $(GD_ENGINE_LIBS)
ONNX_TESTS = tests/onnx/conformance.sh tests/onnx/seed_onnx.sh tests/onnx/agent_onnx.sh \
	tests/onnx/agent_commands.sh
TESTS += $(ONNX_TESTS)
EXTRA_DIST += $(ONNX_TESTS) tests/onnx/pass_list.txt tests/onnx/known_failures.txt tests/onnx/seed_to_onnx.py
ONNX_TESTDATA = /usr/share/libonnx-testdata/data
ONNX_SUITES = node=$(ONNX_TESTDATA)/node pytorch-converted=$(ONNX_TESTDATA)/pytorch-converted \
	pytorch-operator=$(ONNX_TESTDATA)/pytorch-operator simple=$(ONNX_TESTDATA)/simple \
	shared-pytorch-converted=$(GD_SHARED_DIR)/onnx-tests/pytorch-converted \
	shared-pytorch-operator=$(GD_SHARED_DIR)/onnx-tests/pytorch-operator
# The load benchmark (docs/PERFORMANCE.md) and the GPU machine's ONNX script.
EXTRA_PROGRAMS += tests/bench/bench_onnx_load
tests_bench_bench_onnx_load_SOURCES = tests/bench/bench_onnx_load.c
tests_bench_bench_onnx_load_LDADD = $(GD_ENGINE_LIBS)
EXTRA_DIST += tests/bench/make_vit_onnx.py tests/bench/gpu_onnx.sh tests/bench/gpu_onnx.py
# Regenerates the pass list from this build (one command: `make onnx-pass-list`).
onnx-pass-list: tests/onnx/onnx_conformance$(EXEEXT)
	./tests/onnx/onnx_conformance --quiet --write-pass-list $(abs_top_srcdir)/tests/onnx/pass_list.txt \
	    $(ONNX_SUITES)
.PHONY: onnx-pass-list

# ---- the comparison (diag): hand-made runs through gd_diff_runs (tests/engine/diff_fixture.c) ----
if HAVE_CHECK
DIFF_CHECKS = tests/engine/check_verdict tests/engine/check_boundary tests/engine/check_truth \
	tests/engine/check_env_diff tests/engine/check_explain tests/engine/check_diff \
	tests/engine/check_knobs tests/engine/check_graph_replay tests/engine/check_noise_probe
check_PROGRAMS += $(DIFF_CHECKS)
TESTS += $(DIFF_CHECKS)
DIFF_FIXTURE = tests/engine/diff_fixture.c tests/engine/diff_fixture.h
tests_engine_check_noise_probe_SOURCES = tests/engine/check_noise_probe.c
tests_engine_check_noise_probe_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_noise_probe_LDADD = $(TEST_LIBS)
tests_engine_check_verdict_SOURCES = tests/engine/check_verdict.c $(DIFF_FIXTURE)
tests_engine_check_verdict_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_verdict_LDADD = $(TEST_LIBS)
tests_engine_check_boundary_SOURCES = tests/engine/check_boundary.c $(DIFF_FIXTURE)
tests_engine_check_boundary_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_boundary_LDADD = $(TEST_LIBS)
tests_engine_check_truth_SOURCES = tests/engine/check_truth.c $(DIFF_FIXTURE)
tests_engine_check_truth_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_truth_LDADD = $(TEST_LIBS)
tests_engine_check_env_diff_SOURCES = tests/engine/check_env_diff.c $(DIFF_FIXTURE)
tests_engine_check_env_diff_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_env_diff_LDADD = $(TEST_LIBS)
tests_engine_check_explain_SOURCES = tests/engine/check_explain.c $(DIFF_FIXTURE)
tests_engine_check_explain_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_explain_LDADD = $(TEST_LIBS)
tests_engine_check_diff_SOURCES = tests/engine/check_diff.c $(DIFF_FIXTURE)
tests_engine_check_diff_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_diff_LDADD = $(TEST_LIBS)
tests_engine_check_knobs_SOURCES = tests/engine/check_knobs.c
tests_engine_check_knobs_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_knobs_LDADD = $(TEST_LIBS)
tests_engine_check_graph_replay_SOURCES = tests/engine/check_graph_replay.c
tests_engine_check_graph_replay_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_graph_replay_LDADD = $(TEST_LIBS)
endif
# ---- the float32 functions of engine/core/math_rules.h against long double libm ----
if HAVE_CHECK
check_PROGRAMS += tests/engine/check_math_rules
TESTS += tests/engine/check_math_rules
tests_engine_check_math_rules_SOURCES = tests/engine/check_math_rules.c
tests_engine_check_math_rules_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_math_rules_LDADD = $(TEST_LIBS)
endif
DIFF_INTEGRATION = tests/integration/seed_replay.sh
TESTS += $(DIFF_INTEGRATION)
EXTRA_DIST += $(DIFF_INTEGRATION)
# The replay's benchmark and the GPU checks of the comparison (docs/PERFORMANCE.md, "Replay").
EXTRA_DIST += tests/bench/bench_replay.sh tests/bench/gpu_diag.sh tests/bench/gpu_diag_resnet.py

# ---- half: float16 and bfloat16 storage, --dtype, exported transformers ----
HALF_INTEGRATION = tests/integration/transformer_half.sh
TESTS += $(HALF_INTEGRATION)
EXTRA_DIST += $(HALF_INTEGRATION) tests/bench/gpt2_export.py
if HAVE_CHECK
HALF_CHECKS = tests/engine/check_half_call tests/engine/check_graph_dtype \
	tests/engine/check_bundle_write
check_PROGRAMS += $(HALF_CHECKS)
TESTS += $(HALF_CHECKS)
tests_engine_check_half_call_SOURCES = tests/engine/check_half_call.c $(OP_TEST_SOURCES)
tests_engine_check_half_call_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_half_call_LDADD = $(TEST_LIBS)
tests_engine_check_graph_dtype_SOURCES = tests/engine/check_graph_dtype.c
tests_engine_check_graph_dtype_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_graph_dtype_LDADD = $(TEST_LIBS)
tests_engine_check_bundle_write_SOURCES = tests/engine/check_bundle_write.c
tests_engine_check_bundle_write_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_bundle_write_LDADD = $(TEST_LIBS)
endif
# the forward of large ONNX models without capture: time and peak memory (gpu_half.sh)
EXTRA_PROGRAMS += tests/bench/bench_half
tests_bench_bench_half_SOURCES = tests/bench/bench_half.c
tests_bench_bench_half_LDADD = $(GD_ENGINE_LIBS)
bench: tests/bench/bench_half$(EXEEXT)
# cuda --repro bitwise against cpu on whole models, and its cost (tests/bench/gpu_bitwise.sh)
EXTRA_PROGRAMS += tests/bench/bench_bitwise
tests_bench_bench_bitwise_SOURCES = tests/bench/bench_bitwise.c
tests_bench_bench_bitwise_LDADD = $(GD_ENGINE_LIBS)
bench: tests/bench/bench_bitwise$(EXEEXT)
EXTRA_DIST += tests/bench/gpu_bitwise.sh tests/bench/gpu_bitwise.py
# ---- fp: fingerprints (hash against BLAKE3's vectors, statistics, sample, JSON) ----
check_PROGRAMS += tests/engine/check_fingerprint
TESTS += tests/engine/check_fingerprint
tests_engine_check_fingerprint_SOURCES = tests/engine/check_fingerprint.c
tests_engine_check_fingerprint_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_fingerprint_LDADD = $(TEST_LIBS)
# fp_verify: a bundle's recorded fingerprints against the host's from its tensor files (the
# CUDA kernels on real captures, tests/bench/gpu_fp.sh).
EXTRA_PROGRAMS += tests/bench/fp_verify
tests_bench_fp_verify_SOURCES = tests/bench/fp_verify.c tests/bench/fp_same.h
tests_bench_fp_verify_CPPFLAGS = $(AM_CPPFLAGS) $(JANSSON_CFLAGS)
tests_bench_fp_verify_LDADD = $(GD_ENGINE_LIBS) $(JANSSON_LIBS)
EXTRA_DIST += tests/bench/gpu_fp.sh tests/bench/gpu_speed.sh
# fp2: the fingerprint kernels against a device-to-device copy, 1 MiB to 4 GiB, and their
# result against the host's bit for bit (exits 77 without a GPU; gpu_fp.sh runs it).
if HAVE_CUDA
EXTRA_PROGRAMS += tests/bench/bench_fp_cuda
tests_bench_bench_fp_cuda_SOURCES = tests/bench/bench_fp_cuda.c tests/bench/fp_same.h
tests_bench_bench_fp_cuda_CPPFLAGS = $(AM_CPPFLAGS) $(JANSSON_CFLAGS) $(CUDA_CFLAGS)
# The kernels' archive follows the engine on the link line (engine/local.mk); its objects
# name ops with gd_op_name, which nothing else this program calls pulls in from the engine.
tests_bench_bench_fp_cuda_LDFLAGS = -Wl,--undefined=gd_op_name
tests_bench_bench_fp_cuda_LDADD = $(GD_ENGINE_LIBS) $(JANSSON_LIBS)
endif
# fp: 500 layers as fingerprints, three asked for, fetched and diffed in full.
TESTS += tests/integration/server_fingerprints.sh
EXTRA_DIST += tests/integration/server_fingerprints.sh

# ---- cudnn (issue 17): the graph API's fixed choices, and the GPU script ----
if HAVE_CHECK
check_PROGRAMS += tests/engine/check_conv_config
TESTS += tests/engine/check_conv_config
tests_engine_check_conv_config_SOURCES = tests/engine/check_conv_config.c
tests_engine_check_conv_config_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_conv_config_LDADD = $(TEST_LIBS)
endif
EXTRA_DIST += tests/bench/gpu_cudnn.sh tests/bench/gpu_cudnn.py tests/bench/bench_model.h
if HAVE_CUDA
EXTRA_PROGRAMS += tests/bench/bench_gpu_matrix
tests_bench_bench_gpu_matrix_SOURCES = tests/bench/bench_gpu_matrix.c
tests_bench_bench_gpu_matrix_LDADD = $(GD_ENGINE_LIBS)
endif

# ---- fleet (issue 15): gpudiffd on PostgreSQL, several daemons behind haproxy ----
FLEET_INTEGRATION = tests/integration/server_pg.sh tests/integration/server_fleet.sh \
	tests/integration/agent_tls.sh tests/integration/server_backup.sh \
	tests/integration/deploy_systemd.sh tests/integration/server_prometheus.sh
TESTS += $(FLEET_INTEGRATION)
EXTRA_DIST += $(FLEET_INTEGRATION) tests/integration/pg.sh deploy/systemd/gpudiffd.service \
	deploy/systemd/gpudiff-agent.service deploy/systemd/gpudiff-agent.path deploy/grafana/gpudiff.json \
	tests/bench/bench_pg.sh tests/bench/bench_latency.sh

# ---- jobsrv: jobs, devices and leases (issue 15 item 1) ----
JOBSRV_INTEGRATION = tests/integration/server_jobs.sh tests/integration/server_diff_text.sh
TESTS += $(JOBSRV_INTEGRATION)
EXTRA_DIST += $(JOBSRV_INTEGRATION)
JOBSRV_SERVER_CHECKS = tests/server/check_db_leases tests/server/check_db_fleet_jobs \
	tests/server/check_db_devices tests/server/check_db_fleet_files
check_PROGRAMS += $(JOBSRV_SERVER_CHECKS)
TESTS += $(JOBSRV_SERVER_CHECKS)
FLEET_FIXTURE = tests/server/fleet_fixture.c tests/server/fleet_fixture.h
tests_server_check_db_leases_SOURCES = tests/server/check_db_leases.c $(DB_FIXTURE) $(FLEET_FIXTURE)
tests_server_check_db_leases_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_db_leases_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_db_fleet_jobs_SOURCES = tests/server/check_db_fleet_jobs.c $(DB_FIXTURE) \
	$(FLEET_FIXTURE)
tests_server_check_db_fleet_jobs_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_db_fleet_jobs_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_db_devices_SOURCES = tests/server/check_db_devices.c $(DB_FIXTURE) \
	$(FLEET_FIXTURE)
tests_server_check_db_devices_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_db_devices_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_db_fleet_files_SOURCES = tests/server/check_db_fleet_files.c $(DB_FIXTURE)
tests_server_check_db_fleet_files_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_db_fleet_files_LDADD = $(SERVER_TEST_LIBS)

# ---- jobagt: gpudiff-agent submit and serve (issue 15 item 1, the agent's half) ----
JOBAGT_INTEGRATION = tests/integration/agent_jobs.sh tests/integration/agent_jobs_download.sh \
	tests/integration/fleet_netns.sh tests/integration/agent_jobs_files.sh
TESTS += $(JOBAGT_INTEGRATION)
EXTRA_DIST += $(JOBAGT_INTEGRATION) deploy/systemd/gpudiff-agent-serve.service
check_PROGRAMS += tests/agent/check_jobs_args
TESTS += tests/agent/check_jobs_args
tests_agent_check_jobs_args_SOURCES = tests/agent/check_jobs_args.c agent/jobs_args.c agent/jobs.h \
	agent/cli_args.c
tests_agent_check_jobs_args_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/agent $(CURL_CFLAGS)
tests_agent_check_jobs_args_LDADD = $(TEST_LIBS)
# ---- tls: gpudiffd's own TLS (issue 15 item 2) ----
check_PROGRAMS += tests/server/check_tls
TESTS += tests/server/check_tls
tests_server_check_tls_SOURCES = tests/server/check_tls.c
tests_server_check_tls_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_tls_LDADD = $(SERVER_TEST_LIBS) $(GNUTLS_LIBS)
TLS_INTEGRATION = tests/integration/server_tls_hostile.sh
TESTS += $(TLS_INTEGRATION)
EXTRA_DIST += $(TLS_INTEGRATION) tests/integration/tls.sh tests/integration/hostile_tls.py
# audit: the fold evaluator at int64's limits (engine/core/fold.c)
if HAVE_CHECK
AUDIT_CHECKS = tests/engine/check_fold
check_PROGRAMS += $(AUDIT_CHECKS)
TESTS += $(AUDIT_CHECKS)
tests_engine_check_fold_SOURCES = tests/engine/check_fold.c
tests_engine_check_fold_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_fold_LDADD = $(TEST_LIBS)
endif
# web (issue 26): decoded tensors kept between diffs, a diff's view, its storage
if HAVE_CHECK
WEB_CHECKS = tests/server/check_tensor_cache tests/server/check_diff_view \
	tests/server/check_db_diff_views
check_PROGRAMS += $(WEB_CHECKS)
TESTS += $(WEB_CHECKS)
tests_server_check_tensor_cache_SOURCES = tests/server/check_tensor_cache.c
tests_server_check_tensor_cache_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_tensor_cache_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_diff_view_SOURCES = tests/server/check_diff_view.c
tests_server_check_diff_view_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_diff_view_LDADD = $(SERVER_TEST_LIBS)
tests_server_check_db_diff_views_SOURCES = tests/server/check_db_diff_views.c $(DB_FIXTURE)
tests_server_check_db_diff_views_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_db_diff_views_LDADD = $(SERVER_TEST_LIBS)
endif
TESTS += tests/integration/server_diff_views.sh
EXTRA_DIST += tests/integration/server_diff_views.sh tests/web/depth_steps.mjs \
	tests/web/width_steps.mjs tests/web/fault_steps.mjs

# ---- fleet (issue 24): the files a model reads besides itself ----
if HAVE_CHECK
check_PROGRAMS += tests/engine/check_model_files
TESTS += tests/engine/check_model_files
tests_engine_check_model_files_SOURCES = tests/engine/check_model_files.c
tests_engine_check_model_files_CPPFLAGS = $(TEST_CPPFLAGS)
tests_engine_check_model_files_LDADD = $(TEST_LIBS)
endif

# ---- sec (issue 25): tokens, ownership, limits, URLs, streaming ----
SEC_INTEGRATION = tests/integration/agent_token_rule.sh tests/integration/agent_outbox.sh \
	tests/integration/server_owner.sh tests/integration/server_diff_cache.sh \
	tests/integration/server_slow_readers.sh
TESTS += $(SEC_INTEGRATION)
EXTRA_DIST += $(SEC_INTEGRATION) tests/integration/token_listener.py \
	tests/integration/slow_readers.py tests/bench/bench_slow_readers.sh
check_PROGRAMS += tests/server/check_db_replays
TESTS += tests/server/check_db_replays
tests_server_check_db_replays_SOURCES = tests/server/check_db_replays.c $(DB_FIXTURE)
tests_server_check_db_replays_CPPFLAGS = $(SERVER_TEST_CPPFLAGS)
tests_server_check_db_replays_LDADD = $(SERVER_TEST_LIBS)
TESTS += tests/web/csv.sh
EXTRA_DIST += tests/web/csv.sh tests/web/csv_cells.mjs
