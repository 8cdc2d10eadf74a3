// sweepchart.js: a sweep's cost against its error: each setting the daemon's table has a
// forward time for is a point at its median forward time (x, ms) and its output's max |a − b|
// against the float64 run (y, log scale; bitwise equal sits on its own lane below the axis),
// the cheapest deterministic setting ringed, the cheapest batch-invariant one in a square
// (shapes and words, not colour alone), every point named by its setting without overprinting
// another name. Points link to the setting's diff against float64 and show their values on
// hover and on keyboard focus.
import {s, fmtNum} from './dom.js';
import {addTooltip, decades, logAxis} from './charts.js';

// A tidy step for a linear axis from lo to hi (1, 2 or 5 times a power of ten).
function niceStep(span) {
    const raw = span / 5, p = 10 ** Math.floor(Math.log10(raw));
    return [1, 2, 5, 10].map((m) => m * p).find((st) => st >= raw) || raw;
}

// sweepChart(rows, {marks, hrefOf, width}): rows are the table's rows; marks maps a setting
// name to the marks it carries ('det', 'inv', 'fast').
export function sweepChart(rows, {marks, hrefOf, width = 960}) {
    const W = Math.round(Math.max(300, Math.min(1400, width))), H = W < 560 ? 320 : 360;
    const left = 72, right = W - 24, top = 34, bottom = H - 84, zeroLane = bottom + 18;
    const pts = rows.filter((r) => Number.isFinite(r.forward_ms) && r.vs_float64 && r.vs_float64.compared);
    const times = pts.map((r) => r.forward_ms);
    let t0 = times.length ? Math.min(...times) : 0, t1 = times.length ? Math.max(...times) : 1;
    const pad = Math.max((t1 - t0) * 0.08, t1 * 0.02, 1e-3);
    t0 = Math.max(0, t0 - pad);
    t1 += pad;
    const x = (t) => left + ((t - t0) / (t1 - t0)) * (right - left);
    const err = (r) => r.vs_float64.max_abs;
    const [lo, hi] = decades(pts.map(err));
    const svg = s('svg', {class: 'chart sweep-chart', viewBox: `0 0 ${W} ${H}`, width: W, height: H,
                          role: 'group', 'aria-labelledby': 'sweep-chart-title'});
    svg.append(s('title', {id: 'sweep-chart-title'}, `Forward time against max |a − b| from float64 ` +
                 `for ${pts.length} settings (log scale); ${rows.length - pts.length} without both not drawn.`));
    const g = s('g');
    svg.append(g);
    const y = logAxis(g, lo, hi, top, bottom, left, right, 'log10 max |a−b| vs float64');
    g.append(s('line', {class: 'axis', x1: left, x2: right, y1: bottom, y2: bottom}));
    g.append(s('text', {class: 'tick', x: left - 6, y: zeroLane + 4, 'text-anchor': 'end'}, '0'));
    const stepMs = niceStep(t1 - t0);
    for (let t = Math.ceil(t0 / stepMs) * stepMs; t <= t1 + 1e-12; t += stepMs)
        g.append(s('text', {class: 'tick', x: x(t), y: zeroLane + 24, 'text-anchor': 'middle'},
                   fmtNum(t) + ' ms'));
    g.append(s('text', {class: 'axis-label', x: (left + right) / 2, y: H - 12, 'text-anchor': 'middle'},
               'median forward time (cost), ms'));
    const yOf = (r) => (err(r) > 0 ? Math.max(top, Math.min(bottom, y(err(r)))) : zeroLane);
    // Every point is named by its setting (the marks it carries under its name), beside it on
    // the side with room, moved down past the labels already placed so that none overprints.
    const placed = []; // [x0, x1, y0, y1] of each label block
    const LINE = 16, CHAR = 6.9; // a line: 12.5 px bold text is 15 px tall
    const clear = (b) => !placed.some((p) => b[0] < p[1] && p[0] < b[1] && b[2] < p[3] && p[2] < b[3]);
    for (const r of [...pts].sort((p, q) => yOf(p) - yOf(q) || x(p.forward_ms) - x(q.forward_ms))) {
        const px = x(r.forward_ms), py = yOf(r);
        const m = marks.get(r.setting) || new Set();
        const words = [m.has('fast') ? 'fastest' : '', m.has('det') ? 'cheapest deterministic' : '',
                       m.has('inv') ? 'cheapest batch-invariant' : ''].filter(Boolean);
        const tip = `${r.setting}: ${fmtNum(r.forward_ms)} ms (×${fmtNum(r.x_fastest)} the fastest), ` +
            `max |a−b| ${fmtNum(err(r))} from float64` + (words.length ? '; ' + words.join(', ') : '');
        const a = s('a', {href: hrefOf(r), class: 'point-link', 'data-setting': r.setting, 'data-tip': tip,
                          'data-x': px.toFixed(1), 'data-y': py.toFixed(1), 'aria-label': tip});
        if (m.has('det'))
            a.append(s('circle', {class: 'ring-det', cx: px, cy: py, r: 12}));
        if (m.has('inv'))
            a.append(s('rect', {class: 'ring-inv', x: px - 16, y: py - 16, width: 32, height: 32, rx: 2}));
        a.append(s('circle', {class: 'pt ' + (r.deterministic === false ? 'v-divergent' : 'v-noise'),
                              cx: px, cy: py, r: 6}));
        g.append(a);
        const lines = [r.setting, ...words];
        const wide = Math.max(...lines.map((l) => l.length)) * CHAR;
        const tall = LINE * lines.length;
        const end = px + 24 + wide > W - 4;
        const x0 = end ? px - 24 - wide : px + 24;
        let y0 = Math.max(14, Math.min(H - tall - 4, py - 6 - (tall - LINE) / 2));
        for (let tries = 0; tries < 40 && !clear([x0, x0 + wide, y0 - LINE + 3, y0 - LINE + 3 + tall]); tries++)
            y0 += LINE;
        placed.push([x0, x0 + wide, y0 - LINE + 3, y0 - LINE + 3 + tall]);
        lines.forEach((word, i) => g.append(s('text', {class: i ? 'callout sweep-mark' : 'point-name',
            'data-setting': i ? null : r.setting, x: end ? px - 24 : px + 24, y: y0 + LINE * i,
            'text-anchor': end ? 'end' : 'start'}, word)));
    }
    addTooltip(svg, W);
    return svg;
}
