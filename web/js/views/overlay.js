// views/overlay.js: more than two runs at once. #/overlay?truth=&runs=: N runs' error along
// the layers against one truth run (GET /api/v1/overlay: each run's diff against the truth,
// aligned by layer name, binned past 2,000 layers keeping each bin's largest error), one line
// per run on a log scale, each run's first divergent layer marked, and a table of the runs.
// #/heatmap/MODEL?ref=: every device of a model (its newest run) layer by layer against one
// reference (the baseline unless ref= names one; GET /api/v1/heatmap), a row per device and a
// column per layer (or bin), coloured on the absolute scale, drawn on a canvas (thousands of
// cells, no element each), a cell's values on hover and a click to its diff at that layer;
// the table below says each device's worst and first divergent layer in words.
import {h, s, message, fmtNum, fmtInt, fmtTime, shortId, routeHref} from '../dom.js';
import {apiGet} from '../api.js';
import {addTooltip, decades, logAxis, marker, seriesStyle, seriesSwatch} from '../charts.js';
import {errScale, colorOf, scaleLegend, NONE, ZERO, NONFINITE} from '../scale.js';
import {copyLinkButton, svgExport, tableExports} from '../share.js';

const VERDICT_OF = {i: 'identical', n: 'noise', d: 'divergent', a: 'amplified', f: 'nonfinite',
                    x: 'incomparable', u: 'unknown', '-': 'not in this run'};

// "cpu · emulate=tf32:gemm · 2026-12-02 07:11 · 46eb7286" of the answer's run brief.
function briefLabel(r) {
    const k = r.knobs || {};
    const knobs = Object.entries(k).filter(([n, v]) => v !== null && v !== false && n !== 'threads' &&
                                           !(n === 'emulate' && v === 'none'))
        .map(([n, v]) => (v === true ? n : `${n}=${v}`));
    return [r.device || r.backend, r.gpu && !(r.device || '').includes(r.gpu) ? r.gpu : null,
            knobs.join(' ') || null, fmtTime(r.created_at), shortId(r.id)].filter(Boolean).join(' · ');
}

function overlayChart(ov, {width, hrefOf}) {
    const W = Math.round(Math.max(320, width || 960)), H = 380, left = 64, right = W - 14, top = 20,
        bottom = H - 70;
    const n = ov.layers.length;
    const all = ov.series.flatMap((sr) => sr.err);
    const [lo, hi] = decades(all);
    const svg = s('svg', {class: 'chart overlay-chart', viewBox: `0 0 ${W} ${H}`, width: W, height: H,
                          role: 'group', 'aria-labelledby': 'overlay-title'});
    svg.append(s('title', {id: 'overlay-title'}, `Error against the truth along ${fmtInt(ov.n_layers)} layers ` +
                 `for ${ov.series.length} runs, log scale` + (ov.bin > 1 ? `, ${ov.bin} layers a point (the largest)` : '') + '.'));
    const g = s('g');
    svg.append(g);
    const y = logAxis(g, lo, hi, top, bottom, left, right, 'log10 error vs truth');
    const zeroLane = bottom + 18;
    g.append(s('text', {class: 'tick', x: left - 6, y: zeroLane + 4, 'text-anchor': 'end'}, '0'));
    g.append(s('line', {class: 'axis', x1: left, x2: right, y1: bottom, y2: bottom}));
    const x = (k) => left + 8 + (n > 1 ? (k / (n - 1)) * (right - left - 16) : (right - left) / 2);
    const py = (v) => (v > 0 ? Math.max(top, Math.min(bottom, y(v))) : zeroLane);
    // x ticks: layer positions
    const ticks = W < 600 ? 3 : 6;
    for (let t = 0; t <= ticks; t++) {
        const k = Math.round((t / ticks) * Math.max(0, n - 1));
        g.append(s('text', {class: 'tick', x: x(k), y: H - 34, 'text-anchor': 'middle'}, fmtInt(k * ov.bin)));
    }
    g.append(s('text', {class: 'axis-label', x: (left + right) / 2, y: H - 12, 'text-anchor': 'middle'},
               ov.bin > 1 ? `layer (${ov.bin} a point)` : 'layer'));
    ov.series.forEach((sr, k) => {
        const {color, shape} = seriesStyle(k);
        let d = '', pen = false;
        sr.err.forEach((v, p) => {
            if (v == null) {
                pen = false;
                return;
            }
            d += `${pen ? 'L' : 'M'}${x(p).toFixed(1)} ${py(v).toFixed(1)}`;
            pen = true;
        });
        g.append(s('path', {class: 'series-line', stroke: color, d, 'data-run': sr.run.id}));
        // where it diverges first: its first divergent layer, or binned, the first bin beyond noise
        const at = ov.bin === 1 && sr.first_divergent ? ov.layers.indexOf(sr.first_divergent)
            : sr.verdicts.search(/[daf]/);
        if (at >= 0 && sr.err[at] != null) {
            const link = s('a', {href: hrefOf(sr, ov.layers[at]), class: 'point-link', 'data-run': sr.run.id,
                                 'data-tip': `${briefLabel(sr.run)}: first divergent ${sr.first_divergent || ov.layers[at]}` +
                                     `, error ${fmtNum(sr.err[at])}`,
                                 'data-x': x(at).toFixed(1), 'data-y': py(sr.err[at]).toFixed(1),
                                 'aria-label': `${briefLabel(sr.run)}: diverges first at ${sr.first_divergent || ov.layers[at]}`});
            link.append(marker(shape, x(at), py(sr.err[at]), 6, {fill: color, class: 'series-pt'}));
            g.append(link);
        }
    });
    addTooltip(svg, W);
    return svg;
}

async function overlay(root, ctx) {
    const truth = ctx.params.get('truth') || '';
    const runs = (ctx.params.get('runs') || '').split(',').filter(Boolean);
    document.title = 'gpudiff: overlay';
    const shareBar = h('div', {class: 'share-bar'}, copyLinkButton());
    root.append(h('div', {class: 'title-row'}, h('h1', {}, 'Runs against one truth'), shareBar));
    if (!truth || !runs.length) {
        root.append(message('info', 'Pick runs in the run list (the check boxes) and a truth run, then ' +
                            '"Overlay selected".'), h('p', {}, h('a', {href: '#/runs'}, 'The runs')));
        return;
    }
    const status = message('info', `Comparing ${runs.length} run${runs.length === 1 ? '' : 's'} with the truth…`);
    root.append(status);
    let ov;
    try {
        ov = await apiGet('overlay', {truth, runs: runs.join(',')}, {signal: ctx.signal});
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        status.replaceWith(message('error', 'Overlay: ' + e.message));
        return;
    }
    if (!ctx.live())
        return;
    status.remove();
    const hrefOf = (sr, layer) => routeHref('/diff', {a: sr.run.id, b: truth, at: layer});
    root.append(h('p', {class: 'lead', id: 'overlay-about'}, `${fmtInt(ov.series.length)} runs against the truth `,
        h('code', {}, briefLabel(ov.truth)), `: each one's error relative to the layer's largest value, layer by ` +
        `layer (${fmtInt(ov.n_layers)} layers` + (ov.bin > 1 ? `, ${fmtInt(ov.bin)} a point, the largest of them` : '') +
        '). A marker: where the run diverges first.'));
    const box = h('div', {class: 'chart-frame'});
    let chart = null;
    const draw = () => {
        chart = overlayChart(ov, {width: box.clientWidth || 960, hrefOf});
        box.replaceChildren(chart);
    };
    root.append(h('figure', {class: 'chart-box'}, box,
        h('figcaption', {}, h('ul', {class: 'legend', 'aria-label': 'Runs'},
            ov.series.map((sr, k) => h('li', {}, seriesSwatch(k), briefLabel(sr.run)))),
          svgExport('overlay', () => chart))));
    draw();
    let t = 0;
    window.addEventListener('resize', () => { clearTimeout(t); t = setTimeout(draw, 150); }, {signal: ctx.signal});
    const rows = ov.series.map((sr, k) => {
        const finite = sr.err.filter((v) => v != null);
        return {run: sr.run.id, label: briefLabel(sr.run), first_divergent: sr.first_divergent,
                max_err: finite.length ? Math.max(...finite) : null, k};
    });
    root.append(h('section', {'aria-labelledby': 'ov-runs-h'},
        h('div', {class: 'section-head'}, h('h2', {id: 'ov-runs-h'}, 'Runs'),
          tableExports('overlay', [{key: 'run', label: 'run'}, {key: 'label', label: 'run_label'},
                                   {key: 'first_divergent', label: 'first_divergent'}, {key: 'max_err', label: 'max_err'}],
                       () => rows)),
        h('div', {class: 'table-wrap'}, h('table', {id: 'overlay-table'},
            h('thead', {}, h('tr', {}, ['Run', 'First divergent', 'Largest error', 'Diff'].map((x) => h('th', {scope: 'col'}, x)))),
            h('tbody', {}, rows.map((r) => h('tr', {'data-run': r.run},
                h('th', {scope: 'row'}, seriesSwatch(r.k), ' ', r.label),
                h('td', {}, r.first_divergent ? h('code', {}, r.first_divergent) : h('span', {class: 'muted'}, 'none')),
                h('td', {class: 'num'}, fmtNum(r.max_err)),
                h('td', {}, h('a', {href: routeHref('/diff', {a: r.run, b: truth})}, 'against the truth')))))))));
}

// ---- the heatmap ----

function heatCanvas(hm, {width, onPick}) {
    const n = hm.layers.length, rows = hm.series.length;
    const labelW = Math.min(300, Math.max(140, width * 0.25));
    const cellH = 14, W = Math.round(Math.max(320, width)), plotW = W - labelW - 8;
    const cellW = Math.max(1, plotW / Math.max(1, n));
    const H = rows * cellH + 24;
    const canvas = h('canvas', {class: 'heatmap', id: 'heatmap', role: 'img', width: W, height: H,
                                'aria-label': `${rows} devices by ${fmtInt(hm.n_layers)} layers` +
                                    (hm.bin > 1 ? ` (${hm.bin} a column)` : '') + '; the table below says the same in words'});
    const cx = canvas.getContext('2d');
    const scale = errScale([]);
    const css = getComputedStyle(document.documentElement);
    cx.font = '12px system-ui, sans-serif';
    cx.textBaseline = 'middle';
    hm.series.forEach((sr, r) => {
        cx.fillStyle = css.getPropertyValue('--ink') || '#111827';
        const label = sr.run.device || sr.run.backend;
        cx.fillText(label.length > labelW / 6.4 ? label.slice(0, Math.floor(labelW / 6.4) - 1) + '…' : label,
                    2, r * cellH + cellH / 2);
        for (let p = 0; p < n; p++) {
            const code = sr.verdicts[p], v = sr.err[p];
            cx.fillStyle = code === 'f' ? NONFINITE : code === '-' || code === 'x' ? NONE
                : v === 0 ? ZERO : colorOf(scale, v);
            cx.fillRect(labelW + p * cellW, r * cellH, Math.ceil(cellW), cellH - 1);
        }
    });
    const pick = (e) => {
        const rect = canvas.getBoundingClientRect();
        const px = (e.clientX - rect.left) * (W / rect.width), py = (e.clientY - rect.top) * (H / rect.height);
        const p = Math.floor((px - labelW) / cellW), r = Math.floor(py / cellH);
        return p >= 0 && p < n && r >= 0 && r < rows ? {p, r} : null;
    };
    canvas.addEventListener('mousemove', (e) => {
        const at = pick(e);
        if (!at) {
            canvas.title = '';
            return;
        }
        const sr = hm.series[at.r];
        canvas.title = `${sr.run.device || sr.run.backend} at ${hm.layers[at.p]}${hm.bin > 1 ? ` (+${hm.bin - 1})` : ''}: ` +
            `${VERDICT_OF[sr.verdicts[at.p]] || '?'}, error ${fmtNum(sr.err[at.p])}`;
    });
    canvas.addEventListener('click', (e) => {
        const at = pick(e);
        if (at)
            onPick(hm.series[at.r], hm.layers[at.p]);
    });
    return canvas;
}

export async function heatmap(root, ctx) {
    const model = ctx.segment;
    const ref = ctx.params.get('ref') || '';
    document.title = 'gpudiff: heatmap' + (model ? ' of ' + model : '');
    root.append(h('div', {class: 'title-row'}, h('h1', {}, 'Devices by layers', model ? [': ', h('span', {class: 'name'}, model)] : ''),
                  h('div', {class: 'share-bar'}, copyLinkButton())));
    if (!model) {
        root.append(message('info', 'Open a heatmap from a model\'s matrix.'));
        return;
    }
    const status = message('info', 'Comparing each device with the reference…');
    root.append(status);
    let hm;
    try {
        hm = await apiGet('heatmap', {model, ref: ref || undefined, points: 600}, {signal: ctx.signal});
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        status.replaceWith(message('error', `Heatmap of ${model}: ${e.message}`));
        return;
    }
    if (!ctx.live())
        return;
    status.remove();
    root.append(h('p', {class: 'lead', id: 'heatmap-about'}, `${fmtInt(hm.series.length)} devices of ${model}, each ` +
        'its newest run against the reference ', h('code', {}, briefLabel(hm.ref)), `: a row per device, a column per ` +
        `layer (${fmtInt(hm.n_layers)} layers` + (hm.bin > 1 ? `, ${fmtInt(hm.bin)} a column, the largest error and worst verdict of them` : '') +
        '). A cell opens that device\'s diff at that layer. ', h('a', {href: '#/matrix/' + encodeURIComponent(model)}, 'The device matrix')));
    const box = h('div', {class: 'heatmap-frame'});
    root.append(box, scaleLegend(errScale([]), 'error relative to max |b| per layer'));
    const draw = () => box.replaceChildren(heatCanvas(hm, {width: box.clientWidth || 960,
        onPick: (sr, layer) => { location.hash = routeHref('/diff', {a: sr.run.id, b: hm.ref.id, at: layer}); }}));
    draw();
    let t = 0;
    window.addEventListener('resize', () => { clearTimeout(t); t = setTimeout(draw, 150); }, {signal: ctx.signal});
    const worstOf = (sr) => [...sr.verdicts].reduce((w, c) => ('-xinudaf'.indexOf(c) > '-xinudaf'.indexOf(w) ? c : w), '-');
    root.append(h('div', {class: 'table-wrap'}, h('table', {id: 'heatmap-table'},
        h('thead', {}, h('tr', {}, ['Device', 'Run', 'Worst', 'First divergent', 'Largest error'].map((x) => h('th', {scope: 'col'}, x)))),
        h('tbody', {}, hm.series.map((sr) => {
            const finite = sr.err.filter((v) => v != null);
            return h('tr', {'data-run': sr.run.id},
                h('th', {scope: 'row'}, sr.run.device || sr.run.backend),
                h('td', {}, h('a', {href: routeHref('/diff', {a: sr.run.id, b: hm.ref.id})}, shortId(sr.run.id))),
                h('td', {}, VERDICT_OF[worstOf(sr)]),
                h('td', {}, sr.first_divergent ? h('code', {}, sr.first_divergent) : h('span', {class: 'muted'}, 'none')),
                h('td', {class: 'num'}, fmtNum(finite.length ? Math.max(...finite) : null)));
        })))));
}

export async function render(root, ctx) {
    return overlay(root, ctx);
}
