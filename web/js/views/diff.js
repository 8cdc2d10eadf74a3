// views/diff.js: two runs layer by layer (GET /api/v1/diff), for networks of a dozen or
// thousands of layers: the summary (the first divergent layer, or with partial data the first
// observed difference and how many layers were matched; two model files; the replay's cause;
// amplifiers; the output; who is right against the truth: a, b, both or neither), the
// divergence along the network (an overview strip of every layer with a brush, and the chart
// of the brushed range against the noise band), the per-layer table (folded, searchable, with
// a jump to where the difference starts), the daemon's explanation, the environments side by
// side (diff_env.js), and the ways to share it: a link that keeps the range and the filters,
// CSV/JSON/SVG, and the diff as a bug report in Markdown.
import {h, message, fmtNum, fmtInt, fmtTime, shortId, runLabel, routeHref, replaceHash}
    from '../dom.js';
import {apiUrl, getRun, getDiff, getModels} from '../api.js';
import {layerChart, overviewStrip, LAYER_METRICS, extraLines} from '../layerchart.js';
import {actionButton, copyLinkButton, copyText, domTableExports, download, svgExport}
    from '../share.js';
import {runPicker} from '../runpicker.js';
import {warm as warmLayout} from '../graphlayout.js';
import {layerTable} from './diff_table.js';
import {envTable} from './diff_env.js';
import {bugReport} from './diff_report.js';
import {matchInfo, matchWords, startOf, excess, precision, truthSummary, sideDistance,
        replayInfo, layerByName} from '../diff_facts.js';

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

function layerLink(q, l, id) {
    return h('a', {href: layerHref(q, l), id}, l.name);
}

// The start card: the first divergent layer, or, with partial data, the first observed
// difference and that the start may lie before it.
function startCard(d, q, mi) {
    const st = startOf(d);
    const matched = mi.partial && !mi.models ? h('p', {id: 'matched'}, matchWords(mi) + '.') : null;
    if (!st)
        return card('First divergent layer',
            h('p', {class: 'big', id: 'first-divergent'}, 'none: every compared layer is within noise'),
            matched);
    const l = st.layer;
    if (st.known)
        return card('First divergent layer',
            h('p', {class: 'big first'}, layerLink(q, l, 'first-divergent'), ` (${l.op || 'op not recorded'})`),
            h('p', {}, `${excess(l)}; ${precision(l)}`), matched);
    return card('First observed difference',
        h('p', {class: 'big first'}, layerLink(q, l, 'first-observed'), ` (${l.op || 'op not recorded'})`),
        h('p', {}, `${excess(l)}; ${precision(l)}`), matched,
        h('p', {class: 'start-unknown', id: 'start-unknown'},
          'The start may lie before it: ' + (mi.partial ? 'layers before it were not compared.'
              : 'what its inputs carried in was not compared.')),
        st.divergent ? h('p', {}, 'First layer whose inputs were compared and agree: ',
                         layerLink(q, st.divergent, 'first-divergent'), '.') : null);
}

// Two model files: which layers have no counterpart.
function modelsCard(d, mi) {
    const only = (side, names) => (names.length ? h('p', {}, `Only in run ${side}'s model file: `,
        h('span', {class: 'only-' + side}, names.join(', ')), ` (${fmtInt(names.length)}).`) : null);
    return card('Two model files', h('p', {id: 'models-matched'}, matchWords(mi) + '.'),
                only('a', mi.onlyA), only('b', mi.onlyB),
                !mi.onlyA.length && !mi.onlyB.length ? h('p', {}, 'Every layer has a counterpart.') : null);
}

function replayCard(d, q, ri) {
    const rep = ri.self ? 'Run a replays run b' : 'Replay ' + shortId(ri.id) + ' of run ' + shortId(ri.of);
    const words = ri.cause
        ? [h('p', {class: 'big'}, layerLink(q, ri.cause, 'cause'), ` (${ri.cause.op || 'op not recorded'})`),
           h('p', {}, 'the first layer whose own error exceeds its bound, however the error spreads after it.'),
           h('p', {id: 'own-layers'}, 'Own error beyond its bound: ', ri.own.map((l, i) => [i ? ', ' : '',
               h('a', {href: layerHref(q, l)}, l.name), ` (${fmtNum(l.own.bits)} bits` +
               (l.own.arithmetic ? `, ${l.own.arithmetic})` : ')')]),
             '; every other layer computes within its bound from the inputs it was given.')]
        : h('p', {id: 'cause'}, 'none: every layer computes within its bound from the inputs it was given');
    return card('Cause (from the replay)', words,
                h('p', {class: 'muted'}, `${rep}: each layer ran from the captured inputs, so its own ` +
                  'error is told apart from what it inherits.'));
}

function truthCard(d, ts) {
    const o = ts.outcome;
    const head = o === 'a' || o === 'b' ? [h('strong', {}, 'Run ' + o), ' is right']
        : o === 'both' ? [h('strong', {}, 'Both runs'), ' are right']
        : o === 'neither' ? [h('strong', {}, 'Neither run'), ' is right'] : 'Unknown';
    const l = ts.at;
    const side = (k) => h('li', {class: 'truth-' + k},
        `run ${k}: `, l.truth.right === k || l.truth.right === 'both' ? h('strong', {}, 'right') : 'not right',
        ', ' + sideDistance(l, k));
    return card('Against the truth',
        h('p', {id: 'truth-outcome', class: 'big outcome-' + o}, head),
        h('p', {id: 'truth-words'}, ts.scope.length
            ? `Against ${d.truth.backend}, over the ${fmtInt(ts.scope.length)} layer${ts.scope.length === 1 ? '' : 's'} ` +
              `${ts.diverged ? 'where the runs differ beyond noise' : 'compared'}: run a is right at ` +
              `${fmtInt(ts.nA)}, run b at ${fmtInt(ts.nB)} (right: within its rounding bound of the truth).`
            : 'The truth run has none of the compared layers, or none with a known bound.'),
        l ? [h('p', {}, `At ${l.name}:`), h('ul', {class: 'truth-sides'}, side('a'), side('b'))] : null,
        l && o !== 'both' && (l.truth.closer === 'a' || l.truth.closer === 'b') && o !== l.truth.closer
            ? h('p', {id: 'truth-closer'}, `Run ${l.truth.closer} is closer there, and still not right.`) : null);
}

function summary(d, q, runs) {
    const layers = d.layers;
    const mi = matchInfo(d, runs[2]);
    const cards = [];
    if (d.inputs_differ)
        cards.push(card('Different inputs', h('p', {id: 'inputs-differ', class: 'big'},
            'The runs had different inputs'), h('p', {}, 'Their input sha256 differ: every difference ' +
            'below may come from the inputs.')));
    cards.push(startCard(d, q, mi));
    if (mi.models)
        cards.push(modelsCard(d, mi));
    const ri = replayInfo(d);
    if (ri)
        cards.push(replayCard(d, q, ri));
    const amps = (d.amplifiers || []).map((n) => layerByName(d, n)).filter(Boolean);
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
    const ts = truthSummary(d);
    if (ts)
        cards.push(truthCard(d, ts));
    return h('section', {class: 'cards', 'aria-label': 'Summary'}, cards);
}

function metricSwitch(q) {
    return h('div', {class: 'segmented', role: 'group', 'aria-label': 'Chart metric'},
             Object.entries(LAYER_METRICS).map(([key, m]) =>
                 h('a', {href: diffHref(q, {metric: key}), class: 'button',
                         'aria-current': key === q.metric ? 'true' : null}, m.label)));
}

// Where the difference starts (or is first observed), as an index of d.layers; -1 for none.
function startIndex(d) {
    const st = startOf(d);
    return st ? d.layers.indexOf(st.layer) : -1;
}

// The range the chart shows at first: everything, or a window from just before the first
// divergent (or first observed) layer when there are many.
function initialRange(d, q) {
    const n = d.layers.length;
    if (q.from !== null && q.to !== null && q.from >= 0 && q.to > q.from && q.to <= n)
        return [q.from, q.to];
    if (n <= WINDOW)
        return [0, n];
    const f = startIndex(d);
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
        rangeNote.textContent = from === 0 && to === n ? (n === 1 ? 'One layer.' : `All ${fmtInt(n)} layers.`)
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
        if (!strip) {
            overBox.replaceChildren();
            overview = null;
            return;
        }
        overview = overviewStrip(d, q.metric, {from, to, width: width(), onChange: setRange});
        overBox.replaceChildren(overview);
    };
    const first = startIndex(d);
    const st = startOf(d);
    const startWord = st && !st.known ? 'first observed difference' : 'first divergent layer';
    // The strip for long networks, and for partial data: it shows which layers were compared.
    const strip = n >= 30 || (n > 1 && matchInfo(d, null).partial);
    const allButton = h('button', {type: 'button', class: 'small', id: 'range-all'}, 'Show all layers');
    allButton.addEventListener('click', () => setRange(0, n, true));
    const firstButton = h('button', {type: 'button', class: 'small', id: 'range-first',
                                     disabled: first < 0},
                            st && !st.known ? 'Zoom to the first observed' : 'Zoom to the first divergent');
    firstButton.addEventListener('click', () => {
        const w = Math.min(n, 60), a = Math.max(0, Math.min(n - w, first - 10));
        setRange(a, a + w, true);
    });
    const extras = extraLines(d, q.metric);
    const section = h('section', {'aria-labelledby': 'chart-h', class: 'along'},
        h('div', {class: 'section-head'}, h('h2', {id: 'chart-h'}, 'Along the network'), metricSwitch(q)),
        strip ? h('p', {class: 'hint'}, 'The strip shows all layers: drag the window (or focus it ' +
                    'and use the arrow keys, Shift to resize) to pick the layers the chart shows.') : null,
        overBox,
        h('figure', {class: 'chart-box'}, box,
          h('figcaption', {}, 'Log scale. Shaded: the noise band. Ringed: ',
            h('span', {class: 'key-first'}, startWord), '; triangles: ',
            h('span', {class: 'key-amp'}, 'amplifiers'),
            extras.length ? ['; lines: ', extras.map((e, i) => [i ? ', ' : '',
                h('span', {class: 'key-line ' + e.key}, e.label)])] : '',
            '. A point opens the layer; focus one for its values. ', rangeNote, ' ',
            strip ? [allButton, ' ', firstButton, ' '] : '',
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
                    h('p', {},
                      'Choose two runs; a third, e.g. a cpu64 run, says which of them ' +
                          'is right. Search by id, model, GPU, host or knob (tf32=on).'));
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
        // The replay the daemon used, for its command in the bug report.
        runs.push(d.replay ? await getRun(d.replay.id).catch(() => null) : null);
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
        h('dt', {}, 'model'), h('dd', {}, model, ' · ', `${fmtInt(d.layers.length)} layer${d.layers.length === 1 ? '' : 's'} · `,
            h('a', {href: graphHref(q), id: 'graph-link'}, 'graph'), ' · ',
            h('a', {href: '#/matrix/' + encodeURIComponent(model)}, 'device matrix'), ' · ',
            h('a', {href: routeHref('/history/' + encodeURIComponent(model),
                                    {layer: d.first_divergent || ''})}, 'history'))));
    root.append(summary(d, q, runs));
    const chart = chartSection(d, q, setState, ctx.signal);
    root.append(chart);
    chart.draw();
    const table = layerTable(d, q, (l) => layerHref(q, l), setState);
    const first = startIndex(d);
    root.append(h('section', {'aria-labelledby': 'layers-h'}, h('h2', {id: 'layers-h'}, 'Layers'),
                  table.el));
    const jump = root.querySelector('#jump-first');
    if (jump)
        jump.addEventListener('click', () => first >= 0 && chart.showLayer(d.layers[first].name));
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
