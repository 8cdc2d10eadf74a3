/* file.c: file access and byte order helpers shared by the array readers and writers. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_internal.h"

int
gd__file_open(const char *path, int *fd, uint64_t *size, struct gd_err *err)
{
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0) {
        int e = errno;
        return gd_err_set(err, e == ENOENT ? GD_ENOENT : GD_EIO, "%s: %s", path, strerror(e));
    }
    struct stat st;
    if (fstat(f, &st) != 0) {
        int e = errno;
        close(f);
        return gd_err_set(err, GD_EIO, "%s: %s", path, strerror(e));
    }
    /* Offsets inside the file are read with pread, which a folder or a pipe refuses. */
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return gd_err_set(err, GD_EIO, "%s: %s", path,
                          S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
    }
    *fd = f;
    *size = (uint64_t)st.st_size;
    return 0;
}

int
gd__file_pread(int fd, const char *path, uint64_t off, void *buf, size_t len, size_t *got,
               struct gd_err *err)
{
    size_t done = 0;
    while (done < len) {
        if (off + done > (uint64_t)INT64_MAX)
            break;
        size_t want = len - done;
        /* Linux moves at most about 2 GiB per call; ask for less to keep each call whole. */
        if (want > ((size_t)1 << 30))
            want = (size_t)1 << 30;
        ssize_t n = pread(fd, (char *)buf + done, want, (off_t)(off + done));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            return gd_err_set(err, GD_EIO, "%s: %s", path, strerror(e));
        }
        if (n == 0)
            break;
        done += (size_t)n;
    }
    *got = done;
    return 0;
}

void
gd__bswap(void *data, size_t count, size_t elem_size)
{
    unsigned char *p = data;
    if (elem_size < 2)
        return;
    for (size_t i = 0; i < count; i++, p += elem_size) {
        for (size_t a = 0, b = elem_size - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
    }
}

void
gd__bool_normalize(void *data, size_t count)
{
    unsigned char *p = data;
    for (size_t i = 0; i < count; i++)
        p[i] = p[i] != 0;
}

void
gd__names_join(char *buf, size_t cap, int count, gd__name_fn name, const void *obj)
{
    static const char more[] = ", ...";
    size_t used = 0;
    if (cap < sizeof more)
        return;
    snprintf(buf, cap, "%s", count > 0 ? "" : "none");
    for (int i = 0; i < count; i++) {
        const char *sep = i > 0 ? ", " : "";
        size_t need = strlen(sep) + strlen(name(obj, i));
        /* Keep room for ", ..." after any name that is written. */
        if (used + need + sizeof more > cap) {
            snprintf(buf + used, cap - used, "%s", i > 0 ? more : more + 2);
            return;
        }
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", sep, name(obj, i));
    }
}

int
gd_dir_make_parents(const char *path, char *first_made, size_t size, struct gd_err *err)
{
    char buf[4096];
    if (first_made != NULL && size > 0)
        first_made[0] = '\0';
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return gd_err_set(err, GD_EINVAL, "%.200s...: path too long", path);
    /* the parent: path without its last component (and trailing slashes) */
    size_t n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/')
        buf[--n] = '\0';
    char *slash = strrchr(buf, '/');
    if (slash == NULL)
        return 0; /* in the current folder */
    if (slash == buf)
        return 0; /* in / */
    *slash = '\0';
    /* each component from the top down: an existing folder is passed, a missing one made */
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        struct stat st;
        if (stat(buf, &st) == 0) {
            if (!S_ISDIR(st.st_mode))
                return gd_err_set(err, GD_EIO, "cannot make %s: %s exists and is not a folder",
                                  path, buf);
        } else if (errno != ENOENT) {
            return gd_err_set(err, GD_EIO, "cannot make %s: %s: %s", path, buf, strerror(errno));
        } else if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
            return gd_err_set(err, GD_EIO,
                              "cannot make the folder %s "
                              "for %s: %s",
                              buf, path, strerror(errno));
        } else if (first_made != NULL && size > 0 && first_made[0] == '\0') {
            snprintf(first_made, size, "%s", buf);
        }
        *p = saved;
        if (saved == '\0')
            break;
    }
    return 0;
}

void
gd_dir_remove_made(const char *path, const char *first_made)
{
    if (first_made == NULL || first_made[0] == '\0')
        return;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    size_t top = strlen(first_made);
    for (;;) {
        char *slash = strrchr(buf, '/');
        if (slash == NULL || slash == buf)
            return;
        *slash = '\0';
        if (strlen(buf) < top)
            return;
        if (rmdir(buf) != 0 || strcmp(buf, first_made) == 0)
            return; /* not empty (something else is there now), or the top one */
    }
}
