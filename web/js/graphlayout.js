// graphlayout.js: lays a model's layers out with elkjs's layered algorithm (Eclipse Layout
// Kernel, web/vendor/elk-worker.min.js, vendored by web/vendor/update.sh) in a Web Worker, off
// the page's thread: the page stays responsive while a graph of thousands of nodes is laid
// out. The worker is started once per visit and kept. The protocol is elkjs's own
// (lib/elk-api.js): {id, cmd: 'register' | 'layout', ...} answered by {id, data} or {id, error}.

const WORKER_URL = new URL('../vendor/elk-worker.min.js', import.meta.url);

// Settings chosen for long, mostly sequential networks (docs/PERFORMANCE.md): the nodes of a
// layer keep the model's order (no crossing minimization: the slowest phase, about half the
// time, and a model's own order is what its author reads), the simple node placement,
// depth-first cycle breaking (a model that runs has no cycle).
export const LAYOUT_OPTIONS = {
    'elk.algorithm': 'layered',
    'elk.direction': 'DOWN',
    'elk.layered.thoroughness': '1',
    'elk.layered.cycleBreaking.strategy': 'DEPTH_FIRST',
    'elk.layered.crossingMinimization.strategy': 'NONE',
    'elk.layered.nodePlacement.strategy': 'SIMPLE',
    'elk.spacing.nodeNode': '18',
    'elk.layered.spacing.nodeNodeBetweenLayers': '22',
    'elk.layered.spacing.edgeNodeBetweenLayers': '10',
    'elk.edgeRouting': 'ORTHOGONAL',
};

let worker = null;
let nextId = 0;
const waiting = new Map();

function post(msg) {
    return new Promise((resolve, reject) => {
        const id = nextId++;
        waiting.set(id, {resolve, reject});
        worker.postMessage({...msg, id});
    });
}

function start() {
    if (worker)
        return;
    worker = new Worker(WORKER_URL);
    worker.onmessage = (e) => {
        const {id, data, error} = e.data || {};
        const w = waiting.get(id);
        if (!w)
            return;
        waiting.delete(id);
        if (error)
            w.reject(new Error(typeof error === 'string' ? error : error.message || 'layout failed'));
        else
            w.resolve(data);
    };
    worker.onerror = (e) => {
        for (const w of waiting.values())
            w.reject(new Error('the layout worker failed: ' + (e.message || 'no message')));
        waiting.clear();
        worker = null;
    };
    post({cmd: 'register', algorithms: ['layered']}).catch(() => {});
}

// Starts the worker and lays out a small graph, so that the code a real layout runs is loaded
// and compiled before it is needed (the diff view calls it once it is idle).
export function warm() {
    start();
    const children = Array.from({length: 12}, (_, i) => ({id: 'w' + i, width: 60, height: 30}));
    const edges = children.slice(1).map((c, i) => ({id: 'we' + i, sources: ['w' + i], targets: [c.id]}));
    return post({cmd: 'layout', graph: {id: 'warm', layoutOptions: LAYOUT_OPTIONS, children, edges},
                 layoutOptions: {}, options: {}}).catch(() => {});
}

// layout(nodes [{id, width, height}], edges [{id, source, target}]): the ELK graph with x, y on
// each node and sections (startPoint, bendPoints, endPoint) on each edge.
export function layout(nodes, edges) {
    return layoutGraph({
        id: 'root',
        children: nodes.map((n) => ({id: n.id, width: n.width, height: n.height})),
        edges: edges.map((e) => ({id: e.id, sources: [e.source], targets: [e.target]})),
    });
}

// Groups (nodes with children: the graph view's open namespaces) are laid out with their
// members inside and the edges across them routed through, in one pass over the hierarchy
// (ELK's INCLUDE_CHILDREN). That pass takes ELK's own crossing minimization and node
// placement (the fast ones above are not hierarchy-aware): a grouped view shows a few hundred
// blocks at most, where the time those phases take is small.
export const GROUP_OPTIONS = {
    'elk.algorithm': 'layered',
    'elk.direction': 'DOWN',
    'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
    'elk.layered.cycleBreaking.strategy': 'DEPTH_FIRST',
    'elk.spacing.nodeNode': '18',
    'elk.layered.spacing.nodeNodeBetweenLayers': '22',
    'elk.layered.spacing.edgeNodeBetweenLayers': '10',
    'elk.edgeRouting': 'ORTHOGONAL',
};

// layoutGraph(graph): an ELK graph as given (children nested, each group's options its own,
// edges in the node that holds both ends), laid out with GROUP_OPTIONS at its root: x, y of
// each node relative to its parent, edge sections relative to the node that holds the edge.
export function layoutGraph(graph) {
    start();
    const g = {...graph, layoutOptions: {...GROUP_OPTIONS, ...(graph.layoutOptions || {})}};
    return post({cmd: 'layout', graph: g, layoutOptions: {}, options: {}});
}
