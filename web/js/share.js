// share.js: taking a view elsewhere: a link to it (the address holds the view's state), its
// tables as CSV and JSON, its charts as SVG files, and text for the clipboard (the bug
// report). Files are made in the page and handed over as blob: downloads; nothing is sent.
import {h} from './dom.js';

// Copies text to the clipboard; false when the browser refuses (then the caller shows it).
export async function copyText(text) {
    try {
        await navigator.clipboard.writeText(text);
        return true;
    } catch {
        // Without the async clipboard (an insecure origin, a denied permission): a hidden field.
        const area = h('textarea', {class: 'sr-only', 'aria-hidden': 'true'});
        area.value = text;
        document.body.append(area);
        area.select();
        let ok = false;
        try {
            ok = document.execCommand('copy');
        } catch {
            ok = false;
        }
        area.remove();
        return ok;
    }
}

export function download(name, type, text) {
    const url = URL.createObjectURL(new Blob([text], {type}));
    const a = h('a', {href: url, download: name, class: 'sr-only'});
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// A button that does something and says what happened beside it, for screen readers too.
export function actionButton(label, action, attrs = {}) {
    const note = h('span', {class: 'action-note', 'aria-live': 'polite'});
    const button = h('button', {type: 'button', class: 'small', ...attrs}, label);
    button.addEventListener('click', async () => {
        note.textContent = '';
        try {
            note.textContent = (await action()) || '';
        } catch (e) {
            note.textContent = 'failed: ' + (e.message || e);
        }
    });
    return h('span', {class: 'action'}, button, note);
}

export function copyLinkButton() {
    return actionButton('Copy link', async () =>
        ((await copyText(location.href)) ? 'link copied' : 'copy refused: the link is ' + location.href),
    {'data-share': 'link'});
}

// A cell: text a spreadsheet would take for a formula (starting with = + - @, a tab or a CR,
// OWASP's list) gets a ' in front, which shows it as text (quoting alone does not: a
// spreadsheet evaluates "=cmd|..." all the same); numbers stay numbers, a negative one too.
// Uploaded strings (model names, labels, GPU names) reach these cells.
export function csvCell(v) {
    if (typeof v === 'number' || typeof v === 'boolean')
        return String(v);
    let t = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    if (/^[=+\-@\t\r]/.test(t))
        t = "'" + t;
    return /[",\n\r]/.test(t) || t.startsWith("'") ? '"' + t.replace(/"/g, '""') + '"' : t;
}

// CSV (RFC 4180) of rows under columns [{key, label}], cells read by key (a function or name).
export function toCsv(columns, rows) {
    const read = (c, r) => (typeof c.key === 'function' ? c.key(r) : r[c.key]);
    return [columns.map((c) => csvCell(c.label)).join(','),
            ...rows.map((r) => columns.map((c) => csvCell(read(c, r))).join(','))].join('\r\n') + '\r\n';
}

// "CSV" and "JSON" buttons of a table: rows() gives the objects (all of them, not only the
// ones on screen), columns the CSV's columns.
export function tableExports(name, columns, rows) {
    return h('span', {class: 'exports'},
        actionButton('CSV', () => {
            download(name + '.csv', 'text/csv', toCsv(columns, rows()));
            return '';
        }, {'data-export': 'csv', 'aria-label': `Download ${name} as CSV`}),
        actionButton('JSON', () => {
            download(name + '.json', 'application/json', JSON.stringify(rows(), null, 1) + '\n');
            return '';
        }, {'data-export': 'json', 'aria-label': `Download ${name} as JSON`}));
}

// The rows of an HTML table as objects keyed by its header texts (for tables built from text).
export function domTableRows(table) {
    const heads = [...table.querySelectorAll('thead th')].map((th) => th.textContent.trim());
    return [...table.querySelectorAll('tbody tr')].filter((tr) => !tr.hidden).map((tr) => {
        const o = {};
        [...tr.children].forEach((cell, i) => { o[heads[i] || 'col' + i] = cell.textContent.trim(); });
        return o;
    });
}

export function domTableExports(name, table) {
    const heads = () => [...table.querySelectorAll('thead th')].map((th, i) => ({
        key: th.textContent.trim() || 'col' + i, label: th.textContent.trim() || 'col' + i}));
    return h('span', {class: 'exports'},
        actionButton('CSV', () => {
            download(name + '.csv', 'text/csv', toCsv(heads(), domTableRows(table)));
            return '';
        }, {'data-export': 'csv', 'aria-label': `Download ${name} as CSV`}),
        actionButton('JSON', () => {
            download(name + '.json', 'application/json', JSON.stringify(domTableRows(table), null, 1) + '\n');
            return '';
        }, {'data-export': 'json', 'aria-label': `Download ${name} as JSON`}));
}

// The SVG of a chart as a file that looks the same anywhere: the computed styles the page's
// CSS gives each element are written into it as presentation attributes (not style
// attributes, which the page's CSP refuses), so it needs no style sheet.
const SVG_PROPS = ['fill', 'stroke', 'stroke-width', 'stroke-dasharray', 'font-size', 'font-weight',
                   'font-family', 'opacity', 'fill-opacity', 'visibility', 'text-anchor'];

export function svgText(svg) {
    const copy = svg.cloneNode(true);
    const src = [svg, ...svg.querySelectorAll('*')];
    const dst = [copy, ...copy.querySelectorAll('*')];
    src.forEach((el, i) => {
        const cs = getComputedStyle(el);
        for (const p of SVG_PROPS) {
            const v = cs.getPropertyValue(p);
            if (v)
                dst[i].setAttribute(p, v);
        }
    });
    for (const tip of copy.querySelectorAll('.tip'))
        tip.remove();
    copy.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
    const bg = getComputedStyle(svg).backgroundColor;
    const vb = (svg.getAttribute('viewBox') || '0 0 960 360').split(/\s+/).map(Number);
    const rect = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
    rect.setAttribute('x', vb[0]);
    rect.setAttribute('y', vb[1]);
    rect.setAttribute('width', vb[2]);
    rect.setAttribute('height', vb[3]);
    rect.setAttribute('fill', bg && bg !== 'rgba(0, 0, 0, 0)' ? bg : '#ffffff');
    copy.insertBefore(rect, copy.firstChild);
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(copy) + '\n';
}

export function svgExport(name, getSvg) {
    return actionButton('SVG', () => {
        const svg = getSvg();
        if (!svg)
            return 'no chart';
        download(name + '.svg', 'image/svg+xml', svgText(svg));
        return '';
    }, {'data-export': 'svg', 'aria-label': `Download the chart ${name} as SVG`});
}

// A Markdown table cell: pipes escaped, line breaks out.
export function mdCell(v) {
    return String(v ?? '–').replace(/\|/g, '\\|').replace(/[\r\n]+/g, ' ');
}
