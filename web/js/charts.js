// charts.js: the dashboard's charts, drawn as SVG by hand (no library to download or build):
// a layer's ULP histogram, a layer's divergence over time per device with version-change
// markers, and the axes and markers layerchart.js (the diff along the network) shares. Each chart is an <svg> with
// a text summary (its <title>); the tables beside the charts carry the same numbers.
import {s, fmtNum, fmtTime} from './dom.js';

// Colours of series (history lines): dark enough for 3:1 against white, told apart by
// marker shape too.
export const SERIES_COLORS = ['#0b5fa5', '#c2410c', '#047857', '#7c3aed', '#be185d', '#0e7490',
                              '#92400e', '#1f2937'];
const SHAPES = ['circle', 'square', 'diamond', 'triangle'];

// A decade range [lo, hi] (powers of ten) covering the positive values.
export function decades(values, minSpan = 2) {
    const pos = values.filter((v) => Number.isFinite(v) && v > 0);
    let lo = pos.length ? Math.floor(Math.log10(Math.min(...pos))) : -8;
    let hi = pos.length ? Math.ceil(Math.log10(Math.max(...pos))) : 0;
    if (hi - lo < minSpan)
        lo = hi - minSpan;
    lo = Math.max(lo, hi - 18);
    return [lo, hi];
}

export function marker(shape, x, y, r, attrs) {
    switch (shape) {
    case 'square':
        return s('rect', {x: x - r, y: y - r, width: 2 * r, height: 2 * r, ...attrs});
    case 'diamond':
        return s('polygon', {points: `${x},${y - r * 1.3} ${x + r * 1.3},${y} ${x},${y + r * 1.3} ${x - r * 1.3},${y}`, ...attrs});
    case 'triangle':
        return s('polygon', {points: `${x},${y - r * 1.3} ${x + r * 1.2},${y + r} ${x - r * 1.2},${y + r}`, ...attrs});
    default:
        return s('circle', {cx: x, cy: y, r, ...attrs});
    }
}

// A tooltip layer of an SVG chart: shows the data-tip of the point link under the pointer or
// with the keyboard focus (WCAG 1.4.13: values are not for mouse users only).
export function addTooltip(svg, W) {
    const tip = s('g', {class: 'tip', 'aria-hidden': 'true', visibility: 'hidden'});
    const box = s('rect', {class: 'tip-box', rx: 4});
    const text = s('text', {class: 'tip-text'});
    tip.append(box, text);
    svg.append(tip);
    const show = (link) => {
        const t = link.dataset.tip;
        if (!t)
            return;
        text.textContent = t;
        const px = Number(link.dataset.x), py = Number(link.dataset.y);
        const w = Math.min(W - 8, t.length * 6.6 + 16);
        const x = Math.max(4, Math.min(W - w - 4, px - w / 2));
        const y = py > 60 ? py - 44 : py + 18;
        box.setAttribute('x', x);
        box.setAttribute('y', y);
        box.setAttribute('width', w);
        box.setAttribute('height', 24);
        text.setAttribute('x', x + 8);
        text.setAttribute('y', y + 16);
        tip.setAttribute('visibility', 'visible');
    };
    const hide = () => tip.setAttribute('visibility', 'hidden');
    const linkOf = (e) => e.target.closest && e.target.closest('a.point-link');
    svg.addEventListener('focusin', (e) => { const l = linkOf(e); if (l) show(l); });
    svg.addEventListener('focusout', hide);
    svg.addEventListener('mouseover', (e) => { const l = linkOf(e); if (l) show(l); });
    svg.addEventListener('mouseout', (e) => { if (linkOf(e)) hide(); });
}

// The y axis of a log chart: decade lines and labels "1e-6"; returns y(value).
export function logAxis(g, lo, hi, top, bottom, left, right, label) {
    const y = (v) => bottom - ((Math.log10(v) - lo) / (hi - lo)) * (bottom - top);
    for (let d = lo; d <= hi; d++) {
        const yy = y(10 ** d);
        g.append(s('line', {class: 'grid', x1: left, x2: right, y1: yy, y2: yy}));
        g.append(s('text', {class: 'tick', x: left - 6, y: yy + 4, 'text-anchor': 'end'},
                   d === 0 ? '1' : '1e' + d));
    }
    g.append(s('text', {class: 'axis-label', x: 14, y: (top + bottom) / 2, 'text-anchor': 'middle',
                        transform: `rotate(-90 14 ${(top + bottom) / 2})`}, label));
    return y;
}

// histogram(counts): the ULP histogram (bin 0: equal; bin k: distance in [2^(k-1), 2^k)),
// bar heights on a log scale of counts.
export function ulpHistogram(counts, {width = 960} = {}) {
    const W = Math.round(Math.max(320, Math.min(1100, width || 960))), H = 260, left = 70,
        right = W - 20, top = 20, bottom = 200;
    const svg = s('svg', {class: 'chart hist-chart', viewBox: `0 0 ${W} ${H}`, width: W, height: H,
                          role: 'img',
                          'aria-labelledby': 'hist-title'});
    const total = counts.reduce((a, b) => a + b, 0);
    svg.append(s('title', {id: 'hist-title'},
                 `ULP distance histogram of ${total} values; ${counts[0] || 0} equal.`));
    const g = s('g');
    svg.append(g);
    const max = Math.max(1, ...counts);
    const hiDec = Math.max(1, Math.ceil(Math.log10(max)));
    // log10(count + 1) keeps a single value visible.
    const y = (c) => bottom - (Math.log10(c + 1) / hiDec) * (bottom - top);
    for (let d = 0; d <= hiDec; d++) {
        const yy = y(10 ** d - 1);
        g.append(s('line', {class: 'grid', x1: left, x2: right, y1: yy, y2: yy}));
        g.append(s('text', {class: 'tick', x: left - 6, y: yy + 4, 'text-anchor': 'end'},
                   d === 0 ? '0' : d <= 4 ? String(10 ** d) : '1e' + d));
    }
    g.append(s('text', {class: 'axis-label', x: 14, y: (top + bottom) / 2, 'text-anchor': 'middle',
                        transform: `rotate(-90 14 ${(top + bottom) / 2})`}, 'values (log)'));
    const n = Math.max(counts.length, 1);
    const bw = (right - left) / n;
    counts.forEach((c, k) => {
        const bx = left + k * bw;
        const label = k === 0 ? '0' : k === 1 ? '1' : `2^${k - 1}`;
        const rect = s('rect', {class: k === 0 ? 'bar bar-equal' : 'bar', x: bx + 1, y: y(c),
                                width: Math.max(1, bw - 2), height: bottom - y(c)});
        rect.append(s('title', {}, k === 0 ? `${c} values equal`
            : `${c} values ${k === 1 ? '1 ULP apart' : `${2 ** (k - 1)} to ${2 ** k - 1} ULP apart`}`));
        g.append(rect);
        if (k % Math.ceil(n / Math.max(4, Math.floor((right - left) / 34))) === 0)
            g.append(s('text', {class: 'tick', x: bx + bw / 2, y: bottom + 14, 'text-anchor': 'middle'}, label));
    });
    g.append(s('text', {class: 'axis-label', x: (left + right) / 2, y: bottom + 40,
                        'text-anchor': 'middle'}, 'ULP distance (bin k: 2^(k−1) to 2^k − 1)'));
    return svg;
}

// The lanes of labels along x: each label [x0, x1] in the first lane where it clears the ones
// before it by `gap`, at most `max` lanes (then the last, which may crowd).
export function labelLanes(spans, gap = 8, max = 6) {
    const ends = [];
    return spans.map(([x0, x1]) => {
        let lane = ends.findIndex((e) => x0 >= e + gap);
        if (lane < 0)
            lane = ends.length < max ? ends.length : max - 1;
        ends[lane] = Math.max(ends[lane] ?? -Infinity, x1);
        return lane;
    });
}

// The points of all series placed so that none hides another: where two would overlap (the
// same time and nearly the same value: runs of one batch, devices that agree), the later one
// moves aside along x, by a marker's width, so that every point keeps a spot of its own to
// click and to focus.
export function spreadPoints(points, r = 5) {
    const placed = [];
    for (const p of points) {
        let dx = 0;
        for (let k = 1; k < 40; k++) {
            if (!placed.some((q) => Math.abs(q.x - (p.x + dx)) < 2 * r + 2 && Math.abs(q.y - p.y) < 2 * r + 2))
                break;
            dx = (k % 2 ? 1 : -1) * Math.ceil(k / 2) * (2 * r + 3);
        }
        p.x += dx;
        placed.push(p);
    }
    return points;
}

// historyChart(series, changes, hrefOf, {width}): one line per device of error over time,
// version changes as dashed lines with labels in lanes that never overprint, points spread so
// that each can be clicked (the caption says so).
export function historyChart(series, changes, hrefOf, {width = 960} = {}) {
    // Wide margins: the time labels are centred on their ticks.
    const W = Math.round(Math.max(320, Math.min(1100, width || 960)));
    const left = W < 600 ? 64 : 110, right = W - (W < 600 ? 30 : 70);
    const all = series.flatMap((sr) => sr.points);
    const times = all.map((p) => Date.parse(p.created_at)).filter(Number.isFinite);
    let t0 = Math.min(...times), t1 = Math.max(...times);
    if (!times.length) {
        t0 = Date.now() - 86400e3;
        t1 = Date.now();
    }
    if (t1 === t0) {
        t0 -= 1800e3;
        t1 += 1800e3;
    }
    const pad = (t1 - t0) * 0.06;
    t0 -= pad;
    t1 += pad;
    const x = (t) => left + ((t - t0) / (t1 - t0)) * (right - left);
    // The change labels' lanes, above the plot: as many as they need.
    const LANE = 14, CHAR = 6.5;
    const sorted = changes.map((c) => ({c, cx: x(Date.parse(c.time))})).sort((p, q) => p.cx - q.cx);
    const spans = sorted.map(({c, cx}) => {
        const w = c.text.length * CHAR;
        const nearRight = cx > right - w - 4;
        return nearRight ? [cx - 3 - w, cx - 3] : [cx + 3, cx + 3 + w];
    });
    const lanes = labelLanes(spans);
    const nLanes = lanes.length ? Math.max(...lanes) + 1 : 1;
    const top = 24 + LANE * nLanes, bottom = top + 220, H = bottom + 90;
    const zeroLane = bottom + 18;
    const [lo, hi] = decades(all.map((p) => p.err));
    const svg = s('svg', {class: 'chart history-chart', viewBox: `0 0 ${W} ${H}`, width: W, height: H,
                          role: 'group',
                          'aria-labelledby': 'history-title'});
    svg.append(s('title', {id: 'history-title'},
                 `Error against the baseline over time for ${series.length} devices; ` +
                 `${changes.length} version changes marked.`));
    const g = s('g');
    svg.append(g);
    const y = logAxis(g, lo, hi, top, bottom, left, right, 'log10 error vs baseline');
    const py = (v) => (v > 0 ? Math.max(top, Math.min(bottom, y(v))) : zeroLane);
    g.append(s('text', {class: 'tick', x: left - 6, y: zeroLane + 4, 'text-anchor': 'end'}, '0'));
    g.append(s('line', {class: 'axis', x1: left, x2: right, y1: bottom, y2: bottom}));
    // Six time ticks: dates when the span is days, minutes when hours, else seconds (UTC).
    const ticks = W < 600 ? 2 : 5;
    const span = t1 - t0;
    for (let i = 0; i <= ticks; i++) {
        const iso = new Date(t0 + (span * i) / ticks).toISOString();
        const label = span > 3 * 86400e3 ? iso.slice(0, 10)
            : span > 600e3 ? iso.slice(0, 16).replace('T', ' ') : iso.slice(11, 19);
        g.append(s('text', {class: 'tick', x: x(Date.parse(iso)), y: zeroLane + 24,
                            'text-anchor': 'middle'}, label));
    }
    g.append(s('text', {class: 'axis-label', x: (left + right) / 2, y: zeroLane + 46,
                        'text-anchor': 'middle'}, 'run created (UTC)'));
    // Version changes first, so points stay on top; lines and labels take no pointer.
    sorted.forEach(({c, cx}, i) => {
        const ly = 20 + LANE * lanes[i];
        g.append(s('line', {class: 'change-line', x1: cx, x2: cx, y1: ly + 3, y2: bottom}));
        const [x0] = spans[i];
        const t = s('text', {class: 'change-label', x: x0, y: ly, 'text-anchor': 'start'}, c.text);
        t.append(s('title', {}, `${c.devices.join(', ')}: ${c.text}`));
        g.append(t);
    });
    // Every point's place, spread where points would cover each other.
    const placed = [];
    series.forEach((sr, k) => {
        const pts = sr.points.filter((p) => Number.isFinite(Date.parse(p.created_at)) && p.err != null)
            .sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at));
        sr.placed = pts.map((p) => ({p, k, x: x(Date.parse(p.created_at)), y: py(p.err)}));
        placed.push(...sr.placed);
    });
    spreadPoints(placed);
    series.forEach((sr, k) => {
        const {color} = seriesStyle(k);
        g.append(s('polyline', {class: 'series-line', stroke: color,
                                points: sr.placed.map((q) => `${q.x.toFixed(1)},${q.y.toFixed(1)}`).join(' ')}));
    });
    series.forEach((sr, k) => {
        const {color, shape} = seriesStyle(k);
        for (const {p, x: px, y: py2} of sr.placed) {
            const link = s('a', {href: hrefOf(p), class: 'point-link',
                                 'data-tip': `${sr.device} ${fmtTime(p.created_at)}: error ${fmtNum(p.err)} (${p.verdict})`,
                                 'data-x': px.toFixed(1), 'data-y': py2.toFixed(1), 'data-run': p.run,
                                 'aria-label': `${sr.device}, ${fmtTime(p.created_at)}: ${fmtNum(p.err)}`});
            link.append(marker(shape, px, py2, 5, {fill: color, class: 'series-pt'}));
            g.append(link);
        }
        delete sr.placed;
    });
    addTooltip(svg, W);
    return svg;
}

// Series k's colour and marker shape: distinct pairs for the first 32 series.
export function seriesStyle(k) {
    return {color: SERIES_COLORS[k % SERIES_COLORS.length],
            shape: SHAPES[(k + Math.floor(k / SERIES_COLORS.length)) % SHAPES.length]};
}

// A small legend swatch (SVG) of series k, for the table and the legend.
export function seriesSwatch(k) {
    const {color, shape} = seriesStyle(k);
    const svg = s('svg', {class: 'swatch', viewBox: '0 0 16 16', width: 16, height: 16,
                          'aria-hidden': 'true'});
    svg.append(marker(shape, 8, 8, 5, {fill: color}));
    return svg;
}

// ---- a layer's values: the two runs' distributions and one against the other ----

// The finite values of a tensor at most `max` of them: all, or every k-th (evenly spread, so
// that a sample always means the same elements); {idx, sampled}.
export function sampleIndices(n, max) {
    if (n <= max)
        return {idx: Array.from({length: n}, (_, i) => i), sampled: false};
    return {idx: Array.from({length: max}, (_, k) => Math.floor((k * n) / max)), sampled: true};
}

function linearTicks(lo, hi, count = 5) {
    const span = hi - lo || 1;
    const step0 = 10 ** Math.floor(Math.log10(span / count));
    const step = [1, 2, 5, 10].map((m) => m * step0).find((st) => span / st <= count) || step0 * 10;
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
        out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    return out;
}

// valueHistograms(a, b, {width, valueAt}): the values of a and of b in the same 40 bins over
// both ranges, two panels side by side with the same axes (counts on a log scale).
export function valueHistograms(A, B, {width = 960, valueAt}) {
    const W = Math.round(width), H = 250, gap = 36, left = 56, top = 26, bottom = H - 46;
    const panel = (W - left - gap - 16) / 2;
    const n = Math.min(A.size, B.size);
    let lo = Infinity, hi = -Infinity;
    for (const T of [A, B])
        for (let i = 0; i < T.size; i++) {
            const v = valueAt(T, i);
            if (Number.isFinite(v)) {
                if (v < lo)
                    lo = v;
                if (v > hi)
                    hi = v;
            }
        }
    if (!Number.isFinite(lo)) {
        lo = 0;
        hi = 1;
    }
    if (hi === lo)
        hi = lo + 1;
    const bins = 40;
    const count = (T) => {
        const c = new Array(bins).fill(0);
        for (let i = 0; i < T.size; i++) {
            const v = valueAt(T, i);
            if (Number.isFinite(v))
                c[Math.min(bins - 1, Math.floor(((v - lo) / (hi - lo)) * bins))]++;
        }
        return c;
    };
    const ca = count(A), cb = count(B);
    const max = Math.max(1, ...ca, ...cb);
    const dec = Math.max(1, Math.ceil(Math.log10(max + 1)));
    const svg = s('svg', {class: 'chart value-hist', viewBox: `0 0 ${W} ${H}`, width: W, height: H,
                          role: 'img', 'aria-labelledby': 'value-hist-title'});
    svg.append(s('title', {id: 'value-hist-title'}, `Values of a and b in ${bins} bins from ` +
                 `${fmtNum(lo)} to ${fmtNum(hi)} (${n} values each; counts on a log scale).`));
    const y = (c) => bottom - (Math.log10(c + 1) / dec) * (bottom - top);
    [['a', ca, left], ['b', cb, left + panel + gap]].forEach(([name, c, x0]) => {
        const g = s('g');
        svg.append(g);
        g.append(s('text', {class: 'axis-label', x: x0 + panel / 2, y: 16, 'text-anchor': 'middle'}, 'run ' + name));
        for (let d = 0; d <= dec; d++) {
            const yy = y(10 ** d - 1);
            g.append(s('line', {class: 'grid', x1: x0, x2: x0 + panel, y1: yy, y2: yy}));
            if (x0 === left)
                g.append(s('text', {class: 'tick', x: x0 - 6, y: yy + 4, 'text-anchor': 'end'},
                           d === 0 ? '0' : d <= 4 ? String(10 ** d) : '1e' + d));
        }
        const bw = panel / bins;
        let path = '';
        c.forEach((k, i) => {
            if (k)
                path += `M${(x0 + i * bw + 0.5).toFixed(1)} ${y(k).toFixed(1)}h${Math.max(1, bw - 1).toFixed(1)}` +
                        `V${bottom}h-${Math.max(1, bw - 1).toFixed(1)}z`;
        });
        g.append(s('path', {class: 'bar ' + (name === 'a' ? 'bar-a' : 'bar-b'), d: path}));
        g.append(s('line', {class: 'axis', x1: x0, x2: x0 + panel, y1: bottom, y2: bottom}));
        for (const t of linearTicks(lo, hi, 4))
            g.append(s('text', {class: 'tick', x: x0 + ((t - lo) / (hi - lo)) * panel, y: bottom + 16,
                                'text-anchor': 'middle'}, fmtNum(t, 2)));
    });
    svg.append(s('text', {class: 'axis-label', x: W / 2, y: H - 8, 'text-anchor': 'middle'},
                 'value (the same bins in both panels); bar height: count, log scale'));
    return svg;
}

// scatterAB(a, b, {width, valueAt, max}): each sampled element's a value against its b value
// (left: the diagonal is a = b) and its difference a − b against b (right), at most `max`
// elements (evenly spread, the caption says so).
export function scatterAB(A, B, {width = 960, valueAt, max = 4000}) {
    const W = Math.round(width), H = 300, gap = 64, left = 70, top = 24, bottom = H - 50;
    const panel = (W - left - gap - 16) / 2;
    const n = Math.min(A.size, B.size);
    const {idx, sampled} = sampleIndices(n, max);
    const pts = idx.map((i) => [valueAt(B, i), valueAt(A, i)]).filter(([b, a]) => Number.isFinite(a) && Number.isFinite(b));
    let lo = Infinity, hi = -Infinity, dmax = 0;
    for (const [b, a] of pts) {
        lo = Math.min(lo, a, b);
        hi = Math.max(hi, a, b);
        dmax = Math.max(dmax, Math.abs(a - b));
    }
    if (!pts.length) {
        lo = 0;
        hi = 1;
    }
    if (hi === lo)
        hi = lo + 1;
    const dm = dmax || 1;
    const svg = s('svg', {class: 'chart scatter', viewBox: `0 0 ${W} ${H}`, width: W, height: H,
                          role: 'img', 'aria-labelledby': 'scatter-title'});
    svg.append(s('title', {id: 'scatter-title'}, `a against b and a − b against b for ` +
                 (sampled ? `${pts.length} of ${n} values (every ${Math.round(n / idx.length)}th)` : `all ${n} values`) +
                 `; the largest |a − b| of these is ${fmtNum(dmax)}.`));
    const sx = (v, x0) => x0 + ((v - lo) / (hi - lo)) * panel;
    const syA = (v) => bottom - ((v - lo) / (hi - lo)) * (bottom - top);
    const syD = (d) => (top + bottom) / 2 - (d / dm) * ((bottom - top) / 2);
    const x1 = left, x2 = left + panel + gap;
    const g = s('g');
    svg.append(g);
    g.append(s('line', {class: 'diag', x1: sx(lo, x1), y1: syA(lo), x2: sx(hi, x1), y2: syA(hi)}));
    g.append(s('line', {class: 'diag', x1: x2, y1: syD(0), x2: x2 + panel, y2: syD(0)}));
    let pa = '', pd = '';
    for (const [b, a] of pts) {
        pa += `M${sx(b, x1).toFixed(1)} ${syA(a).toFixed(1)}h0.01`;
        pd += `M${sx(b, x2).toFixed(1)} ${syD(a - b).toFixed(1)}h0.01`;
    }
    g.append(s('path', {class: 'dots', d: pa}), s('path', {class: 'dots', d: pd}));
    for (const [x0, label] of [[x1, 'a'], [x2, 'a − b']]) {
        g.append(s('line', {class: 'axis', x1: x0, x2: x0 + panel, y1: bottom, y2: bottom}));
        g.append(s('line', {class: 'axis', x1: x0, x2: x0, y1: top, y2: bottom}));
        for (const t of linearTicks(lo, hi, 4))
            g.append(s('text', {class: 'tick', x: sx(t, x0), y: bottom + 16, 'text-anchor': 'middle'}, fmtNum(t, 2)));
        g.append(s('text', {class: 'axis-label', x: x0 + panel / 2, y: H - 10, 'text-anchor': 'middle'}, 'b'));
        g.append(s('text', {class: 'axis-label', x: x0 - 48, y: (top + bottom) / 2, 'text-anchor': 'middle',
                            transform: `rotate(-90 ${x0 - 48} ${(top + bottom) / 2})`}, label));
    }
    for (const t of linearTicks(lo, hi, 4))
        g.append(s('text', {class: 'tick', x: x1 - 6, y: syA(t) + 4, 'text-anchor': 'end'}, fmtNum(t, 2)));
    for (const t of [-dm, 0, dm])
        g.append(s('text', {class: 'tick', x: x2 - 6, y: syD(t) + 4, 'text-anchor': 'end'}, fmtNum(t, 2)));
    return {svg, sampled, shown: pts.length, total: n};
}
