// tests/web/fault_steps.mjs: each fault issue 26 found, one step each, every expected value
// computed here from the daemon's answers or the bundles (each step failed on the dashboard
// before the fix: docs/PERFORMANCE.md's notes and /work/notes say how that was checked):
// the Device column tells cpu, cpu64 and emulation apart; "within noise" is never said of
// nothing compared; a run beyond its model's newest 1,000 is compared when its page is shown;
// the ULP chart counts ULPs at each layer's scale, not across sign changes; history's change
// labels never overprint and every point can be clicked; the sweep plot names its points and
// its Cause column is on screen; the daemon's explanation and the table's notes are on screen
// at 1,400 pixels; the bug report's commands keep --weights-dir; dark mode follows the system
// and has a toggle that the page keeps.
import fs from 'node:fs';
import {URL0, page, step, check, open, shot} from './harness.mjs';

const env = process.env;
const SEED = `#/diff?a=${env.RUN_CPU}&b=${env.RUN_TF32}&truth=${env.RUN_CPU64}`;

async function api(path) {
    const r = await page.request.get(URL0 + path, {timeout: 0});
    check(r.ok(), `GET ${path}: ${r.status()}`);
    return r.json();
}

// The largest difference in ULPs of a float32 layer at its scale: max |a-b| over the spacing of
// floats in [2^(e-1), 2^e), the binade of max(|a|, |b|) (computed here from the diff's fields).
function ulpsAtScale(l) {
    const e = Math.floor(Math.log2(l.scale)) + 1; // scale = m 2^e, m in [0.5, 1)
    return l.max_abs / 2 ** (e - 24);
}

const boxesOverlap = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height &&
    b.y < a.y + a.height;

export async function faultSteps() {
    await step('fault: the Device column tells cpu, cpu64 and emulated runs apart', async () => {
        await open('#/runs?model=lenet-11-821');
        const cell = (id) => page.locator(`tr[data-run="${id}"] td.device-cell`).innerText();
        const cpu = await cell(env.RUN_CPU), cpu64 = await cell(env.RUN_CPU64), tf32 = await cell(env.RUN_TF32);
        check(cpu === 'CPU, float32' && cpu64 === 'CPU, float64' && tf32 === 'CPU, emulating tf32:gemm',
              `cpu "${cpu}", cpu64 "${cpu64}", cpu --emulate tf32 "${tf32}"`);
        check(new Set([cpu, cpu64, tf32]).size === 3, 'three runs, three devices');
    });

    await step('fault: "within noise" is never said when no layer was compared', async () => {
        const a = '00000001-0000-4000-9000-000000000001', b = '00000419-0000-4000-9000-000000000419';
        const d = await api(`/api/v1/diff?a=${a}&b=${b}`);
        check(d.matched.layers === 0 && d.first_divergent === null, 'the daemon: 0 layers matched, no first divergent');
        await open(`#/diff?a=${a}&b=${b}`);
        const first = await page.locator('#first-divergent').innerText();
        check(!/within noise/.test(first) && first.startsWith('none compared'), `the summary says "${first}"`);
        const md = await page.evaluate(() => document.querySelector('#download-report') !== null);
        check(md, 'the view is drawn with its report');
    });

    await step('fault: runs beyond their model\'s newest 1,000 are compared when their page is shown', async () => {
        const before = await api('/api/v1/runs?model=deep&offset=1000&limit=50');
        check(before.runs.length === 50 && before.runs.every((r) => r.against_baseline.state === 'pending' ||
              r.against_baseline.state === 'compared'), 'the daemon lists them against the baseline');
        await open('#/runs?model=deep&offset=1000');
        await page.waitForSelector('table.runs[data-standing="done"]', {timeout: 120000});
        const texts = await page.locator('table.runs td.against').allInnerTexts();
        check(texts.length === 50 && texts.every((t) => !/not compared yet|comparing/.test(t)),
              `every row shows where it stands (${texts[0].replace(/\n/g, ' ')})`);
        const after = await api('/api/v1/runs?model=deep&offset=1000&limit=50');
        const states = after.runs.map((r) => r.against_baseline.state);
        check(states.every((st) => st === 'compared' || st === 'baseline'),
              `the daemon has compared all 50 now (${[...new Set(states)].join(', ')})`);
    }, {needs: 'GET /api/v1/standing'});

    await step('fault: the ULP chart counts ULPs at each layer\'s scale, not across sign changes', async () => {
        const d = await api(`/api/v1/diff?a=${env.RUN_CPU}&b=${env.RUN_TF32}&truth=${env.RUN_CPU64}`);
        const fc1 = d.layers.find((l) => l.name === 'fc1');
        check(fc1.max_ulp > 1e9, `the diff: fc1's raw ULP distance is ${fc1.max_ulp} (across a sign change)`);
        await open(SEED + '&metric=ulp');
        check((await page.locator('svg.layer-chart title').first().textContent()).startsWith('ULPs at the layer\'s scale'),
              'the chart is of ULPs at the layer\'s scale');
        const points = await page.locator('svg.layer-chart a.point-link').evaluateAll((as) =>
            as.map((a) => ({name: a.dataset.layer, v: Number(a.dataset.value)})));
        check(points.length >= 5, `${points.length} points`);
        for (const p of points) {
            const l = d.layers.find((x) => x.name === p.name);
            const want = l.ulp_scaled ?? ulpsAtScale(l);
            check(Math.abs(p.v - want) <= 1e-6 * want && p.v < 1e8,
                  `${p.name}: ${p.v.toPrecision(4)} ULPs at its scale (${want.toPrecision(4)}; raw ${l.max_ulp})`);
        }
    });

    await step('fault: history\'s change labels never overprint, every point can be clicked', async () => {
        await open('#/history/fleet-50?layer=output');
        const labels = await page.locator('svg.history-chart text.change-label').evaluateAll((ts) =>
            ts.map((t) => { const b = t.getBBox(); return {x: b.x, y: b.y, width: b.width, height: b.height, text: t.textContent}; }));
        check(labels.length === 3, `the three upgrades of one device are marked (${labels.length})`);
        for (let i = 0; i < labels.length; i++)
            for (let j = i + 1; j < labels.length; j++)
                check(!boxesOverlap(labels[i], labels[j]), `"${labels[i].text}" and "${labels[j].text}" do not overprint`);
        const points = await page.locator('svg.history-chart a.point-link').count();
        const hist = await api('/api/v1/history?model=fleet-50&layer=output');
        const want = hist.series.reduce((k, sr) => k + sr.points.filter((p) => p.err !== null).length, 0);
        check(points === want, `a point per run (${points} of the daemon's ${want})`);
        await page.locator('svg.history-chart').scrollIntoViewIfNeeded();
        const clickable = await page.evaluate(() => [...document.querySelectorAll('svg.history-chart a.point-link')]
            .filter((a) => {
                const r = a.querySelector('.series-pt').getBoundingClientRect();
                const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
                return hit && hit.closest('a.point-link') === a;
            }).length);
        check(clickable === points, `every point is on top at its centre (${clickable} of ${points})`);
        await shot('history-fleet', false);
    });

    await step('fault: the sweep plot names its points, its Cause column is on screen', async () => {
        const w = await api('/api/v1/sweeps/' + env.SWEEP_ID);
        await open('#/sweeps/' + env.SWEEP_ID);
        const timed = w.table.filter((r) => r.forward_ms !== null && r.vs_float64 && r.vs_float64.compared);
        for (const r of timed)
            check(await page.locator(`svg.sweep-chart text.point-name[data-setting="${r.setting}"]`).count() === 1,
                  `the point of ${r.setting} is named`);
        const names = await page.locator('svg.sweep-chart text.point-name, svg.sweep-chart text.sweep-mark')
            .evaluateAll((ts) => ts.map((t) => { const b = t.getBBox(); return {x: b.x, y: b.y, width: b.width, height: b.height}; }));
        for (let i = 0; i < names.length; i++)
            for (let j = i + 1; j < names.length; j++)
                check(!boxesOverlap(names[i], names[j]), `labels ${i} and ${j} do not overprint`);
        await page.locator('#sweep-table').scrollIntoViewIfNeeded();
        const cause = await page.evaluate(() => {
            const th = [...document.querySelectorAll('#sweep-table thead th')].find((x) => x.textContent === 'Cause');
            const r = th.getBoundingClientRect();
            return {left: r.left, right: r.right, w: document.documentElement.clientWidth};
        });
        check(cause.right <= cause.w, `the Cause column ends at ${Math.round(cause.right)} of ${cause.w} px`);
    });

    await step('fault: at 1,400 pixels the explanation and the Notes column are on screen', async () => {
        await page.setViewportSize({width: 1400, height: 1000});
        await open(SEED, {fresh: true});
        const expl = await page.evaluate(() => document.getElementById('explanation').getBoundingClientRect());
        check(expl.top >= 0 && expl.top < 1000 && expl.height > 0,
              `the daemon's explanation, naming the cause, starts on the first screen (at ${Math.round(expl.top)} px)`);
        check((await page.locator('#explanation').innerText()).includes('fc1'), 'and names fc1');
        await page.locator('#layer-table').scrollIntoViewIfNeeded();
        const notes = await page.evaluate(() => {
            const th = document.querySelector('#layer-table thead th.c-notes');
            const r = th.getBoundingClientRect();
            return {left: r.left, right: r.right, w: document.documentElement.clientWidth};
        });
        check(notes.right <= notes.w && notes.right - notes.left >= 80,
              `the Notes column lies within the screen (${Math.round(notes.left)}–${Math.round(notes.right)} of ${notes.w} px)`);
        const relu4 = await page.locator('#layer-table tr[data-layer="relu4"] td.notes').innerText();
        check(relu4.includes('values differ (sparse)'), `and shows relu4's note ("${relu4.slice(0, 50)}…")`);
        await shot('diff-1400', false);
    });

    await step('fault: the bug report\'s commands keep --weights-dir', async () => {
        await open(SEED);
        const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#download-report')]);
        const md = fs.readFileSync(await dl.path(), 'utf8');
        const runA = JSON.parse(fs.readFileSync(`${env.BUNDLE_CPU}/run.json`, 'utf8'));
        const args = runA.rerun.args;
        const dir = args[args.indexOf('--weights-dir') + 1];
        check(dir && md.includes(`--weights-dir ${dir}`), `run a's command keeps --weights-dir ${dir}`);
        const lines = md.split('\n').filter((l) => l.startsWith('gpudiff-agent run'));
        check(lines.length === 3 && lines.every((l) => l.includes('--weights-dir')), 'so do run b\'s and the truth\'s');
    });

    await step('fault: dark mode follows the system and has a toggle the page keeps', async () => {
        await page.emulateMedia({colorScheme: 'light'});
        await open('#/runs', {fresh: true});
        const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
        check(await bg() === 'rgb(255, 255, 255)', 'light with a light system');
        await page.emulateMedia({colorScheme: 'dark'});
        await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
        check(await bg() === 'rgb(17, 24, 39)', 'dark as soon as the system is (no reload)');
        check((await page.locator('#theme-toggle').innerText()) === 'Theme: system (dark)', 'the toggle says so');
        await page.click('#theme-toggle'); // system -> light
        check(await bg() === 'rgb(255, 255, 255)' && (await page.locator('#theme-toggle').innerText()) === 'Theme: light',
              'the toggle makes it light though the system is dark');
        await open('#/runs', {fresh: true});
        check(await bg() === 'rgb(255, 255, 255)', 'and the page keeps the choice after a reload');
        await page.click('#theme-toggle'); // light -> dark
        await page.emulateMedia({colorScheme: 'light'});
        check(await bg() === 'rgb(17, 24, 39)', 'chosen dark stays dark with a light system');
        await page.click('#theme-toggle'); // dark -> system
        check(await bg() === 'rgb(255, 255, 255)' && (await page.locator('#theme-toggle').innerText()) === 'Theme: system (light)',
              'and back to the system\'s');
    });
}
