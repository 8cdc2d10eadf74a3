// app.js: the dashboard's router. Hash routes keep every view a plain link that can be
// bookmarked and shared:
//   #/runs?model=&gpu=&backend=&since=&knob=&limit=&offset=   runs, paged by the daemon
//   #/diff?a=&b=&truth=&atol=&rtol=&metric=                  two runs layer by layer
//   #/matrix/MODEL                                           devices x devices
//   #/history/MODEL?layer=&device=&limit=                    a layer over time
//   #/layer?a=&b=&name=                                      one layer of a diff
//   #/graph?a=&b=&truth=&color=                              the model as a graph, coloured by a diff
//   #/overlay?truth=&runs=                                   N runs against one truth, layer by layer
//   #/heatmap/MODEL?ref=                                     devices x layers of one model
//   #/sweeps, #/sweeps/ID                                    knob sweeps (when the daemon serves them)
//   #/jobs, #/jobs/ID                                        jobs run by agents as a service
// Each view's time from the route to its being rendered is a performance measure named
// "gd-view NAME" (the browser test reads them; docs/PERFORMANCE.md).
import {h, clear, message, setKnobTable} from './dom.js';
import {getToken, setToken, getKnobs} from './api.js';
import * as runs from './views/runs.js';
import * as diff from './views/diff.js';
import * as matrix from './views/matrix.js';
import * as history from './views/history.js';
import * as layer from './views/layer.js';
import * as graph from './views/graph.js';
import * as sweeps from './views/sweeps.js';
import * as jobs from './views/jobs.js';
import * as overlay from './views/overlay.js';

const ROUTES = [
    {path: /^\/runs$/, view: runs, nav: 'runs'},
    {path: /^\/diff$/, view: diff, nav: 'diff'},
    {path: /^\/matrix(?:\/([^/]*))?$/, view: matrix, nav: 'matrix'},
    {path: /^\/history(?:\/([^/]*))?$/, view: history, nav: 'history'},
    {path: /^\/layer$/, view: layer, nav: 'diff'},
    {path: /^\/graph$/, view: graph, nav: 'diff'},
    {path: /^\/sweeps(?:\/([^/]*))?$/, view: sweeps, nav: 'sweeps'},
    {path: /^\/jobs(?:\/([^/]*))?$/, view: jobs, nav: 'jobs'},
    {path: /^\/overlay$/, view: overlay, nav: 'runs'},
    {path: /^\/heatmap(?:\/([^/]*))?$/, view: {render: overlay.heatmap}, nav: 'matrix'},
];

function decode(seg) {
    try {
        return decodeURIComponent(seg);
    } catch {
        return seg;
    }
}

function parseHash() {
    const raw = location.hash.replace(/^#/, '') || '/runs';
    const q = raw.indexOf('?');
    const path = q < 0 ? raw : raw.slice(0, q);
    const params = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
    return {path, params};
}

let current = null; // the AbortController of the view on screen

async function route(focus) {
    const {path, params} = parseHash();
    if (current)
        current.abort();
    const ctrl = new AbortController();
    current = ctrl;
    const root = clear(document.getElementById('view'));
    root.setAttribute('aria-busy', 'true');
    const started = performance.now();
    const match = ROUTES.map((r) => ({r, m: r.path.exec(path)})).find((x) => x.m);
    for (const a of document.querySelectorAll('[data-nav]')) {
        if (match && a.dataset.nav === match.r.nav)
            a.setAttribute('aria-current', 'page');
        else
            a.removeAttribute('aria-current');
    }
    const ctx = {
        params,
        segment: match && match.m[1] !== undefined ? decode(match.m[1]) : '',
        signal: ctrl.signal,
        live: () => current === ctrl, // false once the user went elsewhere
    };
    try {
        // the knob table, before any view describes a run (a daemon without it: none)
        await getKnobs().then(setKnobTable, () => setKnobTable([]));
        if (!match) {
            document.title = 'gpudiff: not found';
            root.append(h('h1', {}, 'No such page'),
                        message('error', 'Nothing lives at ', h('code', {}, '#' + path), '. ',
                                h('a', {href: '#/runs'}, 'Go to the runs.')));
        } else {
            await match.r.view.render(root, ctx);
        }
    } catch (e) {
        if (e.name === 'AbortError' || !ctx.live())
            return;
        root.append(message('error', 'This view failed: ', e.message || String(e)));
    } finally {
        if (ctx.live()) {
            root.removeAttribute('aria-busy');
            if (match)
                performance.measure('gd-view ' + path.split('/')[1], {start: started, end: performance.now()});
            root.dataset.rendered = location.hash; // tests wait for this (a view may refine it)
        }
    }
    if (focus && ctx.live()) {
        const h1 = root.querySelector('h1');
        if (h1) {
            h1.setAttribute('tabindex', '-1');
            h1.focus({preventScroll: true});
        }
    }
}

function setupToken() {
    const form = document.getElementById('token-form');
    const input = document.getElementById('token-input');
    input.value = getToken();
    form.addEventListener('submit', (e) => {
        e.preventDefault();
        setToken(input.value.trim());
        route(false);
    });
    document.getElementById('token-clear').addEventListener('click', () => {
        input.value = '';
        setToken('');
        route(false);
    });
}

window.addEventListener('hashchange', () => route(true));
setupToken();
route(false);
