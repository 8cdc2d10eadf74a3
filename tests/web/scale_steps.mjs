// tests/web/scale_steps.mjs: the dashboard at the sizes real models and fleets have (issue
// 13), on the data dashboard.sh seeded: the 1,000-layer model's diff (jump, search, the page
// above the table, the bug report), its graph's time, the knob filter over 10,000 runs, the
// layer view of an amplifier, sweeps, phones (390x844) and dark mode. Issue 26's depth and
// width (2,000 layers, the grouped graph, the 50-device matrix, overlays) are in
// depth_steps.mjs and width_steps.mjs. Each
// view's time comes from the page's own performance measures ("gd-view NAME"); GD_WEB_BENCH=N
// repeats each N times and prints the median.
import {URL0, page, step, check, open, timedLoad, shot, axe, text, downloaded, chartContrast}
    from './harness.mjs';

const env = process.env;
const big = {a: env.RUN_BIG_CPU, b: env.RUN_BIG_TF32, truth: env.RUN_BIG_CPU64};
const BIG_DIFF = `#/diff?a=${big.a}&b=${big.b}&truth=${big.truth}`;
const BIG_GRAPH = `#/graph?a=${big.a}&b=${big.b}&truth=${big.truth}`;
const REPEAT = Math.max(1, Number(env.GD_WEB_BENCH) || 1);
export const timings = [];

// Loads hash fresh REPEAT times; the median of its "gd-view NAME" measure, printed.
async function timing(what, hash, name, limitMs) {
    const ms = [];
    for (let i = 0; i < REPEAT; i++)
        ms.push(await timedLoad(hash, name));
    ms.sort((x, y) => x - y);
    const median = ms[Math.floor(ms.length / 2)];
    console.log(`    timing: ${what}: ${median.toFixed(0)} ms (median of ${ms.length}: ` +
                `${ms.map((m) => m.toFixed(0)).join(', ')})`);
    timings.push({what, median, all: ms});
    // A generous bound (a shared 2-core machine, a sanitized daemon): it catches a view that
    // got much slower; the figures themselves go to docs/PERFORMANCE.md.
    check(median < limitMs, `${what} within ${limitMs} ms`);
    return median;
}

const inView = (sel) => page.evaluate((s) => {
    const el = document.querySelector(s);
    if (!el)
        return false;
    const r = el.getBoundingClientRect();
    return r.top >= 0 && r.bottom <= innerHeight && r.height > 0;
}, sel);

async function phones(name, hash, {wait} = {}) {
    await page.setViewportSize({width: 390, height: 844});
    await open(hash, {fresh: true});
    if (wait)
        await page.waitForSelector(wait);
    // Text in charts stays readable: an SVG is drawn at its own size (viewBox = pixels).
    const scale = await page.evaluate(() => [...document.querySelectorAll('svg.chart, svg.overview')]
        .map((svg) => svg.getBoundingClientRect().width / svg.viewBox.baseVal.width));
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    await shot(name + '-390x844', false);
    await page.setViewportSize({width: 1400, height: 1000});
    return {scale, wide};
}

export async function scaleSteps() {
    await step('diff of 1,000 layers: the first screen, jump to the first divergent, search', async () => {
        await open(BIG_DIFF, {fresh: true});
        check(await text('#first-divergent') === 'b120.gemm', 'the summary names b120.gemm, layer 600, first divergent');
        check((await text('#amplifiers')).includes('b150.floor (Floor)'), 'and b150.floor (Floor) as the amplifier');
        const tableTop = await page.evaluate(() => document.querySelector('#layer-table').getBoundingClientRect().top + scrollY);
        check(tableTop <= 2 * 1000, `the page above the table is ${Math.round(tableTop)} px, within two screens of 1,000`);
        check(await page.locator('svg.overview path.ov-bar').count() >= 3, 'the overview strip draws every layer by verdict');
        const range = await text('#chart-range');
        check(/Layers 576–725 of 1,000/.test(range), `the chart starts at the first divergent layer's stretch ("${range}")`);
        const labels = await page.locator('svg.layer-chart text.layer-name').count();
        check(labels > 10 && labels < 80, `labels are thinned to what fits: ${labels} of 150`);
        check(await page.locator('svg.layer-chart .callout.first').count() === 1, 'the chart marks the first divergent layer');
        check(await page.locator('svg.layer-chart polyline.truth-a').count() === 1 &&
              await page.locator('svg.layer-chart polyline.truth-b').count() === 1,
              'with a truth run, a against the truth and b against the truth are lines of their own');
        await shot('diff-1000-top', false);
        check(!(await inView('tr[data-layer="b120.gemm"]')), 'b120.gemm is not on the first screen');
        await page.click('#jump-first');
        await page.waitForTimeout(200);
        check(await inView('tr[data-layer="b120.gemm"]'), '"Jump to first divergent" puts its row on screen');
        check(await page.evaluate(() => document.activeElement.closest('tr') &&
                                        document.activeElement.closest('tr').dataset.layer) === 'b120.gemm',
              'and gives its link the keyboard focus');
        await shot('diff-1000-jump', false);
        // Keyboard: the brush moves the chart's range.
        await page.focus('svg.overview .brush');
        await page.keyboard.press('Shift+ArrowRight');
        await page.keyboard.press('ArrowRight');
        const moved = await text('#chart-range');
        check(moved !== range && /from=\d+&to=\d+/.test(await page.evaluate(() => location.hash)),
              `the brush moves with the keyboard and the range goes into the link ("${moved}")`);
        // A point's values on keyboard focus, not only on hover.
        await page.focus('svg.layer-chart a.point-link');
        const tip = await page.evaluate(() => {
            const t = document.querySelector('svg.layer-chart .tip');
            return t.getAttribute('visibility') + ': ' + t.textContent;
        });
        check(tip.startsWith('visible: b1') && tip.includes('error relative to max |b|'),
              `a focused point shows its values ("${tip.slice(0, 80)}")`);
        await page.fill('#layer-search', 'b123.elu');
        await page.waitForFunction(() => document.querySelectorAll('#layer-table tbody tr[data-layer]').length === 1);
        check(await page.locator('#layer-table tbody tr[data-layer="b123.elu"]').count() === 1,
              'search finds b123.elu by name, alone');
        check(await page.evaluate(() => location.hash.includes('q=b123.elu')), 'and the link keeps the search');
        await page.fill('#layer-search', '');
        await page.selectOption('#layer-verdict', 'amplified');
        // The cleared search (debounced) and the filter redraw the table in turn, each from its
        // pages: wait for the state itself, one row that is b150.floor marked an amplifier, and
        // fail only when it never comes.
        const amplified = await page.waitForFunction(() => {
            const rows = document.querySelectorAll('#layer-table tbody tr[data-layer]');
            return rows.length === 1 && rows[0].dataset.layer === 'b150.floor' &&
                rows[0].classList.contains('amplifier');
        }, null, {timeout: 15000}).then(() => true, () => false);
        check(amplified, 'the verdict filter "amplified" finds b150.floor');
        await axe('the 1,000-layer diff');
        // The same link opens the same: range and filter.
        const link = await page.evaluate(() => location.hash);
        await open(link, {fresh: true});
        check(await page.locator('#layer-table tbody tr[data-layer]').count() === 1 &&
              (await text('#chart-range')) === moved, 'the copied link opens the same range and filter');
        await timing('the 1,000-layer diff view, diff cached', BIG_DIFF, 'diff', 5000);
    }, {needs: 'GET /api/v1/diff of 1,000 layers'});

    await step('diff of 1,000 layers: the bug report, CSV, JSON and SVG', async () => {
        await open(BIG_DIFF, {fresh: true});
        const diff = await (await page.request.get(`${URL0}/api/v1/diff?a=${big.a}&b=${big.b}&truth=${big.truth}`)).json();
        const md = (await downloaded('#download-report')).data.toString('utf8');
        check(md.includes('**First divergent layer:** `b120.gemm` (Gemm), layer 600 of 1000'),
              'the bug report names the first divergent layer');
        check(md.includes(diff.explanation) && md.includes('**Cause**'), 'it holds the cause, the daemon\'s explanation');
        check(md.includes('`b150.floor` (Floor)'), 'and the amplifier');
        check(md.includes('**Who is right:** Run a is right against the truth (cpu64)') &&
              !/closer to the truth/.test(md), 'and who is right (not who is "closer")');
        check(/gpudiff-agent run .*--emulate tf32.* --out run-b/.test(md) &&
              md.includes('gpudiff-agent diff run-a run-b --truth run-truth'),
              'and the commands that reproduce the runs (as the agent recorded them) and the diff');
        check(/\| knobs \| .* \| emulate=tf32:gemm \|/.test(md), 'the environments table holds the knobs');
        await page.click('#copy-report');
        await page.waitForFunction(() => /copied|refused/.test(document.querySelector('#copy-report').parentElement.textContent));
        const clip = await page.evaluate(() => navigator.clipboard.readText());
        check(clip === md.replace(/Dashboard: \S+/, 'Dashboard: ' + clip.match(/Dashboard: (\S+)/)[1]) &&
              clip.includes('`b120.gemm`'), '"Copy as bug report" puts the same Markdown on the clipboard');
        const csv = (await downloaded('.table-tools [data-export="csv"]')).data.toString('utf8').trim().split('\r\n');
        check(csv.length === 1001 && csv[0].startsWith('#,layer,op,verdict') && csv[601].startsWith('600,b120.gemm,Gemm,divergent'),
              `the layer table as CSV: a header and 1,000 rows, folded ones too (${csv.length} lines)`);
        const json = JSON.parse((await downloaded('.table-tools [data-export="json"]')).data);
        check(json.length === 1000 && json[600].name === 'b120.gemm', 'and as JSON');
        const svg = (await downloaded('.chart-box [data-export="svg"]')).data.toString('utf8');
        check(svg.startsWith('<?xml') && svg.includes('<svg') && svg.includes('fill="') && !svg.includes('class="tip"'),
              'the chart as a standalone SVG file');
        await page.click('[data-share="link"]');
        check(await page.evaluate(() => navigator.clipboard.readText()) === await page.evaluate(() => location.href),
              '"Copy link" copies the address');
    }, {needs: 'GET /api/v1/diff'});

    await step('graph of 1,000 layers: timed (its groups, find and minimap: depth_steps.mjs)', async () => {
        await timing('the graph view of 1,000 layers (grouped, layout in a worker included)', BIG_GRAPH, 'graph', 15000);
        console.log('    ' + (await text('#graph-stats')).split(';')[1]);
    }, {needs: 'the vendored elkjs'});

    await step('layer view: values of a, b and truth, histograms, a against b, inputs nearest the step', async () => {
        await open(`#/layer?a=${big.a}&b=${big.b}&truth=${big.truth}&name=b150.floor`, {fresh: true});
        await page.waitForSelector('#near-table');
        const heads = await page.locator('#values-table thead th').allInnerTexts();
        check(heads.join(',') === 'index,a,b,truth,a − b,ULP', `the truth's values beside a and b (${heads.join(', ')})`);
        check(await page.locator('svg.value-hist path.bar-a').count() === 1 &&
              await page.locator('svg.value-hist path.bar-b').count() === 1, 'the value histograms of a and b side by side');
        check((await text('#scatter-caption')).startsWith('All 512 values'), 'a against b, all 512 values (not sampled)');
        const near = await page.locator('#near-table tbody tr').count();
        const cap = await text('#near-table caption');
        check(near === 12 && cap.includes('nearest an integer') && /504 of 512 lie within/.test(cap),
              `Floor's inputs nearest the step: ${near} rows; "${cap.slice(0, 120)}"`);
        await shot('layer-floor');
        await axe('the layer view of an amplifier');
    }, {needs: 'GET /api/v1/ops'});

    await step('runs: the knob filter finds a run far from the first page; search; sort', async () => {
        await open('#/runs?model=bulk');
        await page.fill('#f-knob', 'conv_algo=fft_tiling');
        await page.press('#f-knob', 'Enter');
        await page.waitForFunction(() => location.hash.includes('knob=conv_algo') &&
            document.getElementById('view').dataset.rendered === location.hash);
        const rows = await page.locator('table.runs tbody tr').getAttribute('data-run');
        check(await page.locator('table.runs tbody tr').count() === 1 &&
              rows === '000004d2-0000-4000-8000-0000000004d2',
              'knob conv_algo=fft_tiling finds run 1234 alone (page 176 of 200 unfiltered)');
        await open('#/runs?model=bulk&q=h3%20batch%3D4');
        const found = await text('.pager-status');
        check(found.includes('of 625'), `search "h3 batch=4": host h3 and batch 4, 625 runs ("${found}")`);
        await open('#/runs?model=bulk&driver=560.35.03&label=team%3Dt2');
        check((await text('.pager-status')).includes('of 1,000'), 'driver 560.35.03 and label team=t2: 1,000 runs');
        await open('#/runs?model=bulk');
        await page.click('a.sort-link[data-sort="created"]');
        await page.waitForFunction(() => location.hash.includes('order=asc') &&
            document.getElementById('view').dataset.rendered === location.hash);
        check(await page.locator('table.runs tbody tr').first().getAttribute('data-run') ===
              '00000000-0000-4000-8000-000000000000', 'sorted by created, oldest first');
        // A framework's GPU dump that did not record its GPU does not read "CPU".
        await open(`#/runs?q=${env.RUN_FLEET0}`);
        const device = await page.locator(`tr[data-run="${env.RUN_FLEET0}"] td.device-cell`).innerText();
        check(device === 'GPU not recorded', `the pytorch-cuda dump without a GPU name reads "${device}"`);
        await timing('a page of 10,000 runs (the last)', '#/runs?model=bulk&offset=9950', 'runs', 3000);
        await timing('a knob filter over 10,000 runs', '#/runs?model=bulk&knob=conv_algo%3Dfft_tiling', 'runs', 3000);
    }, {needs: 'GET /api/v1/runs knob=, q=, sort='});

    await step('runs: the baseline is set from the page with an admin token', async () => {
        await open('#/runs?model=fleet-50&limit=100');
        const other = await page.locator('table.runs tbody tr').nth(3).getAttribute('data-run');
        const button = page.locator(`tr[data-run="${other}"] button.make-baseline`);
        await button.click();
        check((await page.locator(`tr[data-run="${other}"] .action-note`).innerText()).includes('admin token'),
              'without a token it says an admin token is needed');
        await page.click('.token summary');
        await page.fill('#token-input', env.ADMIN_TOKEN);
        await page.click('#token-form button[type=submit]');
        await page.waitForFunction(() => document.getElementById('view').dataset.rendered === location.hash);
        await page.locator(`tr[data-run="${other}"] button.make-baseline`).click();
        await page.locator(`tr[data-run="${other}"] button.make-baseline`).click(); // confirm
        await page.waitForSelector(`tr[data-run="${other}"] .badge.baseline`);
        const models = await (await page.request.get(`${URL0}/api/v1/models`)).json();
        check(models.models.find((m) => m.name === 'fleet-50').baseline === other, 'the daemon has the new baseline');
        // Put the first one back, for the steps after.
        await page.locator(`tr[data-run="${env.RUN_FLEET0}"] button.make-baseline`).click();
        await page.locator(`tr[data-run="${env.RUN_FLEET0}"] button.make-baseline`).click();
        await page.waitForSelector(`tr[data-run="${env.RUN_FLEET0}"] .badge.baseline`);
        await page.click('#token-clear');
        await page.click('.token summary'); // closed again, as the steps after expect it
        const back = await (await page.request.get(`${URL0}/api/v1/models`)).json();
        check(back.models.find((m) => m.name === 'fleet-50').baseline === env.RUN_FLEET0,
              'and back to the first run, with the token forgotten');
    }, {needs: 'POST /api/v1/baseline'});

    await step('diff picker: search all runs, labels show the knobs', async () => {
        await open('#/diff');
        await page.fill('#d-a', 'fft_tiling');
        await page.waitForSelector('#d-a-list li[data-run="000004d2-0000-4000-8000-0000000004d2"]');
        const opt = await text('#d-a-list li[data-run="000004d2-0000-4000-8000-0000000004d2"]');
        check(opt.includes('conv_algo=fft_tiling') && opt.includes('batch=3') && opt.includes('tf32') === false,
              `run 1234 found among 10,061, labelled with its knobs ("${opt.replace(/\n/g, ' ')}")`);
        await page.fill('#d-b', 'emulate=tf32');
        await page.waitForSelector(`#d-b-list li[data-run="${env.RUN_BIG_TF32}"]`);
        await page.keyboard.press('ArrowDown');
        const label = await text(`#d-b-list li[aria-selected="true"]`);
        check(label.includes('emulate=tf32:gemm'), `the TF32-emulated runs say so ("${label.replace(/\n/g, ' ')}")`);
        await shot('diff-picker', false);
        await axe('the diff picker');
    }, {needs: 'GET /api/v1/runs?q='});

    await step('sweeps: the list of the daemon\'s sweeps', async () => {
        await open('#/sweeps');
        const list = await (await page.request.get(`${URL0}/api/v1/sweeps`)).json();
        check(await page.locator('#sweeps-table tbody tr').count() === list.sweeps.length && list.total === 1,
              `the list has the daemon's ${list.total} sweep (truth_steps.mjs checks the sweep itself)`);
        check((await text('.pager-status')) === '1 sweep.', 'and says how many');
        await shot('sweeps', false);
        await axe('the list of sweeps');
    });

    await step('phones (390x844): every view readable, no page wider than the screen', async () => {
        const views = [['runs', '#/runs'], ['diff-seed', `#/diff?a=${env.RUN_CPU}&b=${env.RUN_TF32}&truth=${env.RUN_CPU64}`],
                       ['diff-1000', BIG_DIFF], ['graph-1000', BIG_GRAPH, 'svg.graph'], ['matrix-50', '#/matrix/fleet-50'],
                       ['layer', `#/layer?a=${big.a}&b=${big.b}&name=b120.gemm`, '#values-table'],
                       ['history', '#/history/lenet-11-821?layer=fc1'], ['sweeps', '#/sweeps'],
                       ['sweep', `#/sweeps/${env.SWEEP_ID}`, 'svg.sweep-chart']];
        for (const [name, hash, wait] of views) {
            const {scale, wide} = await phones(name, hash, {wait});
            check(scale.every((x) => x > 0.95), `${name}: charts drawn at their size (${scale.map((x) => x.toFixed(2)).join(', ') || 'none'}): 12 px text stays 12 px`);
            check(wide <= 400, `${name}: the page is ${wide} px wide (tables scroll inside it)`);
        }
    }, {httpErrors: true});

    await step('dark mode: the page follows prefers-color-scheme, with its contrasts', async () => {
        await page.emulateMedia({colorScheme: 'dark'});
        await open(`#/diff?a=${env.RUN_CPU}&b=${env.RUN_TF32}&truth=${env.RUN_CPU64}`, {fresh: true});
        const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
        check(bg === 'rgb(17, 24, 39)', `the page is dark (${bg})`);
        const c = await chartContrast();
        check(c.low.length === 0, `the chart's colours have enough contrast on the dark background${c.low.length ? ': ' + c.low.join('; ') : ''}`);
        check(c.divAmp >= 2, `divergent and amplified marks differ by ${c.divAmp.toFixed(2)}:1 in luminance`);
        await shot('diff-dark', false);
        await axe('the diff in dark mode');
        await open('#/matrix/fleet-50');
        await shot('matrix-50-dark', false);
        await page.emulateMedia({colorScheme: 'light'});
    });
}
