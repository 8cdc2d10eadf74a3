/*
 * check_graph_replay.c: tests of engine/core/graph_replay.c: the replay graph of a small
 * model (x -> fc1 Gemm -> r Relu -> fc2 Gemm) run on the cpu backend with captured values
 * that are not what the model computes: each node's output is what that node computes from
 * the captured values it is given (fc2 from the captured r, not from relu of fc1), in the
 * model's layer order, names and count.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/graph_replay.h"
#include "gpudiff/session.h"

static struct gd_tensor *
tensor(int64_t rows, int64_t cols, const float *v)
{
    int64_t shape[2] = {rows, cols};
    struct gd_tensor *t = gd_tensor_new(GD_F32, 2, shape, NULL);
    ck_assert_ptr_nonnull(t);
    memcpy(t->data, v, gd_tensor_nbytes(t));
    return t;
}

static void
add_gemm(struct gd_graph *g, const char *name, const char *in, const char *w, const char *out)
{
    struct gd_err err = {0};
    struct gd_attr *a = calloc(1, sizeof *a);
    a->name = strdup("transB");
    a->type = GD_ATTR_INT;
    a->i = 1;
    const char *ins[2] = {in, w}, *outs[1] = {out};
    ck_assert_msg(gd_graph_add_node(g, name, "Gemm", 2, ins, 1, outs, 1, a, &err) == 0, "%s",
                  err.msg);
    free(a);
}

/* x (2x3) -> fc1 = x W1^T (2x2) -> r = relu(fc1) -> fc2 = r W2^T (2x2). */
static struct gd_graph *
model(void)
{
    struct gd_err err = {0};
    struct gd_graph *g = gd_graph_new("tiny", &err);
    struct gd_input_decl decl = {.dtype = GD_F32, .shape = {2, {-1, 3}}};
    ck_assert_int_eq(gd_graph_add_input(g, "x", &decl, &err), 0);
    const float w1[6] = {1, 2, 3, -1, -2, -3}, w2[4] = {1, 1, 0.5f, -0.25f};
    ck_assert_int_eq(gd_graph_add_constant(g, "W1", tensor(2, 3, w1), &err), 0);
    ck_assert_int_eq(gd_graph_add_constant(g, "W2", tensor(2, 2, w2), &err), 0);
    add_gemm(g, "fc1", "x", "W1", "fc1");
    const char *ins[1] = {"fc1"}, *outs[1] = {"r"};
    ck_assert_int_eq(gd_graph_add_node(g, "relu", "Relu", 1, ins, 1, outs, 0, NULL, &err), 0);
    add_gemm(g, "fc2", "r", "W2", "fc2");
    ck_assert_int_eq(gd_graph_add_output(g, "fc2", &err), 0);
    ck_assert_msg(gd_graph_finalize(g, &err) == 0, "%s", err.msg);
    return g;
}

struct captured {
    int n;
    char names[8][16];
    float values[8][4];
};

static int
capture(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    (void)err;
    struct captured *c = user;
    ck_assert_int_eq(layer->index, c->n);
    snprintf(c->names[c->n], sizeof c->names[0], "%s", layer->name);
    memcpy(c->values[c->n], layer->value->data, 4 * sizeof(float));
    c->n++;
    return 0;
}

START_TEST(test_each_node_from_captured_inputs)
{
    struct gd_err err = {0};
    struct gd_graph *g = model();
    struct gd_shape shapes[16];
    for (int v = 0; v < g->n_values; v++)
        shapes[v] = g->values[v].shape;
    shapes[gd_graph_find_value(g, "x")].dim[0] = 2;
    for (const char *n = "fc1"; n != NULL; n = strcmp(n, "fc1") == 0 ? "r" : NULL)
        shapes[gd_graph_find_value(g, n)].dim[0] = 2;
    struct gd_graph *r = NULL;
    int *source = NULL;
    ck_assert_msg(gd_graph_replay_new(g, shapes, &r, &source, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r->n_nodes, 3);
    ck_assert_int_eq(r->n_inputs, 3); /* x, fc1@replay, r@replay */
    ck_assert_str_eq(r->values[r->inputs[1]].name, "fc1@replay");
    ck_assert_int_eq(source[0], gd_graph_find_value(g, "x"));
    ck_assert_int_eq(source[1], gd_graph_find_value(g, "fc1"));
    ck_assert_int_eq(source[2], gd_graph_find_value(g, "r"));
    /* captured values that the model would not compute from x */
    const float x[6] = {1, 0, 0, 0, 1, 0}, fc1c[4] = {-5, 7, 2, -3}, rc[4] = {1, 2, 3, 4};
    struct gd_tensor *tx = tensor(2, 3, x), *t1 = tensor(2, 2, fc1c), *t2 = tensor(2, 2, rc);
    const struct gd_tensor *inputs[3] = {tx, t1, t2};
    struct gd_knobs knobs;
    gd_knobs_init(&knobs);
    struct gd_session *s = gd_session_new(r, "cpu", &knobs, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    struct captured c = {0};
    ck_assert_msg(gd_session_run(s, 3, inputs, capture, &c, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(c.n, 3);
    ck_assert_str_eq(c.names[0], "fc1");
    ck_assert_str_eq(c.names[1], "r");
    ck_assert_str_eq(c.names[2], "fc2");
    /* fc1 from x: rows of W1 against x rows (1,0,0) and (0,1,0) */
    const float want_fc1[4] = {1, -1, 2, -2};
    /* r = relu of the captured fc1 */
    const float want_r[4] = {0, 7, 2, 0};
    /* fc2 from the captured r: (1, 2) and (3, 4) against W2 rows (1, 1), (0.5, -0.25) */
    const float want_fc2[4] = {3, 0, 7, 0.5f};
    for (int i = 0; i < 4; i++) {
        ck_assert_msg(c.values[0][i] == want_fc1[i], "fc1[%d] %g", i, c.values[0][i]);
        ck_assert_msg(c.values[1][i] == want_r[i], "r[%d] %g", i, c.values[1][i]);
        ck_assert_msg(c.values[2][i] == want_fc2[i], "fc2[%d] %g", i, c.values[2][i]);
    }
    gd_session_free(s);
    gd_tensor_free(tx);
    gd_tensor_free(t1);
    gd_tensor_free(t2);
    free(source);
    gd_graph_free(r);
    gd_graph_free(g);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("graph_replay");
    TCase *tc = tcase_create("graph_replay");
    tcase_add_test(tc, test_each_node_from_captured_inputs);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
