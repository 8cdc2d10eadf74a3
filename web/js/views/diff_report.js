// views/diff_report.js: a diff as a bug report, in Markdown for an issue tracker: the model,
// the environments side by side, the first divergent layer, the amplifiers, the cause the
// daemon found, who is right (with a truth run), and the commands that reproduce the runs and
// the comparison. Every fact comes from the diff and the runs' records; what they do not
// record is said to be missing, not guessed.
import {fmtNum, fmtInt, fmtTime, deviceLabel, knobWords} from '../dom.js';
import {mdCell} from '../share.js';

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

// The command that made a run, from what its run.json records; null for a framework dump.
export function runCommand(r, out) {
    if (!r || !r.env || !r.env.engine_version)
        return null;
    const q = (v) => (/^[A-Za-z0-9_./:=@+-]+$/.test(v) ? v : `'${String(v).replace(/'/g, "'\\''")}'`);
    const parts = ['gpudiff-agent run', '--model', q((r.model && r.model.file) || 'MODEL.json')];
    if (r.input) {
        parts.push('--input', q(r.input.file || 'INPUT'));
        if (r.input.key)
            parts.push('--input-key', q(r.input.key));
    }
    parts.push('--backend', q(r.backend));
    const k = r.knobs || {};
    if (k.emulate && k.emulate !== 'none')
        parts.push('--emulate', q(k.emulate));
    if (k.batch !== undefined && k.batch !== null)
        parts.push('--batch', String(k.batch));
    if (k.conv_algo)
        parts.push('--conv-algo', q(k.conv_algo));
    if (k.tf32 === true || k.tf32 === false)
        parts.push('--tf32', k.tf32 ? 'on' : 'off');
    if (k.math_mode)
        parts.push('--math-mode', q(k.math_mode));
    parts.push('--out', out);
    return parts.join(' ');
}

// bugReport(d, runs, link, apiLink): the Markdown text.
export function bugReport(d, runs, link, apiLink) {
    const [ra, rb, rt] = runs;
    const byName = new Map(d.layers.map((l) => [l.name, l]));
    const first = d.first_divergent ? byName.get(d.first_divergent) : null;
    const model = (d.a && d.a.model) || (ra && ra.model && ra.model.name) || '?';
    const sides = [['a', ra || d.a], ['b', rb || d.b]];
    if (d.truth)
        sides.push(['truth', rt || d.truth]);
    const out = [];
    out.push(`## ${model}: ${first ? `runs diverge at \`${first.name}\` (${first.op || 'op ?'})`
                                   : 'runs agree within rounding noise'}`, '');
    const sha = ra && ra.model && ra.model.sha256;
    out.push(`**Model:** ${model}${sha ? ` (sha256 \`${sha.slice(0, 16)}…\`)` : ''}` +
             (ra && ra.input && ra.input.sha256 ? `; input sha256 \`${ra.input.sha256.slice(0, 16)}…\`` +
              (ra.input.shape ? `, shape [${ra.input.shape.join(', ')}]` : '') : ''), '');
    out.push('| | ' + sides.map(([k]) => 'run ' + k).join(' | ') + ' |',
             '|---|' + sides.map(() => '---').join('|') + '|');
    for (const [label, get] of ENV_ROWS)
        out.push(`| ${label} | ` + sides.map(([, r]) => mdCell(r ? get(r) : null) || '–').join(' | ') + ' |');
    out.push('');
    if (first) {
        out.push(`**First divergent layer:** \`${first.name}\` (${first.op || 'op ?'}), layer ` +
                 `${d.layers.indexOf(first)} of ${d.layers.length}: max |a−b| ${fmtNum(first.max_abs)}, ` +
                 `${fmtNum(first.err)} of the layer's largest value, ${fmtNum(first.growth)}× the rounding ` +
                 `noise its op allows; effective precision ${fmtNum(first.bits)} bits` +
                 `${first.arithmetic ? ` (${first.arithmetic})` : ''}.`);
    } else {
        out.push('**First divergent layer:** none: every layer is within the rounding noise its op allows.');
    }
    const amps = (d.amplifiers || []).map((n) => byName.get(n)).filter(Boolean);
    out.push('', '**Amplifiers:** ' + (amps.length ? amps.map((l) => `\`${l.name}\` (${l.op || 'op ?'}) ×` +
        `${fmtNum(l.growth)}${l.flipped ? `, ${fmtInt(l.flipped)} outputs flipped` : ''}`).join('; ') : 'none') + '.');
    const last = d.layers[d.layers.length - 1];
    if (last && last.verdict !== 'incomparable')
        out.push('', `**At the output** \`${last.name}\`: max |a−b| ${fmtNum(last.max_abs)}; ` +
                 `${fmtInt(last.mismatches)} of ${fmtInt(last.count)} values outside atol ${fmtNum(d.atol)} + ` +
                 `rtol ${fmtNum(d.rtol)}; verdict ${last.verdict}.`);
    out.push('', '**Cause** (gpudiff\'s explanation): ' + (d.explanation || 'none given'));
    out.push('', '**Who is right:** ' + whoIsRight(d, first));
    const diffs = (d.env_diff || []);
    if (diffs.length)
        out.push('', '**What differs between a and b:** ' + diffs.slice(0, 12)
            .map((e) => `${e.key}: ${e.a ?? '(none)'} → ${e.b ?? '(none)'}`).join('; ') +
            (diffs.length > 12 ? `; and ${diffs.length - 12} more` : '') + '.');
    out.push('', '**To reproduce:**', '', '```sh');
    for (const [k, r] of sides) {
        const cmd = runCommand(r, 'run-' + k);
        out.push(cmd || `# run ${k} (${r ? r.backend : '?'}) is a framework's dump: ` +
                 'gpudiff-agent bundle made it; the command that ran the model is not recorded');
    }
    out.push(`gpudiff-agent diff run-a run-b${d.truth ? ' --truth run-truth' : ''}`);
    out.push(`curl '${apiLink}'`, '```', '', `Dashboard: ${link}`, '');
    return out.join('\n');
}

function whoIsRight(d, first) {
    if (!d.truth)
        return 'unknown: no truth run (a cpu64 run of the same model and input) was compared.';
    const from = first ? d.layers.indexOf(first) : 0;
    const n = {a: 0, b: 0, even: 0};
    d.layers.slice(from).forEach((l) => {
        if (l.truth && n[l.truth.closer] !== undefined)
            n[l.truth.closer]++;
    });
    const winner = n.a > n.b ? 'a' : n.b > n.a ? 'b' : null;
    const span = `${d.layers.length - from} layers${first ? ` from \`${first.name}\` on` : ''}`;
    return winner ? `run ${winner} is closer to the truth (${d.truth.backend}) on ${n[winner]} of ${span}` +
                    ` (run ${winner === 'a' ? 'b' : 'a'} on ${n[winner === 'a' ? 'b' : 'a']}, even on ${n.even}).`
        : `neither: each is closer on as many of ${span} (${n.a}; even on ${n.even}).`;
}
