# engine/local.mk: libgpudiff, the engine shared by the agent and the daemon.
noinst_LTLIBRARIES += libgpudiff.la

ENGINE_DEPS_CFLAGS = $(JANSSON_CFLAGS) $(ZLIB_CFLAGS) $(CRYPTO_CFLAGS)
ENGINE_DEPS_LIBS = $(JANSSON_LIBS) $(ZLIB_LIBS) $(CRYPTO_LIBS) -lm -lpthread

libgpudiff_la_CPPFLAGS = $(AM_CPPFLAGS) $(ENGINE_DEPS_CFLAGS)
libgpudiff_la_SOURCES = \
	engine/include/gpudiff/error.h \
	engine/include/gpudiff/graph.h \
	engine/include/gpudiff/io.h \
	engine/include/gpudiff/log.h \
	engine/include/gpudiff/model.h \
	engine/include/gpudiff/onnx.h \
	engine/include/gpudiff/ops.h \
	engine/include/gpudiff/session.h \
	engine/include/gpudiff/knobs.h \
	engine/include/gpudiff/uuid.h \
	engine/include/gpudiff/tensor.h \
	engine/include/gpudiff/bundle.h \
	engine/include/gpudiff/metrics.h \
	engine/include/gpudiff/hash.h \
	engine/include/gpudiff/diff.h \
	engine/include/gpudiff/graph_replay.h \
	engine/include/gpudiff/noise.h \
	engine/compare/diff_internal.h \
	engine/compare/boundary.c \
	engine/compare/diff.c \
	engine/compare/diff_json.c \
	engine/compare/env_diff.c \
	engine/compare/explain.c \
	engine/compare/facts.c \
	engine/compare/match.c \
	engine/compare/measure.c \
	engine/compare/noise_internal.h \
	engine/compare/noise_gains.c \
	engine/compare/noise_node.c \
	engine/compare/noise_probe.c \
	engine/compare/noise_record.c \
	engine/compare/own_error.c \
	engine/compare/truth.c \
	engine/compare/verdict.c \
	engine/core/internal.h \
	engine/core/index_rules.h \
	engine/core/elt_rules.h \
	engine/core/norm_rules.h \
	engine/core/math_rules.h \
	engine/core/act_rules.h \
	engine/core/attr.c \
	engine/core/backend.c \
	engine/core/error.c \
	engine/core/fold.c \
	engine/core/fold_internal.h \
	engine/core/fold_int.c \
	engine/core/fold_move.c \
	engine/core/fold_tensor.c \
	engine/core/graph.c \
	engine/core/graph_replay.c \
	engine/core/hash.c \
	engine/core/infer_act.c \
	engine/core/infer_conv.c \
	engine/core/infer_eltwise.c \
	engine/core/infer_gemm.c \
	engine/core/infer_index.c \
	engine/core/infer_loss.c \
	engine/core/infer_logic.c \
	engine/core/infer_norm.c \
	engine/core/infer_pool.c \
	engine/core/infer_reduce.c \
	engine/core/infer_resize.c \
	engine/core/resize_rules.c \
	engine/core/resize_rules.h \
	engine/core/infer_shape.c \
	engine/core/infer_window.c \
	engine/core/knobs.c \
	engine/core/conv_config.c \
	engine/core/conv_config.h \
	engine/core/move.c \
	engine/core/move.h \
	engine/core/log.c \
	engine/core/ops.c \
	engine/core/pool.c \
	engine/core/session.c \
	engine/core/half_call.c \
	engine/core/view.c \
	engine/core/graph_dtype.c \
	engine/core/graph_weights.c \
	engine/core/tensor.c \
	engine/core/uuid.c \
	engine/compare/metrics.c \
	engine/compare/metrics_internal.h \
	engine/compare/metrics_scalar.c \
	engine/compare/metrics_f32.c \
	engine/compare/metrics_portable.c \
	engine/compare/metrics_avx512.c \
	engine/io/array.c \
	engine/io/bundle_write.c \
	engine/io/bundle_read.c \
	engine/io/file.c \
	engine/io/io_internal.h \
	engine/io/model_json.c \
	engine/io/npy.c \
	engine/io/npy_write.c \
	engine/io/npz.c \
	engine/io/onnx.c \
	engine/io/onnx_internal.h \
	engine/io/onnx_opset.c \
	engine/io/onnx_tensor.c \
	engine/io/onnx_wire.c \
	engine/io/safetensors.c
libgpudiff_la_LIBADD = libgd_cpu32.la libgd_cpu64.la $(ENGINE_DEPS_LIBS)
EXTRA_DIST += engine/core/ops.def engine/core/knobs.def

# The CPU ops are written once in terms of `real` and built twice (engine/cpu/cpu.h).
CPU_SOURCES = \
	engine/cpu/cpu.h \
	engine/cpu/bcast.h \
	engine/cpu/backend_cpu.c \
	engine/cpu/emulate.c \
	engine/cpu/gemm_kernel.c \
	engine/cpu/op_act.c \
	engine/cpu/op_conv.c \
	engine/cpu/op_eltwise.c \
	engine/cpu/op_gemm.c \
	engine/cpu/op_index.c \
	engine/cpu/op_loss.c \
	engine/cpu/op_logic.c \
	engine/cpu/op_norm.c \
	engine/cpu/op_pool.c \
	engine/cpu/op_resize.c \
	engine/cpu/op_reduce.c \
	engine/cpu/op_shape.c
# The loops run over output elements, each an independent sequential sum, so the vectorizer
# may take them whole: GCC never vectorizes a floating-point reduction without
# -fassociative-math, and -ffp-contract=off keeps products and sums apart. These flags
# override the -O2 default cost model (which skips any loop needing a scalar remainder)
# wherever they stand on the command line.
CPU_VECTOR_CFLAGS = -ftree-vectorize -fvect-cost-model=dynamic
noinst_LTLIBRARIES += libgd_cpu32.la libgd_cpu64.la
libgd_cpu32_la_SOURCES = $(CPU_SOURCES)
libgd_cpu32_la_CPPFLAGS = $(AM_CPPFLAGS) -DGD_CPU_F64=0
libgd_cpu32_la_CFLAGS = $(AM_CFLAGS) $(CPU_VECTOR_CFLAGS)
libgd_cpu64_la_SOURCES = $(CPU_SOURCES)
libgd_cpu64_la_CPPFLAGS = $(AM_CPPFLAGS) -DGD_CPU_F64=1
libgd_cpu64_la_CFLAGS = $(AM_CFLAGS) $(CPU_VECTOR_CFLAGS)

# ---- the cuda backend (when configure found CUDA) ----
# Automake has no CUDA support of its own: .cu files go through nvcc by a suffix rule into a
# plain archive, added to the libtool library.
if HAVE_CUDA
CUDA_KERNEL_SOURCES = \
	engine/cuda/op_act.cu \
	engine/cuda/op_conv.cu \
	engine/cuda/op_eltwise.cu \
	engine/cuda/op_gemm.cu \
	engine/cuda/op_index.cu \
	engine/cuda/op_loss.cu \
	engine/cuda/op_logic.cu \
	engine/cuda/op_norm.cu \
	engine/cuda/op_pool.cu \
	engine/cuda/op_resize.cu \
	engine/cuda/op_reduce.cu \
	engine/cuda/op_shape.cu \
	engine/cuda/half.cu
noinst_LIBRARIES += libgd_cuda_kernels.a
libgd_cuda_kernels_a_SOURCES = $(CUDA_KERNEL_SOURCES) engine/cuda/kernels.cuh engine/cuda/index.cuh \
	engine/cuda/half.cuh
noinst_LTLIBRARIES += libgd_cuda.la
libgd_cuda_la_SOURCES = engine/cuda/cuda.h engine/cuda/backend_cuda.c engine/cuda/conv_graph.c
libgd_cuda_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CFLAGS)
libgpudiff_la_LIBADD += libgd_cuda.la
# --repro bitwise: kernels whose every output is the cpu backend's bits (repro.cuh). nvcc
# fuses a multiply feeding an add into one FMA unless told not to; cpu never does
# (-ffp-contract=off), and these files' arithmetic, math_rules.h's included, must round
# every step as cpu does.
REPRO_CUDA_SOURCES = \
	engine/cuda/repro_act.cu \
	engine/cuda/repro_conv.cu \
	engine/cuda/repro_gemm.cu \
	engine/cuda/repro_loss.cu \
	engine/cuda/repro_norm.cu \
	engine/cuda/repro_reduce.cu
libgd_cuda_kernels_a_SOURCES += $(REPRO_CUDA_SOURCES) engine/cuda/repro.cuh engine/cuda/repro.h
libgd_cuda_la_SOURCES += engine/cuda/repro.h engine/cuda/repro_table.c
$(REPRO_CUDA_SOURCES:.cu=.o): NVCCFLAGS += -fmad=false
$(REPRO_CUDA_SOURCES:.cu=.o): engine/cuda/repro.cuh engine/cuda/repro.h engine/cuda/kernels.cuh \
	engine/cuda/cuda.h engine/cuda/index.cuh engine/core/internal.h engine/core/math_rules.h \
	engine/core/act_rules.h engine/core/norm_rules.h engine/core/index_rules.h \
	engine/core/ops.def engine/core/move.h
EXTRA_DIST += $(REPRO_CUDA_SOURCES)
endif

# What a program links to use the engine. libtool does not fold a plain archive of nvcc
# objects into a convenience library, so the kernels follow libgpudiff on the link line.
GD_ENGINE_LIBS = libgpudiff.la
if HAVE_CUDA
GD_ENGINE_LIBS += libgd_cuda_kernels.a $(CUDA_LIBS)
endif
NVCCFLAGS = -std=c++17 -O3 $(NVCC_GENCODE) -Xcompiler -fPIC -Xcompiler -Wall \
	-I$(top_srcdir)/engine/include -I$(top_builddir) $(NVCC_EXTRA_FLAGS)
SUFFIXES = .cu
.cu.o:
	$(AM_V_GEN)$(MKDIR_P) $(@D) && $(NVCC) $(NVCCFLAGS) -c $< -o $@
# nvcc objects get no automatic dependency tracking: name the headers the kernels include.
$(CUDA_KERNEL_SOURCES:.cu=.o): engine/cuda/kernels.cuh engine/cuda/cuda.h engine/cuda/index.cuh \
	engine/core/internal.h engine/core/index_rules.h engine/core/ops.def engine/core/move.h \
	engine/core/elt_rules.h engine/core/norm_rules.h engine/cuda/half.cuh engine/core/knobs.def \
	engine/include/gpudiff/knobs.h
EXTRA_DIST += $(CUDA_KERNEL_SOURCES)

# ---- ONNX: onnx.pb-c.[ch] are generated into the build tree by protoc-c from the system's
# onnx.proto (configure's --with-onnx-proto); the loader (engine/io/onnx*.c) uses them ----
ONNX_PB_SOURCES = engine/io/onnx.pb-c.c engine/io/onnx.pb-c.h
nodist_libgpudiff_la_SOURCES = $(ONNX_PB_SOURCES)
BUILT_SOURCES += $(ONNX_PB_SOURCES)
CLEANFILES += $(ONNX_PB_SOURCES) engine/io/onnx.proto
# protoc-c names its output after the .proto file and writes it under --c_out, so the file is
# copied next to where the code goes first.
engine/io/onnx.pb-c.h: engine/io/onnx.pb-c.c
engine/io/onnx.pb-c.c: $(ONNX_PROTO)
	$(AM_V_GEN)$(MKDIR_P) engine/io && cp $(ONNX_PROTO) engine/io/onnx.proto && \
	$(PROTOC_C) --proto_path=engine/io --c_out=engine/io engine/io/onnx.proto
libgpudiff_la_CPPFLAGS += $(PROTOBUF_C_CFLAGS) -I$(top_builddir)/engine/io
# BUILT_SOURCES makes the header first only for all and check: a build of the library alone
# (`make fuzz-targets`, tests/fuzz/run.sh) needs the objects that include it to say so.
engine/io/libgpudiff_la-onnx.lo engine/io/libgpudiff_la-onnx_opset.lo \
engine/io/libgpudiff_la-onnx_tensor.lo engine/io/libgpudiff_la-onnx_wire.lo \
engine/io/libgpudiff_la-model_files.lo: engine/io/onnx.pb-c.h
# On the programs' link line rather than in libgpudiff's LIBADD: it may be the static archive
# (configure.ac), which libtool warns about inside a library.
GD_ENGINE_LIBS += $(PROTOBUF_C_LIBS)

# ---- fp: layer fingerprints (hash, statistics, sample) on the host and on cuda ----
libgpudiff_la_SOURCES += \
	engine/include/gpudiff/fingerprint.h \
	engine/core/fp_rules.h \
	engine/core/fingerprint.c \
	engine/compare/sampled.c
if HAVE_CUDA
FP_CUDA_SOURCES = engine/cuda/fingerprint.cu
libgd_cuda_kernels_a_SOURCES += $(FP_CUDA_SOURCES) engine/cuda/fingerprint.h
libgd_cuda_la_SOURCES += engine/cuda/capture_fp.c engine/cuda/fingerprint.h
$(FP_CUDA_SOURCES:.cu=.o): engine/core/fp_rules.h engine/cuda/fingerprint.h engine/cuda/cuda.h
EXTRA_DIST += $(FP_CUDA_SOURCES)
endif

# ---- fleet (issue 24): the files a model reads besides itself, for jobs to carry them ----
libgpudiff_la_SOURCES += engine/include/gpudiff/model_files.h engine/io/model_files.c
