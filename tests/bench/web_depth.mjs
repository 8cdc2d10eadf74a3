// tests/bench/web_depth.mjs: the diff view of a deep model in Debian's Chromium (1400x1000,
// headless), each load a fresh page: first paint (this tree's "gd-paint diff" measure),
// interactive (the view's "rendered" mark: summary, chart and the table's rows on screen),
// elements on the page, bytes from the API (at interactive, and all of them once the steps'
// requests have settled), the run documents asked for, the renderer process's resident memory
// (CDP's SystemInfo pids, /proc/PID/status VmRSS; each load in a browser context of its own)
// and the JS heap, the frames while the table scrolls 60 steps of 600 px (longest, 95th
// percentile, median), "jump to first divergent" and the op filter; with a second URL serving
// another dashboard on the same database (main's web/), the same for it in the same round, and
// the ratios. A program, run by hand (tests/bench/web_depth.sh, docs/PERFORMANCE.md):
//
//   node tests/bench/web_depth.mjs URL [PEER_URL] HASH [ROUNDS]
//
// Needs tests/web/node_modules (playwright-core: tests/web/dashboard.sh installs it).
import fs from 'node:fs';
import path from 'node:path';
import {createRequire} from 'node:module';

const require = createRequire(path.join(path.dirname(new URL(import.meta.url).pathname), '../web/package.json'));
const {chromium} = require('playwright-core');
const args = process.argv.slice(2);
const url = args[0];
const peer = args[1] && /^http/.test(args[1]) ? args[1] : null;
const hash = peer ? args[2] : args[1];
const rounds = Number(peer ? args[3] : args[2]) || 3;
if (!url || !hash) {
    console.error('usage: web_depth.mjs URL [PEER_URL] HASH [ROUNDS]');
    process.exit(2);
}
// One browser; each load a context of its own (its own renderer process: two dashboards on
// one host would otherwise share one, and its memory).
const browser = await chromium.launch({
    executablePath: process.env.GD_CHROMIUM || '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
});
let page = null;

async function rendererRss() {
    const cdp = await browser.newBrowserCDPSession();
    let kb = 0;
    try {
        const info = await cdp.send('SystemInfo.getProcessInfo');
        for (const p of info.processInfo.filter((x) => x.type === 'renderer')) {
            const status = fs.readFileSync(`/proc/${p.id}/status`, 'utf8');
            const m = status.match(/VmRSS:\s+(\d+) kB/);
            kb = Math.max(kb, m ? Number(m[1]) : 0);
        }
    } catch {
        kb = NaN;
    }
    await cdp.detach();
    return kb / 1024;
}

async function load(base) {
    const context = await browser.newContext({viewport: {width: 1400, height: 1000}});
    page = await context.newPage();
    // Every API request, answered or not: what a view asks for after its "rendered" mark (a
    // run's document for a label) counts too, once the requests have settled.
    const asked = [];
    let pending = 0;
    page.on('request', (r) => {
        if (r.url().includes('/api/v1/')) {
            asked.push(r.url());
            pending++;
        }
    });
    const settle = (r) => {
        if (r.url().includes('/api/v1/'))
            pending--;
    };
    page.on('requestfinished', settle);
    page.on('requestfailed', settle);
    const t0 = Date.now();
    await page.goto(base + '/' + hash);
    await page.waitForFunction(() => {
        const v = document.getElementById('view');
        return v && v.dataset.rendered === location.hash && !v.hasAttribute('aria-busy');
    }, null, {timeout: 600000});
    const wall = Date.now() - t0;
    const facts = await page.evaluate(() => ({
        paint: (performance.getEntriesByName('gd-paint diff', 'measure')[0] || {}).duration ?? null,
        view: (performance.getEntriesByName('gd-view diff', 'measure')[0] || {}).duration ?? null,
        nav: performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd,
        elements: document.getElementsByTagName('*').length,
        api: performance.getEntriesByType('resource').filter((r) => r.name.includes('/api/v1/'))
            .reduce((a, r) => a + (r.transferSize || r.encodedBodySize || 0), 0),
    }));
    const rss = await rendererRss(); // the only renderer: each load has a browser context of its own
    // Scrolling the table: 30 steps of 600 px, a frame each; the frames' durations.
    const frames = await page.evaluate(async () => {
        const box = document.querySelector('.table-scroll');
        const table = document.querySelector('#layer-table');
        if (!box)
            window.scrollTo(0, table.getBoundingClientRect().top + scrollY);
        const times = [];
        let last = await new Promise((r) => requestAnimationFrame(r));
        for (let k = 0; k < 60; k++) {
            if (box)
                box.scrollTop += 600;
            else
                window.scrollBy(0, 600);
            const now = await new Promise((r) => requestAnimationFrame(r));
            times.push(now - last);
            last = now;
        }
        times.sort((a, b) => a - b);
        return {max: times[times.length - 1], p95: times[Math.floor(times.length * 0.95)],
                median: times[Math.floor(times.length / 2)]};
    });
    // Jump to the first divergent layer: from the click to its row on screen.
    const jump = await page.evaluate(async () => {
        window.scrollTo(0, 0);
        const b = document.getElementById('jump-first');
        const name = (document.getElementById('first-divergent') || {}).textContent;
        const t0 = performance.now();
        b.click();
        for (;;) {
            const tr = document.querySelector(`tr[data-layer="${CSS.escape(name)}"]`);
            if (tr) {
                const r = tr.getBoundingClientRect();
                if (r.top >= 0 && r.bottom <= innerHeight)
                    return performance.now() - t0;
            }
            if (performance.now() - t0 > 60000)
                return null;
            await new Promise((r) => requestAnimationFrame(r));
        }
    });
    // The op filter: from choosing an op to the count of what it keeps.
    const filter = await page.evaluate(async () => {
        const sel = document.getElementById('layer-op');
        const count = document.getElementById('layer-count');
        const op = [...sel.options].map((o) => o.value).find((v) => v && v !== sel.value);
        const before = count.textContent;
        const t0 = performance.now();
        sel.value = op;
        sel.dispatchEvent(new Event('change', {bubbles: true}));
        for (;;) {
            if (count.textContent !== before && /match/.test(count.textContent))
                return performance.now() - t0;
            if (performance.now() - t0 > 60000)
                return null;
            await new Promise((r) => requestAnimationFrame(r));
        }
    });
    // The requests settled (none pending for half a second): every byte the view took.
    for (let quiet = 0; quiet < 5; quiet = pending > 0 ? 0 : quiet + 1)
        await page.waitForTimeout(100);
    const apiAll = await page.evaluate(() => performance.getEntriesByType('resource')
        .filter((r) => r.name.includes('/api/v1/'))
        .reduce((a, r) => a + (r.transferSize || r.encodedBodySize || 0), 0));
    const runDocs = asked.filter((u) => /\/api\/v1\/runs\/[0-9a-f-]{36}(\?|$)/.test(u)).length;
    const cdp = await context.newCDPSession(page);
    await cdp.send('Performance.enable');
    const {metrics} = await cdp.send('Performance.getMetrics');
    const heap = metrics.find((x) => x.name === 'JSHeapUsedSize').value / 1048576;
    await context.close();
    return {wall, ...facts, apiAll, runDocs, rss, heap, frames, jump, filter};
}

const median = (xs) => {
    const v = xs.filter((x) => x !== null && Number.isFinite(x)).sort((a, b) => a - b);
    return v.length ? v[Math.floor(v.length / 2)] : null;
};
const mine = [], theirs = [];
for (let r = 0; r < rounds; r++) {
    mine.push(await load(url));
    if (peer)
        theirs.push(await load(peer));
}
const line = (what, key, unit, digits = 0) => {
    const m = median(mine.map(key)), p = peer ? median(theirs.map(key)) : null;
    const f = (v) => (v === null ? '–' : v.toFixed(digits));
    console.log(`${what.padEnd(38)} ${f(m).padStart(9)} ${unit}` +
                (peer ? `   peer ${f(p).padStart(9)} ${unit}   ratio ${m !== null && p ? (m / p).toFixed(3) : '–'}` : ''));
};
console.log(`chromium ${browser.version()}, ${rounds} rounds, ${hash.slice(0, 60)}…, medians`);
line('first paint (gd-paint diff)', (x) => x.paint, 'ms');
line('interactive (gd-view diff)', (x) => x.view, 'ms');
line('navigation to rendered', (x) => x.wall, 'ms');
line('elements on the page', (x) => x.elements, '');
line('bytes from the API, at interactive', (x) => x.api / 1048576, 'MB', 2);
line('bytes from the API, all (steps, settled)', (x) => x.apiAll / 1048576, 'MB', 2);
line('run documents asked for', (x) => x.runDocs, '');
line('renderer resident memory', (x) => x.rss, 'MB', 0);
line('JS heap used (after the steps below)', (x) => x.heap, 'MB', 1);
line('scroll: longest frame', (x) => x.frames.max, 'ms', 1);
line('scroll: 95th percentile frame', (x) => x.frames.p95, 'ms', 1);
line('scroll: median frame', (x) => x.frames.median, 'ms', 1);
line('jump to first divergent', (x) => x.jump, 'ms');
line('op filter', (x) => x.filter, 'ms');
await browser.close();
