// views/diff.js: two runs layer by layer (GET /api/v1/diff): the divergence along the
// network against the noise band, the first divergent layer and the amplifiers, the
// per-layer table, the daemon's explanation, and the two environments side by side.
import {h, message, fmtNum, fmtInt, fmtTime, shortId, runLabel, verdictBadge, routeHref}
    from '../dom.js';
import {apiGet, getRun, getDiff, getModels} from '../api.js';
import {layerChart, LAYER_METRICS} from '../charts.js';

function readParams(p) {
    return {a: p.get('a') || '', b: p.get('b') || '', truth: p.get('truth') || '',
            atol: p.get('atol') || '', rtol: p.get('rtol') || '',
            metric: LAYER_METRICS[p.get('metric')] ? p.get('metric') : 'err'};
}

export function diffHref(q, changes) {
    const n = {...q, ...changes};
    return routeHref('/diff', {a: n.a, b: n.b, truth: n.truth, atol: n.atol, rtol: n.rtol,
                               metric: n.metric === 'err' ? '' : n.metric});
}

export function layerHref(q, l) {
    return routeHref('/layer', {a: q.a, b: q.b, truth: q.truth, atol: q.atol, rtol: q.rtol,
                                name: l.name});
}

// The form that picks a, b, truth among the runs of one model, and the tolerances.
async function pickerForm(q, model, ctx) {
    const models = await getModels().catch(() => []);
    let runs = [];
    if (model) {
        const page = await apiGet('runs', {model, limit: 200}, {signal: ctx.signal})
            .catch(() => ({runs: []}));
        runs = page.runs;
    }
    const modelSel = h('select', {id: 'd-model'}, h('option', {value: ''}, 'choose a model'),
                       models.map((m) => h('option', {value: m.name, selected: m.name === model},
                                           m.name)));
    modelSel.addEventListener('change', () => {
        location.hash = routeHref('/diff', {model: modelSel.value});
    });
    const runSelect = (id, value, optional) => {
        const sel = h('select', {id}, h('option', {value: ''}, optional ? 'none' : 'choose a run'),
                      runs.map((r) => h('option', {value: r.id, selected: r.id === value}, runLabel(r))));
        if (value && !runs.some((r) => r.id === value))
            sel.append(h('option', {value, selected: true}, shortId(value)));
        return sel;
    };
    const a = runSelect('d-a', q.a), b = runSelect('d-b', q.b), t = runSelect('d-truth', q.truth, true);
    const atol = h('input', {id: 'd-atol', value: q.atol, inputmode: 'decimal', placeholder: '1e-8',
                             size: 8});
    const rtol = h('input', {id: 'd-rtol', value: q.rtol, inputmode: 'decimal', placeholder: '1e-5',
                             size: 8});
    const form = h('form', {class: 'filters', 'aria-label': 'Runs to compare'},
        h('div', {class: 'field'}, h('label', {for: 'd-model'}, 'Model'), modelSel),
        h('div', {class: 'field'}, h('label', {for: 'd-a'}, 'Run a (actual)'), a),
        h('div', {class: 'field'}, h('label', {for: 'd-b'}, 'Run b (reference)'), b),
        h('div', {class: 'field'}, h('label', {for: 'd-truth'}, 'Truth (optional)'), t),
        h('div', {class: 'field'}, h('label', {for: 'd-atol'}, 'atol'), atol),
        h('div', {class: 'field'}, h('label', {for: 'd-rtol'}, 'rtol'), rtol),
        h('div', {class: 'field field-buttons'}, h('button', {type: 'submit', class: 'primary'}, 'Compare')));
    form.addEventListener('submit', (e) => {
        e.preventDefault();
        location.hash = diffHref(q, {a: a.value, b: b.value, truth: t.value,
                                     atol: atol.value.trim(), rtol: rtol.value.trim()});
    });
    return form;
}

function card(title, ...body) {
    return h('div', {class: 'card'}, h('h3', {}, title), ...body);
}

function summary(d, q) {
    const layers = d.layers;
    const byName = new Map(layers.map((l) => [l.name, l]));
    const first = d.first_divergent ? byName.get(d.first_divergent) : null;
    const cards = [];
    cards.push(card('First divergent layer', first
        ? [h('p', {class: 'big first'}, h('a', {href: layerHref(q, first), id: 'first-divergent'},
                                          first.name), ` (${first.op})`),
           h('p', {}, `${fmtNum(first.growth)}× the rounding noise its op allows; ` +
                      `${fmtNum(first.bits)} bits (${first.arithmetic || '?'})`)]
        : h('p', {class: 'big', id: 'first-divergent'}, 'none: every layer is within noise')));
    const amps = (d.amplifiers || []).map((n) => byName.get(n)).filter(Boolean);
    cards.push(card('Amplifiers', amps.length
        ? h('ul', {class: 'amps', id: 'amplifiers'}, amps.map((l) => h('li', {},
            h('a', {href: layerHref(q, l)}, l.name), ` (${l.op}) ×${fmtNum(l.growth)}`,
            l.flipped ? `, ${fmtInt(l.flipped)} outputs flipped` : '')))
        : h('p', {id: 'amplifiers'}, 'none')));
    const last = layers[layers.length - 1];
    if (last && last.verdict !== 'incomparable')
        cards.push(card('At the output', h('p', {}, h('strong', {}, last.name), ': max |a−b| ',
            h('strong', {}, fmtNum(last.max_abs)), `; ${fmtInt(last.mismatches)} of ` +
            `${fmtInt(last.count)} values outside atol ${fmtNum(d.atol)} + rtol ${fmtNum(d.rtol)}` +
            `; ${fmtInt(last.mismatch_rows)} rows differ`)));
    if (d.truth) {
        const from = first ? layers.indexOf(first) : 0;
        const n = {a: 0, b: 0, even: 0};
        layers.slice(from).forEach((l) => {
            if (l.truth && n[l.truth.closer] !== undefined)
                n[l.truth.closer]++;
        });
        const winner = n.a > n.b ? 'a' : n.b > n.a ? 'b' : null;
        cards.push(card('Against the truth', h('p', {},
            winner ? [h('strong', {}, 'run ' + winner), ' is closer on ', String(n[winner]),
                      ' of ', String(layers.length - from), ' layers']
                   : 'neither run is closer',
            first ? ` from ${first.name} on` : '', ` (truth: ${d.truth.backend}).`)));
    }
    return h('section', {class: 'cards', 'aria-label': 'Summary'}, cards);
}

function metricSwitch(q) {
    return h('div', {class: 'segmented', role: 'group', 'aria-label': 'Chart metric'},
             Object.entries(LAYER_METRICS).map(([key, m]) =>
                 h('a', {href: diffHref(q, {metric: key}), class: 'button',
                         'aria-current': key === q.metric ? 'true' : null}, m.label)));
}

function layerTable(d, q) {
    const hasTruth = !!d.truth;
    const head = ['#', 'Layer', 'Op', 'Verdict', 'Max |a−b|', 'Error / max|b|', 'Noise band',
                  'Growth', 'Max ULP', 'Bits', 'Outside tol.'];
    if (hasTruth)
        head.push('Closer');
    head.push('Notes');
    const rows = d.layers.map((l, i) => {
        const cls = [l.first_divergent ? 'first-divergent' : '', l.amplifier ? 'amplifier' : '']
            .filter(Boolean).join(' ');
        const mark = l.first_divergent ? h('span', {class: 'mark first'}, 'first divergent')
            : l.amplifier ? h('span', {class: 'mark amp'}, 'amplifier') : null;
        const notes = [];
        if (l.note)
            notes.push(l.note);
        if (l.algo && l.algo.a !== l.algo.b)
            notes.push(`algorithm a: ${l.algo.a || '–'}, b: ${l.algo.b || '–'}`);
        if (l.discontinuous && l.flipped)
            notes.push(`${fmtInt(l.flipped)} outputs flipped; ${fmtInt(l.near_boundary)} inputs ` +
                       `within ${fmtNum(l.boundary_distance)} of a step`);
        if (l.nan_disagree || l.inf_disagree)
            notes.push(`NaN disagree ${fmtInt(l.nan_disagree)}, Inf disagree ${fmtInt(l.inf_disagree)}`);
        const na = l.verdict === 'incomparable';
        const cells = [
            h('td', {class: 'num'}, String(i)),
            h('th', {scope: 'row'}, h('a', {href: layerHref(q, l)}, l.name), mark ? ' ' : '', mark),
            h('td', {}, l.op || '–'),
            h('td', {}, verdictBadge(l.verdict)),
            h('td', {class: 'num'}, na ? '–' : fmtNum(l.max_abs)),
            h('td', {class: 'num'}, na ? '–' : fmtNum(l.err)),
            h('td', {class: 'num'}, na ? '–' : fmtNum(l.envelope)),
            h('td', {class: 'num'}, na ? '–' : fmtNum(l.growth)),
            h('td', {class: 'num'}, na ? '–' : fmtInt(l.max_ulp)),
            h('td', {class: 'num', title: l.arithmetic || null}, na ? '–' : fmtNum(l.bits)),
            h('td', {class: 'num'}, na ? '–' : fmtInt(l.mismatches)),
        ];
        if (hasTruth)
            cells.push(h('td', {}, l.truth ? l.truth.closer : '–'));
        cells.push(h('td', {class: 'notes'}, notes.join('; ')));
        return h('tr', {class: cls || null, 'data-layer': l.name}, cells);
    });
    return h('div', {class: 'table-wrap'}, h('table', {class: 'layers', id: 'layer-table'},
        h('caption', {}, 'Per layer: b is the reference side of each metric. The noise band is ' +
          'the error rounding can explain (the op\'s own bound plus what noisy inputs carry in); ' +
          'bits: the effective precision, -log2 of the median relative error' +
          (hasTruth ? '; closer: the run nearer the truth.' : '.')),
        h('thead', {}, h('tr', {}, head.map((t) => h('th', {scope: 'col'}, t)))),
        h('tbody', {}, rows)));
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
    const daemonDiff = new Set((d.env_diff || []).map((e) => e.key));
    const ignore = new Set(['created_at']); // always differs, shown but not marked
    const rows = keys.map((k) => {
        const va = fa.get(k), vb = fb.get(k);
        const differs = daemonDiff.has(k) || (!ignore.has(k) && (va ?? null) !== (vb ?? null));
        return h('tr', {class: differs ? 'differs' : null},
                 h('th', {scope: 'row'}, k),
                 h('td', {}, va ?? h('span', {class: 'muted'}, '(none)')),
                 h('td', {}, vb ?? h('span', {class: 'muted'}, '(none)')),
                 rt ? h('td', {}, ft.get(k) ?? h('span', {class: 'muted'}, '(none)')) : null,
                 h('td', {class: 'differs-cell'}, differs ? h('span', {class: 'mark differs'}, 'differs') : ''));
    });
    // Differences first: they are what the eye should find.
    rows.sort((x, y) => (y.classList.contains('differs') ? 1 : 0) - (x.classList.contains('differs') ? 1 : 0));
    return h('div', {class: 'table-wrap'}, h('table', {class: 'env', id: 'env-table'},
        h('caption', {}, `Environments and knobs: ${(d.env_diff || []).length} ` +
          `difference${(d.env_diff || []).length === 1 ? '' : 's'} between a and b, listed first`),
        h('thead', {}, h('tr', {}, h('th', {scope: 'col'}, 'Key'),
            h('th', {scope: 'col'}, 'Run a'), h('th', {scope: 'col'}, 'Run b'),
            rt ? h('th', {scope: 'col'}, 'Truth') : null, h('th', {scope: 'col'}, 'Differs'))),
        h('tbody', {}, rows)));
}

export async function render(root, ctx) {
    const q = readParams(ctx.params);
    document.title = 'gpudiff: diff';
    if (!q.a || !q.b) {
        root.append(h('h1', {}, 'Diff'),
                    h('p', {}, 'Choose two runs of one model; a third, e.g. a cpu64 run, ' +
                      'says which of them is right.'));
        let model = ctx.params.get('model') || '';
        if (!model && (q.a || q.b))
            model = await getRun(q.a || q.b).then((r) => r.model.name).catch(() => '');
        root.append(await pickerForm(q, model, ctx));
        return;
    }
    root.append(h('h1', {}, 'Diff ', h('code', {}, shortId(q.a)), ' vs ', h('code', {}, shortId(q.b))));
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
        root.append(await pickerForm(q, '', ctx));
        return;
    }
    if (!ctx.live())
        return;
    status.remove();
    const model = (d.a && d.a.model) || '';
    document.title = `gpudiff: diff ${shortId(q.a)} vs ${shortId(q.b)} (${model})`;
    root.append(h('dl', {class: 'runs-compared'},
        h('dt', {}, 'a'), h('dd', {}, runLabel(runs[0] || d.a)),
        h('dt', {}, 'b'), h('dd', {}, runLabel(runs[1] || d.b)),
        d.truth ? [h('dt', {}, 'truth'), h('dd', {}, runLabel(runs[2] || d.truth))] : null,
        h('dt', {}, 'model'), h('dd', {}, model, ' · ',
            h('a', {href: '#/matrix/' + encodeURIComponent(model)}, 'device matrix'), ' · ',
            h('a', {href: routeHref('/history/' + encodeURIComponent(model),
                                    {layer: d.first_divergent || ''})}, 'history'))));
    root.append(summary(d, q));
    root.append(h('section', {'aria-labelledby': 'chart-h'},
        h('div', {class: 'section-head'}, h('h2', {id: 'chart-h'}, 'Along the network'), metricSwitch(q)),
        h('figure', {class: 'chart-box'}, layerChart(d, q.metric, (l) => layerHref(q, l)),
          h('figcaption', {}, 'Log scale. Shaded: the noise band. Ringed: ',
            h('span', {class: 'key-first'}, 'first divergent layer'), '; triangles: ',
            h('span', {class: 'key-amp'}, 'amplifiers'),
            '. A point opens the layer.'))));
    root.append(h('section', {'aria-labelledby': 'expl-h'}, h('h2', {id: 'expl-h'}, 'Explanation'),
                  h('p', {class: 'explanation', id: 'explanation'}, d.explanation || '–')));
    root.append(h('section', {'aria-labelledby': 'layers-h'}, h('h2', {id: 'layers-h'}, 'Layers'),
                  layerTable(d, q)));
    root.append(h('section', {'aria-labelledby': 'env-h'}, h('h2', {id: 'env-h'}, 'Environments'),
                  envTable(d, runs)));
    const details = h('details', {class: 'change'}, h('summary', {}, 'Change runs or tolerances'));
    root.append(details);
    details.append(await pickerForm(q, model, ctx));
    root.append(h('p', {class: 'hint'}, `Tolerances: atol ${fmtNum(d.atol)}, rtol ${fmtNum(d.rtol)}. ` +
                  `Runs created ${fmtTime(d.a && d.a.created_at)} and ${fmtTime(d.b && d.b.created_at)}.`));
}
