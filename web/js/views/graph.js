// views/graph.js: the model as a graph, the way Model Explorer shows one: layers grouped by
// the namespaces of their names ("h.3/attn/q" in h.3 > attn; "encoder.layer.0001.dense" in
// encoder.layer > 0001), a group collapsed into one block that shows how many layers it holds
// and its worst verdict (or its largest error), opened and closed with a click or Enter; a
// group of more than GROUP_MAX members cut into ranges ("0000–0099"), so that no level shows
// more than that many blocks, whatever the depth. The graph of what is open is laid out by
// elkjs in a worker (graphlayout.js), groups around their members; the data is the daemon's
// (GET /api/v1/diff/graph: names, ops, verdicts, errors, the recorded edges: a few bytes a
// layer). Colour by verdict or by log error on the absolute scale; the first divergent layer
// and the amplifiers marked, and the groups that hold them; a minimap of the whole with the
// part in view (click or drag it to move); find by name (ancestors opened, the node centred);
// a node opens its layer, and the panel below links it to its row in the diff's table, which
// links back here (?find=). Pan by dragging or with the arrow keys, zoom with the wheel, + and
// −, or the buttons.
import {h, s, message, fmtNum, fmtInt, shortId, routeHref, replaceHash, VERDICTS} from '../dom.js';
import {getDiffGraph, getDiffSummary} from '../api.js';
import {layoutGraph, GROUP_OPTIONS} from '../graphlayout.js';
import {errScale, colorOf, textOn, scaleLegend} from '../scale.js';
import {copyLinkButton, svgExport} from '../share.js';
import {diffHref, layerHref} from './diff.js';
import {startOf} from '../diff_facts.js';

export const GROUP_MAX = 40; // members a level shows at most: more are cut into ranges
const NODE_H = 34, GROUP_H = 44;
const VERDICT_OF = {i: 'identical', n: 'noise', d: 'divergent', a: 'amplified', f: 'nonfinite',
                    x: 'incomparable', u: 'unknown'};
const RANK = '-xinudaf'; // a group's worst verdict: the highest of its members' letters

function readParams(p) {
    return {a: p.get('a') || '', b: p.get('b') || '', truth: p.get('truth') || '',
            atol: p.get('atol') || '', rtol: p.get('rtol') || '',
            color: p.get('color') === 'err' ? 'err' : 'verdict', find: p.get('find') || ''};
}

function graphHrefOf(q, changes) {
    const n = {...q, ...changes};
    return routeHref('/graph', {a: n.a, b: n.b, truth: n.truth, atol: n.atol, rtol: n.rtol,
                                color: n.color === 'err' ? 'err' : '', find: n.find});
}

// Room for the name (12 px, bold) and for "Op · divergent" or "Op · 1.2e-3" (11 px).
function nodeWidth(name, sub) {
    return Math.min(260, Math.max(90, Math.max(7.4 * name.length, 6.4 * sub.length) + 18));
}

function shortName(name, width) {
    const max = Math.floor((width - 16) / 7.4);
    return name.length > max ? name.slice(0, Math.max(1, max - 1)) + '…' : name;
}

// ---- the namespace tree ----

// The tree of the graph answer g: groups by name segments (split on "/" when names have one,
// else on "."), single-child chains merged, large groups cut into ranges, each group with its
// member count, worst verdict letter, largest error and first layer.
export function namespaceTree(g) {
    const names = g.names, n = g.nodes;
    const sep = names.some((x) => x.includes('/')) ? '/' : '.';
    let ids = 0;
    const group = (label, parent) => ({id: 'g' + ids++, kind: 'group', label, parent, children: [],
                                        byLabel: new Map()});
    const root = group('', null);
    const leaves = new Array(n);
    for (let i = 0; i < n; i++) {
        const parts = names[i].split(sep).filter(Boolean);
        let at = root;
        for (const p of parts.slice(0, -1)) {
            let c = at.byLabel.get(p);
            if (!c) {
                c = group(p, at);
                at.byLabel.set(p, c);
                at.children.push(c);
            }
            at = c;
        }
        const leaf = {id: 'l' + i, kind: 'layer', i, name: names[i], label: parts[parts.length - 1] || names[i],
                      op: g.ops[i] || '', code: g.verdicts[i] || 'u', err: g.err[i], parent: at};
        at.children.push(leaf);
        leaves[i] = leaf;
    }
    const sources = (g.sources || []).map((name, k) => {
        const src = {id: 's' + k, kind: 'source', name, label: name, parent: root, code: '-'};
        root.children.unshift(src);
        return src;
    });
    // A group holding one group only is that group, named by both ("encoder.layer").
    const merge = (t) => {
        for (const c of t.children)
            if (c.kind === 'group')
                merge(c);
        t.children = t.children.map((c) => {
            while (c.kind === 'group' && c.children.length === 1 && c.children[0].kind === 'group') {
                const only = c.children[0];
                only.label = c.label + sep + only.label;
                only.parent = c.parent;
                c = only;
            }
            return c;
        });
    };
    merge(root);
    while (root.children.length === 1 && root.children[0].kind === 'group') {
        const only = root.children[0];
        root.children = only.children;
        root.label = only.label;
        for (const c of root.children)
            c.parent = root;
    }
    // More than GROUP_MAX members: ranges of 10, 100, ... of them, in the model's order.
    const chunk = (t) => {
        for (const c of t.children)
            if (c.kind === 'group')
                chunk(c);
        while (t.children.length > GROUP_MAX) {
            const k = t.children.length;
            const size = 10 ** Math.ceil(Math.log10(k / GROUP_MAX));
            const ranges = [];
            for (let a = 0; a < k; a += size) {
                const members = t.children.slice(a, a + size);
                const r = {id: 'g' + ids++, kind: 'group', range: true, parent: t, children: members,
                           label: `${members[0].label}–${members[members.length - 1].label}`};
                for (const m of members)
                    m.parent = r;
                ranges.push(r);
            }
            t.children = ranges;
            ranges.forEach(chunk); // a range of 100 holds ranges of 10
        }
    };
    chunk(root);
    // What each group holds: layers, the worst letter, the largest error, the first layer.
    const sum = (t) => {
        if (t.kind !== 'group') {
            t.layers = t.kind === 'layer' ? 1 : 0;
            t.worst = t.kind === 'layer' ? t.code : '-';
            t.maxErr = Number.isFinite(t.err) ? t.err : null;
            t.first = t.kind === 'layer' ? t.i : -1;
            return;
        }
        t.layers = 0;
        t.worst = '-';
        t.maxErr = null;
        t.first = Infinity;
        for (const c of t.children) {
            sum(c);
            t.layers += c.layers;
            if (RANK.indexOf(c.worst) > RANK.indexOf(t.worst))
                t.worst = c.worst;
            if (c.maxErr !== null && (t.maxErr === null || c.maxErr > t.maxErr))
                t.maxErr = c.maxErr;
            if (c.first >= 0 && c.first < t.first)
                t.first = c.first;
        }
        delete t.byLabel;
    };
    sum(root);
    let groups = 0;
    const count = (t) => {
        if (t.kind === 'group') {
            groups++;
            t.children.forEach(count);
        }
    };
    root.children.forEach(count);
    return {root, leaves, sources, groups, sep};
}

// The groups that hold t, outermost first (the root left out).
function ancestors(t, root) {
    const out = [];
    for (let a = t.parent; a && a !== root; a = a.parent)
        out.unshift(a);
    return out;
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
    let d, g;
    try {
        [d, g] = await Promise.all([getDiffSummary(q, {signal: ctx.signal}), getDiffGraph(q, {signal: ctx.signal})]);
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        status.replaceWith(message('error', e.message));
        return;
    }
    if (!ctx.live())
        return;
    const model = (d.a && d.a.model) || '';
    title.append(' of ', h('span', {class: 'name'}, model));
    document.title = `gpudiff: graph of ${model}`;
    const tree = namespaceTree(g);
    const st = startOf(d); // the first divergent layer, or the first observed difference
    const firstName = st ? st.layer.name : null;
    const amps = new Set(d.amplifiers || []);
    const byName = new Map(tree.leaves.map((l) => [l.name, l]));
    const scale = errScale([]);
    const expanded = new Set();
    const edgePairs = g.edges || [];
    const nodeOfIndex = (k) => (k < g.nodes ? tree.leaves[k] : tree.sources[k - g.nodes]);
    // Marks: which groups hold the first divergent layer, an amplifier, the found layer.
    const holds = (leaf, cls, set) => {
        for (let a = leaf && leaf.parent; a && a !== tree.root; a = a.parent)
            set.set(a.id, (set.get(a.id) || new Set()).add(cls));
    };
    const groupMarks = new Map();
    if (firstName)
        holds(byName.get(firstName), 'holds-first', groupMarks);
    for (const name of amps)
        holds(byName.get(name), 'holds-amp', groupMarks);
    // Open at first: the groups around the first divergent layer (or the one to find).
    const openTo = (leaf) => {
        for (const a of ancestors(leaf, tree.root))
            expanded.add(a.id);
    };
    const target = byName.get(q.find) || byName.get(firstName) || null;
    if (target)
        openTo(target);

    // ---- the view: a transform of the scene; the minimap ----
    const view = {x: 0, y: 0, k: 1};
    let laid = null, pos = new Map(), W = 400, H = 300;
    const svg = s('svg', {class: 'graph', role: 'group', id: 'graph', tabindex: 0,
                          'aria-label': `Graph of ${model}: ${g.nodes} layers`});
    const scene = s('g', {class: 'scene'});
    svg.append(scene);
    const mini = s('svg', {class: 'minimap', id: 'graph-minimap', role: 'img', 'aria-label': 'Minimap of the graph'});
    const miniScene = s('g');
    const miniView = s('rect', {class: 'minimap-view'});
    mini.append(miniScene, miniView);
    const frame = h('div', {class: 'graph-frame'}, svg, h('div', {class: 'minimap-box'}, mini));
    const size = () => ({w: frame.clientWidth || 900, h: frame.clientHeight || 600});
    const MINI_W = 200, MINI_H = 140;
    let miniK = 1;
    const apply = () => {
        scene.setAttribute('transform',
            `translate(${view.x.toFixed(1)} ${view.y.toFixed(1)}) scale(${view.k.toFixed(4)})`);
        const {w, h: hh} = size();
        miniView.setAttribute('x', ((-view.x / view.k) * miniK).toFixed(1));
        miniView.setAttribute('y', ((-view.y / view.k) * miniK).toFixed(1));
        miniView.setAttribute('width', Math.max(2, (w / view.k) * miniK).toFixed(1));
        miniView.setAttribute('height', Math.max(2, (hh / view.k) * miniK).toFixed(1));
    };
    const centreAt = (cx, cy, k) => {
        const {w, h: hh} = size();
        view.k = k || view.k;
        view.x = w / 2 - cx * view.k;
        view.y = hh / 2 - cy * view.k;
        apply();
    };
    const centre = (id, k) => {
        const c = pos.get(id);
        if (!c)
            return false;
        centreAt(c.x + c.width / 2, c.y + c.height / 2, k || Math.max(view.k, 0.8));
        return true;
    };
    const fit = () => {
        const {w, h: hh} = size();
        view.k = Math.min(1.2, (w - 20) / W, (hh - 20) / H);
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
        if (e.target.closest('a, .node, .group-head'))
            return; // a click opens the node or the group
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
    // The minimap: a click or a drag puts the view's centre there.
    let miniDrag = false;
    const miniMove = (e) => {
        const r = mini.getBoundingClientRect();
        centreAt((e.clientX - r.left) / miniK, (e.clientY - r.top) / miniK);
    };
    mini.addEventListener('pointerdown', (e) => {
        miniDrag = true;
        mini.setPointerCapture(e.pointerId);
        miniMove(e);
    });
    mini.addEventListener('pointermove', (e) => { if (miniDrag) miniMove(e); });
    mini.addEventListener('pointerup', () => { miniDrag = false; });
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

    // ---- the panel of the focused or found node ----
    const focusNote = h('p', {class: 'hint', id: 'graph-focus', 'aria-live': 'polite'});
    const panelLinks = h('p', {class: 'graph-panel', id: 'graph-panel'});
    const describe = (t) => {
        if (t.kind === 'layer')
            return `${t.name} (${t.op || '?'}): ${VERDICT_OF[t.code] || 'unknown'}` +
                (Number.isFinite(t.err) ? `, error ${fmtNum(t.err)}` : '');
        if (t.kind === 'group')
            return `${t.label}: ${fmtInt(t.layers)} layers, worst ${VERDICT_OF[t.worst] || 'none'}` +
                (t.maxErr !== null ? `, largest error ${fmtNum(t.maxErr)}` : '') +
                (expanded.has(t.id) ? ' (open)' : ' (closed: Enter opens it)');
        return `${t.name}: the model's input`;
    };
    const showPanel = (t) => {
        focusNote.textContent = describe(t);
        panelLinks.replaceChildren();
        if (t.kind === 'layer')
            panelLinks.append(h('a', {href: layerHref(q, {name: t.name}), id: 'panel-layer'}, 'Open the layer'), ' · ',
                              h('a', {href: diffHref(q, {at: t.name}), id: 'panel-row'}, 'Its row in the diff\'s table'));
        else if (t.kind === 'group' && t.first >= 0)
            panelLinks.append(h('a', {href: diffHref(q, {at: tree.leaves[t.first].name}), id: 'panel-row'},
                                `Its first layer, ${tree.leaves[t.first].name}, in the diff's table`));
    };

    // ---- drawing what is open ----
    const fill = (t) => {
        if (q.color !== 'err' || t.kind === 'source')
            return null;
        const v = t.kind === 'layer' ? (t.code === 'x' ? null : t.err) : t.maxErr;
        return t.code === 'f' || t.worst === 'f' ? '#dc2626' : colorOf(scale, v);
    };
    const subline = (t) => {
        if (t.kind === 'source')
            return 'input';
        if (t.kind === 'layer')
            return `${t.op || '?'} · ${q.color === 'err' && Number.isFinite(t.err) ? fmtNum(t.err, 2)
                : VERDICT_OF[t.code] || 'unknown'}`;
        return `${fmtInt(t.layers)} layers · ${q.color === 'err' && t.maxErr !== null ? 'max ' + fmtNum(t.maxErr, 2)
            : 'worst ' + (VERDICT_OF[t.worst] || 'none')}`;
    };
    const elkOf = (t) => {
        if (t.kind === 'group' && expanded.has(t.id))
            return {id: t.id, children: t.children.map(elkOf), edges: [],
                    layoutOptions: {...GROUP_OPTIONS, 'elk.padding': '[top=30,left=10,bottom=10,right=10]'}};
        const label = t.kind === 'group' ? t.label : t.kind === 'layer' ? t.label : t.name;
        return {id: t.id, width: nodeWidth(label, subline(t)), height: t.kind === 'group' ? GROUP_H : NODE_H};
    };
    // The node an end of an edge shows as: itself, or the outermost closed group holding it.
    const shownAs = (t) => {
        let r = t;
        for (let a = t.parent; a && a !== tree.root; a = a.parent)
            if (!expanded.has(a.id))
                r = a;
        return r;
    };
    // The innermost group holding both (the root when none): where ELK wants the edge.
    const commonGroup = (u, v) => {
        const seen = new Set();
        for (let a = u.parent; a; a = a.parent)
            seen.add(a);
        for (let a = v.parent; a; a = a.parent)
            if (seen.has(a))
                return a;
        return tree.root;
    };
    let shownEdges = 0, layoutMs = 0;
    const draw = async () => {
        const elk = {id: 'root', children: tree.root.children.map(elkOf), edges: []};
        const elkById = new Map();
        const index = (e) => {
            elkById.set(e.id, e);
            (e.children || []).forEach(index);
        };
        index(elk);
        const seen = new Set();
        for (let k = 0; k + 1 < edgePairs.length; k += 2) {
            const u = shownAs(nodeOfIndex(edgePairs[k])), v = shownAs(nodeOfIndex(edgePairs[k + 1]));
            if (!u || !v || u === v)
                continue;
            const key = u.id + '>' + v.id;
            if (seen.has(key))
                continue;
            seen.add(key);
            const holder = commonGroup(u, v);
            const e = {id: 'e' + seen.size, sources: [u.id], targets: [v.id]};
            (holder === tree.root ? elk : elkById.get(holder.id)).edges.push(e);
        }
        shownEdges = seen.size;
        // No recorded edges (a framework dump): the layers in their order.
        if (!edgePairs.length) {
            const shown = [];
            const walk = (t) => (t.kind === 'group' && expanded.has(t.id) ? t.children.forEach(walk) : shown.push(t));
            tree.root.children.forEach(walk);
            for (let k = 1; k < shown.length; k++) {
                const holder = commonGroup(shown[k - 1], shown[k]);
                (holder === tree.root ? elk : elkById.get(holder.id)).edges.push(
                    {id: 'o' + k, sources: [shown[k - 1].id], targets: [shown[k].id]});
            }
        }
        const t0 = performance.now();
        laid = await layoutGraph(elk);
        layoutMs = performance.now() - t0;
        W = laid.width || 400;
        H = laid.height || 300;
        paint();
    };
    const byId = new Map();
    const index = (t) => {
        byId.set(t.id, t);
        if (t.kind === 'group')
            t.children.forEach(index);
    };
    tree.root.children.forEach(index);
    const paint = () => {
        pos = new Map();
        const place = (n, ox, oy) => {
            const abs = {x: ox + (n.x || 0), y: oy + (n.y || 0), width: n.width, height: n.height};
            pos.set(n.id, abs);
            (n.children || []).forEach((c) => place(c, abs.x, abs.y));
        };
        (laid.children || []).forEach((c) => place(c, 0, 0));
        scene.replaceChildren();
        miniScene.replaceChildren();
        const groupsG = s('g', {class: 'groups'}), edgesG = s('g', {class: 'edges'}), nodesG = s('g', {class: 'nodes'});
        scene.append(groupsG, edgesG, nodesG);
        let dEdges = '';
        const edgesOf = (n, ox, oy) => {
            for (const e of n.edges || [])
                for (const sec of e.sections || []) {
                    const pts = [sec.startPoint, ...(sec.bendPoints || []), sec.endPoint];
                    dEdges += 'M' + pts.map((p) => `${(p.x + ox).toFixed(1)} ${(p.y + oy).toFixed(1)}`).join('L');
                }
            for (const c of n.children || [])
                if (c.children)
                    edgesOf(c, pos.get(c.id).x, pos.get(c.id).y);
        };
        edgesOf(laid, 0, 0);
        edgesG.append(s('path', {class: 'edge', d: dEdges}));
        miniK = Math.min(MINI_W / W, MINI_H / H);
        mini.setAttribute('viewBox', `0 0 ${MINI_W} ${MINI_H}`);
        mini.setAttribute('width', MINI_W);
        mini.setAttribute('height', MINI_H);
        for (const [id, c] of pos) {
            const t = byId.get(id);
            if (!t)
                continue;
            const open = t.kind === 'group' && expanded.has(id);
            if (!open || t.kind !== 'group')
                miniScene.append(s('rect', {x: (c.x * miniK).toFixed(1), y: (c.y * miniK).toFixed(1),
                    width: Math.max(1, c.width * miniK).toFixed(1), height: Math.max(1, c.height * miniK).toFixed(1),
                    class: `mini-node v-${t.kind === 'group' ? VERDICT_OF[t.worst] || 'none' : VERDICT_OF[t.code] || 'source'}`}));
            if (open) {
                // An open group: a box around its members (drag it to pan), its head closes it.
                const head = s('g', {class: 'group-head', tabindex: 0, role: 'button', 'aria-expanded': 'true',
                                     'data-group': id, 'aria-label': `Close ${t.label}: ${describe(t)}`});
                const words = `▾ ${t.label} · ${fmtInt(t.layers)} layers · worst ${VERDICT_OF[t.worst] || 'none'}`;
                const fits = Math.max(4, Math.floor((c.width - 16) / 6.9));
                head.append(s('rect', {x: c.x, y: c.y, width: c.width, height: 26, rx: 8, class: 'group-head-box'}),
                            s('text', {x: c.x + 8, y: c.y + 18, class: 'group-label'},
                              words.length > fits ? words.slice(0, fits - 1) + '…' : words),
                            s('title', {}, words.slice(2)));
                groupsG.append(s('rect', {x: c.x, y: c.y, width: c.width, height: c.height, rx: 8,
                                          class: `group-box v-${VERDICT_OF[t.worst] || 'none'}`}), head);
                continue;
            }
            const worst = t.kind === 'group' ? VERDICT_OF[t.worst] || 'none' : null;
            const marks = t.kind === 'layer'
                ? [t.name === firstName ? 'node-first' : '', amps.has(t.name) ? 'node-amp' : ''].filter(Boolean).join(' ')
                : [...(groupMarks.get(id) || [])].join(' ');
            const label = t.kind === 'group' ? t.label : t.kind === 'layer' ? t.label : t.name;
            let el;
            if (t.kind === 'layer')
                el = s('a', {href: layerHref(q, {name: t.name}), class: `node v-${VERDICT_OF[t.code] || 'unknown'} ${marks}`,
                             'data-layer': t.name, 'data-id': id, 'aria-label': describe(t)});
            else if (t.kind === 'group')
                el = s('g', {class: `node group v-${worst} ${marks}`, tabindex: 0, role: 'button',
                             'aria-expanded': 'false', 'data-group': id, 'data-id': id,
                             'aria-label': `Open ${t.label}: ${describe(t)}`});
            else
                el = s('g', {class: 'node node-source', 'data-id': id});
            const bg = fill(t);
            const rect = s('rect', {x: c.x, y: c.y, width: c.width, height: c.height, rx: t.kind === 'group' ? 8 : 5,
                                    class: 'node-box'});
            if (bg)
                rect.style.fill = bg; // CSSOM (the CSP allows it), over the style sheet's fill
            el.append(rect);
            if (t.kind === 'group') // a stack: a group holds more than it shows
                el.insertBefore(s('rect', {x: c.x + 4, y: c.y - 4, width: c.width, height: c.height, rx: 8,
                                           class: 'node-stack'}), rect);
            const ink = bg ? textOn(bg) : null;
            const t1 = s('text', {x: c.x + 8, y: c.y + (t.kind === 'group' ? 18 : 14), class: 'node-name'},
                         (t.kind === 'group' ? '▸ ' : '') + shortName(label, c.width - (t.kind === 'group' ? 14 : 0)));
            const t2 = s('text', {x: c.x + 8, y: c.y + (t.kind === 'group' ? 34 : 28), class: 'node-op'}, subline(t));
            if (ink) {
                t1.style.fill = ink;
                t2.style.fill = ink;
            }
            el.append(t1, t2, s('title', {}, describe(t)));
            if (marks)
                el.append(s('text', {x: c.x + c.width + 6, y: c.y + 21, class: 'node-mark'},
                            /first/.test(marks) ? 'first divergent' : 'amplifier'));
            nodesG.append(el);
        }
        stats.textContent = `${fmtInt(g.nodes)} layers in ${fmtInt(tree.groups)} groups, ` +
            `${fmtInt(edgePairs.length / 2)} recorded edges; ${fmtInt(pos.size)} blocks and ` +
            `${fmtInt(shownEdges)} edges shown, laid out in ${fmtInt(Math.round(layoutMs))} ms by elkjs ` +
            '(layered, in a worker).' + (edgePairs.length ? '' : ' The runs record no input edges (a ' +
            'framework dump): the layers are shown in order.');
        apply();
    };
    const toggle = async (id, centreIt = true) => {
        if (expanded.has(id)) {
            // closing a group closes what it holds too
            const close = (t) => {
                expanded.delete(t.id);
                if (t.kind === 'group')
                    t.children.forEach(close);
            };
            close(byId.get(id));
        } else {
            expanded.add(id);
        }
        await draw();
        if (centreIt)
            centre(id);
        const el = svg.querySelector(`[data-group="${CSS.escape(id)}"]`);
        if (el)
            el.focus({preventScroll: true});
        ctxRendered();
    };
    svg.addEventListener('click', (e) => {
        const el = e.target.closest('[data-group]');
        if (el) {
            e.preventDefault();
            toggle(el.dataset.group);
        }
    });
    svg.addEventListener('keydown', (e) => {
        const el = e.target.closest && e.target.closest('[data-group]');
        if (el && (e.key === 'Enter' || e.key === ' ')) {
            e.preventDefault();
            toggle(el.dataset.group);
        }
    });
    // A node that gets the keyboard focus is brought into view, its values and links below.
    svg.addEventListener('focusin', (e) => {
        const el = e.target.closest && e.target.closest('[data-id], [data-group]');
        if (!el)
            return;
        const t = byId.get(el.dataset.id || el.dataset.group);
        if (!t)
            return;
        showPanel(t);
        const c = pos.get(t.id), {w, h: hh} = size();
        const sx = c.x * view.k + view.x, sy = c.y * view.k + view.y;
        if (sx < 0 || sy < 0 || sx > w - 40 || sy > hh - 40)
            centre(t.id);
    });

    // ---- find ----
    const names = g.names;
    const findIn = h('input', {id: 'graph-find', type: 'search', value: q.find, placeholder: 'part of a name',
                               autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'graph-find-note'});
    const findNote = h('span', {class: 'hint', id: 'graph-find-note', 'aria-live': 'polite'});
    let found = {want: '', hits: [], k: -1};
    const find = async (again) => {
        const want = findIn.value.trim();
        if (!want) {
            findNote.textContent = '';
            return;
        }
        if (want !== found.want || !again) {
            const lower = want.toLowerCase();
            const exact = names.indexOf(want);
            const hits = [];
            for (let i = 0; i < names.length && hits.length < 10000; i++)
                if (i !== exact && names[i].toLowerCase().includes(lower))
                    hits.push(i);
            if (exact >= 0)
                hits.unshift(exact);
            found = {want, hits, k: -1};
        }
        if (!found.hits.length) {
            findNote.textContent = `no layer named like ${want}`;
            return;
        }
        found.k = (found.k + 1) % found.hits.length;
        const leaf = tree.leaves[found.hits[found.k]];
        const closed = ancestors(leaf, tree.root).filter((a) => !expanded.has(a.id));
        if (closed.length) {
            openTo(leaf);
            await draw();
        }
        for (const el of svg.querySelectorAll('.node.found'))
            el.classList.remove('found');
        centre(leaf.id, Math.max(view.k, 1));
        const el = svg.querySelector(`a.node[data-layer="${CSS.escape(leaf.name)}"]`);
        if (el)
            el.classList.add('found');
        showPanel(leaf);
        findNote.textContent = `${leaf.name} (${leaf.op || '?'}): ${found.k + 1} of ${fmtInt(found.hits.length)} ` +
            `match${found.hits.length === 1 ? '' : 'es'}` + (found.hits.length > 1 ? '; Enter: the next' : '');
        replaceHash(graphHrefOf(q, {find: leaf.name}));
        ctxRendered();
    };
    findIn.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') {
            e.preventDefault();
            find(true);
        }
    });
    const button = (label, fn, attrs = {}) => {
        const b = h('button', {type: 'button', class: 'small', ...attrs}, label);
        b.addEventListener('click', fn);
        return b;
    };
    const colorLink = (key, label) => h('a', {class: 'button', 'aria-current': q.color === key ? 'true' : null,
        href: graphHrefOf(q, {color: key})}, label);
    const counts = VERDICTS.map((v) => [v, (d.verdicts && d.verdicts[v]) || 0]).filter(([, c]) => c);
    const stats = h('span', {id: 'graph-stats'});
    const firstLeaf = byName.get(firstName);
    const goFirst = async () => {
        if (!firstLeaf)
            return;
        if (ancestors(firstLeaf, tree.root).some((a) => !expanded.has(a.id))) {
            openTo(firstLeaf);
            await draw();
        }
        centre(firstLeaf.id, 1);
        ctxRendered();
    };
    const openAll = async (open) => {
        if (open) {
            // every group, if that stays drawable; else the next level of what is open
            const next = [];
            const walk = (t) => {
                if (t.kind !== 'group')
                    return;
                if (expanded.has(t.id))
                    t.children.forEach(walk);
                else
                    next.push(t);
            };
            tree.root.children.forEach(walk);
            next.forEach((t) => expanded.add(t.id));
        } else {
            expanded.clear();
        }
        await draw();
        fit();
        ctxRendered();
    };
    root.append(h('div', {class: 'graph-tools'},
        h('div', {class: 'segmented', role: 'group', 'aria-label': 'Colour nodes by'},
          colorLink('verdict', 'verdict'), colorLink('err', 'log error')),
        button('−', () => zoom(0.8), {'aria-label': 'Zoom out'}),
        button('+', () => zoom(1.25), {'aria-label': 'Zoom in'}),
        button('Fit', fit, {id: 'graph-fit'}),
        button('Open a level', () => openAll(true), {id: 'graph-open-level'}),
        button('Close all', () => openAll(false), {id: 'graph-close-all'}),
        button(st && !st.known ? 'First observed' : 'First divergent', goFirst,
               {disabled: !firstLeaf, id: 'graph-first'}),
        h('div', {class: 'field inline'}, h('label', {for: 'graph-find'}, 'Find'), findIn),
        findNote),
        frame, focusNote, panelLinks,
        h('div', {class: 'graph-legend'},
          q.color === 'err' ? scaleLegend(scale, 'error relative to max |b| per layer; a group: its largest')
            : h('ul', {class: 'legend'}, counts.map(([v, c]) => h('li', {},
                h('span', {class: `chip node-chip v-${v}`}), `${v} (${fmtInt(c)})`))),
          h('p', {class: 'hint'}, stats, ' Layers are grouped by the parts of their names; a stacked ',
            'block is a closed group (click or Enter opens it, its head closes it) and says its worst ',
            'verdict. Thick outline: the first divergent layer (and the groups that hold it); dashed: ',
            'amplifiers. A layer opens its view; the panel below the graph links its row in the table. ',
            'The minimap shows the whole; click or drag it to move. ', svgExport('graph', () => svg))));
    shareBar.append(copyLinkButton());
    svg.setAttribute('width', '100%');
    svg.setAttribute('height', '100%');
    status.textContent = `Laying out ${fmtInt(g.nodes)} layers…`;
    try {
        await draw();
    } catch (e) {
        status.replaceWith(message('error', 'The layout failed: ', e.message));
        return;
    }
    status.remove();
    if (!ctx.live())
        return;
    // The view after a change the user made: marked as rendered for the address it now has.
    function ctxRendered() {
        const v = document.getElementById('view');
        if (v && ctx.live())
            v.dataset.rendered = location.hash;
    }
    if (q.find && byName.get(q.find)) {
        findIn.value = q.find;
        await find(false);
    } else if (firstLeaf) {
        centre(firstLeaf.id, 1);
    } else {
        fit();
    }
}
