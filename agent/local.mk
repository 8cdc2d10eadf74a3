# agent/local.mk: gpudiff-agent. libcurl is linked here only (uploads to gpudiffd).
bin_PROGRAMS += gpudiff-agent
gpudiff_agent_SOURCES = \
	agent/agent.h \
	agent/upload.h \
	agent/main.c \
	agent/run.c \
	agent/diff.c \
	agent/bundle.c \
	agent/push.c \
	agent/report.c \
	agent/upload.c \
	agent/fetch.h \
	agent/fetch.c \
	agent/knob_opts.c \
	agent/replay.c
gpudiff_agent_CPPFLAGS = $(AM_CPPFLAGS) $(JANSSON_CFLAGS) $(CURL_CFLAGS)
gpudiff_agent_LDADD = $(GD_ENGINE_LIBS) $(JANSSON_LIBS) $(CURL_LIBS)
