/*
 * check_config.c: server/config.c: defaults, the file parser, flags over the file whatever
 * their order, bad values refused with messages that say where and why,
 * deploy/gpudiffd.conf.example in agreement with the settings table, and the ranges --help
 * prints being the table's own minimum and maximum (sec: --max-header read "1024 to 0M").
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server.h"

#ifndef GD_SRCDIR
#error "GD_SRCDIR must name the source tree"
#endif

static char tmp_path[64];

/* Writes text to a new temporary file; its path is in tmp_path. */
static const char *
write_tmp(const char *text)
{
    snprintf(tmp_path, sizeof tmp_path, "/tmp/check_config.XXXXXX");
    int fd = mkstemp(tmp_path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return tmp_path;
}

static char *
read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* Expects a failure whose message holds every fragment given. */
static void
expect_fail(int rc, const struct gd_err *err, int code, const char *frag1, const char *frag2)
{
    ck_assert_msg(rc == code, "got %d (%s), expected %d", rc, err->msg, code);
    ck_assert_msg(strstr(err->msg, frag1) != NULL, "'%s' lacks '%s'", err->msg, frag1);
    if (frag2 != NULL)
        ck_assert_msg(strstr(err->msg, frag2) != NULL, "'%s' lacks '%s'", err->msg, frag2);
}

START_TEST(defaults_set)
{
    struct srv_config c;
    srv_config_init(&c);
    ck_assert_str_eq(c.listen, "127.0.0.1:8470");
    ck_assert_str_eq(c.db, "gpudiff.db");
    ck_assert_str_eq(c.web_root, "");
    ck_assert_int_eq(c.max_body, 512LL * 1024 * 1024);
    ck_assert_int_eq(c.max_json, 16LL * 1024 * 1024);
    ck_assert_int_eq(c.threads, 4);
    ck_assert_int_eq(c.require_auth_read, 0);
    ck_assert_int_eq(c.retention_days, 0);
    ck_assert_int_eq(c.db_sync, 0);
    ck_assert_int_eq(c.log_level, GD_LOG_INFO);
    for (int i = 0; i < srv_setting_count; i++)
        ck_assert_int_eq(c.from[i], SRV_FROM_DEFAULT);
}
END_TEST

START_TEST(file_parsed)
{
    struct srv_config c;
    struct gd_err err;
    srv_config_init(&c);
    const char *path = write_tmp("# a comment\n"
                                 "\n"
                                 "  threads = 8  \n"
                                 "max-body = 2M\n"
                                 "max-json=3KiB\n"
                                 "db = \"/tmp/x y.db\"\n"
                                 "require-auth-read = yes\n"
                                 "log-level = debug\n"
                                 "listen = [::1]:9000\n");
    ck_assert_msg(srv_config_load_file(&c, path, &err) == 0, "%s", err.msg);
    unlink(path);
    ck_assert_int_eq(c.threads, 8);
    ck_assert_int_eq(c.max_body, 2 * 1024 * 1024);
    ck_assert_int_eq(c.max_json, 3 * 1024);
    ck_assert_str_eq(c.db, "/tmp/x y.db");
    ck_assert_int_eq(c.require_auth_read, 1);
    ck_assert_int_eq(c.log_level, GD_LOG_DEBUG);
    ck_assert_str_eq(c.listen, "[::1]:9000");
    ck_assert_int_eq(c.from[1], SRV_FROM_FILE); /* db */
    ck_assert_int_eq(c.timeout, 30);            /* untouched */
}
END_TEST

START_TEST(flags_override_file)
{
    struct srv_config c;
    struct gd_err err;
    srv_config_init(&c);
    const char *path = write_tmp("threads = 8\ndb = from-file.db\nmax-body = 2M\n");
    char *argv[] = {"token",         "--threads",           "16",     "create",
                    "--config",      (char *)path,          "--role", "agent",
                    "--max-body=1K", "--require-auth-read", NULL};
    int argc = 10;
    char *rest[10];
    int n_rest = 0;
    ck_assert_msg(srv_config_args(&c, argc, argv, rest, &n_rest, &err) == 0, "%s", err.msg);
    unlink(path);
    /* --threads stands before --config and still wins. */
    ck_assert_int_eq(c.threads, 16);
    ck_assert_int_eq(c.max_body, 1024);
    ck_assert_str_eq(c.db, "from-file.db");
    ck_assert_int_eq(c.require_auth_read, 1);
    ck_assert_int_eq(n_rest, 4);
    ck_assert_str_eq(rest[0], "token");
    ck_assert_str_eq(rest[1], "create");
    ck_assert_str_eq(rest[2], "--role");
    ck_assert_str_eq(rest[3], "agent");
}
END_TEST

/* tls: the certificate, key and priority settings, from the file and over it by flags. */
START_TEST(tls_keys)
{
    struct srv_config c;
    struct gd_err err;
    srv_config_init(&c);
    /* Off by default: both files empty, TLS 1.3 and 1.2 offered when on. */
    ck_assert_str_eq(c.tls_cert, "");
    ck_assert_str_eq(c.tls_key, "");
    ck_assert_str_eq(c.tls_priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2");
    const char *path = write_tmp("tls-cert = /etc/gpudiff/tls.pem\n"
                                 "tls-key = \"/etc/gpudiff/a key.pem\"\n"
                                 "tls-priorities = NORMAL:-VERS-ALL:+VERS-TLS1.3\n");
    char *argv[] = {"--config", (char *)path, "--tls-key=/run/credentials/gpudiffd/tls.key",
                    NULL};
    char *rest[4];
    int n_rest = 0;
    ck_assert_msg(srv_config_args(&c, 3, argv, rest, &n_rest, &err) == 0, "%s", err.msg);
    unlink(path);
    ck_assert_int_eq(n_rest, 0);
    ck_assert_str_eq(c.tls_cert, "/etc/gpudiff/tls.pem");
    ck_assert_str_eq(c.tls_key, "/run/credentials/gpudiffd/tls.key");
    ck_assert_str_eq(c.tls_priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.3");
    /* A path longer than the field is refused, not cut short. */
    char long_path[SRV_PATH_MAX + 8];
    memset(long_path, 'a', sizeof long_path - 1);
    long_path[0] = '/';
    long_path[sizeof long_path - 1] = '\0';
    expect_fail(srv_config_set(&c, "tls-cert", long_path, "--tls-cert", &err), &err, GD_EINVAL,
                "--tls-cert", "longer than 1023 bytes");
    ck_assert_str_eq(c.tls_cert, "/etc/gpudiff/tls.pem");
    char long_prio[300];
    memset(long_prio, 'N', sizeof long_prio - 1);
    long_prio[sizeof long_prio - 1] = '\0';
    expect_fail(srv_config_set(&c, "tls-priorities", long_prio, "--tls-priorities", &err), &err,
                GD_EINVAL, "--tls-priorities", "longer than 255 bytes");
    char *argv2[] = {"--tls-cert"};
    expect_fail(srv_config_args(&c, 1, argv2, rest, &n_rest, &err), &err, GD_EINVAL,
                "--tls-cert", "needs a value");
}
END_TEST

START_TEST(bad_values)
{
    struct srv_config c;
    struct gd_err err;
    srv_config_init(&c);
    expect_fail(srv_config_set(&c, "threads", "0", "--threads", &err), &err, GD_ERANGE, "--threads",
                "1 to 256");
    expect_fail(srv_config_set(&c, "threads", "-3", "--threads", &err), &err, GD_EINVAL,
                "--threads", "not an integer");
    expect_fail(srv_config_set(&c, "max-body", "12X", "--max-body", &err), &err, GD_EINVAL,
                "--max-body", "a size");
    expect_fail(srv_config_set(&c, "max-body", "2G", "--max-body", &err), &err, GD_ERANGE,
                "--max-body", "outside");
    expect_fail(srv_config_set(&c, "log-level", "loud", "--log-level", &err), &err, GD_EINVAL,
                "loud", "error|warn|info|debug");
    expect_fail(srv_config_set(&c, "listen", "nohostport", "--listen", &err), &err, GD_EINVAL,
                "--listen", "host:port");
    expect_fail(srv_config_set(&c, "listen", "1.2.3.4:70000", "--listen", &err), &err, GD_EINVAL,
                "--listen", "65535");
    expect_fail(srv_config_set(&c, "require-auth-read", "maybe", "--require-auth-read", &err), &err,
                GD_EINVAL, "maybe", "true or false");
    expect_fail(srv_config_set(&c, "colour", "red", "--colour", &err), &err, GD_EINVAL,
                "no setting named", "colour");
    /* A failed set leaves the value as it was. */
    ck_assert_int_eq(c.threads, 4);

    const char *path = write_tmp("threads = 8\n\nbogus = 1\n");
    char where[128];
    snprintf(where, sizeof where, "%s:3", path);
    expect_fail(srv_config_load_file(&c, path, &err), &err, GD_EINVAL, where, "bogus");
    unlink(path);
    path = write_tmp("threads 8\n");
    snprintf(where, sizeof where, "%s:1", path);
    expect_fail(srv_config_load_file(&c, path, &err), &err, GD_EINVAL, where, "name = value");
    unlink(path);
    path = write_tmp("timeout = 0\n");
    expect_fail(srv_config_load_file(&c, path, &err), &err, GD_ERANGE, "timeout", "1 to 3600");
    unlink(path);
    expect_fail(srv_config_load_file(&c, "/nonexistent/gpudiffd.conf", &err), &err, GD_ENOENT,
                "/nonexistent/gpudiffd.conf", NULL);

    char *argv1[] = {"--threads"};
    char *rest[4];
    int n;
    expect_fail(srv_config_args(&c, 1, argv1, rest, &n, &err), &err, GD_EINVAL, "--threads",
                "needs a value");
    char *argv2[] = {"--config"};
    expect_fail(srv_config_args(&c, 1, argv2, rest, &n, &err), &err, GD_EINVAL, "--config", NULL);
}
END_TEST

START_TEST(listen_split)
{
    char host[64];
    int port;
    struct gd_err err;
    ck_assert_int_eq(srv_listen_parse("[::1]:80", host, sizeof host, &port, &err), 0);
    ck_assert_str_eq(host, "::1");
    ck_assert_int_eq(port, 80);
    ck_assert_int_eq(srv_listen_parse("localhost:0", host, sizeof host, &port, &err), 0);
    ck_assert_str_eq(host, "localhost");
    ck_assert_int_eq(port, 0);
    ck_assert_int_ne(srv_listen_parse(":80", host, sizeof host, &port, &err), 0);
    ck_assert_int_ne(srv_listen_parse("[::1]80", host, sizeof host, &port, &err), 0);
}
END_TEST

START_TEST(example_matches_table)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/deploy/gpudiffd.conf.example", GD_SRCDIR);
    char *file = read_all(path);

    /* The file is what the table makes, byte for byte (`gpudiffd config --example`). */
    char *made = NULL;
    size_t made_len = 0;
    FILE *mf = open_memstream(&made, &made_len);
    srv_config_write_example(mf);
    fclose(mf);
    ck_assert_msg(strcmp(file, made) == 0,
                  "%s differs from `gpudiffd config --example`: regenerate it", path);

    /* Every setting appears, commented out, with its default. */
    for (int i = 0; i < srv_setting_count; i++) {
        char line[256];
        snprintf(line, sizeof line, "\n#%s =%s%s\n", srv_settings[i].name,
                 srv_settings[i].def[0] ? " " : "", srv_settings[i].def);
        ck_assert_msg(strstr(file, line) != NULL, "%s lacks the line %s", path, line + 1);
    }

    /* Uncommented, the setting lines load and give exactly the defaults. */
    struct srv_buf active = {0};
    for (char *line = strtok(file, "\n"); line != NULL; line = strtok(NULL, "\n"))
        if (line[0] == '#' && line[1] != ' ' && line[1] != '\0') {
            srv_buf_append(&active, line + 1, strlen(line + 1));
            srv_buf_append(&active, "\n", 1);
        }
    const char *tmp = write_tmp(active.data);
    struct srv_config loaded, defaults;
    struct gd_err err;
    srv_config_init(&loaded);
    srv_config_init(&defaults);
    ck_assert_msg(srv_config_load_file(&loaded, tmp, &err) == 0, "%s", err.msg);
    unlink(tmp);
    for (int i = 0; i < srv_setting_count; i++)
        ck_assert_int_eq(loaded.from[i], SRV_FROM_FILE);
    memcpy(loaded.from, defaults.from, sizeof loaded.from);
    ck_assert_msg(memcmp(&loaded, &defaults, sizeof loaded) == 0,
                  "the example's values are not the defaults");
    srv_buf_fini(&active);
    free(made);
    free(file);
}
END_TEST

START_TEST(table_sane)
{
    struct srv_config c;
    struct gd_err err;
    srv_config_init(&c);
    ck_assert_int_le(srv_setting_count, SRV_SETTINGS_MAX);
    for (int i = 0; i < srv_setting_count; i++) {
        const struct srv_setting *s = &srv_settings[i];
        ck_assert_msg(srv_config_set(&c, s->name, s->def, s->name, &err) == 0,
                      "default of %s refused: %s", s->name, err.msg);
        ck_assert_msg(s->help[0] != '\0', "%s has no help", s->name);
        for (int k = 0; k < i; k++)
            ck_assert_msg(strcmp(srv_settings[k].name, s->name) != 0, "%s twice", s->name);
    }
}
END_TEST

/* The value a setting holds, as an integer (INT and BYTES settings). */
static int64_t
field_value(const struct srv_config *c, const struct srv_setting *s)
{
    int64_t v;
    memcpy(&v, (const char *)c + s->offset, sizeof v);
    return v;
}

START_TEST(help_ranges_are_the_table)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    srv_config_usage(f);
    fclose(f);
    /* The help wraps: one line per setting again. */
    struct srv_buf flat = {0};
    for (const char *p = text; *p; p++) {
        if (p[0] == '\n' && strncmp(p + 1, "      ", 6) == 0) {
            srv_buf_append(&flat, " ", 1);
            p += 6;
            continue;
        }
        srv_buf_append(&flat, p, 1);
    }
    srv_buf_append(&flat, "", 1);
    for (int i = 0; i < srv_setting_count; i++) {
        const struct srv_setting *s = &srv_settings[i];
        if (s->type != SRV_SET_INT && s->type != SRV_SET_BYTES)
            continue;
        char head[80];
        snprintf(head, sizeof head, "\n  --%s ", s->name);
        const char *at = strstr(flat.data, head);
        ck_assert_msg(at != NULL, "no --%s in --help", s->name);
        const char *range = strstr(at, s->type == SRV_SET_INT ? "(an integer, " : "or G, ");
        ck_assert_msg(range != NULL, "--%s: no range in its help", s->name);
        range = strchr(range, ',') + 2;
        char lo[32], hi[32];
        ck_assert_msg(sscanf(range, "%31s to %31[^;]", lo, hi) == 2, "--%s: %.60s", s->name,
                      range);
        /* Each bound, read back as a value, is the table's own, and is accepted. */
        struct srv_config c;
        struct gd_err err;
        srv_config_init(&c);
        ck_assert_msg(srv_config_set(&c, s->name, lo, "help", &err) == 0, "--%s %s: %s", s->name,
                      lo, err.msg);
        ck_assert_msg(field_value(&c, s) == s->min, "--%s: help says %s, the minimum is %lld",
                      s->name, lo, (long long)s->min);
        ck_assert_msg(srv_config_set(&c, s->name, hi, "help", &err) == 0, "--%s %s: %s", s->name,
                      hi, err.msg);
        ck_assert_msg(field_value(&c, s) == s->max, "--%s: help says %s, the maximum is %lld",
                      s->name, hi, (long long)s->max);
    }
    srv_buf_fini(&flat);
    free(text);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    tcase_add_test(tc, defaults_set);
    tcase_add_test(tc, file_parsed);
    tcase_add_test(tc, flags_override_file);
    tcase_add_test(tc, bad_values);
    tcase_add_test(tc, tls_keys);
    tcase_add_test(tc, listen_split);
    tcase_add_test(tc, example_matches_table);
    tcase_add_test(tc, table_sane);
    tcase_add_test(tc, help_ranges_are_the_table);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
