// views/sweeps.js: knob sweeps (`gpudiff-agent sweep`): the list, and each sweep's table of
// settings with a cost-against-error scatter, the cheapest deterministic and the cheapest
// batch-invariant settings marked. The daemon's sweep API is another change's (issue 13
// depends on it); until a daemon serves it, this view says so. The shapes it reads:
//   GET /api/v1/sweeps -> {"sweeps": [{"id", "model", "created_at", "device", "settings": N}]}
//   GET /api/v1/sweeps/{id} -> {"id", "model", "created_at", "device", "reference": RUN | null,
//       "settings": [{"knobs": {...}, "run": RUN, "time_us": number, "err": number | null,
//                     "max_abs": number | null, "deterministic": bool | null,
//                     "batch_invariant": bool | null}]}
// (err: the error of the setting's output against the reference run, relative to max |b|).
import {h, s, message, fmtNum, fmtInt, fmtTime, shortId, routeHref} from '../dom.js';
import {apiGet} from '../api.js';
import {decades, logAxis} from '../charts.js';
import {copyLinkButton, svgExport, tableExports} from '../share.js';

function knobText(k) {
    return Object.entries(k || {}).map(([key, v]) => `${key}=${v === null ? 'default' : v}`).join(' ') || 'defaults';
}

// The cheapest setting (least time) among those where pred holds.
function cheapest(settings, pred) {
    return settings.filter((x) => pred(x) && Number.isFinite(x.time_us))
        .sort((p, q) => p.time_us - q.time_us)[0] || null;
}

function scatter(settings, marks) {
    const W = 900, H = 360, left = 80, right = W - 20, top = 24, bottom = H - 60;
    const times = settings.map((x) => x.time_us).filter(Number.isFinite);
    const t0 = Math.min(...times), t1 = Math.max(...times);
    const span = t1 > t0 ? t1 - t0 : Math.max(1, t0 * 0.1);
    const x = (t) => left + ((t - (t1 > t0 ? t0 : t0 - span / 2)) / span) * (right - left);
    const [lo, hi] = decades(settings.map((p) => p.err));
    const svg = s('svg', {class: 'chart sweep-chart', viewBox: `0 0 ${W} ${H}`, role: 'group',
                          'aria-label': 'Time against error per setting'});
    const g = s('g');
    svg.append(g);
    const y = logAxis(g, lo, hi, top, bottom, left, right, 'log10 error vs reference');
    g.append(s('line', {class: 'axis', x1: left, x2: right, y1: bottom, y2: bottom}));
    for (let i = 0; i <= 4; i++) {
        const t = (t1 > t0 ? t0 : t0 - span / 2) + (span * i) / 4;
        g.append(s('text', {class: 'tick', x: x(t), y: bottom + 18, 'text-anchor': 'middle'}, fmtNum(t / 1000) + ' ms'));
    }
    g.append(s('text', {class: 'axis-label', x: (left + right) / 2, y: H - 12, 'text-anchor': 'middle'},
               'time of the run (cost)'));
    settings.forEach((p) => {
        if (!Number.isFinite(p.time_us))
            return;
        const py = p.err > 0 ? Math.max(top, Math.min(bottom, y(p.err))) : bottom;
        const mark = marks.get(p);
        const a = s('a', {href: routeHref('/runs', {q: p.run}), class: 'point-link',
                          'aria-label': `${knobText(p.knobs)}: ${fmtNum(p.time_us / 1000)} ms, error ${fmtNum(p.err)}`});
        a.append(s('title', {}, `${knobText(p.knobs)}: ${fmtNum(p.time_us / 1000)} ms, error ${fmtNum(p.err)}`));
        a.append(s('circle', {cx: x(p.time_us), cy: py, r: mark ? 7 : 5, class: mark ? 'pt ' + mark.cls : 'pt v-noise'}));
        g.append(a);
        if (mark)
            g.append(s('text', {class: 'callout', x: x(p.time_us) + 10, y: py - 8}, mark.label));
    });
    return svg;
}

async function list(root, ctx) {
    let r;
    try {
        r = await apiGet('sweeps', {}, {signal: ctx.signal});
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        root.append(message(e.status === 404 ? 'info' : 'error', e.status === 404
            ? 'This daemon does not serve sweeps (GET /api/v1/sweeps: ' + e.message + '). ' +
              'Sweeps come with gpudiff-agent sweep and the daemon that stores them.'
            : 'Sweeps: ' + e.message));
        return;
    }
    const rows = r.sweeps || [];
    if (!rows.length) {
        root.append(message('info', 'No sweeps yet.'));
        return;
    }
    const table = h('table', {class: 'sweeps', id: 'sweeps-table'},
        h('thead', {}, h('tr', {}, ['Sweep', 'Model', 'Device', 'Settings', 'Created']
            .map((t) => h('th', {scope: 'col'}, t)))),
        h('tbody', {}, rows.map((w) => h('tr', {},
            h('th', {scope: 'row'}, h('a', {href: '#/sweeps/' + encodeURIComponent(w.id)}, shortId(w.id))),
            h('td', {}, w.model), h('td', {}, w.device || '–'), h('td', {class: 'num'}, fmtInt(w.settings)),
            h('td', {class: 'nowrap'}, fmtTime(w.created_at))))));
    root.append(h('div', {class: 'table-wrap'}, table));
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
    const settings = w.settings || [];
    const det = cheapest(settings, (x) => x.deterministic === true);
    const inv = cheapest(settings, (x) => x.batch_invariant === true);
    const marks = new Map();
    if (det)
        marks.set(det, {cls: 'mark-det', label: 'cheapest deterministic'});
    if (inv)
        marks.set(inv, {cls: 'mark-inv', label: det === inv ? 'cheapest deterministic and batch-invariant'
                                                              : 'cheapest batch-invariant'});
    root.append(h('p', {}, `${w.model} on ${w.device || 'an unnamed device'}, ${fmtInt(settings.length)} ` +
                  `settings, created ${fmtTime(w.created_at)}.`));
    const chart = scatter(settings, marks);
    root.append(h('figure', {class: 'chart-box'}, chart,
                  h('figcaption', {}, 'Each setting\'s time against its error (log scale). ',
                    svgExport('sweep-' + shortId(id), () => chart))));
    const cols = [{key: (x) => knobText(x.knobs), label: 'knobs'}, {key: 'time_us', label: 'time_us'},
                  {key: 'err', label: 'err'}, {key: 'max_abs', label: 'max_abs'},
                  {key: 'deterministic', label: 'deterministic'}, {key: 'batch_invariant', label: 'batch_invariant'},
                  {key: 'run', label: 'run'}];
    const yn = (v) => (v === true ? 'yes' : v === false ? 'no' : '–');
    root.append(h('div', {class: 'section-head'}, h('h2', {}, 'Settings'),
                  tableExports('sweep-' + shortId(id), cols, () => settings)),
        h('div', {class: 'table-wrap'}, h('table', {class: 'sweep', id: 'sweep-table'},
            h('thead', {}, h('tr', {}, ['Knobs', 'Time', 'Error', 'Max |a−b|', 'Deterministic',
                                        'Batch-invariant', 'Run'].map((t) => h('th', {scope: 'col'}, t)))),
            h('tbody', {}, settings.map((x) => h('tr', {class: marks.has(x) ? 'marked' : null},
                h('th', {scope: 'row'}, knobText(x.knobs), marks.has(x) ? [' ', h('span', {class: 'mark first'}, marks.get(x).label)] : ''),
                h('td', {class: 'num'}, fmtNum(x.time_us / 1000) + ' ms'), h('td', {class: 'num'}, fmtNum(x.err)),
                h('td', {class: 'num'}, fmtNum(x.max_abs)), h('td', {}, yn(x.deterministic)),
                h('td', {}, yn(x.batch_invariant)),
                h('td', {}, x.run ? h('a', {href: routeHref('/runs', {q: x.run})}, shortId(x.run)) : '–')))))));
}

export async function render(root, ctx) {
    document.title = 'gpudiff: sweeps';
    const id = ctx.segment;
    root.append(h('div', {class: 'title-row'}, h('h1', {}, id ? ['Sweep ', h('code', {}, shortId(id))] : 'Sweeps'),
                  h('div', {class: 'share-bar'}, copyLinkButton())));
    if (id)
        await one(root, ctx, id);
    else
        await list(root, ctx);
}
