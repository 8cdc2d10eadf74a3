/*
 * static.c: the files of --web-root (the dashboard) for GET and HEAD of paths outside
 * /api/. A path with a "..", "." or hidden segment, a backslash, or one that resolves
 * (through links) outside the root is refused, never looked up. Every file goes out with a
 * Content-Security-Policy that lets a page load only what this daemon serves: no inline
 * script, nothing from another origin, so a name from an upload can never run as code.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server.h"

static const struct {
    const char *ext, *type;
} content_types[] = {
    {".html", "text/html; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".json", "application/json"},
    {".map", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".jpg", "image/jpeg"},
    {".jpeg", "image/jpeg"},
    {".gif", "image/gif"},
    {".ico", "image/x-icon"},
    {".webp", "image/webp"},
    {".woff2", "font/woff2"},
    {".woff", "font/woff"},
    {".wasm", "application/wasm"},
    {".txt", "text/plain; charset=utf-8"},
};

/*
 * Nothing is allowed unless named, and what is named comes from this daemon only: scripts
 * (files, never inline or eval), the layout worker, style sheets (no inline style attributes;
 * the dashboard sets styles through the CSSOM), images, fetch. No frames, no plugins, no
 * <base>, no form posts anywhere (the dashboard's forms are handled in the page).
 */
static const char csp[] = "default-src 'none'; script-src 'self'; worker-src 'self'; "
                          "style-src 'self'; img-src 'self'; font-src 'self'; connect-src 'self'; "
                          "manifest-src 'self'; object-src 'none'; base-uri 'none'; "
                          "frame-ancestors 'none'; form-action 'none'";

static const char *
content_type(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (dot != NULL && strchr(dot, '/') == NULL)
        for (size_t i = 0; i < sizeof content_types / sizeof content_types[0]; i++)
            if (strcmp(dot, content_types[i].ext) == 0)
                return content_types[i].type;
    return "application/octet-stream";
}

/* 1 when every segment of path is a plain name: no "", ".", "..", ".hidden" in the middle. */
static int
plain_path(const char *path)
{
    if (path[0] != '/' || strchr(path, '\\') != NULL)
        return 0;
    const char *seg = path + 1;
    while (*seg != '\0') {
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        if (seg[0] == '.' || (n == 0 && end != NULL))
            return 0;
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)seg[i] < 0x20 || seg[i] == 0x7f)
                return 0;
        if (end == NULL)
            break;
        seg = end + 1;
    }
    return 1;
}

int
srv_static_serve(struct srv_req *req)
{
    const char *root = req->srv->web_root;
    if (root[0] == '\0')
        return srv_req_fail(req, SRV_ENOTFOUND, "no such path (no --web-root is served)");
    if (!plain_path(req->path))
        return srv_req_fail(req, SRV_EPATH, "path not allowed");
    size_t n = strlen(req->path);
    const char *index = n > 0 && req->path[n - 1] == '/' ? "index.html" : "";
    char full[PATH_MAX], real[PATH_MAX];
    if (snprintf(full, sizeof full, "%s%s%s", root, req->path, index) >= (int)sizeof full)
        return srv_req_fail(req, SRV_EPATH, "path too long");
    if (realpath(full, real) == NULL)
        return srv_req_fail(req, SRV_ENOTFOUND, "no such file");
    size_t rn = strlen(root);
    if (strncmp(real, root, rn) != 0 || real[rn] != '/')
        return srv_req_fail(req, SRV_EPATH, "path not allowed");
    int fd = open(real, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return srv_req_fail(req, SRV_ENOTFOUND, "no such file");
    }
    /* libmicrohttpd owns fd from here and closes it with the response. */
    struct MHD_Response *resp = MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
    if (resp == NULL) {
        close(fd);
        return srv_req_fail(req, GD_ENOMEM, "out of memory");
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type(real));
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(resp, "Content-Security-Policy", csp);
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    return srv_reply(req, 200, resp);
}
