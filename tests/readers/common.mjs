// What every reader test shares: the profiled run's files and the terminal report's numbers.
import fs from 'node:fs';
import path from 'node:path';
import assert from 'node:assert/strict';

export const runDir = process.env.OSPREY_RUN_DIR;
if (!runDir) throw new Error('OSPREY_RUN_DIR is not set: run the reader tests through run.sh');

export function output(suffix) {
  return path.join(runDir, 'run' + suffix);
}

function seconds(text) {
  const match = /^([\d.]+)(ms|s)$/.exec(text);
  assert.ok(match, `a duration: ${text}`);
  return parseFloat(match[1]) / (match[2] === 'ms' ? 1000 : 1);
}

// The terminal report: its CPU time and its table rows (function, self and total in seconds).
export function report() {
  const text = fs.readFileSync(path.join(runDir, 'report.txt'), 'utf8');
  const header = /osprey: (\S+) wall, (\S+) CPU, (\d+) samples \(\d+ on-CPU\), (\d+) Hz/.exec(text);
  assert.ok(header, `a report header in:\n${text}`);
  const rows = [];
  for (const line of text.split('\n')) {
    const row = /\s([\d.]+)%\s+([\d.]+)%\s+([\d.]+m?s)\s+([\d.]+m?s)\s+(\S+)\s/.exec(line);
    if (row) rows.push({name: row[5], self: seconds(row[3]), total: seconds(row[4]),
                        selfPercent: parseFloat(row[1])});
  }
  assert.ok(rows.length >= 3, `report rows in:\n${text}`);
  return {cpu: seconds(header[2]), samples: parseInt(header[3], 10), rate: parseInt(header[4], 10),
          rows, text};
}

// Each report row's self time against a reader's, within 1% of the run's CPU time.
export function assertSelfTimes(readerName, selfSeconds, {rows, cpu}, count = 5) {
  const tolerance = 0.01 * cpu;
  const lines = [];
  for (const row of rows.slice(0, count)) {
    const theirs = selfSeconds.get(row.name) ?? 0;
    lines.push(`${row.name}: report ${row.self.toFixed(3)} s, ${readerName} ${theirs.toFixed(3)} s`);
    // The report rounds (1.70s, 862ms): allow its rounding on top of the tolerance.
    const rounding = row.self >= 1 ? 0.005 : row.self >= 0.01 ? 0.0005 : 0.00005;
    assert.ok(Math.abs(theirs - row.self) <= tolerance + rounding,
              `${readerName} disagrees with the report beyond ${tolerance.toFixed(4)} s:\n` +
              lines.join('\n'));
  }
  console.log(`${readerName} (tolerance ${(tolerance * 1000).toFixed(1)} ms):\n  ` + lines.join('\n  '));
}
