// api.js: the daemon's public JSON API (schema/openapi.yaml), the only data source of the
// dashboard. Paths are relative to the page, so the dashboard also works behind a proxy that
// serves gpudiffd under a prefix. A token (for daemons run with --require-auth-read) is kept
// for the browser tab only, in sessionStorage.

const TOKEN_KEY = 'gpudiff.token';

export class ApiError extends Error {
    constructor(status, code, message) {
        super(message);
        this.status = status;
        this.code = code;
    }
}

export function getToken() {
    try {
        return sessionStorage.getItem(TOKEN_KEY) || '';
    } catch {
        return '';
    }
}

export function setToken(token) {
    try {
        if (token)
            sessionStorage.setItem(TOKEN_KEY, token);
        else
            sessionStorage.removeItem(TOKEN_KEY);
    } catch {
        /* storage disabled: the token lasts until the page is reloaded */
    }
}

function headers() {
    const t = getToken();
    return t ? {Authorization: 'Bearer ' + t} : {};
}

// The URL of an API path with query parameters (undefined and null left out; an empty
// string is sent: gpu= asks for CPU runs; an array is the parameter repeated).
export function apiUrl(path, params) {
    const url = new URL('api/v1/' + path.replace(/^\//, ''), document.baseURI);
    for (const [k, v] of Object.entries(params || {})) {
        if (Array.isArray(v))
            v.forEach((x) => url.searchParams.append(k, String(x))); // knob=, label= repeat
        else if (v !== undefined && v !== null)
            url.searchParams.set(k, String(v));
    }
    return url;
}

// GET a JSON document; errors become ApiError with the daemon's code and message.
export async function apiGet(path, params, {signal} = {}) {
    let resp;
    try {
        resp = await fetch(apiUrl(path, params), {headers: headers(), signal});
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        throw new ApiError(0, 'network', 'gpudiffd did not answer: ' + e.message);
    }
    let body = null;
    try {
        body = await resp.json();
    } catch {
        /* not JSON: reported below */
    }
    if (!resp.ok) {
        const err = body && body.error;
        throw new ApiError(resp.status, err ? err.code : 'http_' + resp.status,
                           err ? err.message : 'HTTP ' + resp.status);
    }
    if (body === null)
        throw new ApiError(resp.status, 'bad_json', 'the answer is not JSON');
    return body;
}

// GET binary data (a layer's .npy) as an ArrayBuffer.
export async function apiGetBytes(path, {signal} = {}) {
    const resp = await fetch(apiUrl(path), {headers: headers(), signal});
    if (!resp.ok) {
        let msg = 'HTTP ' + resp.status, code = 'http_' + resp.status;
        try {
            const e = (await resp.json()).error;
            msg = e.message;
            code = e.code;
        } catch {
            /* keep the status line */
        }
        throw new ApiError(resp.status, code, msg);
    }
    return resp.arrayBuffer();
}

// Small caches: a run's record and the model list change rarely within one visit.
const runCache = new Map();

export function getRun(id) {
    if (!runCache.has(id)) {
        const p = apiGet('runs/' + encodeURIComponent(id));
        p.catch(() => runCache.delete(id));
        runCache.set(id, p);
    }
    return runCache.get(id);
}

export function getModels() {
    return apiGet('models').then((r) => r.models);
}

export function layerNpyPath(runId, index) {
    return 'runs/' + encodeURIComponent(runId) + '/layers/' + Number(index) + '.npy';
}

// Runs promises from makers, at most `limit` at a time (the run details of a page).
export async function pooled(makers, limit = 4) {
    const results = new Array(makers.length);
    let next = 0;
    async function worker() {
        while (next < makers.length) {
            const i = next++;
            try {
                results[i] = {ok: true, value: await makers[i]()};
            } catch (e) {
                results[i] = {ok: false, error: e};
            }
        }
    }
    await Promise.all(Array.from({length: Math.min(limit, makers.length)}, worker));
    return results;
}

// GET /api/v1/diff and /api/v1/diff/summary, remembered for the few last keys: the layer
// drill-down and the graph open from the diff view and need the same document.
function keyedCache(path) {
    const cache = new Map();
    return ({a, b, truth, atol, rtol}, opts) => {
        const key = JSON.stringify([a, b, truth || '', atol || '', rtol || '']);
        if (!cache.has(key)) {
            const p = apiGet(path, {a, b, truth: truth || undefined, atol: atol || undefined,
                                    rtol: rtol || undefined}, opts);
            p.catch(() => cache.delete(key));
            cache.set(key, p);
            if (cache.size > 8)
                cache.delete(cache.keys().next().value);
        }
        return cache.get(key);
    };
}

// The whole diff (every layer: megabytes at thousands of layers; the exports only).
export const getDiff = keyedCache('diff');
// The diff's summary document (docs/SERVER.md, "Diff views"): what every diff view reads.
export const getDiffSummary = keyedCache('diff/summary');
// The model as a graph: nodes with their verdicts, the recorded edges.
export const getDiffGraph = keyedCache('diff/graph');

// POST a JSON body (setting a baseline: an admin token from the header's token box).
export async function apiPost(path, params, body) {
    let resp;
    try {
        resp = await fetch(apiUrl(path, params), {
            method: 'POST', headers: {...headers(), 'Content-Type': 'application/json'},
            body: JSON.stringify(body),
        });
    } catch (e) {
        throw new ApiError(0, 'network', 'gpudiffd did not answer: ' + e.message);
    }
    let out = null;
    try {
        out = await resp.json();
    } catch {
        /* not JSON: reported below */
    }
    if (!resp.ok) {
        const err = out && out.error;
        throw new ApiError(resp.status, err ? err.code : 'http_' + resp.status,
                           err ? err.message : 'HTTP ' + resp.status);
    }
    return out;
}

// GET /api/v1/ops once per visit: the op traits (discontinuous, ill_conditioned) by name.
let opsPromise = null;

export function getOps() {
    if (!opsPromise) {
        opsPromise = apiGet('ops').then((r) => new Map(r.ops.map((o) => [o.name, o])));
        opsPromise.catch(() => { opsPromise = null; });
    }
    return opsPromise;
}

// GET /api/v1/knobs once per visit: the knob table of engine/core/knobs.def.
let knobsPromise = null;

export function getKnobs()
{
    if (!knobsPromise) {
        knobsPromise = apiGet('knobs').then((r) => r.knobs);
        knobsPromise.catch(() => { knobsPromise = null; });
    }
    return knobsPromise;
}
