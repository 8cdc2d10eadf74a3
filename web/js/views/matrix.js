// views/matrix.js: devices x devices for one model (GET /api/v1/models/{m}/matrix): each
// cell is row device's run as a against column device's run as b, at the last layer; its
// colour is log10 of the error relative to max(|a|, |b|). A cell is a link to that diff.
import {h, message, fmtNum, fmtTime, shortId, routeHref} from '../dom.js';
import {apiGet, getModels} from '../api.js';

// A sequential ramp (light to dark red) over log10 err from -8 to 0.
const RAMP = ['#fff7ec', '#fee8c8', '#fdd49e', '#fdbb84', '#fc8d59', '#ef6548', '#d7301f', '#990000'];
export const RAMP_LO = -8, RAMP_HI = 0;

export function rampColor(err) {
    if (err === null || err === undefined)
        return '#e5e7eb';
    if (err === 0)
        return '#f3f4f6';
    const t = (Math.log10(err) - RAMP_LO) / (RAMP_HI - RAMP_LO);
    const i = Math.max(0, Math.min(RAMP.length - 1, Math.floor(t * RAMP.length)));
    return RAMP[i];
}

// Relative luminance (WCAG 2) of "#rrggbb", and the text colour that reads on it.
export function luminance(hex) {
    const c = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255)
        .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
}

export function textOn(bg) {
    const L = luminance(bg);
    // contrast with black (L+0.05)/0.05 against white 1.05/(L+0.05)
    return (L + 0.05) / 0.05 >= 1.05 / (L + 0.05) ? '#111827' : '#ffffff';
}

// A device key with a line-break chance after each "/" (keys like "cuda/H200/tf32").
function deviceLabel(dev) {
    const parts = String(dev.key).split('/');
    return parts.flatMap((p, i) => (i < parts.length - 1 ? [p + '/', h('wbr')] : [p]));
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

function legend() {
    const items = [h('li', {}, h('span', {class: 'chip', 'data-bg': rampColor(0)}), '0 (identical)')];
    for (let i = 0; i < RAMP.length; i++) {
        const lo = RAMP_LO + (i * (RAMP_HI - RAMP_LO)) / RAMP.length;
        items.push(h('li', {}, h('span', {class: 'chip', 'data-bg': RAMP[i]}), `≥ 1e${lo}`));
    }
    const ul = h('ul', {class: 'legend', 'aria-label': 'Colour scale: error relative to max(|a|, |b|)'}, items);
    for (const chip of ul.querySelectorAll('.chip'))
        chip.style.background = chip.dataset.bg; // CSSOM, allowed under the CSP
    return ul;
}

export async function render(root, ctx) {
    const model = ctx.segment;
    document.title = 'gpudiff: matrix' + (model ? ' of ' + model : '');
    root.append(h('h1', {}, 'Device matrix', model ? [': ', h('span', {class: 'name'}, model)] : ''));
    root.append(await modelPicker(model));
    if (!model) {
        root.append(message('info', 'Choose a model to see how its devices disagree.'));
        return;
    }
    let m;
    try {
        // The query form reaches every model name, one holding '/' too.
        m = await apiGet('matrix', {model}, {signal: ctx.signal});
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
    root.append(h('p', {}, `The latest run of each of ${devs.length} devices. Row: run a; column: ` +
                  'run b (the reference). The colour is the error at the last layer relative to ' +
                  'max |b|, on a log scale; a cell opens the diff.'));
    const head = h('tr', {}, h('td', {class: 'corner'}, h('span', {class: 'sr-only'}, 'a \\ b')),
        devs.map((d, j) => h('th', {scope: 'col', class: 'col-head'},
            h('span', {class: 'dev-key'}, deviceLabel(d)),
            h('span', {class: 'dev-sub'}, `${d.backend} · ${d.gpu || 'CPU'} · ${shortId(d.run)}`))));
    const rows = devs.map((da, i) => h('tr', {},
        h('th', {scope: 'row', class: 'row-head'}, h('span', {class: 'dev-key'}, deviceLabel(da)),
          h('span', {class: 'dev-sub'}, `${da.backend} · ${da.gpu || 'CPU'} · ${fmtTime(da.created_at)} · ${shortId(da.run)}`)),
        devs.map((db, j) => cell(m.cells[i] && m.cells[i][j], da, db))));
    const table = h('table', {class: 'matrix', id: 'matrix'},
        h('caption', {}, `${model}: error at the last layer, run a (row) against run b (column)`),
        h('thead', {}, head), h('tbody', {}, rows));
    root.append(h('div', {class: 'table-wrap'}, table), legend());
}

function cell(c, da, db) {
    if (!c)
        return h('td', {class: 'cell empty'}, '–');
    if (c.a === c.b || da.run === db.run)
        return h('td', {class: 'cell self'}, h('span', {'aria-label': 'same run'}, '—'));
    const bg = rampColor(c.err);
    const label = `${da.key} vs ${db.key}: ${c.verdict}, error ${fmtNum(c.err)}, max |a−b| ` +
        `${fmtNum(c.max_abs)}` + (c.first_divergent ? `, first divergent ${c.first_divergent}` : '');
    const link = h('a', {href: routeHref('/diff', {a: c.a, b: c.b}), class: 'cell-link',
                         'aria-label': label, title: label},
                   h('span', {class: 'cell-err'}, c.err === 0 ? '=' : fmtNum(c.err, 2)),
                   h('span', {class: 'cell-verdict'}, c.verdict),
                   c.first_divergent ? h('span', {class: 'cell-first'}, 'from ' + c.first_divergent) : null);
    const td = h('td', {class: 'cell v-' + c.verdict, 'data-a': c.a, 'data-b': c.b}, link);
    td.style.background = bg;
    link.style.color = textOn(bg);
    return td;
}
