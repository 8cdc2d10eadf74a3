// views/layer.js: one layer of a diff: its metrics, the ULP histogram, where the largest
// difference sits, values of both runs side by side around it (both tensors read as .npy
// in the browser), and downloads of both tensors.
import {h, clear, message, fmtNum, fmtInt, shortId, verdictBadge, routeHref} from '../dom.js';
import {apiGetBytes, apiUrl, getDiff, getRun, getToken, layerNpyPath} from '../api.js';
import {ulpHistogram} from '../charts.js';
import {parseNpy, valueAt, ulpDistance, unravel} from '../npy.js';

const AUTO_LOAD_BYTES = 64 << 20; // larger tensors load on request
const WINDOW = 8; // values shown either side of the largest difference

function fmtValue(v, dtype) {
    if (typeof v !== 'number')
        return String(v);
    if (dtype === 'float64')
        return Number.isInteger(v) ? String(v) : v.toPrecision(17);
    if (dtype === 'float32' || dtype === 'float16')
        return Number.isInteger(v) ? String(v) : v.toPrecision(9);
    return String(v);
}

function fileName(run, rec) {
    return `${shortId(run.id)}-${String(rec.index).padStart(4, '0')}-${rec.name}.npy`;
}

// A download link of a layer's .npy. Plain link when reads are open; with a token the
// file is fetched with it and handed over as a blob (a link cannot carry the header).
function downloadLink(run, rec, label, id) {
    const a = h('a', {href: apiUrl(layerNpyPath(run.id, rec.index)).pathname, download: fileName(run, rec),
                      class: 'button', id}, label);
    a.addEventListener('click', async (e) => {
        if (!getToken())
            return;
        e.preventDefault();
        const bytes = await apiGetBytes(layerNpyPath(run.id, rec.index));
        const url = URL.createObjectURL(new Blob([bytes], {type: 'application/octet-stream'}));
        const tmp = h('a', {href: url, download: fileName(run, rec)});
        document.body.append(tmp);
        tmp.click();
        tmp.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10000);
    });
    return a;
}

function metricsList(l, d) {
    const rows = [
        ['max |a−b|', fmtNum(l.max_abs)],
        ['error / max|b|', fmtNum(l.err)],
        ['noise band (envelope)', fmtNum(l.envelope)],
        ['op bound', fmtNum(l.bound)],
        ['growth', fmtNum(l.growth) + '×'],
        ['mean |a−b|', fmtNum(l.mean_abs)],
        ['RMS', fmtNum(l.rms)],
        ['max relative', fmtNum(l.max_rel)],
        ['max ULP', fmtInt(l.max_ulp)],
        ['effective bits', `${fmtNum(l.bits)} (${l.arithmetic || '?'})`],
        ['outside atol + rtol·|b|', `${fmtInt(l.mismatches)} of ${fmtInt(l.count)}`],
        ['rows that differ', fmtInt(l.mismatch_rows)],
        ['cosine', l.cosine == null ? '–' : String(l.cosine)],
        ['SQNR', l.sqnr_db == null ? '∞ (no error)' : fmtNum(l.sqnr_db) + ' dB'],
        ['NaN / Inf disagree', `${fmtInt(l.nan_disagree)} / ${fmtInt(l.inf_disagree)}`],
        ['reduction length', fmtInt(l.reduction_len)],
        ['bitwise equal', l.bitwise_equal ? 'yes' : 'no'],
    ];
    if (l.discontinuous)
        rows.push(['flipped outputs', fmtInt(l.flipped)],
                  ['inputs near a step', `${fmtInt(l.near_boundary)} within ${fmtNum(l.boundary_distance)}`]);
    if (l.truth)
        rows.push(['error vs truth', `a ${fmtNum(l.truth.err_a)}, b ${fmtNum(l.truth.err_b)}: ` +
                   `${l.truth.closer === 'even' ? 'even' : 'run ' + l.truth.closer + ' is closer'}`]);
    if (l.algo && (l.algo.a || l.algo.b))
        rows.push(['algorithm', `a: ${l.algo.a || '–'}; b: ${l.algo.b || '–'}`]);
    return h('dl', {class: 'metrics', id: 'layer-metrics'},
             rows.map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, v))));
}

function histTable(counts) {
    const rows = counts.map((c, k) => (c ? h('tr', {},
        h('th', {scope: 'row'}, k === 0 ? '0 (equal)' : k === 1 ? '1' : `${2 ** (k - 1)}–${2 ** k - 1}`),
        h('td', {class: 'num'}, fmtInt(c))) : null)).filter(Boolean);
    return h('details', {}, h('summary', {}, 'The histogram as a table'),
             h('table', {class: 'compact'}, h('thead', {}, h('tr', {},
                 h('th', {scope: 'col'}, 'ULP distance'), h('th', {scope: 'col'}, 'values'))),
               h('tbody', {}, rows)));
}

// The values around the largest difference (same last-axis row), and the largest
// differences of the whole tensor.
function valuesSection(box, l, A, B) {
    clear(box);
    const n = Math.min(A.size, B.size);
    const shape = A.shape;
    const last = shape.length ? shape[shape.length - 1] || 1 : 1;
    const at = Math.max(0, Math.min(n - 1, l.max_abs_index ?? 0));
    const rowStart = at - (at % last);
    const from = Math.max(rowStart, at - WINDOW), to = Math.min(rowStart + last, at + WINDOW + 1, n);
    const row = (i, hl) => {
        const va = valueAt(A, i), vb = valueAt(B, i);
        const ulp = ulpDistance(A, B, i);
        return h('tr', {class: hl ? 'max-row' : null, 'data-index': i},
                 h('th', {scope: 'row'}, '[' + unravel(i, shape).join(', ') + ']'),
                 h('td', {class: 'num mono'}, fmtValue(va, A.dtype)),
                 h('td', {class: 'num mono'}, fmtValue(vb, B.dtype)),
                 h('td', {class: 'num mono'}, fmtNum(va - vb, 4)),
                 h('td', {class: 'num'}, ulp === null ? '–' : fmtInt(ulp)));
    };
    const head = h('thead', {}, h('tr', {}, ['index', 'a', 'b', 'a − b', 'ULP']
        .map((t) => h('th', {scope: 'col'}, t))));
    const around = [];
    for (let i = from; i < to; i++)
        around.push(row(i, i === at));
    // The largest differences: one pass, a small sorted list.
    const top = [];
    for (let i = 0; i < n; i++) {
        const d = Math.abs(valueAt(A, i) - valueAt(B, i));
        if (!(d > 0))
            continue;
        if (top.length < 8 || d > top[top.length - 1].d) {
            top.push({i, d});
            top.sort((x, y) => y.d - x.d);
            if (top.length > 8)
                top.pop();
        }
    }
    box.append(
        h('h3', {}, 'Around the largest difference'),
        h('div', {class: 'table-wrap'}, h('table', {class: 'values', id: 'values-table'},
            h('caption', {}, `Elements ${from}–${to - 1} (flat) of the row that holds the ` +
              `largest difference, at flat index ${at}; ${A.dtype} a, ${B.dtype} b.`),
            head, h('tbody', {}, around))),
        h('h3', {}, 'The largest differences'),
        top.length ? h('div', {class: 'table-wrap'}, h('table', {class: 'values'},
            h('caption', {}, `The ${top.length} elements with the largest |a − b|.`),
            head.cloneNode(true), h('tbody', {}, top.map((t) => row(t.i, t.i === at)))))
            : h('p', {}, 'The two tensors are equal.'));
}

async function loadValues(box, l, ra, rb, recA, recB, ctx) {
    clear(box).append(message('info', 'Reading both tensors…'));
    try {
        const [ba, bb] = await Promise.all([apiGetBytes(layerNpyPath(ra.id, recA.index), {signal: ctx.signal}),
                                            apiGetBytes(layerNpyPath(rb.id, recB.index), {signal: ctx.signal})]);
        if (!ctx.live())
            return;
        valuesSection(box, l, parseNpy(ba), parseNpy(bb));
    } catch (e) {
        if (e.name === 'AbortError')
            return;
        clear(box).append(message('error', 'The tensors could not be read: ', e.message));
    }
}

function tensorBytes(rec) {
    const sizes = {float64: 8, int64: 8, uint64: 8, float32: 4, int32: 4, uint32: 4, float16: 2,
                   int16: 2, uint16: 2};
    return (rec.shape || []).reduce((a, b) => a * b, 1) * (sizes[rec.dtype] || 1);
}

export async function render(root, ctx) {
    const p = ctx.params;
    const q = {a: p.get('a') || '', b: p.get('b') || '', truth: p.get('truth') || '',
               atol: p.get('atol') || '', rtol: p.get('rtol') || ''};
    const name = p.get('name') || '';
    document.title = `gpudiff: layer ${name}`;
    const back = routeHref('/diff', q);
    root.append(h('p', {class: 'crumbs'}, h('a', {href: back}, '← the diff of ' + shortId(q.a) +
                                              ' vs ' + shortId(q.b))));
    const title = h('h1', {}, 'Layer ', h('span', {class: 'name'}, name || '?'));
    root.append(title);
    if (!q.a || !q.b || !name) {
        root.append(message('error', 'A layer view needs a, b and name: open it from a diff.'));
        return;
    }
    let d, ra, rb;
    try {
        [d, ra, rb] = await Promise.all([getDiff(q, {signal: ctx.signal}), getRun(q.a), getRun(q.b)]);
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        root.append(message('error', e.message));
        return;
    }
    if (!ctx.live())
        return;
    const l = d.layers.find((x) => x.name === name);
    if (!l) {
        root.append(message('error', `The diff has no layer named ${name}.`));
        return;
    }
    const recA = ra.layers[l.index_a], recB = rb.layers[l.index_b];
    title.append(` (${l.op || '?'}) `, verdictBadge(l.verdict),
                 l.first_divergent ? h('span', {class: 'mark first'}, 'first divergent') : '',
                 l.amplifier ? h('span', {class: 'mark amp'}, 'amplifier') : '');
    if (l.verdict === 'incomparable') {
        root.append(message('info', l.note || 'These layers cannot be compared.'));
        return;
    }
    const at = l.max_abs_index ?? 0;
    const shape = (recB && recB.shape) || [];
    const pos = unravel(at, shape);
    root.append(h('section', {'aria-labelledby': 'where-h'}, h('h2', {id: 'where-h'}, 'Where'),
        h('p', {id: 'where'}, 'The largest difference, ', h('strong', {}, fmtNum(l.max_abs)),
          `, is at flat index ${fmtInt(at)}, element [${pos.join(', ')}] of shape ` +
          `[${shape.join(', ')}]` + (shape.length > 1 ? ` (row ${pos[0]} of ${shape[0]})` : '') + '.',
          l.rows && l.rows.length ? ` Rows that differ: ${l.rows.slice(0, 20).join(', ')}` +
            (l.mismatch_rows > 20 ? ` … (${fmtInt(l.mismatch_rows)} in all)` : '') + '.' : '')));
    root.append(h('section', {'aria-labelledby': 'metrics-h'}, h('h2', {id: 'metrics-h'}, 'Metrics'),
                  metricsList(l, d)));
    root.append(h('section', {'aria-labelledby': 'hist-h'}, h('h2', {id: 'hist-h'}, 'ULP distances'),
        h('figure', {class: 'chart-box'}, ulpHistogram(l.ulp_hist || []),
          h('figcaption', {}, 'How many values lie how many representable numbers apart (log scale).')),
        histTable(l.ulp_hist || [])));
    const valuesBox = h('div', {id: 'values'});
    root.append(h('section', {'aria-labelledby': 'values-h'}, h('h2', {id: 'values-h'}, 'Values side by side'),
        h('p', {class: 'downloads'}, 'Download ',
          downloadLink(ra, recA, `a: ${fileName(ra, recA)}`, 'download-a'), ' ',
          downloadLink(rb, recB, `b: ${fileName(rb, recB)}`, 'download-b')),
        valuesBox));
    const bytes = tensorBytes(recA) + tensorBytes(recB);
    if (bytes <= AUTO_LOAD_BYTES) {
        await loadValues(valuesBox, l, ra, rb, recA, recB, ctx);
    } else {
        valuesBox.append(h('button', {type: 'button', onclick: () => loadValues(valuesBox, l, ra, rb, recA, recB, ctx)},
                           `Read both tensors (${fmtNum(bytes / 1048576)} MiB)`));
    }
}
