// <stem>.folded as flamegraph.pl and inferno read it: a flame graph's widths are the line
// counts, so each function's self time is the sum of the counts of the lines it ends, in
// sampling periods. Those must be the report's self times; the file is on-CPU only (the
// waiting stacks are in <stem>.offcpu.folded).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import {output, report, assertSelfTimes} from './common.mjs';

function fold(path) {
  const self = new Map();
  let total = 0;
  for (const line of fs.readFileSync(path, 'utf8').split('\n')) {
    if (line === '') continue;
    const match = /^(.*) (\d+)$/.exec(line);
    assert.ok(match, `a folded line: ${line}`);
    const frames = match[1].split(';');
    const count = parseInt(match[2], 10);
    assert.match(frames[0], /^[^;]+--?\d+$/, 'a thread as perf names it: <name>-<tid>');
    const leaf = frames[frames.length - 1];
    self.set(leaf, (self.get(leaf) ?? 0) + count);
    total += count;
  }
  return {self, total};
}

test('folded counts are the report\'s self times, on-CPU only', () => {
  const expected = report();
  const {self, total} = fold(output('.folded'));
  const seconds = new Map([...self].map(([name, periods]) => [name, periods / expected.rate]));
  assert.ok(!self.has('(waiting)'), 'no waiting frame in the CPU flame graph');
  assert.ok(Math.abs(total / expected.rate - expected.cpu) <= 0.01 * expected.cpu + 0.005,
            `folded total ${total / expected.rate} s, report CPU ${expected.cpu} s`);
  assertSelfTimes('folded', seconds, expected);
});

test('the waiting stacks are in the off-CPU file', () => {
  const {total} = fold(output('.offcpu.folded'));
  assert.ok(total > 0, 'the example sleeps, so it has waiting samples');
});
