// views/matrix.js: devices x devices for one model (GET /api/v1/models/{m}/matrix), for fleets
// of dozens of devices: each cell is the row device's run as a against the column device's run
// as b, at the last layer, coloured on the absolute log scale of scale.js (fixed decades, a
// legend in errors and bits; a colour never shifts as the matrix fills in), its value written
// in it (or, at fleet width, in its label and title: a compact cell of 22 px), and marked when
// a device's output holds NaN or Inf (which a bitwise twin would otherwise hide as "0").
// Devices are named by what tells them apart (the parts of the key, the versions and labels
// that differ among those shown), sorted by key, clustered by distance (average linkage:
// devices that agree stand together), by mean error, or by the distance to one device (a
// header's button), and filtered by label, driver and knob. A first load shows the cached
// cells at once and computes the rest row by row, two rows at a time, with a progress bar;
// the daemon then keeps the whole matrix, so the next load is one read.
import {h, message, fmtNum, fmtInt, fmtTime, shortId, routeHref, replaceHash} from '../dom.js';
import {apiGet, getModels} from '../api.js';
import {errScale, colorOf, textOn, scaleLegend, NONFINITE} from '../scale.js';
import {copyLinkButton, tableExports} from '../share.js';

const COMPACT_FROM = 16; // devices from which cells are compact (values in labels)
const PARALLEL_ROWS = 2; // rows computed at once (the daemon's compare threads)

// A device key made short: the backend kept, the GPU name without its maker's prefixes, the
// knobs as written. The whole key is in the header's title and shown on focus.
export function shortKey(key) {
    return String(key).replace(/NVIDIA |GeForce |Tesla /g, '').replace(/ conv_algo=/, ' algo=')
        .replace(/ emulate=/, ' emu=');
}

// What a device is, attribute by attribute: the parts of its key and the facts of its run.
function attributes(d) {
    const out = new Map();
    const env = d.env || {};
    out.set('backend', d.backend);
    out.set('gpu', d.gpu ? shortKey(d.gpu) : null);
    const k = d.knobs || {};
    for (const [name, v] of Object.entries(k))
        if (v !== null && v !== false && name !== 'threads' && !(name === 'emulate' && v === 'none'))
            out.set('knob.' + name, v === true ? name : `${name === 'conv_algo' ? 'algo' : name}=${v}`);
    if (env.driver)
        out.set('driver', 'drv ' + env.driver);
    if (env.cudnn)
        out.set('cudnn', 'cuDNN ' + env.cudnn);
    if (env.cuda_runtime)
        out.set('cuda', 'CUDA ' + env.cuda_runtime);
    for (const [name, v] of Object.entries({...(env.labels || {}), ...(d.labels || {})}))
        out.set('label.' + name, `${name}=${v}`);
    if (env.host)
        out.set('host', env.host);
    return out;
}

// Each device's label of what differs between the devices shown: the attributes whose value
// is not the same for all of them, in a fixed order.
export function differingLabels(devs) {
    const attrs = devs.map(attributes);
    const keys = [...new Set(attrs.flatMap((a) => [...a.keys()]))];
    const varying = keys.filter((k) => new Set(attrs.map((a) => a.get(k) ?? '')).size > 1);
    return attrs.map((a, i) => {
        const parts = varying.map((k) => a.get(k)).filter(Boolean);
        return parts.length ? parts.join(' · ') : shortKey(devs[i].key);
    });
}

async function modelPicker(current) {
    const models = await getModels().catch(() => []);
    const sel = h('select', {id: 'm-model'}, h('option', {value: ''}, 'choose a model'),
                  models.map((m) => h('option', {value: m.name, selected: m.name === current}, m.name)));
    const form = h('form', {class: 'filters', 'aria-label': 'Model'},
                   h('div', {class: 'field'}, h('label', {for: 'm-model'}, 'Model'), sel),
                   h('div', {class: 'field field-buttons'}, h('button', {type: 'submit', class: 'primary'}, 'Show')));
    form.addEventListener('submit', (e) => {
        e.preventDefault();
        if (sel.value)
            location.hash = '#/matrix/' + encodeURIComponent(sel.value);
    });
    return form;
}

// The distance of two devices for ordering: the larger of both cells' errors on a log scale
// (0: bitwise equal), not comparable or not finite farthest.
function distance(cells, i, j) {
    if (i === j)
        return 0;
    const v = (c) => (!c || c.verdict === 'incomparable' || c.verdict === 'nonfinite' || c.err == null ? 12
        : c.err === 0 ? 0 : Math.max(0.1, Math.log10(c.err) + 11));
    return Math.max(v(cells[i] && cells[i][j]), v(cells[j] && cells[j][i]));
}

// Average-linkage clustering of the devices; the leaf order of its tree.
export function clusterOrder(n, dist) {
    let clusters = Array.from({length: n}, (_, i) => ({members: [i]}));
    const d = (a, b) => {
        let sum = 0;
        for (const i of a.members)
            for (const j of b.members)
                sum += dist(i, j);
        return sum / (a.members.length * b.members.length);
    };
    while (clusters.length > 1) {
        let best = [0, 1], bd = Infinity;
        for (let x = 0; x < clusters.length; x++)
            for (let y = x + 1; y < clusters.length; y++) {
                const v = d(clusters[x], clusters[y]);
                if (v < bd) {
                    bd = v;
                    best = [x, y];
                }
            }
        const [x, y] = best;
        const merged = {members: [...clusters[x].members, ...clusters[y].members]};
        clusters = clusters.filter((_, k) => k !== x && k !== y);
        clusters.push(merged);
    }
    return clusters.length ? clusters[0].members : [];
}

function nonfinite(dev) {
    const nf = dev.nonfinite;
    return nf && (nf.nan > 0 || nf.inf > 0) ? nf : null;
}

function fillCell(td, c, da, db, scale, compact) {
    td.replaceChildren();
    td.className = 'cell';
    if (c === null || c === undefined) {
        td.classList.add('pending');
        td.append(h('span', {class: 'cell-err', 'aria-hidden': 'true'}, '…'), h('span', {class: 'sr-only'}, 'not compared yet'));
        return;
    }
    if (c.a === c.b) {
        td.classList.add('self');
        td.append(compact ? '' : h('span', {'aria-hidden': 'true'}, '—'), h('span', {class: 'sr-only'}, 'same run'));
        return;
    }
    // NaN or Inf: a device's output holds them (a bitwise twin's cell says 0), or they disagree.
    const nfa = nonfinite(da), nfb = nonfinite(db);
    const bad = c.verdict === 'nonfinite' || nfa || nfb;
    const what = [nfa ? `${da.key} has ${nfa.nan ? fmtInt(nfa.nan) + ' NaN' : ''}${nfa.nan && nfa.inf ? ' and ' : ''}` +
                        `${nfa.inf ? fmtInt(nfa.inf) + ' Inf' : ''} in its output` : '',
                  nfb ? `${db.key} has ${nfb.nan ? fmtInt(nfb.nan) + ' NaN' : ''}${nfb.nan && nfb.inf ? ' and ' : ''}` +
                        `${nfb.inf ? fmtInt(nfb.inf) + ' Inf' : ''} in its output` : ''].filter(Boolean).join('; ');
    const bg = bad ? NONFINITE : colorOf(scale, c.verdict === 'incomparable' ? null : c.err);
    const value = c.err === 0 ? '0' : c.err == null ? 'n/a' : fmtNum(c.err, 2);
    const label = `${da.key} vs ${db.key}: ${c.verdict}, error ${fmtNum(c.err)}, max |a−b| ` +
        `${fmtNum(c.max_abs)}` + (c.first_divergent ? `, first divergent ${c.first_divergent}` : '') +
        (what ? `; ${what}` : '');
    const glyph = bad ? ((nfa && nfa.nan) || (nfb && nfb.nan) || c.verdict === 'nonfinite' ? 'NaN' : 'Inf') : null;
    const link = h('a', {href: routeHref('/diff', {a: c.a, b: c.b}), class: 'cell-link', 'aria-label': label,
                         title: label, 'data-value': value},
                   compact ? (glyph || '') : [h('span', {class: 'cell-err'}, glyph ? `${value} ${glyph}` : value),
                                              h('span', {class: 'cell-verdict'}, c.verdict)]);
    td.classList.add('v-' + c.verdict);
    if (bad)
        td.classList.add('nonfinite-cell');
    td.dataset.a = c.a;
    td.dataset.b = c.b;
    td.append(link);
    td.style.backgroundColor = bg;
    link.style.color = textOn(bg);
}

export async function render(root, ctx) {
    const model = ctx.segment;
    const p = ctx.params;
    document.title = 'gpudiff: matrix' + (model ? ' of ' + model : '');
    const shareBar = h('div', {class: 'share-bar', role: 'group', 'aria-label': 'Share this matrix'});
    root.append(h('div', {class: 'title-row'},
                  h('h1', {}, 'Device matrix', model ? [': ', h('span', {class: 'name'}, model)] : ''),
                  shareBar));
    root.append(await modelPicker(model));
    if (!model) {
        root.append(message('info', 'Choose a model to see how its devices disagree.'));
        return;
    }
    let m;
    try {
        // The query form reaches every model name, one holding '/' too. Only what is cached:
        // the rest is computed below, row by row, with progress.
        m = await apiGet('matrix', {model, compute: 'none'}, {signal: ctx.signal});
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        root.append(message('error', `Matrix of ${model}: ${e.message}`));
        return;
    }
    if (!ctx.live())
        return;
    const devs = m.devices || [];
    if (!devs.length) {
        root.append(message('info', `${model} has no complete runs.`));
        return;
    }
    const cells = m.cells;
    const n = devs.length;
    const state = {sort: ['key', 'cluster', 'mean', 'to'].includes(p.get('sort')) ? p.get('sort') : 'key',
                   to: Number(p.get('to')) || 0, label: p.get('label') || '', driver: p.get('driver') || '',
                   knob: p.get('knob') || '', values: p.get('values') === '1' || n < COMPACT_FROM};
    const keep = () => replaceHash(routeHref('/matrix/' + encodeURIComponent(model), {
        sort: state.sort === 'key' ? '' : state.sort, to: state.sort === 'to' ? state.to : '',
        label: state.label, driver: state.driver, knob: state.knob,
        values: state.values && n >= COMPACT_FROM ? '1' : ''}));
    root.append(h('p', {class: 'model-links'}, h('a', {href: '#/heatmap/' + encodeURIComponent(model), id: 'heatmap-link'},
                                                  'Devices by layers (heatmap against the baseline)')));
    root.append(h('p', {class: 'lead'}, `The newest run of each of ${n} devices. Row: run a; ` +
                  'column: run b (the reference). Each cell: the error at the last layer relative to ' +
                  'max |b|, its colour on the fixed scale of the legend; red with NaN or Inf: a device\'s ' +
                  'output is not finite. Devices are named by what differs between them; a header shows ' +
                  'the whole device key on hover or focus. A cell opens the diff.'));
    const progress = h('div', {class: 'progress-box', hidden: !m.pending},
        h('label', {for: 'matrix-progress'}, 'Comparing the pairs not compared before: '),
        h('progress', {id: 'matrix-progress', max: m.pending || 1, value: 0}),
        h('span', {id: 'matrix-progress-text', 'aria-live': 'polite'}));
    root.append(progress);
    const scale = errScale([]);

    // ---- the controls: sort, filters, values ----
    const optionsOf = (get) => [...new Set(devs.flatMap(get))].filter(Boolean).sort();
    const labelValues = optionsOf((d) => Object.entries({...((d.env || {}).labels || {}), ...(d.labels || {})})
        .map(([k, v]) => `${k}=${v}`));
    const driverValues = optionsOf((d) => [(d.env || {}).driver]);
    const knobValues = optionsOf((d) => Object.entries(d.knobs || {})
        .filter(([k, v]) => v !== null && k !== 'threads').map(([k, v]) => `${k}=${v}`));
    const select = (id, label, values, current, any) => {
        const sel = h('select', {id}, h('option', {value: ''}, any),
                      values.map((v) => h('option', {value: v, selected: v === current}, v)));
        return [sel, h('div', {class: 'field'}, h('label', {for: id}, label), sel)];
    };
    const [sortSel, sortField] = select('m-sort', 'Order', [], '', 'by device key');
    sortSel.append(h('option', {value: 'cluster', selected: state.sort === 'cluster'}, 'clustered by distance'),
                   h('option', {value: 'mean', selected: state.sort === 'mean'}, 'by mean error, smallest first'),
                   h('option', {value: 'to', selected: state.sort === 'to'}, 'by distance to one device'));
    const [labelSel, labelField] = select('m-label', 'Label', labelValues, state.label, 'any label');
    const [driverSel, driverField] = select('m-driver', 'Driver', driverValues, state.driver, 'any driver');
    const [knobSel, knobField] = select('m-knob', 'Knob', knobValues, state.knob, 'any knobs');
    const valuesBox = h('input', {id: 'm-values', type: 'checkbox', checked: state.values});
    const shownNote = h('p', {class: 'hint', id: 'matrix-shown', 'aria-live': 'polite'});
    root.append(h('form', {class: 'filters matrix-tools', 'aria-label': 'Order and filter the devices'},
                  sortField, labelField, driverField, knobField,
                  h('div', {class: 'field field-check'}, valuesBox, h('label', {for: 'm-values'}, 'Values in the cells'))),
                shownNote);

    const wrap = h('div', {class: 'matrix-wrap', tabindex: 0, role: 'region',
                           'aria-label': 'The matrix (scrolls both ways)'});
    const legendBox = h('div', {class: 'legend-box'}, scaleLegend(scale, 'error at the last layer relative to max |b|'));
    root.append(wrap, legendBox);
    const cols = [{key: 'a_device', label: 'a_device'}, {key: 'b_device', label: 'b_device'},
                  {key: 'a', label: 'a'}, {key: 'b', label: 'b'}, {key: 'err', label: 'err'},
                  {key: 'max_abs', label: 'max_abs'}, {key: 'verdict', label: 'verdict'},
                  {key: 'first_divergent', label: 'first_divergent'}];
    const flat = () => devs.flatMap((da, i) => devs.map((db, j) => ({a_device: da.key, b_device: db.key,
        ...(cells[i][j] || {a: da.run, b: db.run, verdict: 'pending'})})));
    shareBar.append(copyLinkButton(), ' ', tableExports('matrix-' + model.replace(/[^A-Za-z0-9._-]+/g, '_'), cols, flat));

    // ---- the table of the devices shown, in their order ----
    let tds = null, shown = [];
    const passes = (d) => {
        const labels = Object.entries({...((d.env || {}).labels || {}), ...(d.labels || {})}).map(([k, v]) => `${k}=${v}`);
        const knobs = Object.entries(d.knobs || {}).map(([k, v]) => `${k}=${v}`);
        return (!state.label || labels.includes(state.label)) &&
            (!state.driver || (d.env || {}).driver === state.driver) && (!state.knob || knobs.includes(state.knob));
    };
    const order = () => {
        const idx = devs.map((_, i) => i).filter((i) => passes(devs[i]));
        if (state.sort === 'cluster') {
            const o = clusterOrder(idx.length, (x, y) => distance(cells, idx[x], idx[y]));
            return o.map((k) => idx[k]);
        }
        if (state.sort === 'mean') {
            const mean = (i) => idx.reduce((s, j) => s + distance(cells, i, j), 0) / idx.length;
            return idx.sort((x, y) => mean(x) - mean(y) || x - y);
        }
        if (state.sort === 'to') {
            const to = Math.min(n - 1, Math.max(0, state.to));
            return idx.sort((x, y) => distance(cells, to, x) - distance(cells, to, y) || x - y);
        }
        return idx;
    };
    const build = () => {
        shown = order();
        const compact = !state.values;
        const labels = differingLabels(shown.map((i) => devs[i]));
        const full = (i) => `${devs[i].key} · run ${shortId(devs[i].run)} · ${fmtTime(devs[i].created_at)}` +
            (nonfinite(devs[i]) ? ' · output not finite' : '');
        const head = h('tr', {}, h('td', {class: 'corner'}, h('span', {class: 'corner-text'}, 'row a, column b')),
            shown.map((i, k) => {
                const sortTo = h('button', {type: 'button', class: 'head-sort', title: `Order by distance to ${devs[i].key}`,
                                            'aria-label': `Order by distance to ${devs[i].key}`}, '⇅');
                sortTo.addEventListener('click', () => {
                    state.sort = 'to';
                    state.to = i;
                    sortSel.value = 'to';
                    keep();
                    build();
                });
                return h('th', {scope: 'col', class: 'col-head' + (nonfinite(devs[i]) ? ' nonfinite-dev' : ''),
                                tabindex: 0, title: full(i), 'data-full': full(i), 'aria-label': `${labels[k]}: ${devs[i].key}`,
                                'data-col': i}, h('span', {class: 'head-text'}, labels[k]), sortTo);
            }));
        tds = new Map();
        const body = shown.map((i, r) => h('tr', {},
            h('th', {scope: 'row', class: 'row-head' + (nonfinite(devs[i]) ? ' nonfinite-dev' : ''), tabindex: 0,
                     title: full(i), 'data-full': full(i), 'aria-label': `${labels[r]}: ${devs[i].key}`,
                     'data-row': i}, h('span', {class: 'head-text'}, labels[r])),
            shown.map((j) => {
                const td = h('td', {class: 'cell'});
                tds.set(i * n + j, td);
                fillCell(td, cells[i] && cells[i][j], devs[i], devs[j], scale, compact);
                return td;
            })));
        const table = h('table', {class: 'matrix' + (compact ? ' compact' : ''), id: 'matrix'},
            h('caption', {class: 'sr-only'}, `${model}: error at the last layer, run a (row) against run b (column)`),
            h('thead', {}, head), h('tbody', {}, body));
        wrap.replaceChildren(table);
        shownNote.textContent = `${fmtInt(shown.length)} of ${fmtInt(n)} devices shown` +
            (state.sort === 'cluster' ? ', clustered: devices that agree stand together' : '') +
            (state.sort === 'to' ? `, by distance to ${devs[state.to] ? devs[state.to].key : '?'}` : '') + '.';
    };
    const changed = () => {
        state.sort = sortSel.value || 'key';
        state.label = labelSel.value;
        state.driver = driverSel.value;
        state.knob = knobSel.value;
        state.values = valuesBox.checked;
        keep();
        build();
    };
    for (const el of [sortSel, labelSel, driverSel, knobSel, valuesBox])
        el.addEventListener('change', changed);
    build();
    if (!m.pending)
        return;
    // Row by row, two at a time: each request computes what its row lacks.
    const text = root.querySelector('#matrix-progress-text');
    const bar = root.querySelector('#matrix-progress');
    let done = 0, failed = null;
    const t0 = performance.now();
    const todo = devs.map((_, i) => i).filter((i) => cells[i].some((c) => c === null));
    const worker = async () => {
        while (todo.length && !failed) {
            const i = todo.shift();
            let r;
            try {
                r = await apiGet('matrix', {model, row: i}, {signal: ctx.signal});
            } catch (e) {
                if (e.name === 'AbortError')
                    throw e;
                failed = message('error', `Row ${i + 1}: ${e.message}`);
                return;
            }
            if (!ctx.live())
                return;
            if (r.devices.length !== n || r.devices.some((d, k) => d.run !== devs[k].run)) {
                failed = message('info', 'A device has a newer run since this page was opened: ',
                                 h('a', {href: location.hash}, 'load the matrix again'));
                return;
            }
            const before = cells[i].filter((c) => c === null).length;
            cells[i] = r.cells[0];
            done += before;
            bar.value = done;
            text.textContent = ` ${fmtInt(done)} of ${fmtInt(m.pending)} cells (${fmtInt(n - todo.length)} of ` +
                `${n} rows), ${((performance.now() - t0) / 1000).toFixed(1)} s`;
            for (let j = 0; j < n; j++) {
                const td = tds.get(i * n + j);
                if (td)
                    fillCell(td, cells[i][j], devs[i], devs[j], scale, !state.values);
            }
        }
    };
    await Promise.all(Array.from({length: PARALLEL_ROWS}, worker));
    if (failed) {
        root.insertBefore(failed, progress);
        return;
    }
    if (!ctx.live())
        return;
    build(); // the order by distance, now every cell is known
    text.textContent = ` all ${fmtInt(m.pending)} cells compared in ` +
        `${((performance.now() - t0) / 1000).toFixed(1)} s.`;
    // The whole matrix once more: the daemon makes it from the diff cache and keeps it, so the
    // next load is one read.
    await apiGet('matrix', {model}, {signal: ctx.signal}).catch((e) => {
        if (e.name === 'AbortError')
            throw e;
    });
}
