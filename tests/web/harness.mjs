// tests/web/harness.mjs: what the dashboard's browser steps share: Debian's Chromium through
// playwright-core with a fresh profile and no network beyond loopback, the record of what the
// page says (console errors, dialogs, requests to other origins), step() that runs one check
// and prints "ok" or "FAIL", open() that waits until a view says it has rendered, shot() for
// screenshots, axe() for WCAG checks, contrast helpers, and downloads read back.
import fs from 'node:fs';
import path from 'node:path';
import {createRequire} from 'node:module';
import {chromium} from 'playwright-core';

const env = process.env;
export const URL0 = env.GD_URL;
export const SHOTS = env.GD_SHOTS;
const require = createRequire(import.meta.url);
const AXE_SOURCE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export const result = {passed: 0, failed: 0, failures: []};

export function check(cond, what) {
    if (!cond)
        throw new Error(what);
    console.log('    ok: ' + what);
}

// ---- the browser: Debian's Chromium, a fresh profile, no network beyond loopback ----
fs.mkdirSync(SHOTS, {recursive: true});
for (const f of fs.readdirSync(SHOTS))
    if (f.endsWith('.png'))
        fs.rmSync(path.join(SHOTS, f)); // only this run's pictures
const profile = fs.mkdtempSync(path.join(env.GD_TMP || '/tmp', 'chromium-'));
export const context = await chromium.launchPersistentContext(profile, {
    executablePath: env.GD_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: {width: 1400, height: 1000},
    acceptDownloads: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
await context.grantPermissions(['clipboard-read', 'clipboard-write'], {origin: URL0});
export const page = context.pages()[0] || await context.newPage();
console.log(`chromium ${context.browser() ? context.browser().version() : '(persistent)'}, ` +
            `node ${process.version}, dashboard at ${URL0}`);

// Everything the page says or does that a step may have to answer for.
const events = {console: [], dialogs: [], foreign: []};
page.on('console', (m) => {
    if (m.type() === 'error')
        events.console.push(m.text());
});
page.on('pageerror', (e) => events.console.push('uncaught: ' + e.message));
page.on('dialog', async (d) => {
    events.dialogs.push(`${d.type()}: ${d.message()}`);
    await d.dismiss();
});
page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith(URL0 + '/') && !u.startsWith('blob:') && !u.startsWith('data:'))
        events.foreign.push(u);
});
export function foreignRequests() {
    return events.foreign;
}

// step(name, fn, {needs, httpErrors}): runs one check; console errors fail it unless the step
// provokes HTTP errors on purpose (httpErrors: the "Failed to load resource" lines are then
// expected). needs names what the step depends on, printed with a failure.
export async function step(name, fn, opts = {}) {
    console.log(`${name}${opts.needs ? ` [needs ${opts.needs}]` : ''}`);
    events.console.length = 0;
    try {
        await fn();
        const errors = events.console.filter((t) =>
            !(opts.httpErrors && /Failed to load resource: the server responded with a status of 4\d\d/.test(t)));
        check(errors.length === 0, `no console errors${errors.length ? ': ' + errors.join(' | ') : ''}`);
        check(events.dialogs.length === 0, `no dialog opened${events.dialogs.length ? ': ' + events.dialogs.join(' | ') : ''}`);
        result.passed++;
        console.log(`ok - ${name}`);
    } catch (e) {
        result.failed++;
        result.failures.push(name + (opts.needs ? ` (needs ${opts.needs})` : ''));
        console.log(`FAIL - ${name}: ${e.message.split('\n')[0]}`);
        await shot('FAILED-' + name.replace(/[^a-z0-9]+/gi, '-')).catch(() => {});
    }
}

// Opens a route and waits until the view says it has rendered it. fresh: a new page load (no
// script or cache of the page's own), so that the view's time is a first visit's.
export async function open(hash, {fresh = false, timeout = 60000} = {}) {
    if (page.url().startsWith(URL0 + '/') && !fresh) {
        await page.evaluate((h) => { location.hash = h; }, hash);
    } else {
        if (fresh)
            await page.goto('about:blank'); // else a change of the hash alone loads nothing
        await page.goto(URL0 + '/' + hash);
    }
    await page.waitForFunction(() => {
        const v = document.getElementById('view');
        return v && v.dataset.rendered === location.hash && !v.hasAttribute('aria-busy');
    }, null, {timeout});
}

// A fresh load of hash, its "gd-view NAME" measure (ms: route to rendered).
export async function timedLoad(hash, name) {
    await page.goto('about:blank');
    await page.goto(URL0 + '/' + hash);
    await page.waitForFunction(() => {
        const v = document.getElementById('view');
        return v && v.dataset.rendered === location.hash && !v.hasAttribute('aria-busy');
    }, null, {timeout: 60000});
    return page.evaluate((n) => {
        const m = performance.getEntriesByName('gd-view ' + n, 'measure');
        return m.length ? m[m.length - 1].duration : null;
    }, name);
}

export async function shot(name, fullPage = true) {
    const file = path.join(SHOTS, name + '.png');
    await page.screenshot({path: file, fullPage});
    console.log('    screenshot: ' + file);
}

// axe-core's WCAG 2 A/AA rules on the page as it is; serious and critical findings fail.
export async function axe(what) {
    const has = await page.evaluate(() => typeof window.axe !== 'undefined');
    if (!has)
        await page.evaluate(AXE_SOURCE); // evaluated by the driver: the page's CSP stays on
    const res = await page.evaluate(async () => {
        const r = await window.axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}});
        return r.violations.map((v) => ({id: v.id, impact: v.impact, n: v.nodes.length,
                                         where: v.nodes.slice(0, 3).map((n) => n.target.join(' ')),
                                         why: v.nodes[0] && v.nodes[0].failureSummary}));
    });
    const bad = res.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    for (const v of res)
        console.log(`    axe ${v.impact}: ${v.id} x${v.n} at ${v.where.join(', ')}: ${(v.why || '').replace(/\s+/g, ' ')}`);
    check(bad.length === 0, `axe-core (WCAG 2 A/AA) finds no serious or critical problem in ${what}` +
          (bad.length ? ': ' + bad.map((v) => v.id).join(', ') : ''));
}

export const text = (sel) => page.locator(sel).first().innerText();

// The contents of the file a click downloads.
export async function downloaded(selector) {
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click(selector)]);
    return {name: dl.suggestedFilename(), data: fs.readFileSync(await dl.path())};
}

// The chart colours: text 4.5:1 and marks 3:1 against the chart's own background (WCAG 1.4.3,
// 1.4.11), in the page as it is (light or dark); and the luminance ratio of two verdicts' marks.
export function chartContrast() {
    return page.evaluate(() => {
        const lum = (c) => {
            const m = c.match(/\d+(\.\d+)?/g).slice(0, 3).map(Number).map((v) => v / 255)
                .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
            return 0.2126 * m[0] + 0.7152 * m[1] + 0.0722 * m[2];
        };
        const ratio = (c1, c2) => {
            const [l1, l2] = [lum(c1), lum(c2)].sort((x, y) => y - x);
            return (l1 + 0.05) / (l2 + 0.05);
        };
        const out = [];
        for (const svg of document.querySelectorAll('svg.chart')) {
            const bg = getComputedStyle(svg).backgroundColor;
            for (const el of svg.querySelectorAll('text'))
                if (!el.closest('.tip') && ratio(getComputedStyle(el).fill, bg) < 4.5)
                    out.push(`text "${el.textContent}" ${getComputedStyle(el).fill} on ${bg}`);
            for (const el of svg.querySelectorAll('.pt, .value-line, .band-edge, .ring-first, .ring-amp, .extra-line')) {
                const cs = getComputedStyle(el);
                const c = el.classList.contains('pt') ? cs.fill : cs.stroke;
                if (ratio(c, bg) < 3)
                    out.push(`${el.getAttribute('class')} ${c} on ${bg} ${ratio(c, bg).toFixed(2)}`);
            }
        }
        // Divergent and amplified marks: apart in lightness, not only in hue.
        const probe = (cls) => {
            const c = document.createElementNS('http://www.w3.org/2000/svg', 'circle');
            c.setAttribute('class', 'pt ' + cls);
            const svg = document.querySelector('svg.chart');
            svg.append(c);
            const f = getComputedStyle(c).fill;
            c.remove();
            return f;
        };
        return {low: out, divAmp: ratio(probe('v-divergent'), probe('v-amplified'))};
    });
}

export async function finish() {
    await context.close();
    fs.rmSync(profile, {recursive: true, force: true});
    console.log(`${result.passed} passed, ${result.failed} failed`);
    if (result.failed)
        console.log('failed: ' + result.failures.join('; '));
    process.exit(result.failed ? 1 : 0);
}
