/*
 * check_graph_dtype.c: gd_graph_cast_floats() (engine/core/graph_dtype.c), a float32 model
 * run in float16 or bfloat16 as model.half() runs it, and what a session then stores.
 *
 * The model: y = Mul(x, w), z = Cast(y, to = float32), d = Dropout(x, ratio) and an int64
 * weight, with x a float32 input. Expected bit patterns are the formats' nearest values,
 * worked out by hand: 0.1 = 1.6 x 2^-4 is float16 0 01011 1001100110 (0x2E66: 0.6 x 1024 =
 * 614.4, to 614), bfloat16 0x3DCD (float32 0x3DCCCCCD, the dropped 0xCCCD above half);
 * -2.5 = -1.25 x 2^1 is 0xC100 and 0xC020; 1e5 = 0x47C35000 in float32 is past float16's
 * largest finite (65504, overflow from 65520): 0x7C00, +inf; in bfloat16 0x47C3 (0x5000
 * dropped, below half).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "gpudiff/graph.h"
#include "gpudiff/session.h"

static struct gd_attr
int_attr(const char *name, int64_t v)
{
    struct gd_attr a = {0};
    a.name = strdup(name);
    a.type = GD_ATTR_INT;
    a.i = v;
    return a;
}

/* The model above, not finalized. */
static struct gd_graph *
model(void)
{
    struct gd_err err = {0};
    struct gd_graph *g = gd_graph_new("half", &err);
    ck_assert_ptr_nonnull(g);
    struct gd_input_decl decl = {.dtype = GD_F32, .shape = {.ndim = 2, .dim = {2, 3}}};
    ck_assert_int_eq(gd_graph_add_input(g, "x", &decl, &err), 0);
    const int64_t s3[1] = {3}, s1[1] = {1};
    struct gd_tensor *w = gd_tensor_new(GD_F32, 1, s3, &err);
    ((float *)w->data)[0] = 0.1f;
    ((float *)w->data)[1] = -2.5f;
    ((float *)w->data)[2] = 1e5f;
    ck_assert_int_eq(gd_graph_add_constant(g, "w", w, &err), 0);
    struct gd_tensor *ratio = gd_tensor_new(GD_F32, 0, s1, &err);
    ((float *)ratio->data)[0] = 0.1f;
    ck_assert_int_eq(gd_graph_add_constant(g, "ratio", ratio, &err), 0);
    struct gd_tensor *ids = gd_tensor_new(GD_I64, 1, s1, &err);
    ((int64_t *)ids->data)[0] = 7;
    ck_assert_int_eq(gd_graph_add_constant(g, "ids", ids, &err), 0);
    const char *mul_in[] = {"x", "w"}, *mul_out[] = {"y"};
    ck_assert_msg(gd_graph_add_node(g, "mul", "Mul", 2, mul_in, 1, mul_out, 0, NULL, &err) == 0,
                  "%s", err.msg);
    struct gd_attr *to = malloc(sizeof *to);
    *to = int_attr("to", 1);
    const char *cast_in[] = {"y"}, *cast_out[] = {"z"};
    ck_assert_msg(gd_graph_add_node(g, "cast", "Cast", 1, cast_in, 1, cast_out, 1, to, &err) == 0,
                  "%s", err.msg);
    free(to);
    const char *drop_in[] = {"x", "ratio"}, *drop_out[] = {"d"};
    ck_assert_msg(gd_graph_add_node(g, "drop", "Dropout", 2, drop_in, 1, drop_out, 0, NULL,
                                    &err) == 0, "%s", err.msg);
    const char *id_in[] = {"ids"}, *id_out[] = {"i"};
    ck_assert_msg(gd_graph_add_node(g, "keep", "Identity", 1, id_in, 1, id_out, 0, NULL,
                                    &err) == 0, "%s", err.msg);
    ck_assert_int_eq(gd_graph_add_output(g, "z", &err), 0);
    ck_assert_int_eq(gd_graph_add_output(g, "d", &err), 0);
    ck_assert_int_eq(gd_graph_add_output(g, "i", &err), 0);
    return g;
}

static const struct gd_value *
value(const struct gd_graph *g, const char *name)
{
    int v = gd_graph_find_value(g, name);
    ck_assert_int_ge(v, 0);
    return &g->values[v];
}

static void
check_cast(enum gd_dtype dt, const uint16_t want[3], int64_t want_to)
{
    struct gd_err err = {0};
    struct gd_graph *g = model();
    ck_assert_msg(gd_graph_cast_floats(g, dt, &err) == 0, "%s", err.msg);
    ck_assert_msg(gd_graph_finalize(g, &err) == 0, "%s", err.msg);
    const struct gd_value *w = value(g, "w");
    ck_assert_int_eq(w->dtype, dt);
    ck_assert_int_eq(w->constant->dtype, dt);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(((uint16_t *)w->constant->data)[i] == want[i], "w[%d] is 0x%04x, want "
                      "0x%04x", i, ((uint16_t *)w->constant->data)[i], want[i]);
    /* Dropout's ratio is a float32 parameter whatever the data: it keeps its value */
    ck_assert_int_eq(value(g, "ratio")->constant->dtype, GD_F32);
    ck_assert_int_eq(value(g, "ids")->constant->dtype, GD_I64);
    ck_assert_int_eq(g->input_decls[0].dtype, dt);
    ck_assert_int_eq(value(g, "x")->dtype, dt);
    /* the layers: Mul of two half values is half; the cast to float32 now casts to dt */
    ck_assert_int_eq(value(g, "y")->dtype, dt);
    ck_assert_int_eq(value(g, "z")->dtype, dt);
    ck_assert_int_eq(value(g, "d")->dtype, dt);
    ck_assert_int_eq(value(g, "i")->dtype, GD_I64);
    int cast = gd_graph_find_node(g, "cast");
    ck_assert_int_eq(gd_node_attr(&g->nodes[cast], "to")->i, want_to);

    /* A run: the float32 input is rounded to dt; cpu keeps 16 bits, cpu64 the values in
     * float64. x = (1, 1, 1, 2, 2, 2) times w: w itself, then 2 w (an exponent step). */
    const int64_t shape[2] = {2, 3};
    struct gd_tensor *x = gd_tensor_new(GD_F32, 2, shape, &err);
    for (int i = 0; i < 6; i++)
        ((float *)x->data)[i] = i < 3 ? 1.0f : 2.0f;
    const struct gd_tensor *ins[1] = {x};
    struct gd_knobs k;
    gd_knobs_init(&k);
    static const char *const backends[] = {"cpu", "cpu64"};
    for (int b = 0; b < 2; b++) {
        struct gd_session *s = gd_session_new(g, backends[b], &k, &err);
        ck_assert_msg(s != NULL, "%s", err.msg);
        double us;
        ck_assert_msg(gd_session_run_end_to_end(s, 1, ins, &us, &err) == 0, "%s", err.msg);
        const struct gd_tensor *z = gd_session_output(s, 0);
        ck_assert_int_eq(z->dtype, b == 0 ? dt : GD_F64);
        for (int i = 0; i < 6; i++) {
            float wv = dt == GD_F16 ? gd_f16_to_f32(want[i % 3]) : gd_bf16_to_f32(want[i % 3]);
            double expect = (double)wv * (i < 3 ? 1.0 : 2.0);
            double got = gd_tensor_get_f64(z, i);
            ck_assert_msg(got == expect, "%s: z[%d] = %.17g, want %.17g", backends[b], i, got,
                          expect);
        }
        gd_session_free(s);
    }
    gd_tensor_free(x);
    gd_graph_free(g);
}

START_TEST(to_float16)
{
    static const uint16_t want[3] = {0x2E66, 0xC100, 0x7C00};
    check_cast(GD_F16, want, 10);
}
END_TEST

START_TEST(to_bfloat16)
{
    static const uint16_t want[3] = {0x3DCD, 0xC020, 0x47C3};
    check_cast(GD_BF16, want, 16);
}
END_TEST

START_TEST(only_half_formats)
{
    struct gd_err err = {0};
    struct gd_graph *g = model();
    ck_assert_int_eq(gd_graph_cast_floats(g, GD_F64, &err), GD_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "float16 or bfloat16"));
    ck_assert_int_eq(gd_graph_cast_floats(g, GD_I32, &err), GD_EINVAL);
    /* nothing changed */
    ck_assert_int_eq(value(g, "w")->constant->dtype, GD_F32);
    ck_assert_int_eq(g->input_decls[0].dtype, GD_F32);
    gd_graph_free(g);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("graph_dtype");
    TCase *tc = tcase_create("cast");
    tcase_add_test(tc, to_float16);
    tcase_add_test(tc, to_bfloat16);
    tcase_add_test(tc, only_half_formats);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
