// views/graph.js: the model as a graph: run a's layers and their input edges (run.json's
// "inputs"), laid out by elkjs in a worker (graphlayout.js), each node coloured by its verdict
// in the diff of a against b or by its error on the log colour scale, the first divergent
// layer and the amplifiers marked; a node opens its layer. Pan by dragging or with the arrow
// keys, zoom with the wheel, + and −, or the buttons; "find" centres a layer.
import {h, s, message, fmtNum, fmtInt, shortId, routeHref, replaceHash, VERDICTS} from '../dom.js';
import {getDiff, getRun} from '../api.js';
import {layout} from '../graphlayout.js';
import {errScale, colorOf, textOn, scaleLegend} from '../scale.js';
import {copyLinkButton, svgExport} from '../share.js';
import {diffHref, layerHref} from './diff.js';
import {startOf} from '../diff_facts.js';

const NODE_H = 34;

function readParams(p) {
    return {a: p.get('a') || '', b: p.get('b') || '', truth: p.get('truth') || '',
            atol: p.get('atol') || '', rtol: p.get('rtol') || '',
            color: p.get('color') === 'err' ? 'err' : 'verdict', find: p.get('find') || ''};
}

// Room for the name (12 px, bold) and for "Op · divergent" or "Op · 1.2e-3" (11 px).
function nodeWidth(name, op) {
    return Math.min(260, Math.max(90, Math.max(7.4 * name.length, 6.4 * ((op || '').length + 13)) + 18));
}

function shortName(name, width) {
    const max = Math.floor((width - 16) / 7.4);
    return name.length > max ? name.slice(0, Math.max(1, max - 1)) + '…' : name;
}

// The graph of run a's records: a node per layer, an edge per input that is a layer; the
// model's own inputs (not layers) become one node each.
export function modelGraph(run) {
    const layers = run.layers || [];
    const names = new Set(layers.map((l) => l.name));
    const nodes = [], edges = [];
    const sources = new Set();
    for (const l of layers)
        for (const src of l.inputs || [])
            if (!names.has(src))
                sources.add(src);
    for (const src of sources)
        nodes.push({id: 'in:' + src, name: src, op: 'input', source: true});
    for (const l of layers)
        nodes.push({id: l.name, name: l.name, op: l.op || ''});
    layers.forEach((l, i) => (l.inputs || []).forEach((src, k) => {
        edges.push({id: `e${i}-${k}`, source: names.has(src) ? src : 'in:' + src, target: l.name});
    }));
    for (const n of nodes) {
        n.width = nodeWidth(n.name, n.op);
        n.height = NODE_H;
    }
    return {nodes, edges};
}

export async function render(root, ctx) {
    const q = readParams(ctx.params);
    document.title = 'gpudiff: graph';
    const shareBar = h('div', {class: 'share-bar', role: 'group', 'aria-label': 'Share this graph'});
    const title = h('h1', {}, 'Graph');
    root.append(h('div', {class: 'title-row'}, title, shareBar));
    if (!q.a || !q.b) {
        root.append(message('info', 'The graph view shows a diff: open it from a diff (its "graph" link).'));
        return;
    }
    root.append(h('p', {class: 'crumbs'}, h('a', {href: diffHref(q, {})},
                                              `← the diff of ${shortId(q.a)} vs ${shortId(q.b)}`)));
    const status = message('info', 'Reading the diff and the model…');
    root.append(status);
    let d, run;
    try {
        [d, run] = await Promise.all([getDiff(q, {signal: ctx.signal}), getRun(q.a)]);
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        status.replaceWith(message('error', e.message));
        return;
    }
    if (!ctx.live())
        return;
    const model = (d.a && d.a.model) || run.model.name;
    title.append(' of ', h('span', {class: 'name'}, model));
    document.title = `gpudiff: graph of ${model}`;
    const {nodes, edges} = modelGraph(run);
    const byName = new Map(d.layers.map((l) => [l.name, l]));
    const st = startOf(d); // the first divergent layer, or the first observed difference
    const noEdges = !edges.length;
    status.textContent = `Laying out ${fmtInt(nodes.length)} nodes and ${fmtInt(edges.length)} edges…`;
    const t0 = performance.now();
    let laid;
    try {
        laid = await layout(nodes, edges);
    } catch (e) {
        status.replaceWith(message('error', 'The layout failed: ', e.message));
        return;
    }
    if (!ctx.live())
        return;
    const ms = performance.now() - t0;
    status.remove();

    const scale = errScale(d.layers.map((l) => l.err));
    const fill = (n) => {
        const l = byName.get(n.name);
        if (n.source || !l)
            return null;
        return q.color === 'err' ? colorOf(scale, l.verdict === 'incomparable' ? null : l.err) : null;
    };
    const W = laid.width || 400, H = laid.height || 300;
    const svg = s('svg', {class: 'graph', role: 'group', id: 'graph',
                          'aria-label': `Graph of ${model}: ${nodes.length} nodes`, tabindex: 0});
    svg.append(s('title', {}, `${model}: ${nodes.length} nodes, ${edges.length} edges. ` +
                 (st ? `${st.known ? 'First divergent' : 'First observed difference'}: ${st.layer.name}. ` : '') +
                 'Arrow keys pan, + and − zoom, 0 fits the width.'));
    const scene = s('g', {class: 'scene'});
    svg.append(scene);
    const edgeG = s('g', {class: 'edges'});
    scene.append(edgeG);
    let dEdges = '';
    for (const e of laid.edges || [])
        for (const sec of e.sections || []) {
            const pts = [sec.startPoint, ...(sec.bendPoints || []), sec.endPoint];
            dEdges += 'M' + pts.map((p) => `${p.x.toFixed(1)} ${p.y.toFixed(1)}`).join('L');
        }
    edgeG.append(s('path', {class: 'edge', d: dEdges}));
    const pos = new Map();
    const nodeG = s('g', {class: 'nodes'});
    scene.append(nodeG);
    const first = st ? st.layer.name : null;
    const amps = new Set(d.amplifiers || []);
    const nodeById = new Map(nodes.map((n) => [n.id, n]));
    for (const c of laid.children || []) {
        const n = nodeById.get(c.id) || {name: c.id};
        pos.set(n.name, c);
        const l = byName.get(n.name);
        const verdict = l ? l.verdict : n.source ? 'source' : 'unknown';
        const marks = [n.name === first ? 'node-first' : '', amps.has(n.name) ? 'node-amp' : '']
            .filter(Boolean).join(' ');
        const g = n.source ? s('g', {class: 'node node-source'})
            : s('a', {href: layerHref(q, {name: n.name}), class: `node v-${verdict} ${marks}`,
                      'data-layer': n.name,
                      'aria-label': `${n.name} (${n.op}): ${verdict}` +
                                    (l && l.err != null ? `, error ${fmtNum(l.err)}, max |a−b| ${fmtNum(l.max_abs)}` : '')});
        const bg = fill(n);
        const rect = s('rect', {x: c.x, y: c.y, width: c.width, height: c.height, rx: 5,
                                class: 'node-box'});
        if (bg)
            rect.style.fill = bg; // CSSOM (the CSP allows it), over the style sheet's fill
        g.append(rect);
        const ink = bg ? textOn(bg) : null;
        const t1 = s('text', {x: c.x + 8, y: c.y + 14, class: 'node-name'}, shortName(n.name, c.width));
        const t2 = s('text', {x: c.x + 8, y: c.y + 28, class: 'node-op'},
                     n.source ? 'input' : `${n.op || '?'}${l ? ' · ' + (q.color === 'err' && l.err != null
                         ? fmtNum(l.err, 2) : verdict) : ''}`);
        if (ink) {
            t1.style.fill = ink;
            t2.style.fill = ink;
        }
        g.append(t1, t2);
        g.append(s('title', {}, `${n.name} (${n.op || 'input'})` + (l ? `: ${l.verdict}, error ${fmtNum(l.err)}, ` +
                 `max |a−b| ${fmtNum(l.max_abs)}` : '')));
        if (marks)
            g.append(s('text', {x: c.x + c.width + 6, y: c.y + 21, class: 'node-mark'},
                       n.name === first ? 'first divergent' : 'amplifier'));
        nodeG.append(g);
    }

    // The view: a transform of the scene; a viewBox the size of the box on screen.
    const view = {x: 0, y: 0, k: 1};
    const frame = h('div', {class: 'graph-frame'}, svg);
    const apply = () => scene.setAttribute('transform',
        `translate(${view.x.toFixed(1)} ${view.y.toFixed(1)}) scale(${view.k.toFixed(4)})`);
    const size = () => ({w: frame.clientWidth || 900, h: frame.clientHeight || 600});
    const centre = (name, k) => {
        const c = pos.get(name);
        if (!c)
            return false;
        const {w, h: hh} = size();
        view.k = k || Math.max(view.k, 0.8);
        view.x = w / 2 - (c.x + c.width / 2) * view.k;
        view.y = hh / 2 - (c.y + c.height / 2) * view.k;
        apply();
        return true;
    };
    const fit = () => {
        const {w} = size();
        view.k = Math.min(1.2, (w - 20) / W);
        view.x = (w - W * view.k) / 2;
        view.y = 10;
        apply();
    };
    const zoom = (f, cx, cy) => {
        const {w, h: hh} = size();
        cx = cx ?? w / 2;
        cy = cy ?? hh / 2;
        const k = Math.max(0.02, Math.min(4, view.k * f));
        view.x = cx - ((cx - view.x) * k) / view.k;
        view.y = cy - ((cy - view.y) * k) / view.k;
        view.k = k;
        apply();
    };
    svg.addEventListener('wheel', (e) => {
        e.preventDefault();
        const r = svg.getBoundingClientRect();
        zoom(e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - r.left, e.clientY - r.top);
    }, {passive: false});
    let drag = null;
    svg.addEventListener('pointerdown', (e) => {
        if (e.target.closest('a'))
            return; // a click opens the node
        drag = {x: e.clientX, y: e.clientY, vx: view.x, vy: view.y};
        svg.setPointerCapture(e.pointerId);
    });
    svg.addEventListener('pointermove', (e) => {
        if (!drag)
            return;
        view.x = drag.vx + e.clientX - drag.x;
        view.y = drag.vy + e.clientY - drag.y;
        apply();
    });
    const end = () => { drag = null; };
    svg.addEventListener('pointerup', end);
    svg.addEventListener('pointercancel', end);
    svg.addEventListener('keydown', (e) => {
        const stepPx = 80;
        const moves = {ArrowLeft: [stepPx, 0], ArrowRight: [-stepPx, 0], ArrowUp: [0, stepPx],
                       ArrowDown: [0, -stepPx]};
        if (moves[e.key] && e.target === svg) {
            view.x += moves[e.key][0];
            view.y += moves[e.key][1];
            apply();
        } else if (e.key === '+' || e.key === '=') {
            zoom(1.25);
        } else if (e.key === '-') {
            zoom(0.8);
        } else if (e.key === '0') {
            fit();
        } else {
            return;
        }
        e.preventDefault();
    });
    // A node that gets the keyboard focus is brought into view, its values written below.
    const focusNote = h('p', {class: 'hint', id: 'graph-focus', 'aria-live': 'polite'});
    svg.addEventListener('focusin', (e) => {
        const a = e.target.closest && e.target.closest('a.node');
        if (!a)
            return;
        focusNote.textContent = a.getAttribute('aria-label');
        const c = pos.get(a.dataset.layer), {w, h: hh} = size();
        const sx = c.x * view.k + view.x, sy = c.y * view.k + view.y;
        if (sx < 0 || sy < 0 || sx > w - 40 || sy > hh - 40)
            centre(a.dataset.layer);
    });

    const button = (label, fn, attrs = {}) => {
        const b = h('button', {type: 'button', class: 'small', ...attrs}, label);
        b.addEventListener('click', fn);
        return b;
    };
    const findIn = h('input', {id: 'graph-find', type: 'search', value: q.find, list: 'graph-names',
                               placeholder: 'layer name', autocomplete: 'off', spellcheck: 'false'});
    const names = h('datalist', {id: 'graph-names'},
                    nodes.filter((n) => !n.source).slice(0, 5000).map((n) => h('option', {value: n.name})));
    const findNote = h('span', {class: 'hint', 'aria-live': 'polite'});
    const find = () => {
        const want = findIn.value.trim();
        const hit = nodes.find((n) => n.name === want) ||
            nodes.find((n) => n.name.toLowerCase().includes(want.toLowerCase()));
        for (const el of svg.querySelectorAll('.node.found'))
            el.classList.remove('found');
        if (!want || !hit) {
            findNote.textContent = want ? `no layer named like ${want}` : '';
            return;
        }
        centre(hit.name, Math.max(view.k, 1));
        const el = svg.querySelector(`a.node[data-layer="${CSS.escape(hit.name)}"]`);
        if (el)
            el.classList.add('found');
        findNote.textContent = `${hit.name} (${hit.op})`;
        replaceHash(routeHref('/graph', {a: q.a, b: q.b, truth: q.truth, atol: q.atol, rtol: q.rtol,
                                         color: q.color === 'err' ? 'err' : '', find: hit.name}));
    };
    findIn.addEventListener('change', find);
    findIn.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') {
            e.preventDefault();
            find();
        }
    });
    const colorLink = (key, label) => h('a', {class: 'button', 'aria-current': q.color === key ? 'true' : null,
        href: routeHref('/graph', {a: q.a, b: q.b, truth: q.truth, atol: q.atol, rtol: q.rtol,
                                   color: key === 'err' ? 'err' : ''})}, label);
    const counts = VERDICTS.map((v) => [v, d.layers.filter((l) => l.verdict === v).length]).filter(([, c]) => c);
    root.append(h('div', {class: 'graph-tools'},
        h('div', {class: 'segmented', role: 'group', 'aria-label': 'Colour nodes by'},
          colorLink('verdict', 'verdict'), colorLink('err', 'log error')),
        button('−', () => zoom(0.8), {'aria-label': 'Zoom out'}),
        button('+', () => zoom(1.25), {'aria-label': 'Zoom in'}),
        button('Fit width', fit),
        button(st && !st.known ? 'First observed' : 'First divergent', () => centre(first, 1),
               {disabled: !first, id: 'graph-first'}),
        h('div', {class: 'field inline'}, h('label', {for: 'graph-find'}, 'Find'), findIn, names),
        findNote),
        frame, focusNote,
        h('div', {class: 'graph-legend'},
          q.color === 'err' ? scaleLegend(scale, 'error relative to max |b| per layer')
            : h('ul', {class: 'legend'}, counts.map(([v, c]) => h('li', {},
                h('span', {class: `chip node-chip v-${v}`}), `${v} (${fmtInt(c)})`))),
          h('p', {class: 'hint', id: 'graph-stats'},
            `${fmtInt(nodes.length)} nodes, ${fmtInt(edges.length)} edges, laid out in ` +
            `${fmtInt(Math.round(ms))} ms by elkjs (layered). Thick outline: the first divergent ` +
            'layer; dashed: amplifiers. A node opens its layer.' +
            (noEdges ? ' The runs record no input edges (a framework dump): the layers are shown in order.' : ''),
            ' ', svgExport('graph', () => svg))));
    shareBar.append(copyLinkButton());
    svg.setAttribute('width', '100%');
    svg.setAttribute('height', '100%');
    if (!(q.find && centre(q.find, 1)) && !(first && centre(first, 1)))
        fit();
    if (q.find) {
        findIn.value = q.find;
        find();
    }
}
