/*
 * check_session.c: the session calls the sweep times and slices runs with
 * (engine/core/session.c): staged inputs and the forward without capture, the end-to-end run
 * with its outputs back on the host, the batch size changed on a live session, the
 * algorithm offers of a backend without choices, and the conv_pins knob's checks.
 * The model is session_graph.h's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "gpudiff/graph.h"
#include "gpudiff/session.h"
#include "session_graph.h"

#define OUT SG_OUT

START_TEST(end_to_end_outputs_every_batch_size)
{
    struct gd_err err = {0};
    struct gd_graph *g = sg_graph(0);
    struct gd_tensor *x = sg_input();
    struct gd_knobs k;
    gd_knobs_init(&k);
    struct gd_session *s = gd_session_new(g, "cpu", &k, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    ck_assert_ptr_null(gd_session_output(s, 0));
    const struct gd_tensor *in[1] = {x};
    static const int64_t batches[] = {0, 1, 2, 5, 8};
    for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
        double us = -1;
        ck_assert_int_eq(gd_session_set_batch(s, batches[b], &err), 0);
        ck_assert_msg(gd_session_run_end_to_end(s, 1, in, &us, &err) == 0, "%s", err.msg);
        ck_assert(us >= 0);
        char what[32];
        snprintf(what, sizeof what, "batch %lld", (long long)batches[b]);
        sg_check_output(gd_session_output(s, 0), x, what);
    }
    ck_assert_ptr_null(gd_session_output(s, 1));
    ck_assert_int_eq(gd_session_set_batch(s, -1, &err), GD_EINVAL);
    gd_session_free(s);
    gd_tensor_free(x);
    gd_graph_free(g);
}
END_TEST

/* What a capture run delivers of the last layer, to compare a forward's effect with. */
static int
keep_last(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    struct gd_tensor **kept = user;
    if (strcmp(layer->name, "act") != 0)
        return 0;
    if (*kept == NULL) {
        int64_t shape[2] = {layer->batch_total, OUT};
        *kept = gd_tensor_new(GD_F32, 2, shape, err);
        if (*kept == NULL)
            return err->code;
    }
    memcpy((float *)(*kept)->data + layer->batch_offset * OUT, layer->value->data,
           gd_tensor_nbytes(layer->value));
    return 0;
}

START_TEST(staged_forward_leaves_the_session_whole)
{
    struct gd_err err = {0};
    struct gd_graph *g = sg_graph(0);
    struct gd_tensor *x = sg_input();
    struct gd_knobs k;
    gd_knobs_init(&k);
    k.threads = 2;
    struct gd_session *s = gd_session_new(g, "cpu", &k, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    double us = -1;
    ck_assert_int_eq(gd_session_forward(s, &us, &err), GD_EINVAL);
    const struct gd_tensor *in[1] = {x};
    ck_assert_int_eq(gd_session_stage(s, 0, NULL, &err), GD_EINVAL);
    ck_assert_msg(gd_session_stage(s, 1, in, &err) == 0, "%s", err.msg);
    /* staged: a copy, so the host input may go (the sanitizer build sees any later read) */
    gd_tensor_free(x);
    x = NULL;
    struct gd_tensor *x2 = sg_input();
    for (int64_t b = 0; b <= 3; b++) {
        ck_assert_int_eq(gd_session_set_batch(s, b, &err), 0);
        for (int rep = 0; rep < 3; rep++) {
            us = -1;
            ck_assert_msg(gd_session_forward(s, &us, &err) == 0, "%s", err.msg);
            ck_assert(us >= 0);
        }
    }
    /* The staged input is still there after all those forwards: stage again from it and a
     * capture run afterwards still computes from its own input. */
    ck_assert_int_eq(gd_session_set_batch(s, 2, &err), 0);
    struct gd_tensor *kept = NULL;
    const struct gd_tensor *in2[1] = {x2};
    ck_assert_msg(gd_session_run(s, 1, in2, keep_last, &kept, &err) == 0, "%s", err.msg);
    sg_check_output(kept, x2, "capture after forwards");
    ck_assert_msg(gd_session_forward(s, &us, &err) == 0, "%s", err.msg);
    /* restaging replaces the staged input */
    ck_assert_msg(gd_session_stage(s, 1, in2, &err) == 0, "%s", err.msg);
    ck_assert_msg(gd_session_forward(s, &us, &err) == 0, "%s", err.msg);
    gd_tensor_free(kept);
    gd_session_free(s);
    gd_tensor_free(x);
    gd_tensor_free(x2);
    gd_graph_free(g);
}
END_TEST

START_TEST(cpu_has_no_algorithm_choices)
{
    struct gd_err err = {0};
    struct gd_graph *g = sg_graph(0);
    struct gd_knobs k;
    gd_knobs_init(&k);
    struct gd_session *s = gd_session_new(g, "cpu64", &k, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    struct gd_algo_offer offers[GD_ALGO_OFFERS_MAX];
    int n = -1;
    ck_assert_int_eq(gd_session_algo_offers(s, 0, offers, GD_ALGO_OFFERS_MAX, &n, &err),
                     GD_ENOTSUP);
    ck_assert_int_eq(n, -1);
    gd_session_free(s);
    gd_graph_free(g);
}
END_TEST

START_TEST(conv_pins_are_checked)
{
    static const struct {
        const char *pins;
        int code;
        const char *says;
    } cases[] = {
        {"fc=1", GD_EINVAL, "not a convolution"},
        {"nosuch=1", GD_EINVAL, "no node nosuch"},
        /* the choice's own syntax is the backend's (an id, an engine config:
         * check_conv_config, check_cuda_session); the session checks NODE=CHOICE */
        {"conv=", GD_EINVAL, "not NODE=CHOICE"},
        {"=3", GD_EINVAL, "not NODE=CHOICE"},
        {"conv", GD_EINVAL, "not NODE=CHOICE"},
        {"conv=1,fc=2", GD_EINVAL, "not a convolution"},
        /* a good pin on a backend without algorithms: refused, not ignored */
        {"conv=1", GD_ENOTSUP, "--conv-pins is for the cuda backend, not cpu"},
    };
    struct gd_graph *g = sg_graph(1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct gd_err err = {0};
        struct gd_knobs k;
        gd_knobs_init(&k);
        snprintf(k.conv_pins, sizeof k.conv_pins, "%s", cases[i].pins);
        struct gd_session *s = gd_session_new(g, "cpu", &k, &err);
        ck_assert_msg(s == NULL, "%s was accepted", cases[i].pins);
        ck_assert_msg(err.code == cases[i].code, "%s: code %d, not %d (%s)", cases[i].pins,
                      err.code, cases[i].code, err.msg);
        ck_assert_msg(strstr(err.msg, cases[i].says) != NULL, "%s: %s", cases[i].pins, err.msg);
    }
    gd_graph_free(g);
}
END_TEST

/* The staged forward of a model whose folds read an integer input (session_graph.h). */
START_TEST(staged_forward_folds_read_integer_inputs)
{
    sg_check_staged_folds("cpu");
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("session");
    TCase *tc = tcase_create("session");
    tcase_add_test(tc, end_to_end_outputs_every_batch_size);
    tcase_add_test(tc, staged_forward_leaves_the_session_whole);
    tcase_add_test(tc, staged_forward_folds_read_integer_inputs);
    tcase_add_test(tc, cpu_has_no_algorithm_choices);
    tcase_add_test(tc, conv_pins_are_checked);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
