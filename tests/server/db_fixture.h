/* db_fixture.h: temporary SQLite databases for the server's unit tests. */
#ifndef GPUDIFF_TESTS_DB_FIXTURE_H
#define GPUDIFF_TESTS_DB_FIXTURE_H

#include <stddef.h>

#include "db.h"

/* Makes an empty file /tmp/PREFIX.XXXXXX and writes its name into path. */
void dbf_temp(char *path, size_t size, const char *prefix);

/* Removes a database file and its -wal and -shm files. */
void dbf_remove(const char *path);

/* Opens a database in a new temporary file (its name into path), migrated when asked. */
struct srv_db *dbf_open(char *path, size_t size, const char *prefix, int sync_full, int migrate);

#endif
