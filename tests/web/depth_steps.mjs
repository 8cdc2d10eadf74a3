// tests/web/depth_steps.mjs: the dashboard at LLM depth (issue 26 items 1 and 2), on the data
// dashboard.sh seeded: the 2,000-layer encoder (1,000 Gemm+Tanh pairs named
// encoder.layer.NNNN.dense/tanh) diffed on cpu against cpu emulating TF32, and the 1,000-layer
// model's graph. The diff view: a virtual table (at most 5,000 elements on the page, also
// after scrolling to the end), its rows read in pages (the view transfers under 2 MB), first
// paint and interactive times printed (bounds generous: docs/PERFORMANCE.md has the figures),
// progress while the daemon compares runs not compared before, chart labels that show the
// part of each name that tells it apart, a jump to any layer. The graph: namespace groups
// (closed blocks with their worst verdict, opened by a click or Enter), a minimap, find, colour
// by log error, a layer's node from its table row and its row from its node.
import {URL0, page, step, check, open, shot, axe, text} from './harness.mjs';

const env = process.env;
const ENC = `#/diff?a=${env.RUN_ENC_CPU}&b=${env.RUN_ENC_TF32}`;
const ENC_GRAPH = `#/graph?a=${env.RUN_ENC_CPU}&b=${env.RUN_ENC_TF32}`;
const big = {a: env.RUN_BIG_CPU, b: env.RUN_BIG_TF32, truth: env.RUN_BIG_CPU64};
const BIG_GRAPH = `#/graph?a=${big.a}&b=${big.b}&truth=${big.truth}`;
const MB = 1 << 20;

const inView = (sel) => page.evaluate((s) => {
    const el = document.querySelector(s);
    if (!el)
        return false;
    const r = el.getBoundingClientRect();
    return r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth && r.height > 0;
}, sel);

// The page's elements, the bytes its API requests brought, and the measures of its view.
const pageFacts = () => page.evaluate(() => ({
    elements: document.getElementsByTagName('*').length,
    api: performance.getEntriesByType('resource').filter((r) => r.name.includes('/api/v1/'))
        .reduce((a, r) => a + (r.transferSize || r.encodedBodySize || 0), 0),
    full: performance.getEntriesByType('resource').some((r) => /\/api\/v1\/diff\?/.test(r.name)),
    runDocs: performance.getEntriesByType('resource').filter((r) => /\/api\/v1\/runs\/[0-9a-f-]{36}$/.test(r.name)).length,
    paint: (performance.getEntriesByName('gd-paint diff', 'measure')[0] || {}).duration,
    view: (performance.getEntriesByName('gd-view diff', 'measure')[0] || {}).duration,
}));

export async function depthSteps() {
    await step('diff of 2,000 layers: a virtual table, pages of rows, under 2 MB, timed', async () => {
        // Every request the view makes, answered or not yet: a run's document (4.3 MB here, 17 MB
        // at 10,000 layers) asked for after the view is drawn would pass a count of bytes taken
        // too early.
        const asked = [];
        const onRequest = (r) => asked.push(r.url());
        page.on('request', onRequest);
        await open(ENC, {fresh: true, timeout: 120000});
        const cdp = await page.context().newCDPSession(page);
        await cdp.send('Performance.enable');
        const facts = await pageFacts();
        console.log(`    timing: the 2,000-layer diff: first paint ${facts.paint.toFixed(0)} ms, interactive ` +
                    `${facts.view.toFixed(0)} ms; ${facts.elements} elements, ${(facts.api / 1024).toFixed(0)} KB from the API`);
        check(facts.paint < 8000 && facts.view < 15000, 'first paint and interactive within generous bounds ' +
              '(a shared 2-core machine, a sanitized daemon: the figures are in docs/PERFORMANCE.md)');
        check(facts.elements <= 5000, `${facts.elements} elements on the page (at most 5,000)`);
        check(!facts.full && facts.runDocs === 0, 'neither the whole diff nor a run\'s document was read');
        check(await text('#first-divergent') === 'encoder.layer.0000.dense', 'the first divergent layer is the first Gemm');
        const rows = await page.locator('#layer-table tbody tr.vrow').count();
        check(rows > 10 && rows < 120, `the table draws ${rows} of the 2,000 rows: those in view and a margin`);
        // Scrolled to the end: the last layer's row, the element count still bounded.
        await page.evaluate(() => { const s = document.querySelector('.table-scroll'); s.scrollTop = s.scrollHeight; });
        await page.waitForSelector('#layer-table tr[data-layer="encoder.layer.0999.tanh"]', {timeout: 30000});
        const after = await pageFacts();
        check(after.elements <= 5000, `scrolled to the end: ${after.elements} elements`);
        check(after.api <= 2 * MB, `the view and the end of its table transferred ${(after.api / 1024).toFixed(0)} KB ` +
              'from the API (at most 2 MB)');
        page.off('request', onRequest);
        const docs = asked.filter((u) => /\/api\/v1\/runs\/[0-9a-f-]{36}(\?|$)/.test(u) || /\/api\/v1\/diff\?/.test(u));
        check(docs.length === 0, `the view never asked for a run's document or the whole diff (${docs.length} requests: ` +
              `${docs.slice(0, 2).map((u) => u.replace(URL0, '')).join(', ')})`);
        const {metrics} = await cdp.send('Performance.getMetrics');
        const heap = metrics.find((m) => m.name === 'JSHeapUsedSize').value;
        console.log(`    the tab's JS heap: ${(heap / MB).toFixed(1)} MB; DOM nodes (CDP): ` +
                    `${metrics.find((m) => m.name === 'Nodes').value}`);
        check(heap < 150 * MB, `the tab's JS heap is ${(heap / MB).toFixed(1)} MB`);
        // Labels: the part of each name that tells it apart, the shared prefix said once.
        const labels = await page.locator('svg.layer-chart text.layer-name').allTextContents();
        check(labels.length > 10 && labels.every((l) => !l.startsWith('encoder.layer.')) &&
              new Set(labels).size === labels.length,
              `the chart's ${labels.length} labels differ and drop the shared prefix (${labels.slice(0, 3).join(', ')})`);
        check((await page.locator('#chart-name-note').textContent()).includes('names after encoder.layer.'),
              'the prefix is said once');
        // Jump to any layer by name: the table finds it, its row on screen with the focus.
        await page.fill('#layer-search', '0642.t');
        await page.waitForFunction(() => document.querySelectorAll('#layer-table tbody tr[data-layer]').length === 1);
        check(await page.locator('#layer-table tr[data-layer="encoder.layer.0642.tanh"]').count() === 1,
              'a part of a name finds its layer among 2,000 (on the daemon)');
        await page.selectOption('#layer-op', 'Gemm');
        await page.fill('#layer-search', '');
        await page.waitForFunction(() => /1,000 of 2,000 layers match/.test(document.getElementById('layer-count').textContent));
        check(true, 'the op filter: 1,000 Gemm layers of 2,000');
        await shot('diff-2000', false);
        await axe('the 2,000-layer diff');
    }, {needs: 'GET /api/v1/diff/summary, /diff/layers'});

    await step('diff of 2,000 layers not compared before: progress while the daemon computes', async () => {
        // b against a: another key, neither diff nor view cached.
        await page.addInitScript(() => {
            window.__progress = false;
            new MutationObserver(() => {
                if (document.getElementById('diff-progress'))
                    window.__progress = true;
            }).observe(document, {subtree: true, childList: true});
        });
        await open(`#/diff?a=${env.RUN_ENC_TF32}&b=${env.RUN_ENC_CPU}`, {fresh: true, timeout: 180000});
        check(await page.evaluate(() => window.__progress), 'a progress indicator was shown while it loaded');
        check(await page.locator('#diff-progress').count() === 0, 'and is gone once the view is drawn');
        const resp = await page.request.get(`${URL0}/api/v1/diff/summary?a=${env.RUN_ENC_TF32}&b=${env.RUN_ENC_CPU}`);
        check(resp.headers()['x-cache'] === 'hit', 'the view is now stored by the daemon (X-Cache: hit)');
    });

    await step('graph of 1,000 layers: namespace groups, worst verdicts, find, minimap, colour', async () => {
        await open(BIG_GRAPH, {fresh: true, timeout: 120000});
        const groups = await page.locator('svg.graph g.node.group').count();
        check(groups > 10 && groups <= 60, `closed groups as blocks (${groups}), not 1,000 nodes`);
        check((await text('#graph-stats')).startsWith('1,000 layers in'), `"${(await text('#graph-stats')).slice(0, 60)}"`);
        check((await text('#graph-stats')).includes('1,198 recorded edges'), 'every recorded edge counted');
        check(await page.locator('svg.graph a.node.node-first[data-layer="b120.gemm"]').count() === 1 &&
              await inView('svg.graph a.node-first'), 'the groups around the first divergent layer open, the node in view');
        // b150.floor's range is closed: its block says amplified, and holds the amplifier.
        const amp = page.locator('svg.graph g.node.group.holds-amp');
        check(await amp.count() === 1 && /v-amplified/.test(await amp.getAttribute('class')),
              'the closed group holding the amplifier shows "amplified", its worst verdict');
        check((await amp.locator('.node-op').textContent()).includes('worst amplified'), 'in words too');
        check(/v-identical/.test(await page.locator('svg.graph g.node.group').first().getAttribute('class')),
              'the first range (b000–b009, all bitwise equal) is identical');
        // Open it with the keyboard, close it with a click on its head.
        await amp.focus();
        await page.keyboard.press('Enter');
        await page.waitForSelector('svg.graph g.group-head[aria-expanded="true"]');
        const opened = await page.locator('svg.graph g.node.group').count();
        check(opened > groups - 1, `Enter opens the group: its members appear (${opened} closed blocks now)`);
        await shot('graph-1000-groups', false);
        await page.fill('#graph-find', 'b010.res');
        await page.press('#graph-find', 'Enter');
        await page.waitForSelector('svg.graph a.node.found[data-layer="b010.res"]');
        check(await inView('a.node.found'), 'find opens the groups around b010.res and centres it');
        check((await text('#graph-find-note')).startsWith('b010.res (Add): 1 of 1 match'), await text('#graph-find-note'));
        // The minimap: the whole graph, the part in view, a click moves there.
        check(await page.locator('#graph-minimap rect.mini-node').count() > 10 &&
              await page.locator('#graph-minimap rect.minimap-view').count() === 1, 'a minimap of the blocks and the view');
        const before = await page.locator('svg.graph g.scene').getAttribute('transform');
        const box = await page.locator('#graph-minimap').boundingBox();
        await page.mouse.click(box.x + box.width / 2, box.y + box.height - 4);
        check(await page.locator('svg.graph g.scene').getAttribute('transform') !== before,
              'a click on the minimap moves the view there');
        await page.click('.segmented a:has-text("log error")');
        await page.waitForFunction(() => location.hash.includes('color=err') &&
            document.getElementById('view').dataset.rendered === location.hash, null, {timeout: 120000});
        check(await page.locator('.graph-legend .scale-legend li').count() === 11,
              'coloured by log error, with the absolute scale\'s legend (8 steps, 0, NaN or Inf, not comparable)');
        const fills = await page.evaluate(() => new Set([...document.querySelectorAll('svg.graph .node .node-box')]
            .map((r) => getComputedStyle(r).fill)).size);
        check(fills >= 3, `blocks filled with ${fills} colours of the scale`);
        await page.fill('#graph-find', 'b150.floor');
        await page.press('#graph-find', 'Enter');
        await page.waitForSelector('svg.graph a.node.found[data-layer="b150.floor"]');
        await page.focus('svg.graph a.node-amp');
        check((await text('#graph-focus')).startsWith('b150.floor (Floor): amplified, error'),
              `a focused node's values are written out ("${await text('#graph-focus')}")`);
        // From the node to its row in the table, and from a row to its node.
        await page.click('#panel-row');
        await page.waitForFunction(() => location.hash.startsWith('#/diff') && location.hash.includes('at=b150.floor') &&
            document.getElementById('view').dataset.rendered === location.hash, null, {timeout: 60000});
        await page.waitForSelector('#layer-table tr[data-layer="b150.floor"]');
        check(await inView('#layer-table tr[data-layer="b150.floor"]'), 'the node\'s panel opens its row in the table, on screen');
        await page.click('#layer-table tr[data-layer="b150.floor"] a.to-graph');
        await page.waitForFunction(() => location.hash.startsWith('#/graph') &&
            document.getElementById('view').dataset.rendered === location.hash, null, {timeout: 60000});
        await page.waitForSelector('svg.graph a.node.found[data-layer="b150.floor"]');
        check(await inView('svg.graph a.node.found'), 'and the row\'s "node" link opens the graph on it');
        await page.click('#graph-first');
        await page.click('svg.graph a.node-first');
        await page.waitForFunction(() => location.hash.startsWith('#/layer') &&
            document.getElementById('view').dataset.rendered === location.hash);
        check((await page.evaluate(() => location.hash)).includes('name=b120.gemm'), 'a click on a layer opens its view');
    }, {needs: 'the vendored elkjs, GET /api/v1/diff/graph'});

    await step('graph of 2,000 layers: encoder.layer cut into ranges, each level a few blocks', async () => {
        await open(ENC_GRAPH, {fresh: true, timeout: 120000});
        const stats = await text('#graph-stats');
        check(stats.startsWith('2,000 layers in'), `"${stats.slice(0, 80)}"`);
        const blocks = await page.locator('svg.graph g.node.group').count();
        check(blocks > 5 && blocks <= 60, `${blocks} closed blocks: no level shows more than 40`);
        const labels = await page.locator('svg.graph g.node.group .node-name').allTextContents();
        check(labels.some((l) => /0100–0199|0\d{3}–0\d{3}/.test(l)), `ranges of the encoder's layers (${labels.slice(0, 3).join(', ')})`);
        check(await page.locator('svg.graph a.node.node-first[data-layer="encoder.layer.0000.dense"]').count() === 1,
              'the first divergent layer is drawn, its groups open');
        check(await page.evaluate(() => document.getElementsByTagName('*').length) <= 5000, 'and the page stays small');
        await shot('graph-2000', false);
        await axe('the 2,000-layer graph');
    });
}
