/*
 * diff_view.h: what the dashboard reads of a diff (docs/SERVER.md, "Diff views"), made from
 * the diff's cached JSON once: a small summary document (the diff's own fields, the layers
 * worth naming in full, counts, who is right over which layers, and an overview of every
 * layer in a few bytes each) and one row per layer, so that a view of a 10,000-layer
 * diff transfers its summary and the pages of rows on screen, never the whole diff or the
 * runs' documents.
 */
#ifndef GPUDIFF_SERVER_DIFF_VIEW_H
#define GPUDIFF_SERVER_DIFF_VIEW_H

#include <stddef.h>

#include <jansson.h>

#include "gpudiff/error.h"

/*
 * The layout of the summary and the rows; a stored view of another format is made again.
 * 1: issue 26's first.
 */
#define SRV_DIFF_VIEW_FORMAT 1

/* At most this many names in the summary's lists (amplifiers, only_a, ...): counts say more. */
#define SRV_DIFF_VIEW_LIST_MAX 200

/* One layer of the view: its filterable columns and its row as compact JSON. */
struct srv_diff_view_row {
    const char *name, *op, *verdict; /* borrowed from the parsed diff held by the view */
    double err;                      /* NaN for null */
    char *row;                       /* owned */
};

struct srv_diff_view {
    json_t *diff;  /* the parsed diff the names are borrowed from */
    char *summary; /* compact JSON, owned */
    int n_layers;
    struct srv_diff_view_row *rows;
};

/* The stored run.json without layers of run id, with "n_layers" (a new reference; json null
 * when the run is not there). */
typedef json_t *srv_diff_view_meta_fn(void *user, const char *id);

/*
 * Makes the view of a diff from its JSON text (as GET /api/v1/diff serves it); meta(user, id)
 * gives the documents of its runs (a, b, truth, the replay) for the summary's "runs".
 * GD_EIO when the text is not a diff (damaged storage), GD_ENOMEM. The view is written only
 * on success; free it with srv_diff_view_fini().
 */
int srv_diff_view_make(const char *text, size_t len, srv_diff_view_meta_fn *meta, void *user,
                       struct srv_diff_view *out, struct gd_err *err);

void srv_diff_view_fini(struct srv_diff_view *v);

/* The one-letter code of a verdict in the overview ("i" identical, "d" divergent, ...). */
char srv_diff_view_code(const char *verdict);

#endif
