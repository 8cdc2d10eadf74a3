// layerchart.js: the diff along the network, for two layers or ten thousand: the overview
// strip of every layer (from the summary's overview: a verdict letter and three figures per
// layer) with a brush that picks the range the chart below shows, and that chart, drawn from
// the rows of its range (diff_rows.js): the metric on a log scale against the noise band,
// each side's error against a truth run (a cross where that side is not right: beyond its
// rounding bound of the truth) and the error each layer makes of its own in a replay as lines
// of their own when the diff has them, the first divergent layer (or, with partial data, the
// first observed difference) and the amplifiers marked, labels thinned to what fits and cut
// to the part of each name that tells it apart, each point's values shown on hover and on
// keyboard focus.
import {s, fmtNum} from './dom.js';
import {BEYOND, startOf, ownWords} from './diff_facts.js';
import {addTooltip, decades, logAxis, marker} from './charts.js';

// The metrics the chart can show: what they read from a row, the overview's figure for the
// strip, and the noise band in the same units (none for ULPs). ULPs are counted at the
// layer's scale (ulps_at_scale: the engine's ulp_scaled, else max |a−b| over the spacing of
// floats at max(|a|, |b|)), never as a raw distance across a sign change (2^31 in float32).
export const LAYER_METRICS = {
    err: {label: 'error relative to max |b|', value: (l) => l.err, overview: 'err',
          band: (l) => l.envelope},
    max_abs: {label: 'max |a − b|', value: (l) => l.max_abs, overview: 'max_abs',
              band: (l) => (l.envelope != null && l.scale != null ? l.envelope * l.scale : null)},
    ulp: {label: 'ULPs at the layer\'s scale', value: (l) => l.ulps_at_scale,
          overview: 'ulps_at_scale', band: () => null},
};

// Lines besides a vs b (which is the whole error: what the layer makes and what it inherits),
// drawn when a row has the field (truth: with a truth run, right: whether that side is within
// its bound of the truth there; own: with a replay, the error the layer introduces itself, from
// the inputs it was given).
export const EXTRA_LINES = [
    {key: 'truth-a', label: 'a against the truth', value: (l) => l.truth && l.truth.err_a,
     right: (l) => l.truth && (l.truth.right === 'a' || l.truth.right === 'both')},
    {key: 'truth-b', label: 'b against the truth', value: (l) => l.truth && l.truth.err_b,
     right: (l) => l.truth && (l.truth.right === 'b' || l.truth.right === 'both')},
    {key: 'replay-own', label: 'own error, introduced by the layer (replay)',
     value: (l) => l.own && l.own.err},
];

const MAX_POINTS = 160; // above this many layers in view, only marked layers get a point
const LABEL_GAP = 24; // px between rotated labels (12 px text at 35 degrees)
const LABEL_MAX = 18; // characters of a label
const SEPARATORS = './:_-';

// The part of a set of names that tells them apart: the prefix they all share, cut back to a
// separator ("encoder.layer." of encoder.layer.0001.dense and encoder.layer.0002.tanh), and
// each name without it, the middle cut out when still long ("h.3/at…q_proj/MatMul").
export function nameParts(names) {
    let prefix = names.length > 1 ? names[0] : '';
    for (const n of names) {
        let k = 0;
        while (k < prefix.length && k < n.length && prefix[k] === n[k])
            k++;
        prefix = prefix.slice(0, k);
        if (!prefix)
            break;
    }
    let cut = prefix.length;
    while (cut > 0 && !SEPARATORS.includes(prefix[cut - 1]))
        cut--;
    prefix = prefix.slice(0, cut);
    const label = (name) => {
        const rest = name.slice(prefix.length) || name;
        if (rest.length <= LABEL_MAX)
            return rest;
        const tail = Math.floor((LABEL_MAX - 1) / 2);
        return rest.slice(0, LABEL_MAX - 1 - tail) + '…' + rest.slice(rest.length - tail);
    };
    return {prefix, label};
}

// The extra lines these rows can draw for the metric (truth and replay are relative errors).
export function extraLines(rows, metricKey) {
    if (metricKey !== 'err')
        return [];
    return EXTRA_LINES.filter((e) => rows.some((l) => l && Number.isFinite(e.value(l))));
}

function tipText(l, metric, v, band) {
    const parts = [`${l.name} (${l.op || 'op ?'}): ${l.verdict}`, `${metric.label} ${fmtNum(v)}`];
    if (band != null)
        parts.push(`noise band ${fmtNum(band)}`);
    if (Number.isFinite(l.ratio))
        parts.push(`${fmtNum(l.ratio)}× its bound` + (l.decided_by ? ` (${l.decided_by})` : ''));
    if (l.truth)
        parts.push(`vs truth a ${fmtNum(l.truth.err_a)}, b ${fmtNum(l.truth.err_b)}; right: ` +
                   (l.truth.right || 'not known'));
    if (l.own)
        parts.push(`own error ${ownWords(l)}`);
    return parts.join('; ');
}

// layerChart(diff, metricKey, hrefOf, {from, to, rows, width, height}): layers [from, to) of
// the diff's summary `diff`, rows[k] the row of layer from + k.
export function layerChart(diff, metricKey, hrefOf, opts = {}) {
    const metric = LAYER_METRICS[metricKey] || LAYER_METRICS.err;
    const total = diff.n_layers;
    const from = Math.max(0, opts.from ?? 0), to = Math.min(total, opts.to ?? total);
    const layers = (opts.rows || []).slice(0, to - from).filter(Boolean);
    const W = Math.round(opts.width || 960), H = Math.round(opts.height || 360);
    const left = 64, right = W - 14, top = 30, plotBottom = H - 112;
    const zeroLane = plotBottom + 20; // identical (0) sits on its own lane below the axis
    const na = (l) => l.verdict === 'incomparable';
    const values = layers.map((l) => (na(l) ? null : metric.value(l)));
    const bands = layers.map((l) => (na(l) ? null : metric.band(l)));
    const extras = extraLines(layers, metricKey).map((e) => ({...e, values: layers.map(e.value)}));
    const [lo, hi] = decades([...values, ...bands, ...extras.flatMap((e) => e.values)]);
    // role group, not img: its points are links (an img may hold nothing focusable).
    const svg = s('svg', {class: 'chart layer-chart', viewBox: `0 0 ${W} ${H}`, width: W,
                          height: H, role: 'group', 'aria-labelledby': 'layer-chart-title'});
    const st = startOf(diff);
    const first = st ? st.layer.name : null;
    const firstWord = st && !st.known ? 'first observed' : 'first divergent';
    const amps = new Set(diff.amplifiers || []);
    const ampText = amps.size ? `Amplifiers: ${[...amps].slice(0, 12).join(', ')}` +
        (diff.n_amplifiers > 12 ? ` and ${diff.n_amplifiers - 12} more.` : '.') : 'No amplifier.';
    svg.append(s('title', {id: 'layer-chart-title'},
                 `${metric.label} of layers ${from + 1} to ${to} of ${total}, log scale. ` +
                 (first ? `${st.known ? 'First divergent layer' : 'First observed difference (the start ' +
                          'may lie before it)'}: ${first}. ` : 'No divergent layer. ') + ampText));
    const g = s('g');
    svg.append(g);
    const y = logAxis(g, lo, hi, top, plotBottom, left, right, 'log10 ' + metric.label);
    const n = layers.length;
    const inner = right - left - 24;
    const step = n > 1 ? inner / (n - 1) : 0;
    const x = (k) => left + 12 + (n > 1 ? k * step : inner / 2);
    const clampY = (v) => (v > 0 ? Math.max(top, Math.min(plotBottom, y(v))) : zeroLane);

    // The noise band: everything below the envelope is what rounding can explain.
    const bandPts = [];
    bands.forEach((b, k) => {
        if (b != null && b > 0)
            bandPts.push([x(k), clampY(b)]);
    });
    if (bandPts.length === 1)
        bandPts.splice(0, 1, [bandPts[0][0] - 30, bandPts[0][1]], [bandPts[0][0] + 30, bandPts[0][1]]);
    if (bandPts.length > 1) {
        const pts = bandPts.map(([px, py]) => `${px.toFixed(1)},${py.toFixed(1)}`).join(' ');
        g.append(s('polygon', {class: 'band', points: `${bandPts[0][0].toFixed(1)},${plotBottom} ${pts} ` +
                                                      `${bandPts[bandPts.length - 1][0].toFixed(1)},${plotBottom}`}));
        g.append(s('polyline', {class: 'band-edge', points: pts}));
    }
    g.append(s('text', {class: 'tick', x: left - 6, y: zeroLane + 4, 'text-anchor': 'end'}, '0'));
    g.append(s('line', {class: 'axis', x1: left, x2: right, y1: plotBottom, y2: plotBottom}));

    const line = (vals, cls) => {
        const pts = vals.map((v, k) => (v == null || !Number.isFinite(v) ? null
            : `${x(k).toFixed(1)},${clampY(v).toFixed(1)}`)).filter(Boolean);
        if (pts.length)
            g.append(s('polyline', {class: cls, points: pts.join(' ')}));
    };
    for (const e of extras)
        line(e.values, 'extra-line ' + e.key);
    line(values, 'value-line');
    // The layers that make an error of their own (replay): a diamond on the own-error line.
    const own = extras.find((e) => e.key === 'replay-own');
    if (own)
        layers.forEach((l, k) => {
            if (l.own && BEYOND.has(l.own.verdict) && Number.isFinite(own.values[k]))
                g.append(marker('diamond', x(k), clampY(own.values[k]), 4.5, {class: 'own-pt'}));
        });
    // Where a side is not right against the truth: a cross on its line (every layer in view,
    // or the first 160 of them).
    for (const e of extras.filter((x) => x.right)) {
        let d = '';
        layers.forEach((l, k) => {
            const v = e.values[k];
            if (d.length < 160 * 40 && Number.isFinite(v) && l.truth && l.truth.right && !e.right(l)) {
                const px = x(k), py = clampY(v);
                d += `M${(px - 7).toFixed(1)} ${(py - 7).toFixed(1)}l14 14m0 -14l-14 14`;
            }
        });
        if (d)
            g.append(s('path', {class: 'wrong-mark ' + e.key, d}));
    }

    // Labels: every stride-th, and always the marked layers, none closer than LABEL_GAP; each
    // the part of its name that the others in view do not share.
    const special = (l) => l.name === first || l.amplifier || amps.has(l.name);
    const stride = n > 1 ? Math.max(1, Math.ceil(LABEL_GAP / Math.max(step, 0.001))) : 1;
    const parts = nameParts(layers.map((l) => l.name));
    const labelled = [];
    layers.forEach((l, k) => {
        if (special(l))
            labelled.push(k);
    });
    for (let k = 0; k < n; k += stride)
        if (!labelled.some((j) => Math.abs(x(j) - x(k)) < LABEL_GAP))
            labelled.push(k);
    labelled.sort((p, q) => p - q);
    for (const k of labelled) {
        const l = layers[k], px = x(k), ly = zeroLane + 20;
        const text = parts.label(l.name);
        const t = s('text', {class: special(l) ? 'layer-name marked' : 'layer-name', x: px, y: ly,
                             'text-anchor': 'end', transform: `rotate(-35 ${px.toFixed(1)} ${ly})`},
                    text);
        if (text !== l.name)
            t.append(s('title', {}, l.name));
        g.append(t);
    }
    const notes = [];
    if (parts.prefix)
        notes.push(`names after ${parts.prefix}`);
    if (stride > 1)
        notes.push(`one layer in ${stride} named; the strip above picks the range`);
    if (notes.length)
        g.append(s('text', {class: 'tick', x: right, y: H - 6, 'text-anchor': 'end',
                            id: 'chart-name-note'}, notes.join('; ')));

    const everyPoint = n <= MAX_POINTS;
    let callouts = 0;
    layers.forEach((l, k) => {
        const v = values[k];
        const isFirst = l.name === first;
        const isAmp = l.amplifier || amps.has(l.name);
        const loud = isFirst || isAmp || l.verdict === 'divergent' || l.verdict === 'amplified' ||
            l.verdict === 'nonfinite';
        if (!everyPoint && !loud)
            return;
        const px = x(k);
        if (v == null) {
            if (everyPoint)
                g.append(s('text', {class: 'tick', x: px, y: plotBottom - 4, 'text-anchor': 'middle'}, 'n/a'));
            return;
        }
        const py = clampY(v);
        const link = s('a', {href: hrefOf(l), class: 'point-link', 'data-layer': l.name,
                             'data-value': String(v),
                             'data-tip': tipText(l, metric, v, bands[k]), 'data-x': px.toFixed(1),
                             'data-y': py.toFixed(1),
                             'aria-label': `${l.name}: ${l.verdict}, ${metric.label} ${fmtNum(v)}`});
        if (isFirst)
            link.append(s('circle', {class: 'ring-first', cx: px, cy: py, r: 11}));
        if (isAmp)
            link.append(s('circle', {class: 'ring-amp', cx: px, cy: py, r: 11}));
        const r = everyPoint ? 5.5 : 4;
        link.append(marker(isAmp || l.verdict === 'amplified' ? 'triangle' : 'circle', px, py, r,
                           {class: 'pt v-' + l.verdict}));
        g.append(link);
        if ((isFirst || isAmp) && callouts < 4) {
            callouts++;
            const label = isFirst ? firstWord : `amplifier ×${fmtNum(l.growth)}`;
            const above = py - 18 >= top - 12;
            // Beside the ring (a point at the top): on the side with room.
            const nearRight = above ? px > right - 120 : px > (left + right) / 2;
            g.append(s('text', {class: isFirst ? 'callout first' : 'callout amp',
                                x: above ? px : nearRight ? px - 16 : px + 16, y: above ? py - 18 : py + 4,
                                'text-anchor': above ? (nearRight ? 'end' : 'middle') : nearRight ? 'end' : 'start'},
                       label));
        }
    });
    addTooltip(svg, W);
    return svg;
}

// The overview strip: every layer as a thin bar (its height the metric on the chart's log
// scale, its colour and pattern the verdict), the first divergent layer and amplifiers as
// ticks, and a brush over the range the chart shows: drag it, drag its edges, click beside
// it, or focus it and use the arrow keys (Shift: resize; Home/End). onChange(from, to).
export function overviewStrip(diff, metricKey, {from, to, width, onChange}) {
    const metric = LAYER_METRICS[metricKey] || LAYER_METRICS.err;
    const ov = diff.overview || {};
    const codes = ov.verdicts || '';
    const n = diff.n_layers;
    const W = Math.round(width || 960), H = 58, left = 64, right = W - 14, top = 6, bottom = H - 14;
    const span = right - left;
    const xOf = (i) => left + (i / n) * span;
    const iOf = (px) => Math.max(0, Math.min(n, Math.round(((px - left) / span) * n)));
    const figures = ov[metric.overview] || [];
    const values = Array.from({length: n}, (_, i) => (codes[i] === 'x' ? null : figures[i] ?? null));
    const [lo, hi] = decades(values);
    const hOf = (v) => (v > 0 ? Math.max(2, ((Math.log10(v) - lo) / (hi - lo)) * (bottom - top))
                              : 1);
    const compared = n - ((diff.verdicts && diff.verdicts.incomparable) || 0);
    const svg = s('svg', {class: 'overview', viewBox: `0 0 ${W} ${H}`, width: W, height: H,
                          role: 'group', 'aria-label': `Overview of all ${n} layers` +
                              (compared < n ? `, ${compared} of them compared (grey: in one run only)` : '')});
    // One path per verdict: cheap at ten thousand layers.
    const VERDICT_OF = {i: 'identical', n: 'noise', d: 'divergent', a: 'amplified', f: 'nonfinite',
                        x: 'incomparable', u: 'unknown'};
    const paths = new Map();
    const bw = Math.max(0.6, span / n - (span / n > 3 ? 1 : 0));
    for (let i = 0; i < n; i++) {
        const v = values[i];
        const hgt = v == null ? bottom - top : hOf(v);
        const d = `M${xOf(i).toFixed(2)} ${(bottom - hgt).toFixed(1)}h${bw.toFixed(2)}v${hgt.toFixed(1)}` +
                  `h-${bw.toFixed(2)}z`;
        const verdict = VERDICT_OF[codes[i]] || 'unknown';
        paths.set(verdict, (paths.get(verdict) || '') + d);
    }
    for (const [verdict, d] of paths)
        svg.append(s('path', {class: 'ov-bar v-' + verdict, d}));
    svg.append(s('line', {class: 'axis', x1: left, x2: right, y1: bottom, y2: bottom}));
    // The marks: the start and the amplifiers the summary names (their positions: i).
    const st = startOf(diff);
    const marked = [];
    if (st)
        marked.push([st.layer, true]);
    for (const name of diff.amplifiers || []) {
        const l = diff.layers && diff.layers[name];
        if (l && (!st || l !== st.layer))
            marked.push([l, false]);
    }
    for (const [l, isFirst] of marked) {
        const mark = s('path', {class: isFirst ? (st.known ? 'ov-first' : 'ov-first ov-observed') : 'ov-amp',
                                d: `M${(xOf(l.i) + bw / 2).toFixed(1)} ${bottom + 1}l-5 8h10z`});
        mark.append(s('title', {}, `${l.name}: ${isFirst ? (st.known ? 'first divergent'
            : 'first observed difference; the start may lie before it') : 'amplifier'}`));
        svg.append(mark);
    }
    svg.append(s('text', {class: 'tick', x: left - 6, y: bottom, 'text-anchor': 'end'}, 'all'));

    let a = from, b = to;
    const brush = s('g', {class: 'brush', tabindex: 0, role: 'slider',
                          'aria-label': 'Layers shown in the chart (arrows move, Shift+arrows resize)',
                          'aria-valuemin': 1, 'aria-valuemax': n});
    const win = s('rect', {class: 'brush-window', y: top - 4, height: bottom - top + 8});
    const hl = s('rect', {class: 'brush-handle', y: top - 4, width: 6, height: bottom - top + 8});
    const hr = s('rect', {class: 'brush-handle', y: top - 4, width: 6, height: bottom - top + 8});
    brush.append(win, hl, hr);
    svg.append(brush);
    const draw = () => {
        const x0 = xOf(a), x1 = Math.max(xOf(b), x0 + 3);
        win.setAttribute('x', x0);
        win.setAttribute('width', x1 - x0);
        hl.setAttribute('x', x0 - 3);
        hr.setAttribute('x', x1 - 3);
        brush.setAttribute('aria-valuenow', a + 1);
        brush.setAttribute('aria-valuetext', `layers ${a + 1} to ${b} of ${n}`);
    };
    let pending = 0;
    const changed = (final) => {
        draw();
        if (final) {
            cancelAnimationFrame(pending);
            onChange(a, b, true);
            return;
        }
        cancelAnimationFrame(pending);
        pending = requestAnimationFrame(() => onChange(a, b, false));
    };
    // setRange: both ends as given (clamped); shift: the window of width w moved to start at na.
    const setRange = (na, nb, final) => {
        a = Math.max(0, Math.min(n - 1, na));
        b = Math.max(a + 1, Math.min(n, nb));
        changed(final);
    };
    const shift = (na, w, final) => {
        w = Math.max(1, Math.min(n, w));
        const start = Math.max(0, Math.min(n - w, na));
        setRange(start, start + w, final);
    };
    draw();
    // Pointer: drag the window, an edge, or click beside it to centre the window there.
    let drag = null;
    const px = (e) => {
        const r = svg.getBoundingClientRect();
        return ((e.clientX - r.left) / r.width) * W;
    };
    svg.addEventListener('pointerdown', (e) => {
        const p = px(e), x0 = xOf(a), x1 = xOf(b);
        const mode = Math.abs(p - x0) < 8 ? 'left' : Math.abs(p - x1) < 8 ? 'right'
            : p > x0 && p < x1 ? 'move' : 'jump';
        if (mode === 'jump') {
            const w = b - a;
            shift(iOf(p) - Math.floor(w / 2), w, true);
            return;
        }
        drag = {mode, start: p, a, b};
        svg.setPointerCapture(e.pointerId);
        e.preventDefault();
    });
    svg.addEventListener('pointermove', (e) => {
        if (!drag)
            return;
        const di = Math.round(((px(e) - drag.start) / span) * n);
        if (drag.mode === 'move')
            shift(drag.a + di, drag.b - drag.a, false);
        else if (drag.mode === 'left')
            setRange(Math.min(drag.a + di, drag.b - 1), drag.b, false);
        else
            setRange(drag.a, Math.max(drag.b + di, drag.a + 1), false);
    });
    const end = () => {
        if (drag) {
            drag = null;
            changed(true);
        }
    };
    svg.addEventListener('pointerup', end);
    svg.addEventListener('pointercancel', end);
    brush.addEventListener('keydown', (e) => {
        const w = b - a, stepK = Math.max(1, Math.round(w / 10));
        const k = e.key;
        if (k === 'ArrowLeft' || k === 'ArrowRight') {
            const d = (k === 'ArrowLeft' ? -1 : 1) * stepK;
            if (e.shiftKey)
                setRange(a, Math.max(a + 1, b + d), true);
            else
                shift(a + d, w, true);
        } else if (k === 'Home') {
            shift(0, w, true);
        } else if (k === 'End') {
            shift(n - w, w, true);
        } else {
            return;
        }
        e.preventDefault();
    });
    svg.setRange = (na, nb) => {
        a = na;
        b = nb;
        draw();
    };
    return svg;
}
