// views/diff_table.js: the diff's per-layer table for networks of ten thousand layers: a
// virtual table (only the rows on screen are elements: a few dozen, whatever the depth) over
// the rows the daemon pages (diff_rows.js), stretches of identical layers folded into one row
// (from the summary's verdict letters, unfolded on request), filters by name, op and verdict
// (on the daemon), a sparkline of each layer's ULP distances, how far beyond its bound a layer
// is (the engine's ratio, over the max or the median, when it gives one), its ULPs at its
// scale, each side's error against a truth run and who is right there, a replay's own error,
// the notes the daemon's facts give (sparse differences, steps, poles, layers only one run
// has), a link to each layer's node in the graph, and "jump to" any layer (the first
// divergent or first observed one by default), which unfolds and clears filters as needed so
// that the layer is on screen. The columns fit 1,400 pixels, the notes included.
import {h, s, fmtNum, fmtInt, verdictBadge, VERDICTS} from '../dom.js';
import {actionButton, download, toCsv} from '../share.js';
import {BEYOND, startOf, rightOf, replayInfo, ownWords, layerNotes, ratioOf, layerByName}
    from '../diff_facts.js';
import {rowStore, findLayer} from '../diff_rows.js';

const FOLD_MIN = 4; // identical stretches of at least this many layers are folded
export const ROW_H = 34; // px: every row, folds included (CSS: tr.vrow)
const OVERSCAN = 12; // rows drawn above and below the visible ones

// fp: a verdict judged from fingerprints (a side without its tensor) says so.
function sampledMark(l) {
    return h('span', {class: 'mark sampled', title: `judged from fingerprints: ${fmtInt(l.samples)} ` +
        'sampled values; max |a−b| is a lower bound' + (l.fetch && l.fetch.length ? '; the daemon asks ' +
        'for the tensor' : '')}, 'sampled');
}

// The ULP histogram as a tiny bar chart: bin 0 (equal) then 1, 2, 4, ... ULP apart, heights
// on a log scale of counts. Decorative beside the numbers; its title says the same in words.
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

// The columns of the CSV (truth: each side's error against the truth and who is right there;
// replay: each layer's own error); the table shows the ones that fit.
export function layerColumns(d) {
    const hasTruth = !!d.truth, hasReplay = !!replayInfo(d);
    const st = startOf(d);
    const cols = [
        {key: (l) => l.i, label: '#'}, {key: 'name', label: 'layer'}, {key: 'op', label: 'op'},
        {key: 'verdict', label: 'verdict'}, {key: 'max_abs', label: 'max_abs'}, {key: 'err', label: 'err'},
        {key: 'envelope', label: 'noise_band'}, {key: 'growth', label: 'growth'},
        {key: 'max_ulp', label: 'max_ulp'}, {key: 'bits', label: 'bits'},
        {key: 'values_differ', label: 'values_differ'}, {key: 'sparse', label: 'sparse'},
        {key: 'mismatches', label: 'outside_tolerance'},
        {key: (l) => (ratioOf(l) || {}).ratio, label: 'ratio'},
        {key: (l) => l.decided_by ?? null, label: 'decided_by'},
        {key: 'ulps_at_scale', label: 'ulps_at_scale'},
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
    if (st && st.layer.name === l.name)
        return st.known ? 'first divergent' : 'first observed';
    return l.amplifier ? 'amplifier' : '';
}

const RIGHT_WORDS = {a: 'a', b: 'b', both: 'both', neither: 'neither'};

// "72.8×" and how it was decided: "(max)", "(median)" when the engine says.
function ratioCell(l) {
    const r = ratioOf(l);
    if (!r || l.verdict === 'identical')
        return h('td', {class: 'num ratio'}, '–');
    return h('td', {class: 'num ratio' + (r.ratio > 1 ? ' beyond' : ''),
                    title: r.by ? `decided by the ${r.by} error` : 'error over the noise band'},
             `×${fmtNum(r.ratio)}`, r.by ? h('span', {class: 'sub-inline'}, ` ${r.by}`) : '');
}

// The table's columns: [header, class, width in em]; the notes take what is left.
function headColumns(d) {
    const cols = [['#', 'c-pos', 3.2], ['Layer', 'c-name', 13], ['Op', 'c-op', 6.5],
                  ['Verdict', 'c-verdict', 7], ['ULP distances', 'c-spark', 5.6],
                  ['Error / max|b|', 'c-num', 5.6], ['× bound', 'c-num', 5.6], ['Max |a−b|', 'c-num', 5.6],
                  ['ULPs at scale', 'c-num', 5.8], ['Bits', 'c-bits', 3.6]];
    if (d.truth)
        cols.push(['a vs truth', 'c-num', 5.6], ['b vs truth', 'c-num', 5.6], ['Right', 'c-right', 4.4]);
    if (replayInfo(d))
        cols.push(['Own error (replay)', 'c-own', 8]);
    cols.push(['Graph', 'c-graph', 3.8], ['Notes', 'c-notes', null]);
    return cols;
}

function row(l, hrefOf, graphOf, d, st) {
    const hasTruth = !!d.truth, hasReplay = !!replayInfo(d);
    const mark = markOf(l, st);
    const cls = ['vrow', mark === 'first divergent' ? 'first-divergent' : mark === 'first observed' ? 'first-observed' : '',
                 l.amplifier ? 'amplifier' : '', l.name === d.cause ? 'cause' : ''].filter(Boolean).join(' ');
    const markEl = mark === 'first divergent' ? h('span', {class: 'mark first'}, 'first divergent')
        : mark === 'first observed' ? h('span', {class: 'mark first observed', title: 'the start may lie before it'},
                                        'first observed')
        : l.amplifier ? h('span', {class: 'mark amp'}, 'amplifier') : null;
    const causeEl = l.name === d.cause ? h('span', {class: 'mark cause'}, 'cause') : null;
    const na = l.verdict === 'incomparable';
    const num = (v, f = fmtNum, cls = 'num') => h('td', {class: cls}, na ? '–' : f(v));
    const bits = na ? '–' : l.sparse ? h('span', {class: 'muted', title: `${fmtInt(l.values_differ)} of ` +
        `${fmtInt(l.count)} values differ: no precision is read from single values`}, 'sparse')
        : fmtNum(l.bits);
    const notes = layerNotes(l, d).join('; ');
    const cells = [
        h('td', {class: 'num'}, String(l.i)),
        h('th', {scope: 'row', title: l.name}, h('a', {href: hrefOf(l)}, l.name), markEl ? ' ' : '', markEl,
          causeEl ? ' ' : '', causeEl),
        h('td', {}, l.op || '–'),
        h('td', {}, verdictBadge(l.verdict), l.sampled ? ' ' : '', l.sampled ? sampledMark(l) : ''),
        h('td', {class: 'spark-cell'}, na ? '' : sparkline(l)),
        num(l.err),
        na ? h('td', {class: 'num'}, '–') : ratioCell(l),
        l.sampled ? h('td', {class: 'num', title: 'a lower bound: judged from fingerprints'},
                      '≥' + fmtNum(l.max_abs)) : num(l.max_abs),
        h('td', {class: 'num ulps', title: `raw ULP distance ${fmtInt(l.max_ulp)}: across a sign change it ` +
            'counts every float between them'}, na ? '–' : fmtNum(l.ulps_at_scale)),
        h('td', {class: 'num bits', title: l.arithmetic || null}, bits),
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
        cells.push(h('td', {class: 'own-cell' + (o && BEYOND.has(o.verdict) ? ' own-beyond' : ''),
                            title: w || null}, w === null ? '–' : w));
    }
    cells.push(h('td', {class: 'graph-cell'}, h('a', {href: graphOf(l), class: 'to-graph',
                                                      'aria-label': `${l.name} in the graph`}, 'node')),
               h('td', {class: 'notes', title: notes || null}, notes));
    return h('tr', {class: cls, 'data-layer': l.name, 'data-index': l.i}, cells);
}

function placeholder(i, span) {
    return h('tr', {class: 'vrow pending', 'data-index': i},
             h('td', {class: 'num'}, i === null ? '' : String(i)),
             h('td', {colspan: span - 1, class: 'muted'}, '…'));
}

// Stretches [from, to) of identical layers long enough to fold, from the verdict letters.
function foldStretches(codes) {
    const out = [];
    let i = 0;
    while (i < codes.length) {
        if (codes[i] !== 'i') {
            i++;
            continue;
        }
        let j = i;
        while (j < codes.length && codes[j] === 'i')
            j++;
        if (j - i >= FOLD_MIN)
            out.push([i, j]);
        i = j;
    }
    return out;
}

// layerTable(d, state, {q, rows, hrefOf, graphOf, onState, signal}): d the diff's summary, rows
// its rowStore (shared with the chart); state
// {q, op, verdict, fold}; onState(changes) is told when the user changes a filter (the view
// keeps them in the address). .ready resolves when the rows on screen are drawn.
export function layerTable(d, state, opts) {
    const {hrefOf, graphOf, onState, signal} = opts;
    const key = opts.q;
    const n = d.n_layers;
    const codes = (d.overview && d.overview.verdicts) || '';
    const start = startOf(d);
    const cols = headColumns(d);
    const colgroup = h('colgroup', {}, cols.map(([, cls, w]) => {
        const c = h('col', {class: cls});
        if (w)
            c.style.width = w + 'em'; // CSSOM, allowed under the CSP
        return c;
    }));
    const hasTruth = !!d.truth, hasReplay = !!replayInfo(d);
    const tbody = h('tbody');
    const table = h('table', {class: 'layers vtable', id: 'layer-table', 'aria-rowcount': n + 1},
        h('caption', {}, 'Per layer: b is the reference side of each metric. × bound: how far the error ' +
          'is beyond what rounding and the inputs allow (the figure that decided: the maximum or the ' +
          'median error); bits: the effective precision of the values that differ (none read from a ' +
          'sparse difference); ULPs at scale: the largest difference counted in floats at the layer\'s ' +
          'largest value; ULP distances: how many values are how far apart, equal first' +
          (hasTruth ? '; a and b vs truth: each side\'s error against the truth; right: the sides ' +
                      'within their rounding bound of it (neither: both beyond)' : '') +
          (hasReplay ? '; own error: what the layer computes differently from the inputs it was ' +
                       'given (the replay), of its whole error; none: what it shows is inherited' : '') + '.'),
        colgroup,
        h('thead', {}, h('tr', {'aria-rowindex': 1}, cols.map(([t, cls]) => h('th', {scope: 'col', class: cls}, t)))),
        tbody);
    const scroller = h('div', {class: 'table-scroll', tabindex: -1}, table);
    const count = h('span', {class: 'hint', id: 'layer-count', 'aria-live': 'polite'});
    const st = {q: state.q || '', op: state.op || '', verdict: state.verdict || '', fold: state.fold !== false};
    const filtered = () => !!(st.q || st.op || st.verdict);
    const unfolded = new Set(); // fold starts the user opened
    const folds = foldStretches(codes);
    const all = opts.rows || rowStore(key);
    let list = all; // the rows shown: every layer, or a filtered list
    let entries = []; // unfiltered: [{i} | {fold: [from, to]}]; filtered: positions of the list
    let shownTotal = n;
    const rendered = new Map(); // entry position -> <tr>
    const topPad = h('tr', {class: 'pad', 'aria-hidden': 'true'});
    const bottomPad = h('tr', {class: 'pad', 'aria-hidden': 'true'});
    tbody.append(topPad, bottomPad);

    function buildEntries() {
        if (filtered()) {
            shownTotal = list.total ?? 0;
            entries = null; // position k is the k-th row of the filtered list
            count.textContent = `${fmtInt(shownTotal)} of ${fmtInt(n)} layers match.`;
            return;
        }
        entries = [];
        let i = 0, f = 0, hidden = 0;
        while (i < n) {
            while (f < folds.length && folds[f][1] <= i)
                f++;
            const fold = folds[f];
            if (st.fold && fold && fold[0] === i && !unfolded.has(i)) {
                entries.push({fold});
                hidden += fold[1] - fold[0];
                i = fold[1];
                continue;
            }
            entries.push({i});
            i++;
        }
        shownTotal = entries.length;
        count.textContent = hidden ? `${fmtInt(n)} layers; ${fmtInt(hidden)} identical ones folded.`
            : `${fmtInt(n)} layers.`;
    }

    function foldRow(from, to) {
        const k = to - from;
        const button = h('button', {type: 'button', class: 'fold-button', 'aria-expanded': 'false'},
                         `Show ${fmtInt(k)} identical layers`);
        button.addEventListener('click', () => {
            unfolded.add(from);
            rebuild();
            api.jumpTo(from, {focus: true, keepFilters: true});
        });
        const tr = h('tr', {class: 'vrow fold', 'data-from': from, 'data-to': to},
                     h('td', {class: 'num'}, `${from}–${to - 1}`),
                     h('td', {colspan: cols.length - 1}, button, ' ',
                       h('span', {class: 'muted fold-names'}, 'bitwise equal in a and b')));
        // the names of the stretch's ends, once their page is here
        const ends = tr.querySelector('.fold-names');
        Promise.all([all.one(from, signal), all.one(to - 1, signal)]).then(([a, b]) => {
            if (a && b)
                ends.textContent = `${a.name} … ${b.name}: bitwise equal in a and b`;
        }).catch(() => {});
        return tr;
    }

    // The element of entry position k (a row, a fold, or a row still to come).
    function elementOf(k) {
        if (entries) {
            const e = entries[k];
            if (e.fold)
                return foldRow(e.fold[0], e.fold[1]);
            const l = all.get(e.i);
            return l ? row(l, hrefOf, graphOf, d, start) : placeholder(e.i, cols.length);
        }
        const l = list.get(k);
        return l ? row(l, hrefOf, graphOf, d, start) : placeholder(null, cols.length);
    }

    // Which rows of the list positions [a, b) are still to come: their pages, asked for.
    function missing(a, b) {
        if (entries) {
            let lo = Infinity, hi = -1;
            for (let k = a; k < b; k++) {
                const e = entries[k];
                if (!e.fold && !all.get(e.i)) {
                    lo = Math.min(lo, e.i);
                    hi = Math.max(hi, e.i);
                }
            }
            return hi < 0 ? null : all.ensure(lo, hi + 1, signal);
        }
        for (let k = a; k < b; k++)
            if (!list.get(k))
                return list.ensure(k, b, signal);
        return null;
    }

    // Draws the rows in view, keeping the elements of those already drawn (focus stays).
    function draw() {
        const top = scroller.scrollTop, height = scroller.clientHeight || 600;
        const a = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
        const b = Math.min(shownTotal, Math.ceil((top + height) / ROW_H) + OVERSCAN);
        for (const [k, tr] of rendered)
            if (k < a || k >= b) {
                tr.remove();
                rendered.delete(k);
            }
        let before = null;
        for (let k = a; k < b; k++) {
            let tr = rendered.get(k);
            if (tr && tr.classList.contains('pending')) {
                const fresh = elementOf(k);
                if (!fresh.classList.contains('pending')) {
                    tr.replaceWith(fresh);
                    tr = fresh;
                }
            } else if (!tr) {
                tr = elementOf(k);
                tbody.insertBefore(tr, before ? before.nextSibling : topPad.nextSibling);
            }
            rendered.set(k, tr);
            tr.setAttribute('aria-rowindex', k + 2);
            before = tr;
        }
        topPad.style.height = a * ROW_H + 'px';
        bottomPad.style.height = Math.max(0, shownTotal - b) * ROW_H + 'px';
        const wait = missing(a, b);
        if (wait)
            return wait.then(() => draw()).catch((e) => {
                if (e.name !== 'AbortError')
                    count.textContent = 'Rows could not be read: ' + e.message;
            });
        return Promise.resolve();
    }

    function clearRows() {
        for (const tr of rendered.values())
            tr.remove();
        rendered.clear();
    }

    // A new list (filters) or new entries (folds): drawn from the top, or kept where it was.
    async function rebuild(fromTop) {
        clearRows();
        if (filtered()) {
            list = rowStore(key, {q: st.q, op: st.op, verdict: st.verdict});
            await list.ensure(0, 1, signal);
        } else {
            list = all;
        }
        buildEntries();
        if (fromTop)
            scroller.scrollTop = 0;
        return draw();
    }

    let frame = 0;
    scroller.addEventListener('scroll', () => {
        cancelAnimationFrame(frame);
        frame = requestAnimationFrame(() => draw());
    }, {passive: true});

    // The controls: search by name, op and verdict, folding, jump, exports.
    const ops = Object.keys(d.ops || {}).sort();
    const qIn = h('input', {id: 'layer-search', type: 'search', value: st.q, placeholder: 'part of a name',
                            autocomplete: 'off', spellcheck: 'false'});
    const opSel = h('select', {id: 'layer-op'}, h('option', {value: ''}, 'any op'),
                    ops.map((o) => h('option', {value: o, selected: o === st.op}, `${o} (${fmtInt(d.ops[o])})`)));
    const vSel = h('select', {id: 'layer-verdict'}, h('option', {value: ''}, 'any verdict'),
                   VERDICTS.filter((v) => d.verdicts && d.verdicts[v])
                       .map((v) => h('option', {value: v, selected: v === st.verdict},
                                     `${v} (${fmtInt(d.verdicts[v])})`)));
    const foldBox = h('input', {id: 'layer-fold', type: 'checkbox', checked: st.fold});
    let timer = 0;
    const changed = () => {
        st.q = qIn.value.trim();
        st.op = opSel.value;
        st.verdict = vSel.value;
        st.fold = foldBox.checked;
        onState({q: st.q, op: st.op, verdict: st.verdict, fold: st.fold ? '' : '0'});
        return rebuild(true);
    };
    qIn.addEventListener('input', () => {
        clearTimeout(timer);
        timer = setTimeout(changed, 150);
    });
    for (const el of [opSel, vSel, foldBox])
        el.addEventListener('change', changed);
    const firstLayer = start ? start.layer : null;
    const jumpButton = h('button', {type: 'button', id: 'jump-first', class: 'primary',
                                    disabled: !firstLayer},
                         start && !start.known ? 'Jump to first observed' : 'Jump to first divergent');
    jumpButton.addEventListener('click', () => api.jumpTo(firstLayer.name));
    const csvCols = layerColumns(d);
    const exportNote = h('span', {class: 'action-note', 'aria-live': 'polite'});
    const exportAll = async (kind) => {
        const rows = await all.all(signal, (k, t) => { exportNote.textContent = `${fmtInt(k)} of ${fmtInt(t)} rows`; });
        exportNote.textContent = '';
        if (kind === 'csv')
            download('layers.csv', 'text/csv', toCsv(csvCols, rows));
        else
            download('layers.json', 'application/json', JSON.stringify(rows, null, 1) + '\n');
        return '';
    };
    const tools = h('div', {class: 'table-tools', role: 'search', 'aria-label': 'Find layers'},
        jumpButton,
        h('div', {class: 'field'}, h('label', {for: 'layer-search'}, 'Name'), qIn),
        h('div', {class: 'field'}, h('label', {for: 'layer-op'}, 'Op'), opSel),
        h('div', {class: 'field'}, h('label', {for: 'layer-verdict'}, 'Verdict'), vSel),
        h('div', {class: 'field field-check'}, foldBox,
          h('label', {for: 'layer-fold'}, 'Fold identical stretches')),
        h('span', {class: 'exports'},
          actionButton('CSV', () => exportAll('csv'), {'data-export': 'csv', 'aria-label': 'Download the layers as CSV'}),
          actionButton('JSON', () => exportAll('json'), {'data-export': 'json', 'aria-label': 'Download the layers as JSON'}),
          exportNote));

    // The entry position of layer i (its fold unfolded first when it is folded).
    function positionOf(i) {
        if (!entries)
            return -1;
        const fold = folds.find(([a, b]) => i >= a && i < b);
        if (st.fold && fold && !unfolded.has(fold[0])) {
            unfolded.add(fold[0]);
            buildEntries();
            clearRows();
        }
        let lo = 0, hi = entries.length - 1;
        while (lo <= hi) { // entries are in layer order
            const mid = (lo + hi) >> 1, e = entries[mid];
            const at = e.fold ? e.fold[0] : e.i;
            if (at === i)
                return mid;
            if (at < i)
                lo = mid + 1;
            else
                hi = mid - 1;
        }
        return -1;
    }

    const api = {
        el: h('div', {}, tools, count, scroller),
        ready: null,
        // Shows a layer's row (by name or position), unfolding or clearing filters that hide
        // it, in the middle of the table with the table on screen, its link focused; the
        // layer's position, or -1 when there is no such layer.
        async jumpTo(target, {focus = true, keepFilters = false} = {}) {
            let i = typeof target === 'number' ? target : null;
            if (i === null) {
                const named = layerByName(d, target);
                const l = named || await findLayer(key, target, signal).catch(() => null);
                if (!l)
                    return -1;
                i = l.i;
            }
            if (filtered() && !keepFilters) {
                qIn.value = '';
                opSel.value = '';
                vSel.value = '';
                st.q = st.op = st.verdict = '';
                onState({q: '', op: '', verdict: ''});
                await rebuild(false);
            }
            const k = positionOf(i);
            if (k < 0)
                return -1;
            const box = scroller.getBoundingClientRect();
            if (box.top < 0 || box.bottom > innerHeight)
                window.scrollBy(0, box.top - Math.max(8, (innerHeight - box.height) / 2));
            scroller.scrollTop = Math.max(0, k * ROW_H - (scroller.clientHeight - ROW_H) / 2);
            await draw();
            const tr = rendered.get(k);
            if (!tr)
                return -1;
            tr.classList.add('flash');
            setTimeout(() => tr.classList.remove('flash'), 1600);
            const link = tr.querySelector('th a, button');
            if (focus && link)
                link.focus({preventScroll: true});
            return i;
        },
    };
    api.ready = rebuild(false);
    return api;
}
