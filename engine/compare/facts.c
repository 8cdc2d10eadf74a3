/*
 * facts.c: what each compared layer is on each side: its op and the op's traits (ops.def),
 * its reduction length (recorded by either run, else from the op and the shapes, else
 * unknown), and the arithmetic each run declares for it (a per-layer math record, the
 * emulation or TF32 knob for convolutions and GEMMs, else the dtype's own). From these come
 * the rounding a layer's own computation may add on one side.
 */
#include <math.h>
#include <string.h>

#include "gpudiff/session.h"
#include "diff_internal.h"

const char *
gd_arith_name(enum gd_arith a)
{
    switch (a) {
    case GD_ARITH_FP64:
        return "fp64";
    case GD_ARITH_FP32:
        return "fp32";
    case GD_ARITH_TF32:
        return "tf32";
    case GD_ARITH_BF16:
        return "bf16";
    case GD_ARITH_FP16:
        return "fp16";
    case GD_ARITH_UNKNOWN:
        break;
    }
    return "unknown";
}

/* Unit roundoff of a dtype: half the distance from 1 to the next value. */
double
gd__unit_roundoff(enum gd_dtype dtype)
{
    switch (dtype) {
    case GD_F64:
        return 0x1p-53;
    case GD_F32:
        return 0x1p-24;
    case GD_F16:
        return 0x1p-11;
    case GD_BF16:
        return 0x1p-8;
    default:
        return 0.0;
    }
}

double
gd__subnormal_half(enum gd_dtype dtype)
{
    switch (dtype) {
    case GD_F64:
        return 0x1p-1074; /* the smallest itself: half of it is no double */
    case GD_F32:
        return 0x1p-150;
    case GD_F16:
        return 0x1p-25;
    case GD_BF16:
        return 0x1p-134;
    default:
        return 0.0;
    }
}

double
gd__ulps_at(double abs_diff, double scale, enum gd_dtype dtype)
{
    /* significand bits after the point, and the smallest normal exponent */
    int frac, emin;
    switch (dtype) {
    case GD_F64:
        frac = 52, emin = -1022;
        break;
    case GD_F32:
        frac = 23, emin = -126;
        break;
    case GD_F16:
        frac = 10, emin = -14;
        break;
    case GD_BF16:
        frac = 7, emin = -126;
        break;
    default:
        return abs_diff;
    }
    if (!(scale > 0) || !isfinite(scale) || !isfinite(abs_diff))
        return abs_diff > 0 ? INFINITY : 0.0;
    int e;
    frexp(scale, &e); /* scale in [2^(e-1), 2^e) */
    e -= 1;
    if (e < emin)
        e = emin;
    return abs_diff / ldexp(1.0, e - frac);
}

const struct gd_op_info *
gd__op_of(const char *name)
{
    enum gd_op e;
    if (name == NULL || name[0] == '\0' || gd_op_from_name(name, &e) != 0)
        return NULL;
    return gd_op_info(e);
}

/* on, true, 1 -> 1; off, false, 0 -> 0; anything else -> -1 (env.tf32, which backends
 * record as on or off, and what older runs wrote). */
static int
switch_value(json_t *v)
{
    if (json_is_boolean(v))
        return json_is_true(v);
    const char *s = json_string_value(v);
    if (s == NULL)
        return -1;
    if (strcmp(s, "on") == 0 || strcmp(s, "true") == 0 || strcmp(s, "1") == 0)
        return 1;
    if (strcmp(s, "off") == 0 || strcmp(s, "false") == 0 || strcmp(s, "0") == 0)
        return 0;
    return -1;
}

void
gd__side_init(struct gd__side *s, const struct gd_run_view *v)
{
    s->v = v;
    s->emulate = GD_ARITH_UNKNOWN;
    s->emulate_classes = 0;
    s->tf32 = -1;
    s->has_edges = 0;
    json_t *knobs = json_object_get(v->run, "knobs"), *env = json_object_get(v->run, "env");
    /* the knobs as knobs.def reads them (older runs' spellings too); a run whose knobs do
     * not read declares no emulation */
    struct gd_knobs k;
    s->emulate_nodes[0] = '\0';
    json_t *emulate = json_pack("{s:O?}", "emulate", json_object_get(knobs, "emulate"));
    if (gd_knobs_from_json(emulate, &k, NULL) == 0 && k.emulate != GD_EMULATE_NONE) {
        s->emulate = k.emulate == GD_EMULATE_TF32   ? GD_ARITH_TF32
                     : k.emulate == GD_EMULATE_BF16 ? GD_ARITH_BF16
                                                    : GD_ARITH_FP16;
        s->emulate_classes = k.emulate_classes;
        memcpy(s->emulate_nodes, k.emulate_nodes, sizeof s->emulate_nodes);
    }
    json_decref(emulate);
    s->tf32 = switch_value(json_object_get(knobs, "tf32"));
    if (s->tf32 < 0)
        s->tf32 = switch_value(json_object_get(env, "tf32"));
    /* NVIDIA_TF32_OVERRIDE=0 turns TF32 off in cuDNN and cuBLAS whatever was asked. */
    const char *ov = json_string_value(json_object_get(env, "NVIDIA_TF32_OVERRIDE"));
    if (ov != NULL && strcmp(ov, "0") == 0)
        s->tf32 = 0;
    for (int i = 0; i < v->n_layers; i++)
        s->has_edges |= v->layers[i].inputs != NULL;
}

/* GD_CLASS_GEMM or GD_CLASS_CONV for the ops whose inputs a reduced format rounds, else 0. */
static unsigned
op_class(const struct gd_op_info *info)
{
    if (info == NULL)
        return 0;
    if (info->reduction == GD_RED_GEMM)
        return GD_CLASS_GEMM;
    if (info->reduction == GD_RED_CONV || info->reduction == GD_RED_CONVT)
        return GD_CLASS_CONV;
    return 0;
}

enum gd_arith
gd__arith_of(const struct gd__side *s, const struct gd_bundle_layer *l, const char **from)
{
    const char *dummy;
    if (from == NULL)
        from = &dummy;
    *from = "";
    if (l == NULL)
        return GD_ARITH_UNKNOWN;
    const char *math = l->math ? l->math : "";
    *from = "math record";
    if (strcmp(math, "tf32") == 0)
        return GD_ARITH_TF32;
    if (strncmp(math, "fp32", 4) == 0)
        return GD_ARITH_FP32;
    if (strcmp(math, "bf16") == 0)
        return GD_ARITH_BF16;
    if (strcmp(math, "fp16") == 0)
        return GD_ARITH_FP16;
    /* a half GEMM whose split-K partial sums were added in the half format: its sums are
     * held to the half format's unit roundoff (the arithmetic is not known more closely) */
    if (strcmp(math, "fp16-rr") == 0 || strcmp(math, "bf16-rr") == 0)
        return GD_ARITH_UNKNOWN;
    if (strcmp(math, "fp64") == 0)
        return GD_ARITH_FP64;
    unsigned cls = op_class(gd__op_of(l->op));
    struct gd_knobs k;
    gd_knobs_init(&k);
    k.emulate = s->emulate == GD_ARITH_UNKNOWN ? GD_EMULATE_NONE : GD_EMULATE_TF32;
    k.emulate_classes = s->emulate_classes;
    memcpy(k.emulate_nodes, s->emulate_nodes, sizeof k.emulate_nodes);
    if (cls != 0 && gd_knobs_emulates(&k, l->node && l->node[0] ? l->node : l->name, cls)) {
        *from = "knobs.emulate";
        return s->emulate;
    }
    if (cls != 0 && s->tf32 == 1) {
        *from = json_object_get(json_object_get(s->v->run, "knobs"), "tf32") ? "knobs.tf32"
                                                                              : "env.tf32";
        return GD_ARITH_TF32;
    }
    /* Declared by the run: an engine run records its emulation and TF32 knobs, so FP32 is
     * what it asked for. Otherwise only the dtype says it. */
    json_t *knobs = json_object_get(s->v->run, "knobs");
    *from = json_object_size(knobs) > 0 ? "knobs" : "dtype";
    switch (l->dtype) {
    case GD_F64:
        return GD_ARITH_FP64;
    case GD_F32:
        return GD_ARITH_FP32;
    case GD_BF16:
        return GD_ARITH_BF16;
    case GD_F16:
        return GD_ARITH_FP16;
    default:
        *from = "";
        return GD_ARITH_UNKNOWN;
    }
}

/* Unit roundoff of the inputs a format rounds a GEMM's or a convolution's operands to. */
static double
input_roundoff(enum gd_arith a)
{
    switch (a) {
    case GD_ARITH_TF32:
    case GD_ARITH_FP16:
        return 0x1p-11;
    case GD_ARITH_BF16:
        return 0x1p-8;
    default:
        return 0.0;
    }
}

double
gd__own_bound(const struct gd_op_info *info, int64_t n, enum gd_arith arith, enum gd_dtype dtype,
              enum gd_dtype stored, int reduced_inputs, int stored_rounding, int median)
{
    if (info == NULL || n <= 0)
        return NAN;
    double u_cmp = gd__unit_roundoff(dtype);
    /* Reduced formats round the operands; the products accumulate in float32. */
    double u_acc = arith == GD_ARITH_FP64 ? 0x1p-53 : arith == GD_ARITH_UNKNOWN ? u_cmp : 0x1p-24;
    double u_in = reduced_inputs && op_class(info) != 0 ? input_roundoff(arith) : 0.0;
    /* A float64 result compared in float32 was rounded once more: half an ulp, at most u. */
    double rounded = arith == GD_ARITH_FP64 && dtype != GD_F64 ? u_cmp : 0.0;
    /* A float16 or bfloat16 layer computed in float32 was stored rounded to its format: u of
     * it, at this op or (a copy) where the value it moves was rounded, a weight at load. */
    double u_store = gd__unit_roundoff(stored);
    if (stored_rounding && (stored == GD_F16 || stored == GD_BF16) && u_acc < u_store)
        rounded += u_store;
    double dn = (double)n;
    if (median)
        return (info->reduction == GD_RED_NONE ? 0.0 : 2 * sqrt(dn) * u_acc) + 4 * u_in +
               info->ulps * u_acc + rounded;
    /* A pointwise op is no sum: only its own ulps. */
    double gamma = info->reduction == GD_RED_NONE ? 0.0
                   : dn * u_acc < 1                ? dn * u_acc / (1 - dn * u_acc)
                                                   : INFINITY;
    return GD__CUSHION * (gamma + 2 * u_in) + info->ulps * u_acc + rounded;
}

/* No rounding, and the error carried 1:1: data movement, selection, comparisons, steps. */
int
gd__op_copies(const struct gd_op_info *info)
{
    return info != NULL && (strcmp(info->family, "shape") == 0 ||
                            (info->ulps == 0 && info->reduction == GD_RED_NONE &&
                             !info->ill_conditioned));
}

/* The shape of side s's layer index (NULL when out of range). */
static const struct gd_shape *
shape_of(const struct gd__side *s, int index)
{
    return index >= 0 && index < s->v->n_layers ? &s->v->layers[index].shape : NULL;
}

/* A reduction length from the op and the shapes around it, 0 when they cannot tell. */
static int64_t
reduction_from_shapes(const struct gd_op_info *info, const struct gd_shape *out,
                      const struct gd_shape *in)
{
    switch (info->reduction) {
    case GD_RED_GEMM: /* (M, K) x (K, N): the input's last dim, untransposed */
        return in != NULL && in->ndim >= 1 ? in->dim[in->ndim - 1] : 0;
    case GD_RED_SPATIAL: { /* the plane of an NCHW input */
        if (in == NULL || in->ndim < 3)
            return 0;
        int64_t n = 1;
        for (int k = 2; k < in->ndim; k++)
            n *= in->dim[k];
        return n;
    }
    case GD_RED_AXIS: /* Softmax's default axis, the last */
        return out != NULL && out->ndim >= 1 ? out->dim[out->ndim - 1] : 0;
    default:
        return 0;
    }
}

/* The probe entry an arithmetic is measured by; -1 for float64 (its own error is ~0). */
static int
probe_entry(enum gd_arith a)
{
    switch (a) {
    case GD_ARITH_TF32:
        return GD_NOISE_TF32;
    case GD_ARITH_BF16:
        return GD_NOISE_BF16;
    case GD_ARITH_FP16:
        return GD_NOISE_FP16;
    case GD_ARITH_FP64:
        return -1;
    default:
        return GD_NOISE_FP32;
    }
}

static const char *const probe_source[3] = {"probe a", "probe b", "probe truth"};

/*
 * The noise probe for side s's own rounding, entry e: its own run's, else the other run's,
 * else the truth's (they measured the same layer on data within noise of each other). A probe
 * of a run that stores the layer in a half format holds that format's rounding too: for a
 * noise bound (noise set) between runs that store different formats it is not taken.
 */
static const struct gd_noise_probe *
probe_for(const struct gd__work *w, int i, int s, int e, int noise, enum gd_dtype cmp,
          const char **from)
{
    const struct gd__extra *x = &w->extra[i];
    const struct gd_diff_layer *dl = &w->d->layers[i];
    int order[3] = {s, 1 - s, 2};
    for (int k = 0; k < 3; k++) {
        const struct gd_noise_probe *p = &x->probe[order[k]];
        if (p->outputs == 0 || e < 0 || !p->has[e])
            continue;
        enum gd_dtype st = order[k] == 0   ? w->a->layers[dl->index_a].dtype
                           : order[k] == 1 ? w->b->layers[dl->index_b].dtype
                                           : GD_F64;
        if (noise && (st == GD_F16 || st == GD_BF16) && st != cmp)
            continue;
        *from = probe_source[order[k]];
        return p;
    }
    return NULL;
}

const struct gd_noise_gain *
gd__input_gain(const struct gd__work *w, int i, const char *name)
{
    for (int k = 0; k < 3; k++) {
        const struct gd_noise_probe *p = &w->extra[i].probe[k];
        for (int q = 0; p->outputs > 0 && q < p->n_gains; q++)
            if (strcmp(p->gains[q].input, name) == 0)
                return &p->gains[q];
    }
    return NULL;
}

/* Reads the layer's noise probes: a's, b's and the truth's (a damaged record counts as none). */
static void
read_probes(struct gd__work *w, int i, const struct gd_bundle_layer *la,
            const struct gd_bundle_layer *lb, const struct gd_bundle_layer *lt)
{
    const struct gd_bundle_layer *l[3] = {la, lb, lt};
    for (int k = 0; k < 3; k++)
        if (l[k] == NULL || l[k]->noise == NULL ||
            gd_noise_probe_from_json(l[k]->noise, &w->extra[i].probe[k], NULL) != 0)
            memset(&w->extra[i].probe[k], 0, sizeof w->extra[i].probe[k]);
}

/*
 * What the probes make of side s's own bounds. The median bound becomes the probe's median
 * error times its factor (and one rounding, for an order whose sums the probe computed
 * exactly): data whose rounding errors add up coherently (equal terms: like n, not sqrt(n))
 * widens it, and data whose errors cancel (sums of positive terms in float32 stay far below
 * sqrt(n) u) narrows it, so a reduced format that the random-rounding model would hide shows.
 * The largest error stays held to the rigorous bound, or to the probe's largest times its
 * factor where that is more (a sum with more cancellation than the bound allows for).
 */
/* A probe's figures, relative to its sample's scale, in units of the layer's scale. */
static double
rescale(const struct gd_noise_probe *p, double layer_scale)
{
    return p->scale > 0 && layer_scale > 0 ? p->scale / layer_scale : 1.0;
}

static void
probe_bounds(struct gd__work *w, int i, int s)
{
    struct gd__extra *x = &w->extra[i];
    struct gd_diff_layer *dl = &w->d->layers[i];
    enum gd_arith ar = s == 0 ? dl->arith_a : dl->arith_b;
    if (ar == GD_ARITH_FP64 || (s == 0 ? dl->index_a : dl->index_b) < 0 ||
        !isfinite(x->own_same[s]))
        return;
    const char *from = NULL;
    int e_same = probe_entry(x->same_arith ? ar : GD_ARITH_FP32), e_decl = probe_entry(ar);
    const struct gd_noise_probe *p = probe_for(w, i, s, e_same, 1, x->cmp, &from);
    double floor = 2 * gd__unit_roundoff(x->cmp);
    if (p != NULL) {
        double f = rescale(p, dl->scale);
        x->own_same[s] = fmax(x->own_base[s], GD__PROBE_MAX * f * p->max[e_same]);
        x->own_median_same[s] = GD__PROBE_MEDIAN * f * p->median_hi[e_same] + floor;
        x->own_truth[s] = fmax(x->own_truth_base[s], GD__PROBE_MAX * f * p->max[e_same]);
        x->own_truth_median[s] = GD__PROBE_MEDIAN * f * p->median_hi[e_same] + floor;
        if (dl->noise_from == NULL || strcmp(dl->noise_from, "model") == 0)
            dl->noise_from = from;
    }
    if ((p = probe_for(w, i, s, e_decl, 0, x->cmp, &from)) != NULL) {
        double f = rescale(p, dl->scale);
        x->own[s] = fmax(x->own_decl_base[s], GD__PROBE_MAX * f * p->max[e_decl]);
        x->own_median[s] = GD__PROBE_MEDIAN * f * p->median_hi[e_decl] + floor;
    }
}

void
gd__probe_bounds(struct gd__work *w, int i)
{
    for (int s = 0; s < 2; s++)
        probe_bounds(w, i, s);
}

double
gd__probe_median(const struct gd__work *w, int i, const struct gd_noise_probe *p, int entry)
{
    return p->median[entry] * rescale(p, w->d->layers[i].scale);
}

static void
layer_facts(struct gd__work *w, int i)
{
    struct gd_diff_layer *dl = &w->d->layers[i];
    struct gd__extra *x = &w->extra[i];
    const struct gd_bundle_layer *la = dl->index_a >= 0 ? &w->a->layers[dl->index_a] : NULL;
    const struct gd_bundle_layer *lb = dl->index_b >= 0 ? &w->b->layers[dl->index_b] : NULL;
    dl->op_a = la ? la->op : "";
    dl->op_b = lb ? lb->op : "";
    dl->op = dl->op_a[0] ? dl->op_a : dl->op_b;
    /* What neither run records, the reference run's graph may: its op and length. */
    int it = w->truth != NULL && la != NULL && lb != NULL ? gd__find_layer(w->truth, dl->name)
                                                          : -1;
    const struct gd_bundle_layer *lt = it >= 0 ? &w->truth->layers[it] : NULL;
    if (dl->op[0] == '\0' && lt != NULL)
        dl->op = lt->op;
    dl->algo_a = la && la->algo ? la->algo : "";
    dl->algo_b = lb && lb->algo ? lb->algo : "";
    const struct gd_op_info *ia = gd__op_of(dl->op_a[0] ? dl->op_a : dl->op);
    const struct gd_op_info *ib = gd__op_of(dl->op_b[0] ? dl->op_b : dl->op);
    int64_t ra = la && la->reduction_len > 0 ? la->reduction_len : 0;
    int64_t rb = lb && lb->reduction_len > 0 ? lb->reduction_len : 0;
    if (ra > 0 || rb > 0) {
        dl->reduction_len = ra > rb ? ra : rb;
        dl->reduction_from = ra > 0 && rb > 0 ? "a and b" : ra > 0 ? "a" : "b";
    } else if (lt != NULL && lt->reduction_len > 0 && strcmp(lt->op, dl->op) == 0) {
        dl->reduction_len = lt->reduction_len;
        dl->reduction_from = "truth";
    } else if ((ia != NULL && ia->reduction == GD_RED_NONE) &&
               (ib != NULL && ib->reduction == GD_RED_NONE)) {
        dl->reduction_len = 1;
        dl->reduction_from = "op";
    } else {
        const struct gd_op_info *info = ia ? ia : ib;
        int64_t n = 0;
        for (int s = 0; s < 2 && n == 0 && info != NULL; s++) {
            int idx = s == 0 ? dl->index_a : dl->index_b;
            if (idx < 0)
                continue;
            n = reduction_from_shapes(info, shape_of(&w->side[s], idx),
                                      shape_of(&w->side[s], x->direct[s]));
        }
        dl->reduction_len = n;
        dl->reduction_from = n > 0 ? "shapes" : "unknown";
    }
    /* Each side's own length, for its own bound: what it recorded, else the common one. */
    int64_t n_side[2] = {ra > 0 ? ra : dl->reduction_len, rb > 0 ? rb : dl->reduction_len};
    dl->discontinuous = (ia && ia->discontinuous) || (ib && ib->discontinuous) ||
                        (la && la->discontinuous > 0) || (lb && lb->discontinuous > 0);
    dl->ill_conditioned = (ia && ia->ill_conditioned) || (ib && ib->ill_conditioned);
    dl->copies = (la == NULL || gd__op_copies(ia)) && (lb == NULL || gd__op_copies(ib)) &&
                 (ia != NULL || ib != NULL);
    dl->arith_a = gd__arith_of(&w->side[0], la, &dl->arith_from_a);
    dl->arith_b = gd__arith_of(&w->side[1], lb, &dl->arith_from_b);
    /* The dtype compared in: a float64 side is rounded to the other's. */
    enum gd_dtype cmp = la ? la->dtype : lb ? lb->dtype : GD_F32;
    if (la && lb && la->dtype != lb->dtype)
        cmp = la->dtype == GD_F64 ? lb->dtype : la->dtype;
    /* Float16 against bfloat16 (or float32) is measured in float32, which holds both. */
    if (la && lb && la->dtype != lb->dtype && la->dtype != GD_F64 && lb->dtype != GD_F64)
        cmp = GD_F32;
    int same = dl->arith_a == dl->arith_b;
    /* Storage rounding is noise only between runs that store the same format, as reduced-
     * precision inputs are between runs of one arithmetic; a float64 side is rounded to the
     * other's format, which is then the format both are compared in. */
    int same_store = la == NULL || lb == NULL || la->dtype == lb->dtype ||
                     la->dtype == GD_F64 || lb->dtype == GD_F64;
    const struct gd_op_info *info[2] = {ia, ib};
    enum gd_arith ar[2] = {dl->arith_a, dl->arith_b};
    enum gd_dtype st[2] = {la ? la->dtype : cmp, lb ? lb->dtype : cmp};
    for (int s = 0; s < 2; s++) {
        x->own[s] = gd__own_bound(info[s], n_side[s], ar[s], cmp, st[s], 1, 1, 0);
        x->own_median[s] = gd__own_bound(info[s], n_side[s], ar[s], cmp, st[s], 1, 1, 1);
        x->own_same[s] = gd__own_bound(info[s], n_side[s], ar[s], cmp, st[s], same, same_store,
                                       0);
        x->own_median_same[s] = gd__own_bound(info[s], n_side[s], ar[s], cmp, st[s], same,
                                              same_store, 1);
        /* against the float64 truth, which is rounded to this side's format first: that
         * rounding (u of the format) and this side's own storage rounding both count */
        x->own_truth[s] = gd__own_bound(info[s], n_side[s], ar[s], cmp, st[s], same, 1, 0) +
                          (st[s] != GD_F64 ? gd__unit_roundoff(st[s]) : 0.0);
        x->own_truth_median[s] = gd__own_bound(info[s], n_side[s], ar[s], cmp, st[s], same, 1,
                                               1) +
                                 (st[s] != GD_F64 ? gd__unit_roundoff(st[s]) : 0.0);
    }
    /* A run in a half format rounded its graph inputs and weights to it at load, which no
     * layer records: where it is set against a run of another format, a layer that reads
     * them (fewer recorded layer inputs than the op takes) carries that rounding too, as
     * what the format explains (the declared bound), not as noise. */
    x->same_store = same_store;
    for (int s = 0; s < 2; s++) {
        const struct gd_bundle_layer *l = s == 0 ? la : lb;
        if (l != NULL && info[s] != NULL &&
            (l->inputs == NULL || (int)json_array_size(l->inputs) < info[s]->min_inputs))
            x->reads_non_layers = 1;
    }
    for (int s = 0; s < 2 && !same_store; s++) {
        const struct gd_bundle_layer *l = s == 0 ? la : lb;
        if (l == NULL || (st[s] != GD_F16 && st[s] != GD_BF16) || info[s] == NULL)
            continue;
        if (l->inputs == NULL || (int)json_array_size(l->inputs) < info[s]->min_inputs) {
            x->own[s] += GD__CARRY * gd__unit_roundoff(st[s]);
            x->own_median[s] += GD__CARRY * gd__unit_roundoff(st[s]);
        }
    }
    read_probes(w, i, la, lb, lt);
    dl->noise_from = "model";
    /* the probes are applied once the layer's scale is measured (gd__probe_bounds) */
    x->same_arith = same;
    x->cmp = cmp;
    for (int s = 0; s < 2; s++) {
        x->own_base[s] = x->own_same[s];
        x->own_truth_base[s] = x->own_truth[s];
        x->own_decl_base[s] = x->own[s];
    }
}

void
gd__facts(struct gd__work *w)
{
    for (int i = 0; i < w->d->n_layers; i++) {
        struct gd_diff_layer *dl = &w->d->layers[i];
        dl->reduction_from = "unknown";
        dl->arith_from_a = dl->arith_from_b = "";
        layer_facts(w, i);
    }
}
