// tests/web/jobs_steps.mjs: the jobs view (views/jobs.js) on the job dashboard.sh seeded
// through the API as two agents would (one task finished with the seed's cpu run, one failed
// with an error that is HTML): the devices table a row per device with its agent and last
// heartbeat (GET /api/v1/agents), the list holds the job with its counts, the job's page a row
// per device with the state, attempts, error and run link the daemon answers (GET
// /api/v1/jobs/{id}), the error as text, and the run link opens that run.
import {URL0, page, step, check, open, shot, axe, text} from './harness.mjs';

const env = process.env;

export async function jobsSteps() {
    await step('jobs: the list, and a job\'s tasks by device with state, attempts, error and run', async () => {
        const r = await page.request.get(`${URL0}/api/v1/jobs/${env.JOB_ID}`, {timeout: 0});
        check(r.ok(), `GET /api/v1/jobs/${env.JOB_ID}: ${r.status()}`);
        const job = await r.json();
        check(job.counts.finished === 1 && job.counts.failed === 1, 'the daemon: one finished, one failed');
        await open('#/jobs');
        const ar = await page.request.get(`${URL0}/api/v1/agents`, {timeout: 0});
        const fleet = await ar.json();
        check(await page.locator('#devices-table tbody tr').count() === fleet.devices.length,
              `the devices table has a row per device (${fleet.devices.length})`);
        for (const d of fleet.devices) {
            const dr = `#devices-table tr[data-device="${d.key}"]`;
            check((await text(`${dr} td.agent`)).startsWith(`${d.agent.host} (agent ${d.agent.id.slice(0, 8)}`),
                  `${d.key}: its agent`);
            check((await text(`${dr} td.last-seen`)).startsWith(d.last_seen.slice(0, 19).replace('T', ' ')),
                  `${d.key}: its last heartbeat`);
        }
        const row = `#jobs-table tr[data-job="${env.JOB_ID}"]`;
        check(await page.locator(row).count() === 1, 'the list holds the job');
        check(await text(`${row} td.counts`) === '1 finished, 1 failed', 'with its counts');
        await open('#/jobs/' + env.JOB_ID);
        check(await page.locator('#job-table tbody tr').count() === job.tasks.length,
              `one row per task (${job.tasks.length})`);
        for (const t of job.tasks) {
            const tr = `#job-table tr[data-device="${t.device.key}"]`;
            check(await page.locator(tr).getAttribute('data-state') === t.state, `${t.device.key}: ${t.state}`);
            check(await text(`${tr} td:nth-child(6)`) === `${t.attempts_used} of ${job.attempts}`,
                  `${t.device.key}: ${t.attempts_used} of ${job.attempts} attempts`);
            check(await text(`${tr} td.task-error`) === (t.error || '–'), `${t.device.key}: the error as recorded`);
            const link = page.locator(`${tr} a.run-link`);
            check(await link.count() === (t.run_id ? 1 : 0), `${t.device.key}: a run link only with a run`);
            if (t.run_id)
                check(await link.getAttribute('href') === `#/runs?q=${t.run_id}`, `${t.device.key}: the link names its run`);
        }
        check(await page.evaluate(() => document.querySelectorAll('main img, main script').length) === 0,
              'the HTML in the error stays text');
        await shot('job', true);
        await axe('a job');
        const done = job.tasks.find((t) => t.run_id);
        await page.click(`#job-table tr[data-device="${done.device.key}"] a.run-link`);
        await page.waitForFunction(() => location.hash.startsWith('#/runs') &&
            document.getElementById('view').dataset.rendered === location.hash, null, {timeout: 0});
        check(await page.locator('table.runs tbody tr').count() === 1, 'the run link opens that run');
    });
}
