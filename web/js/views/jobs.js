// views/jobs.js: jobs that agents run as a service (docs/SERVER.md, "Jobs, devices and
// leases"): the fleet's devices (GET /api/v1/agents: each with its agent and last heartbeat),
// the list (GET /api/v1/jobs, newest first) with each job's counts, and one job
// (GET /api/v1/jobs/{id}): its tasks by device with their state, the attempts used of those
// allowed, the lease's end while leased, the run a finished task made (a link to it) and the
// error of a failed one, as the daemon recorded them.
import {h, message, fmtInt, fmtTime, shortId, routeHref} from '../dom.js';
import {apiGet} from '../api.js';
import {copyLinkButton, tableExports} from '../share.js';

const STATES = ['finished', 'failed', 'never_answered', 'leased', 'pending'];
const WORDS = {finished: 'finished', failed: 'failed', never_answered: 'never answered',
               leased: 'running', pending: 'waiting'};

function stateBadge(state) {
    const known = STATES.includes(state) || state === 'running' || state === 'done';
    return h('span', {class: 'badge j-' + (known ? state : 'unknown'), 'data-state': state},
             WORDS[state] || state || 'unknown');
}

// "3 finished, 1 failed" of a job's counts (states with none left out).
function countsText(c) {
    const parts = STATES.filter((s) => c && c[s] > 0).map((s) => `${fmtInt(c[s])} ${WORDS[s]}`);
    return parts.length ? parts.join(', ') : 'no tasks';
}

function labelsText(labels) {
    const e = Object.entries(labels || {});
    return e.length ? e.map(([k, v]) => `${k}=${v}`).join(' ') : '';
}

const DEVICE_WORDS = {busy: 'running a job', live: 'live', stale: 'not seen'};

// The devices that serve jobs: each with the agent that registered it and its last heartbeat.
async function devices(root, ctx) {
    let r;
    try {
        r = await apiGet('agents', {}, {signal: ctx.signal});
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        root.append(message('error', 'Devices: ' + e.message));
        return;
    }
    const rows = r.devices || [];
    if (!rows.length)
        return;
    const cols = [{key: 'key', label: 'device'}, {key: 'state', label: 'state'},
                  {key: (d) => d.agent && d.agent.host, label: 'agent_host'},
                  {key: (d) => d.agent && d.agent.id, label: 'agent'},
                  {key: (d) => d.agent && d.agent.serve_id, label: 'serve_id'},
                  {key: 'last_seen', label: 'last_heartbeat'}];
    const table = h('table', {class: 'devices', id: 'devices-table'},
        h('caption', {}, `Devices leave every job's targets after ${fmtInt(r.stale_seconds)} s without a ` +
          'heartbeat (a poll, a lease\'s heartbeat or a report) while they hold no lease.'),
        h('thead', {}, h('tr', {}, ['Device', 'State', 'Agent', 'Last heartbeat']
            .map((t) => h('th', {scope: 'col'}, t)))),
        h('tbody', {}, rows.map((d) => h('tr', {'data-device': d.key, 'data-state': d.state},
            h('th', {scope: 'row'}, h('code', {}, d.key)),
            h('td', {}, h('span', {class: 'badge j-' + (d.state === 'stale' ? 'never_answered' : 'leased')},
                          DEVICE_WORDS[d.state] || d.state)),
            h('td', {class: 'agent'}, `${d.agent ? d.agent.host : '?'} (agent ${shortId(d.agent && d.agent.id)}, ` +
              `serve ${shortId(d.agent && d.agent.serve_id)})`),
            h('td', {class: 'nowrap last-seen'}, `${fmtTime(d.last_seen, true)} (${fmtInt(d.seen_seconds_ago)} s ago)`)))));
    root.append(h('div', {class: 'section-head'}, h('h2', {}, 'Devices'), tableExports('devices', cols, () => rows)),
                h('div', {class: 'table-wrap'}, table));
}

async function list(root, ctx) {
    let r;
    try {
        r = await apiGet('jobs', {limit: 50}, {signal: ctx.signal});
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        root.append(message('error', 'Jobs: ' + e.message));
        return;
    }
    const rows = r.jobs || [];
    if (!rows.length) {
        root.append(message('info', 'No jobs yet: `gpudiff-agent submit` runs a model on every ' +
            'device whose `gpudiff-agent serve` matches.'));
        return;
    }
    const cols = [{key: 'id', label: 'id'}, {key: 'model', label: 'model'}, {key: 'state', label: 'state'},
                  ...STATES.map((s) => ({key: (j) => j.counts && j.counts[s], label: s})),
                  {key: 'created', label: 'created'}];
    const table = h('table', {class: 'jobs', id: 'jobs-table'},
        h('caption', {}, 'The newest 50 jobs; each ran on the devices that matched when it was submitted.'),
        h('thead', {}, h('tr', {}, ['Job', 'Model', 'State', 'Tasks', 'Created']
            .map((t) => h('th', {scope: 'col'}, t)))),
        h('tbody', {}, rows.map((j) => h('tr', {'data-job': j.id},
            h('th', {scope: 'row'}, h('a', {href: '#/jobs/' + encodeURIComponent(j.id)}, shortId(j.id))),
            h('td', {}, j.model), h('td', {}, stateBadge(j.state)),
            h('td', {class: 'counts'}, countsText(j.counts)),
            h('td', {class: 'nowrap'}, fmtTime(j.created))))));
    root.append(h('div', {class: 'section-head'}, h('h2', {}, 'Jobs'), tableExports('jobs', cols, () => rows)),
                h('div', {class: 'table-wrap'}, table));
}

async function one(root, ctx, id) {
    let j;
    try {
        j = await apiGet('jobs/' + encodeURIComponent(id), {}, {signal: ctx.signal});
    } catch (e) {
        if (e.name === 'AbortError')
            throw e;
        root.append(message('error', `Job ${id}: ${e.message}`));
        return;
    }
    if (!ctx.live())
        return;
    document.title = `gpudiff: job of ${j.model}`;
    const files = (j.files || []).map((f) => `${f.role} ${f.name}`).join(', ');
    root.append(h('p', {class: 'lead', id: 'job-about'},
        `${j.model}: ${files}; knobs ${JSON.stringify(j.knobs || {})}, match ${JSON.stringify(j.match || {})}; ` +
        `${fmtInt(j.attempts)} attempt${j.attempts === 1 ? '' : 's'} of ${fmtInt(j.lease_seconds)} s leases ` +
        `per device; created ${fmtTime(j.created)}, deadline ${fmtTime(j.deadline)}. `,
        stateBadge(j.state), ' ', countsText(j.counts), '.'));
    const tasks = j.tasks || [];
    const cols = [{key: (t) => t.device.key, label: 'device'}, {key: (t) => t.device.host, label: 'host'},
                  {key: (t) => t.device.backend, label: 'backend'},
                  {key: (t) => labelsText(t.device.labels), label: 'labels'}, {key: 'state', label: 'state'},
                  {key: 'attempts_used', label: 'attempts_used'}, {key: 'lease_until', label: 'lease_until'},
                  {key: 'run_id', label: 'run_id'}, {key: 'error', label: 'error'}, {key: 'updated', label: 'updated'}];
    const table = h('table', {class: 'job', id: 'job-table'},
        h('caption', {class: 'sr-only'}, 'The tasks of the job, by device'),
        h('thead', {}, h('tr', {}, ['Device', 'Host', 'Backend', 'Labels', 'State', 'Attempts', 'Lease until',
                                    'Run', 'Error', 'Updated'].map((t) => h('th', {scope: 'col'}, t)))),
        h('tbody', {}, tasks.map((t) => h('tr', {'data-device': t.device.key, 'data-state': t.state},
            h('th', {scope: 'row'}, h('code', {}, t.device.key)),
            h('td', {}, t.device.host), h('td', {}, t.device.backend),
            h('td', {}, labelsText(t.device.labels) || '–'),
            h('td', {}, stateBadge(t.state)),
            h('td', {class: 'num'}, `${fmtInt(t.attempts_used)} of ${fmtInt(j.attempts)}`),
            h('td', {class: 'nowrap'}, t.lease_until ? fmtTime(t.lease_until, true) : '–'),
            h('td', {}, t.run_id ? h('a', {href: routeHref('/runs', {q: t.run_id}), class: 'run-link'},
                                    'run ' + shortId(t.run_id)) : '–'),
            h('td', {class: 'notes task-error'}, t.error || '–'),
            h('td', {class: 'nowrap'}, fmtTime(t.updated))))));
    root.append(h('section', {'aria-labelledby': 'job-tasks-h'},
        h('div', {class: 'section-head'}, h('h2', {id: 'job-tasks-h'}, 'Tasks'),
          tableExports('job-' + shortId(id), cols, () => tasks)),
        h('p', {class: 'hint'}, 'One row per device the job was given to: finished with the run it made, ' +
          'failed with the agent\'s error or the lease\'s expiry, never answered when the device never took ' +
          'it before the deadline, running while a lease is live, waiting while it is pending.'),
        h('div', {class: 'table-wrap'}, table)));
}

export async function render(root, ctx) {
    document.title = 'gpudiff: jobs';
    const id = ctx.segment;
    root.append(h('div', {class: 'title-row'}, h('h1', {}, id ? ['Job ', h('code', {}, shortId(id))] : 'Jobs'),
                  h('div', {class: 'share-bar', role: 'group', 'aria-label': 'Share this view'}, copyLinkButton())));
    if (id) {
        await one(root, ctx, id);
    } else {
        await devices(root, ctx);
        await list(root, ctx);
    }
}
