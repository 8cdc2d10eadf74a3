// views/runs.js: the runs, newest first, filtered and paged by the daemon (GET /api/v1/runs
// with limit/offset: fast with 10,000 runs, only one page ever comes over). Each run links
// to its diff against its model's baseline; radio buttons pick two runs (and a truth run)
// to compare.
import {h, clear, message, fmtTime, fmtInt, shortId, routeHref} from '../dom.js';
import {apiGet, getModels, getRun, pooled} from '../api.js';

const PAGE_SIZES = [25, 50, 100, 200];

// The filters as the hash holds them; "" means no filter, cpu=1 means gpu "" (CPU runs).
function readFilters(params) {
    const limit = Math.min(1000, Math.max(1, Math.floor(Number(params.get('limit')) || 50)));
    return {
        model: params.get('model') || '',
        gpu: params.get('gpu') || '',
        cpu: params.get('cpu') === '1',
        backend: params.get('backend') || '',
        since: params.get('since') || '',
        knob: params.get('knob') || '',
        limit,
        offset: Math.max(0, Number(params.get('offset')) || 0),
    };
}

function hrefFor(f, changes) {
    const n = {...f, ...changes};
    return routeHref('/runs', {model: n.model, gpu: n.cpu ? '' : n.gpu, cpu: n.cpu ? '1' : '',
                               backend: n.backend, since: n.since, knob: n.knob,
                               limit: n.limit === 50 ? '' : n.limit, offset: n.offset || ''});
}

// A run's knobs as "key=value" strings (null values shown as "default").
function knobList(run) {
    return Object.entries(run.knobs || {}).map(([k, v]) =>
        `${k}=${v === null ? 'default' : typeof v === 'object' ? JSON.stringify(v) : v}`);
}

function knobMatches(run, filter) {
    if (!filter)
        return true;
    const want = filter.toLowerCase();
    return knobList(run).some((kv) => kv.toLowerCase().includes(want));
}

function field(id, label, input, hint) {
    return h('div', {class: 'field'}, h('label', {for: id}, label), input,
             hint ? h('span', {class: 'hint', id: id + '-hint'}, hint) : null);
}

function filterForm(f, models) {
    const model = h('select', {id: 'f-model', name: 'model'},
                    h('option', {value: ''}, 'all models'),
                    models.map((m) => h('option', {value: m.name, selected: m.name === f.model},
                                        `${m.name} (${m.runs})`)));
    if (f.model && !models.some((m) => m.name === f.model))
        model.append(h('option', {value: f.model, selected: true}, f.model));
    const gpu = h('input', {id: 'f-gpu', name: 'gpu', value: f.gpu, disabled: f.cpu,
                            'aria-describedby': 'f-gpu-hint', autocomplete: 'off'});
    const cpu = h('input', {id: 'f-cpu', name: 'cpu', type: 'checkbox', checked: f.cpu,
                            onchange: () => { gpu.disabled = cpu.checked; }});
    const backend = h('input', {id: 'f-backend', name: 'backend', value: f.backend,
                                list: 'f-backend-list', autocomplete: 'off'});
    const backends = h('datalist', {id: 'f-backend-list'},
                       ['cpu', 'cpu64', 'cuda'].map((b) => h('option', {value: b})));
    const since = h('input', {id: 'f-since', name: 'since', type: 'date', value: f.since});
    const knob = h('input', {id: 'f-knob', name: 'knob', value: f.knob, autocomplete: 'off',
                             placeholder: 'emulate=tf32', 'aria-describedby': 'f-knob-hint'});
    const limit = h('select', {id: 'f-limit', name: 'limit'},
                    [...new Set([...PAGE_SIZES, f.limit])].sort((x, y) => x - y)
                        .map((n) => h('option', {value: n, selected: n === f.limit}, String(n))));
    const form = h('form', {class: 'filters', role: 'search', 'aria-label': 'Filter runs'},
        field('f-model', 'Model', model),
        field('f-gpu', 'GPU', gpu, 'exact name, as the run recorded it'),
        h('div', {class: 'field field-check'}, cpu, h('label', {for: 'f-cpu'}, 'CPU runs only')),
        field('f-backend', 'Backend', backend), backends,
        field('f-since', 'Created since', since),
        field('f-knob', 'Knob', knob, 'matches the runs of this page'),
        field('f-limit', 'Per page', limit),
        h('div', {class: 'field field-buttons'},
          h('button', {type: 'submit', class: 'primary'}, 'Apply'),
          h('a', {href: '#/runs', class: 'button'}, 'Clear')));
    form.addEventListener('submit', (e) => {
        e.preventDefault();
        location.hash = hrefFor({}, {
            model: model.value, gpu: gpu.value.trim(), cpu: cpu.checked,
            backend: backend.value.trim(), since: since.value, knob: knob.value.trim(),
            limit: Number(limit.value), offset: 0,
        });
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

function baselineCell(run, models) {
    const m = models.find((x) => x.name === run.model);
    if (!m || !m.baseline)
        return h('span', {class: 'muted', title: 'pick a baseline for this model (admin: ' +
                          'POST /api/v1/models/{model}/baseline)'}, 'no baseline');
    if (m.baseline === run.id)
        return h('span', {class: 'badge baseline'}, 'baseline');
    return h('a', {href: routeHref('/diff', {a: run.id, b: m.baseline}), class: 'diff-link'},
             'diff vs baseline');
}

export async function render(root, ctx) {
    const f = readFilters(ctx.params);
    document.title = 'gpudiff: runs';
    root.append(h('h1', {}, 'Runs'));
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
    try {
        page = await apiGet('runs', {
            model: f.model || undefined, gpu: f.cpu ? '' : f.gpu || undefined,
            backend: f.backend || undefined, since: f.since || undefined,
            limit: f.limit, offset: f.offset,
        }, {signal: ctx.signal});
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        box.append(message('error', 'Runs: ', e.message));
        return;
    }
    if (!ctx.live())
        return;
    box.append(pager(f, page.total));
    if (!page.runs.length) {
        box.append(message('info', page.total ? 'No runs on this page.' : 'No runs match these filters.'));
        return;
    }
    const compare = h('button', {type: 'button', class: 'primary', disabled: true}, 'Compare');
    const choice = h('span', {class: 'hint', 'aria-live': 'polite'},
                     'Pick run a and run b (and a truth run, e.g. a cpu64 run) in the table.');
    const rows = page.runs.map((run) => runRow(run, models));
    const table = h('table', {class: 'runs'},
        h('caption', {class: 'sr-only'}, 'Runs, newest first. Choose a, b and truth to compare.'),
        h('thead', {}, h('tr', {},
            h('th', {scope: 'col', class: 'pick'}, h('abbr', {title: 'run a (actual)'}, 'a')),
            h('th', {scope: 'col', class: 'pick'}, h('abbr', {title: 'run b (reference)'}, 'b')),
            h('th', {scope: 'col', class: 'pick'}, 'truth'),
            ['Created', 'Model', 'Backend', 'GPU', 'Host', 'Knobs', 'Layers', 'Status', 'Run',
             'Against baseline'].map((t) => h('th', {scope: 'col'}, t)))),
        h('tbody', {}, rows.map((r) => r.tr)));
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
    box.append(h('div', {class: 'compare-bar'}, compare, ' ', choice),
               h('div', {class: 'table-wrap'}, table), pager(f, page.total));

    // Knobs are not in the run summaries: read each run of the page (at most 4 at a time).
    const filterNote = h('p', {class: 'hint', 'aria-live': 'polite'});
    if (f.knob)
        box.insertBefore(filterNote, box.firstChild.nextSibling);
    const details = await pooled(page.runs.map((run) => () => getRun(run.id)), 4);
    if (!ctx.live())
        return;
    let hidden = 0;
    details.forEach((d, i) => {
        const cell = rows[i].knobs;
        clear(cell);
        if (!d.ok) {
            cell.append(h('span', {class: 'muted'}, '?'));
            return;
        }
        const list = knobList(d.value);
        cell.append(list.length ? h('ul', {class: 'knobs'}, list.map((k) => h('li', {}, k)))
                                : h('span', {class: 'muted'}, 'none'));
        if (!knobMatches(d.value, f.knob)) {
            rows[i].tr.hidden = true;
            hidden++;
        }
    });
    if (f.knob)
        filterNote.textContent = `Knob filter "${f.knob}": ${hidden} of the ${page.runs.length} ` +
            'runs of this page do not match and are hidden (the daemon filters model, GPU, ' +
            'backend and date; knobs are matched here, page by page).';
}

function runRow(run, models) {
    const radio = (name) => h('input', {type: 'radio', name, value: run.id,
                                        'aria-label': `${name.slice(5)}: run ${shortId(run.id)}`});
    const knobs = h('td', {class: 'knobs-cell'}, h('span', {class: 'muted'}, '…'));
    const tr = h('tr', {'data-run': run.id},
        h('td', {class: 'pick'}, radio('pick-a')),
        h('td', {class: 'pick'}, radio('pick-b')),
        h('td', {class: 'pick'}, radio('pick-truth')),
        h('td', {class: 'nowrap'}, fmtTime(run.created_at)),
        h('td', {}, h('a', {href: routeHref('/runs', {model: run.model})}, run.model)),
        h('td', {}, run.backend),
        h('td', {}, run.gpu || h('span', {class: 'muted'}, 'CPU')),
        h('td', {}, run.host || '–'),
        knobs,
        h('td', {class: 'num'}, fmtInt(run.layers)),
        h('td', {}, stateBadge(run)),
        h('td', {}, h('code', {title: run.id}, shortId(run.id))),
        h('td', {}, baselineCell(run, models)));
    return {tr, knobs};
}
