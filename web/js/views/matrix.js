// views/matrix.js: devices x devices for one model (GET /api/v1/models/{m}/matrix), for
// fleets of dozens of devices: each cell is the row device's run as a against the column
// device's run as b, at the last layer, with its value written in it and its colour on the
// log scale of scale.js (steps spread over the values present, a legend below). Headers stay
// on screen while the table scrolls both ways; each is one line, abbreviated, whole on hover
// and on focus. A first load shows the cached cells at once and computes the rest row by
// row with a progress bar; a whole matrix is then cached by the daemon, so the next load is
// one read.
import {h, message, fmtNum, fmtInt, fmtTime, shortId, routeHref} from '../dom.js';
import {apiGet, getModels} from '../api.js';
import {errScale, colorOf, textOn, scaleLegend} from '../scale.js';
import {copyLinkButton, tableExports} from '../share.js';

// A device key made short: the backend kept, the GPU name without its maker's prefixes, the
// knobs as written. The whole key is in the header's title and shown on focus.
export function shortKey(key) {
    return String(key).replace(/NVIDIA |GeForce |Tesla /g, '').replace(/ conv_algo=/, ' algo=')
        .replace(/ emulate=/, ' emu=');
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

// Column i is device i + 1, as its row says: at fifty devices no name fits a column, and a
// number never wraps. The whole key is the header's title, and shows on keyboard focus.
function headCell(d, j) {
    const full = `${j + 1}: ${d.key} · run ${shortId(d.run)} · ${fmtTime(d.created_at)}`;
    return h('th', {scope: 'col', class: 'col-head', tabindex: 0, title: full, 'data-full': full,
                    'aria-label': `${j + 1}: ${d.key}`, 'data-col': j},
             h('span', {class: 'head-text'}, String(j + 1)));
}

function rowHead(d, i) {
    const full = `${i + 1}: ${d.key} · run ${shortId(d.run)} · ${fmtTime(d.created_at)}`;
    return h('th', {scope: 'row', class: 'row-head', tabindex: 0, title: full, 'data-full': full,
                    'aria-label': `${i + 1}: ${d.key}`, 'data-row': i},
             h('span', {class: 'head-text'}, h('span', {class: 'dev-num'}, String(i + 1)), ' ',
               shortKey(d.key)));
}

function fillCell(td, c, da, db, scale) {
    td.replaceChildren();
    td.className = 'cell';
    if (c === null || c === undefined) {
        td.classList.add('pending');
        td.append(h('span', {class: 'cell-err', 'aria-label': 'not compared yet'}, '…'));
        return;
    }
    if (c.a === c.b) {
        td.classList.add('self');
        td.append(h('span', {'aria-label': 'same run'}, '—'));
        return;
    }
    const bg = colorOf(scale, c.verdict === 'incomparable' ? null : c.err);
    const label = `${da.key} vs ${db.key}: ${c.verdict}, error ${fmtNum(c.err)}, max |a−b| ` +
        `${fmtNum(c.max_abs)}` + (c.first_divergent ? `, first divergent ${c.first_divergent}` : '');
    const link = h('a', {href: routeHref('/diff', {a: c.a, b: c.b}), class: 'cell-link',
                         'aria-label': label, title: label},
                   h('span', {class: 'cell-err'}, c.err === 0 ? '0' : c.err == null ? 'n/a' : fmtNum(c.err, 2)),
                   h('span', {class: 'cell-verdict'}, c.verdict));
    td.classList.add('v-' + c.verdict);
    td.dataset.a = c.a;
    td.dataset.b = c.b;
    td.append(link);
    td.style.background = bg;
    link.style.color = textOn(bg);
}

export async function render(root, ctx) {
    const model = ctx.segment;
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
    root.append(h('p', {class: 'lead'}, `The newest run of each of ${devs.length} devices. Row: run a; ` +
                  'column: run b (the reference). Each cell: the error at the last layer relative to ' +
                  'max |b|; its colour, on a log scale, is in the legend. Column n is the device of row n. ' +
                  'A cell opens the diff; a header shows its whole device key on hover or focus.'));
    const progress = h('div', {class: 'progress-box', hidden: !m.pending},
        h('label', {for: 'matrix-progress'}, 'Comparing the pairs not compared before: '),
        h('progress', {id: 'matrix-progress', max: m.pending || 1, value: 0}),
        h('span', {id: 'matrix-progress-text', 'aria-live': 'polite'}));
    root.append(progress);
    let scale = errScale(cells.flat().filter(Boolean).map((c) => c.err));
    const tds = devs.map(() => devs.map(() => h('td', {class: 'cell'})));
    const head = h('tr', {}, h('td', {class: 'corner'}, h('span', {class: 'corner-text'}, 'row a, column b')),
                   devs.map((d, j) => headCell(d, j)));
    const body = devs.map((da, i) => h('tr', {}, rowHead(da, i), tds[i]));
    const table = h('table', {class: 'matrix', id: 'matrix'},
        h('caption', {class: 'sr-only'}, `${model}: error at the last layer, run a (row) against run b (column)`),
        h('thead', {}, head), h('tbody', {}, body));
    const legendBox = h('div', {class: 'legend-box'});
    const paint = () => {
        devs.forEach((da, i) => devs.forEach((db, j) => fillCell(tds[i][j], cells[i] && cells[i][j], da, db, scale)));
        legendBox.replaceChildren(scaleLegend(scale, 'error at the last layer relative to max |b|'));
    };
    paint();
    const cols = [{key: 'a_device', label: 'a_device'}, {key: 'b_device', label: 'b_device'},
                  {key: 'a', label: 'a'}, {key: 'b', label: 'b'}, {key: 'err', label: 'err'},
                  {key: 'max_abs', label: 'max_abs'}, {key: 'verdict', label: 'verdict'},
                  {key: 'first_divergent', label: 'first_divergent'}];
    const flat = () => devs.flatMap((da, i) => devs.map((db, j) => ({a_device: da.key, b_device: db.key,
        ...(cells[i][j] || {a: da.run, b: db.run, verdict: 'pending'})})));
    shareBar.append(copyLinkButton(), ' ', tableExports('matrix-' + model.replace(/[^A-Za-z0-9._-]+/g, '_'), cols, flat));
    root.append(h('div', {class: 'matrix-wrap', tabindex: 0, role: 'region',
                          'aria-label': 'The matrix (scrolls both ways)'}, table), legendBox);
    if (!m.pending)
        return;
    // Row by row: each request computes what its row lacks (the daemon runs two at a time).
    const text = root.querySelector('#matrix-progress-text');
    const bar = root.querySelector('#matrix-progress');
    let done = 0;
    const t0 = performance.now();
    for (let i = 0; i < devs.length; i++) {
        if (!cells[i].some((c) => c === null))
            continue;
        let r;
        try {
            r = await apiGet('matrix', {model, row: i}, {signal: ctx.signal});
        } catch (e) {
            if (e.name === 'AbortError')
                throw e;
            root.insertBefore(message('error', `Row ${i + 1}: ${e.message}`), progress);
            return;
        }
        if (!ctx.live())
            return;
        if (r.devices.length !== devs.length || r.devices.some((d, k) => d.run !== devs[k].run)) {
            root.insertBefore(message('info', 'A device has a newer run since this page was opened: ',
                h('a', {href: location.hash}, 'load the matrix again')), progress);
            return;
        }
        const before = cells[i].filter((c) => c === null).length;
        cells[i] = r.cells[0];
        done += before;
        bar.value = done;
        text.textContent = ` ${fmtInt(done)} of ${fmtInt(m.pending)} cells (row ${i + 1} of ${devs.length}), ` +
            `${((performance.now() - t0) / 1000).toFixed(1)} s`;
        devs.forEach((db, j) => fillCell(tds[i][j], cells[i][j], devs[i], db, scale));
    }
    // Every cell known: the colour scale over all of them; the daemon cached the matrix.
    scale = errScale(cells.flat().map((c) => c && c.err));
    paint();
    text.textContent = ` all ${fmtInt(m.pending)} cells compared in ` +
        `${((performance.now() - t0) / 1000).toFixed(1)} s.`;
    // The whole matrix once more: the daemon makes it from the diff cache and keeps it, so the
    // next load is one read.
    await apiGet('matrix', {model}, {signal: ctx.signal}).catch((e) => {
        if (e.name === 'AbortError')
            throw e;
    });
}
