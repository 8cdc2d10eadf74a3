// tests/web/truth_steps.mjs: the dashboard on the diagnosis's fields and on sweeps (issue 13's
// second pass), on the data dashboard.sh seeded and the daemon served: who is right against
// the truth (a, b, both, neither; never "closer"), partial data (a framework dump of the output
// only against cpu64: 1 of 12 layers matched, the first observed difference, the start may lie
// before it), causes only from facts (env keys one run does not record are "not recorded",
// never differences; sparse differences; an ill-conditioned op near its pole), two model
// files (a layer only one has), a replay (the cause and each layer's own error), and a sweep
// (its table, the cost-against-error plot with its marks, links, exports). Every expected
// value is read from the daemon's own answer (GET /api/v1/diff, /api/v1/sweeps/{id}) or is a
// fact of the seed case (docs/COMPARISON.md, "Rows": 9 and 15 rows off). Screenshots of each
// state at 1400x1000 and 390x844 (the sweep's at 390x844 in scale_steps.mjs, with the phones).
import {URL0, page, step, check, open, shot, axe, text, downloaded, chartContrast} from './harness.mjs';

const env = process.env;
const TOL = '&atol=0.01&rtol=0';
const SEED = `#/diff?a=${env.RUN_CPU}&b=${env.RUN_TF32}&truth=${env.RUN_CPU64}`;
const DUMP = `#/diff?a=${env.RUN_PT}&b=${env.RUN_CPU64}${TOL}`;
const DUMPS_TRUTH = `#/diff?a=${env.RUN_PT}&b=${env.RUN_PD}&truth=${env.RUN_CPU64}${TOL}`;
const WITH_REPLAY = `#/diff?a=${env.RUN_TF32}&b=${env.RUN_CPU64}`;
const REPLAY_SELF = `#/diff?a=${env.RUN_REPLAY}&b=${env.RUN_CPU64}`;
const MODELS = `#/diff?a=${env.RUN_POLE_A}&b=${env.RUN_POLE_B}`;
const SWEEP = `#/sweeps/${env.SWEEP_ID}`;

async function api(path) {
    const r = await page.request.get(URL0 + path, {timeout: 0});
    check(r.ok(), `GET ${path}: ${r.status()}`);
    return r.json();
}

const diffOf = (hash) => api('/api/v1/diff?' + hash.split('?')[1]);

// The same view at 390x844: drawn, no wider than the screen, and a screenshot of it.
async function phone(name, hash) {
    await page.setViewportSize({width: 390, height: 844});
    await open(hash, {fresh: true});
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    await shot(name + '-390x844', false);
    await page.setViewportSize({width: 1400, height: 1000});
    check(wide <= 400, `${name} at 390x844: the page is ${wide} px wide (tables scroll inside it)`);
}

// A number as the dashboard writes it (dom.js fmtNum: 3 significant digits).
const fmt = (v) => (Math.abs(v) >= 1e-3 && Math.abs(v) < 1e5 ? String(Number(v.toPrecision(3)))
    : v.toExponential(2).replace('e+', 'e'));
const cellOf = (layer, cls) => text(`#layer-table tr[data-layer="${layer}"] td.${cls}`);

export async function truthSteps() {
    await step('truth: who is right on the seed case, from truth_outcome and each layer\'s right', async () => {
        const d = await diffOf(SEED);
        check(d.truth_outcome === 'a', `the daemon: run a is right (${d.truth_outcome})`);
        await open(SEED);
        check(await text('#truth-outcome') === 'Run a is right', `the summary says "${await text('#truth-outcome')}"`);
        const fc1 = d.layers.find((l) => l.name === 'fc1');
        const words = await text('#truth-words');
        const nDiff = d.layers.filter((l) => ['divergent', 'amplified', 'nonfinite'].includes(l.verdict)).length;
        check(words.includes(`over the ${nDiff} layers where the runs differ beyond noise: run a is right at ${nDiff}, run b at 0`),
              `counted over the layers where the runs differ ("${words}")`);
        const sides = await text('ul.truth-sides');
        check(sides.includes('run a: right') && sides.includes('run b: not right') &&
              sides.includes(`${fmt(fc1.truth.err_b / fc1.truth.bound_b)}× its bound`) &&
              sides.includes(`${fc1.truth.rows_b.toLocaleString('en-US')} rows off`),
              `with how far each is at fc1 ("${sides.replace(/\n/g, ' ')}")`);
        const heads = await page.locator('#layer-table thead th').allInnerTexts();
        check(heads.includes('Right') && !heads.some((t) => /closer/i.test(t)), `the table has "Right", no "Closer" (${heads.join(', ')})`);
        const rights = await page.locator('#layer-table td.right-cell').allInnerTexts();
        const want = d.layers.filter((l) => l.verdict !== 'identical').map((l) => l.truth.right);
        check(JSON.stringify(rights) === JSON.stringify(want), `each unfolded row's right is the daemon's (${rights.join(', ')})`);
        check(await page.locator('svg.layer-chart path.wrong-mark.truth-b').count() === 1 &&
              await page.locator('svg.layer-chart path.wrong-mark.truth-a').count() === 0,
              'the chart crosses b\'s truth line where b is not right, and not a\'s');
        const md = (await downloaded('#download-report')).data.toString('utf8');
        check(md.includes('**Who is right:** Run a is right against the truth (cpu64)') && !/closer to the truth/.test(md),
              'the bug report says run a is right, and counts no "closer" layers');
        const relu4 = await cellOf('relu4', 'notes');
        check(relu4.includes('13 of 84,000 values differ (sparse)'), `relu4's sparse difference is a note ("${relu4.slice(0, 60)}")`);
        check(await text('#layer-table tr[data-layer="relu4"] td.bits') === 'sparse',
              'and its bits are not read from 13 values');
    });

    await step('partial data: a framework dump of the output against cpu64', async () => {
        const d = await diffOf(DUMP);
        check(d.first_observed === 'output' && d.start_known === false && d.matched.layers === 1,
              'the daemon: output first observed, start not known, 1 layer matched');
        await open(DUMP);
        check(await page.locator('#first-divergent').count() === 0, 'no "first divergent layer" is claimed');
        check(await text('#first-observed') === 'output', 'the summary names output as the first observed difference');
        check((await text('#matched')).startsWith('1 of 12 layers matched'), `"${await text('#matched')}"`);
        check((await text('#start-unknown')).startsWith('The start may lie before it'), 'and says the start may lie before it');
        check(await page.locator('#layer-table tr.first-observed[data-layer="output"] .mark.observed').count() === 1,
              'the table marks output "first observed"');
        const only = await page.locator('#layer-table td.notes', {hasText: 'only in run b'}).count();
        check(only === 11, `the 11 layers the dump lacks are listed as only in run b (${only})`);
        const strip = await page.locator('svg.overview').getAttribute('aria-label');
        check(strip === 'Overview of all 12 layers, 1 of them compared (grey: in one run only)' &&
              await page.locator('svg.overview path.ov-first.ov-observed').count() === 1,
              `the overview strip shows what was compared and marks the first observed ("${strip}")`);
        check(await text('#jump-first') === 'Jump to first observed', 'the jump says what it jumps to');
        // Causes only from facts: what the dump does not record is no difference.
        const differs = await page.locator('#env-table tr.differs th').allInnerTexts();
        check(JSON.stringify(differs) === '["backend"]', `only the backend differs (${differs.join(', ')})`);
        const missing = d.env_diff.filter((e) => e.status === 'not recorded').map((e) => e.key);
        for (const k of missing)
            check(await page.locator(`#env-table tr[data-key="${k}"][data-status="not recorded"]:not(.differs)`).count() === 1,
                  `${k} is "not recorded", not a difference`);
        check(await page.locator('#env-table tr[data-key="model.sha256"][data-status="not recorded"]').count() === 1,
              'a model sha256 the dump records as null is not recorded either');
        const md = (await downloaded('#download-report')).data.toString('utf8');
        check(md.includes('**First observed difference:** `output` (Gemm)') && md.includes('The start may lie before it') &&
              md.includes('**Layers matched:** 1 of 12 layers matched') && !md.includes('**First divergent layer:**'),
              'the bug report: 1 of 12 matched, the first observed difference, the start may lie before it');
        const what = md.split('\n').find((l) => l.startsWith('**What differs')) || '';
        check(what.includes('backend: pytorch_gpu → cpu64') && !what.includes('knobs.emulate'),
              `it lists as differing only what both record ("${what.slice(0, 90)}")`);
        // the keys only the cpu64 run records (knobs.dtype, knobs.threads, ...), in the daemon's order
        const unrec = md.split('\n').find((l) => l.startsWith('**Not recorded by one run** (no difference, no cause): ')) || '';
        check((unrec.split(': ')[1] || '').split(/, |\.$/).includes('knobs.dtype'),
              'and what one run does not record apart');
        check(md.includes("# run a (pytorch_gpu) is a framework's dump"), 'a dump has no command to reproduce it');
        await shot('diff-partial', false);
        await axe('a diff of partial data');
        await phone('diff-partial', DUMP);
    });

    await step('neither is right: the two framework dumps against the cpu64 truth', async () => {
        const d = await diffOf(DUMPS_TRUTH);
        check(d.truth_outcome === 'neither', `the daemon: neither (${d.truth_outcome})`);
        await open(DUMPS_TRUTH);
        check(await text('#truth-outcome') === 'Neither run is right', 'the summary: neither run is right');
        check((await text('#matched')).startsWith('1 of 12 layers matched') &&
              (await text('#matched')).includes('the truth run 12'), `of the truth run's 12 ("${await text('#matched')}")`);
        const sides = await text('ul.truth-sides');
        check(/run a: not right, .* 9 rows off/.test(sides) && /run b: not right, .* 15 rows off/.test(sides),
              `9 and 15 rows off (atol 0.01), as CASE.md counts ("${sides.replace(/\n/g, ' ')}")`);
        check(await text('#layer-table tr[data-layer="output"] td.right-cell') === 'neither', 'the table: neither right at output');
        check(await page.locator('svg.layer-chart path.wrong-mark.truth-a').count() === 1 &&
              await page.locator('svg.layer-chart path.wrong-mark.truth-b').count() === 1,
              'the chart crosses both truth lines');
        const md = (await downloaded('#download-report')).data.toString('utf8');
        check(md.includes('**Who is right:** Neither run is right against the truth (cpu64)') &&
              md.includes('9 rows off') && md.includes('15 rows off') && !/is closer to the truth/.test(md),
              'the bug report: neither is right, with how far each is');
        await shot('diff-neither', false);
        await axe('a diff where neither run is right');
        const c = await chartContrast();
        check(c.low.length === 0, `the chart's colours have enough contrast${c.low.length ? ': ' + c.low.join('; ') : ''}`);
        await phone('diff-neither', DUMPS_TRUTH);
    });

    await step('replay: the cause and each layer\'s own error against what it inherits', async () => {
        const d = await diffOf(WITH_REPLAY);
        check(d.replay && d.replay.id === env.RUN_REPLAY && d.cause === 'fc1', 'the daemon uses the replay: cause fc1');
        await open(WITH_REPLAY);
        check(await text('#cause') === 'fc1', 'the summary names fc1 as the cause');
        const own = await text('#own-layers');
        const ownNames = d.layers.filter((l) => l.own && ['divergent', 'nonfinite'].includes(l.own.verdict)).map((l) => l.name);
        check(ownNames.every((n) => own.includes(n)) && !own.includes('relu3'),
              `the layers with an error of their own: ${ownNames.join(', ')} ("${own.slice(0, 80)}")`);
        check(await page.locator('#layer-table thead th', {hasText: 'Own error (replay)'}).count() === 1, 'a column of own errors');
        const fc1 = d.layers.find((l) => l.name === 'fc1');
        const cell = await cellOf('fc1', 'own-cell');
        check(cell.includes(`${fmt(fc1.own.bits)} bits, TF32 or FP16`) &&
              await page.locator('#layer-table tr[data-layer="fc1"] td.own-beyond').count() === 1,
              `fc1 introduces its own error ("${cell}")`);
        for (const n of ['relu3', 'relu4'])
            check(await cellOf(n, 'own-cell') === 'none: inherited', `${n} makes none: its error is inherited`);
        check(await page.locator('#layer-table tr[data-layer="fc1"] .mark.cause').count() === 1, 'the table marks the cause');
        check(await page.locator('svg.layer-chart polyline.extra-line.replay-own').count() === 1 &&
              await page.locator('svg.layer-chart .own-pt').count() === ownNames.length,
              'the chart draws the own error as its own line, the layers that make one marked');
        check(await page.locator('.key-line.replay-own').count() === 1, 'and names it in the caption');
        const md = (await downloaded('#download-report')).data.toString('utf8');
        check(md.includes('**Cause:** `fc1` (Gemm)') && md.includes('Own error beyond its bound: `fc1`'),
              'the bug report: the cause and the own errors');
        check(md.includes('gpudiff-agent replay run-b --model') && md.includes('--emulate tf32:gemm --out run-replay') &&
              md.includes('--replay run-replay'), 'and the replay\'s command');
        await shot('diff-replay', false);
        await axe('a diff with a replay');
        await phone('diff-replay', WITH_REPLAY);
        // The replay against its source is a replay diff of its own.
        const self = await diffOf(REPLAY_SELF);
        check(self.mode === 'replay' && self.cause === 'fc1', `the daemon: a replay diff (${self.mode}), cause fc1`);
        await open(REPLAY_SELF);
        check(await text('#cause') === 'fc1' && (await text('.card:has(#cause)')).includes('Run a replays run b'),
              'the replay against its source: cause fc1, "run a replays run b"');
    });

    await step('two model files and an op near its pole', async () => {
        const d = await diffOf(MODELS);
        check(d.mode === 'models' && JSON.stringify(d.matched.only_b) === '["scale"]', 'the daemon: two model files, scale only in b');
        await open(MODELS);
        const m = await text('#models-matched');
        check(m.startsWith('3 of 4 layers matched by the names of their output tensors (two model files)'), `"${m}"`);
        check(await text('.card .only-b') === 'scale', 'the layer only model file b has is listed');
        check((await cellOf('scale', 'notes')) === "only in run b's model file: no counterpart in the other",
              'and its row says so');
        const recip = d.layers.find((l) => l.name === 'recip');
        const notes = await cellOf('recip', 'notes');
        check(recip.conditioning && notes.includes('ill-conditioned: smallest |x| ' + fmt(recip.conditioning.x_min)),
              `the Reciprocal near its pole: "${notes}"`);
        const md = (await downloaded('#download-report')).data.toString('utf8');
        check(md.includes("Only in run b's model file: `scale`") && md.includes('ill-conditioned: smallest |x|'),
              'the bug report lists it and the conditioning');
        await shot('diff-models', false);
        await open(`#/layer?a=${env.RUN_POLE_A}&b=${env.RUN_POLE_B}&name=recip`);
        const dl = await text('#layer-metrics');
        check(/conditioning\s+smallest \|x\|/.test(dl), 'the layer view shows the conditioning');
        await shot('layer-pole', false);
    }, {httpErrors: true});

    await step('sweeps: the list, a sweep\'s table, the cost-against-error plot, links, exports', async () => {
        const w = await api('/api/v1/sweeps/' + env.SWEEP_ID);
        await open('#/sweeps');
        check(await page.locator(`#sweeps-table tr[data-sweep="${env.SWEEP_ID}"]`).count() === 1, 'the list holds the sweep');
        await open(SWEEP);
        const rows = await page.locator('#sweep-table tbody tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.setting));
        check(JSON.stringify(rows) === JSON.stringify(w.table.map((r) => r.setting)),
              `one row per setting, the strict one first (${rows.join(', ')})`);
        const heads = await page.locator('#sweep-table thead th').allInnerTexts();
        for (const want of ['ms (× fastest)', 'vs float64', 'vs strict', 'Run to run identical', 'Batch-invariant',
                            'First divergent', 'Cause'])
            check(heads.includes(want), `a column "${want}"`);
        for (const r of w.table) {
            const tr = page.locator(`#sweep-table tr[data-setting="${r.setting}"]`);
            const cells = await tr.locator('td').allInnerTexts();
            check(cells[1].startsWith(`${fmt(r.forward_ms)} ms`) && cells[8] === r.cause &&
                  cells[7] === (r.vs_float64.first_divergent || 'none'),
                  `${r.setting}: ${cells[1]}, first divergent ${cells[7]}, the cause as measured`);
        }
        const tf32 = w.table.find((r) => r.setting.startsWith('emulate=tf32'));
        check(tf32.vs_float64.first_divergent === 'fc1', 'the TF32 setting diverges at fc1 (the agent measured it)');
        for (const [k, pick] of [['det', w.cheapest_deterministic], ['inv', w.cheapest_batch_invariant]]) {
            check(pick && await page.locator(`#sweep-table tr[data-setting="${pick.setting}"] [data-mark="${k}"]`).count() === 1,
                  `the table marks ${pick && pick.setting} (${k})`);
            check(await page.locator(`svg.sweep-chart a.point-link[data-setting="${pick.setting}"] .ring-${k}`).count() === 1,
                  `and the plot marks it`);
        }
        check(await page.locator('svg.sweep-chart a.point-link').count() === w.table.filter((r) => r.forward_ms !== null).length,
              'a point per timed setting');
        const f64 = w.runs.find((r) => r.role === 'float64').run;
        const href = await page.locator(`#sweep-table tr[data-setting="${tf32.setting}"] a.diff-f64`).getAttribute('href');
        check(href === `#/diff?a=${tf32.run}&b=${f64}`, `the setting links to its diff against float64 (${href})`);
        check(await page.locator(`#sweep-table tr[data-setting="${tf32.setting}"] a.diff-strict`).count() === 1 &&
              await page.locator(`#sweep-table tr[data-setting="${tf32.setting}"] a.run-link`).count() === 1,
              'and against strict, and to its run');
        const csv = (await downloaded('.section-head [data-export="csv"]')).data.toString('utf8').trim().split('\r\n');
        check(csv.length === w.table.length + 1 && csv[0].startsWith('setting,status,strict,forward_ms'), `the table as CSV (${csv.length} lines)`);
        const json = JSON.parse((await downloaded('.section-head [data-export="json"]')).data);
        check(json.length === w.table.length && json[0].setting === w.table[0].setting, 'and as JSON');
        check(await page.locator('[data-share="link"]').count() === 1, 'a copy-link button');
        await shot('sweep', true);
        await axe('a sweep');
        const c = await chartContrast();
        check(c.low.length === 0, `the plot's colours have enough contrast${c.low.length ? ': ' + c.low.join('; ') : ''}`);
        await page.click(`#sweep-table tr[data-setting="${tf32.setting}"] a.diff-f64`);
        await page.waitForFunction(() => location.hash.startsWith('#/diff') &&
            document.getElementById('view').dataset.rendered === location.hash, null, {timeout: 0});
        check(await text('#first-divergent') === 'fc1', 'the link opens the diff: fc1 first divergent');
    });
}
