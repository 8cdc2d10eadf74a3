/* backend.c: the registry of backends built into this library. */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "internal.h"

extern const struct gd__backend gd__backend_cpu;
extern const struct gd__backend gd__backend_cpu64;
#ifdef GD_HAVE_CUDA
extern const struct gd__backend gd__backend_cuda;
#endif

const struct gd__backend *const gd__backends[] = {
    &gd__backend_cpu,
    &gd__backend_cpu64,
#ifdef GD_HAVE_CUDA
    &gd__backend_cuda,
#endif
    NULL,
};

static const char *const backend_names[] = {
    "cpu",
    "cpu64",
#ifdef GD_HAVE_CUDA
    "cuda",
#endif
    NULL,
};

const struct gd__backend *
gd__backend_find(const char *name)
{
    for (int i = 0; gd__backends[i] != NULL; i++)
        if (strcmp(gd__backends[i]->name, name) == 0)
            return gd__backends[i];
    return NULL;
}

const char *const *
gd_backend_names(void)
{
    return backend_names;
}

int
gd_backend_has_op(const char *backend, enum gd_op op)
{
    const struct gd__backend *b = gd__backend_find(backend);
    if (b == NULL)
        return GD_ENOENT;
    return (unsigned)op < GD_OP_COUNT && b->ops[op] != NULL;
}
