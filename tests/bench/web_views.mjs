// tests/bench/web_views.mjs: how long the dashboard's views take in Debian's Chromium, from
// the page's navigation to the view's "rendered" mark (app.js sets #view[data-rendered] when
// a view has drawn everything, the matrix's computed rows and the graph's layout included),
// each load a fresh page, the views interleaved, N rounds, medians. With a second URL serving
// another dashboard (e.g. main's web/ on the same database) each view is measured on both in
// the same round, and the ratio printed. A program, run by hand (docs/PERFORMANCE.md):
//
//   . DIR/ids.env   # from GD_WEB_KEEP=DIR make check TESTS=tests/web/dashboard.sh
//   node tests/bench/web_views.mjs http://127.0.0.1:PORT [http://127.0.0.1:PORT2] [rounds]
//
// Needs tests/web/node_modules (playwright-core: dashboard.sh installs it) and the RUN_* ids.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {createRequire} from 'node:module';

const require = createRequire(path.join(path.dirname(new URL(import.meta.url).pathname), '../web/package.json'));
const {chromium} = require('playwright-core');
const [url, peer, roundsArg] = process.argv.slice(2);
if (!url) {
    console.error('usage: web_views.mjs URL [PEER_URL] [ROUNDS]');
    process.exit(2);
}
const rounds = Number(roundsArg || (peer && !/^http/.test(peer) ? peer : 7)) || 7;
const other = peer && /^http/.test(peer) ? peer : null;
const e = process.env;
const views = [
    ['diff, seed case (12 layers)', `#/diff?a=${e.RUN_CPU}&b=${e.RUN_TF32}&truth=${e.RUN_CPU64}`],
    ['diff, 1,000 layers, cached', `#/diff?a=${e.RUN_BIG_CPU}&b=${e.RUN_BIG_TF32}&truth=${e.RUN_BIG_CPU64}`],
    ['graph, 1,000 nodes', `#/graph?a=${e.RUN_BIG_CPU}&b=${e.RUN_BIG_TF32}&truth=${e.RUN_BIG_CPU64}`, true],
    ['matrix, 50 devices, cached', '#/matrix/fleet-50'],
    ['runs, page 1 of 10,061', '#/runs'],
    ['runs, last page of 10,000', '#/runs?model=bulk&offset=9950'],
    ['runs, knob filter over 10,000', '#/runs?model=bulk&knob=conv_algo%3Dfft_tiling', true],
];
const context = await chromium.launchPersistentContext(fs.mkdtempSync(path.join(os.tmpdir(), 'bench-')), {
    executablePath: e.GD_CHROMIUM || '/usr/bin/chromium', headless: true,
    viewport: {width: 1400, height: 1000},
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
});
const page = context.pages()[0];
await page.addInitScript(() => {
    new MutationObserver((_, obs) => {
        const v = document.getElementById('view');
        if (v && v.dataset.rendered === location.hash && !v.hasAttribute('aria-busy')) {
            window.__renderedAt = performance.now();
            obs.disconnect();
        }
    }).observe(document, {subtree: true, attributes: true, attributeFilter: ['data-rendered', 'aria-busy']});
});

async function load(base, hash) {
    await page.goto('about:blank');
    await page.goto(base + '/' + hash);
    await page.waitForFunction(() => window.__renderedAt !== undefined, null, {timeout: 300000});
    return page.evaluate(() => window.__renderedAt);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = views.map(() => ({mine: [], peer: []}));
for (let r = 0; r < rounds; r++)
    for (let i = 0; i < views.length; i++) {
        const [, hash, newOnly] = views[i];
        results[i].mine.push(await load(url, hash));
        if (other && !newOnly)
            results[i].peer.push(await load(other, hash));
    }
console.log(`chromium ${context.browser() ? context.browser().version() : ''}, ${rounds} rounds, ` +
            `navigation to rendered, median ms (min-max)`);
views.forEach(([what], i) => {
    const m = results[i].mine, p = results[i].peer;
    const span = (xs) => `${Math.round(Math.min(...xs))}-${Math.round(Math.max(...xs))}`;
    let line = `${what.padEnd(34)} ${String(Math.round(median(m))).padStart(6)} (${span(m)})`;
    if (p.length)
        line += `   peer ${String(Math.round(median(p))).padStart(6)} (${span(p)})   ratio ${(median(m) / median(p)).toFixed(2)}`;
    console.log(line);
});
await context.close();
