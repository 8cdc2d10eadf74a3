// views/history.js: one layer's divergence from the model's baseline over time, one series
// per device (GET /api/v1/history?model=), with a marker wherever a run's driver, CUDA
// runtime, cuDNN or cuBLAS differs from the same device's run before it: that is how a
// software upgrade that changed the numbers shows.
import {h, message, fmtNum, fmtTime, shortId, routeHref, verdictBadge} from '../dom.js';
import {apiGet, getModels, getRun} from '../api.js';
import {historyChart, seriesSwatch} from '../charts.js';
import {copyLinkButton, domTableExports, svgExport} from '../share.js';

const ENV_KEYS = [['driver', 'driver'], ['cuda_runtime', 'CUDA'], ['cudnn', 'cuDNN'],
                  ['cublas', 'cuBLAS']];
const LIMITS = [20, 50, 100, 500];

// The version changes along each series: [{time, devices, runs, text}]; the same change at
// the same time on several devices (one upgraded host) is one marker.
export function versionChanges(series) {
    const out = [];
    const seen = new Map();
    for (const sr of series) {
        const pts = [...sr.points].sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at));
        for (let i = 1; i < pts.length; i++) {
            const before = pts[i - 1].env || {}, now = pts[i].env || {};
            const parts = ENV_KEYS.filter(([k]) => (before[k] ?? null) !== (now[k] ?? null))
                .map(([k, label]) => `${label} ${before[k] ?? '?'} → ${now[k] ?? '?'}`);
            if (!parts.length)
                continue;
            const text = parts.join(', ');
            const key = pts[i].created_at + '\n' + text;
            if (seen.has(key)) {
                seen.get(key).devices.push(sr.device);
                seen.get(key).runs.push(pts[i].run);
                continue;
            }
            const c = {time: pts[i].created_at, devices: [sr.device], runs: [pts[i].run], text};
            seen.set(key, c);
            out.push(c);
        }
    }
    return out;
}

async function controls(model, layerNames, q, devices) {
    const models = await getModels().catch(() => []);
    const msel = h('select', {id: 'h-model'}, h('option', {value: ''}, 'choose a model'),
                   models.map((m) => h('option', {value: m.name, selected: m.name === model}, m.name)));
    const lsel = h('select', {id: 'h-layer', disabled: !layerNames.length},
                   layerNames.map((n) => h('option', {value: n, selected: n === q.layer}, n)));
    const dsel = h('select', {id: 'h-device'}, h('option', {value: ''}, 'all devices'),
                   devices.map((d) => h('option', {value: d, selected: d === q.device}, d)));
    const limit = h('select', {id: 'h-limit'},
                    LIMITS.map((n) => h('option', {value: n, selected: n === q.limit}, String(n))));
    const form = h('form', {class: 'filters', 'aria-label': 'History of'},
        h('div', {class: 'field'}, h('label', {for: 'h-model'}, 'Model'), msel),
        h('div', {class: 'field'}, h('label', {for: 'h-layer'}, 'Layer'), lsel),
        h('div', {class: 'field'}, h('label', {for: 'h-device'}, 'Device'), dsel),
        h('div', {class: 'field'}, h('label', {for: 'h-limit'}, 'Runs per device'), limit),
        h('div', {class: 'field field-buttons'}, h('button', {type: 'submit', class: 'primary'}, 'Show')));
    form.addEventListener('submit', (e) => {
        e.preventDefault();
        const sameModel = msel.value === model;
        location.hash = routeHref('/history/' + encodeURIComponent(msel.value), {
            layer: sameModel ? lsel.value : '', device: sameModel ? dsel.value : '',
            limit: Number(limit.value) === 100 ? '' : limit.value});
    });
    return form;
}

export async function render(root, ctx) {
    const model = ctx.segment;
    const lim = Number(ctx.params.get('limit'));
    const q = {layer: ctx.params.get('layer') || '', device: ctx.params.get('device') || '',
               limit: LIMITS.includes(lim) ? lim : 100};
    document.title = 'gpudiff: history' + (model ? ' of ' + model : '');
    const title = h('h1', {}, 'History', model ? [': ', h('span', {class: 'name'}, model)] : '');
    const shareBar = h('div', {class: 'share-bar', role: 'group', 'aria-label': 'Share this history'},
                       copyLinkButton());
    root.append(h('div', {class: 'title-row'}, title, shareBar));
    if (!model) {
        root.append(await controls('', [], q, []),
                    message('info', 'Choose a model to follow a layer across runs and upgrades.'));
        return;
    }
    // The layer names come from the baseline run, which every point is compared against.
    const models = await getModels().catch(() => []);
    const info = models.find((m) => m.name === model);
    let layerNames = [];
    if (info && info.baseline) {
        const base = await getRun(info.baseline).catch(() => null);
        layerNames = base ? base.layers.map((l) => l.name) : [];
    }
    if (!q.layer && layerNames.length)
        q.layer = layerNames[layerNames.length - 1];
    if (!ctx.live())
        return;
    const ctrlBox = h('div');
    root.append(ctrlBox);
    if (!info || !info.baseline) {
        ctrlBox.append(await controls(model, layerNames, q, []));
        root.append(message('error', info ? `${model} has no baseline yet: history is measured ` +
            'against it. An admin picks one with POST /api/v1/models/{model}/baseline.'
            : `No model named ${model} has complete runs.`));
        return;
    }
    title.append(h('span', {class: 'subtitle'}, ' · ' + q.layer));
    let hist;
    try {
        // The query form reaches every model name, one holding '/' too.
        hist = await apiGet('history',
                            {model, layer: q.layer, device: q.device || undefined, limit: q.limit},
                            {signal: ctx.signal});
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        ctrlBox.append(await controls(model, layerNames, q, []));
        root.append(message('error', `History of ${model}: ${e.message}`));
        return;
    }
    if (!ctx.live())
        return;
    const series = hist.series || [];
    const devices = series.map((sr) => sr.device);
    if (q.device && !devices.includes(q.device))
        devices.push(q.device);
    ctrlBox.append(await controls(model, layerNames, q, devices));
    if (!series.some((sr) => sr.points.length)) {
        root.append(message('info', `No runs of ${model} to show for ${q.layer}.`));
        return;
    }
    const changes = versionChanges(series);
    const hrefOf = (p) => routeHref('/diff', {a: p.run, b: hist.baseline});
    root.append(h('p', {}, `Layer ${hist.layer} of each run against the baseline `,
                  h('code', {title: hist.baseline}, shortId(hist.baseline)),
                  `: error relative to max(|a|, |b|). ${changes.length} version change` +
                  `${changes.length === 1 ? '' : 's'} marked (driver, CUDA, cuDNN, cuBLAS).`));
    const chart = historyChart(series, changes, hrefOf, {width: root.clientWidth});
    shareBar.append(svgExport('history-' + hist.layer, () => chart));
    root.append(h('figure', {class: 'chart-box'}, chart,
                  h('figcaption', {}, h('ul', {class: 'legend', 'aria-label': 'Devices'},
                      series.map((sr, k) => h('li', {}, seriesSwatch(k), sr.device))),
                    'Dashed lines: a version changed. A point opens its diff against the baseline. Points ' +
                    'that would cover each other (the same time and value) are moved aside along the time ' +
                    'axis by a marker\'s width, so that each can be clicked; the table below has the times.')));
    if (changes.length)
        root.append(h('section', {'aria-labelledby': 'changes-h'}, h('h2', {id: 'changes-h'}, 'Version changes'),
            h('ul', {class: 'changes', id: 'changes'}, changes.map((c) => h('li', {},
                h('span', {class: 'nowrap'}, fmtTime(c.time)), ': ', h('strong', {}, c.text), ' on ',
                c.devices.map((dev, i) => [i ? ', ' : '', dev, ' (',
                    h('a', {href: hrefOf({run: c.runs[i]})}, 'diff of ' + shortId(c.runs[i])), ')']))))));
    const points = pointsTable(series, hrefOf);
    root.append(h('section', {'aria-labelledby': 'points-h'},
                  h('div', {class: 'section-head'}, h('h2', {id: 'points-h'}, 'Runs'),
                    domTableExports('history-' + hist.layer, points.querySelector('table'))),
                  points));
}

function pointsTable(series, hrefOf) {
    const rows = [];
    series.forEach((sr, k) => {
        const pts = [...sr.points].sort((a, b) => Date.parse(b.created_at) - Date.parse(a.created_at));
        for (const p of pts) {
            const env = p.env || {};
            rows.push(h('tr', {},
                h('th', {scope: 'row'}, seriesSwatch(k), ' ', sr.device),
                h('td', {class: 'nowrap'}, fmtTime(p.created_at, true)),
                h('td', {}, h('a', {href: hrefOf(p)}, shortId(p.run))),
                h('td', {class: 'num'}, fmtNum(p.err)),
                h('td', {class: 'num'}, fmtNum(p.max_abs)),
                h('td', {}, verdictBadge(p.verdict)),
                ENV_KEYS.map(([key]) => h('td', {}, env[key] || '–'))));
        }
    });
    return h('div', {class: 'table-wrap'}, h('table', {class: 'points', id: 'history-table'},
        h('thead', {}, h('tr', {}, ['Device', 'Created', 'Run', 'Error', 'Max |a−b|', 'Verdict',
                                    ...ENV_KEYS.map(([, label]) => label)]
            .map((t) => h('th', {scope: 'col'}, t)))),
        h('tbody', {}, rows)));
}
