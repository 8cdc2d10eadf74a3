// views/runs.js: the runs, filtered, searched, sorted and paged by the daemon (GET
// /api/v1/runs: only one page ever comes over, and a filter finds a run on any page): by
// model, words, knobs, labels, GPU, backend, date, device key and library versions. Each run
// shows where it ran (a framework's GPU dump without a GPU name says so, never "CPU"), its
// knobs and labels, and its standing against its model's baseline; radio buttons pick two
// runs (and a truth run) to compare; an admin token makes a run the baseline.
import {h, message, fmtTime, fmtInt, fmtNum, shortId, routeHref, verdictBadge, deviceLabel,
        knobWords, bitwiseBadge} from '../dom.js';
import {apiGet, apiPost, getModels, getToken} from '../api.js';
import {copyLinkButton, tableExports} from '../share.js';

const PAGE_SIZES = [25, 50, 100, 200];
const TEXT_FILTERS = ['model', 'q', 'gpu', 'backend', 'since', 'device', 'driver', 'cuda', 'cudnn',
                      'cublas'];
const SORTS = {created: 'Created', model: 'Model', backend: 'Backend', gpu: 'Device', host: 'Host',
               layers: 'Layers'};

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
        return h('span', {}, h('span', {class: 'muted'}, 'not compared yet · '), link('compare'));
    if (s.state === 'unavailable')
        return h('span', {class: 'muted', title: 'retention dropped the tensors before a comparison'},
                 'cannot be compared');
    const verdict = s.first_divergent ? 'divergent' : s.verdict;
    return h('span', {class: 'standing', title: `At the output: ${s.verdict}, error ${fmtNum(s.err)}, ` +
                      `max |a−b| ${fmtNum(s.max_abs)}`},
             verdictBadge(verdict), s.first_divergent ? [' from ', h('code', {}, s.first_divergent)] : '',
             ' · ', link('diff'));
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
    const again = () => { window.dispatchEvent(new HashChangeEvent('hashchange')); };
    const rows = page.runs.map((run) => runRow(run, again));
    const table = h('table', {class: 'runs'},
        h('caption', {class: 'sr-only'}, 'Runs. Choose a, b and truth to compare; a column header sorts.'),
        h('thead', {}, h('tr', {},
            h('th', {scope: 'col', class: 'pick'}, h('abbr', {title: 'run a (actual)'}, 'a')),
            h('th', {scope: 'col', class: 'pick'}, h('abbr', {title: 'run b (reference)'}, 'b')),
            h('th', {scope: 'col', class: 'pick'}, 'truth'),
            sortHeader(f, 'created'), sortHeader(f, 'model'), sortHeader(f, 'backend'),
            sortHeader(f, 'gpu'), h('th', {scope: 'col'}, 'Knobs'), h('th', {scope: 'col'}, 'Labels'),
            sortHeader(f, 'host'), sortHeader(f, 'layers'), h('th', {scope: 'col'}, 'Status'),
            h('th', {scope: 'col'}, 'Run'), h('th', {scope: 'col'}, 'Against baseline'),
            h('th', {scope: 'col'}, h('span', {class: 'sr-only'}, 'Actions')))),
        h('tbody', {}, rows));
    table.addEventListener('change', () => {
        const pick = (name) => table.querySelector(`input[name="${name}"]:checked`);
        const a = pick('pick-a'), b = pick('pick-b'), t = pick('pick-truth');
        const ok = a && b && a.value !== b.value && (!t || (t.value !== a.value && t.value !== b.value));
        compare.disabled = !ok;
        choice.textContent = ok ? `Compare ${shortId(a.value)} with ${shortId(b.value)}` +
            (t ? `, truth ${shortId(t.value)}` : '') + '.'
            : a && b ? 'a, b and truth must be three different runs.' : 'Pick run a and run b.';
    });
    compare.addEventListener('click', () => {
        const v = (name) => (table.querySelector(`input[name="${name}"]:checked`) || {}).value;
        location.hash = routeHref('/diff', {a: v('pick-a'), b: v('pick-b'), truth: v('pick-truth')});
    });
    const cols = [{key: 'id', label: 'id'}, {key: 'created_at', label: 'created_at'},
                  {key: 'model', label: 'model'}, {key: 'backend', label: 'backend'},
                  {key: (r) => deviceLabel(r), label: 'device'}, {key: 'device', label: 'device_key'},
                  {key: 'host', label: 'host'}, {key: 'knobs', label: 'knobs'}, {key: 'labels', label: 'labels'},
                  {key: 'layers', label: 'layers'}, {key: 'state', label: 'state'},
                  {key: (r) => r.against_baseline && r.against_baseline.state, label: 'against_baseline'},
                  {key: (r) => r.against_baseline && r.against_baseline.verdict, label: 'verdict'},
                  {key: (r) => r.against_baseline && r.against_baseline.first_divergent,
                   label: 'first_divergent'}];
    box.append(h('div', {class: 'compare-bar'}, compare, ' ', choice, ' ',
                 tableExports('runs', cols, () => page.runs),
                 h('span', {class: 'hint', id: 'runs-time'}, ` page read in ${Math.round(ms)} ms`)),
               h('div', {class: 'table-wrap'}, table), pager(f, page.total));
}

function runRow(run, again) {
    const radio = (name) => h('input', {type: 'radio', name, value: run.id,
                                        'aria-label': `${name.slice(5)}: run ${shortId(run.id)}`});
    const knobs = knobWords(run);
    const allKnobs = Object.entries(run.knobs || {}).map(([k, v]) =>
        `${k}=${v === null ? 'default' : typeof v === 'object' ? JSON.stringify(v) : v}`);
    const labels = Object.entries(run.labels || {}).map(([k, v]) => `${k}=${v}`);
    const device = deviceLabel(run);
    const framework = !(run.env && run.env.engine_version);
    const s = run.against_baseline;
    return h('tr', {'data-run': run.id},
        h('td', {class: 'pick'}, radio('pick-a')),
        h('td', {class: 'pick'}, radio('pick-b')),
        h('td', {class: 'pick'}, radio('pick-truth')),
        h('td', {class: 'nowrap'}, fmtTime(run.created_at)),
        h('td', {}, h('a', {href: routeHref('/runs', {model: run.model})}, run.model)),
        h('td', {}, run.backend, framework ? h('span', {class: 'sub'}, 'framework dump') : null,
          bitwiseBadge(run)),
        h('td', {class: device === run.gpu ? null : 'muted', title: run.device || null}, device),
        h('td', {class: 'knobs-cell', title: allKnobs.join(' ') || null},
          knobs.length ? h('ul', {class: 'knobs'}, knobs.map((k) => h('li', {}, k)))
                       : h('span', {class: 'muted'}, allKnobs.length ? 'defaults' : 'none')),
        h('td', {class: 'labels-cell'}, labels.length ? h('ul', {class: 'knobs'}, labels.map((k) => h('li', {}, k)))
                                                      : h('span', {class: 'muted'}, '–')),
        h('td', {}, run.host || '–'),
        h('td', {class: 'num'}, fmtInt(run.layers)),
        h('td', {}, stateBadge(run)),
        h('td', {}, h('code', {title: run.id}, shortId(run.id))),
        h('td', {class: 'against'}, baselineCell(run)),
        h('td', {}, (!s || s.state !== 'baseline') && run.state === 'complete' && !run.trimmed_at
            ? baselineButton(run, again) : ''));
}
