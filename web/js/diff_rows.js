// diff_rows.js: a diff's per-layer rows as the daemon pages them (GET /api/v1/diff/layers),
// for the views that show a few hundred of thousands of layers at a time: the table, the
// chart of a range, the exports. Rows come in pages of PAGE, each asked for once and kept for
// the visit; a filter (verdict, op, part of a name) is a list of its own, paged the same way.
import {apiGet} from './api.js';

export const PAGE = 200;

// rowStore(q, filter): q the diff's key {a, b, truth, atol, rtol}; filter {verdict, op, q}
// (empty: every layer). .total is known once a page came (the filtered list's length).
export function rowStore(q, filter = {}) {
    const key = {a: q.a, b: q.b, truth: q.truth || undefined, atol: q.atol || undefined,
                 rtol: q.rtol || undefined};
    const f = {verdict: filter.verdict || undefined, op: filter.op || undefined,
               q: filter.q || undefined};
    const pages = new Map(); // page number -> Promise of rows
    const rows = new Map(); // position in the list -> row
    const singles = new Map(); // position -> Promise of one row asked for alone
    const store = {
        total: null,
        // The row at position k, if its page came.
        get: (k) => rows.get(k),
        // The row at position k alone (a fold's ends): from its page when it came, else asked
        // for by itself, not with its page.
        one(k, signal) {
            if (rows.has(k))
                return Promise.resolve(rows.get(k));
            if (!singles.has(k)) {
                const p = apiGet('diff/layers', {...key, ...f, offset: k, limit: 1}, {signal})
                    .then((r) => r.layers[0] || null);
                p.catch(() => singles.delete(k));
                singles.set(k, p);
            }
            return singles.get(k);
        },
        // Loads the pages of positions [from, to); resolves when they are here.
        async ensure(from, to, signal) {
            const want = [];
            for (let p = Math.floor(Math.max(0, from) / PAGE); p * PAGE < to; p++)
                want.push(p);
            await Promise.all(want.map((p) => page(p, signal)));
        },
        // Every row, page after page (exports): at most `limit` a request.
        async all(signal, onProgress) {
            const out = [];
            for (let off = 0; ; off += 1000) {
                const r = await apiGet('diff/layers', {...key, ...f, offset: off, limit: 1000}, {signal});
                out.push(...r.layers);
                if (onProgress)
                    onProgress(out.length, r.total);
                if (off + 1000 >= r.total)
                    break;
            }
            return out;
        },
    };
    function page(p, signal) {
        if (!pages.has(p)) {
            const promise = apiGet('diff/layers', {...key, ...f, offset: p * PAGE, limit: PAGE}, {signal})
                .then((r) => {
                    store.total = r.total;
                    r.layers.forEach((l, k) => rows.set(p * PAGE + k, l));
                    return r.layers;
                });
            promise.catch(() => pages.delete(p));
            pages.set(p, promise);
        }
        return pages.get(p);
    }
    return store;
}

// The position of a named layer in the diff (one row asked for by name).
export async function findLayer(q, name, signal) {
    const r = await apiGet('diff/layers', {a: q.a, b: q.b, truth: q.truth || undefined,
                                           atol: q.atol || undefined, rtol: q.rtol || undefined,
                                           name, limit: 1}, {signal});
    return r.layers.length ? r.layers[0] : null;
}
