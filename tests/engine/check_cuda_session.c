/*
 * check_cuda_session.c: the sweep's session calls on the cuda backend (engine/core/session.c,
 * engine/cuda/backend_cuda.c, op_conv.cu): the forward on staged inputs timed by CUDA events
 * (positive, and not longer than the wall clock around it), end-to-end outputs copied back
 * exactly (session_graph.h's integer model, every batch size), the algorithms cuDNN offers
 * for a convolution after a heuristic run (one of them the chosen one, the one its layer
 * record names), a convolution pinned to each offered choice (its record says so, and the
 * output is the heuristic run's within float32 rounding), and a pin cuDNN refuses
 * (GD_ENOTSUP, naming it), through the legacy API (algorithm ids) and the graph API
 * (engine configs); with the graph API, tensor-core engines are refused when TF32 is off.
 * Exits 77 without a GPU or a cuda backend.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <check.h>

#include "gpudiff/model.h"
#include "gpudiff/session.h"
#include "session_graph.h"

static int
have_cuda(void)
{
    int built = 0;
    for (const char *const *b = gd_backend_names(); *b != NULL; b++)
        built |= strcmp(*b, "cuda") == 0;
    if (!built)
        return 0;
    /* a one-node graph made without Check's asserts, which need a running test */
    struct gd_err err = {0};
    struct gd_graph *g = gd_graph_new("probe", &err);
    struct gd_input_decl decl = {.dtype = GD_F32, .shape = {.ndim = 1, .dim = {4}}};
    const char *in[] = {"x"}, *out[] = {"y"};
    struct gd_session *s = NULL;
    struct gd_knobs k;
    gd_knobs_init(&k);
    if (g != NULL && gd_graph_add_input(g, "x", &decl, &err) == 0 &&
        gd_graph_add_node(g, "relu", "Relu", 1, in, 1, out, 0, NULL, &err) == 0 &&
        gd_graph_add_output(g, "y", &err) == 0 && gd_graph_finalize(g, &err) == 0)
        s = gd_session_new(g, "cuda", &k, &err);
    int ok = s != NULL;
    if (!ok)
        printf("SKIP: %s\n", err.msg);
    gd_session_free(s);
    gd_graph_free(g);
    return ok;
}

/* A model whose forward cannot be recorded into a CUDA graph: Gather's indices are
 * computed (ArgMax), so the backend checks them on the host (a stream synchronization),
 * which a stream capture refuses. */
static const char unrecordable[] =
    "{\"format\": \"gpudiff-model\", \"version\": 1, \"name\": \"argmax-gather\","
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [4, 5]}],"
    " \"weights\": [{\"name\": \"table\", \"dtype\": \"float32\", \"shape\": [5, 2],"
    " \"values\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}],"
    " \"nodes\": [{\"name\": \"am\", \"op\": \"ArgMax\", \"inputs\": [\"x\"],"
    " \"outputs\": [\"idx\"], \"attrs\": {\"axis\": 1, \"keepdims\": 0}},"
    " {\"name\": \"g\", \"op\": \"Gather\", \"inputs\": [\"table\", \"idx\"],"
    " \"outputs\": [\"y\"], \"attrs\": {\"axis\": 0}}], \"outputs\": [\"y\"]}";

/* gd_session_forward records its nodes into a CUDA graph on the second forward of one
 * staging and replays it after: every forward succeeds and is timed, and a model that
 * cannot be recorded falls back to running its nodes, with the same results end to end. */
START_TEST(forward_recorded)
{
    struct gd_err err = {0};
    struct gd_graph *g = NULL;
    ck_assert_msg(gd_model_parse(unrecordable, strlen(unrecordable), "argmax-gather", ".", NULL,
                                 &g, &err) == 0, "%s", err.msg);
    struct gd_knobs k;
    gd_knobs_init(&k);
    struct gd_session *s = gd_session_new(g, "cuda", &k, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    ck_assert_str_eq(gd_env_get(gd_session_env(s), "cuda_graphs"), "on");
    int64_t shape[2] = {4, 5};
    struct gd_tensor *x = gd_tensor_new(GD_F32, 2, shape, &err);
    float *v = x->data;
    for (int i = 0; i < 20; i++)
        v[i] = (float)((i * 7) % 5); /* one largest value per row */
    const struct gd_tensor *in[1] = {x};
    ck_assert_msg(gd_session_stage(s, 1, in, &err) == 0, "%s", err.msg);
    for (int rep = 0; rep < 4; rep++) {
        double us = -1;
        ck_assert_msg(gd_session_forward(s, &us, &err) == 0, "forward %d: %s", rep, err.msg);
        ck_assert(us > 0);
    }
    double us = -1;
    ck_assert_msg(gd_session_run_end_to_end(s, 1, in, &us, &err) == 0, "%s", err.msg);
    const struct gd_tensor *y = gd_session_output(s, 0);
    ck_assert_ptr_nonnull(y);
    for (int r = 0; r < 4; r++) {
        int best = 0;
        for (int c = 1; c < 5; c++)
            if (v[r * 5 + c] > v[r * 5 + best])
                best = c;
        for (int c = 0; c < 2; c++)
            ck_assert_msg(gd_tensor_get_f64(y, r * 2 + c) == best * 2 + c, "row %d col %d: %g",
                          r, c, gd_tensor_get_f64(y, r * 2 + c));
    }
    gd_session_free(s);
    gd_tensor_free(x);
    gd_graph_free(g);
}
END_TEST

START_TEST(forward_and_end_to_end)
{
    struct gd_err err = {0};
    struct gd_graph *g = sg_graph(0);
    struct gd_tensor *x = sg_input();
    struct gd_knobs k;
    gd_knobs_init(&k);
    k.tf32 = 0;
    struct gd_session *s = gd_session_new(g, "cuda", &k, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    const struct gd_tensor *in[1] = {x};
    ck_assert_msg(gd_session_stage(s, 1, in, &err) == 0, "%s", err.msg);
    for (int64_t b = 0; b <= 2; b++) {
        ck_assert_int_eq(gd_session_set_batch(s, b, &err), 0);
        for (int rep = 0; rep < 5; rep++) {
            double us = -1;
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            ck_assert_msg(gd_session_forward(s, &us, &err) == 0, "%s", err.msg);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double wall =
                (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
            ck_assert_msg(us > 0 && us <= wall * 1.01 + 5, "device %g us, wall %g us", us, wall);
        }
        double us = -1;
        ck_assert_msg(gd_session_run_end_to_end(s, 1, in, &us, &err) == 0, "%s", err.msg);
        ck_assert(us > 0);
        char what[32];
        snprintf(what, sizeof what, "cuda batch %lld", (long long)b);
        sg_check_output(gd_session_output(s, 0), x, what);
    }
    gd_session_free(s);
    gd_tensor_free(x);
    gd_graph_free(g);
}
END_TEST

struct conv_capture {
    char algo[128];
    char math[16];
    struct gd_tensor *y;
};

static int
keep_conv(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    struct conv_capture *c = user;
    if (strcmp(layer->name, "conv") != 0)
        return 0;
    snprintf(c->algo, sizeof c->algo, "%s", layer->algo);
    snprintf(c->math, sizeof c->math, "%s", layer->math);
    gd_tensor_free(c->y);
    c->y = gd_tensor_dup(layer->value, err);
    return c->y != NULL ? 0 : err->code;
}

/* Runs the two-input graph on cuda through conv API api with TF32 tf32 and pins (may be
 * ""), capturing the conv layer. */
static int
run_conv(struct gd_graph *g, const char *api, int tf32, const char *pins,
         struct gd_session **keep, struct conv_capture *c, struct gd_err *err)
{
    struct gd_knobs k;
    gd_knobs_init(&k);
    k.tf32 = tf32;
    snprintf(k.conv_api, sizeof k.conv_api, "%s", api);
    snprintf(k.conv_pins, sizeof k.conv_pins, "%s", pins);
    struct gd_session *s = gd_session_new(g, "cuda", &k, err);
    if (s == NULL)
        return err->code;
    struct gd_tensor *x = sg_input(), *img = sg_image(3);
    const struct gd_tensor *in[2] = {x, img};
    int rc = gd_session_run(s, 2, in, keep_conv, c, err);
    gd_tensor_free(x);
    gd_tensor_free(img);
    if (keep != NULL && rc == 0)
        *keep = s;
    else
        gd_session_free(s);
    return rc;
}

/* The exact conv of sg_image(3) with the 3x3 kernel 1 0 1 / 0 1 0 / 1 0 1 (no padding). */
static void
conv_exact(double out[3][2][2])
{
    struct gd_tensor *img = sg_image(3);
    const float *v = img->data;
    static const int k[3][3] = {{1, 0, 1}, {0, 1, 0}, {1, 0, 1}};
    for (int n = 0; n < 3; n++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                long acc = 0;
                for (int a = 0; a < 3; a++)
                    for (int b = 0; b < 3; b++)
                        acc += k[a][b] * (long)v[n * 16 + (i + a) * 4 + (j + b)];
                out[n][i][j] = (double)acc;
            }
    gd_tensor_free(img);
}

/* Integer-valued outputs of a 9-term sum of values up to 4 in magnitude: every algorithm,
 * the transform-based ones (FFT, Winograd) too, lands within 1e-3 of the integer (their
 * rounding is a small multiple of float32's, about 1e-5 here), and none may be off by more. */
static void
check_conv(const struct gd_tensor *y, const char *what)
{
    double want[3][2][2];
    conv_exact(want);
    ck_assert_ptr_nonnull(y);
    ck_assert_int_eq(gd_tensor_numel(y), 12);
    for (int64_t i = 0; i < 12; i++) {
        double got = gd_tensor_get_f64(y, i), w = (&want[0][0][0])[i];
        ck_assert_msg(fabs(got - w) <= 1e-3, "%s: element %lld is %.9g, not %g", what, (long long)i,
                      got, w);
    }
}

/* Offers after a heuristic run, each offer pinned, a pin cuDNN refuses, through api. */
static void
offers_and_pins(const char *api)
{
    struct gd_err err = {0};
    int graph = strcmp(api, "graph") == 0;
    struct gd_graph *g = sg_graph(1);
    int conv = gd_graph_find_node(g, "conv"), fc = gd_graph_find_node(g, "fc");
    ck_assert(conv >= 0 && fc >= 0);
    struct gd_session *s = NULL;
    struct conv_capture ref = {{0}, {0}, NULL};
    ck_assert_msg(run_conv(g, api, 0, "", &s, &ref, &err) == 0, "%s", err.msg);
    check_conv(ref.y, "heuristic");
    ck_assert_msg(strncmp(ref.algo, graph ? "cudnn graph " : "cudnn fwd ", graph ? 12 : 10) == 0,
                  "%s: record %s", api, ref.algo);
    ck_assert_str_eq(ref.math, "fp32");
    struct gd_algo_offer offers[GD_ALGO_OFFERS_MAX];
    int n = -1, chosen = -1, n_fc = -1;
    ck_assert_msg(gd_session_algo_offers(s, conv, offers, GD_ALGO_OFFERS_MAX, &n, &err) == 0, "%s",
                  err.msg);
    ck_assert_msg(n > 0, "cuDNN offered no algorithm");
    struct gd_algo_offer none[1];
    ck_assert_int_eq(gd_session_algo_offers(s, fc, none, 1, &n_fc, &err), 0);
    ck_assert_int_eq(n_fc, 0);
    ck_assert_int_eq(gd_session_algo_offers(s, 99, none, 1, &n_fc, &err), GD_EINVAL);
    for (int i = 0; i < n; i++) {
        printf("%s offer %d: id %d %s config %s notes %s deterministic %d workspace %lld "
               "math %s%s\n", api, i, offers[i].id, offers[i].name, offers[i].config,
               offers[i].notes, offers[i].deterministic, (long long)offers[i].workspace,
               offers[i].math, offers[i].chosen ? " (chosen)" : "");
        ck_assert(offers[i].id >= 0 && offers[i].name[0] != '\0' && offers[i].config[0] != '\0');
        /* graph: a plan's workspace is known once it is built (the chosen one's is) */
        ck_assert(offers[i].workspace >= (graph && !offers[i].chosen ? -1 : 0));
        ck_assert(offers[i].time_us < 0); /* heuristic: nothing was measured */
        ck_assert_str_eq(offers[i].math, "fp32"); /* TF32 off: no tensor-core engine */
        ck_assert(!graph || strstr(offers[i].notes, "tc") == NULL);
        if (offers[i].chosen) {
            ck_assert_int_eq(chosen, -1);
            chosen = i;
        }
    }
    ck_assert_int_ge(chosen, 0);
    char want[128];
    snprintf(want, sizeof want, "fwd %s ", offers[chosen].config);
    ck_assert_msg(strstr(ref.algo, want) != NULL && strstr(ref.algo, "(heuristic)") != NULL,
                  "record %s for chosen %s", ref.algo, offers[chosen].config);
    gd_session_free(s);
    /* each offer, pinned: the record names it, the result is the convolution's */
    for (int i = 0; i < n; i++) {
        char pins[128];
        struct conv_capture c = {{0}, {0}, NULL};
        snprintf(pins, sizeof pins, "conv=%s", offers[i].config);
        ck_assert_msg(run_conv(g, api, 0, pins, NULL, &c, &err) == 0, "%s: %s", pins, err.msg);
        snprintf(want, sizeof want, "fwd %s ", offers[i].config);
        ck_assert_msg(strstr(c.algo, want) != NULL && strstr(c.algo, "(pinned)") != NULL,
                      "%s gave the record %s", pins, c.algo);
        check_conv(c.y, pins);
        gd_tensor_free(c.y);
    }
    struct conv_capture bad = {{0}, {0}, NULL};
    ck_assert_int_eq(run_conv(g, api, 0, graph ? "conv=eng99999" : "conv=99", NULL, &bad, &err),
                     GD_ENOTSUP);
    ck_assert_msg(strstr(err.msg, graph ? "eng99999" : "algorithm 99") != NULL, "%s", err.msg);
    /* the other API's choice is refused before anything runs */
    ck_assert_int_eq(run_conv(g, api, 0, graph ? "conv=1" : "conv=eng1", NULL, &bad, &err),
                     GD_EINVAL);
    gd_tensor_free(bad.y);
    gd_tensor_free(ref.y);
    gd_graph_free(g);
}

START_TEST(offers_and_pins_legacy)
{
    offers_and_pins("legacy");
}
END_TEST

START_TEST(offers_and_pins_graph)
{
    offers_and_pins("graph");
}
END_TEST

/* Graph API, TF32 on: the offers may hold tensor-core engines (notes "tc", math "tf32");
 * each one pinned with TF32 off is refused (it would round the inputs to TF32), and with
 * TF32 on it runs and records math tf32. */
START_TEST(graph_tf32_notes)
{
    struct gd_err err = {0};
    struct gd_graph *g = sg_graph(1);
    int conv = gd_graph_find_node(g, "conv");
    struct gd_session *s = NULL;
    struct conv_capture ref = {{0}, {0}, NULL};
    ck_assert_msg(run_conv(g, "graph", 1, "", &s, &ref, &err) == 0, "%s", err.msg);
    struct gd_algo_offer offers[GD_ALGO_OFFERS_MAX];
    int n = 0, tc = 0;
    ck_assert_int_eq(gd_session_algo_offers(s, conv, offers, GD_ALGO_OFFERS_MAX, &n, &err), 0);
    gd_session_free(s);
    for (int i = 0; i < n; i++) {
        int is_tc = strstr(offers[i].notes, "tc") != NULL;
        ck_assert_str_eq(offers[i].math, is_tc ? "tf32" : "fp32");
        if (!is_tc)
            continue;
        tc++;
        char pins[128];
        struct conv_capture c = {{0}, {0}, NULL};
        snprintf(pins, sizeof pins, "conv=%s", offers[i].config);
        ck_assert_int_eq(run_conv(g, "graph", 0, pins, NULL, &c, &err), GD_ENOTSUP);
        ck_assert_msg(strstr(err.msg, "TF32 is off") != NULL, "%s", err.msg);
        ck_assert_msg(run_conv(g, "graph", 1, pins, NULL, &c, &err) == 0, "%s", err.msg);
        ck_assert_msg(strcmp(c.math, "tf32") == 0 && strstr(c.algo, "[tc") != NULL,
                      "%s: %s %s", pins, c.algo, c.math);
        gd_tensor_free(c.y);
    }
    printf("graph, TF32 on: %d offers, %d on tensor cores\n", n, tc);
    gd_tensor_free(ref.y);
    gd_graph_free(g);
}
END_TEST

/* The staged forward of a model whose folds read an integer input (session_graph.h): it
 * failed on cuda, where the staged inputs lie in device memory. */
START_TEST(staged_forward_folds_read_integer_inputs)
{
    sg_check_staged_folds("cuda");
}
END_TEST

int
main(void)
{
    if (!have_cuda())
        return 77;
    Suite *s = suite_create("cuda_session");
    TCase *tc = tcase_create("cuda_session");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, forward_and_end_to_end);
    tcase_add_test(tc, forward_recorded);
    tcase_add_test(tc, offers_and_pins_legacy);
    tcase_add_test(tc, offers_and_pins_graph);
    tcase_add_test(tc, graph_tf32_notes);
    tcase_add_test(tc, staged_forward_folds_read_integer_inputs);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    /* have_cuda() made a CUDA context, which a forked child cannot use */
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
