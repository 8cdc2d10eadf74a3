/* attr.c: typed reads of node attributes for shape inference, and shape helpers. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static const char *
attr_type_name(enum gd_attr_type t)
{
    switch (t) {
    case GD_ATTR_INT:
        return "an integer";
    case GD_ATTR_FLOAT:
        return "a number";
    case GD_ATTR_STRING:
        return "a string";
    case GD_ATTR_INTS:
        return "a list of integers";
    case GD_ATTR_FLOATS:
        return "a list of numbers";
    case GD_ATTR_TENSOR:
        return "a tensor";
    }
    return "?";
}

int
gd__attr_int(const struct gd_node *n, const char *name, int64_t dflt, int64_t *out,
             struct gd_err *err)
{
    const struct gd_attr *a = gd_node_attr(n, name);
    if (a == NULL) {
        *out = dflt;
        return 0;
    }
    if (a->type != GD_ATTR_INT)
        return gd_err_set(err, GD_EMODEL, "attribute %s must be an integer, not %s", name,
                          attr_type_name(a->type));
    *out = a->i;
    return 0;
}

int
gd__attr_float(const struct gd_node *n, const char *name, double dflt, double *out,
               struct gd_err *err)
{
    const struct gd_attr *a = gd_node_attr(n, name);
    if (a == NULL) {
        *out = dflt;
        return 0;
    }
    if (a->type == GD_ATTR_INT) /* JSON writes 1.0 as 1 */
        *out = (double)a->i;
    else if (a->type == GD_ATTR_FLOAT)
        *out = a->f;
    else
        return gd_err_set(err, GD_EMODEL, "attribute %s must be a number, not %s", name,
                          attr_type_name(a->type));
    return 0;
}

int
gd__attr_string(const struct gd_node *n, const char *name, const char *dflt, const char **out,
                struct gd_err *err)
{
    const struct gd_attr *a = gd_node_attr(n, name);
    if (a == NULL) {
        *out = dflt;
        return 0;
    }
    if (a->type != GD_ATTR_STRING)
        return gd_err_set(err, GD_EMODEL, "attribute %s must be a string, not %s", name,
                          attr_type_name(a->type));
    *out = a->s;
    return 0;
}

int
gd__attr_ints(const struct gd_node *n, const char *name, int count, int max, int64_t *out,
              int *n_out, struct gd_err *err)
{
    const struct gd_attr *a = gd_node_attr(n, name);
    if (n_out != NULL)
        *n_out = 0;
    if (a == NULL)
        return 0;
    if (a->type != GD_ATTR_INTS)
        return gd_err_set(err, GD_EMODEL, "attribute %s must be a list of integers, not %s",
                          name, attr_type_name(a->type));
    if (count >= 0 && a->n != count)
        return gd_err_set(err, GD_EMODEL, "attribute %s must have %d values, not %d", name,
                          count, a->n);
    if (count < 0 && a->n > max)
        return gd_err_set(err, GD_EMODEL, "attribute %s has %d values (at most %d)", name, a->n,
                          max);
    for (int i = 0; i < a->n; i++)
        out[i] = a->ints[i];
    if (n_out != NULL)
        *n_out = a->n;
    return 0;
}

int
gd__const_ints(const struct gd_tensor *t, const char *what, int max, int64_t *out, int *n_out,
               struct gd_err *err)
{
    int64_t n = gd_tensor_numel(t);
    if (t->ndim > 1)
        return gd_err_set(err, GD_EMODEL, "%s must be a list (1-D), not %d-D", what, t->ndim);
    if (n > max)
        return gd_err_set(err, GD_EMODEL, "%s has %lld values (at most %d)", what, (long long)n,
                          max);
    for (int64_t i = 0; i < n; i++) {
        /* integers exactly (not through a double); a float only when it is an integer in
         * int64's range, tested before the conversion (of a NaN or 1e30 it is undefined) */
        if (!gd_dtype_is_float(t->dtype)) {
            out[i] = gd_tensor_get_i64(t, i);
            if (t->dtype == GD_U64 && ((const uint64_t *)t->data)[i] > (uint64_t)INT64_MAX)
                return gd_err_set(err, GD_EMODEL, "%s holds %llu, above 2^63 - 1", what,
                                  (unsigned long long)((const uint64_t *)t->data)[i]);
            continue;
        }
        double v = gd_tensor_get_f64(t, i);
        if (!(v >= -0x1p63 && v < 0x1p63) || v != trunc(v))
            return gd_err_set(err, GD_EMODEL, "%s holds %g, not an integer of int64's range",
                              what, v);
        out[i] = (int64_t)v;
    }
    *n_out = (int)n;
    return 0;
}

int
gd__const_scalar(const struct gd_tensor *t, const char *what, double *out, struct gd_err *err)
{
    if (gd_tensor_numel(t) != 1)
        return gd_err_set(err, GD_EMODEL, "%s must hold one value, not %lld", what,
                          (long long)gd_tensor_numel(t));
    *out = gd_tensor_get_f64(t, 0);
    return 0;
}

int
gd__attr_check_known(const struct gd_node *n, const char *const *known, struct gd_err *err)
{
    for (int i = 0; i < n->n_attrs; i++) {
        int found = 0;
        for (int k = 0; known[k] != NULL && !found; k++)
            found = strcmp(n->attrs[i].name, known[k]) == 0;
        if (!found)
            return gd_err_set(err, GD_EMODEL, "%s has no attribute %s", gd_op_name(n->op),
                              n->attrs[i].name);
    }
    return 0;
}

int
gd__axis_norm(int64_t axis, int ndim, int64_t *out, struct gd_err *err)
{
    int64_t a = axis < 0 ? axis + ndim : axis;
    if (a < 0 || a >= ndim)
        return gd_err_set(err, GD_EMODEL, "axis %lld is out of range for %d dimensions",
                          (long long)axis, ndim);
    *out = a;
    return 0;
}

int
gd__broadcast_shape(const struct gd_shape *a, const struct gd_shape *b, struct gd_shape *out,
                    struct gd_err *err)
{
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    struct gd_shape r = {.ndim = nd};
    for (int i = 0; i < nd; i++) {
        int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
        int64_t da = ia >= 0 ? a->dim[ia] : 1;
        int64_t db = ib >= 0 ? b->dim[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char sa[96], sb[96];
            return gd_err_set(err, GD_ESHAPE, "shapes %s and %s do not broadcast",
                              gd_shape_format(a->ndim, a->dim, sa, sizeof sa),
                              gd_shape_format(b->ndim, b->dim, sb, sizeof sb));
        }
        r.dim[i] = da == 1 ? db : da;
    }
    *out = r;
    return 0;
}

int64_t
gd__shape_numel(const struct gd_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++)
        n *= s->dim[i];
    return n;
}

double
gd__now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

char *
gd__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL)
        memcpy(d, s, n);
    return d;
}

int
gd__pathf(char *out, size_t size, struct gd_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, size, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= size)
        return gd_err_set(err, GD_ERANGE, "path too long: %.80s...", out);
    return 0;
}
