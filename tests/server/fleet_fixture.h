/* fleet_fixture.h: devices, files, jobs and runs for the unit tests of jobs and leases. */
#ifndef GPUDIFF_TESTS_FLEET_FIXTURE_H
#define GPUDIFF_TESTS_FLEET_FIXTURE_H

#include <stdint.h>

#include "db.h"

/* Registers host with one cpu device HOST/cpu labelled gpu=GPU at now, as the serve of
   flf_serve_id(host) (so registering a host again is a restart); agent id into agent (40
   bytes), the device's id into device (40 bytes, may be NULL). */
void flf_register(struct srv_db *db, const char *host, const char *gpu, int64_t now, char *agent,
                  char *device);

/* The serve_id flf_register gives host's serve (a UUID made from the name). */
void flf_serve_id(const char *host, char out[40]);

/* Registers one cpu device of key for host as serve_id (may be NULL); the register call's
   code (SRV_ECONFLICT, with the message in err). agent and device may be NULL. */
int flf_register_as(struct srv_db *db, const char *host, const char *key, const char *serve_id,
                    int64_t now, char *agent, char *device, struct gd_err *err);

/* Records a file of `bytes` bytes named by sha256 (a blob row and a fleet_files row). */
void flf_file(struct srv_db *db, const char *sha256, int64_t bytes);

/* The model and input sha256s flf_job names; flf_files() records both. */
extern const char *const FLF_MODEL, *const FLF_INPUT;
void flf_files(struct srv_db *db);

/* Submits a job of the two files with match (JSON text) at now; its id into id (40 bytes).
   Returns the create call's code (0, or SRV_ENODEVICE, SRV_EMISSING ...). */
int flf_job(struct srv_db *db, const char *match, int64_t lease_seconds, int64_t attempts,
            int64_t deadline_seconds, int64_t now, char *id);

/* A run of model m with one layer, complete or still uploading. */
void flf_run(struct srv_db *db, const char *id, int complete);

/* Runs SQL and returns the first column of its first row as a new string ("" for none). */
char *flf_query(struct srv_db *db, const char *sql);

#endif
