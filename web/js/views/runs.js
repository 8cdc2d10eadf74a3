// views/runs.js: the runs, filtered, searched, sorted and paged by the daemon (GET
// /api/v1/runs: only one page ever comes over, and a filter finds a run on any page): by
// model, words, knobs, labels, GPU, backend, date, device key and library versions. Each run
// shows where it ran (the CPU's arithmetic for the engine's CPU backends; a framework's GPU
// dump without a GPU name says so, never "CPU"), its knobs, its labels as tags (a tag filters
// by it), and where it stands (GET /api/v1/standing, asked for the page once it is drawn):
// against its model's baseline, with its first divergent layer, and against the truth (the
// newest cpu64 run of its model and input), the error at the output; a comparison not made yet
// is made then, so no run stays "not compared yet". The page's rows sort by those columns and
// group by model, device or knob; radio buttons pick two runs (and a truth run) to compare,
// check boxes pick runs for an overlay of their errors against one truth; an admin token makes
// a run the baseline.
import {h, message, fmtTime, fmtInt, fmtNum, shortId, routeHref, verdictBadge, deviceLabel,
        knobWords, bitwiseBadge} from '../dom.js';
import {apiGet, apiPost, getModels, getToken} from '../api.js';
import {copyLinkButton, tableExports} from '../share.js';

const PAGE_SIZES = [25, 50, 100, 200];
const TEXT_FILTERS = ['model', 'q', 'gpu', 'backend', 'since', 'device', 'driver', 'cuda', 'cudnn',
                      'cublas'];
const SORTS = {created: 'Created', model: 'Model', backend: 'Backend', gpu: 'Device', host: 'Host',
               layers: 'Layers'};
// Groups of the page's rows, and the sorts of the page by where its runs stand.
const GROUPS = {model: 'model', device: 'device', knob: 'knobs'};
const PAGE_SORTS = {first: 'first divergent layer', truth: 'error against the truth'};

// The filters as the hash holds them; "" means none; cpu=1 means gpu "" (CPU runs); knob and
// label may repeat.
function readFilters(params) {
    const f = {};
    for (const k of TEXT_FILTERS)
        f[k] = params.get(k) || '';
    f.cpu = params.get('cpu') === '1';
    f.knob = params.getAll('knob').filter(Boolean);
    f.label = params.getAll('label').filter(Boolean);
    f.sort = SORTS[params.get('sort')] ? params.get('sort') : 'created';
    f.order = params.get('order') === 'asc' ? 'asc' : 'desc';
    f.limit = Math.min(1000, Math.max(1, Math.floor(Number(params.get('limit')) || 50)));
    f.offset = Math.max(0, Number(params.get('offset')) || 0);
    f.group = GROUPS[params.get('group')] ? params.get('group') : '';
    f.psort = PAGE_SORTS[params.get('psort')] ? params.get('psort') : '';
    return f;
}

function hrefFor(f, changes) {
    const n = {...f, ...changes};
    const q = new URLSearchParams();
    for (const k of TEXT_FILTERS)
        if (n[k] && !(k === 'gpu' && n.cpu))
            q.set(k, n[k]);
    if (n.cpu)
        q.set('cpu', '1');
    for (const k of n.knob)
        q.append('knob', k);
    for (const k of n.label)
        q.append('label', k);
    if (n.sort !== 'created')
        q.set('sort', n.sort);
    if (n.order !== 'desc')
        q.set('order', n.order);
    if (n.limit !== 50)
        q.set('limit', n.limit);
    if (n.offset)
        q.set('offset', n.offset);
    if (n.group)
        q.set('group', n.group);
    if (n.psort)
        q.set('psort', n.psort);
    const qs = q.toString();
    return '#/runs' + (qs ? '?' + qs : '');
}

function apiParams(f) {
    const p = {limit: f.limit, offset: f.offset};
    for (const k of TEXT_FILTERS)
        if (f[k] && !(k === 'gpu' && f.cpu))
            p[k] = f[k];
    if (f.cpu)
        p.gpu = '';
    if (f.knob.length)
        p.knob = f.knob;
    if (f.label.length)
        p.label = f.label;
    if (f.sort !== 'created')
        p.sort = f.sort;
    if (f.order !== 'desc')
        p.order = f.order;
    return p;
}

function field(id, label, input, hint) {
    return h('div', {class: 'field'}, h('label', {for: id}, label), input,
             hint ? h('span', {class: 'hint', id: id + '-hint'}, hint) : null);
}

function words(text) {
    return text.split(/\s+/).map((w) => w.trim()).filter(Boolean);
}

function filterForm(f, models) {
    const model = h('select', {id: 'f-model', name: 'model'},
                    h('option', {value: ''}, 'all models'),
                    models.map((m) => h('option', {value: m.name, selected: m.name === f.model},
                                        `${m.name} (${m.runs})`)));
    if (f.model && !models.some((m) => m.name === f.model))
        model.append(h('option', {value: f.model, selected: true}, f.model));
    const text = (id, name, value, attrs = {}) => h('input', {id, name, value, autocomplete: 'off',
                                                             spellcheck: 'false', ...attrs});
    const q = text('f-q', 'q', f.q, {type: 'search', placeholder: 'id, GPU, host, knob…',
                                     'aria-describedby': 'f-q-hint'});
    const knob = text('f-knob', 'knob', f.knob.join(' '),
                      {placeholder : 'tf32=on batch=8', 'aria-describedby' : 'f-knob-hint'});
    const label = text('f-label', 'label', f.label.join(' '), {placeholder: 'team=serving'});
    const gpu = text('f-gpu', 'gpu', f.gpu, {disabled: f.cpu, 'aria-describedby': 'f-gpu-hint'});
    const cpu = h('input', {id: 'f-cpu', name: 'cpu', type: 'checkbox', checked: f.cpu,
                            onchange: () => { gpu.disabled = cpu.checked; }});
    const backend = text('f-backend', 'backend', f.backend, {list: 'f-backend-list'});
    const backends = h('datalist', {id: 'f-backend-list'},
                       ['cpu', 'cpu64', 'cuda'].map((b) => h('option', {value: b})));
    const since = h('input', {id: 'f-since', name: 'since', type: 'date', value: f.since});
    const moreLabels = {device: 'Device key', driver: 'Driver', cuda: 'CUDA runtime', cudnn: 'cuDNN',
                        cublas: 'cuBLAS'};
    const more = {};
    for (const k of Object.keys(moreLabels))
        more[k] = text('f-' + k, k, f[k]);
    const limit = h('select', {id: 'f-limit', name: 'limit'},
                    [...new Set([...PAGE_SIZES, f.limit])].sort((x, y) => x - y)
                        .map((n) => h('option', {value: n, selected: n === f.limit}, String(n))));
    const moreOpen = ['device', 'driver', 'cuda', 'cudnn', 'cublas'].some((k) => f[k]) || f.cpu;
    const form = h('form', {class: 'filters', role: 'search', 'aria-label': 'Filter runs'},
        field('f-model', 'Model', model),
        field('f-q', 'Search', q, 'every word: id, model, GPU, host, device, knobs, labels'),
        field('f-knob', 'Knobs', knob, 'NAME=VALUE, exact; all must hold'),
        field('f-label', 'Labels', label),
        field('f-backend', 'Backend', backend), backends,
        field('f-since', 'Created since', since),
        field('f-limit', 'Per page', limit),
        h('details', {class: 'more-filters', open: moreOpen}, h('summary', {}, 'GPU, versions'),
          h('div', {class: 'more-fields'},
            field('f-gpu', 'GPU', gpu, 'exact name, as the run recorded it'),
            h('div', {class: 'field field-check'}, cpu, h('label', {for: 'f-cpu'}, 'CPU runs only')),
            Object.entries(more).map(([k, el]) => field('f-' + k, moreLabels[k], el)))),
        h('div', {class: 'field field-buttons'},
          h('button', {type: 'submit', class: 'primary'}, 'Apply'),
          h('a', {href: '#/runs', class: 'button'}, 'Clear')));
    form.addEventListener('submit', (e) => {
        e.preventDefault();
        const n = {model: model.value, q: q.value.trim(), gpu: gpu.value.trim(), cpu: cpu.checked,
                   backend: backend.value.trim(), since: since.value, knob: words(knob.value),
                   label: words(label.value), limit: Number(limit.value), offset: 0};
        for (const k of Object.keys(more))
            n[k] = more[k].value.trim();
        location.hash = hrefFor(f, n);
    });
    return form;
}

function pager(f, total) {
    const pages = Math.max(1, Math.ceil(total / f.limit));
    const page = Math.floor(f.offset / f.limit) + 1;
    const link = (label, offset, enabled, rel) => enabled
        ? h('a', {href: hrefFor(f, {offset}), class: 'button', rel}, label)
        : h('span', {class: 'button disabled', 'aria-disabled': 'true'}, label);
    const first = total ? f.offset + 1 : 0, last = Math.min(total, f.offset + f.limit);
    return h('nav', {class: 'pager', 'aria-label': 'Pages of runs'},
             link('« First', 0, page > 1),
             link('‹ Previous', Math.max(0, f.offset - f.limit), page > 1, 'prev'),
             h('span', {class: 'pager-status', 'aria-live': 'polite'},
               `Runs ${fmtInt(first)}–${fmtInt(last)} of ${fmtInt(total)} · page ${fmtInt(page)} of ${fmtInt(pages)}`),
             link('Next ›', f.offset + f.limit, page < pages, 'next'),
             link('Last »', (pages - 1) * f.limit, page < pages));
}

function stateBadge(run) {
    if (run.trimmed_at)
        return h('span', {class: 'badge s-trimmed', title: 'retention dropped its tensors on ' +
                          fmtTime(run.trimmed_at)}, 'trimmed');
    return h('span', {class: 'badge s-' + (run.state === 'complete' ? 'complete' : 'uploading')},
             run.state || 'unknown');
}

// Where the run stands against its model's baseline (from the daemon's diff cache).
function baselineCell(run) {
    const s = run.against_baseline;
    if (!s)
        return h('span', {class: 'muted', title: 'an admin picks a baseline for this model with ' +
                          '"Make baseline" or POST /api/v1/models/{model}/baseline'}, 'no baseline');
    if (s.state === 'baseline')
        return h('span', {class: 'badge baseline'}, 'baseline');
    const link = (text) => h('a', {href: routeHref('/diff', {a: run.id, b: s.baseline}),
                                   class: 'diff-link'}, text);
    if (s.state === 'pending')
        return h('span', {class: 'pending-compare'}, h('span', {class: 'muted'}, 'comparing… · '), link('compare'));
    if (s.state === 'unavailable')
        return h('span', {class: 'muted', title: 'retention dropped the tensors before a comparison'},
                 'cannot be compared');
    const verdict = s.first_divergent ? 'divergent' : s.verdict;
    return h('span', {class: 'standing', title: `At the output: ${s.verdict}, error ${fmtNum(s.err)}, ` +
                      `max |a−b| ${fmtNum(s.max_abs)}`},
             verdictBadge(verdict), ' · ', link('diff'));
}

// "Make baseline": an admin's, with the token of the header's box; a second click confirms.
function baselineButton(run, onDone) {
    const b = h('button', {type: 'button', class: 'small make-baseline',
                           'aria-label': `Make run ${shortId(run.id)} the baseline of ${run.model}`},
                'Make baseline');
    const note = h('span', {class: 'action-note', 'aria-live': 'polite'});
    let armed = false;
    b.addEventListener('click', async () => {
        if (!getToken()) {
            note.textContent = 'needs an admin token: enter it under "Access token" above';
            return;
        }
        if (!armed) {
            armed = true;
            b.textContent = 'Confirm';
            note.textContent = `the runs of ${run.model} will be compared against this one`;
            return;
        }
        b.disabled = true;
        try {
            await apiPost('baseline', {model: run.model}, {run: run.id});
            note.textContent = 'baseline set';
            onDone();
        } catch (e) {
            note.textContent = e.message;
            b.disabled = false;
            armed = false;
            b.textContent = 'Make baseline';
        }
    });
    return h('span', {class: 'action'}, b, note);
}

function sortHeader(f, key) {
    const active = f.sort === key;
    const next = active && f.order === 'desc' ? 'asc' : 'desc';
    return h('th', {scope: 'col', 'aria-sort': active ? (f.order === 'asc' ? 'ascending' : 'descending') : null},
             h('a', {href: hrefFor(f, {sort: key, order: next, offset: 0}), class: 'sort-link',
                     'data-sort': key},
               SORTS[key], h('span', {class: 'sort-mark', 'aria-hidden': 'true'},
                             active ? (f.order === 'asc' ? ' ▲' : ' ▼') : ' ↕')));
}

export async function render(root, ctx) {
    const f = readFilters(ctx.params);
    document.title = 'gpudiff: runs';
    root.append(h('div', {class: 'title-row'}, h('h1', {}, 'Runs'),
                  h('div', {class: 'share-bar'}, copyLinkButton())));
    const models = await getModels().catch((e) => {
        root.append(message('error', 'Models: ', e.message));
        return [];
    });
    if (!ctx.live())
        return;
    root.append(filterForm(f, models));
    const model = models.find((m) => m.name === f.model);
    if (model)
        root.append(h('p', {class: 'model-bar'}, h('strong', {}, model.name), ': ',
            `${fmtInt(model.runs)} runs, latest ${fmtTime(model.latest)}, baseline `,
            model.baseline ? h('code', {title: model.baseline}, shortId(model.baseline)) : 'none',
            ' · ', h('a', {href: '#/matrix/' + encodeURIComponent(model.name)}, 'device matrix'),
            ' · ', h('a', {href: '#/history/' + encodeURIComponent(model.name)}, 'history')));

    const box = h('section', {'aria-label': 'Run list'});
    root.append(box);
    let page;
    const t0 = performance.now();
    try {
        page = await apiGet('runs', apiParams(f), {signal: ctx.signal});
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        box.append(message('error', 'Runs: ', e.message));
        return;
    }
    if (!ctx.live())
        return;
    const ms = performance.now() - t0;
    box.append(pager(f, page.total));
    if (!page.runs.length) {
        box.append(message('info', page.total ? 'No runs on this page.' : 'No runs match these filters.'));
        return;
    }
    const compare = h('button', {type: 'button', class: 'primary', disabled: true}, 'Compare');
    const choice = h('span', {class: 'hint', 'aria-live': 'polite'},
                     'Pick run a and run b (and a truth run, e.g. a cpu64 run) in the table.');
    const overlay = h('button', {type: 'button', id: 'overlay-selected', disabled: true}, 'Overlay selected');
    const overlayNote = h('span', {class: 'hint', id: 'overlay-note', 'aria-live': 'polite'},
                          'Check runs to overlay their error along the layers against one truth.');
    const again = () => { window.dispatchEvent(new HashChangeEvent('hashchange')); };
    const standing = new Map(); // run id -> the daemon's standing, once it came
    const rowsById = new Map(page.runs.map((run) => [run.id, runRow(run, again, f)]));
    const table = h('table', {class: 'runs'},
        h('caption', {class: 'sr-only'}, 'Runs. Choose a, b and truth to compare, or check runs to overlay; ' +
          'a column header sorts.'),
        h('thead', {}, h('tr', {},
            h('th', {scope: 'col', class: 'pick'}, h('abbr', {title: 'run a (actual)'}, 'a')),
            h('th', {scope: 'col', class: 'pick'}, h('abbr', {title: 'run b (reference)'}, 'b')),
            h('th', {scope: 'col', class: 'pick'}, 'truth'),
            h('th', {scope: 'col', class: 'pick'}, h('abbr', {title: 'overlay: runs to draw against one truth'}, 'ovl')),
            sortHeader(f, 'created'), sortHeader(f, 'model'), sortHeader(f, 'backend'),
            sortHeader(f, 'gpu'), h('th', {scope: 'col'}, 'Knobs'), h('th', {scope: 'col'}, 'Tags'),
            sortHeader(f, 'host'), sortHeader(f, 'layers'), h('th', {scope: 'col'}, 'Status'),
            h('th', {scope: 'col'}, 'Run'), h('th', {scope: 'col'}, 'Against baseline'),
            pageSortHeader(f, 'first', 'First divergent'), pageSortHeader(f, 'truth', 'vs truth'),
            h('th', {scope: 'col'}, h('span', {class: 'sr-only'}, 'Actions')))),
        h('tbody', {}));
    const tbody = table.querySelector('tbody');
    // The page's rows in their groups and order (both on this page only: the daemon pages).
    const arrange = () => {
        const runs = [...page.runs];
        const truthErr = (r) => { const st = standing.get(r.id); return st && st.truth && st.truth.err; };
        const firstOf = (r) => { const st = standing.get(r.id); const b = (st && st.baseline) || r.against_baseline;
                                 return (b && b.first_divergent) || null; };
        if (f.psort === 'truth')
            runs.sort((x, y) => (truthErr(x) ?? Infinity) - (truthErr(y) ?? Infinity));
        else if (f.psort === 'first')
            runs.sort((x, y) => String(firstOf(x) ?? '\uffff').localeCompare(String(firstOf(y) ?? '\uffff')));
        const groupOf = (r) => (f.group === 'model' ? r.model : f.group === 'device' ? r.device || deviceLabel(r)
            : f.group === 'knob' ? knobWords(r).join(' ') || 'no knobs set' : '');
        const out = [];
        if (f.group) {
            const groups = new Map();
            for (const r of runs) {
                const g = groupOf(r);
                if (!groups.has(g))
                    groups.set(g, []);
                groups.get(g).push(r);
            }
            for (const [g, rs] of groups) {
                out.push(h('tr', {class: 'group-row', 'data-group': g},
                           h('th', {scope: 'rowgroup', colspan: 18}, `${GROUPS[f.group]}: ${g}`,
                             h('span', {class: 'muted'}, ` · ${fmtInt(rs.length)} run${rs.length === 1 ? '' : 's'} on this page`))));
                out.push(...rs.map((r) => rowsById.get(r.id)));
            }
        } else {
            out.push(...runs.map((r) => rowsById.get(r.id)));
        }
        tbody.replaceChildren(...out);
    };
    arrange();
    const checked = () => [...table.querySelectorAll('input[name="pick-ovl"]:checked')].map((c) => c.value);
    const truthFor = () => {
        const t = table.querySelector('input[name="pick-truth"]:checked');
        if (t)
            return t.value;
        for (const id of checked()) {
            const st = standing.get(id);
            if (st && st.truth && st.truth.against)
                return st.truth.against;
        }
        return '';
    };
    const updateOverlay = () => {
        const ids = checked(), truth = truthFor();
        overlay.disabled = !ids.length || !truth || ids.includes(truth) || ids.length > 16;
        overlay.textContent = `Overlay ${ids.length ? fmtInt(ids.length) + ' ' : ''}selected`;
        overlayNote.textContent = !ids.length ? 'Check runs to overlay their error along the layers against one truth.'
            : ids.length > 16 ? 'At most 16 runs at once.'
            : !truth ? 'Pick the truth (a cpu64 run) with the truth buttons: none of these has one.'
            : ids.includes(truth) ? 'The truth cannot be one of the runs drawn against it.'
            : `Against the truth ${shortId(truth)}.`;
    };
    table.addEventListener('change', () => {
        const pick = (name) => table.querySelector(`input[name="${name}"]:checked`);
        const a = pick('pick-a'), b = pick('pick-b'), t = pick('pick-truth');
        const ok = a && b && a.value !== b.value && (!t || (t.value !== a.value && t.value !== b.value));
        compare.disabled = !ok;
        choice.textContent = ok ? `Compare ${shortId(a.value)} with ${shortId(b.value)}` +
            (t ? `, truth ${shortId(t.value)}` : '') + '.'
            : a && b ? 'a, b and truth must be three different runs.' : 'Pick run a and run b.';
        updateOverlay();
    });
    compare.addEventListener('click', () => {
        const v = (name) => (table.querySelector(`input[name="${name}"]:checked`) || {}).value;
        location.hash = routeHref('/diff', {a: v('pick-a'), b: v('pick-b'), truth: v('pick-truth')});
    });
    overlay.addEventListener('click', () => {
        location.hash = routeHref('/overlay', {truth: truthFor(), runs: checked().join(',')});
    });
    const cols = [{key: 'id', label: 'id'}, {key: 'created_at', label: 'created_at'},
                  {key: 'model', label: 'model'}, {key: 'backend', label: 'backend'},
                  {key: (r) => deviceLabel(r), label: 'device'}, {key: 'device', label: 'device_key'},
                  {key: 'host', label: 'host'}, {key: 'knobs', label: 'knobs'}, {key: 'labels', label: 'labels'},
                  {key: 'layers', label: 'layers'}, {key: 'state', label: 'state'},
                  {key: (r) => r.against_baseline && r.against_baseline.state, label: 'against_baseline'},
                  {key: (r) => r.against_baseline && r.against_baseline.verdict, label: 'verdict'},
                  {key: (r) => r.against_baseline && r.against_baseline.first_divergent,
                   label: 'first_divergent'},
                  {key: (r) => { const st = standing.get(r.id); return st && st.truth ? st.truth.against : null; },
                   label: 'truth'},
                  {key: (r) => { const st = standing.get(r.id); return st && st.truth ? st.truth.err : null; },
                   label: 'err_vs_truth'}];
    const groupSel = h('select', {id: 'f-group', 'aria-label': 'Group the page by'},
                       h('option', {value: ''}, 'no groups'),
                       Object.entries(GROUPS).map(([k, label]) => h('option', {value: k, selected: f.group === k},
                                                                    'by ' + label)));
    groupSel.addEventListener('change', () => { location.hash = hrefFor(f, {group: groupSel.value}); });
    const standingNote = h('span', {class: 'hint', id: 'standing-note', 'aria-live': 'polite'});
    box.append(h('div', {class: 'compare-bar'}, compare, ' ', choice, ' ', overlay, ' ', overlayNote, ' ',
                 h('label', {for: 'f-group', class: 'inline-label'}, 'Group'), groupSel, ' ',
                 tableExports('runs', cols, () => page.runs),
                 h('span', {class: 'hint', id: 'runs-time'}, ` page read in ${Math.round(ms)} ms`), ' ', standingNote),
               h('div', {class: 'table-wrap'}, table), pager(f, page.total));
    // Where each run stands: asked for once the page is drawn (the daemon compares what it has
    // not compared yet, baselines beyond the newest 1,000 runs included).
    const ids = page.runs.filter((r) => r.state === 'complete').map((r) => r.id);
    if (ids.length) {
        standingNote.textContent = 'reading where the runs stand…';
        const t0 = performance.now();
        apiGet('standing', {runs: ids.join(','), truth: 'auto'}, {signal: ctx.signal}).then((r) => {
            if (!ctx.live())
                return;
            for (const st of r.runs) {
                standing.set(st.run, st);
                const tr = rowsById.get(st.run);
                if (tr)
                    fillStanding(tr, st);
            }
            standingNote.textContent = `standing read in ${Math.round(performance.now() - t0)} ms`;
            table.dataset.standing = 'done';
            if (f.psort)
                arrange();
            updateOverlay();
        }).catch((e) => {
            if (e.name !== 'AbortError')
                standingNote.textContent = 'where the runs stand could not be read: ' + e.message;
        });
    }
}

function pageSortHeader(f, key, label) {
    const active = f.psort === key;
    return h('th', {scope: 'col', 'aria-sort': active ? 'ascending' : null},
             h('a', {href: hrefFor(f, {psort: active ? '' : key}), class: 'sort-link', 'data-psort': key,
                     title: `Order this page by ${PAGE_SORTS[key]}`},
               label, h('span', {class: 'sort-mark', 'aria-hidden': 'true'}, active ? ' ▲' : ' ↕')));
}

// The cells the standing fills: against the baseline (when the list had it pending), the
// first divergent layer, the error against the truth.
function fillStanding(tr, st) {
    const b = st.baseline;
    const against = tr.querySelector('td.against');
    const run = tr.dataset.run;
    if (b && b.state === 'compared' && against && against.querySelector('.pending-compare'))
        against.replaceChildren(baselineCell({id: run, against_baseline: {...b, baseline: b.against}}));
    const first = tr.querySelector('td.first-cell');
    if (first && b)
        first.replaceChildren(b.state === 'compared' ? (b.first_divergent ? h('code', {}, b.first_divergent)
            : h('span', {class: 'muted'}, 'none')) : h('span', {class: 'muted'}, b.state));
    const t = st.truth, cell = tr.querySelector('td.truth-cell');
    if (!cell)
        return;
    if (!t) {
        cell.replaceChildren(h('span', {class: 'muted', title: 'no cpu64 run of this model and input'}, 'no truth'));
        return;
    }
    if (t.state !== 'compared') {
        cell.replaceChildren(h('span', {class: 'muted'}, t.state === 'truth' ? 'is the truth' : t.state));
        return;
    }
    cell.replaceChildren(h('a', {href: routeHref('/diff', {a: run, b: t.against}), class: 'truth-link',
                                 title: `against ${t.against}: ${t.verdict}` +
                                     (t.first_divergent ? `, first divergent ${t.first_divergent}` : '')},
                           fmtNum(t.err)), ' ', verdictBadge(t.verdict));
    cell.dataset.err = t.err ?? '';
}

function runRow(run, again, f) {
    const radio = (name) => h('input', {type: 'radio', name, value: run.id,
                                        'aria-label': `${name.slice(5)}: run ${shortId(run.id)}`});
    const knobs = knobWords(run);
    const allKnobs = Object.entries(run.knobs || {}).map(([k, v]) =>
        `${k}=${v === null ? 'default' : typeof v === 'object' ? JSON.stringify(v) : v}`);
    const labels = Object.entries(run.labels || {}).map(([k, v]) => `${k}=${v}`);
    const device = deviceLabel(run);
    const framework = !(run.env && run.env.engine_version);
    const s = run.against_baseline;
    const complete = run.state === 'complete';
    return h('tr', {'data-run': run.id},
        h('td', {class: 'pick'}, radio('pick-a')),
        h('td', {class: 'pick'}, radio('pick-b')),
        h('td', {class: 'pick'}, radio('pick-truth')),
        h('td', {class: 'pick'}, h('input', {type: 'checkbox', name: 'pick-ovl', value: run.id, disabled: !complete,
                                              'aria-label': `overlay: run ${shortId(run.id)}`})),
        h('td', {class: 'nowrap'}, fmtTime(run.created_at)),
        h('td', {}, h('a', {href: routeHref('/runs', {model: run.model})}, run.model)),
        h('td', {}, run.backend, framework ? h('span', {class: 'sub'}, 'framework dump') : null,
          bitwiseBadge(run)),
        h('td', {class: 'device-cell' + (device === run.gpu ? '' : ' muted'), title: run.device || null}, device),
        h('td', {class: 'knobs-cell', title: allKnobs.join(' ') || null},
          knobs.length ? h('ul', {class: 'knobs'}, knobs.map((k) => h('li', {}, k)))
                       : h('span', {class: 'muted'}, allKnobs.length ? 'defaults' : 'none')),
        h('td', {class: 'labels-cell'}, labels.length
            ? h('ul', {class: 'tags'}, labels.map((k) => h('li', {}, h('a', {class: 'tag', title: `runs tagged ${k}`,
                href: hrefFor({...f, label: [k], offset: 0}, {})}, k))))
            : h('span', {class: 'muted'}, '–')),
        h('td', {}, run.host || '–'),
        h('td', {class: 'num'}, fmtInt(run.layers)),
        h('td', {}, stateBadge(run)),
        h('td', {}, h('code', {title: run.id}, shortId(run.id))),
        h('td', {class: 'against'}, baselineCell(run)),
        h('td', {class: 'first-cell'}, s && s.state === 'compared'
            ? (s.first_divergent ? h('code', {}, s.first_divergent) : h('span', {class: 'muted'}, 'none'))
            : h('span', {class: 'muted'}, s ? '…' : '–')),
        h('td', {class: 'truth-cell num'}, h('span', {class: 'muted'}, complete ? '…' : '–')),
        h('td', {}, (!s || s.state !== 'baseline') && complete && !run.trimmed_at
            ? baselineButton(run, again) : ''));
}
