// views/diff.js: two runs layer by layer, for networks of a dozen or ten thousand layers,
// read as the daemon serves a diff's view (docs/SERVER.md, "Diff views"): its summary first
// (GET /api/v1/diff/summary: a few kilobytes per thousand layers), then the pages of rows on
// screen (GET /api/v1/diff/layers), so a view transfers well under 2 MB whatever the depth.
// It shows the daemon's explanation, the summary (the first divergent layer, or with partial
// data the first observed difference and how many layers were matched; two model files; the
// replay's cause; amplifiers; the output; who is right against the truth: a, b, both or
// neither), the divergence along the network (an overview strip of every layer with a brush,
// and the chart of the brushed range against the noise band), the per-layer table (virtual,
// folded, filtered on the daemon, with a jump to any layer and a link to its graph node), the
// environments side by side (diff_env.js), and the ways to share it: a link that keeps the
// range, the filters and the layer in view, CSV/JSON/SVG, and the diff as a bug report in
// Markdown. Progress is shown while the daemon compares the runs or makes the view.
import {h, message, fmtNum, fmtInt, fmtTime, shortId, runLabel, routeHref, replaceHash}
    from '../dom.js';
import {apiUrl, getRun, getDiff, getDiffSummary, getModels} from '../api.js';
import {layerChart, overviewStrip, LAYER_METRICS, extraLines} from '../layerchart.js';
import {actionButton, copyLinkButton, copyText, domTableExports, download, svgExport}
    from '../share.js';
import {runPicker} from '../runpicker.js';
import {warm as warmLayout} from '../graphlayout.js';
import {rowStore} from '../diff_rows.js';
import {layerTable} from './diff_table.js';
import {envTable} from './diff_env.js';
import {bugReport} from './diff_report.js';
import {matchInfo, matchWords, startOf, excess, precision, truthSummary, sideDistance,
        replayInfo, layerByName, listWords} from '../diff_facts.js';

const WINDOW = 150; // layers the chart shows at first when there are more

function readParams(p) {
    const int = (k) => (p.has(k) && Number.isInteger(Number(p.get(k))) ? Number(p.get(k)) : null);
    const metric = p.get('metric') === 'max_ulp' ? 'ulp' : p.get('metric'); // the old name
    return {a: p.get('a') || '', b: p.get('b') || '', truth: p.get('truth') || '',
            atol: p.get('atol') || '', rtol: p.get('rtol') || '',
            metric: LAYER_METRICS[metric] ? metric : 'err',
            from: int('from'), to: int('to'), q: p.get('q') || '', op: p.get('op') || '',
            verdict: p.get('verdict') || '', fold: p.get('fold') !== '0', at: p.get('at') || ''};
}

export function diffHref(q, changes) {
    const n = {...q, ...changes};
    return routeHref('/diff', {a: n.a, b: n.b, truth: n.truth, atol: n.atol, rtol: n.rtol,
                               metric: n.metric === 'err' ? '' : n.metric, from: n.from, to: n.to,
                               q: n.q, op: n.op, verdict: n.verdict, fold: n.fold === false ? '0' : '',
                               at: n.at});
}

export function layerHref(q, l) {
    return routeHref('/layer', {a: q.a, b: q.b, truth: q.truth, atol: q.atol, rtol: q.rtol,
                                name: l.name});
}

export function graphHref(q, find) {
    return routeHref('/graph', {a: q.a, b: q.b, truth: q.truth, atol: q.atol, rtol: q.rtol, find});
}

// The form that picks a, b, truth by searching all runs (of one model, or of all), and the
// tolerances. known: the runs' records where the page has them (the summary's runs), so that
// their labels need no run document (4 MB at 2,000 layers, 17 MB at 10,000).
async function pickerForm(q, model, known = {}) {
    const models = await getModels().catch(() => []);
    const modelSel = h('select', {id: 'd-model'}, h('option', {value: ''}, 'any model'),
                       models.map((m) => h('option', {value: m.name, selected: m.name === model},
                                           m.name)));
    const pick = (id, label, value, optional) => {
        const p = runPicker({id, label, value, optional, run: known[value] || null});
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
    if (!st && mi.layers === 0)
        return card('First divergent layer',
            h('p', {class: 'big', id: 'first-divergent'}, 'none compared: the runs share no layer'),
            h('p', {}, `Run a holds ${fmtInt(mi.ofA)} layer${mi.ofA === 1 ? '' : 's'}, run b ` +
              `${fmtInt(mi.ofB)}; none of them has a counterpart to compare with.`), matched);
    if (!st)
        return card('First divergent layer',
            h('p', {class: 'big', id: 'first-divergent'},
              `none: every compared layer is within noise (${fmtInt(mi.layers)} compared)`),
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
    const only = (side, names, total) => (total ? h('p', {}, `Only in run ${side}'s model file: `,
        h('span', {class: 'only-' + side}, listWords(names, total)), ` (${fmtInt(total)}).`) : null);
    return card('Two model files', h('p', {id: 'models-matched'}, matchWords(mi) + '.'),
                only('a', mi.onlyA, mi.nOnlyA), only('b', mi.onlyB, mi.nOnlyB),
                !mi.nOnlyA && !mi.nOnlyB ? h('p', {}, 'Every layer has a counterpart.') : null);
}

function replayCard(d, q, ri) {
    const rep = ri.self ? 'Run a replays run b' : 'Replay ' + shortId(ri.id) + ' of run ' + shortId(ri.of);
    const words = ri.cause
        ? [h('p', {class: 'big'}, layerLink(q, ri.cause, 'cause'), ` (${ri.cause.op || 'op not recorded'})`),
           h('p', {}, 'the first layer whose own error exceeds its bound, however the error spreads after it.'),
           h('p', {id: 'own-layers'}, 'Own error beyond its bound: ', ri.own.map((l, i) => [i ? ', ' : '',
               h('a', {href: layerHref(q, l)}, l.name), ` (${fmtNum(l.own.bits)} bits` +
               (l.own.arithmetic ? `, ${l.own.arithmetic})` : ')')]),
             ri.nOwn > ri.own.length ? ` and ${fmtInt(ri.nOwn - ri.own.length)} more` : '',
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
        h('p', {id: 'truth-words'}, ts.scope
            ? `Against ${d.truth.backend}, over the ${fmtInt(ts.scope)} layer${ts.scope === 1 ? '' : 's'} ` +
              `${ts.diverged ? 'where the runs differ beyond noise' : 'compared'}: run a is right at ` +
              `${fmtInt(ts.nA)}, run b at ${fmtInt(ts.nB)} (right: within its rounding bound of the truth).`
            : 'The truth run has none of the compared layers, or none with a known bound.'),
        l ? [h('p', {}, `At ${l.name}:`), h('ul', {class: 'truth-sides'}, side('a'), side('b'))] : null,
        l && o !== 'both' && (l.truth.closer === 'a' || l.truth.closer === 'b') && o !== l.truth.closer
            ? h('p', {id: 'truth-closer'}, `Run ${l.truth.closer} is closer there, and still not right.`) : null);
}

function summary(d, q, runs) {
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
    const moreAmps = (d.n_amplifiers || amps.length) - Math.min(amps.length, 8);
    cards.push(card('Amplifiers', amps.length
        ? h('ul', {class: 'amps', id: 'amplifiers'}, amps.slice(0, 8).map((l) => h('li', {},
            h('a', {href: layerHref(q, l)}, l.name), ` (${l.op}) ×${fmtNum(l.growth)}`,
            l.flipped ? `, ${fmtInt(l.flipped)} outputs flipped` : '',
            l.conditioning ? `, smallest |x| ${fmtNum(l.conditioning.x_min)}` : '')),
            moreAmps > 0 ? h('li', {}, h('a', {href: diffHref(q, {verdict: 'amplified'})},
                                         `and ${fmtInt(moreAmps)} more`)) : null)
        : h('p', {id: 'amplifiers'}, 'none')));
    const last = layerByName(d, d.last_compared);
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

// Where the difference starts (or is first observed), as a position in the diff; -1 for none.
function startIndex(d) {
    const st = startOf(d);
    return st ? st.layer.i : -1;
}

// The range the chart shows at first: everything, or a window from just before the first
// divergent (or first observed) layer, or the layer the address names, when there are many.
function initialRange(d, q) {
    const n = d.n_layers;
    if (q.from !== null && q.to !== null && q.from >= 0 && q.to > q.from && q.to <= n)
        return [q.from, q.to];
    if (n <= WINDOW)
        return [0, n];
    const f = startIndex(d);
    if (f < 0)
        return [0, WINDOW];
    const from = Math.max(0, Math.min(n - WINDOW, f - 25));
    return [from, from + WINDOW];
}

function chartSection(d, q, rows, setState, signal) {
    const n = d.n_layers;
    let [from, to] = initialRange(d, q);
    const box = h('div', {class: 'chart-frame'});
    const overBox = h('div', {class: 'overview-frame'});
    const rangeNote = h('span', {class: 'hint', id: 'chart-range', 'aria-live': 'polite'});
    let chart = null, overview = null, drawn = 0;
    const width = () => Math.max(300, Math.min(1400, box.clientWidth || 960));
    const height = () => (width() < 560 ? 300 : 360);
    // The chart of [from, to): its rows come from the daemon, page by page (a wide range on a
    // deep model: its first 2,000 layers, with a note).
    const CHART_MAX = 2000;
    const drawChart = async () => {
        const mine = ++drawn;
        const a = from, b = Math.min(to, from + CHART_MAX);
        rangeNote.textContent = from === 0 && to === n ? (n === 1 ? 'One layer.' : `All ${fmtInt(n)} layers.`)
            : `Layers ${fmtInt(from + 1)}–${fmtInt(to)} of ${fmtInt(n)}.`;
        if (b < to)
            rangeNote.textContent += ` The chart draws the first ${fmtInt(CHART_MAX)} of them.`;
        if (!chart)
            box.replaceChildren(h('p', {class: 'hint chart-loading'}, `Reading layers ${fmtInt(a + 1)}–${fmtInt(b)}…`));
        await rows.ensure(a, b, signal);
        if (mine !== drawn)
            return;
        const got = [];
        for (let i = a; i < b; i++)
            got.push(rows.get(i));
        chart = layerChart(d, q.metric, (l) => layerHref(q, l), {from: a, to: b, rows: got,
                                                                width: width(), height: height()});
        box.replaceChildren(chart);
    };
    const setRange = (a, b, final) => {
        from = a;
        to = b;
        const drawing = drawChart();
        if (overview)
            overview.setRange(a, b);
        if (final)
            setState({from: a === 0 && b === n ? null : a, to: a === 0 && b === n ? null : b});
        return drawing;
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
    const extras = extraLines(Object.values(d.layers || {}), q.metric);
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
        return drawChart();
    };
    let t = 0;
    window.addEventListener('resize', () => {
        clearTimeout(t);
        t = setTimeout(section.draw, 150);
    }, {signal});
    section.showLayer = (i) => {
        if (i >= 0 && (i < from || i >= to)) {
            const w = Math.min(to - from, WINDOW), a = Math.max(0, Math.min(n - w, i - Math.floor(w / 2)));
            setRange(a, a + w, true);
        }
    };
    return section;
}

// Progress while the daemon compares the runs (first visit) or makes the diff's view.
function progressBox() {
    const text = h('span', {id: 'diff-progress-text'}, 'Reading the diff…');
    const box = h('div', {class: 'progress-box', id: 'diff-progress', role: 'status', 'aria-live': 'polite'},
                  h('progress', {'aria-labelledby': 'diff-progress-text'}), text);
    const t0 = performance.now();
    const timer = setInterval(() => {
        const sec = (performance.now() - t0) / 1000;
        text.textContent = sec < 1 ? 'Reading the diff…'
            : `The daemon is comparing the runs layer by layer (not compared before): ${sec.toFixed(0)} s`;
    }, 500);
    box.done = () => {
        clearInterval(timer);
        box.remove();
    };
    return box;
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
    const started = performance.now();
    const title = h('h1', {}, 'Diff ', h('code', {}, shortId(q.a)), ' vs ', h('code', {}, shortId(q.b)));
    const shareBar = h('div', {class: 'share-bar', role: 'group', 'aria-label': 'Share this diff'});
    root.append(h('div', {class: 'title-row'}, title, shareBar));
    const progress = progressBox();
    root.append(progress);
    let d;
    try {
        d = await getDiffSummary(q, {signal: ctx.signal});
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        progress.done();
        root.append(message('error', `Diff: ${e.message}`,
            e.status === 409 ? ' (a run is still uploading: try again when it is finished)' : ''));
        root.append(await pickerForm(q, ''));
        return;
    }
    if (!ctx.live())
        return;
    progress.done();
    const r = d.runs || {};
    const runs = [r.a || null, r.b || null, r.truth || null, r.replay || null];
    const model = (d.a && d.a.model) || '';
    const n = d.n_layers;
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
        actionButton('Diff JSON', async () => {
            // The whole diff, every layer: read when asked for (megabytes at thousands of layers).
            const full = await getDiff(q, {signal: ctx.signal});
            download(`diff-${shortId(q.a)}-${shortId(q.b)}.json`, 'application/json',
                     JSON.stringify(full, null, 1) + '\n');
            return '';
        }, {'data-export': 'json'}));
    root.append(h('dl', {class: 'runs-compared'},
        h('dt', {}, 'a'), h('dd', {}, runLabel(runs[0] || d.a)),
        h('dt', {}, 'b'), h('dd', {}, runLabel(runs[1] || d.b)),
        d.truth ? [h('dt', {}, 'truth'), h('dd', {}, runLabel(runs[2] || d.truth))] : null,
        h('dt', {}, 'model'), h('dd', {}, model, ' · ', `${fmtInt(n)} layer${n === 1 ? '' : 's'} · `,
            h('a', {href: graphHref(q), id: 'graph-link'}, 'graph'), ' · ',
            h('a', {href: '#/matrix/' + encodeURIComponent(model)}, 'device matrix'), ' · ',
            h('a', {href: routeHref('/history/' + encodeURIComponent(model),
                                    {layer: d.first_divergent || ''})}, 'history'))));
    // The daemon's explanation first: the sentence that names the cause is on the first screen.
    root.append(h('section', {'aria-labelledby': 'expl-h', class: 'lead-explanation'},
                  h('h2', {id: 'expl-h', class: 'sr-only'}, 'Explanation'),
                  h('p', {class: 'explanation', id: 'explanation'}, d.explanation || '–')));
    root.append(summary(d, q, runs));
    const rows = rowStore(q);
    const chart = chartSection(d, q, rows, setState, ctx.signal);
    root.append(chart);
    const table = layerTable(d, q, {q, rows, hrefOf: (l) => layerHref(q, l), graphOf: (l) => graphHref(q, l.name),
                                    onState: setState, signal: ctx.signal});
    root.append(h('section', {'aria-labelledby': 'layers-h'}, h('h2', {id: 'layers-h'}, 'Layers'),
                  table.el));
    const env = envTable(d, runs);
    root.append(h('section', {'aria-labelledby': 'env-h'},
        h('div', {class: 'section-head'}, h('h2', {id: 'env-h'}, 'Environments'),
          domTableExports('environments', env.querySelector('table'))), env));
    // First paint: the summary, the strip and the table's frame are on the page.
    performance.measure('gd-paint diff', {start: started, end: performance.now()});
    const drawing = chart.draw();
    const jump = root.querySelector('#jump-first');
    const first = startIndex(d);
    if (jump)
        jump.addEventListener('click', () => first >= 0 && chart.showLayer(first));
    const details = h('details', {class: 'change'}, h('summary', {}, 'Change runs or tolerances'));
    root.append(details);
    root.append(h('p', {class: 'hint'}, `Tolerances: atol ${fmtNum(d.atol)}, rtol ${fmtNum(d.rtol)}. ` +
                  `Runs created ${fmtTime(d.a && d.a.created_at)} and ${fmtTime(d.b && d.b.created_at)}.`));
    // Interactive: the chart's range and the table's rows on screen are drawn.
    await Promise.all([drawing, table.ready]);
    if (!ctx.live())
        return;
    if (q.at) {
        const i = await table.jumpTo(q.at, {focus: false});
        if (i >= 0)
            chart.showLayer(i);
    }
    details.append(await pickerForm(q, model, {[q.a]: runs[0], [q.b]: runs[1], [q.truth || '']: runs[2]}));
    // The graph view is one click away: its layout worker starts while the page is idle.
    if (n > 30 && window.requestIdleCallback)
        requestIdleCallback(() => warmLayout(), {timeout: 3000});
}
