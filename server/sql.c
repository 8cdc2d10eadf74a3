/*
 * sql.c: the registry of storage backends built into this gpudiffd (sql.h), and the
 * parameter rewriting the PostgreSQL backend needs.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "sql.h"

const struct srv_sql_backend *const srv_sql_backends[] = {
#ifdef GD_HAVE_PQ
    &srv_sql_pg,
#endif
    &srv_sql_sqlite, /* last: it claims whatever the others do not */
    NULL,
};

const struct srv_sql_backend *
srv_sql_backend_for(const char *db)
{
    for (int i = 0; srv_sql_backends[i] != NULL; i++)
        if (srv_sql_backends[i]->claims(db))
            return srv_sql_backends[i];
    return &srv_sql_sqlite;
}

const char *
srv_sql_backend_names(void)
{
#ifdef GD_HAVE_PQ
    return "sqlite, postgresql";
#else
    return "sqlite (this build has no PostgreSQL: configure found no libpq)";
#endif
}

int
srv_sql_numbered(const char *sql, char *out, size_t size)
{
    size_t k = 0;
    int max = 0;
    char quote = 0;
    for (const char *p = sql; *p != '\0' && k + 24 < size; p++) {
        if (quote != 0) {
            if (*p == quote)
                quote = 0;
            out[k++] = *p;
            continue;
        }
        if (*p == '\'' || *p == '"') {
            quote = *p;
            out[k++] = *p;
            continue;
        }
        if (*p != '?') {
            out[k++] = *p;
            continue;
        }
        int n = 0;
        const char *q = p + 1;
        while (*q >= '0' && *q <= '9')
            n = n * 10 + (*q++ - '0');
        if (q == p + 1)
            n = max + 1; /* a bare ?: one more than the largest so far, as SQLite numbers it */
        if (n > max)
            max = n;
        k += (size_t)snprintf(out + k, size - k, "$%d", n);
        p = q - 1;
    }
    out[k] = '\0';
    return max;
}
