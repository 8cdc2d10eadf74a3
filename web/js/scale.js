// scale.js: the colour scale of errors on a log axis, shared by the matrix, the heatmap and
// the graph: eight steps of viridis (perceptually even, told apart by lightness as much as by
// hue, also with colour-blindness), light for small errors and dark for large ones, on fixed
// decades from 1e-8 to 1 (absolute: a colour means the same error in every view and does not
// shift as a matrix fills in), each step also said in the bits that agree (an error of 1e-7
// relative to the layer's scale is float32's last bit: 23 bits agree). Zero (bitwise equal),
// NaN or Inf, and "not comparable" have their own swatches. Every use writes the value too:
// colour is never the only carrier.
import {h, fmtNum} from './dom.js';

export const STEPS = ['#fde725', '#a0da39', '#4ac16d', '#1fa187', '#277f8e', '#365c8d',
                      '#46327e', '#440154'];
export const ZERO = '#ffffff';
export const NONE = '#d1d5db';
export const NONFINITE = '#dc2626';

// The scale: decade steps from 1e-8 (below 1e-7 is the first step) to 1 (1e-1 and above the
// last). `values` is taken for the callers of the data-relative scale this replaced.
export function errScale(values) {
    void values;
    const lo = -8, hi = 0, step = (hi - lo) / STEPS.length;
    return {lo, hi, step, bounds: STEPS.map((_, i) => lo + i * step)};
}

// Bits that agree at a relative error of 10^e: -log2(10^e).
function bitsAt(e) {
    return Math.round(-e * Math.log2(10));
}

export function colorOf(scale, v) {
    if (v === null || v === undefined || Number.isNaN(v))
        return NONE;
    if (v === 0)
        return ZERO;
    const t = (Math.log10(v) - scale.lo) / scale.step;
    return STEPS[Math.max(0, Math.min(STEPS.length - 1, Math.floor(t)))];
}

// Relative luminance (WCAG 2) of "#rrggbb", and the text colour that reads on it.
export function luminance(hex) {
    const c = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255)
        .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
}

export function textOn(bg) {
    const L = luminance(bg);
    return (L + 0.05) / 0.05 >= 1.05 / (L + 0.05) ? '#111827' : '#ffffff';
}

function boundLabel(e) {
    return Number.isInteger(e) ? `1e${e}` : fmtNum(10 ** e, 2);
}

// The legend: a swatch and its range per step (with the bits that agree), then zero, NaN or
// Inf, and "not comparable".
export function scaleLegend(scale, what) {
    const items = [h('li', {}, h('span', {class: 'chip chip-zero', 'data-bg': ZERO}), '0 (bitwise equal)')];
    STEPS.forEach((c, i) => {
        const a = scale.bounds[i], b = a + scale.step;
        const words = i === 0 ? `< ${boundLabel(b)} (${bitsAt(b)}+ bits agree)`
            : i === STEPS.length - 1 ? `≥ ${boundLabel(a)} (${bitsAt(a)} bits or fewer)`
            : `${boundLabel(a)} – ${boundLabel(b)} (${bitsAt(b)}–${bitsAt(a)} bits)`;
        items.push(h('li', {}, h('span', {class: 'chip', 'data-bg': c}), words));
    });
    items.push(h('li', {}, h('span', {class: 'chip chip-nonfinite', 'data-bg': NONFINITE}), 'NaN or Inf'));
    items.push(h('li', {}, h('span', {class: 'chip chip-none', 'data-bg': NONE}), 'not comparable'));
    const ul = h('ul', {class: 'legend scale-legend', 'aria-label': 'Colour scale: ' + what}, items);
    for (const chip of ul.querySelectorAll('.chip'))
        chip.style.background = chip.dataset.bg; // CSSOM, allowed under the CSP
    return ul;
}
