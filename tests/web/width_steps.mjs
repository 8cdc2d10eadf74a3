// tests/web/width_steps.mjs: the dashboard at fleet width and beyond two runs (issue 26 items
// 3 to 5), on the data dashboard.sh seeded: the matrix of 50 devices (computed row by row with
// progress, then cached: X-Cache hit, a reopen timed), sorted, clustered by distance and
// filtered by label, driver and knob, its devices named by what differs between them, a NaN
// device and its bitwise twin marked, the absolute colour scale checked cell against the
// daemon's values; the overlay of runs against one truth opened from the run list's check
// boxes; the devices-by-layers heatmap; the run list's standing columns (first divergent
// layer, error against the truth), its page sort, groups and tags. Every expected value is
// read from the daemon's own answer.
import {URL0, page, step, check, open, timedLoad, shot, axe, text} from './harness.mjs';

const env = process.env;
const STALL_MS = 180000;
// scale.js's steps, for checking a cell's colour independently of the page
const STEPS = ['#fde725', '#a0da39', '#4ac16d', '#1fa187', '#277f8e', '#365c8d', '#46327e', '#440154'];
const rgb = (hex) => `rgb(${[1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)).join(', ')})`;

async function api(path) {
    const r = await page.request.get(URL0 + path, {timeout: 0});
    check(r.ok(), `GET ${path}: ${r.status()}`);
    return r.json();
}

// Opens a view that computes with progress and waits as long as the progress moves.
async function openFollowing(hash) {
    await page.goto('about:blank');
    await page.goto(URL0 + '/' + hash);
    let last = null, since = Date.now();
    for (;;) {
        const st = await page.evaluate(() => {
            const v = document.getElementById('view');
            const bar = document.getElementById('matrix-progress');
            return {done: v.dataset.rendered === location.hash && !v.hasAttribute('aria-busy'),
                    at: bar ? bar.value : null};
        });
        if (st.done)
            return;
        if (st.at !== last) {
            last = st.at;
            since = Date.now();
        }
        check(Date.now() - since < STALL_MS, `${hash}: no progress for ${STALL_MS / 1000} s (at ${last})`);
        await page.waitForTimeout(250);
    }
}

const rowOrder = () => page.evaluate(() => [...document.querySelectorAll('#matrix tbody th.row-head')]
    .map((th) => Number(th.dataset.row)));

export async function widthSteps() {
    await step('matrix of 50 devices: compact, named by what differs, NaN marked, absolute scale, cached', async () => {
        await openFollowing('#/matrix/fleet-50');
        const m = await api('/api/v1/matrix?model=fleet-50');
        const n = m.devices.length;
        check(n === 50 && await page.locator('#matrix td.cell').count() === 2500, '50 x 50 cells');
        check(await page.locator('#matrix td.cell.pending').count() === 0, 'every cell computed');
        console.log('    progress line: ' + (await text('#matrix-progress-text')).trim());
        const wide = await page.evaluate(() => document.querySelector('#matrix').getBoundingClientRect().width);
        check(wide <= 1400, `all 50 columns fit 1,400 pixels (${Math.round(wide)} px)`);
        // Names: what differs between devices, not numbers.
        const heads = await page.locator('#matrix thead th.col-head .head-text').allTextContents();
        check(heads.every((t) => !/^\d+$/.test(t)) && new Set(heads).size >= 45,
              `column heads name the devices (${new Set(heads).size} distinct: ${heads.slice(0, 2).join(' | ')})`);
        check(heads.every((t) => !t.startsWith('cuda NVIDIA')), 'without what all share (no "NVIDIA" on every head)');
        // The NaN device and its twin: the daemon says identical and 0; the page says NaN.
        const i48 = m.devices.findIndex((d) => d.run === env.RUN_FLEET48);
        const i49 = m.devices.findIndex((d) => d.run === env.RUN_FLEET49);
        const twin = m.cells[i48][i49];
        check(twin.err === 0 && twin.verdict === 'identical' && m.devices[i48].nonfinite.nan > 0,
              `the daemon: the twins are identical, err 0, device 48's output has ${m.devices[i48].nonfinite.nan} NaN`);
        const cell = page.locator(`#matrix td.cell[data-a="${env.RUN_FLEET48}"][data-b="${env.RUN_FLEET49}"]`);
        check(/nonfinite-cell/.test(await cell.getAttribute('class')) && (await cell.innerText()).includes('NaN') &&
              (await cell.locator('a').getAttribute('aria-label')).includes('NaN'),
              'their cell is marked NaN, not "0" on white');
        check(await cell.evaluate((td) => getComputedStyle(td).backgroundColor) === 'rgb(220, 38, 38)',
              'in the NaN-or-Inf colour');
        // The absolute scale: a cell's colour is its error's decade, whatever the others are.
        let checked = 0;
        for (let i = 0; i < n && checked < 40; i += 7)
            for (let j = 0; j < n && checked < 40; j += 5) {
                const c = m.cells[i][j];
                if (i === j || !c || !(c.err > 0) || c.verdict === 'nonfinite' || m.devices[i].nonfinite.nan ||
                    m.devices[j].nonfinite.nan)
                    continue;
                const step = Math.max(0, Math.min(7, Math.floor(Math.log10(c.err) + 8)));
                const got = await page.locator(`#matrix td.cell[data-a="${c.a}"][data-b="${c.b}"]`)
                    .evaluate((td) => getComputedStyle(td).backgroundColor);
                check(got === rgb(STEPS[step]), `cell ${i},${j}: error ${c.err} is step ${step} (${got})`);
                checked++;
            }
        check(checked >= 20, `${checked} cells' colours are their decade's`);
        check(await page.locator('.scale-legend li').count() === 11 &&
              (await text('.scale-legend')).includes('bits agree'), 'the legend: 8 decades with their bits, 0, NaN, not comparable');
        // Clustered: the twins (distance 0) stand together; by distance to one device: it first.
        await page.selectOption('#m-sort', 'cluster');
        const clustered = await rowOrder();
        check(Math.abs(clustered.indexOf(i48) - clustered.indexOf(i49)) === 1,
              `clustered by distance, the twins are neighbours (rows ${clustered.indexOf(i48)} and ${clustered.indexOf(i49)})`);
        check(await page.evaluate(() => location.hash.includes('sort=cluster')), 'and the link keeps the order');
        await page.click(`#matrix thead th.col-head[data-col="7"] .head-sort`);
        const byDistance = await rowOrder();
        check(byDistance[0] === 7, `a head's button orders the rows by distance to that device (first: ${byDistance[0]})`);
        // Filters by driver, label, knob: the devices the daemon says have them.
        await page.selectOption('#m-driver', '560.35.03');
        const want = m.devices.filter((d) => d.env.driver === '560.35.03').length;
        check(await page.locator('#matrix tbody tr').count() === want, `driver 560.35.03: ${want} devices`);
        await page.selectOption('#m-driver', '');
        await page.selectOption('#m-knob', 'tf32=true');
        const tf32 = m.devices.filter((d) => d.knobs && d.knobs.tf32 === true).length;
        check(await page.locator('#matrix tbody tr').count() === tf32 && tf32 > 0, `knob tf32=true: ${tf32} devices`);
        await page.selectOption('#m-knob', '');
        await page.selectOption('#m-label', 'rack=r3');
        const r3 = m.devices.filter((d) => d.labels && d.labels.rack === 'r3').length;
        check(await page.locator('#matrix tbody tr').count() === r3 && r3 > 0, `label rack=r3: ${r3} devices`);
        await page.selectOption('#m-label', '');
        await page.focus('#matrix thead th.col-head[data-col="7"]');
        const after = await page.evaluate(() => getComputedStyle(document.activeElement, '::after').content);
        check(after.includes(m.devices[7].key), `a focused head shows the whole device key (${after.slice(0, 70)})`);
        await page.check('#m-values');
        const values = await page.locator('#matrix td.cell .cell-err').allInnerTexts();
        check(values.length === 2450, `"Values in the cells": each of the 2,450 off-diagonal cells writes its value`);
        await shot('matrix-50', false);
        const resp = await page.request.get(`${URL0}/api/v1/matrix?model=fleet-50`);
        check(resp.headers()['x-cache'] === 'hit', 'the daemon serves the whole matrix from its cache (X-Cache: hit)');
        const ms = await timedLoad('#/matrix/fleet-50', 'matrix');
        console.log(`    timing: the matrix of 50 devices, reopened: ${ms.toFixed(0)} ms`);
        check(ms < 5000, 'a reopen is immediate (under 5 s here, a shared machine)');
        await axe('the matrix of 50 devices');
    }, {needs: 'GET /api/v1/matrix ?compute=none, ?row='});

    await step('overlay: runs checked in the list, against the truth the daemon finds', async () => {
        await open('#/runs?model=big-1000');
        await page.waitForSelector('table.runs[data-standing="done"]', {timeout: 120000});
        for (const id of [env.RUN_BIG_CPU, env.RUN_BIG_TF32])
            await page.check(`tr[data-run="${id}"] input[name="pick-ovl"]`);
        check((await text('#overlay-note')).includes(env.RUN_BIG_CPU64.slice(0, 8)),
              `the truth is the model's cpu64 run ("${await text('#overlay-note')}")`);
        await page.click('#overlay-selected');
        await page.waitForFunction(() => location.hash.startsWith('#/overlay') &&
            document.getElementById('view').dataset.rendered === location.hash, null, {timeout: 120000});
        const ov = await api(`/api/v1/overlay?truth=${env.RUN_BIG_CPU64}&runs=${env.RUN_BIG_CPU},${env.RUN_BIG_TF32}`);
        check(await page.locator('svg.overlay-chart path.series-line').count() === 2, 'one line per run');
        const tf32 = ov.series.find((sr) => sr.run.id === env.RUN_BIG_TF32);
        check(tf32.first_divergent === 'b120.gemm', 'the daemon: tf32 diverges from the truth at b120.gemm');
        check((await page.locator(`svg.overlay-chart a.point-link[data-run="${env.RUN_BIG_TF32}"]`).getAttribute('data-tip'))
            .includes('first divergent b120.gemm'), 'and the overlay marks it there');
        // The overlay's figure is the diff's: tf32 against the truth, b120.gemm.
        const d = await api(`/api/v1/diff/layers?a=${env.RUN_BIG_TF32}&b=${env.RUN_BIG_CPU64}&name=b120.gemm`);
        const k = ov.layers.indexOf('b120.gemm');
        check(Math.abs(tf32.err[k] - d.layers[0].err) <= 1e-3 * d.layers[0].err,
              `its error at b120.gemm is the diff's (${tf32.err[k]} and ${d.layers[0].err})`);
        check(await page.locator('#overlay-table tbody tr').count() === 2, 'a table of the runs');
        await shot('overlay', false);
        await axe('the overlay');
    });

    await step('heatmap: the devices of a model by its layers, against the baseline', async () => {
        await open('#/matrix/fleet-50');
        await page.click('#heatmap-link');
        await page.waitForFunction(() => location.hash.startsWith('#/heatmap') &&
            document.getElementById('view').dataset.rendered === location.hash, null, {timeout: 120000});
        const hm = await api('/api/v1/heatmap?model=fleet-50');
        check(hm.series.length === 50 && hm.layers.length === 6, 'the daemon: 50 devices by 6 layers');
        check(await page.locator('canvas#heatmap').count() === 1, 'drawn on a canvas');
        check(await page.locator('#heatmap-table tbody tr').count() === 50, 'a row per device in the table');
        const row48 = page.locator(`#heatmap-table tr[data-run="${env.RUN_FLEET48}"]`);
        check((await row48.locator('td').nth(1).innerText()) === 'nonfinite', 'the NaN device is nonfinite at its output');
        await shot('heatmap', false);
        await axe('the heatmap');
    });

    await step('runs: first divergent layer and error against the truth, page sort, groups, tags', async () => {
        await open('#/runs?model=lenet-11-821');
        await page.waitForSelector('table.runs[data-standing="done"]', {timeout: 120000});
        const st = await api(`/api/v1/standing?runs=${env.RUN_TF32},${env.RUN_CPU}&truth=auto`);
        const tf32 = st.runs.find((r) => r.run === env.RUN_TF32);
        check(tf32.truth.against === env.RUN_CPU64 && tf32.baseline.first_divergent === 'fc1',
              'the daemon: the tf32 run against the cpu64 truth, diverging from the baseline at fc1');
        check(await text(`tr[data-run="${env.RUN_TF32}"] td.first-cell`) === 'fc1', 'the first divergent layer, a column');
        const shown = await page.locator(`tr[data-run="${env.RUN_TF32}"] td.truth-cell a`).innerText();
        const fmt = (v) => (Math.abs(v) >= 1e-3 && Math.abs(v) < 1e5 ? String(Number(v.toPrecision(3)))
            : v.toExponential(2).replace('e+', 'e'));
        check(shown === fmt(tf32.truth.err), `the error against the truth, a column (${shown})`);
        await page.click('a.sort-link[data-psort="truth"]');
        await page.waitForFunction(() => location.hash.includes('psort=truth') &&
            document.querySelector('table.runs[data-standing="done"]'), null, {timeout: 60000});
        const errs = await page.evaluate(() => [...document.querySelectorAll('table.runs td.truth-cell')]
            .map((td) => (td.dataset.err === undefined || td.dataset.err === '' ? Infinity : Number(td.dataset.err))));
        check(errs.every((v, i) => i === 0 || errs[i - 1] <= v), `the page in order of error against the truth (${errs.slice(0, 4).join(', ')})`);
        await page.selectOption('#f-group', 'device');
        await page.waitForFunction(() => location.hash.includes('group=device') &&
            document.getElementById('view').dataset.rendered === location.hash);
        const devices = new Set((await api('/api/v1/runs?model=lenet-11-821')).runs.map((r) => r.device));
        check(await page.locator('table.runs tr.group-row').count() === devices.size,
              `grouped by device: ${devices.size} groups`);
        await open('#/runs?model=fleet-50');
        const tag = page.locator(`tr[data-run="${env.RUN_FLEET01_UP3}"] a.tag`);
        check(await tag.innerText() === 'rack=r1', 'labels are tags');
        await tag.click();
        await page.waitForFunction(() => location.hash.includes('label=rack%3Dr1') &&
            document.getElementById('view').dataset.rendered === location.hash);
        const r1 = await api('/api/v1/runs?model=fleet-50&label=rack%3Dr1');
        check((await text('.pager-status')).includes(`of ${r1.total}`), `a tag filters by it: ${r1.total} runs`);
        await shot('runs-standing', false);
        await axe('the runs with their standing');
    }, {needs: 'GET /api/v1/standing'});
}
