// diff_facts.js: what a diff says, in the words every part of the dashboard uses (the
// summary, the table, the chart, the layer view, the bug report): how much of the two runs was
// matched, where the difference starts or is first observed, who is right against the truth,
// what a replay measured, and each layer's notes. `d` is the diff's summary document (GET
// /api/v1/diff/summary, docs/SERVER.md "Diff views"): the diff's own fields, the layers it
// names in full (d.layers, by name), counts, and what truth and replay come to; a layer `l` is
// a row of the diff. Only what the daemon served is said: "closer" is never "right", a start
// the data cannot see is "first observed", precision is named only where the daemon names it
// (docs/COMPARISON.md).
import {fmtNum, fmtInt} from './dom.js';

// Verdicts beyond rounding noise; identical and noise are quiet (truth.c's "quiet").
export const BEYOND = new Set(['divergent', 'amplified', 'nonfinite']);
const quiet = (v) => v === 'identical' || v === 'noise';

// A layer the summary names in full (the first divergent, amplifiers, the cause, ...).
export function layerByName(d, name) {
    return name && d.layers && Object.hasOwn(d.layers, name) ? d.layers[name] : null;
}

// How many layers were compared (not incomparable).
export function comparedCount(d) {
    return d.n_layers - ((d.verdicts && d.verdicts.incomparable) || 0);
}

// How much was matched: the matched layers against the most any run holds (a, b, and the
// truth run's record when given: two framework dumps of the output only are 1 of the truth's
// 12). partial: fewer matched than that.
export function matchInfo(d, truthRun) {
    const m = d.matched || {};
    const layers = Number.isInteger(m.layers) ? m.layers : comparedCount(d);
    const ofA = m.of_a ?? layers, ofB = m.of_b ?? layers;
    const ofTruth = truthRun && Number.isInteger(truthRun.n_layers) ? truthRun.n_layers : 0;
    const total = Math.max(ofA, ofB, ofTruth, layers);
    const onlyA = m.only_a || [], onlyB = m.only_b || [];
    return {layers, total, ofA, ofB, ofTruth, onlyA, onlyB, nOnlyA: m.n_only_a ?? onlyA.length,
            nOnlyB: m.n_only_b ?? onlyB.length, partial: layers < total, models: d.mode === 'models'};
}

// "a, b, c" of a capped list, "and N more" when the daemon listed fewer than there are.
export function listWords(names, total, quote = (x) => x) {
    const shown = names.map(quote).join(', ');
    return total > names.length ? `${shown} and ${(total - names.length).toLocaleString('en-US')} more`
        : shown;
}

// "1 of 12 layers matched (run a holds 1, run b 12)".
export function matchWords(mi) {
    const holds = mi.ofTruth > Math.max(mi.ofA, mi.ofB)
        ? `run a holds ${fmtInt(mi.ofA)}, run b ${fmtInt(mi.ofB)}, the truth run ${fmtInt(mi.ofTruth)}`
        : `run a holds ${fmtInt(mi.ofA)}, run b ${fmtInt(mi.ofB)}`;
    return `${fmtInt(mi.layers)} of ${fmtInt(mi.total)} layers matched` +
        (mi.models ? ' by the names of their output tensors (two model files)' : '') + ` (${holds})`;
}

// Where the difference starts: {layer, known}. known false: the first observed difference,
// whose start may lie before it (partial data, or inputs that were not compared); divergent:
// the first divergent layer as well when it is another one. null when no layer differs.
export function startOf(d) {
    const first = layerByName(d, d.first_divergent);
    const observed = layerByName(d, d.first_observed);
    if (first && d.start_known !== false)
        return {layer: first, known: true, divergent: first};
    if (observed)
        return {layer: observed, known: false, divergent: first && first !== observed ? first : null};
    if (first)
        return {layer: first, known: false, divergent: first};
    return null;
}

// How far beyond its bound a layer is: the engine's ratio when it gives one (the figure that
// decided the verdict, over the maximum or the median error), else err over the noise band;
// "72.8× what rounding and its inputs allow" (never a ratio below 1).
export function ratioOf(l) {
    if (Number.isFinite(l.ratio))
        return {ratio: l.ratio, by: l.decided_by || null};
    if (l.envelope > 0 && Number.isFinite(l.err))
        return {ratio: l.err / l.envelope, by: null};
    return null;
}

export function excess(l) {
    if (Number.isFinite(l.ratio) && l.ratio > 1)
        return `${fmtNum(l.ratio)}× what rounding and its inputs allow` +
            (l.decided_by === 'median' ? ' (its median error)' : '');
    if (l.envelope > 0 && l.err > l.envelope)
        return `${fmtNum(l.err / l.envelope)}× what rounding and its inputs allow`;
    if (l.envelope_median > 0 && l.err_median > l.envelope_median)
        return `median error ${fmtNum(l.err_median / l.envelope_median)}× its bound`;
    return BEYOND.has(l.verdict) ? 'beyond noise' : 'within noise';
}

// How many values differ and, only where the daemon names it, what their precision looks
// like: "13 of 84,000 values differ (sparse)", "119,984 of 120,000 values differ; 10.8 bits
// (TF32 or FP16)".
export function precision(l) {
    if (!Number.isFinite(l.count))
        return '';
    const n = `${fmtInt(l.values_differ)} of ${fmtInt(l.count)} values differ`;
    if (l.sparse)
        return n + ' (sparse)';
    return n + (l.arithmetic ? `; ${fmtNum(l.bits)} bits (${l.arithmetic})` : '');
}

// Who is right, from the daemon's truth_outcome and the summary's count of each side's right
// over the layers truth.c decides it on: those where the runs differ beyond noise (all when
// none do). at: the layer each side's distance is told at, the first of them where a side is
// not right (else the last). scope is how many layers that is.
export function truthSummary(d) {
    if (!d.truth)
        return null;
    const t = d.truth_summary || {};
    return {outcome: d.truth_outcome || 'unknown', scope: t.scope || 0, diverged: !!t.diverged,
            at: layerByName(d, t.at), nA: t.n_a || 0, nB: t.n_b || 0};
}

// One side's distance from the truth at layer l: "0.141 of the layer's scale away (6,980× its
// bound, 9 rows off)"; within its bound: "within its bound (0.0012 of it)".
export function sideDistance(l, side) {
    const t = l.truth;
    const err = side === 'a' ? t.err_a : t.err_b, bound = side === 'a' ? t.bound_a : t.bound_b;
    const rows = side === 'a' ? t.rows_a : t.rows_b;
    if (!Number.isFinite(err))
        return 'not measured';
    const right = t.right === side || t.right === 'both';
    const ratio = bound > 0 ? err / bound : null;
    if (right)
        return `${fmtNum(err)} of the layer's scale away, within its bound` +
            (ratio !== null ? ` (${fmtNum(ratio)} of it)` : '');
    return `${fmtNum(err)} of the layer's scale away (${ratio !== null ? fmtNum(ratio) + '× its bound'
        : 'no bound'}, ${fmtInt(rows)} row${rows === 1 ? '' : 's'} off)`;
}

// The outcome in a sentence (plain text), with how far each side is.
export function truthWords(ts, truthBackend) {
    if (!ts)
        return 'Unknown: no truth run (a cpu64 run of the same model and input) was compared.';
    const where = ts.diverged ? 'wherever the runs differ beyond noise' : 'at every compared layer';
    const n = ts.scope;
    const over = `${fmtInt(n)} layer${n === 1 ? '' : 's'} ${ts.diverged ? 'where the runs differ beyond noise'
        : 'compared'}`;
    const against = `against the truth (${truthBackend || 'truth'})`;
    const l = ts.at;
    const at = l ? ` At ${l.name}: run a is ${sideDistance(l, 'a')}; run b is ${sideDistance(l, 'b')}.` : '';
    const closer = l && (l.truth.closer === 'a' || l.truth.closer === 'b')
        ? ` Run ${l.truth.closer} is closer there, and ${ts.outcome === l.truth.closer ? 'right' : 'still not right'}.`
        : '';
    switch (ts.outcome) {
    case 'a':
    case 'b':
        return `Run ${ts.outcome} is right ${against}: within its rounding bound ${where}; run ` +
            `${ts.outcome === 'a' ? 'b' : 'a'} is not (right at ${fmtInt(ts.outcome === 'a' ? ts.nB : ts.nA)} ` +
            `of the ${over}).${at}`;
    case 'both':
        return `Both runs are right ${against}: each within its rounding bound ${where}.${at}`;
    case 'neither':
        return `Neither run is right ${against}: run a is right at ${fmtInt(ts.nA)} and run b at ` +
            `${fmtInt(ts.nB)} of the ${over}.${at}${closer}`;
    default:
        return `Unknown ${against}: the truth run has none of the compared layers, or none with a known bound.`;
    }
}

// A layer's right in one word for tables: "a", "b", "both", "neither", or null.
export function rightOf(l) {
    return l.truth && l.truth.right ? l.truth.right : null;
}

// The replay: whether the diff has one (a diff with a replay, or a replay against its source),
// the cause, and the layers that make an error of their own.
export function replayInfo(d) {
    const has = !!d.replay || d.mode === 'replay';
    if (!has)
        return null;
    const own = (d.own_error || []).map((n) => layerByName(d, n)).filter(Boolean);
    return {cause: layerByName(d, d.cause), own, nOwn: d.n_own_error ?? own.length,
            id: d.replay ? d.replay.id : d.a && d.a.id, of: d.replay ? d.replay.of : d.b && d.b.id,
            self: d.mode === 'replay'};
}

// A layer's own error, as the agent's table prints it: "0.000573 of 0.000573 (10.8 bits, TF32
// or FP16)" when the layer makes one beyond its bound, "none" when it does not (then what it
// shows is inherited).
export function ownWords(l) {
    const o = l.own;
    if (!o)
        return null;
    if (!BEYOND.has(o.verdict))
        return BEYOND.has(l.verdict) ? 'none: inherited' : 'none';
    return `${fmtNum(o.err)} of ${fmtNum(l.err)}` +
        (Number.isFinite(o.bits) ? ` (${fmtNum(o.bits)} bits${o.arithmetic ? ', ' + o.arithmetic : ''})` : '');
}

// The notes of a layer, each a plain sentence fragment from the daemon's fields.
export function layerNotes(l, d) {
    const notes = [];
    if (l.verdict === 'incomparable') {
        const side = l.index_a < 0 ? 'b' : l.index_b < 0 ? 'a' : null;
        if (side && d && d.mode === 'models')
            notes.push(`only in run ${side}'s model file: no counterpart in the other`);
        else if (l.note)
            notes.push(l.note);
        return notes;
    }
    if (l.note)
        notes.push(l.note);
    if (l.inputs_known === false && BEYOND.has(l.verdict))
        notes.push('its inputs were not compared: what it inherits is not known');
    if (l.sparse)
        notes.push(`${fmtInt(l.values_differ)} of ${fmtInt(l.count)} values differ (sparse)`);
    if (l.reason)
        notes.push(l.reason);
    else if (l.discontinuous && l.flipped)
        notes.push(`${fmtInt(l.flipped)} outputs flipped; ${fmtInt(l.near_boundary)} inputs ` +
                   `within ${fmtNum(l.boundary_distance)} of a step`);
    const c = l.conditioning;
    if (c)
        notes.push(`ill-conditioned: smallest |x| ${fmtNum(c.x_min)}, ${fmtInt(c.near_pole)} ` +
                   `input${c.near_pole === 1 ? '' : 's'} within the input's difference of 0, ` +
                   `a relative change of up to ${fmtNum(c.cond)}, growth ×${fmtNum(l.growth)}`);
    if (l.explained_by_arithmetic && l.math)
        notes.push(`the declared arithmetic (a ${l.math.a}, b ${l.math.b}) explains it`);
    if (l.algo && l.algo.a !== l.algo.b)
        notes.push(`algorithm a: ${l.algo.a || '–'}, b: ${l.algo.b || '–'}`);
    if (l.nan_disagree || l.inf_disagree)
        notes.push(`NaN disagree ${fmtInt(l.nan_disagree)}, Inf disagree ${fmtInt(l.inf_disagree)}`);
    return notes;
}
