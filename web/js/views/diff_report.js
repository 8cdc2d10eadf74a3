// views/diff_report.js: a diff as a bug report, in Markdown for an issue tracker: the model,
// the environments side by side, the first divergent layer, the amplifiers, the cause the
// daemon found, who is right (with a truth run), and the commands that reproduce the runs and
// the comparison. Every fact comes from the diff and the runs' records; what they do not
// record is said to be missing, not guessed.
import {fmtNum, fmtInt, fmtTime, deviceLabel, knobWords, getKnobTable, knobValue} from '../dom.js';
import {mdCell} from '../share.js';
import {matchInfo, matchWords, startOf, excess, precision, truthSummary, truthWords, replayInfo,
        ownWords, layerNotes, layerByName, listWords} from '../diff_facts.js';

const ENV_ROWS = [
    ['backend', (r) => r.backend],
    ['device', (r) => deviceLabel(r)],
    ['compute capability', (r) => r.env && r.env.compute_capability],
    ['driver', (r) => r.env && r.env.driver],
    ['CUDA runtime', (r) => r.env && r.env.cuda_runtime],
    ['cuDNN', (r) => r.env && r.env.cudnn],
    ['cuBLAS', (r) => r.env && r.env.cublas],
    ['engine', (r) => r.env && r.env.engine_version],
    ['host', (r) => r.env && r.env.host],
    ['knobs', (r) => knobWords(r).join(' ') || 'defaults'],
    ['labels', (r) => Object.entries(r.labels || {}).map(([k, v]) => `${k}=${v}`).join(' ')],
    ['created', (r) => fmtTime(r.created_at, true)],
    ['run id', (r) => r.id],
];

const quote = (v) => (/^[A-Za-z0-9_./:=@+-]+$/.test(v) ? v : `'${String(v).replace(/'/g, "'\\''")}'`);

// The knobs a run records, as the agent's options: each knob of the table (knobs.def) that is
// recorded and not at its default, in its one spelling.
function knobArgs(r) {
    const parts = [];
    const k = r.knobs || {};
    for (const knob of getKnobTable()) {
        const v = k[knob.name];
        if (v === undefined || v === null || knob.name === 'threads')
            continue;
        const text = knobValue(knob, v);
        if (text !== knob.default)
            parts.push(knob.flag, quote(text));
    }
    return parts;
}

// The value after option `name` in the command the agent recorded (run.json's rerun.args).
function rerunValue(r, name) {
    const args = (r && r.rerun && r.rerun.args) || [];
    const k = args.indexOf(name);
    return k >= 0 && k + 1 < args.length ? args[k + 1] : null;
}

// The command that made a run, from what its run.json records: the agent's own record of it
// (rerun.args: every option that decides what the run computes, --weights-dir included) when
// it has one, else rebuilt from the run's fields; null for a framework dump. A replay's is the
// replay command of the bundle it replays (`of`: that bundle's folder; `source`: its run, whose
// weights the replay reads).
export function runCommand(r, out, of, source) {
    if (!r || !r.env || !r.env.engine_version)
        return null;
    const model = ['--model', quote((r.model && r.model.file) || 'MODEL.json')];
    const weights = rerunValue(r, '--weights-dir') || rerunValue(source, '--weights-dir');
    const weightArgs = weights ? ['--weights-dir', quote(weights)] : [];
    if (r.replay)
        return ['gpudiff-agent replay', of || 'BUNDLE', ...model, ...weightArgs, '--backend',
                quote(r.backend), ...knobArgs(r), '--out', out].join(' ');
    if (r.rerun && Array.isArray(r.rerun.args) && r.rerun.args.length)
        return ['gpudiff-agent run', ...r.rerun.args.map((a) => quote(String(a))), '--out', out].join(' ');
    const parts = ['gpudiff-agent run', ...model];
    if (r.input) {
        parts.push('--input', quote(r.input.file || 'INPUT'));
        if (r.input.key)
            parts.push('--input-key', quote(r.input.key));
    }
    parts.push(...weightArgs, '--backend', quote(r.backend), ...knobArgs(r), '--out', out);
    return parts.join(' ');
}

// The start: the first divergent layer, or with partial data the first observed difference.
function startLines(d, mi) {
    const st = startOf(d);
    const out = [];
    const q = (n) => `\`${n}\``;
    if (mi.partial || mi.models)
        out.push(`**Layers matched:** ${matchWords(mi)}.` +
                 (mi.nOnlyA ? ` Only in run a${mi.models ? "'s model file" : ''}: ` +
                  listWords(mi.onlyA, mi.nOnlyA, q) + '.' : '') +
                 (mi.nOnlyB ? ` Only in run b${mi.models ? "'s model file" : ''}: ` +
                  listWords(mi.onlyB, mi.nOnlyB, q) + '.' : ''), '');
    if (!st && mi.layers === 0) {
        out.push('**First divergent layer:** none compared: the runs share no layer.');
        return out;
    }
    if (!st) {
        out.push('**First divergent layer:** none: every compared layer is within the rounding noise ' +
                 'its op allows.');
        return out;
    }
    const l = st.layer;
    const facts = `layer ${l.i} of ${d.n_layers}: max |a−b| ${fmtNum(l.max_abs)}, ` +
        `${fmtNum(l.err)} of the layer's largest value, ${excess(l)}; ${precision(l)}`;
    const notes = layerNotes(l, d);
    if (st.known)
        out.push(`**First divergent layer:** \`${l.name}\` (${l.op || 'op ?'}), ${facts}.` +
                 (notes.length ? ` ${cap(notes.join('; '))}.` : ''));
    else
        out.push(`**First observed difference:** \`${l.name}\` (${l.op || 'op ?'}), ${facts}. ` +
                 'The start may lie before it: ' + (mi.partial ? 'layers before it were not compared.'
                     : 'what its inputs carried in was not compared.') +
                 (st.divergent ? ` The first layer whose compared inputs agree is \`${st.divergent.name}\`.` : ''));
    return out;
}

function cap(t) {
    return t ? t[0].toUpperCase() + t.slice(1) : t;
}

function replayLines(d) {
    const ri = replayInfo(d);
    if (!ri)
        return [];
    const how = ri.self ? 'Run a replays run b' : `Replay \`${ri.id}\` of run \`${ri.of}\``;
    const own = ri.own.map((l) => `\`${l.name}\` ${ownWords(l)}`).join('; ');
    return ['', `**Replay:** ${how}: each layer ran from the captured inputs, so its own error is ` +
            'told apart from what it inherits. ' +
            (ri.own.length ? `Own error beyond its bound: ${own}; every other layer none. `
                : 'No layer makes an error of its own beyond its bound. ') +
            (ri.cause ? `**Cause:** \`${ri.cause.name}\` (${ri.cause.op || 'op ?'}), the first layer whose ` +
                        'own error exceeds its bound.' : '')];
}

// bugReport(d, runs, link, apiLink): the Markdown text.
export function bugReport(d, runs, link, apiLink) {
    const [ra, rb, rt] = runs;
    const mi = matchInfo(d, rt);
    const st = startOf(d);
    const model = (d.a && d.a.model) || (ra && ra.model && ra.model.name) || '?';
    const sides = [['a', ra || d.a], ['b', rb || d.b]];
    if (d.truth)
        sides.push(['truth', rt || d.truth]);
    const out = [];
    out.push(`## ${model}: ${!st ? 'runs agree within rounding noise'
        : st.known ? `runs diverge at \`${st.layer.name}\` (${st.layer.op || 'op ?'})`
            : `first observed difference at \`${st.layer.name}\` (${st.layer.op || 'op ?'}); ` +
              'the start may lie before it'}`, '');
    const sha = ra && ra.model && ra.model.sha256;
    out.push(`**Model:** ${model}${sha ? ` (sha256 \`${sha.slice(0, 16)}…\`)` : ''}` +
             (ra && ra.input && ra.input.sha256 ? `; input sha256 \`${ra.input.sha256.slice(0, 16)}…\`` +
              (ra.input.shape ? `, shape [${ra.input.shape.join(', ')}]` : '') : ''), '');
    if (d.inputs_differ)
        out.push('**The runs had different inputs** (their input sha256 differ).', '');
    out.push('| | ' + sides.map(([k]) => 'run ' + k).join(' | ') + ' |',
             '|---|' + sides.map(() => '---').join('|') + '|');
    for (const [label, get] of ENV_ROWS)
        out.push(`| ${label} | ` + sides.map(([, r]) => mdCell(r ? get(r) : null) || '–').join(' | ') + ' |');
    out.push('');
    out.push(...startLines(d, mi));
    const amps = (d.amplifiers || []).slice(0, 20).map((n) => layerByName(d, n)).filter(Boolean);
    const moreAmps = (d.n_amplifiers || amps.length) - amps.length;
    out.push('', '**Amplifiers:** ' + (amps.length ? amps.map((l) => `\`${l.name}\` (${l.op || 'op ?'}) ×` +
        `${fmtNum(l.growth)}` + (layerNotes(l, d).length ? `: ${layerNotes(l, d).join('; ')}` : '')).join('; ') +
        (moreAmps > 0 ? `; and ${moreAmps} more` : '') : 'none') + '.');
    const last = layerByName(d, d.last_compared);
    if (last)
        out.push('', `**At the output** \`${last.name}\`: max |a−b| ${fmtNum(last.max_abs)}; ` +
                 `${fmtInt(last.mismatches)} of ${fmtInt(last.count)} values outside atol ${fmtNum(d.atol)} + ` +
                 `rtol ${fmtNum(d.rtol)}, in ${fmtInt(last.mismatch_rows)} rows; verdict ${last.verdict}.`);
    out.push(...replayLines(d));
    out.push('', '**Cause** (gpudiff\'s explanation): ' + (d.explanation || 'none given'));
    out.push('', '**Who is right:** ' + truthWords(truthSummary(d), d.truth && d.truth.backend));
    const served = d.env_diff || [];
    const diffs = served.filter((e) => (e.status || 'differs') === 'differs');
    const missing = served.filter((e) => e.status === 'not recorded');
    if (diffs.length)
        out.push('', '**What differs between a and b** (what can change numerics first): ' + diffs.slice(0, 12)
            .map((e) => `${e.key}: ${e.a ?? '(none)'} → ${e.b ?? '(none)'}`).join('; ') +
            (diffs.length > 12 ? `; and ${diffs.length - 12} more` : '') + '.');
    if (missing.length)
        out.push('', '**Not recorded by one run** (no difference, no cause): ' + missing.slice(0, 12)
            .map((e) => e.key).join(', ') + (missing.length > 12 ? `, and ${missing.length - 12} more` : '') + '.');
    out.push('', '**To reproduce:**', '', '```sh');
    for (const [k, r] of sides) {
        const cmd = runCommand(r, 'run-' + k, k === 'a' ? 'run-b' : 'run-a', k === 'a' ? rb : ra);
        out.push(cmd || `# run ${k} (${r ? r.backend : '?'}) is a framework's dump: ` +
                 'gpudiff-agent bundle made it; the command that ran the model is not recorded');
    }
    // A diff with a replay (not a replay against its source, which is run a): its command too.
    const ri = replayInfo(d);
    const replayOf = ri && !ri.self ? (ri.of === (d.a && d.a.id) ? 'run-a' : 'run-b') : null;
    if (replayOf)
        out.push(runCommand(runs[3], 'run-replay', replayOf, replayOf === 'run-a' ? ra : rb) ||
                 `# the replay ${ri.id} of ${replayOf}: its record was not read`);
    out.push(`gpudiff-agent diff run-a run-b${d.truth ? ' --truth run-truth' : ''}` +
             (replayOf ? ' --replay run-replay' : ''));
    out.push(`curl '${apiLink}'`, '```', '', `Dashboard: ${link}`, '');
    return out.join('\n');
}
