/*
 * check_view.c: views (engine/core/view.c and the session's use of them): a Reshape,
 * Squeeze, Identity or a Gather of one constant index along a leading axis delivers its
 * input's bytes from the input's own memory (the layer's data pointer is the input's, at the
 * block's offset), with the values the copy gave; GPUDIFF_VIEWS=0 copies again; an
 * allocation that views hold lives until the last of them is read, even when the value it
 * was made for is long dead and later nodes allocate the same sizes. Runs on cpu, whose
 * capture hands the backend's own tensor to the callback, so the pointers are the memory's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "gpudiff/graph.h"
#include "gpudiff/session.h"
#include "../../engine/core/internal.h"

/* 256 KiB, so the cpu backend's cache hands a released block to the next tensor of its size
 * (a freed one would come back to b, below); a row of float32 is 256 bytes, so a Gather of
 * one row may be a view */
#define ROWS       1024
#define COLS       64
#define MAX_LAYERS 16

static struct gd_tensor *
f32_tensor(int ndim, const int64_t *shape)
{
    struct gd_err err = {0};
    struct gd_tensor *t = gd_tensor_new(GD_F32, ndim, shape, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    return t;
}

static struct gd_tensor *
i64_tensor(int ndim, const int64_t *shape, const int64_t *values)
{
    struct gd_err err = {0};
    struct gd_tensor *t = gd_tensor_new(GD_I64, ndim, shape, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    memcpy(t->data, values, gd_tensor_nbytes(t));
    return t;
}

static void
add_node(struct gd_graph *g, const char *op, int n_in, const char **in, const char *out,
         const char *int_attr, int64_t value)
{
    struct gd_err err = {0};
    struct gd_attr *attrs = NULL;
    int n_attrs = 0;
    if (int_attr != NULL) {
        attrs = calloc(1, sizeof *attrs);
        attrs[0].name = strdup(int_attr);
        attrs[0].type = GD_ATTR_INT;
        attrs[0].i = value;
        n_attrs = 1;
    }
    const char *outs[1] = {out};
    ck_assert_msg(gd_graph_add_node(g, out, op, n_in, in, 1, outs, n_attrs, attrs, &err) == 0,
                  "%s: %s", out, err.msg);
    free(attrs);
}

/*
 * x (ROWS x COLS) -> a = Relu(x) -> r = Reshape(a, [1, ROWS, COLS]) -> row = Gather(r, 2,
 * axis 1) -> sq = Squeeze(row) -> id = Identity(sq); then b = Neg(x) and c = Neg(b), each
 * the size of a, while a's allocation is held only by the views; out = Add(id, c[2]) reads
 * the view last. a's last reader is r, so a session that freed a's memory there would hand
 * it to b or c and out would be wrong.
 */
static struct gd_graph *
view_graph(void)
{
    struct gd_err err = {0};
    struct gd_graph *g = gd_graph_new("views", &err);
    ck_assert_ptr_nonnull(g);
    struct gd_input_decl decl = {.dtype = GD_F32, .shape = {.ndim = 2, .dim = {ROWS, COLS}}};
    ck_assert_int_eq(gd_graph_add_input(g, "x", &decl, &err), 0);
    int64_t three = 3, one = 1, scalar_shape[1] = {0};
    int64_t shape_v[3] = {1, ROWS, COLS}, row = 2;
    ck_assert_int_eq(gd_graph_add_constant(g, "shape", i64_tensor(1, &three, shape_v), &err), 0);
    ck_assert_int_eq(gd_graph_add_constant(g, "row", i64_tensor(0, scalar_shape, &row), &err), 0);
    ck_assert_int_eq(gd_graph_add_constant(g, "row1", i64_tensor(1, &one, &row), &err), 0);
    add_node(g, "Relu", 1, (const char *[]){"x"}, "a", NULL, 0);
    add_node(g, "Reshape", 2, (const char *[]){"a", "shape"}, "r", NULL, 0);
    add_node(g, "Gather", 2, (const char *[]){"r", "row"}, "row_r", "axis", 1);
    add_node(g, "Squeeze", 1, (const char *[]){"row_r"}, "sq", NULL, 0);
    add_node(g, "Identity", 1, (const char *[]){"sq"}, "id", NULL, 0);
    add_node(g, "Neg", 1, (const char *[]){"x"}, "b", NULL, 0);
    add_node(g, "Neg", 1, (const char *[]){"b"}, "c", NULL, 0);
    add_node(g, "Gather", 2, (const char *[]){"c", "row1"}, "c_row", "axis", 0);
    add_node(g, "Add", 2, (const char *[]){"id", "c_row"}, "out", NULL, 0);
    ck_assert_int_eq(gd_graph_add_output(g, "out", &err), 0);
    ck_assert_msg(gd_graph_finalize(g, &err) == 0, "%s", err.msg);
    return g;
}

struct seen {
    int n;
    char name[MAX_LAYERS][16];
    const void *data[MAX_LAYERS];
    float out[COLS];
    float row[COLS]; /* id's values */
};

static int
keep(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    (void)err;
    struct seen *s = user;
    ck_assert_int_lt(s->n, MAX_LAYERS);
    snprintf(s->name[s->n], sizeof s->name[0], "%s", layer->name);
    s->data[s->n] = layer->value->data;
    s->n++;
    if (strcmp(layer->name, "out") == 0)
        memcpy(s->out, layer->value->data, sizeof s->out);
    if (strcmp(layer->name, "id") == 0)
        memcpy(s->row, layer->value->data, sizeof s->row);
    return 0;
}

static const void *
data_of(const struct seen *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->name[i], name) == 0)
            return s->data[i];
    ck_abort_msg("no layer %s", name);
    return NULL;
}

/* Runs the graph on cpu with every layer captured; checks the values. */
static void
run_views(struct seen *seen)
{
    struct gd_err err = {0};
    struct gd_graph *g = view_graph();
    int64_t shape[2] = {ROWS, COLS};
    struct gd_tensor *x = f32_tensor(2, shape);
    float *xv = x->data;
    for (int i = 0; i < ROWS * COLS; i++)
        xv[i] = (float)((i * 13) % 17 - 8);
    struct gd_knobs k;
    gd_knobs_init(&k);
    struct gd_session *s = gd_session_new(g, "cpu", &k, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    memset(seen, 0, sizeof *seen);
    const struct gd_tensor *in[1] = {x};
    ck_assert_msg(gd_session_run(s, 1, in, keep, seen, &err) == 0, "%s", err.msg);
    for (int j = 0; j < COLS; j++) {
        float v = xv[2 * COLS + j];
        float relu = v > 0 ? v : 0;
        ck_assert_msg(seen->row[j] == relu, "id[%d] = %g, relu(x[2][%d]) = %g", j,
                      (double)seen->row[j], j, (double)relu);
        ck_assert_msg(seen->out[j] == relu + v, "out[%d] = %g, want %g", j, (double)seen->out[j],
                      (double)(relu + v));
    }
    gd_session_free(s);
    gd_tensor_free(x);
    gd_graph_free(g);
}

START_TEST(views_share_their_input_memory)
{
    struct seen seen;
    unsetenv("GPUDIFF_VIEWS");
    run_views(&seen);
    const char *a = data_of(&seen, "a");
    ck_assert_ptr_eq(data_of(&seen, "r"), a);
    ck_assert_ptr_eq(data_of(&seen, "row_r"), a + 2 * COLS * sizeof(float));
    ck_assert_ptr_eq(data_of(&seen, "sq"), a + 2 * COLS * sizeof(float));
    ck_assert_ptr_eq(data_of(&seen, "id"), a + 2 * COLS * sizeof(float));
    /* a Gather by a 1-D index of one element: c's row 2 */
    const char *c = data_of(&seen, "c");
    ck_assert_ptr_eq(data_of(&seen, "c_row"), c + 2 * COLS * sizeof(float));
}
END_TEST

START_TEST(views_off_copies)
{
    struct seen seen;
    setenv("GPUDIFF_VIEWS", "0", 1);
    run_views(&seen);
    unsetenv("GPUDIFF_VIEWS");
    const char *a = data_of(&seen, "a");
    ck_assert_ptr_ne(data_of(&seen, "r"), a);
    ck_assert_ptr_ne(data_of(&seen, "id"), data_of(&seen, "sq"));
}
END_TEST

/* The rule itself: which calls are views, at which offset. */
START_TEST(view_offsets)
{
    struct gd_node n = {.op = GD_OP_GATHER, .n_inputs = 2, .n_outputs = 1};
    struct gd_params p = {.axis = 1};
    char buf[4096];
    struct gd_tensor in = {.dtype = GD_F32, .ndim = 3, .shape = {1, 4, 64}, .data = buf};
    struct gd_tensor out = {.dtype = GD_F32, .ndim = 2, .shape = {1, 64}};
    int64_t k = 3;
    struct gd_tensor idx = {.dtype = GD_I64, .ndim = 0, .data = &k};
    ck_assert_int_eq(gd__view_offset(&n, &p, &in, &out, &idx), 3 * 64 * 4);
    k = -1; /* from the end */
    ck_assert_int_eq(gd__view_offset(&n, &p, &in, &out, &idx), 3 * 64 * 4);
    k = 4; /* out of range: the op reports it */
    ck_assert_int_eq(gd__view_offset(&n, &p, &in, &out, &idx), -1);
    k = 1;
    ck_assert_int_eq(gd__view_offset(&n, &p, &in, &out, NULL), -1); /* index not on the host */
    in.shape[0] = 2; /* rows before the axis: not one block */
    ck_assert_int_eq(gd__view_offset(&n, &p, &in, &out, &idx), -1);
    in.shape[0] = 1;
    in.shape[2] = 32; /* a block of 128 bytes: not aligned for every consumer */
    out.shape[1] = 32;
    ck_assert_int_eq(gd__view_offset(&n, &p, &in, &out, &idx), -1);
    k = 0; /* offset 0 is */
    ck_assert_int_eq(gd__view_offset(&n, &p, &in, &out, &idx), 0);
    n.op = GD_OP_RESHAPE;
    ck_assert_int_eq(gd__view_offset(&n, &p, &in, &out, NULL), -1); /* other byte counts */
    out.ndim = 1;
    out.shape[0] = 128;
    ck_assert_int_eq(gd__view_offset(&n, &p, &in, &out, NULL), 0);
    out.dtype = GD_I32; /* another dtype of the same size is not a reshape */
    ck_assert_int_eq(gd__view_offset(&n, &p, &in, &out, NULL), -1);
    out.dtype = GD_F32;
    n.op = GD_OP_RELU;
    ck_assert_int_eq(gd__view_offset(&n, &p, &in, &out, NULL), -1);
}
END_TEST

static Suite *
view_suite(void)
{
    Suite *s = suite_create("view");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, views_share_their_input_memory);
    tcase_add_test(tc, views_off_copies);
    tcase_add_test(tc, view_offsets);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(view_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
