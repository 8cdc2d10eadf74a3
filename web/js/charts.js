// charts.js: the dashboard's charts, drawn as SVG by hand (no library to download or build):
// divergence along the layers with the noise band, a layer's ULP histogram, and a layer's
// divergence over time per device with version-change markers. Each chart is an <svg> with
// a text summary (its <title>); the tables beside the charts carry the same numbers.
import {s, fmtNum, fmtTime} from './dom.js';

// Colours of series (history lines): dark enough for 3:1 against white, told apart by
// marker shape too.
export const SERIES_COLORS = ['#0b5fa5', '#c2410c', '#047857', '#7c3aed', '#be185d', '#0e7490',
                              '#92400e', '#1f2937'];
const SHAPES = ['circle', 'square', 'diamond', 'triangle'];

// A decade range [lo, hi] (powers of ten) covering the positive values.
function decades(values, minSpan = 2) {
    const pos = values.filter((v) => Number.isFinite(v) && v > 0);
    let lo = pos.length ? Math.floor(Math.log10(Math.min(...pos))) : -8;
    let hi = pos.length ? Math.ceil(Math.log10(Math.max(...pos))) : 0;
    if (hi - lo < minSpan)
        lo = hi - minSpan;
    lo = Math.max(lo, hi - 18);
    return [lo, hi];
}

function marker(shape, x, y, r, attrs) {
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

// The y axis of a log chart: decade lines and labels "1e-6"; returns y(value).
function logAxis(g, lo, hi, top, bottom, left, right, label) {
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

// The metrics the layer chart can show: what they read from a diff layer, and the noise band
// in the same units (none for ULP: the band is a relative error).
export const LAYER_METRICS = {
    err: {label: 'error relative to max(|a|, |b|)', value: (l) => l.err,
          band: (l) => l.envelope},
    max_abs: {label: 'max |a − b|', value: (l) => l.max_abs,
              band: (l) => (l.envelope != null && l.scale != null ? l.envelope * l.scale : null)},
    max_ulp: {label: 'max ULP distance', value: (l) => l.max_ulp, band: () => null},
};

// layerChart(diff, metric, hrefOf): log10 of the metric along the layers, the noise band
// shaded, the first divergent layer and the amplifiers marked; each point links to hrefOf(l).
export function layerChart(diff, metricKey, hrefOf) {
    const metric = LAYER_METRICS[metricKey] || LAYER_METRICS.err;
    const layers = diff.layers;
    const W = 960, H = 360, left = 70, right = W - 20, top = 30, plotBottom = 250;
    const zeroLane = plotBottom + 22; // identical (0) sits on its own lane below the axis
    const values = layers.map((l) => (l.verdict === 'incomparable' ? null : metric.value(l)));
    const bands = layers.map((l) => (l.verdict === 'incomparable' ? null : metric.band(l)));
    const [lo, hi] = decades([...values, ...bands]);
    // role group, not img: its points are links (an img may hold nothing focusable).
    const svg = s('svg', {class: 'chart layer-chart', viewBox: `0 0 ${W} ${H}`, role: 'group',
                          'aria-labelledby': 'layer-chart-title'});
    const first = diff.first_divergent;
    const amps = diff.amplifiers || [];
    svg.append(s('title', {id: 'layer-chart-title'},
                 `${metric.label} per layer, log scale. ` +
                 (first ? `First divergent layer: ${first}. ` : 'No divergent layer. ') +
                 (amps.length ? `Amplifiers: ${amps.join(', ')}.` : 'No amplifier.')));
    const g = s('g');
    svg.append(g);
    const y = logAxis(g, lo, hi, top, plotBottom, left, right, 'log10 ' + metric.label);
    const n = layers.length;
    const step = n > 1 ? (right - left - 40) / (n - 1) : 0;
    const x = (i) => left + 20 + i * step;
    const clampY = (v) => (v > 0 ? Math.max(top, Math.min(plotBottom, y(v))) : zeroLane);

    // The noise band: everything below the envelope is what rounding can explain.
    const bandPts = [];
    bands.forEach((b, i) => {
        if (b != null && b > 0)
            bandPts.push([x(i), clampY(b)]);
    });
    if (bandPts.length === 1) // one layer: a short stretch of band around it
        bandPts.splice(0, 1, [bandPts[0][0] - 30, bandPts[0][1]], [bandPts[0][0] + 30, bandPts[0][1]]);
    if (bandPts.length > 1) {
        const pts = bandPts.map(([px, py]) => `${px},${py}`).join(' ');
        g.append(s('polygon', {class: 'band',
                               points: `${bandPts[0][0]},${plotBottom} ${pts} ${bandPts[bandPts.length - 1][0]},${plotBottom}`}));
        g.append(s('polyline', {class: 'band-edge', points: pts}));
    }
    g.append(s('text', {class: 'tick', x: left - 6, y: zeroLane + 4, 'text-anchor': 'end'}, '0'));
    g.append(s('line', {class: 'axis', x1: left, x2: right, y1: plotBottom, y2: plotBottom}));

    // The line through the values, then the points on top.
    const linePts = values.map((v, i) => (v == null ? null : `${x(i)},${clampY(v)}`)).filter(Boolean);
    g.append(s('polyline', {class: 'value-line', points: linePts.join(' ')}));
    layers.forEach((l, i) => {
        const v = values[i];
        const px = x(i);
        g.append(s('text', {class: 'layer-name', x: px, y: zeroLane + 20, 'text-anchor': 'end',
                            transform: `rotate(-35 ${px} ${zeroLane + 20})`}, l.name));
        if (v == null) {
            g.append(s('text', {class: 'tick', x: px, y: plotBottom - 4, 'text-anchor': 'middle'}, 'n/a'));
            return;
        }
        const py = clampY(v);
        const isFirst = l.first_divergent || l.name === first;
        const isAmp = l.amplifier || amps.includes(l.name);
        const link = s('a', {href: hrefOf(l), class: 'point-link',
                             'aria-label': `${l.name}: ${l.verdict}, ${metric.label} ${fmtNum(v)}`});
        link.append(s('title', {}, `${l.name} (${l.op || 'op ?'}): ${l.verdict}; ${metric.label} ` +
                      `${fmtNum(v)}` + (bands[i] != null ? `; noise band ${fmtNum(bands[i])}` : '')));
        if (isFirst)
            link.append(s('circle', {class: 'ring-first', cx: px, cy: py, r: 11}));
        if (isAmp)
            link.append(s('circle', {class: 'ring-amp', cx: px, cy: py, r: 11}));
        link.append(marker(isAmp ? 'triangle' : 'circle', px, py, 5.5,
                           {class: 'pt v-' + l.verdict}));
        g.append(link);
        if (isFirst || isAmp) {
            const label = isFirst ? 'first divergent' : `amplifier ×${fmtNum(l.growth)}`;
            // Above the ring, or beside it on the left when the point is at the top.
            const above = py - 18 >= top - 12;
            g.append(s('text', {class: isFirst ? 'callout first' : 'callout amp',
                                x: above ? px : px - 16, y: above ? py - 18 : py + 4,
                                'text-anchor': above ? 'middle' : 'end'}, label));
        }
    });
    return svg;
}

// histogram(counts): the ULP histogram (bin 0: equal; bin k: distance in [2^(k-1), 2^k)),
// bar heights on a log scale of counts.
export function ulpHistogram(counts) {
    const W = 960, H = 260, left = 70, right = W - 20, top = 20, bottom = 200;
    const svg = s('svg', {class: 'chart hist-chart', viewBox: `0 0 ${W} ${H}`, role: 'img',
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
        if (n <= 24 || k % Math.ceil(n / 24) === 0)
            g.append(s('text', {class: 'tick', x: bx + bw / 2, y: bottom + 14, 'text-anchor': 'middle'}, label));
    });
    g.append(s('text', {class: 'axis-label', x: (left + right) / 2, y: bottom + 40,
                        'text-anchor': 'middle'}, 'ULP distance (bin k: 2^(k−1) to 2^k − 1)'));
    return svg;
}

// historyChart(series, changes): each device's error against the baseline over time, a
// marker where a point's driver/CUDA/cuDNN/cuBLAS differs from the point before it.
// series: [{device, points: [{created_at, err, run, verdict}]}]; changes: [{time, devices, text}].
export function historyChart(series, changes, hrefOf) {
    // Wide margins: the time labels are centred on their ticks.
    const W = 960, H = 360, left = 110, right = W - 70, top = 50, bottom = 270;
    const zeroLane = bottom + 18;
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
    const [lo, hi] = decades(all.map((p) => p.err));
    const svg = s('svg', {class: 'chart history-chart', viewBox: `0 0 ${W} ${H}`, role: 'group',
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
    const ticks = 5;
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
    // Version changes first, so points stay on top.
    changes.forEach((c, i) => {
        const cx = x(Date.parse(c.time));
        g.append(s('line', {class: 'change-line', x1: cx, x2: cx, y1: top - 10, y2: bottom}));
        const nearRight = cx > right - 220;
        const t = s('text', {class: 'change-label', x: nearRight ? cx - 3 : cx + 3,
                             y: top - 30 + (i % 2) * 14, 'text-anchor': nearRight ? 'end' : 'start'},
                    c.text);
        t.append(s('title', {}, `${c.devices.join(', ')}: ${c.text}`));
        g.append(t);
    });
    series.forEach((sr, k) => {
        const {color, shape} = seriesStyle(k);
        const pts = sr.points.filter((p) => Number.isFinite(Date.parse(p.created_at)) && p.err != null)
            .sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at));
        g.append(s('polyline', {class: 'series-line', stroke: color,
                                points: pts.map((p) => `${x(Date.parse(p.created_at))},${py(p.err)}`).join(' ')}));
        for (const p of pts) {
            const link = s('a', {href: hrefOf(p), class: 'point-link',
                                 'aria-label': `${sr.device}, ${fmtTime(p.created_at)}: ${fmtNum(p.err)}`});
            link.append(s('title', {}, `${sr.device} ${fmtTime(p.created_at)}: error ${fmtNum(p.err)} (${p.verdict})`));
            link.append(marker(shape, x(Date.parse(p.created_at)), py(p.err), 5,
                               {fill: color, class: 'series-pt'}));
            g.append(link);
        }
    });
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
