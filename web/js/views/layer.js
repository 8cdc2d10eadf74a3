// views/layer.js: one layer of a diff: its metrics, the ULP histogram, where the largest
// difference sits, values of both runs (and of the truth run) side by side around it (the
// tensors read as .npy in the browser), the two runs' value histograms side by side, a
// against b (sampled for large tensors, saying so), for a discontinuous or ill-conditioned
// op its input elements nearest the step or pole, and downloads of both tensors.
import {h, clear, message, fmtNum, fmtInt, shortId, verdictBadge, routeHref} from '../dom.js';
import {apiGetBytes, apiPost, apiUrl, getDiffSummary, getOps, getRun, getToken, layerNpyPath} from '../api.js';
import {findLayer} from '../diff_rows.js';
import {ulpHistogram, valueHistograms, scatterAB} from '../charts.js';
import {parseNpy, valueAt, ulpDistance, unravel} from '../npy.js';
import {NEAR, nearest, countWithin} from '../nearstep.js';
import {copyLinkButton, domTableExports, svgExport} from '../share.js';
import {sideDistance, ownWords, startOf} from '../diff_facts.js';

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
        ['effective bits', l.sparse ? 'none read: a sparse difference'
            : fmtNum(l.bits) + (l.arithmetic ? ` (${l.arithmetic})` : '')],
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
    if (l.sparse)
        rows.push(['values that differ', `${fmtInt(l.values_differ)} of ${fmtInt(l.count)} (sparse)`]);
    if (l.conditioning)
        rows.push(['conditioning', `smallest |x| ${fmtNum(l.conditioning.x_min)}; ` +
                   `${fmtInt(l.conditioning.near_pole)} input${l.conditioning.near_pole === 1 ? '' : 's'} ` +
                   'within the input\'s difference of 0; ' +
                   `relative change up to ${fmtNum(l.conditioning.cond)}; growth ×${fmtNum(l.growth)}`]);
    if (l.reason)
        rows.push(['why', l.reason]);
    if (l.truth) {
        const r = l.truth.right;
        rows.push(['right against the truth', r === 'both' ? 'both' : r === 'neither' ? 'neither'
                   : r ? 'run ' + r : 'not known'],
                  ['run a vs truth', sideDistance(l, 'a')], ['run b vs truth', sideDistance(l, 'b')]);
        if (l.truth.closer === 'a' || l.truth.closer === 'b')
            rows.push(['closer to the truth', `run ${l.truth.closer}` +
                       (r === l.truth.closer || r === 'both' ? '' : ', and still not right')]);
    }
    if (l.own)
        rows.push(['own error (replay)', `${ownWords(l)}; its bound ${fmtNum(l.own.bound)}, ${l.own.verdict}`]);
    if (l.algo && (l.algo.a || l.algo.b))
        rows.push(['algorithm', `a: ${l.algo.a || '–'}; b: ${l.algo.b || '–'}`]);
    return h('dl', {class: 'metrics', id: 'layer-metrics'},
             rows.map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, v))));
}

function histTable(counts) {
    const rows = counts.map((c, k) => (c ? h('tr', {},
        h('th', {scope: 'row'}, k === 0 ? '0 (equal)' : k === 1 ? '1' : `${2 ** (k - 1)}–${2 ** k - 1}`),
        h('td', {class: 'num'}, fmtInt(c))) : null)).filter(Boolean);
    const table = h('table', {class: 'compact'}, h('thead', {}, h('tr', {},
        h('th', {scope: 'col'}, 'ULP distance'), h('th', {scope: 'col'}, 'values'))),
                    h('tbody', {}, rows));
    return h('details', {}, h('summary', {}, 'The histogram as a table'), table,
             domTableExports('ulp-histogram', table));
}

// The values around the largest difference (same last-axis row), and the largest
// differences of the whole tensor; with a truth tensor T its values too.
function valuesSection(box, l, A, B, T) {
    clear(box);
    const n = Math.min(A.size, B.size);
    const shape = A.shape;
    const last = shape.length ? shape[shape.length - 1] || 1 : 1;
    const at = Math.max(0, Math.min(n - 1, l.max_abs_index ?? 0));
    const rowStart = at - (at % last);
    const from = Math.max(rowStart, at - WINDOW), to = Math.min(rowStart + last, at + WINDOW + 1, n);
    const withTruth = T && T.size === n;
    const row = (i, hl) => {
        const va = valueAt(A, i), vb = valueAt(B, i);
        const ulp = ulpDistance(A, B, i);
        return h('tr', {class: hl ? 'max-row' : null, 'data-index': i},
                 h('th', {scope: 'row'}, '[' + unravel(i, shape).join(', ') + ']'),
                 h('td', {class: 'num mono'}, fmtValue(va, A.dtype)),
                 h('td', {class: 'num mono'}, fmtValue(vb, B.dtype)),
                 withTruth ? h('td', {class: 'num mono'}, fmtValue(valueAt(T, i), T.dtype)) : null,
                 h('td', {class: 'num mono'}, fmtNum(va - vb, 4)),
                 h('td', {class: 'num'}, ulp === null ? '–' : fmtInt(ulp)));
    };
    const head = h('thead', {}, h('tr', {}, ['index', 'a', 'b', withTruth ? 'truth' : null, 'a − b', 'ULP']
        .filter(Boolean).map((t) => h('th', {scope: 'col'}, t))));
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
    const topTable = top.length ? h('table', {class: 'values', id: 'values-largest'},
        h('caption', {}, `The ${top.length} elements with the largest |a − b|.`),
        head.cloneNode(true), h('tbody', {}, top.map((t) => row(t.i, t.i === at)))) : null;
    const aroundTable = h('table', {class: 'values', id: 'values-table'},
        h('caption', {}, `Elements ${from}–${to - 1} (flat) of the row that holds the ` +
          `largest difference, at flat index ${at}; ${A.dtype} a, ${B.dtype} b` +
          (withTruth ? `, ${T.dtype} truth.` : '.')),
        head, h('tbody', {}, around));
    box.append(
        h('div', {class: 'section-head'}, h('h3', {}, 'Around the largest difference'),
          domTableExports('values-around', aroundTable)),
        h('div', {class: 'table-wrap'}, aroundTable),
        topTable ? h('div', {class: 'section-head'}, h('h3', {}, 'The largest differences'),
                     domTableExports('values-largest', topTable)) : h('h3', {}, 'The largest differences'),
        topTable ? h('div', {class: 'table-wrap'}, topTable) : h('p', {}, 'The two tensors are equal.'));
    if (T && !withTruth)
        box.append(message('info', `The truth's tensor has ${T.size} elements, not ${n}: not shown.`));
}

// The two runs' value histograms side by side, and a against b.
function distributionSection(box, A, B) {
    const width = Math.max(320, Math.min(1100, box.clientWidth || 960));
    const hist = valueHistograms(A, B, {width, valueAt});
    const sc = scatterAB(A, B, {width, valueAt});
    box.append(
        h('h3', {}, 'Values of a and of b'),
        h('figure', {class: 'chart-box'}, hist, h('figcaption', {}, 'The same bins in both panels. ',
          svgExport('value-histograms', () => hist))),
        h('h3', {}, 'a against b'),
        h('figure', {class: 'chart-box'}, sc.svg, h('figcaption', {id: 'scatter-caption'},
          sc.sampled ? `Sampled: ${fmtInt(sc.shown)} of ${fmtInt(sc.total)} values, every ` +
                       `${fmtInt(Math.round(sc.total / sc.shown))}th element (evenly spread). `
                     : `All ${fmtInt(sc.total)} values. `,
          'Left: a against b (on the diagonal when equal); right: a − b against b. ',
          svgExport('scatter', () => sc.svg))));
}

// For a discontinuous or ill-conditioned op: its input elements nearest the step or pole.
function nearSection(box, l, op, info, inA, inB, A, B, names) {
    const rule = NEAR[l.op];
    const what = info.discontinuous ? 'discontinuous' : 'ill-conditioned';
    box.append(h('h3', {}, `Inputs nearest the ${rule ? rule.kind : 'step or pole'}`));
    if (!rule) {
        box.append(message('info', `${l.op} is ${what} (ops.def), but this dashboard does not know ` +
            'where its step or pole lies; the daemon\'s count of inputs near a boundary is in the metrics.'));
        return;
    }
    const near = nearest(l.op, inB, B.size, 12);
    if (!near) {
        box.append(message('info', `The input${rule.inputs > 1 ? 's' : ''} of ${l.name} (` +
            `${names.join(', ')}) do not have its ${fmtInt(B.size)} elements one to one (broadcast): ` +
            'not matched element by element.'));
        return;
    }
    const eps = l.boundary_distance;
    const within = Number.isFinite(eps) ? countWithin(l.op, inB, B.size, eps) : null;
    const rows = near.map(({i, d}) => {
        const oa = valueAt(A, i), ob = valueAt(B, i);
        return h('tr', {class: oa !== ob ? 'flipped' : null},
            h('th', {scope: 'row'}, '[' + unravel(i, B.shape).join(', ') + ']'),
            inA.map((t) => h('td', {class: 'num mono'}, fmtValue(valueAt(t, i), t.dtype))),
            inB.map((t) => h('td', {class: 'num mono'}, fmtValue(valueAt(t, i), t.dtype))),
            h('td', {class: 'num'}, fmtNum(d)),
            h('td', {class: 'num mono'}, fmtValue(oa, A.dtype)),
            h('td', {class: 'num mono'}, fmtValue(ob, B.dtype)),
            h('td', {}, oa !== ob ? h('span', {class: 'mark amp'}, 'differs') : 'same'));
    });
    const inHead = (side) => names.slice(0, rule.inputs).map((nm) => h('th', {scope: 'col'}, `${nm} (${side})`));
    const table = h('table', {class: 'values', id: 'near-table'},
        h('caption', {}, `The ${near.length} elements whose input lies nearest ${rule.where}, measured ` +
          `on run b's input (the reference, as the daemon measures)` +
          (within !== null ? `; ${fmtInt(within)} of ${fmtInt(B.size)} lie within ${fmtNum(eps)} ` +
                             '(the largest difference of the input) of it.' : '.')),
        h('thead', {}, h('tr', {}, h('th', {scope: 'col'}, 'index'), inHead('a'), inHead('b'),
                         h('th', {scope: 'col'}, 'distance'), h('th', {scope: 'col'}, 'output a'),
                         h('th', {scope: 'col'}, 'output b'), h('th', {scope: 'col'}, 'outputs'))),
        h('tbody', {}, rows));
    box.append(h('div', {class: 'section-head'}, h('span', {}),
                 domTableExports('inputs-nearest-' + l.name, table)),
               h('div', {class: 'table-wrap'}, table));
}

async function fetchNpy(run, rec, ctx) {
    return parseNpy(await apiGetBytes(layerNpyPath(run.id, rec.index), {signal: ctx.signal}));
}

async function loadValues(box, l, sides, ctx) {
    const {ra, rb, rt, recA, recB} = sides;
    clear(box).append(message('info', 'Reading the tensors…'));
    try {
        const recT = rt ? rt.layers.find((x) => x.name === l.name) : null;
        const [A, B, T] = await Promise.all([fetchNpy(ra, recA, ctx), fetchNpy(rb, recB, ctx),
                                             recT ? fetchNpy(rt, recT, ctx) : null]);
        if (!ctx.live())
            return;
        valuesSection(box, l, A, B, T);
        distributionSection(box, A, B);
        const ops = await getOps().catch(() => new Map());
        const info = ops.get(l.op);
        if (info && (info.discontinuous || info.ill_conditioned)) {
            const names = recB.inputs || [];
            const recsOf = (run) => names.map((nm) => run.layers.find((x) => x.name === nm));
            const ia = recsOf(ra), ib = recsOf(rb);
            if (ia.some((x) => !x) || ib.some((x) => !x) || !names.length) {
                box.append(h('h3', {}, 'Inputs nearest the step or pole'),
                    message('info', `${l.op} is ${info.discontinuous ? 'discontinuous' : 'ill-conditioned'}` +
                            `, but the runs do not record its inputs as layers (${names.join(', ') || 'none named'}).`));
                return;
            }
            const [inA, inB] = await Promise.all([Promise.all(ia.map((r) => fetchNpy(ra, r, ctx))),
                                                  Promise.all(ib.map((r) => fetchNpy(rb, r, ctx)))]);
            if (ctx.live())
                nearSection(box, l, l.op, info, inA, inB, A, B, names);
        }
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

// fp: a layer judged from fingerprints: what that means, and "fetch this layer" for each side
// without its tensor (POST /api/v1/runs/{id}/requests, an agent token; gpudiff-agent
// fetch-layers sends it, and the diff then measures the layer in full).
function sampledSection(l, q, ra, rb, recA, recB) {
    const box = h('section', {'aria-labelledby': 'sampled-h'}, h('h2', {id: 'sampled-h'}, 'Sampled'),
        h('p', {id: 'sampled'}, `Judged from fingerprints: the figures are over ${fmtInt(l.samples)} ` +
          `sampled values, and max |a−b| ${fmtNum(l.max_abs)} is a lower bound (from the ` +
          `${l.max_abs_from || 'sample'}). ` + (l.verdict === 'noise' ? 'Noise holds for the sample only.' : '')));
    for (const [side, run, rec] of [['a', ra, recA], ['b', rb, recB]]) {
        if (!rec || rec.present !== false)
            continue;
        const status = h('span', {class: 'muted'}, (l.fetch || []).includes(side) ? ' asked for by the diff' : '');
        const button = h('button', {type: 'button', id: 'fetch-' + side, onclick: async () => {
            button.disabled = true;
            try {
                const r = await apiPost(`runs/${run.id}/requests`, null, {index: rec.index});
                status.textContent = r.added ? ' asked for: gpudiff-agent fetch-layers sends it'
                    : ' already asked for';
            } catch (e) {
                status.textContent = ' ' + e.message;
                button.disabled = false;
            }
        }}, `Fetch this layer (${side})`);
        box.append(h('p', {}, button, status));
    }
    return box;
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
    root.append(h('div', {class: 'title-row'}, title, h('div', {class: 'share-bar'}, copyLinkButton())));
    if (!q.a || !q.b || !name) {
        root.append(message('error', 'A layer view needs a, b and name: open it from a diff.'));
        return;
    }
    // The diff's summary and this layer's row (not the whole diff), and the runs' records.
    let d, l, ra, rb, rt;
    try {
        [d, l, ra, rb, rt] = await Promise.all([getDiffSummary(q, {signal: ctx.signal}),
                                                findLayer(q, name, ctx.signal), getRun(q.a), getRun(q.b),
                                                q.truth ? getRun(q.truth).catch(() => null) : null]);
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        root.append(message('error', e.message));
        return;
    }
    if (!ctx.live())
        return;
    if (!l) {
        root.append(message('error', `The diff has no layer named ${name}.`));
        return;
    }
    const recA = ra.layers[l.index_a], recB = rb.layers[l.index_b];
    const st = startOf(d);
    title.append(` (${l.op || '?'}) `, verdictBadge(l.verdict),
                 st && st.layer.name === l.name ? h('span', {class: 'mark first' + (st.known ? '' : ' observed')},
                                          st.known ? 'first divergent' : 'first observed') : '',
                 l.amplifier ? h('span', {class: 'mark amp'}, 'amplifier') : '',
                 d.cause === l.name ? h('span', {class: 'mark cause'}, 'cause') : '');
    if (l.verdict === 'incomparable') {
        root.append(message('info', l.note || 'These layers cannot be compared.'));
        return;
    }
    if (l.sampled)
        root.append(sampledSection(l, q, ra, rb, recA, recB));
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
        h('figure', {class: 'chart-box'}, ulpHistogram(l.ulp_hist || [], {width: root.clientWidth}),
          h('figcaption', {}, 'How many values lie how many representable numbers apart (log scale). ',
            svgExport('ulp-histogram', () => root.querySelector('svg.hist-chart')))),
        histTable(l.ulp_hist || [])));
    const valuesBox = h('div', {id: 'values'});
    root.append(h('section', {'aria-labelledby': 'values-h'}, h('h2', {id: 'values-h'}, 'Values side by side'),
        h('p', {class: 'downloads'}, 'Download ',
          downloadLink(ra, recA, `a: ${fileName(ra, recA)}`, 'download-a'), ' ',
          downloadLink(rb, recB, `b: ${fileName(rb, recB)}`, 'download-b')),
        valuesBox));
    const sides = {ra, rb, rt, recA, recB};
    const bytes = tensorBytes(recA) + tensorBytes(recB);
    if ((recA && recA.present === false) || (recB && recB.present === false)) {
        valuesBox.append(message('info', 'A side holds only its fingerprint: fetch the layer first.'));
    } else if (bytes <= AUTO_LOAD_BYTES) {
        await loadValues(valuesBox, l, sides, ctx);
    } else {
        valuesBox.append(h('button', {type: 'button', onclick: () => loadValues(valuesBox, l, sides, ctx)},
                           `Read both tensors (${fmtNum(bytes / 1048576)} MiB)`));
    }
}
