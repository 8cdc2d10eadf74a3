// tests/web/dashboard.test.mjs: the dashboard in headless Chromium (Debian's, driven by
// playwright-core), against a real gpudiffd that tests/web/dashboard.sh started and seeded.
// Every step prints "ok" or "FAIL" with what it compared; screenshots of each view go to
// $GD_SHOTS. The seed case's steps are here; the steps at scale (a 1,000-layer model, 50
// devices, 10,000 runs, phones, dark mode) are in scale_steps.mjs, those of the diagnosis's
// fields (truth, partial data, replay, facts) and of sweeps in truth_steps.mjs. Exit status 1
// when any step failed.
//
// Environment (from dashboard.sh): GD_URL, GD_CHROMIUM, GD_TMP, GD_SHOTS, ADMIN_TOKEN, RUN_CPU,
// RUN_CPU64, RUN_TF32, RUN_XSS1, RUN_XSS2, RUN_XSS_NAME, RUN_GPU_NEW, RUN_BITWISE, RUN_BIG_CPU,
// RUN_BIG_CPU64, RUN_BIG_TF32, RUN_FLEET0, RUN_REPLAY, RUN_PT, RUN_PD, RUN_POLE_A, RUN_POLE_B,
// SWEEP_ID, BUNDLE_CPU, BUNDLE_TF32, RUN_ENC_CPU, RUN_ENC_TF32, RUN_FLEET48, RUN_FLEET49,
// RUN_FLEET01_UP3; GD_WEB_BENCH=N repeats each timing N times and prints the
// medians (docs/PERFORMANCE.md).
import {createHash} from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {URL0, page, step, check, open, shot, axe, text, chartContrast, foreignRequests, finish}
    from './harness.mjs';
import {scaleSteps} from './scale_steps.mjs';
import {truthSteps} from './truth_steps.mjs';
import {jobsSteps} from './jobs_steps.mjs';
import {depthSteps} from './depth_steps.mjs';
import {widthSteps} from './width_steps.mjs';
import {faultSteps} from './fault_steps.mjs';

const env = process.env;
const ids = {cpu: env.RUN_CPU, cpu64: env.RUN_CPU64, tf32: env.RUN_TF32, xss1: env.RUN_XSS1,
             xss2: env.RUN_XSS2, gpuNew: env.RUN_GPU_NEW, pt: env.RUN_PT, pd: env.RUN_PD,
             bitwise: env.RUN_BITWISE};
const XSS = '<script>alert(1)</script>';
const short = (id) => id.slice(0, 8);
// The runs dashboard.sh made: 10,000 listed-only runs of "bulk", 8 of the seed model (cpu,
// cpu64, its replay, tf32, the GPU device's two, the two framework dumps), 3 whose strings are
// HTML, 3 of the 1,000-layer model, 50 of the fleet, 2 of "pole", 4 of the sweep and 1 in
// bitwise mode.
// And (issue 26) 2 of the 2,000-layer encoder, 3 upgrades of a fleet device, 1,050 of "deep".
const SEED_RUNS = 8;
const ALL_RUNS = 10000 + SEED_RUNS + 3 + 3 + 50 + 2 + 4 + 1 + 2 + 3 + 1050;

function sha256(buf) {
    return createHash('sha256').update(buf).digest('hex');
}

// The data of a .npy file (after its header) and its float32 values.
function npyData(buf) {
    const major = buf[6];
    const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
    return buf.subarray((major === 1 ? 10 : 12) + hlen);
}

function layerFile(bundle, name) {
    const run = JSON.parse(fs.readFileSync(path.join(bundle, 'run.json'), 'utf8'));
    const rec = run.layers.find((l) => l.name === name);
    return {rec, file: path.join(bundle, rec.file)};
}

// ---- the steps ----

await step('the page and its files come from gpudiffd, with a CSP', async () => {
    const resp = await page.goto(URL0 + '/#/runs');
    await page.waitForFunction(() => document.getElementById('view').dataset.rendered === location.hash);
    const csp = resp.headers()['content-security-policy'] || '';
    check(csp.startsWith("default-src 'none'") && csp.includes("script-src 'self'") &&
          !csp.includes('unsafe') && !/https?:|\*/.test(csp),
          `index.html has a Content-Security-Policy that allows only this origin: "${csp}"`);
    const elk = await page.request.get(URL0 + '/vendor/elk-worker.min.js');
    check(elk.ok() && /^text\/javascript/.test(elk.headers()['content-type']),
          'the layout library is served by gpudiffd itself (vendor/elk-worker.min.js)');
    const css = await page.request.get(URL0 + '/style.css');
    check(/^text\/css/.test(css.headers()['content-type']), 'style.css is text/css');
    const js = await page.request.get(URL0 + '/js/app.js');
    check(/^text\/javascript/.test(js.headers()['content-type']), 'app.js is text/javascript');
});

await step('runs: the list, paged by the daemon, with status and baseline links', async () => {
    await open('#/runs');
    const status = await text('.pager-status');
    check(status.includes('of ' + ALL_RUNS.toLocaleString('en-US')),
          `the pager counts all ${ALL_RUNS} runs ("${status}")`);
    check(await page.locator('table.runs tbody tr').count() === 50, '50 runs on the first page');
    await open('#/runs?limit=100'); // the seed's runs are older than the 53 of the scale test
    const tf32Link = await page.locator(`tr[data-run="${ids.tf32}"] a.diff-link`).getAttribute('href');
    check(tf32Link === `#/diff?a=${ids.tf32}&b=${ids.cpu}`, `the tf32 run links to its diff against the baseline (${tf32Link})`);
    check(await page.locator(`tr[data-run="${ids.cpu}"] .badge.baseline`).count() === 1, 'the baseline run says so');
    check((await page.locator(`tr[data-run="${ids.cpu}"] .badge.s-complete`).innerText()) === 'complete', 'status complete is shown');
    const knobs = await page.locator(`tr[data-run="${ids.tf32}"] .knobs-cell`).innerText();
    check(knobs.includes('emulate=tf32:gemm'), `the tf32 run's knobs are shown (${knobs.replace(/\n/g, ' ')})`);
    check(await page.locator(`tr[data-run="${ids.bitwise}"] .badge.bitwise`).count() === 1 &&
          await page.locator('.badge.bitwise').count() === 1,
          'the run made with --repro bitwise, and it alone, is marked bitwise');
    const bw = await page.locator(`tr[data-run="${ids.bitwise}"] .knobs-cell`).innerText();
    check(bw.includes('bitwise mode') && !bw.includes('repro='), `its knobs say bitwise mode (${bw})`);
    await shot('runs');
    await axe('the runs view');
});

await step('runs: filters through the form, and 10,000 runs paged to the last page', async () => {
    await open('#/runs');
    await page.selectOption('#f-model', 'lenet-11-821');
    await page.click('form.filters button[type=submit]');
    await page.waitForFunction(() => location.hash.includes('model=lenet-11-821') &&
        document.getElementById('view').dataset.rendered === location.hash);
    check(new RegExp(`of ${SEED_RUNS}\\b`).test(await text('.pager-status')), `model lenet-11-821: ${SEED_RUNS} runs`);
    await page.fill('#f-backend', 'cpu64');
    await page.press('#f-backend', 'Enter');
    await page.waitForFunction(() => location.hash.includes('backend=cpu64') &&
        document.getElementById('view').dataset.rendered === location.hash);
    check(await page.locator('table.runs tbody tr').count() === 1 &&
          await page.locator(`tr[data-run="${ids.cpu64}"]`).count() === 1, 'backend cpu64: the cpu64 run alone');
    await open('#/runs?model=bulk');
    const t0 = Date.now();
    await page.click('.pager a:has-text("Last")');
    await page.waitForFunction(() => location.hash.includes('offset=') &&
        document.getElementById('view').dataset.rendered === location.hash);
    const ms = Date.now() - t0;
    const status = await text('.pager-status');
    check(status.startsWith('Runs 9,951–10,000 of 10,000'), `the last page of 10,000: "${status}"`);
    check(ms < 3000, `the last page of 10,000 runs rendered in ${ms} ms`);
    const oldest = await page.locator('table.runs tbody tr').last().getAttribute('data-run');
    check(oldest === '00000000-0000-4000-8000-000000000000', 'the oldest run is last');
    // The daemon filters knobs: tf32=true holds for every third of the 10,000 (i % 3 == 0).
    await open('#/runs?model=bulk&knob=tf32%3Dtrue');
    const tf32 = await text('.pager-status');
    check(tf32.includes('of 3,334'), `knob tf32=true: 3,334 of the 10,000 bulk runs ("${tf32}")`);
});

await step('runs: uploaded strings that are HTML stay text', async () => {
    await open('#/runs?limit=100');
    const gpuCells = await page.locator('table.runs td', {hasText: XSS}).count();
    // three runs have the GPU name, and one of them the model name too
    check(gpuCells === 4, `the model and GPU name ${XSS} are shown as text (${gpuCells} cells)`);
    const row = page.locator(`table.runs tbody tr[data-run="${process.env.RUN_XSS_NAME}"]`);
    check((await row.count()) === 1 && (await row.innerText()).includes(XSS),
          `the run of the model named ${XSS} is listed with its name as text`);
    check(await page.locator('table.runs td', {hasText: '<b>host</b>'}).count() === 3, 'the host <b>host</b> is text in its three runs');
    const injected = await page.evaluate(() => ({
        scripts: document.scripts.length,
        markup: document.querySelectorAll('main script, main b, main img').length,
    }));
    check(injected.scripts === 2 && injected.markup === 0, // theme.js and app.js
          `no element was made from the strings (scripts ${injected.scripts}, in main ${injected.markup})`);
});

await step('keyboard: the main controls are reached and used with keys alone', async () => {
    await open('#/runs?model=lenet-11-821');
    await page.evaluate(() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); });
    const reached = new Set();
    const seen = [];
    for (let i = 0; i < 140; i++) {
        await page.keyboard.press('Tab');
        const f = await page.evaluate(() => {
            const e = document.activeElement;
            // A date field's last stop is Chromium's own calendar button, inside the field,
            // which draws its own ring: the field itself then has no :focus.
            const vis = e && (getComputedStyle(e).outlineStyle !== 'none' ||
                              (e.matches('input[type=date]') && !e.matches(':focus')));
            return e ? {tag: e.tagName.toLowerCase(), id: e.id, name: e.getAttribute('name'),
                        text: (e.textContent || '').trim().slice(0, 30), nav: e.dataset.nav || '',
                        outline: vis} : null;
        });
        if (!f || f.tag === 'body') // past the last control focus leaves the page for a moment
            continue;
        seen.push(f);
        reached.add(f.nav ? 'nav:' + f.nav : f.id ? '#' + f.id : f.name ? 'name:' + f.name : f.tag + ':' + f.text);
    }
    for (const want of ['#skip-link', 'nav:runs', 'nav:diff', 'nav:matrix', 'nav:history', '#f-model',
                        '#f-q', '#f-knob', '#f-backend', '#f-since', 'name:pick-a', 'name:pick-b',
                        'name:pick-truth'])
        check(reached.has(want), `Tab reaches ${want}`);
    const bare = seen.filter((f) => !f.outline).map((f) => f.id || f.name || f.tag + ':' + f.text);
    check(bare.length === 0, `every focused control shows a focus outline${bare.length ? ' (not: ' + bare.join(', ') + ')' : ''}`);
    // Pick a = cpu, b = tf32, truth = cpu64 with arrows and space, then Compare with Enter.
    async function pick(group, id) {
        await page.focus(`input[name="${group}"]`);
        for (let i = 0; i < 2 * SEED_RUNS; i++) {
            if (await page.evaluate(() => document.activeElement.value) === id)
                break;
            await page.keyboard.press('ArrowDown');
        }
        await page.keyboard.press('Space');
        check(await page.evaluate((g) => (document.querySelector(`input[name="${g}"]:checked`) || {}).value, group) === id,
              `${group} picked with the keyboard`);
    }
    await pick('pick-a', ids.cpu);
    await pick('pick-b', ids.tf32);
    await pick('pick-truth', ids.cpu64);
    for (let i = 0; i < 40; i++) {
        await page.keyboard.press('Shift+Tab');
        if (await page.evaluate(() => document.activeElement.textContent === 'Compare'))
            break;
    }
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => location.hash.startsWith('#/diff'));
    const hash = await page.evaluate(() => location.hash);
    check(hash === `#/diff?a=${ids.cpu}&b=${ids.tf32}&truth=${ids.cpu64}`, `Compare opens ${hash}`);
});

const SEED_DIFF = `#/diff?a=${ids.cpu}&b=${ids.tf32}&truth=${ids.cpu64}`;

await step('diff: fc1 is the first divergent layer, relu4 (Floor) the amplifier', async () => {
    await open(SEED_DIFF);
    const first = await text('#first-divergent');
    check(first === 'fc1', `the summary names fc1 as the first divergent layer ("${first}")`);
    const amps = await text('#amplifiers');
    check(/relu4 \(Floor\)/.test(amps), `the amplifiers are "${amps.replace(/\n/g, ' ')}"`);
    check(await page.locator('tr.first-divergent[data-layer="fc1"]').count() === 1, 'the table marks fc1 first divergent');
    check(await page.locator('tr.amplifier[data-layer="relu4"]').count() === 1, 'the table marks relu4 as amplifier');
    check(await page.locator('tr.first-divergent, tr.amplifier').count() === 2, 'and no other layer');
    const callouts = await page.locator('svg.layer-chart .callout').allTextContents();
    check(callouts.length === 2 && callouts[0] === 'first divergent' && callouts[1].startsWith('amplifier'),
          `the chart marks them (${callouts.join(', ')})`);
    check(await page.locator('svg.layer-chart polygon.band').count() === 1, 'the chart draws the noise band');
    const rows = await page.locator('#layer-table tbody tr[data-layer]').count();
    const fold = await page.locator('#layer-table tbody tr.fold').getAttribute('data-to');
    check(rows === 5 && fold === '7', `the table folds the 7 identical layers conv1 … flatten and shows the other 5 (${rows}, fold to ${fold})`);
    await page.click('#layer-table tr.fold button');
    check(await page.locator('#layer-table tbody tr[data-layer]').count() === 12, 'unfolded: the 12 layers');
    const expl = await text('#explanation');
    check(expl.includes('fc1') && expl.includes('relu4'), 'the explanation is shown');
    const differs = await page.locator('#env-table tr.differs th').allInnerTexts();
    check(differs.includes('knobs.emulate'), `the environments mark knobs.emulate as differing (${differs.join(', ')})`);
    await shot('diff');
    await page.evaluate(() => window.scrollTo(0, 0));
    await shot('diff-top', false); // the first screen: docs/img/diff-view.png is a copy
    await axe('the diff view');
    // The chart's palette against its background: text 4.5:1, marks 3:1 (WCAG 1.4.3, 1.4.11),
    // and divergent and amplified marks apart in lightness, not only in hue.
    const c = await chartContrast();
    check(c.low.length === 0, `the chart's colours have enough contrast${c.low.length ? ': ' + c.low.join('; ') : ''}`);
    check(c.divAmp >= 3, `divergent and amplified marks differ by ${c.divAmp.toFixed(2)}:1 in luminance (at least 3:1)`);
    await page.click('.segmented a:has-text("ULPs at")');
    await page.waitForFunction(() => location.hash.includes('metric=ulp') &&
        document.getElementById('view').dataset.rendered === location.hash);
    check((await page.locator('svg.layer-chart title').first().textContent()).startsWith('ULPs at the layer\'s scale'),
          'the chart switches to ULPs at the layer\'s scale');
}, {needs: 'server2: GET /api/v1/diff'});

await step('matrix: the three seed runs among the devices; a cell opens that diff', async () => {
    await open('#/matrix/lenet-11-821');
    const runsInCells = await page.evaluate(() => [...new Set([...document.querySelectorAll('#matrix td.cell[data-a]')]
        .map((td) => td.dataset.a))]);
    for (const k of ['cpu', 'cpu64', 'tf32', 'gpuNew', 'pt', 'pd'])
        check(runsInCells.includes(ids[k]), `the matrix holds the ${k} run`);
    check(!runsInCells.includes(env.RUN_REPLAY), 'and not the replay (the tf32 run is its device\'s newest)');
    const n = await page.locator('#matrix tbody tr').count();
    check(n === 6 && await page.locator('#matrix td.cell').count() === 36,
          `6 x 6 cells: cpu, cpu64, cpu emulate=tf32:gemm, the GPU device's newest run and the two ` +
          `framework dumps (${n} rows)`);
    await shot('matrix');
    await axe('the matrix view');
    const cell = page.locator(`#matrix td.cell[data-a="${ids.cpu}"][data-b="${ids.tf32}"] a`);
    await cell.focus();
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => location.hash.startsWith('#/diff') &&
        document.getElementById('view').dataset.rendered === location.hash);
    check(await text('#first-divergent') === 'fc1', 'the cell cpu x tf32 opens their diff: fc1 first divergent');
}, {needs: 'server2: GET /api/v1/models/{m}/matrix and /api/v1/diff'});

await step('history: a layer against the baseline over time, per device', async () => {
    await open('#/history/lenet-11-821?layer=fc1');
    check(await page.locator('svg.history-chart').count() === 1, 'the chart is drawn');
    const table = await text('#history-table');
    for (const k of ['cpu64', 'tf32'])
        check(table.includes(short(ids[k])), `the ${k} run is a point`);
    const changes = await text('#changes');
    check(changes.includes('driver 550.54.15 → 560.35.03') && changes.includes('cuDNN 9.1.0 → 9.19.0') &&
          changes.includes('cuda NVIDIA H200'), `the upgrade is listed: "${changes.replace(/\n/g, ' ')}"`);
    check(await page.locator('svg.history-chart .change-line').count() === 1, 'and marked on the chart');
    await page.focus('svg.history-chart a.point-link');
    check(await page.evaluate(() => document.querySelector('svg.history-chart .tip').getAttribute('visibility')) === 'visible',
          'a focused point shows its values');
    check(await page.locator('.msg-error').count() === 0, 'no error');
    await shot('history');
    await axe('the history view');
}, {needs: 'server2: GET /api/v1/models/{m}/history'});

await step('layer drill-down: histogram, values side by side, downloads equal the uploads', async () => {
    await open(`#/layer?a=${ids.cpu}&b=${ids.tf32}&truth=${ids.cpu64}&name=fc1`);
    await page.waitForSelector('#values-table', {timeout: 30000});
    check(await page.locator('svg.hist-chart rect.bar').count() > 10, 'the ULP histogram has its bins');
    const where = await text('#where');
    check(/element \[\d+, \d+\] of shape \[1000, 120\]/.test(where), `where the largest difference sits: "${where.slice(0, 90)}…"`);
    // The value the page read from the .npy equals numpy's bytes at that index.
    const {rec, file} = layerFile(env.BUNDLE_CPU, 'fc1');
    const data = npyData(fs.readFileSync(file));
    const idx = Number(await page.locator('#values-table tr.max-row').getAttribute('data-index'));
    const shown = Number(await page.locator('#values-table tr.max-row td').first().innerText());
    const stored = data.readFloatLE(idx * 4);
    check(Math.fround(shown) === stored, `value a at flat index ${idx}: page ${shown}, file ${stored}`);
    for (const [side, bundle] of [['a', env.BUNDLE_CPU], ['b', env.BUNDLE_TF32]]) {
        const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#download-' + side)]);
        const got = fs.readFileSync(await dl.path());
        const want = layerFile(bundle, 'fc1');
        check(got.equals(fs.readFileSync(want.file)), `download ${side} (${dl.suggestedFilename()}) is byte for byte the uploaded .npy`);
        check(sha256(npyData(got)) === want.rec.sha256, `its data hashes to the run's sha256 ${want.rec.sha256.slice(0, 12)}…`);
    }
    void rec;
    await shot('layer');
    await axe('the layer view');
}, {needs: 'server2: GET /api/v1/diff'});

await step('diff of the runs whose strings are HTML: the environments show them as text', async () => {
    await open(`#/diff?a=${ids.xss1}&b=${ids.xss2}`);
    const envText = await text('#env-table');
    check(envText.includes(XSS), 'env.gpu_name <script>alert(1)</script> is text');
    check(envText.includes('<img src=x onerror=alert(2)>'), 'labels.note <img src=x onerror=alert(2)> is text');
    check(await page.evaluate(() => document.querySelectorAll('main script, main img, main b').length) === 0,
          'no element was made from them');
    await shot('xss-diff');
}, {needs: 'server2: GET /api/v1/diff'});

await step('names from the address stay text, and unknown things say so', async () => {
    await open('#/matrix/' + encodeURIComponent('<img src=x onerror=alert(1)>'));
    check((await text('h1')).includes('<img src=x onerror=alert(1)>'), 'the model name from the URL is shown as text');
    check(await page.locator('.msg-error').count() === 1, 'with an error message from the daemon');
    await open('#/runs?model=' + encodeURIComponent(XSS));
    check(await page.locator('table.runs tbody tr').count() === 1,
          `the runs of the model named ${XSS} are found by name (the filter is text too)`);
    await open('#/matrix/' + encodeURIComponent(XSS));
    await page.waitForSelector('table.matrix, .msg-error');
    check((await text('h1')).includes(XSS), `the matrix of the model named ${XSS} has it as text in its title`);
    check(await page.locator('table.matrix').count() === 1, 'and shows its one device');
    await open('#/history/' + encodeURIComponent(XSS));
    check((await text('h1')).includes(XSS), 'history: the name is text');
    check(await page.evaluate(() => document.querySelectorAll('main script, main img').length) === 0,
          'no element was made from the address');
    await shot('escaping');
}, {httpErrors: true});

await truthSteps();

await jobsSteps();

await scaleSteps();

await depthSteps();

await widthSteps();

await faultSteps();

await step('nothing was asked of another origin, and no dialog ever opened', async () => {
    const foreign = foreignRequests();
    check(foreign.length === 0, `requests only to gpudiffd${foreign.length ? ': ' + foreign.join(', ') : ''}`);
});

await finish();
