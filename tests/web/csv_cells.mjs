// csv_cells.mjs: web/js/share.js's CSV cells against spreadsheet formula injection (issue 25
// item 6, OWASP "CSV Injection"): text starting with = + - @, a tab or a CR is prefixed with a
// quote (and the cell quoted), numbers are left as numbers, RFC 4180 quoting still holds,
// and a whole table keeps its shape. Run by tests/web/csv.sh with node.
import assert from 'node:assert/strict';
import {csvCell, toCsv} from '../../web/js/share.js';

const injected = ['=cmd|\' /C calc\'!A0', '+1+1', '-2+3', '@SUM(A1:A2)', '\t=1', '\r=1',
                  '=HYPERLINK("http://x","y")'];
for (const t of injected) {
    const c = csvCell(t);
    assert.ok(c.startsWith('"\''), `not neutralized: ${JSON.stringify(t)} -> ${c}`);
    assert.equal(c, '"\'' + t.replace(/"/g, '""') + '"');
}
assert.equal(csvCell(-1.5e-3), '-0.0015');
assert.equal(csvCell(-0), '0');
assert.equal(csvCell(42), '42');
assert.equal(csvCell(true), 'true');
assert.equal(csvCell(null), '');
assert.equal(csvCell(undefined), '');
assert.equal(csvCell('plain'), 'plain');
assert.equal(csvCell('a,b'), '"a,b"');
assert.equal(csvCell('say "hi"'), '"say ""hi"""');
assert.equal(csvCell('line\nbreak'), '"line\nbreak"');
assert.equal(csvCell({a: '=x'}), '"{""a"":""=x""}"');
assert.equal(csvCell('x=1'), 'x=1'); /* only the first character counts */
const table = toCsv([{key: 'name', label: 'name'}, {key: (r) => r.err, label: 'err'}],
                    [{name: '=1+1', err: -0.5}, {name: 'fc2', err: 1e-7}]);
assert.equal(table, 'name,err\r\n"\'=1+1",-0.5\r\nfc2,1e-7\r\n');
console.log(`ok: ${injected.length} formula cells neutralized, numbers and RFC 4180 quoting kept`);
