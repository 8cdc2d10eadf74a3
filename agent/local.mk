# agent/local.mk: gpudiff-agent.
bin_PROGRAMS += gpudiff-agent
gpudiff_agent_SOURCES = \
	agent/agent.h \
	agent/main.c \
	agent/run.c \
	agent/diff.c \
	agent/bundle.c \
	agent/report.c
gpudiff_agent_CPPFLAGS = $(AM_CPPFLAGS) $(JANSSON_CFLAGS)
gpudiff_agent_LDADD = $(GD_ENGINE_LIBS) $(JANSSON_LIBS)
