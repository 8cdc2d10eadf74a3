/*
 * knob_opts.c: the command-line options of the knobs, made from knobs.def for every command
 * that takes them (run, replay, sweep): their getopt entries, their parsing and their
 * --help lines, so a knob has the same option, values and message everywhere. Also
 * --backend's check.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/knobs.h"
#include "gpudiff/session.h"
#include "agent.h"

int
agt_backend_check(const char *cmd, const char *name)
{
    for (const char *const *b = gd_backend_names(); *b != NULL; b++)
        if (strcmp(*b, name) == 0)
            return 0;
    fprintf(stderr, "gpudiff-agent %s: this build has no backend %s (it has:", cmd, name);
    for (const char *const *b = gd_backend_names(); *b != NULL; b++)
        fprintf(stderr, " %s", *b);
    fprintf(stderr, ")\n");
    return -1;
}

/* The options' names ("conv-algo"), made once: getopt keeps pointers to them. */
static char flag_names[GD_KNOB_COUNT][64];

int
agt_knob_longopts(const struct option *own, const unsigned char *knobs, struct option *out, int max)
{
    int n = 0;
    for (; own != NULL && own[n].name != NULL; n++) {
        if (n + 1 >= max)
            return -1;
        out[n] = own[n];
    }
    for (int k = 0; k < GD_KNOB_COUNT; k++) {
        if (knobs != NULL && !knobs[k])
            continue;
        if (n + 1 >= max)
            return -1;
        char flag[64];
        gd_knob_flag((enum gd_knob)k, flag, sizeof flag);
        snprintf(flag_names[k], sizeof flag_names[k], "%s", flag + 2);
        out[n++] = (struct option){flag_names[k], required_argument, NULL, AGT_OPT_KNOB + k};
    }
    out[n] = (struct option){NULL, 0, NULL, 0};
    return n;
}

int
agt_knob_flag(const char *cmd, int opt, const char *arg, struct gd_knobs *k)
{
    if (opt < AGT_OPT_KNOB || opt >= AGT_OPT_KNOB + GD_KNOB_COUNT)
        return 0;
    enum gd_knob which = (enum gd_knob)(opt - AGT_OPT_KNOB);
    struct gd_err err = {0};
    if (gd_knob_parse(k, which, arg, &err) != 0) {
        char flag[64];
        gd_knob_flag(which, flag, sizeof flag);
        fprintf(stderr, "gpudiff-agent %s: %s %s\n", cmd, flag, err.msg);
        return -1;
    }
    return 1;
}

/* Writes text from column `indent` on, wrapped at 92 columns, the first line after what is
 * already at column `at`. */
static void
wrapped(FILE *out, int at, int indent, const char *text)
{
    int col = at;
    if (col >= indent) {
        fputc('\n', out);
        col = 0;
    }
    fprintf(out, "%*s", indent - col, "");
    col = indent;
    for (const char *p = text; *p;) {
        size_t w = strcspn(p, " ");
        if (col > indent && col + 1 + (int)w > 92) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', out);
            col++;
        }
        fprintf(out, "%.*s", (int)w, p);
        col += (int)w;
        p += w;
        while (*p == ' ')
            p++;
    }
    fputc('\n', out);
}

void
agt_knob_usage(FILE *out, const unsigned char *knobs)
{
    for (int k = 0; k < GD_KNOB_COUNT; k++) {
        if (knobs != NULL && !knobs[k])
            continue;
        const struct gd_knob_info *i = gd_knob_info((enum gd_knob)k);
        char flag[64], help[1024], values[256], range[96] = "";
        gd_knob_flag((enum gd_knob)k, flag, sizeof flag);
        /* a range lo..hi is shown as N, and said in words after the help */
        snprintf(values, sizeof values, "%s", i->values);
        char *dots = strstr(values, "..");
        if (dots != NULL) {
            char *lo = dots;
            while (lo > values && lo[-1] >= '0' && lo[-1] <= '9')
                lo--;
            if (dots[2] != '\0')
                snprintf(range, sizeof range, "; N %.*s to %s", (int)(dots - lo), lo, dots + 2);
            else
                snprintf(range, sizeof range, "; N %.*s or more", (int)(dots - lo), lo);
            snprintf(lo, sizeof values - (size_t)(lo - values), "N");
        }
        int at = fprintf(out, "  %s %s", flag, values);
        snprintf(help, sizeof help, "%s%s%s%s%s%s%s", i->backends[0] ? i->backends : "",
                 i->backends[0] ? ": " : "", i->help, range,
                 i->default_value[0] ? " (default " : "", i->default_value,
                 i->default_value[0] ? ")" : "");
        wrapped(out, at, 22, help);
    }
}
