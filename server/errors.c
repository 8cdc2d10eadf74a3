/*
 * errors.c: the one table that gives every error code, the engine's GD_E* and the server's
 * SRV_E*, its HTTP status and the code clients see in {"error": {"code", "message"}}.
 */
#include <stddef.h>

#include "server.h"

static const struct {
    int code;
    unsigned status;
    const char *name;
} error_table[] = {
#define SRV__ERR_ROW(name, value, status, code) {value, status, code},
    SRV_ERRNO_MAP(SRV__ERR_ROW)
#undef SRV__ERR_ROW
    /* The engine's codes reach requests through tensor and JSON checks. */
    {GD_EINVAL, 400, "invalid"},
    {GD_ENOMEM, 503, "out_of_memory"},
    {GD_EIO, 500, "io_error"},
    {GD_ENOENT, 404, "not_found"},
    {GD_EEXIST, 409, "exists"},
    {GD_EFORMAT, 400, "bad_format"},
    {GD_EDTYPE, 400, "bad_dtype"},
    {GD_ESHAPE, 400, "bad_shape"},
    {GD_EMODEL, 400, "bad_model"},
    {GD_ENOTSUP, 501, "not_supported"},
    {GD_EDEVICE, 500, "device_error"},
    {GD_ERANGE, 400, "out_of_range"},
    {GD_ECANCELED, 503, "canceled"}, /* gpudiffd is stopping: retry */
};

static int
find(int code)
{
    for (size_t i = 0; i < sizeof error_table / sizeof error_table[0]; i++)
        if (error_table[i].code == code)
            return (int)i;
    return -1;
}

unsigned
srv_err_status(int code)
{
    int i = find(code);
    return i < 0 ? 500 : error_table[i].status;
}

const char *
srv_err_code(int code)
{
    int i = find(code);
    return i < 0 ? "internal" : error_table[i].name;
}
