/*
 * spill.c: the anonymous files an upload is compressed into before its commit (a layer's,
 * route_layers.c; a job's file, route_files.c). A spill file has no name, so nothing is left
 * behind whatever happens to the process.
 */
#define _GNU_SOURCE /* O_TMPFILE and mkostemp */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server.h"

int
srv_spill_open(const char *dir, int *fd, struct gd_err *err)
{
#ifdef O_TMPFILE
    int f = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (f >= 0) {
        *fd = f;
        return 0;
    }
#endif
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/.gpudiffd-spill-XXXXXX", dir) >= (int)sizeof path)
        return gd_err_set(err, GD_EIO, "spill folder path too long");
    int t = mkostemp(path, O_CLOEXEC);
    if (t < 0)
        return gd_err_set(err, GD_EIO, "cannot make a spill file in %s: %s", dir, strerror(errno));
    unlink(path);
    *fd = t;
    return 0;
}

int
srv_spill_write(int fd, const void *data, size_t len, struct gd_err *err)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return gd_err_set(err, GD_EIO, "spill file: %s", strerror(errno));
        p += w;
        len -= (size_t)w;
    }
    return 0;
}
