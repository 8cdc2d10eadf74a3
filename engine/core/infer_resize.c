/*
 * infer_resize.c: attribute checks and output shapes of Resize (opsets 10 to 19: inputs X,
 * roi, scales, sizes; the constant ones read here) and Upsample (opset 7: scales attribute,
 * opset 9: scales input). The scales become exact fractions, the output shape and each
 * axis's scale follow ONNX's rules, and the axes whose mapping is not the identity are
 * marked in params->resized_axes (engine/core/resize_rules.c computes the coordinates).
 */
#include <math.h>
#include <string.h>

#include "resize_rules.h"

static int
pick(const char *what, const char *s, const char *const *names, int n, int *out,
     struct gd_err *err)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return 0;
        }
    return gd_err_set(err, GD_EMODEL, "%s \"%s\" is not one ONNX defines", what, s);
}

static int
string_choice(const struct gd_node *n, const char *name, const char *dflt,
              const char *const *names, int count, int *out, struct gd_err *err)
{
    const char *s;
    int rc = gd__attr_string(n, name, dflt, &s, err);
    return rc != 0 ? rc : pick(name, s, names, count, out, err);
}

/* An optional input given as a constant with values (an empty tensor counts as absent). */
static const struct gd_tensor *
given(const struct gd__infer_call *c, int i)
{
    if (i >= c->n_in || c->in[i] == NULL || gd__shape_numel(c->in[i]) == 0)
        return NULL;
    return c->in_const[i] != NULL ? c->in_const[i] : (const struct gd_tensor *)-1;
}

/* The numbers of a constant input, as doubles (floats exactly, int64 exactly up to 2^53). */
static int
const_values(const struct gd_tensor *t, const char *what, int want, double *out,
             struct gd_err *err)
{
    if (t == (const struct gd_tensor *)-1)
        return gd_err_set(err, GD_ENOTSUP, "%s must be a constant (a weight); a computed %s "
                          "is not supported", what, what);
    if (t->ndim > 1 || gd_tensor_numel(t) != want)
        return gd_err_set(err, GD_EMODEL, "%s has %lld values; %d expected", what,
                          (long long)gd_tensor_numel(t), want);
    for (int i = 0; i < want; i++)
        out[i] = gd_tensor_get_f64(t, i);
    return 0;
}

/* scales as exact fractions into params (axes in `axes`, the others 1). */
static int
set_scales(struct gd_params *p, const double *scales, const int *axes, int n_axes, int ndim,
           struct gd_err *err)
{
    for (int a = 0; a < ndim; a++)
        p->scale_num[a] = p->scale_den[a] = 1;
    for (int i = 0; i < n_axes; i++) {
        int a = axes[i];
        float f = (float)scales[i]; /* ONNX's scales are float32 */
        if (!(f > 0))
            return gd_err_set(err, GD_EMODEL, "scale %g of axis %d is not positive",
                              scales[i], a);
        if (gd__resize_exact_fraction(f, &p->scale_num[a], &p->scale_den[a]) != 0)
            return gd_err_set(err, GD_ENOTSUP, "scale %g of axis %d is out of range", (double)f,
                              a);
    }
    return 0;
}

static int64_t
gcd64(int64_t a, int64_t b)
{
    while (b != 0) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* floor(v) of the exact product in * num / den, with the overflow refused. */
static int
scaled_len(int64_t in, int64_t num, int64_t den, int round_half_even, int64_t *out)
{
    __int128 prod = (__int128)in * num, q = prod / den, rem = prod - q * den;
    if (round_half_even && (2 * rem > den || (2 * rem == den && q % 2 != 0)))
        q++;
    if (q > INT64_MAX / 2)
        return GD_ENOTSUP;
    *out = (int64_t)q;
    return 0;
}

static int
infer_resize_common(struct gd__infer_call *c, int upsample, struct gd_err *err)
{
    static const char *const resize_attrs[] = {
        "antialias", "axes", "coordinate_transformation_mode", "cubic_coeff_a",
        "exclude_outside", "extrapolation_value", "keep_aspect_ratio_policy", "mode",
        "nearest_mode", NULL};
    static const char *const upsample_attrs[] = {"mode", "scales", NULL};
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const coords[] = {"half_pixel", "half_pixel_symmetric",
                                         "pytorch_half_pixel", "align_corners", "asymmetric",
                                         "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                           "ceil"};
    static const char *const policies[] = {"stretch", "not_larger", "not_smaller"};
    const struct gd_node *n = c->node;
    struct gd_params *p = c->params;
    const struct gd_shape *x = c->in[0];
    int nd = x->ndim, mode = 0, coord = GD_COORD_HALF_PIXEL, near = 0, policy = 0;
    int rc = gd__attr_check_known(n, upsample ? upsample_attrs : resize_attrs, err);
    if (rc != 0)
        return rc;
    if (c->n_out != 1)
        return gd_err_set(err, GD_EMODEL, "%s has one output", gd_op_name(n->op));
    if (!gd_dtype_is_float(c->in_dtype[0]))
        return gd_err_set(err, GD_EDTYPE, "X must be floating point");
    if (nd < 1)
        return gd_err_set(err, GD_ESHAPE, "X must have at least one dimension");
    rc = string_choice(n, "mode", "nearest", modes, upsample ? 2 : 3, &mode, err);
    if (rc != 0)
        return rc;
    int64_t v, antialias = 0;
    double coeff_a = -0.75, extrap = 0;
    if (upsample) {
        /* Upsample is Resize with asymmetric coordinates and floor for nearest */
        coord = GD_COORD_ASYMMETRIC;
        near = GD_NEAREST_FLOOR;
    } else {
        rc = string_choice(n, "coordinate_transformation_mode", "half_pixel", coords, 7,
                           &coord, err);
        if (rc == 0)
            rc = string_choice(n, "nearest_mode", "round_prefer_floor", nearests, 4, &near, err);
        if (rc == 0)
            rc = string_choice(n, "keep_aspect_ratio_policy", "stretch", policies, 3, &policy,
                               err);
        if (rc == 0)
            rc = gd__attr_float(n, "cubic_coeff_a", (double)-0.75f, &coeff_a, err);
        if (rc == 0)
            rc = gd__attr_float(n, "extrapolation_value", 0, &extrap, err);
        if (rc == 0)
            rc = gd__attr_int(n, "exclude_outside", 0, &v, err);
        if (rc == 0)
            p->exclude_outside = v != 0;
        if (rc == 0)
            rc = gd__attr_int(n, "antialias", 0, &antialias, err);
        if (rc != 0)
            return rc;
        if (antialias != 0)
            return gd_err_set(err, GD_ENOTSUP, "antialias=1 is not supported");
    }
    p->resize_mode = (enum gd_resize_mode)mode;
    p->coord_mode = (enum gd_resize_coord)coord;
    p->nearest_mode = (enum gd_nearest_mode)near;
    p->cubic_coeff_a = (double)(float)coeff_a;
    p->extrapolation_value = (double)(float)extrap;
    /* axes (opset 18): which axes roi, scales and sizes list; all of them by default */
    int axes[GD_MAX_DIMS], n_axes = nd;
    for (int i = 0; i < nd; i++)
        axes[i] = i;
    if (!upsample && gd_node_attr(n, "axes") != NULL) {
        int64_t given_axes[GD_MAX_DIMS];
        int seen[GD_MAX_DIMS] = {0};
        rc = gd__attr_ints(n, "axes", -1, GD_MAX_DIMS, given_axes, &n_axes, err);
        for (int i = 0; rc == 0 && i < n_axes; i++) {
            int64_t ax;
            rc = gd__axis_norm(given_axes[i], nd, &ax, err);
            if (rc == 0 && seen[ax])
                rc = gd_err_set(err, GD_EMODEL, "axis %lld is given twice", (long long)ax);
            if (rc == 0) {
                seen[ax] = 1;
                axes[i] = (int)ax;
            }
        }
        if (rc != 0)
            return rc;
    }
    for (int i = 0; i < nd; i++) {
        p->roi[i] = 0;
        p->roi[GD_MAX_DIMS + i] = 1;
    }
    double vals[2 * GD_MAX_DIMS];
    const struct gd_tensor *roi = NULL, *scales = NULL, *sizes = NULL;
    if (upsample) {
        scales = given(c, 1);
        if (scales == NULL) { /* opset 7: the scales attribute */
            const struct gd_attr *sa = gd_node_attr(n, "scales");
            if (sa == NULL || sa->type != GD_ATTR_FLOATS || sa->n != nd)
                return gd_err_set(err, GD_EMODEL, "scales (an input, or an attribute of %d "
                                  "numbers) is required", nd);
            memcpy(vals, sa->floats, (size_t)nd * sizeof *vals);
        }
    } else {
        roi = given(c, 1);
        scales = given(c, 2);
        sizes = given(c, 3);
        if ((scales != NULL) == (sizes != NULL))
            return gd_err_set(err, GD_EMODEL, "exactly one of scales and sizes must be given");
    }
    if (roi != NULL && coord == GD_COORD_TF_CROP_AND_RESIZE) {
        rc = const_values(roi, "roi", 2 * n_axes, vals, err);
        if (rc != 0)
            return rc;
        for (int i = 0; i < n_axes; i++) {
            p->roi[axes[i]] = (double)(float)vals[i];
            p->roi[GD_MAX_DIMS + axes[i]] = (double)(float)vals[n_axes + i];
        }
    }
    struct gd_shape *y = c->out[0];
    *y = *x;
    if (scales != NULL || upsample) {
        if (scales != NULL && (rc = const_values(scales, "scales", n_axes, vals, err)) != 0)
            return rc;
        rc = set_scales(p, vals, axes, n_axes, nd, err);
        for (int a = 0; rc == 0 && a < nd; a++)
            if (scaled_len(x->dim[a], p->scale_num[a], p->scale_den[a], 0, &y->dim[a]) != 0)
                rc = gd_err_set(err, GD_ESHAPE, "axis %d would be too long", a);
        if (rc != 0)
            return rc;
    } else {
        int64_t want[GD_MAX_DIMS];
        int got = 0;
        if (sizes == (const struct gd_tensor *)-1)
            return gd_err_set(err, GD_ENOTSUP, "sizes must be a constant (a weight); computed "
                              "sizes are not supported");
        rc = gd__const_ints(sizes, "sizes", GD_MAX_DIMS, want, &got, err);
        if (rc == 0 && got != n_axes)
            rc = gd_err_set(err, GD_EMODEL, "sizes has %d values; %d expected", got, n_axes);
        for (int i = 0; rc == 0 && i < n_axes; i++) {
            if (want[i] < 1)
                rc = gd_err_set(err, GD_EMODEL, "sizes[%d] is %lld", i, (long long)want[i]);
            else if (x->dim[axes[i]] < 1)
                rc = gd_err_set(err, GD_ESHAPE, "axis %d of X is empty", axes[i]);
        }
        if (rc != 0)
            return rc;
        for (int a = 0; a < nd; a++)
            p->scale_num[a] = p->scale_den[a] = 1;
        if (policy == 0) {
            for (int i = 0; i < n_axes; i++) {
                int64_t g = gcd64(want[i], x->dim[axes[i]]);
                p->scale_num[axes[i]] = want[i] / g;
                p->scale_den[axes[i]] = x->dim[axes[i]] / g;
                y->dim[axes[i]] = want[i];
            }
        } else {
            /* not_larger: the smallest ratio sizes / in; not_smaller: the largest. Every
             * listed axis takes it, and its length is round(scale * in), halves to even
             * (numpy's round, which ONNX's reference uses) */
            int best = 0;
            for (int i = 1; i < n_axes; i++) {
                __int128 lhs = (__int128)want[i] * x->dim[axes[best]];
                __int128 rhs = (__int128)want[best] * x->dim[axes[i]];
                if (policy == 1 ? lhs < rhs : lhs > rhs)
                    best = i;
            }
            int64_t g = gcd64(want[best], x->dim[axes[best]]);
            int64_t num = want[best] / g, den = x->dim[axes[best]] / g;
            for (int i = 0; i < n_axes; i++) {
                p->scale_num[axes[i]] = num;
                p->scale_den[axes[i]] = den;
                if (scaled_len(x->dim[axes[i]], num, den, 1, &y->dim[axes[i]]) != 0)
                    return gd_err_set(err, GD_ESHAPE, "axis %d would be too long", axes[i]);
            }
        }
    }
    int64_t terms = 1;
    int resized = 0;
    p->resized_axes = 0;
    for (int a = 0; a < nd; a++) {
        if (y->dim[a] < 1)
            return gd_err_set(err, GD_ESHAPE, "axis %d of the output would be empty (%lld x "
                              "the scale)", a, (long long)x->dim[a]);
        int id = gd__resize_axis_identity(p, a, x->dim[a], y->dim[a]);
        if (id < 0)
            return gd_err_set(err, GD_ENOTSUP, "the coordinates of axis %d do not fit 128-bit "
                              "arithmetic", a);
        if (!id) {
            p->resized_axes |= 1u << a;
            resized++;
            terms *= mode == GD_RESIZE_LINEAR ? 2 : mode == GD_RESIZE_CUBIC ? 4 : 1;
        }
    }
    /* linear and cubic: the k^d products of the weights and x, summed, plus two roundings
     * per resized axis (its weight and its product); nearest is a copy */
    p->reduction_terms = mode == GD_RESIZE_NEAREST ? 1 : terms + 2 * resized;
    p->mixes_batch = (p->resized_axes & 1u) != 0;
    return 0;
}

int
gd__infer_resize(struct gd__infer_call *c, struct gd_err *err)
{
    return infer_resize_common(c, c->node->op == GD_OP_UPSAMPLE, err);
}
