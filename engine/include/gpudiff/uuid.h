/*
 * uuid.h: random identifiers: RFC 4122 version 4 UUIDs, which name runs (made by the agent),
 * sweeps, and the daemon's jobs, devices, agents and leases.
 */
#ifndef GPUDIFF_UUID_H
#define GPUDIFF_UUID_H

#include "gpudiff/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A random RFC 4122 version 4 UUID, lowercase, from the system's random source (getrandom);
 * GD_EIO when it has none. */
int gd_uuid_v4(char out[37], struct gd_err *err);

#ifdef __cplusplus
}
#endif
#endif
