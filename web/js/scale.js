// scale.js: the colour scale of errors on a log axis, shared by the matrix and the graph:
// eight steps of viridis (perceptually even, told apart by lightness as much as by hue, also
// with colour-blindness), light for small errors and dark for large ones, spread over the
// decades the data actually spans so that 0.14 and 0.26 do not share a colour when the
// values span a decade or two. Zero (bitwise equal) and "not comparable" have their own
// swatches. Every use writes the value too: colour is never the only carrier.
import {h, fmtNum} from './dom.js';

export const STEPS = ['#fde725', '#a0da39', '#4ac16d', '#1fa187', '#277f8e', '#365c8d',
                      '#46327e', '#440154'];
export const ZERO = '#ffffff';
export const NONE = '#d1d5db';

// A scale over the positive finite values: {lo, hi} in log10 and the bounds of each step.
export function errScale(values) {
    const pos = values.filter((v) => Number.isFinite(v) && v > 0);
    let lo = -8, hi = 0;
    if (pos.length) {
        let min = Infinity, max = -Infinity;
        for (const v of pos) {
            if (v < min)
                min = v;
            if (v > max)
                max = v;
        }
        lo = Math.floor(Math.log10(min) * 2) / 2;
        hi = Math.ceil(Math.log10(max) * 2) / 2;
        if (hi - lo < 1)
            lo = hi - 1;
    }
    const step = (hi - lo) / STEPS.length;
    const bounds = STEPS.map((_, i) => lo + i * step);
    return {lo, hi, step, bounds};
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

// The legend: a swatch and its range per step, then zero and "not comparable".
export function scaleLegend(scale, what) {
    const items = [h('li', {}, h('span', {class: 'chip chip-zero', 'data-bg': ZERO}), '0 (bitwise equal)')];
    STEPS.forEach((c, i) => {
        const a = scale.bounds[i], b = a + scale.step;
        items.push(h('li', {}, h('span', {class: 'chip', 'data-bg': c}),
                     i === STEPS.length - 1 ? `≥ ${boundLabel(a)}` : `${boundLabel(a)} – ${boundLabel(b)}`));
    });
    items.push(h('li', {}, h('span', {class: 'chip chip-none', 'data-bg': NONE}), 'not comparable'));
    const ul = h('ul', {class: 'legend scale-legend', 'aria-label': 'Colour scale: ' + what}, items);
    for (const chip of ul.querySelectorAll('.chip'))
        chip.style.background = chip.dataset.bg; // CSSOM, allowed under the CSP
    return ul;
}
