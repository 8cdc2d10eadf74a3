// views/diff.js: two runs layer by layer (GET /api/v1/diff): the divergence along the
// network against the noise band, the first divergent layer (or the first observed one, with
// how many layers matched, when the start cannot be shown), a replay's cause, the
// amplifiers, which run the truth finds right, the per-layer table, the daemon's
// explanation, and the two environments side by side.
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

function layerTable(d, q) {
    const hasTruth = !!d.truth;
    const head = ['#', 'Layer', 'Op', 'Verdict', 'Max |a−b|', 'Error / scale', 'Noise band',
                  'Growth', 'Max ULP', 'Bits', 'Outside tol.'];
    if (hasTruth)
        head.push('Right');
    if (d.replay)
        head.push('Own error');
    head.push('Notes');
    const rows = d.layers.map((l, i) => {
        const cls = [l.first_divergent ? 'first-divergent' : '', l.amplifier ? 'amplifier' : '']
            .filter(Boolean).join(' ');
        const mark = l.first_divergent ? h('span', {class: 'mark first'}, 'first divergent')
            : l.first_observed && !d.start_known ? h('span', {class: 'mark first'}, 'first observed')
            : l.amplifier ? h('span', {class: 'mark amp'}, 'amplifier') : null;
        const notes = [];
        if (l.note)
            notes.push(l.note);
        if (l.reason)
            notes.push(l.reason);
        else if (l.sparse)
            notes.push(`${fmtInt(l.values_differ)} of ${fmtInt(l.count)} values differ (sparse)`);
        if (l.algo && l.algo.a !== l.algo.b)
            notes.push(`algorithm a: ${l.algo.a || '–'}, b: ${l.algo.b || '–'}`);
        if (l.discontinuous && l.flipped && !l.reason)
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
            cells.push(h('td', {title: l.truth ? 'closer: ' + l.truth.closer : null},
                         l.truth ? l.truth.right : '–'));
        if (d.replay)
            cells.push(h('td', {class: 'num'}, !l.own ? '–'
                : l.own.verdict === 'divergent' || l.own.verdict === 'nonfinite'
                    ? `${fmtNum(l.own.err)} (${fmtNum(l.own.bits)} bits)` : 'none'));
        cells.push(h('td', {class: 'notes'}, notes.join('; ')));
        return h('tr', {class: cls || null, 'data-layer': l.name}, cells);
    });
    return h('div', {class: 'table-wrap'}, h('table', {class: 'layers', id: 'layer-table'},
        h('caption', {}, 'Per layer: b is the reference side of each metric. The noise band is ' +
          'the error rounding can explain (the op\'s own bound plus what noisy inputs carry in); ' +
          'bits: the effective precision of the values that differ' +
          (hasTruth ? '; right: which run is within its rounding bound of the truth' : '') +
          (d.replay ? '; own error: what the layer computes itself, from the replay' : '') + '.'),
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
