// dom.js: building the page without HTML strings. Every piece of text that reaches the page
// goes through textContent (h() with string children), never innerHTML, so names and values
// from uploads stay text whatever they contain.

const SVG_NS = 'http://www.w3.org/2000/svg';

// Applies attrs to el: "class", "text", "on*" handlers, booleans, dataset, the rest as
// attributes. Keys starting with "aria" or "data-" are attributes as well.
function applyAttrs(el, attrs) {
    for (const [key, value] of Object.entries(attrs || {})) {
        if (value === undefined || value === null || value === false)
            continue;
        if (key === 'text')
            el.textContent = String(value);
        else if (key.startsWith('on') && typeof value === 'function')
            el.addEventListener(key.slice(2), value);
        else if (value === true)
            el.setAttribute(key, '');
        else
            el.setAttribute(key, String(value));
    }
}

function appendChildren(el, children) {
    for (const child of children.flat(Infinity)) {
        if (child === undefined || child === null || child === false)
            continue;
        el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
}

// h('a', {href: '#/runs'}, 'Runs', child...): an HTML element; strings become text nodes.
export function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    applyAttrs(el, attrs);
    appendChildren(el, children);
    return el;
}

// s('circle', {cx: 1}): an SVG element, same rules.
export function s(tag, attrs, ...children) {
    const el = document.createElementNS(SVG_NS, tag);
    applyAttrs(el, attrs);
    appendChildren(el, children);
    return el;
}

export function clear(el) {
    el.replaceChildren();
    return el;
}

// ---- formatting ----

// A number in 3 significant digits, exponent form when small or large; "–" for null.
export function fmtNum(v, digits = 3) {
    if (v === null || v === undefined || Number.isNaN(v))
        return '–';
    if (typeof v !== 'number')
        return String(v);
    if (v === 0)
        return '0';
    const a = Math.abs(v);
    if (a >= 1e-3 && a < 1e5)
        return String(Number(v.toPrecision(digits)));
    return v.toExponential(digits - 1).replace('e+', 'e');
}

// An integer with thin group separators (10 000), readable in tables.
export function fmtInt(v) {
    if (v === null || v === undefined)
        return '–';
    return Number(v).toLocaleString('en-US');
}

// "2026-11-30 09:25" (":07" more with seconds) from an RFC 3339 time, in UTC (the times
// runs record).
export function fmtTime(t, seconds = false) {
    if (!t)
        return '–';
    const d = new Date(t);
    if (Number.isNaN(d.getTime()))
        return String(t);
    return d.toISOString().slice(0, seconds ? 19 : 16).replace('T', ' ');
}

export function shortId(id) {
    return id ? String(id).slice(0, 8) : '–';
}

// The engine's CPU backends; any other backend without a GPU name did not record where it ran.
export const CPU_BACKENDS = ['cpu', 'cpu64'];

// Where a run ran, as its record says: the GPU name; for the engine's CPU backends the CPU and
// the arithmetic it used ("CPU, float32", "CPU, float64", "CPU, emulating tf32:gemm": three
// different runs, never one word for all); else what is missing ("GPU not recorded" for a
// framework's GPU dump: never "CPU").
export function deviceLabel(run) {
    const gpu = run.gpu ?? (run.env && run.env.gpu_name);
    if (gpu)
        return gpu;
    if (CPU_BACKENDS.includes(run.backend)) {
        const emulate = run.knobs && run.knobs.emulate;
        if (emulate && emulate !== 'none')
            return 'CPU, emulating ' + emulate;
        return run.backend === 'cpu64' ? 'CPU, float64' : 'CPU, float32';
    }
    return /gpu|cuda|rocm|hip|xla|tpu|mps/i.test(run.backend || '') ? 'GPU not recorded'
        : 'device not recorded';
}

// The knob table of engine/core/knobs.def (GET /api/v1/knobs, set once by app.js before a
// view renders): each knob's name, option, default and category, so runs are described as
// the device key and the agent spell them, never from a copy of the table.
let knobTable = [];

export function setKnobTable(knobs)
{
    knobTable = Array.isArray(knobs) ? knobs : [];
}

export function getKnobTable()
{
    return knobTable;
}

// A recorded knob value in its one spelling: what older runs wrote (true and false for on and
// off, "tf32:conv,gemm") as the table spells it now.
export function knobValue(knob, v)
{
    if (v === true || v === false)
        return knob && knob.kind === 'onoff' ? (v ? 'on' : 'off') : String(v);
    if (knob && knob.kind === 'emulate' && typeof v === 'string') {
        // the classes' old ',' (not the commas of a node list after '@')
        const at = v.indexOf('@');
        return at < 0 ? v.replace(/,/g, '+') : v.slice(0, at).replace(/,/g, '+') + v.slice(at);
    }
    return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

// The knobs of a run that change numbers and are not at their default, as the daemon's device
// key writes them (docs/SERVER.md, "Devices"), then knobs the table does not know (another
// framework's dump), as recorded; those that change no number (threads, capture) are left out.
export function knobWords(run) {
    const k = run.knobs || {};
    const out = [];
    const known = new Set();
    for (const knob of knobTable) {
        known.add(knob.name);
        const v = k[knob.name];
        if (knob.category === 'other' || v === undefined || v === null)
            continue;
        const text = knobValue(knob, v);
        if (knob.name === 'repro' && text === 'bitwise') // cuda computed the cpu backend's bits
            out.push('bitwise mode');
        else if (text !== knob.default)
            out.push(`${knob.name}=${text}`);
    }
    for (const [key, v] of Object.entries(k))
        if (!known.has(key) && key !== 'threads' && v !== null && v !== false && v !== 'none')
            out.push(`${key}=${knobValue(null, v)}`);
    return out;
}

// A run made with --repro bitwise: every layer bit for bit the cpu backend's (docs/NUMERICS.md).
export function bitwiseBadge(run) {
    if (!run || !run.knobs || run.knobs.repro !== 'bitwise')
        return null;
    return h('span', {class: 'badge bitwise',
                      title: "--repro bitwise: gpudiff's own kernels, every layer the cpu " +
                             "backend's bits on any GPU and batch size"}, 'bitwise');
}

// A run as one short line: "cpu · NVIDIA H200 · tf32 batch=8 · 2026-11-30 09:25 · 432ca1f0".
export function runLabel(run) {
    if (!run)
        return '–';
    const where = deviceLabel(run);
    // "cpu · CPU, float32" says it twice, and the knobs say the emulation
    const parts = [run.backend, CPU_BACKENDS.includes(run.backend) && !(run.gpu ?? (run.env && run.env.gpu_name))
        ? null : where];
    const knobs = knobWords(run);
    if (knobs.length)
        parts.push(knobs.join(' '));
    parts.push(fmtTime(run.created_at), shortId(run.id));
    return parts.filter(Boolean).join(' · ');
}

// ---- verdicts: a word and a class, never colour alone ----

export const VERDICTS = ['identical', 'noise', 'divergent', 'amplified', 'nonfinite',
                         'incomparable'];

export function verdictBadge(verdict) {
    const v = VERDICTS.includes(verdict) ? verdict : 'unknown';
    return h('span', {class: 'badge v-' + v}, verdict || 'unknown');
}

// A message box: kind "error" is announced by screen readers (role=alert).
export function message(kind, ...children) {
    return h('div', {class: 'msg msg-' + kind, role: kind === 'error' ? 'alert' : 'status'},
             ...children);
}

// Links inside the app: "#/diff?a=..&b=.." from a route and its parameters.
export function routeHref(path, params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {}))
        if (v !== undefined && v !== null && v !== '')
            q.set(k, String(v));
    const qs = q.toString();
    return '#' + path + (qs ? '?' + qs : '');
}

// Puts a view's state (a range, a filter) into the address without a new route, so that the
// link copied from it opens the same; the view stays marked as rendered for that address.
export function replaceHash(hash) {
    const view = document.getElementById('view');
    const current = view && view.dataset.rendered === location.hash;
    history.replaceState(history.state, '', hash);
    if (current)
        view.dataset.rendered = location.hash;
}
