// views/sweeps.js: knob sweeps (`gpudiff-agent sweep --server`, docs/SERVER.md "Sweeps"):
// the list (GET /api/v1/sweeps, paged by the daemon) and each sweep (GET /api/v1/sweeps/{id}):
// what it answers (the fastest setting, the cheapest deterministic and the cheapest
// batch-invariant one, with what each costs against the fastest), the cost-against-error
// scatter with those settings marked, and the table of settings: ms and × the fastest, the
// output against float64 and against the strict setting, run to run, batch invariance, the
// first divergent layer and the cause, with links to each setting's run and its diffs. Every
// value is the daemon's (the agent's measurements); what was not measured reads "–".
import {h, message, fmtNum, fmtInt, fmtTime, shortId, routeHref} from '../dom.js';
import {apiGet} from '../api.js';
import {sweepChart} from '../sweepchart.js';
import {copyLinkButton, svgExport, tableExports} from '../share.js';

const PAGE = 50;
const yn = (v) => (v === true ? 'yes' : v === false ? 'no' : '–');

// "emulate=none, 28 ms (×1)" of a pick, or what its absence means.
function pickText(p, none) {
    return p ? `${p.setting}: ${fmtNum(p.forward_ms)} ms (×${fmtNum(p.x_fastest)} the fastest)` : none;
}

async function list(root, ctx) {
    const offset = Math.max(0, Number(ctx.params.get('offset')) || 0);
    const filter = {model: ctx.params.get('model') || undefined, backend: ctx.params.get('backend') || undefined};
    let r;
    try {
        r = await apiGet('sweeps', {...filter, limit: PAGE, offset}, {signal: ctx.signal});
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        root.append(message('error', 'Sweeps: ' + e.message));
        return;
    }
    const rows = r.sweeps || [];
    if (!rows.length) {
        root.append(message('info', offset ? 'No sweeps on this page.' : 'No sweeps yet: ' +
            '`gpudiff-agent sweep --server URL` runs a model under a grid of settings and uploads it here.'));
        return;
    }
    const cols = [{key: 'id', label: 'id'}, {key: 'model', label: 'model'}, {key: 'backend', label: 'backend'},
                  {key: 'gpu', label: 'gpu'}, {key: 'settings', label: 'settings'},
                  {key: (w) => w.fastest && w.fastest.setting, label: 'fastest'},
                  {key: (w) => w.cheapest_deterministic && w.cheapest_deterministic.setting,
                   label: 'cheapest_deterministic'},
                  {key: (w) => w.cheapest_batch_invariant && w.cheapest_batch_invariant.setting,
                   label: 'cheapest_batch_invariant'}, {key: 'created_at', label: 'created_at'}];
    const table = h('table', {class: 'sweeps', id: 'sweeps-table'},
        h('caption', {}, 'Each sweep ran one model and input under a grid of settings; picks with ' +
          'their median forward time and × the fastest.'),
        h('thead', {}, h('tr', {}, ['Sweep', 'Model', 'Backend', 'GPU', 'Settings', 'Fastest',
                                    'Cheapest deterministic', 'Cheapest batch-invariant', 'Created']
            .map((t) => h('th', {scope: 'col'}, t)))),
        h('tbody', {}, rows.map((w) => h('tr', {'data-sweep': w.id},
            h('th', {scope: 'row'}, h('a', {href: '#/sweeps/' + encodeURIComponent(w.id)}, shortId(w.id))),
            h('td', {}, w.model), h('td', {}, w.backend), h('td', {}, w.gpu || '–'),
            h('td', {class: 'num'}, fmtInt(w.settings)),
            h('td', {}, pickText(w.fastest, '–')),
            h('td', {}, pickText(w.cheapest_deterministic, 'none in the grid')),
            h('td', {}, pickText(w.cheapest_batch_invariant, 'none in the grid')),
            h('td', {class: 'nowrap'}, fmtTime(w.created_at))))));
    const pageHref = (o) => routeHref('/sweeps', {...filter, offset: o || null});
    const pager = r.total > PAGE ? h('nav', {class: 'pager', 'aria-label': 'Pages of sweeps'},
        offset > 0 ? h('a', {class: 'button', href: pageHref(Math.max(0, offset - PAGE))}, 'Newer') : null,
        h('span', {class: 'pager-status'}, `Sweeps ${fmtInt(offset + 1)}–${fmtInt(offset + rows.length)} ` +
          `of ${fmtInt(r.total)}`),
        offset + PAGE < r.total ? h('a', {class: 'button', href: pageHref(offset + PAGE)}, 'Older') : null)
        : h('p', {class: 'pager-status'}, `${fmtInt(r.total)} sweep${r.total === 1 ? '' : 's'}.`);
    root.append(h('div', {class: 'section-head'}, h('h2', {}, 'Sweeps'), tableExports('sweeps', cols, () => rows)),
                pager, h('div', {class: 'table-wrap'}, table));
}

// "2.38e-7 (376 ULP)", "identical", or "not compared: why".
// A raw ULP count across a sign change counts every float between (2^31 in float32): it goes
// in the cell's title, the cell says the error.
function against(c, doc) {
    if (!c || !c.compared)
        return doc && doc.why ? 'not compared: ' + doc.why : 'not compared';
    if (c.identical)
        return 'identical';
    return h('span', {title: `max ULP distance ${fmtInt(c.max_ulp)} (raw, across sign changes too)`},
             fmtNum(c.max_abs));
}

// The batch sizes of a setting that broke invariance, and the first layer that did.
function batchBreak(doc) {
    const sizes = (doc && doc.batch && doc.batch.sizes) || [];
    const bad = sizes.filter((b) => b.status === 'ok' && b.identical === false);
    if (!bad.length)
        return '';
    return bad.map((b) => `batch ${b.batch}: from ${b.first_differing ? b.first_differing.layer : '?'}`).join('; ');
}

function settingsTable(w, rows, docs, links) {
    const picks = [['fast', w.fastest], ['det', w.cheapest_deterministic], ['inv', w.cheapest_batch_invariant]];
    const markWords = {fast: 'fastest', det: 'cheapest deterministic', inv: 'cheapest batch-invariant'};
    const body = rows.map((r) => {
        const doc = docs.get(r.setting);
        const marks = picks.filter(([, p]) => p && p.setting === r.setting).map(([k]) => k);
        const inv = r.batch_invariant === false && batchBreak(doc) ? ` (${batchBreak(doc)})` : '';
        const rr = doc && doc.run_to_run;
        const det = r.deterministic === false && rr && rr.differing_layers && rr.differing_layers.length
            ? ` (${fmtInt(rr.differing_layers.length)} layers differ)` : '';
        return h('tr', {'data-setting': r.setting, class: marks.length ? 'marked' : null},
            h('th', {scope: 'row'}, r.setting, r.strict ? [' ', h('span', {class: 'badge s-complete'}, 'strict')] : '',
              marks.map((k) => [' ', h('span', {class: 'mark sweep-' + k, 'data-mark': k}, markWords[k])])),
            h('td', {}, r.status === 'ok' ? 'ok' : [h('strong', {}, r.status), r.error ? ': ' + r.error : '']),
            h('td', {class: 'num'}, Number.isFinite(r.forward_ms) ? `${fmtNum(r.forward_ms)} ms` : '–',
              Number.isFinite(r.x_fastest) ? h('span', {class: 'sub'}, `×${fmtNum(r.x_fastest)}`) : ''),
            h('td', {class: 'num'}, Number.isFinite(r.end_to_end_ms) ? `${fmtNum(r.end_to_end_ms)} ms` : '–'),
            h('td', {class: 'num'}, against(r.vs_float64, doc && doc.vs_float64)),
            h('td', {class: 'num'}, r.strict ? 'is strict' : against(r.vs_strict, doc && doc.vs_strict)),
            h('td', {}, yn(r.deterministic) + det),
            h('td', {}, yn(r.batch_invariant) + inv),
            h('td', {}, r.vs_float64 && r.vs_float64.first_divergent
                ? h('code', {}, r.vs_float64.first_divergent) : r.vs_float64 && r.vs_float64.compared ? 'none' : '–'),
            h('td', {class: 'notes'}, r.cause || '–'),
            h('td', {class: 'links'}, links(r)));
    });
    return h('table', {class: 'sweep', id: 'sweep-table'},
        h('caption', {class: 'sr-only'}, 'The settings of the sweep'),
        h('thead', {}, h('tr', {}, ['Setting', 'Status', 'ms (× fastest)', 'End to end', 'vs float64',
                                    'vs strict', 'Run to run identical', 'Batch-invariant', 'First divergent',
                                    'Cause', 'Runs and diffs'].map((t) => h('th', {scope: 'col', class: 'wrap'}, t)))),
        h('tbody', {}, body));
}

async function one(root, ctx, id) {
    let w;
    try {
        w = await apiGet('sweeps/' + encodeURIComponent(id), {}, {signal: ctx.signal});
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        root.append(message('error', `Sweep ${id}: ${e.message}`));
        return;
    }
    if (!ctx.live())
        return;
    const doc = w.sweep || {};
    const rows = w.table || [];
    const docs = new Map((doc.settings || []).map((x) => [x.name, x]));
    const held = new Map((w.runs || []).map((x) => [x.run, x]));
    const f64 = (w.runs || []).find((x) => x.role === 'float64');
    const strict = rows.find((r) => r.strict);
    const diffHref = (a, b) => routeHref('/diff', {a, b});
    const runLink = (run, text) => {
        const x = held.get(run);
        return x ? [h('a', {href: routeHref('/runs', {q: run}), class: 'run-link'}, text),
                    x.tensors === false ? ' (tensors dropped)' : ''] : `${text} (not on this server)`;
    };
    const links = (r) => {
        if (!r.run)
            return '–';
        const out = [runLink(r.run, 'run ' + shortId(r.run))];
        if (f64 && held.has(r.run))
            out.push(' · ', h('a', {href: diffHref(r.run, f64.run), class: 'diff-f64'}, 'vs float64'));
        if (strict && strict.run && strict.run !== r.run && held.has(r.run))
            out.push(' · ', h('a', {href: diffHref(r.run, strict.run), class: 'diff-strict'}, 'vs strict'));
        return out;
    };
    const env = doc.env || {};
    const gpu = w.gpu || env.gpu_name;
    document.title = `gpudiff: sweep of ${w.model}`;
    root.append(h('p', {class: 'lead', id: 'sweep-about'},
        `${w.model} on ${w.backend}${gpu ? ' (' + gpu + ')' : ''}: ${fmtInt(rows.length)} settings` +
        (doc.grid ? ` of the grid ${doc.grid}` : '') +
        (Number.isFinite(doc.repeats) ? `, ${fmtInt(doc.repeats)} timed runs each` : '') +
        (doc.reference_batch ? `, the whole batch of ${fmtInt(doc.reference_batch)}` +
         (doc.batch_sizes && doc.batch_sizes.length ? ` and its rows in batches of ${doc.batch_sizes.join(', ')}`
             : '') : '') +
        `; created ${fmtTime(w.created_at)}, received ${fmtTime(w.received_at)}. `,
        f64 ? ['The float64 reference: ', runLink(f64.run, 'run ' + shortId(f64.run)), '.'] : 'No float64 run.'));
    const answers = doc.answers || {};
    const breaking = Object.entries(answers.batch_breaking_layers || {});
    const both = answers.cheapest_deterministic_and_batch_invariant;
    root.append(h('section', {class: 'cards', 'aria-label': 'What the sweep answers', id: 'sweep-answers'},
        h('div', {class: 'card'}, h('h3', {}, 'Fastest'), h('p', {id: 'pick-fast'}, pickText(w.fastest, 'none ran'))),
        h('div', {class: 'card'}, h('h3', {}, 'Cheapest deterministic'),
          h('p', {id: 'pick-det'}, pickText(w.cheapest_deterministic, 'none in the grid is deterministic'))),
        h('div', {class: 'card'}, h('h3', {}, 'Cheapest batch-invariant'),
          h('p', {id: 'pick-inv'}, pickText(w.cheapest_batch_invariant, 'none in the grid is batch-invariant')),
          breaking.length ? h('p', {class: 'muted'}, 'Layers that break it: ' +
              breaking.map(([l, n]) => `${l} (${fmtInt(n)})`).join(', ')) : null),
        doc.answers ? h('div', {class: 'card'}, h('h3', {}, 'Deterministic and batch-invariant'),
          h('p', {id: 'pick-both'}, pickText(both, 'none in the grid is both'))) : null));
    const marks = new Map();
    for (const [k, p] of [['fast', w.fastest], ['det', w.cheapest_deterministic], ['inv', w.cheapest_batch_invariant]])
        if (p)
            marks.set(p.setting, (marks.get(p.setting) || new Set()).add(k));
    const pointHref = (r) => (f64 && r.run ? diffHref(r.run, f64.run) : '#/sweeps/' + encodeURIComponent(id));
    const box = h('div', {class: 'chart-frame'});
    let chart = null;
    const draw = () => {
        chart = sweepChart(rows, {marks, hrefOf: pointHref, width: box.clientWidth || 960});
        box.replaceChildren(chart);
    };
    root.append(h('section', {'aria-labelledby': 'sweep-cost-h'},
        h('h2', {id: 'sweep-cost-h'}, 'Cost against error'),
        h('figure', {class: 'chart-box'}, box,
          h('figcaption', {}, 'Each setting at its median forward time and its output\'s max |a − b| from ' +
            'float64 (log scale; 0: bitwise equal). Ringed: ', h('strong', {}, 'the cheapest deterministic'),
            '; in a square: ', h('strong', {}, 'the cheapest batch-invariant'),
            '; orange: not reproducible run to run. A point opens its diff against float64. ',
            svgExport('sweep-' + shortId(id), () => chart)))));
    draw();
    let t = 0;
    window.addEventListener('resize', () => {
        clearTimeout(t);
        t = setTimeout(draw, 150);
    }, {signal: ctx.signal});
    const cols = [{key: 'setting', label: 'setting'}, {key: 'status', label: 'status'},
                  {key: 'strict', label: 'strict'}, {key: 'forward_ms', label: 'forward_ms'},
                  {key: 'x_fastest', label: 'x_fastest'}, {key: 'end_to_end_ms', label: 'end_to_end_ms'},
                  {key: (r) => r.vs_float64 && r.vs_float64.max_abs, label: 'vs_float64_max_abs'},
                  {key: (r) => r.vs_float64 && r.vs_float64.max_ulp, label: 'vs_float64_max_ulp'},
                  {key: (r) => r.vs_strict && r.vs_strict.max_abs, label: 'vs_strict_max_abs'},
                  {key: (r) => r.vs_strict && r.vs_strict.max_ulp, label: 'vs_strict_max_ulp'},
                  {key: 'deterministic', label: 'run_to_run_identical'},
                  {key: 'batch_invariant', label: 'batch_invariant'},
                  {key: (r) => r.vs_float64 && r.vs_float64.first_divergent, label: 'first_divergent'},
                  {key: 'cause', label: 'cause'}, {key: 'run', label: 'run'}, {key: 'error', label: 'error'}];
    root.append(h('section', {'aria-labelledby': 'sweep-settings-h'},
        h('div', {class: 'section-head'}, h('h2', {id: 'sweep-settings-h'}, 'Settings'),
          tableExports('sweep-' + shortId(id), cols, () => rows)),
        h('p', {class: 'hint'}, 'One row per setting, the strict one first: the median forward time without ' +
          'capture and × the fastest, end to end; the output layer\'s max |a − b| (and ULP) against the ' +
          'float64 run and against the strict setting; run to run: bitwise identical over repeats; ' +
          'batch-invariant: the same rows bitwise equal at every batch size; the first divergent layer ' +
          'against float64 and the cause, as the agent measured them.'),
        h('div', {class: 'table-wrap'}, settingsTable(w, rows, docs, links))));
}

export async function render(root, ctx) {
    document.title = 'gpudiff: sweeps';
    const id = ctx.segment;
    root.append(h('div', {class: 'title-row'}, h('h1', {}, id ? ['Sweep ', h('code', {}, shortId(id))] : 'Sweeps'),
                  h('div', {class: 'share-bar', role: 'group', 'aria-label': 'Share this view'}, copyLinkButton())));
    if (id)
        await one(root, ctx, id);
    else
        await list(root, ctx);
}
