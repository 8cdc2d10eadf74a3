# agent/local.mk: gpudiff-agent. libcurl is linked here only (uploads to gpudiffd).
bin_PROGRAMS += gpudiff-agent
gpudiff_agent_SOURCES = \
	agent/agent.h \
	agent/upload.h \
	agent/inputs.h \
	agent/main.c \
	agent/cmd_run.c \
	agent/inputs.c \
	agent/model_load.h \
	agent/model_load.c \
	agent/cmd_ops.c \
	agent/cmd_diff.c \
	agent/cmd_bundle.c \
	agent/framework_ops.c \
	agent/cmd_push.c \
	agent/cmd_outbox.c \
	agent/report.c \
	agent/upload.c \
	agent/http.h \
	agent/http.c \
	agent/server_url.h \
	agent/server_url.c \
	agent/fetch.h \
	agent/fetch.c \
	agent/knob_opts.c \
	agent/cli_args.c \
	agent/cmd_replay.c
gpudiff_agent_CPPFLAGS = $(AM_CPPFLAGS) $(JANSSON_CFLAGS) $(CURL_CFLAGS)
gpudiff_agent_LDADD = $(GD_ENGINE_LIBS) $(JANSSON_LIBS) $(CURL_LIBS)
# `gpudiff-agent sweep` (agent/sweep.h)
gpudiff_agent_SOURCES += \
	agent/sweep.h \
	agent/cmd_sweep.c \
	agent/sweep_capture.c \
	agent/sweep_copy.c \
	agent/sweep_grid.c \
	agent/sweep_run.h \
	agent/sweep_setting.c \
	agent/sweep_report.c \
	agent/sweep_summary.c \
	agent/sweep_upload.c
# ---- fp: `gpudiff-agent fetch-layers` (tensors the daemon asks for) ----
gpudiff_agent_SOURCES += agent/run_opts.h agent/cmd_fetch_layers.c
# ---- jobagt: `gpudiff-agent submit` and `serve` (jobs from gpudiffd, agent/jobs.h) ----
gpudiff_agent_SOURCES += agent/jobs.h agent/jobs_args.c agent/cmd_submit.c \
	agent/serve.h agent/cmd_serve.c agent/serve_task.c
