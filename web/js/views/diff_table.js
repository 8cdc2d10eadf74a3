// views/diff_table.js: the diff's per-layer table for networks of thousands of layers:
// stretches of identical layers folded into one row (unfolded on request), filters by name,
// op and verdict, a sparkline of each layer's ULP distances, each side's error against a
// truth run and who is right there, a replay's own error per layer, the notes the daemon's
// facts give (sparse differences, steps, poles, layers only one run has), and "jump to" the
// first divergent (or first observed) layer, which unfolds and filters as needed so that the
// layer is on screen.
import {h, s, fmtNum, fmtInt, verdictBadge, VERDICTS} from '../dom.js';
import {tableExports} from '../share.js';
import {BEYOND, startOf, rightOf, replayInfo, ownWords, layerNotes} from '../diff_facts.js';

const FOLD_MIN = 4; // identical stretches of at least this many layers are folded

// The ULP histogram as a tiny bar chart: bin 0 (equal) then 1, 2, 4, ... ULP apart, heights
// on a log scale of counts. Decorative beside the numbers; its title says the same in words.

// fp: a verdict judged from fingerprints (a side without its tensor) says so.
function sampledMark(l) {
    return h('span', {class: 'mark sampled', title: `judged from fingerprints: ${fmtInt(l.samples)} ` +
        'sampled values; max |a−b| is a lower bound' + (l.fetch && l.fetch.length ? '; the daemon asks ' +
        'for the tensor' : '')}, 'sampled');
}
function sparkline(l) {
    const hist = l.ulp_hist || [];
    const svg = s('svg', {class: 'spark', viewBox: '0 0 66 16', width: 66, height: 16,
                          'aria-hidden': 'true'});
    const total = hist.reduce((a, b) => a + b, 0);
    if (!total)
        return svg;
    const max = Math.log10(Math.max(...hist) + 1);
    const bins = Math.max(hist.length, 1), bw = 64 / bins;
    let equal = '', rest = '';
    hist.forEach((c, k) => {
        if (!c)
            return;
        const hgt = Math.max(1.5, (Math.log10(c + 1) / max) * 15);
        const d = `M${(1 + k * bw).toFixed(1)} ${(16 - hgt).toFixed(1)}h${Math.max(1, bw - 0.6).toFixed(1)}` +
                  `v${hgt.toFixed(1)}h-${Math.max(1, bw - 0.6).toFixed(1)}z`;
        if (k === 0)
            equal += d;
        else
            rest += d;
    });
    if (equal)
        svg.append(s('path', {class: 'spark-equal', d: equal}));
    if (rest)
        svg.append(s('path', {class: 'spark-bar', d: rest}));
    let top = hist.length - 1;
    while (top > 0 && !hist[top])
        top--;
    svg.append(s('title', {}, `ULP distances of ${fmtInt(total)} values: ${fmtInt(hist[0] || 0)} equal` +
                 (top > 0 ? `, the farthest ${top === 1 ? '1' : '2^' + (top - 1) + ' or more'} apart` : '')));
    return svg;
}

// The columns of the table and of its CSV (truth: each side's error against the truth and
// who is right there; replay: each layer's own error).
export function layerColumns(d) {
    const hasTruth = !!d.truth, hasReplay = !!replayInfo(d);
    const st = startOf(d);
    const cols = [
        {key: (l) => l.position, label: '#'}, {key: 'name', label: 'layer'}, {key: 'op', label: 'op'},
        {key: 'verdict', label: 'verdict'}, {key: 'max_abs', label: 'max_abs'}, {key: 'err', label: 'err'},
        {key: 'envelope', label: 'noise_band'}, {key: 'growth', label: 'growth'},
        {key: 'max_ulp', label: 'max_ulp'}, {key: 'bits', label: 'bits'},
        {key: 'values_differ', label: 'values_differ'}, {key: 'sparse', label: 'sparse'},
        {key: 'mismatches', label: 'outside_tolerance'},
    ];
    if (hasTruth)
        cols.push({key: (l) => l.truth && l.truth.err_a, label: 'err_a_vs_truth'},
                  {key: (l) => l.truth && l.truth.err_b, label: 'err_b_vs_truth'},
                  {key: (l) => l.truth && l.truth.bound_a, label: 'bound_a_vs_truth'},
                  {key: (l) => l.truth && l.truth.bound_b, label: 'bound_b_vs_truth'},
                  {key: rightOf, label: 'right'},
                  {key: (l) => l.truth && l.truth.closer, label: 'closer'});
    if (hasReplay)
        cols.push({key: (l) => l.own && l.own.err, label: 'own_err'},
                  {key: (l) => l.own && l.own.bound, label: 'own_bound'},
                  {key: (l) => l.own && l.own.verdict, label: 'own_verdict'},
                  {key: (l) => l.own && l.own.bits, label: 'own_bits'},
                  {key: (l) => l.own && l.own.arithmetic, label: 'own_arithmetic'},
                  {key: (l) => (l.name === d.cause ? 'cause' : ''), label: 'cause'});
    cols.push({key: (l) => markOf(l, st), label: 'mark'},
              {key: (l) => layerNotes(l, d).join('; '), label: 'notes'});
    return cols;
}

// "first divergent", "first observed" (the start may lie before it), "amplifier" or ''.
function markOf(l, st) {
    if (st && st.layer === l)
        return st.known ? 'first divergent' : 'first observed';
    return l.amplifier ? 'amplifier' : '';
}

const RIGHT_WORDS = {a: 'a', b: 'b', both: 'both', neither: 'neither'};

function row(l, i, hrefOf, d, st) {
    const hasTruth = !!d.truth, hasReplay = !!replayInfo(d);
    const mark = markOf(l, st);
    const cls = [mark === 'first divergent' ? 'first-divergent' : mark === 'first observed' ? 'first-observed' : '',
                 l.amplifier ? 'amplifier' : '', l.name === d.cause ? 'cause' : ''].filter(Boolean).join(' ');
    const markEl = mark === 'first divergent' ? h('span', {class: 'mark first'}, 'first divergent')
        : mark === 'first observed' ? h('span', {class: 'mark first observed', title: 'the start may lie before it'},
                                        'first observed')
        : l.amplifier ? h('span', {class: 'mark amp'}, 'amplifier') : null;
    const causeEl = l.name === d.cause ? h('span', {class: 'mark cause'}, 'cause') : null;
    const na = l.verdict === 'incomparable';
    const num = (v, f = fmtNum) => h('td', {class: 'num'}, na ? '–' : f(v));
    const bits = na ? '–' : l.sparse ? h('span', {class: 'muted', title: `${fmtInt(l.values_differ)} of ` +
        `${fmtInt(l.count)} values differ: no precision is read from single values`}, 'sparse')
        : fmtNum(l.bits);
    const cells = [
        h('td', {class: 'num'}, String(i)),
        h('th', {scope: 'row'}, h('a', {href: hrefOf(l)}, l.name), markEl ? ' ' : '', markEl,
          causeEl ? ' ' : '', causeEl),
        h('td', {}, l.op || '–'),
        h('td', {}, verdictBadge(l.verdict), l.sampled ? ' ' : '', l.sampled ? sampledMark(l) : ''),
        h('td', {class: 'spark-cell'}, na ? '' : sparkline(l)),
        l.sampled ? h('td', {class: 'num', title: 'a lower bound: judged from fingerprints'},
                      '≥' + fmtNum(l.max_abs)) : num(l.max_abs), num(l.err), num(l.envelope), num(l.growth), num(l.max_ulp, fmtInt),
        h('td', {class: 'num', title: l.arithmetic || null}, bits),
        num(l.mismatches, fmtInt),
    ];
    if (hasTruth) {
        const t = l.truth;
        const r = rightOf(l);
        cells.push(num(t && t.err_a), num(t && t.err_b),
                   h('td', {class: 'right-cell'}, r ? h('span', {class: 'right right-' + r}, RIGHT_WORDS[r] || r)
                       : h('span', {class: 'muted'}, '–')));
    }
    if (hasReplay) {
        const o = l.own;
        const w = ownWords(l);
        cells.push(h('td', {class: 'own-cell' + (o && BEYOND.has(o.verdict) ? ' own-beyond' : '')},
                     w === null ? '–' : w));
    }
    cells.push(h('td', {class: 'notes'}, layerNotes(l, d).join('; ')));
    return h('tr', {class: cls || null, 'data-layer': l.name, 'data-index': i}, cells);
}

// Stretches [from, to) of identical layers long enough to fold.
function foldStretches(layers) {
    const out = [];
    let i = 0;
    while (i < layers.length) {
        if (layers[i].verdict !== 'identical') {
            i++;
            continue;
        }
        let j = i;
        while (j < layers.length && layers[j].verdict === 'identical')
            j++;
        if (j - i >= FOLD_MIN)
            out.push([i, j]);
        i = j;
    }
    return out;
}

// layerTable(d, state, hrefOf, onState): state {q, op, verdict, fold}; onState(changes) is
// told when the user changes a filter (the view keeps them in the address).
export function layerTable(d, state, hrefOf, onState) {
    const layers = d.layers;
    const hasTruth = !!d.truth, hasReplay = !!replayInfo(d);
    const start = startOf(d);
    const head = ['#', 'Layer', 'Op', 'Verdict', 'ULP distances', 'Max |a−b|', 'Error / max|b|',
                  'Noise band', 'Growth', 'Max ULP', 'Bits', 'Outside tol.'];
    if (hasTruth)
        head.push('a vs truth', 'b vs truth', 'Right');
    if (hasReplay)
        head.push('Own error (replay)');
    head.push('Notes');
    const tbody = h('tbody');
    const table = h('table', {class: 'layers', id: 'layer-table'},
        h('caption', {}, 'Per layer: b is the reference side of each metric. The noise band is ' +
          'the error rounding can explain (the op\'s own bound plus what noisy inputs carry in); ' +
          'bits: the effective precision of the values that differ (none read from a sparse ' +
          'difference); ULP distances: how many values are how far apart, equal first' +
          (hasTruth ? '; a and b vs truth: each side\'s error against the truth; right: the sides ' +
                      'within their rounding bound of it (neither: both beyond)' : '') +
          (hasReplay ? '; own error: what the layer computes differently from the inputs it was ' +
                       'given (the replay), of its whole error; none: what it shows is inherited' : '') + '.'),
        h('thead', {}, h('tr', {}, head.map((t) => h('th', {scope: 'col'}, t)))), tbody);
    const count = h('span', {class: 'hint', id: 'layer-count', 'aria-live': 'polite'});
    const unfolded = new Set(); // fold starts the user opened
    const folds = foldStretches(layers);
    const rowCache = new Map();
    const rowOf = (i) => {
        if (!rowCache.has(i))
            rowCache.set(i, row(layers[i], i, hrefOf, d, start));
        return rowCache.get(i);
    };
    const st = {q: state.q || '', op: state.op || '', verdict: state.verdict || '',
                fold: state.fold !== false};
    const filtered = () => st.q || st.op || st.verdict;
    const matches = (l) => (!st.q || l.name.toLowerCase().includes(st.q.toLowerCase())) &&
        (!st.op || l.op === st.op) && (!st.verdict || l.verdict === st.verdict);

    function render() {
        const frag = document.createDocumentFragment();
        let shown = 0;
        if (filtered()) {
            layers.forEach((l, i) => {
                if (matches(l)) {
                    frag.append(rowOf(i));
                    shown++;
                }
            });
            count.textContent = `${fmtInt(shown)} of ${fmtInt(layers.length)} layers match.`;
        } else {
            let i = 0, f = 0;
            while (i < layers.length) {
                while (f < folds.length && folds[f][1] <= i)
                    f++;
                const fold = folds[f];
                if (st.fold && fold && fold[0] === i && !unfolded.has(i)) {
                    frag.append(foldRow(fold[0], fold[1]));
                    i = fold[1];
                    continue;
                }
                frag.append(rowOf(i));
                shown++;
                i++;
            }
            const hidden = layers.length - shown;
            count.textContent = hidden ? `${fmtInt(layers.length)} layers; ${fmtInt(hidden)} identical ones folded.`
                : `${fmtInt(layers.length)} layers.`;
        }
        tbody.replaceChildren(frag);
    }

    function foldRow(from, to) {
        const n = to - from;
        const button = h('button', {type: 'button', class: 'fold-button', 'aria-expanded': 'false'},
                         `Show ${fmtInt(n)} identical layers`);
        button.addEventListener('click', () => {
            unfolded.add(from);
            render();
            const first = tbody.querySelector(`tr[data-index="${from}"] a`);
            if (first)
                first.focus();
        });
        return h('tr', {class: 'fold', 'data-from': from, 'data-to': to},
                 h('td', {class: 'num'}, `${from}–${to - 1}`),
                 h('td', {colspan: head.length - 1},
                   button, ' ', h('span', {class: 'muted'},
                                  `${layers[from].name} … ${layers[to - 1].name}: bitwise equal in a and b`)));
    }

    // The controls: search by name, op and verdict, folding, jump.
    const ops = [...new Set(layers.map((l) => l.op).filter(Boolean))].sort();
    const qIn = h('input', {id: 'layer-search', type: 'search', value: st.q, placeholder: 'layer name',
                            autocomplete: 'off', spellcheck: 'false'});
    const opSel = h('select', {id: 'layer-op'}, h('option', {value: ''}, 'any op'),
                    ops.map((o) => h('option', {value: o, selected: o === st.op}, o)));
    const vSel = h('select', {id: 'layer-verdict'}, h('option', {value: ''}, 'any verdict'),
                   VERDICTS.filter((v) => layers.some((l) => l.verdict === v))
                       .map((v) => h('option', {value: v, selected: v === st.verdict}, v)));
    const foldBox = h('input', {id: 'layer-fold', type: 'checkbox', checked: st.fold});
    let timer = 0;
    const changed = () => {
        st.q = qIn.value.trim();
        st.op = opSel.value;
        st.verdict = vSel.value;
        st.fold = foldBox.checked;
        render();
        onState({q: st.q, op: st.op, verdict: st.verdict, fold: st.fold ? '' : '0'});
    };
    qIn.addEventListener('input', () => {
        clearTimeout(timer);
        timer = setTimeout(changed, 120);
    });
    for (const el of [opSel, vSel, foldBox])
        el.addEventListener('change', changed);
    const first = start ? start.layer : null;
    const jumpButton = h('button', {type: 'button', id: 'jump-first', class: 'primary',
                                    disabled: !first},
                         start && !start.known ? 'Jump to first observed' : 'Jump to first divergent');
    jumpButton.addEventListener('click', () => api.jumpTo(first.name));
    const tools = h('div', {class: 'table-tools', role: 'search', 'aria-label': 'Find layers'},
        jumpButton,
        h('div', {class: 'field'}, h('label', {for: 'layer-search'}, 'Name'), qIn),
        h('div', {class: 'field'}, h('label', {for: 'layer-op'}, 'Op'), opSel),
        h('div', {class: 'field'}, h('label', {for: 'layer-verdict'}, 'Verdict'), vSel),
        h('div', {class: 'field field-check'}, foldBox,
          h('label', {for: 'layer-fold'}, 'Fold identical stretches')),
        tableExports('layers', layerColumns(d),
                     () => layers.map((l, i) => ({position: i, ...l}))));
    const api = {
        el: h('div', {}, tools, count, h('div', {class: 'table-wrap'}, table)),
        // Shows layer `name`'s row (unfolding, or clearing filters that hide it), scrolls it
        // into the middle of the screen and focuses its link.
        jumpTo(name) {
            const i = layers.findIndex((l) => l.name === name);
            if (i < 0)
                return false;
            if (filtered() && !matches(layers[i])) {
                qIn.value = '';
                opSel.value = '';
                vSel.value = '';
                changed();
            }
            const fold = folds.find(([a, b]) => i >= a && i < b);
            if (fold && !unfolded.has(fold[0])) {
                unfolded.add(fold[0]);
                render();
            }
            const tr = rowOf(i);
            tr.scrollIntoView({block: 'center'});
            tr.classList.add('flash');
            setTimeout(() => tr.classList.remove('flash'), 1600);
            const link = tr.querySelector('a');
            if (link)
                link.focus({preventScroll: true});
            return true;
        },
    };
    render();
    return api;
}
