// tests/bench/web_matrix.mjs: the device matrix of a model opened for the first time (nothing
// of it cached by the daemon) and reopened, in Debian's Chromium (1400x1000, headless), from
// the navigation to the view's "rendered" mark (every row computed and drawn), each load a
// fresh browser context; with a second URL (another dashboard, on a database of its own with
// the same runs) the same there, and the ratio. One first open per daemon: run by
// tests/bench/web_matrix.sh, which gives each daemon a database without the model's diffs.
//
//   node tests/bench/web_matrix.mjs URL [PEER_URL] MODEL [REOPENS]
import path from 'node:path';
import {createRequire} from 'node:module';

const require = createRequire(path.join(path.dirname(new URL(import.meta.url).pathname), '../web/package.json'));
const {chromium} = require('playwright-core');
const args = process.argv.slice(2);
const peer = args[1] && /^http/.test(args[1]) ? args[1] : null;
const [url, model, reopensArg] = peer ? [args[0], args[2], args[3]] : [args[0], args[1], args[2]];
const reopens = Number(reopensArg) || 3;
if (!url || !model) {
    console.error('usage: web_matrix.mjs URL [PEER_URL] MODEL [REOPENS]');
    process.exit(2);
}
const browser = await chromium.launch({
    executablePath: process.env.GD_CHROMIUM || '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
});

async function load(base) {
    const context = await browser.newContext({viewport: {width: 1400, height: 1000}});
    const page = await context.newPage();
    const t0 = Date.now();
    await page.goto(`${base}/#/matrix/${encodeURIComponent(model)}`);
    await page.waitForFunction(() => {
        const v = document.getElementById('view');
        return v && v.dataset.rendered === location.hash && !v.hasAttribute('aria-busy');
    }, null, {timeout: 600000, polling: 100});
    const ms = Date.now() - t0;
    const cells = await page.evaluate(() => document.querySelectorAll('#matrix td').length);
    await context.close();
    return {ms, cells};
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sides = peer ? [['this tree', url], ['peer', peer]] : [['this tree', url]];
const out = {};
for (const [name, base] of sides)
    out[name] = {first: await load(base), again: []};
for (let r = 0; r < reopens; r++)
    for (const [name, base] of sides)
        out[name].again.push((await load(base)).ms);
console.log(`chromium ${browser.version()}, model ${model}, navigation to rendered`);
for (const [name] of sides)
    console.log(`${name.padEnd(10)} first open ${String(out[name].first.ms).padStart(7)} ms ` +
                `(${out[name].first.cells} cells), reopened: median ${median(out[name].again)} ms ` +
                `of ${out[name].again.join(', ')}`);
if (peer)
    console.log(`ratio      first open ${(out['this tree'].first.ms / out.peer.first.ms).toFixed(3)}, ` +
                `reopened ${(median(out['this tree'].again) / median(out.peer.again)).toFixed(3)}`);
await browser.close();
