// nearstep.js: for a discontinuous op (a step: Floor, Ceil, Round, Sign, comparisons) or an
// ill-conditioned one (a pole: Sqrt and Log at 0, Div at a zero divisor, Pow at a zero base),
// which of its input elements lie nearest the step or the pole: where a rounding difference
// upstream can flip an output or grow without bound. The traits come from the daemon (GET
// /api/v1/ops, the engine's ops.def); where the step or pole lies is op semantics, written
// here per op as engine/compare/boundary.c measures it for the steps; an op this table does
// not know is reported as such, never guessed.
import {valueAt} from './npy.js';

// op -> {kind: 'step' | 'pole', inputs: how many input tensors it reads, where: text,
//        distance(x0[, x1]) from that element's inputs to the step or pole}
export const NEAR = {
    Floor: {kind: 'step', inputs: 1, where: 'an integer', distance: (x) => Math.abs(x - Math.round(x))},
    Ceil: {kind: 'step', inputs: 1, where: 'an integer', distance: (x) => Math.abs(x - Math.round(x))},
    Round: {kind: 'step', inputs: 1, where: 'a half-integer',
            distance: (x) => Math.abs(x - (Math.floor(x) + 0.5))},
    Sign: {kind: 'step', inputs: 1, where: '0', distance: (x) => Math.abs(x)},
    Greater: {kind: 'step', inputs: 2, where: 'equal inputs', distance: (x, y) => Math.abs(x - y)},
    Less: {kind: 'step', inputs: 2, where: 'equal inputs', distance: (x, y) => Math.abs(x - y)},
    Equal: {kind: 'step', inputs: 2, where: 'equal inputs', distance: (x, y) => Math.abs(x - y)},
    Sqrt: {kind: 'pole', inputs: 1, where: '0 (infinite slope)', distance: (x) => Math.abs(x)},
    Log: {kind: 'pole', inputs: 1, where: '0', distance: (x) => Math.abs(x)},
    Reciprocal: {kind: 'pole', inputs: 1, where: '0', distance: (x) => Math.abs(x)},
    Div: {kind: 'pole', inputs: 2, where: 'a zero divisor', distance: (x, y) => Math.abs(y)},
    Pow: {kind: 'pole', inputs: 2, where: 'a zero base', distance: (x) => Math.abs(x)},
};

// The k elements nearest the step or pole, from the reference side's inputs (b, as the
// daemon measures), as [{i, d}] with d the distance; inputs of other sizes than the output
// (broadcast) are left out: the element correspondence would be a guess.
export function nearest(op, inputs, outSize, k = 12) {
    const rule = NEAR[op];
    if (!rule || inputs.length < rule.inputs || inputs.some((t) => t.size !== outSize))
        return null;
    const best = [];
    for (let i = 0; i < outSize; i++) {
        const d = rule.inputs === 2 ? rule.distance(valueAt(inputs[0], i), valueAt(inputs[1], i))
            : rule.distance(valueAt(inputs[0], i));
        if (!Number.isFinite(d))
            continue;
        if (best.length < k || d < best[best.length - 1].d) {
            best.push({i, d});
            best.sort((p, q) => p.d - q.d);
            if (best.length > k)
                best.pop();
        }
    }
    return best;
}

// How many elements lie within eps of the step or pole.
export function countWithin(op, inputs, outSize, eps) {
    const rule = NEAR[op];
    if (!rule || inputs.length < rule.inputs || inputs.some((t) => t.size !== outSize))
        return null;
    let n = 0;
    for (let i = 0; i < outSize; i++) {
        const d = rule.inputs === 2 ? rule.distance(valueAt(inputs[0], i), valueAt(inputs[1], i))
            : rule.distance(valueAt(inputs[0], i));
        if (d <= eps)
            n++;
    }
    return n;
}
