// views/diff.js: two runs layer by layer (GET /api/v1/diff), for networks of a dozen or
// thousands of layers: the summary (first divergent layer, amplifiers, the output, the
// truth), the divergence along the network (an overview strip of every layer with a brush,
// and the chart of the brushed range against the noise band), the per-layer table (folded,
// searchable, with a jump to the first divergent layer), the daemon's explanation, the two
// environments side by side, and the ways to share it: a link that keeps the range and the
// filters, CSV/JSON/SVG, and the diff as a bug report in Markdown.
import {h, message, fmtNum, fmtInt, fmtTime, shortId, runLabel, routeHref, replaceHash}
    from '../dom.js';
import {apiUrl, getRun, getDiff, getModels} from '../api.js';
import {layerChart, overviewStrip, LAYER_METRICS, extraLines} from '../layerchart.js';
import {actionButton, copyLinkButton, copyText, domTableExports, download, svgExport}
    from '../share.js';
import {runPicker} from '../runpicker.js';
import {warm as warmLayout} from '../graphlayout.js';
import {layerTable} from './diff_table.js';
import {bugReport} from './diff_report.js';

const WINDOW = 150; // layers the chart shows at first when there are more

function readParams(p) {
    const int = (k) => (p.has(k) && Number.isInteger(Number(p.get(k))) ? Number(p.get(k)) : null);
    return {a: p.get('a') || '', b: p.get('b') || '', truth: p.get('truth') || '',
            atol: p.get('atol') || '', rtol: p.get('rtol') || '',
            metric: LAYER_METRICS[p.get('metric')] ? p.get('metric') : 'err',
            from: int('from'), to: int('to'), q: p.get('q') || '', op: p.get('op') || '',
            verdict: p.get('verdict') || '', fold: p.get('fold') !== '0'};
}

export function diffHref(q, changes) {
    const n = {...q, ...changes};
    return routeHref('/diff', {a: n.a, b: n.b, truth: n.truth, atol: n.atol, rtol: n.rtol,
                               metric: n.metric === 'err' ? '' : n.metric, from: n.from, to: n.to,
                               q: n.q, op: n.op, verdict: n.verdict, fold: n.fold === false ? '0' : ''});
}

export function layerHref(q, l) {
    return routeHref('/layer', {a: q.a, b: q.b, truth: q.truth, atol: q.atol, rtol: q.rtol,
                                name: l.name});
}

export function graphHref(q) {
    return routeHref('/graph', {a: q.a, b: q.b, truth: q.truth, atol: q.atol, rtol: q.rtol});
}

// The form that picks a, b, truth by searching all runs (of one model, or of all), and the
// tolerances.
async function pickerForm(q, model) {
    const models = await getModels().catch(() => []);
    const modelSel = h('select', {id: 'd-model'}, h('option', {value: ''}, 'any model'),
                       models.map((m) => h('option', {value: m.name, selected: m.name === model},
                                           m.name)));
    const pick = (id, label, value, optional) => {
        const p = runPicker({id, label, value, optional});
        p.model = () => modelSel.value;
        return p;
    };
    const a = pick('d-a', 'Run a (actual)', q.a), b = pick('d-b', 'Run b (reference)', q.b);
    const t = pick('d-truth', 'Truth (optional)', q.truth, true);
    const atol = h('input', {id: 'd-atol', value: q.atol, inputmode: 'decimal', placeholder: '1e-8',
                             size: 8});
    const rtol = h('input', {id: 'd-rtol', value: q.rtol, inputmode: 'decimal', placeholder: '1e-5',
                             size: 8});
    const problem = h('p', {class: 'hint', 'aria-live': 'polite'});
    const form = h('form', {class: 'filters', 'aria-label': 'Runs to compare'},
        h('div', {class: 'field'}, h('label', {for: 'd-model'}, 'Search in'), modelSel),
        a.el, b.el, t.el,
        h('div', {class: 'field'}, h('label', {for: 'd-atol'}, 'atol'), atol),
        h('div', {class: 'field'}, h('label', {for: 'd-rtol'}, 'rtol'), rtol),
        h('div', {class: 'field field-buttons'}, h('button', {type: 'submit', class: 'primary'}, 'Compare')),
        problem);
    form.addEventListener('submit', (e) => {
        e.preventDefault();
        if (!a.value || !b.value) {
            problem.textContent = 'Pick run a and run b: type part of an id, a GPU, a host or a knob.';
            return;
        }
        location.hash = diffHref(q, {a: a.value, b: b.value, truth: t.value,
                                     atol: atol.value.trim(), rtol: rtol.value.trim(),
                                     from: null, to: null});
    });
    return form;
}

function card(title, ...body) {
    return h('div', {class: 'card'}, h('h3', {}, title), ...body);
}

// "5.3× what rounding and its inputs allow", from the envelope (never a ratio below 1).
function excess(l) {
    if (l.envelope > 0 && l.err > l.envelope)
        return `${fmtNum(l.err / l.envelope)}× what rounding and its inputs allow`;
    if (l.envelope_median > 0 && l.err_median > l.envelope_median)
        return `median error ${fmtNum(l.err_median / l.envelope_median)}× its bound`;
    return 'beyond noise';
}

function precision(l) {
    if (l.sparse)
        return `${fmtInt(l.values_differ)} of ${fmtInt(l.count)} values differ (sparse)`;
    return `${fmtInt(l.values_differ)} of ${fmtInt(l.count)} values differ` +
        (l.arithmetic ? `; ${fmtNum(l.bits)} bits (${l.arithmetic})` : '');
}

function summary(d, q) {
    const layers = d.layers;
    const byName = new Map(layers.map((l) => [l.name, l]));
    const first = d.first_divergent ? byName.get(d.first_divergent) : null;
    const observed = d.first_observed ? byName.get(d.first_observed) : null;
    const m = d.matched || {};
    const total = Math.max(m.of_a || 0, m.of_b || 0);
    const partial = m.layers !== undefined && m.layers < total
        ? h('p', {id: 'matched'}, `${fmtInt(m.layers)} of ${fmtInt(total)} layers matched` +
            (d.mode === 'models' ? ' by output tensor names (two model files)' : ''))
        : null;
    const cards = [];
    if (first && d.start_known !== false)
        cards.push(card('First divergent layer',
            h('p', {class: 'big first'}, h('a', {href: layerHref(q, first), id: 'first-divergent'},
                                            first.name), ` (${first.op || 'op not recorded'})`),
            h('p', {}, `${excess(first)}; ${precision(first)}`), partial));
    else if (observed)
        cards.push(card('First observed difference',
            h('p', {class: 'big first'}, h('a', {href: layerHref(q, observed), id: 'first-observed'},
                                            observed.name), ` (${observed.op || 'op not recorded'})`),
            h('p', {}, `${excess(observed)}; ${precision(observed)}`),
            partial, h('p', {class: 'muted'}, 'The start may lie before it, in layers that were ' +
                                              'not compared.')));
    else
        cards.push(card('First divergent layer',
            h('p', {class: 'big', id: 'first-divergent'}, 'none: every compared layer is within noise'),
            partial));
    if (d.replay)
        cards.push(card('Cause (from the replay)', d.cause
            ? [h('p', {class: 'big'}, h('a', {href: layerHref(q, byName.get(d.cause)), id: 'cause'},
                                        d.cause)),
               h('p', {}, 'own error in: ' + layers.filter((l) => l.own && l.own.verdict === 'divergent')
                   .map((l) => l.name).join(', '))]
            : h('p', {id: 'cause'}, 'no layer makes an error of its own beyond its bound')));
    const amps = (d.amplifiers || []).map((n) => byName.get(n)).filter(Boolean);
    cards.push(card('Amplifiers', amps.length
        ? h('ul', {class: 'amps', id: 'amplifiers'}, amps.map((l) => h('li', {},
            h('a', {href: layerHref(q, l)}, l.name), ` (${l.op}) ×${fmtNum(l.growth)}`,
            l.flipped ? `, ${fmtInt(l.flipped)} outputs flipped` : '',
            l.conditioning ? `, smallest |x| ${fmtNum(l.conditioning.x_min)}` : '')))
        : h('p', {id: 'amplifiers'}, 'none')));
    const compared = layers.filter((l) => l.verdict !== 'incomparable');
    const last = compared[compared.length - 1];
    if (last)
        cards.push(card('At the output', h('p', {}, h('strong', {}, last.name), ': max |a−b| ',
            h('strong', {}, fmtNum(last.max_abs)), `; ${fmtInt(last.mismatches)} of ` +
            `${fmtInt(last.count)} values outside atol ${fmtNum(d.atol)} + rtol ${fmtNum(d.rtol)}` +
            `; ${fmtInt(last.mismatch_rows)} rows differ`)));
    if (d.truth) {
        const o = d.truth_outcome;
        const t = last && last.truth;
        const words = o === 'a' || o === 'b' ? [h('strong', {}, 'run ' + o), ' is right: within its ' +
                                               'rounding bound wherever the runs differ']
            : o === 'both' ? 'both runs are right'
            : o === 'neither' ? [h('strong', {}, 'neither run'), ' is right']
            : 'the truth has none of these layers';
        cards.push(card('Against the truth', h('p', {id: 'truth-outcome'}, words,
            ` (truth: ${d.truth.backend}).`),
            t ? h('p', {}, `At ${last.name}: run a ${fmtNum(t.err_a)} (${fmtInt(t.rows_a)} rows off), ` +
                           `run b ${fmtNum(t.err_b)} (${fmtInt(t.rows_b)} rows off); closer: ${t.closer}.`)
              : null));
    }
    return h('section', {class: 'cards', 'aria-label': 'Summary'}, cards);
}

function metricSwitch(q) {
    return h('div', {class: 'segmented', role: 'group', 'aria-label': 'Chart metric'},
             Object.entries(LAYER_METRICS).map(([key, m]) =>
                 h('a', {href: diffHref(q, {metric: key}), class: 'button',
                         'aria-current': key === q.metric ? 'true' : null}, m.label)));
}

// The facts of a run as flat "section.key" -> text, for the side-by-side table.
function flatFacts(run) {
    const out = new Map();
    if (!run)
        return out;
    out.set('backend', run.backend);
    out.set('created_at', run.created_at);
    out.set('model.name', run.model && run.model.name);
    out.set('model.sha256', run.model && run.model.sha256);
    out.set('input.sha256', run.input && run.input.sha256);
    for (const sec of ['env', 'knobs', 'labels'])
        for (const [k, v] of Object.entries(run[sec] || {}))
            out.set(`${sec}.${k}`, v === null ? 'null' : typeof v === 'object' ? JSON.stringify(v) : String(v));
    return out;
}

function envTable(d, runs) {
    const [ra, rb, rt] = runs;
    const fa = flatFacts(ra), fb = flatFacts(rb), ft = flatFacts(rt);
    const keys = [...new Set([...fa.keys(), ...fb.keys(), ...ft.keys()])];
    // The daemon's statuses: "differs", or "not recorded" (one run lacks it: no difference).
    const status = new Map((d.env_diff || []).map((e) => [e.key, e.status || 'differs']));
    const ignore = new Set(['created_at']); // always differs, shown but not marked
    const rows = keys.map((k) => {
        const va = fa.get(k), vb = fb.get(k);
        const st = status.get(k) || (!ignore.has(k) && va !== undefined && vb !== undefined &&
                                     va !== vb ? 'differs' : '');
        const differs = st === 'differs';
        return h('tr', {class: differs ? 'differs' : null},
                 h('th', {scope: 'row'}, k),
                 h('td', {}, va ?? h('span', {class: 'muted'}, '(not recorded)')),
                 h('td', {}, vb ?? h('span', {class: 'muted'}, '(not recorded)')),
                 rt ? h('td', {}, ft.get(k) ?? h('span', {class: 'muted'}, '(not recorded)')) : null,
                 h('td', {class: 'differs-cell'}, differs ? h('span', {class: 'mark differs'}, 'differs')
                     : st ? h('span', {class: 'muted'}, st) : ''));
    });
    const nDiffer = (d.env_diff || []).filter((e) => (e.status || 'differs') === 'differs').length;
    // Differences first: they are what the eye should find.
    rows.sort((x, y) => (y.classList.contains('differs') ? 1 : 0) - (x.classList.contains('differs') ? 1 : 0));
    return h('div', {class: 'table-wrap'}, h('table', {class: 'env', id: 'env-table'},
        h('caption', {}, `Environments and knobs: ${nDiffer} ` +
          `difference${nDiffer === 1 ? '' : 's'} between a and b, listed first (a key one run ` +
          'does not record is no difference)'),
        h('thead', {}, h('tr', {}, h('th', {scope: 'col'}, 'Key'),
            h('th', {scope: 'col'}, 'Run a'), h('th', {scope: 'col'}, 'Run b'),
            rt ? h('th', {scope: 'col'}, 'Truth') : null, h('th', {scope: 'col'}, 'Differs'))),
        h('tbody', {}, rows)));
}

// The range the chart shows at first: everything, or a window from just before the first
// divergent layer when there are many.
function initialRange(d, q) {
    const n = d.layers.length;
    if (q.from !== null && q.to !== null && q.from >= 0 && q.to > q.from && q.to <= n)
        return [q.from, q.to];
    if (n <= WINDOW)
        return [0, n];
    const f = d.layers.findIndex((l) => l.first_divergent);
    if (f < 0)
        return [0, n];
    const from = Math.max(0, Math.min(n - WINDOW, f - 25));
    return [from, from + WINDOW];
}

function chartSection(d, q, setState, signal) {
    const n = d.layers.length;
    let [from, to] = initialRange(d, q);
    const box = h('div', {class: 'chart-frame'});
    const overBox = h('div', {class: 'overview-frame'});
    const rangeNote = h('span', {class: 'hint', id: 'chart-range', 'aria-live': 'polite'});
    let chart = null, overview = null;
    const width = () => Math.max(300, Math.min(1400, box.clientWidth || 960));
    const height = () => (width() < 560 ? 300 : 360);
    const drawChart = () => {
        chart = layerChart(d, q.metric, (l) => layerHref(q, l), {from, to, width: width(),
                                                                height: height()});
        box.replaceChildren(chart);
        rangeNote.textContent = from === 0 && to === n ? `All ${fmtInt(n)} layers.`
            : `Layers ${fmtInt(from + 1)}–${fmtInt(to)} of ${fmtInt(n)}.`;
    };
    const setRange = (a, b, final) => {
        from = a;
        to = b;
        drawChart();
        if (overview)
            overview.setRange(a, b);
        if (final)
            setState({from: a === 0 && b === n ? null : a, to: a === 0 && b === n ? null : b});
    };
    const drawOverview = () => {
        if (n < 30) {
            overBox.replaceChildren();
            overview = null;
            return;
        }
        overview = overviewStrip(d, q.metric, {from, to, width: width(), onChange: setRange});
        overBox.replaceChildren(overview);
    };
    const first = d.layers.findIndex((l) => l.first_divergent);
    const allButton = h('button', {type: 'button', class: 'small', id: 'range-all'}, 'Show all layers');
    allButton.addEventListener('click', () => setRange(0, n, true));
    const firstButton = h('button', {type: 'button', class: 'small', id: 'range-first',
                                     disabled: first < 0}, 'Zoom to the first divergent');
    firstButton.addEventListener('click', () => {
        const w = Math.min(n, 60), a = Math.max(0, Math.min(n - w, first - 10));
        setRange(a, a + w, true);
    });
    const extras = extraLines(d, q.metric);
    const section = h('section', {'aria-labelledby': 'chart-h', class: 'along'},
        h('div', {class: 'section-head'}, h('h2', {id: 'chart-h'}, 'Along the network'), metricSwitch(q)),
        n >= 30 ? h('p', {class: 'hint'}, 'The strip shows all layers: drag the window (or focus it ' +
                    'and use the arrow keys, Shift to resize) to pick the layers the chart shows.') : null,
        overBox,
        h('figure', {class: 'chart-box'}, box,
          h('figcaption', {}, 'Log scale. Shaded: the noise band. Ringed: ',
            h('span', {class: 'key-first'}, 'first divergent layer'), '; triangles: ',
            h('span', {class: 'key-amp'}, 'amplifiers'),
            extras.length ? ['; lines: ', extras.map((e, i) => [i ? ', ' : '',
                h('span', {class: 'key-line ' + e.key}, e.label)])] : '',
            '. A point opens the layer; focus one for its values. ', rangeNote, ' ',
            n >= 30 ? [allButton, ' ', firstButton, ' '] : '',
            svgExport('diff-chart', () => chart))));
    // Drawn once the section is on the page and has a width.
    section.draw = () => {
        drawOverview();
        drawChart();
    };
    let t = 0;
    window.addEventListener('resize', () => {
        clearTimeout(t);
        t = setTimeout(section.draw, 150);
    }, {signal});
    section.showLayer = (name) => {
        const i = d.layers.findIndex((l) => l.name === name);
        if (i >= 0 && (i < from || i >= to)) {
            const w = to - from, a = Math.max(0, Math.min(n - w, i - Math.floor(w / 2)));
            setRange(a, a + w, true);
        }
    };
    return section;
}

export async function render(root, ctx) {
    const q = readParams(ctx.params);
    document.title = 'gpudiff: diff';
    if (!q.a || !q.b) {
        root.append(h('h1', {}, 'Diff'),
                    h('p', {}, 'Choose two runs; a third, e.g. a cpu64 run, says which of them ' +
                      'is right. Search by id, model, GPU, host or knob (tf32=true).'));
        let model = ctx.params.get('model') || '';
        if (!model && (q.a || q.b))
            model = await getRun(q.a || q.b).then((r) => r.model.name).catch(() => '');
        root.append(await pickerForm(q, model));
        return;
    }
    const title = h('h1', {}, 'Diff ', h('code', {}, shortId(q.a)), ' vs ', h('code', {}, shortId(q.b)));
    const shareBar = h('div', {class: 'share-bar', role: 'group', 'aria-label': 'Share this diff'});
    root.append(h('div', {class: 'title-row'}, title, shareBar));
    const status = message('info', 'Comparing the runs layer by layer…');
    root.append(status);
    let d, runs;
    try {
        [d, runs] = await Promise.all([
            getDiff(q, {signal: ctx.signal}),
            Promise.all([q.a, q.b, q.truth].map((id) => (id ? getRun(id).catch(() => null) : null))),
        ]);
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        status.replaceWith(message('error', `Diff: ${e.message}`,
            e.status === 409 ? ' (a run is still uploading: try again when it is finished)' : ''));
        root.append(await pickerForm(q, ''));
        return;
    }
    if (!ctx.live())
        return;
    status.remove();
    const model = (d.a && d.a.model) || '';
    document.title = `gpudiff: diff ${shortId(q.a)} vs ${shortId(q.b)} (${model})`;
    const setState = (changes) => {
        Object.assign(q, changes);
        replaceHash(diffHref(q, {}));
    };
    const apiLink = apiUrl('diff', {a: q.a, b: q.b, truth: q.truth || undefined,
                                    atol: q.atol || undefined, rtol: q.rtol || undefined}).href;
    const report = () => bugReport(d, runs, location.href, apiLink);
    shareBar.append(copyLinkButton(), ' ',
        actionButton('Copy as bug report', async () => ((await copyText(report()))
            ? 'Markdown copied' : 'copy refused: use "Download report"'), {id: 'copy-report'}), ' ',
        actionButton('Download report', () => {
            download(`gpudiff-${shortId(q.a)}-${shortId(q.b)}.md`, 'text/markdown', report());
            return '';
        }, {id: 'download-report'}), ' ',
        actionButton('Diff JSON', () => {
            download(`diff-${shortId(q.a)}-${shortId(q.b)}.json`, 'application/json',
                     JSON.stringify(d, null, 1) + '\n');
            return '';
        }, {'data-export': 'json'}));
    root.append(h('dl', {class: 'runs-compared'},
        h('dt', {}, 'a'), h('dd', {}, runLabel(runs[0] || d.a)),
        h('dt', {}, 'b'), h('dd', {}, runLabel(runs[1] || d.b)),
        d.truth ? [h('dt', {}, 'truth'), h('dd', {}, runLabel(runs[2] || d.truth))] : null,
        h('dt', {}, 'model'), h('dd', {}, model, ' · ', `${fmtInt(d.layers.length)} layers · `,
            h('a', {href: graphHref(q), id: 'graph-link'}, 'graph'), ' · ',
            h('a', {href: '#/matrix/' + encodeURIComponent(model)}, 'device matrix'), ' · ',
            h('a', {href: routeHref('/history/' + encodeURIComponent(model),
                                    {layer: d.first_divergent || ''})}, 'history'))));
    root.append(summary(d, q));
    const chart = chartSection(d, q, setState, ctx.signal);
    root.append(chart);
    chart.draw();
    const table = layerTable(d, q, (l) => layerHref(q, l), setState);
    root.append(h('section', {'aria-labelledby': 'layers-h'}, h('h2', {id: 'layers-h'}, 'Layers'),
                  table.el));
    const jump = root.querySelector('#jump-first');
    if (jump)
        jump.addEventListener('click', () => chart.showLayer(d.first_divergent));
    root.append(h('section', {'aria-labelledby': 'expl-h'}, h('h2', {id: 'expl-h'}, 'Explanation'),
                  h('p', {class: 'explanation', id: 'explanation'}, d.explanation || '–')));
    const env = envTable(d, runs);
    root.append(h('section', {'aria-labelledby': 'env-h'},
        h('div', {class: 'section-head'}, h('h2', {id: 'env-h'}, 'Environments'),
          domTableExports('environments', env.querySelector('table'))), env));
    const details = h('details', {class: 'change'}, h('summary', {}, 'Change runs or tolerances'));
    root.append(details);
    details.append(await pickerForm(q, model));
    root.append(h('p', {class: 'hint'}, `Tolerances: atol ${fmtNum(d.atol)}, rtol ${fmtNum(d.rtol)}. ` +
                  `Runs created ${fmtTime(d.a && d.a.created_at)} and ${fmtTime(d.b && d.b.created_at)}.`));
    // The graph view is one click away: its layout worker starts while the page is idle.
    if (d.layers.length > 30 && window.requestIdleCallback)
        requestIdleCallback(() => warmLayout(), {timeout: 3000});
}
