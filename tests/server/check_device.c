/*
 * check_device.c: server/device.c: the device key of runs as the agent writes them (cpu,
 * cpu64, emulated TF32, cuda with its knobs), made from knobs.def: which knobs count (those
 * that change numbers, not at their default, in their one spelling, what older agents wrote
 * included), which values leave a knob out, documents missing parts, and (jobsrv) the labels
 * of `serve --label`.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"

/* The key of a run.json given as text. */
static char *
key_of(const char *text)
{
    json_error_t jerr;
    json_t *run = json_loads(text, 0, &jerr);
    ck_assert_msg(run != NULL, "%s: %s", text, jerr.text);
    struct srv_buf key = {0};
    ck_assert_int_eq(srv_device_key(run, &key), 0);
    json_decref(run);
    ck_assert_ptr_nonnull(key.data);
    return key.data;
}

static void
check_key(const char *text, const char *want)
{
    char *got = key_of(text);
    ck_assert_msg(strcmp(got, want) == 0, "key of %s: \"%s\", not \"%s\"", text, got, want);
    free(got);
}

START_TEST(agent_runs)
{
    /* What `gpudiff-agent run` writes for each backend (agent/cmd_run.c, knobs_json). */
    check_key("{\"backend\":\"cpu\",\"env\":{\"host\":\"vm\",\"backend\":\"cpu\"},"
              "\"knobs\":{\"emulate\":\"none\",\"batch\":null}}",
              "cpu");
    check_key("{\"backend\":\"cpu64\",\"knobs\":{\"emulate\":\"none\",\"batch\":null}}", "cpu64");
    check_key("{\"backend\":\"cpu\",\"knobs\":{\"emulate\":\"tf32:gemm\",\"batch\":null}}",
              "cpu emulate=tf32:gemm");
    check_key("{\"backend\":\"cpu\",\"knobs\":{\"emulate\":\"bf16:conv+gemm\",\"batch\":8}}",
              "cpu emulate=bf16:conv+gemm batch=8");
    check_key("{\"backend\":\"cuda\",\"env\":{\"gpu_name\":\"NVIDIA H200\",\"driver\":\"570.1\"},"
              "\"knobs\":{\"tf32\":\"on\",\"conv_algo\":\"autotune\",\"batch\":null,"
              "\"math_mode\":\"default\",\"workspace_limit\":null,\"conv_api\":\"graph\","
              "\"reduced_reduction\":\"on\",\"dtype\":null,\"conv_pins\":null,"
              "\"host_memory\":1024,\"capture\":\"full\"}}",
              "cuda NVIDIA H200 tf32=on conv_algo=autotune");
    /* every knob that changes numbers counts when not at its default: math mode,
     * workspace, conv API, reduced reduction, dtype (not threads, host memory, capture) */
    check_key("{\"backend\":\"cuda\",\"env\":{\"gpu_name\":\"NVIDIA H200\"},"
              "\"knobs\":{\"tf32\":\"off\",\"conv_algo\":\"heuristic\",\"batch\":32,"
              "\"math_mode\":\"pedantic\",\"workspace_limit\":1048576,\"conv_api\":\"legacy\","
              "\"reduced_reduction\":\"off\",\"dtype\":\"float16\",\"host_memory\":16,"
              "\"capture\":\"fingerprint\"}}",
              "cuda NVIDIA H200 batch=32 math_mode=pedantic workspace_limit=1048576 "
              "conv_api=legacy reduced_reduction=off dtype=float16");
    /* what older agents wrote: the same keys in the one spelling (migration 023) */
    check_key("{\"backend\":\"cuda\",\"env\":{\"gpu_name\":\"NVIDIA H200\"},"
              "\"knobs\":{\"emulate\":\"none\",\"batch\":32,\"conv_algo\":\"heuristic\","
              "\"tf32\":true,\"math_mode\":\"default\",\"workspace_limit\":null}}",
              "cuda NVIDIA H200 tf32=on batch=32");
    check_key("{\"backend\":\"cpu\",\"knobs\":{\"emulate\":\"bf16:conv,gemm\",\"batch\":8}}",
              "cpu emulate=bf16:conv+gemm batch=8");
    /* --repro: bitwise is a device of its own, off (the default) keeps the key */
    check_key("{\"backend\":\"cuda\",\"env\":{\"gpu_name\":\"NVIDIA H200\"},"
              "\"knobs\":{\"emulate\":\"none\",\"batch\":null,\"repro\":\"bitwise\","
              "\"tf32\":\"off\"}}",
              "cuda NVIDIA H200 repro=bitwise");
    check_key("{\"backend\":\"cuda\",\"env\":{\"gpu_name\":\"NVIDIA H200\"},"
              "\"knobs\":{\"emulate\":\"none\",\"batch\":null,\"repro\":\"off\","
              "\"conv_algo\":\"heuristic\"}}",
              "cuda NVIDIA H200");
}
END_TEST

START_TEST(what_is_left_out)
{
    /* A bundle of another framework's dumps: no knobs, an empty GPU name. */
    check_key("{\"backend\":\"pytorch_gpu\",\"env\":{\"gpu_name\":\"\"},\"knobs\":{}}",
              "pytorch_gpu");
    check_key("{\"backend\":\"import\"}", "import");
    /* The host, the driver and the library versions are not the device. */
    check_key(
        "{\"backend\":\"cuda\",\"env\":{\"gpu_name\":\"A\",\"host\":\"h1\",\"cudnn\":\"9.1\"}}",
        "cuda A");
    /* a fixed algorithm counts; values the table does not read (another agent's) do not */
    check_key("{\"backend\":\"cuda\",\"knobs\":{\"tf32\":\"yes\",\"conv_algo\":3}}", "cuda");
    check_key("{\"backend\":\"cuda\",\"knobs\":{\"conv_algo\":\"fixed:3\",\"warp\":9}}",
              "cuda conv_algo=fixed:3");
    check_key("{\"backend\":\"cuda\",\"knobs\":{\"conv_algo\":\"\",\"batch\":[1],"
              "\"emulate\":null}}",
              "cuda");
    check_key("{}", "");
}
END_TEST

START_TEST(two_runs_one_device)
{
    /* Other hosts and dates, the same GPU and knobs: one device of the matrix. */
    char *a = key_of("{\"backend\":\"cuda\",\"created_at\":\"2026-01-01T00:00:00Z\","
                     "\"env\":{\"gpu_name\":\"NVIDIA A100\",\"host\":\"a\",\"driver\":\"1\"},"
                     "\"knobs\":{\"tf32\":true}}");
    char *b = key_of("{\"backend\":\"cuda\",\"created_at\":\"2026-02-01T00:00:00Z\","
                     "\"env\":{\"gpu_name\":\"NVIDIA A100\",\"host\":\"b\",\"driver\":\"2\"},"
                     "\"knobs\":{\"tf32\":true}}");
    ck_assert_str_eq(a, b);
    ck_assert_str_eq(a, "cuda NVIDIA A100 tf32=on");
    free(a);
    free(b);
}
END_TEST

START_TEST(labels_of_serve)
{
    /* jobsrv: env.labels (serve --label K=V) join the key as " label.K=V", sorted by K */
    check_key("{\"backend\":\"cpu\",\"env\":{\"host\":\"h3\",\"labels\":{\"site\":\"b\","
              "\"gpu\":\"sm_86\"}},\"knobs\":{\"emulate\":\"none\",\"batch\":4}}",
              "cpu batch=4 label.gpu=sm_86 label.site=b");
    /* three hosts of one backend with other labels: three devices; none: today's key */
    char *a = key_of("{\"backend\":\"cpu\",\"env\":{\"labels\":{\"gpu\":\"sm_75\"}}}");
    char *b = key_of("{\"backend\":\"cpu\",\"env\":{\"labels\":{\"gpu\":\"sm_86\"}}}");
    ck_assert_str_ne(a, b);
    ck_assert_str_eq(a, "cpu label.gpu=sm_75");
    free(a);
    free(b);
    check_key("{\"backend\":\"cpu\",\"env\":{\"labels\":{}}}", "cpu");
    /* the run's own top-level labels (run --label) are not the device */
    check_key("{\"backend\":\"cpu\",\"labels\":{\"gpu\":\"x\"}}", "cpu");
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("device");
    TCase *tc = tcase_create("key");
    tcase_add_test(tc, agent_runs);
    tcase_add_test(tc, what_is_left_out);
    tcase_add_test(tc, two_runs_one_device);
    tcase_add_test(tc, labels_of_serve);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
