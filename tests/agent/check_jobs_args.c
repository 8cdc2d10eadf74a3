/*
 * check_jobs_args.c: the pure parts of agent/jobs_args.c: submit's --knob (integers told
 * from strings, names checked, '_' read as '-', given once) and --match (keys checked, one
 * value a string, several an array, empty values refused), a job's knobs as run flags (each
 * type, booleans only for on|off knobs, an unknown name refused with serve's message and
 * nothing left allocated), the cache's names, file names a job may use (and the daemon's
 * narrower set), and the last line
 * of a failed run's stderr.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"

static json_t *
parse(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(j);
    return j;
}

/* 1 when a and b are equal JSON. */
static int
same(json_t *a, const char *b)
{
    json_t *jb = parse(b);
    int eq = json_equal(a, jb);
    json_decref(jb);
    return eq;
}

START_TEST(knob_kv)
{
    json_t *k = json_object();
    struct gd_err err = {0};
    ck_assert_int_eq(agt_knob_kv("batch=4", k, &err), 0);
    ck_assert_int_eq(agt_knob_kv("tf32=on", k, &err), 0);
    ck_assert_int_eq(agt_knob_kv("conv-algo=fixed:eng0", k, &err), 0); /* '-' is '_' */
    ck_assert_int_eq(agt_knob_kv("workspace_limit=64K", k, &err), 0);
    ck_assert_int_eq(agt_knob_kv("input-key=007", k, &err), 0); /* not a knob, a run option */
    /* stored under the knob's name, in its one spelling: numbers for the numeric knobs */
    ck_assert(same(k, "{\"batch\": 4, \"tf32\": \"on\", \"conv_algo\": \"fixed:eng0\","
                      " \"workspace_limit\": 65536, \"input_key\": \"007\"}"));
    /* auto is a word of a number knob: sent as it is */
    ck_assert_int_eq(agt_knob_kv("threads=auto", k, &err), 0);
    ck_assert_str_eq(json_string_value(json_object_get(k, "threads")), "auto");
    /* values are checked here, with run's message */
    err = (struct gd_err){0};
    ck_assert_int_eq(agt_knob_kv("emulate=tf32:conv,gemm", k, &err), GD_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "--knob emulate takes none, tf32"));
    err = (struct gd_err){0};
    ck_assert_int_eq(agt_knob_kv("dtype=float64", k, &err), GD_EINVAL);
    err = (struct gd_err){0};
    ck_assert_int_eq(agt_knob_kv("workspace-limit=-1", k, &err), GD_EINVAL);
    err = (struct gd_err){0};
    ck_assert_int_eq(agt_knob_kv("batch=8", k, &err), GD_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "given twice"));
    err = (struct gd_err){0};
    ck_assert_int_eq(agt_knob_kv("warp=9", k, &err), GD_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "no such knob"));
    ck_assert_ptr_nonnull(strstr(err.msg, "tf32"));
    err = (struct gd_err){0};
    ck_assert_int_eq(agt_knob_kv("backend=cuda", k, &err), GD_EINVAL); /* the device's */
    err = (struct gd_err){0};
    ck_assert_int_eq(agt_knob_kv("dtype=", k, &err), GD_EINVAL);
    err = (struct gd_err){0};
    ck_assert_int_eq(agt_knob_kv("=4", k, &err), GD_EINVAL);
    err = (struct gd_err){0};
    ck_assert_int_eq(agt_knob_kv("batch", k, &err), GD_EINVAL);
    ck_assert_int_eq(json_object_size(k), 6);
    json_decref(k);
}
END_TEST

START_TEST(match_kv)
{
    json_t *m = json_object();
    struct gd_err err = {0};
    ck_assert_int_eq(agt_match_kv("backend=cpu", m, &err), 0);
    ck_assert_int_eq(agt_match_kv("labels.gpu=sm_75,sm_86", m, &err), 0);
    ck_assert_int_eq(agt_match_kv("env.gpu_name=NVIDIA H200", m, &err), 0);
    ck_assert_int_eq(agt_match_kv("host=a=b", m, &err), 0); /* the first '=' splits */
    ck_assert(same(m, "{\"backend\": \"cpu\", \"labels.gpu\": [\"sm_75\", \"sm_86\"],"
                      " \"env.gpu_name\": \"NVIDIA H200\", \"host\": \"a=b\"}"));
    const char *bad[] = {"backend=cuda", "gpu=sm_75",      "labels.=x",     "env.a.b=x",
                         "labels.gpu2=",  "key=a,,b",      "key=a,",        "=x",
                         "env=x",         "labels.gpu3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = (struct gd_err){0};
        ck_assert_msg(agt_match_kv(bad[i], m, &err) == GD_EINVAL, "%s was taken", bad[i]);
        ck_assert(err.msg[0] != '\0');
    }
    ck_assert_int_eq(json_object_size(m), 4);
    json_decref(m);
}
END_TEST

static void
free_args(char **argv, int argc)
{
    for (int i = 0; i < argc; i++)
        free(argv[i]);
}

START_TEST(knob_args)
{
    char *argv[32];
    int argc = 1;
    struct gd_err err = {0};
    json_t *k = parse("{\"batch\": 4, \"tf32\": true, \"reduced_reduction\": false,"
                      " \"emulate\": \"bf16:conv\", \"threads\": \"2\", \"input-key\": \"x\","
                      " \"conv_algo\": \"autotune\"}");
    argv[0] = strdup("run");
    ck_assert_int_eq(agt_knob_args(k, argv, &argc, 32, &err), 0);
    const char *want[] = {
        "run", "--batch",     "4",         "--tf32",    "on", "--reduced-reduction",
        "off", "--emulate",   "bf16:conv", "--threads", "2",  "--input-key",
        "x",   "--conv-algo", "autotune"};
    ck_assert_int_eq(argc, 15);
    for (int i = 0; i < argc; i++)
        ck_assert_str_eq(argv[i], want[i]);
    free_args(argv, argc);
    json_decref(k);

    /* no knobs, or null: nothing added */
    argc = 0;
    ck_assert_int_eq(agt_knob_args(NULL, argv, &argc, 32, &err), 0);
    k = parse("{}");
    ck_assert_int_eq(agt_knob_args(k, argv, &argc, 32, &err), 0);
    ck_assert_int_eq(argc, 0);
    json_decref(k);

    /* refusals: the message names the knob; nothing is left in argv */
    const char *bad[][2] = {
        {"{\"batch\": 2, \"warp-speed\": 9}", "unknown knob \"warp-speed\""},
        {"{\"batch\": true}", "knob batch takes an integer"},
        {"{\"tf32\": 1}", "knob tf32 takes on, off or a boolean"},
        {"{\"dtype\": 16}", "knob dtype takes a string"},
        {"{\"capture\": [\"full\"]}", "knob capture takes a string"},
        {"{\"backend\": \"cuda\"}", "unknown knob \"backend\""},
        {"[1]", "not a JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        argc = 0;
        err = (struct gd_err){0};
        k = parse(bad[i][0]);
        ck_assert_msg(agt_knob_args(k, argv, &argc, 32, &err) == GD_EINVAL, "%s", bad[i][0]);
        ck_assert_msg(strstr(err.msg, bad[i][1]) != NULL, "%s: %s", bad[i][0], err.msg);
        ck_assert_int_eq(argc, 0);
        json_decref(k);
    }
    /* a string with a NUL inside is refused, not cut */
    k = json_object();
    json_object_set_new(k, "dtype", json_stringn("float16\0x", 9));
    argc = 0;
    err = (struct gd_err){0};
    ck_assert_int_eq(agt_knob_args(k, argv, &argc, 32, &err), GD_EINVAL);
    json_decref(k);
    /* more than fits */
    k = parse("{\"batch\": 1, \"threads\": 2}");
    argc = 0;
    err = (struct gd_err){0};
    ck_assert_int_eq(agt_knob_args(k, argv, &argc, 3, &err), GD_EINVAL);
    ck_assert_int_eq(argc, 0);
    json_decref(k);
}
END_TEST

START_TEST(cache_names)
{
    const char *sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    char path[256], tmp[256];
    struct gd_err err = {0};
    ck_assert_int_eq(agt_cache_path("/var/cache/a", sha, 42, path, sizeof path, tmp, sizeof tmp,
                                    &err), 0);
    ck_assert_str_eq(path, "/var/cache/a/files/9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822c"
                           "d15d6c15b0f00a08");
    ck_assert_str_eq(tmp, "/var/cache/a/files/.9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822c"
                          "d15d6c15b0f00a08.42.tmp");
    ck_assert_int_eq(agt_cache_path("c", sha, 1, path, sizeof path, NULL, 0, &err), 0);
    ck_assert_str_eq(path + strlen(path) - 8, "b0f00a08");
    /* not a hash: upper case, short, a path */
    const char *bad[] = {"9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08",
                         "9f86d0", "../../../../etc/passwd", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = (struct gd_err){0};
        ck_assert_int_eq(agt_cache_path("c", bad[i], 1, path, sizeof path, NULL, 0, &err),
                         GD_EINVAL);
    }
    err = (struct gd_err){0};
    ck_assert_int_eq(agt_cache_path("c", NULL, 1, path, sizeof path, NULL, 0,
                                    &err), GD_EINVAL);
    /* a folder too long for the buffer */
    err = (struct gd_err){0};
    ck_assert_int_eq(agt_cache_path("/a/long/folder", sha, 1, path, 40, NULL, 0, &err),
                     GD_EINVAL);
    ck_assert(agt_sha256_valid(sha));
    ck_assert(!agt_sha256_valid(NULL));
}
END_TEST

START_TEST(basenames)
{
    ck_assert(agt_basename_valid("model.onnx"));
    ck_assert(agt_basename_valid("weights.bin"));
    ck_assert(agt_basename_valid("..x"));
    ck_assert(!agt_basename_valid(""));
    ck_assert(!agt_basename_valid("."));
    ck_assert(!agt_basename_valid(".."));
    ck_assert(!agt_basename_valid("a/b"));
    ck_assert(!agt_basename_valid("/etc"));
    ck_assert(!agt_basename_valid("a\nb"));
    ck_assert(!agt_basename_valid(NULL));
    ck_assert(agt_job_name_valid("model-v2_final+x@3.onnx"));
    ck_assert(!agt_job_name_valid("my model.onnx"));
    ck_assert(!agt_job_name_valid("caf\xc3\xa9.onnx"));
    ck_assert(!agt_job_name_valid("a=b.npy"));
    ck_assert(!agt_job_name_valid(".."));
    ck_assert(!agt_job_name_valid("a/b"));
    char longname[300];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    ck_assert(!agt_basename_valid(longname));
}
END_TEST

START_TEST(device_keys)
{
    char key[600];
    struct gd_err err;
    json_t *cpu_env = json_pack("{s:s}", "host", "hostA");
    json_t *cuda_env = json_pack("{s:s}", "gpu_uuid", "GPU-8f3a0c1e-2b4d-4e6f-8a9b-0c1d2e3f4a5b");
    json_t *labels = json_pack("{s:s,s:s}", "rack", "b2", "gpu", "sim_a");
    json_t *none = json_object();
    ck_assert_int_eq(
        agt_device_key(NULL, 1, "hostA", "cpu", cpu_env, none, 512, key, sizeof key, &err), 0);
    ck_assert_str_eq(key, "hostA/cpu");
    /* the labels tell two serves of one host and backend apart, sorted by name */
    ck_assert_int_eq(
        agt_device_key(NULL, 1, "hostA", "cpu", cpu_env, labels, 512, key, sizeof key, &err), 0);
    ck_assert_str_eq(key, "hostA/cpu label.gpu=sim_a label.rack=b2");
    ck_assert_int_eq(
        agt_device_key(NULL, 2, "h1", "cuda", cuda_env, labels, 512, key, sizeof key, &err), 0);
    ck_assert_str_eq(
        key, "h1/cuda:GPU-8f3a0c1e-2b4d-4e6f-8a9b-0c1d2e3f4a5b label.gpu=sim_a label.rack=b2");
    ck_assert_int_eq(agt_device_key(NULL, 1, "h1", "cuda", none, none, 512, key, sizeof key, &err),
                     0);
    ck_assert_str_eq(key, "h1/cuda:0");
    /* --device-id: as given, or ID/BACKEND with several backends */
    ck_assert_int_eq(agt_device_key("rack-b2-gpu3", 1, "h1", "cuda", cuda_env, labels, 512, key,
                                    sizeof key, &err),
                     0);
    ck_assert_str_eq(key, "rack-b2-gpu3");
    ck_assert_int_eq(
        agt_device_key("rack-b2", 2, "h1", "cpu64", cpu_env, labels, 512, key, sizeof key, &err),
        0);
    ck_assert_str_eq(key, "rack-b2/cpu64");
    /* too long for the daemon: refused, asking for --device-id */
    json_t *long_labels = json_object();
    char value[200];
    memset(value, 'v', sizeof value - 1);
    value[sizeof value - 1] = '\0';
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "l%d", i);
        json_object_set_new(long_labels, name, json_string(value));
    }
    ck_assert_int_eq(
        agt_device_key(NULL, 1, "h1", "cpu", cpu_env, long_labels, 512, key, sizeof key, &err),
        GD_EINVAL);
    ck_assert_msg(strstr(err.msg, "--device-id") != NULL, "%s", err.msg);
    json_decref(long_labels);
    json_decref(cpu_env);
    json_decref(cuda_env);
    json_decref(labels);
    json_decref(none);
}
END_TEST

START_TEST(job_paths)
{
    ck_assert(agt_job_path_valid("weights.bin"));
    ck_assert(agt_job_path_valid("conv1_mutated/weight.npz"));
    ck_assert(agt_job_path_valid("a/b/c+d@e.bin"));
    ck_assert(!agt_job_path_valid(""));
    ck_assert(!agt_job_path_valid("/etc/passwd"));
    ck_assert(!agt_job_path_valid("a//b"));
    ck_assert(!agt_job_path_valid("a/"));
    ck_assert(!agt_job_path_valid("a/../b"));
    ck_assert(!agt_job_path_valid("./a"));
    ck_assert(!agt_job_path_valid("a b/c"));
    ck_assert(!agt_job_path_valid("a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q"));
    ck_assert(agt_job_paths_clash("a/b", "a/b"));
    ck_assert(agt_job_paths_clash("a", "a/b"));
    ck_assert(agt_job_paths_clash("a/b/c", "a/b"));
    ck_assert(!agt_job_paths_clash("a/bc", "a/b"));
    ck_assert(!agt_job_paths_clash("ab", "a"));
}
END_TEST

START_TEST(last_line)
{
    char out[64];
    const char *t = "gpudiff-agent: warn: x\ngpudiff-agent run: --batch needs N >= 1\n\n";
    agt_last_line(t, strlen(t), out, sizeof out);
    ck_assert_str_eq(out, "gpudiff-agent run: --batch needs N >= 1");
    agt_last_line("one line", 8, out, sizeof out);
    ck_assert_str_eq(out, "one line");
    agt_last_line("\n\n  \n", 5, out, sizeof out);
    ck_assert_str_eq(out, "");
    agt_last_line(NULL, 0, out, sizeof out);
    ck_assert_str_eq(out, "");
    agt_last_line("a\r\nb\x01" "c\r\n", 8, out, sizeof out);
    ck_assert_str_eq(out, "b?c");
    agt_last_line("0123456789", 10, out, 5); /* cut to fit */
    ck_assert_str_eq(out, "0123");
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("jobs_args");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, knob_kv);
    tcase_add_test(tc, match_kv);
    tcase_add_test(tc, knob_args);
    tcase_add_test(tc, cache_names);
    tcase_add_test(tc, basenames);
    tcase_add_test(tc, last_line);
    tcase_add_test(tc, device_keys);
    tcase_add_test(tc, job_paths);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
