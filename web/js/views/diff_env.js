// views/diff_env.js: the diff's environments side by side: every recorded backend, env,
// knob and label of runs a, b and the truth, with the daemon's status of each key (differs,
// or not recorded: one run lacks it, which is never a difference) and its category, in the
// daemon's order (what can change numerics first).
import {h} from '../dom.js';

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

// The environments side by side, in the daemon's order (docs/COMPARISON.md, "Environment and
// knobs"): what differs and can change numerics first, then the rest that differs, then what
// one run does not record (never marked as a difference), then what is equal.
export function envTable(d, runs) {
    const [ra, rb, rt] = runs;
    const fa = flatFacts(ra), fb = flatFacts(rb), ft = flatFacts(rt);
    const served = d.env_diff || [];
    const status = new Map(served.map((e) => [e.key, e]));
    const ignore = new Set(['created_at']); // always differs, shown but not marked
    const keys = [...new Set([...served.map((e) => e.key), ...fa.keys(), ...fb.keys(), ...ft.keys()])];
    // Keys the daemon does not judge (labels, hashes of the model and input): equal or not, as
    // the records say, and only when both record them.
    const statusOf = (k) => {
        const e = status.get(k);
        if (e)
            return {st: e.status || 'differs', category: e.category || ''};
        const va = fa.get(k), vb = fb.get(k);
        if (va == null || vb == null) // absent, or recorded as null (a dump's model sha256)
            return {st: ignore.has(k) || (va == null && vb == null) ? '' : 'not recorded', category: ''};
        return {st: !ignore.has(k) && va !== vb ? 'differs' : '', category: ''};
    };
    const rank = (k, x) => (x.st === 'differs' ? (status.has(k) ? 0 : 1) : x.st === 'not recorded' ? 2 : 3);
    const order = keys.map((k, i) => ({k, i, x: statusOf(k)}))
        .sort((p, q) => rank(p.k, p.x) - rank(q.k, q.x) || p.i - q.i);
    const missing = (run) => h('span', {class: 'muted'}, run ? '(not recorded)' : '–');
    const rows = order.map(({k, x}) => {
        const differs = x.st === 'differs';
        return h('tr', {class: differs ? 'differs' : x.st === 'not recorded' ? 'not-recorded' : null,
                        'data-key': k, 'data-status': x.st || 'equal'},
                 h('th', {scope: 'row'}, k),
                 h('td', {}, fa.get(k) ?? missing(ra)),
                 h('td', {}, fb.get(k) ?? missing(rb)),
                 rt ? h('td', {}, ft.get(k) ?? missing(rt)) : null,
                 h('td', {class: 'differs-cell'}, differs ? h('span', {class: 'mark differs'}, 'differs')
                     : x.st ? h('span', {class: 'muted'}, x.st) : '',
                   x.category ? h('span', {class: 'sub'}, x.category) : null));
    });
    const nDiffer = served.filter((e) => (e.status || 'differs') === 'differs').length;
    const nMissing = served.filter((e) => e.status === 'not recorded').length;
    return h('div', {class: 'table-wrap'}, h('table', {class: 'env', id: 'env-table'},
        h('caption', {}, `Environments and knobs: ${nDiffer} difference${nDiffer === 1 ? '' : 's'} ` +
          'between a and b, listed first, what can change numerics first' +
          (nMissing ? `; ${nMissing} key${nMissing === 1 ? '' : 's'} one run does not record, ` +
                      'which is no difference' : '')),
        h('thead', {}, h('tr', {}, h('th', {scope: 'col'}, 'Key'),
            h('th', {scope: 'col'}, 'Run a'), h('th', {scope: 'col'}, 'Run b'),
            rt ? h('th', {scope: 'col'}, 'Truth') : null, h('th', {scope: 'col'}, 'Differs'))),
        h('tbody', {}, rows)));
}
