// <stem>.pb.gz through `go tool pprof` (Debian's golang-go): -top's flat column must be the
// report's self times, the labels must split the samples by fiber and thread, and the main
// binary's mapping must carry its build id.
import test from 'node:test';
import assert from 'node:assert/strict';
import {execFileSync} from 'node:child_process';
import {output, report, assertSelfTimes} from './common.mjs';

function pprof(...args) {
  return execFileSync('go', ['tool', 'pprof', ...args, output('.pb.gz')], {
    encoding: 'utf8',
    env: {...process.env, HOME: process.env.HOME ?? '/tmp', PPROF_TMPDIR: process.env.TMPDIR ?? '/tmp'},
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

test('go tool pprof -top agrees with the report', () => {
  const expected = report();
  const text = pprof('-top', '-nodecount=1000', '-unit=ms');
  const self = new Map();
  for (const line of text.split('\n')) {
    const row = /^\s*([\d.]+)ms\s+[\d.]+%\s+[\d.]+%\s+[\d.]+ms\s+[\d.]+%\s+(.+)$/.exec(line);
    if (row) self.set(row[2].trim(), parseFloat(row[1]) / 1000);
  }
  assert.ok(self.size >= 3, `pprof -top rows in:\n${text}`);
  const total = /Total samples = ([\d.]+)ms/.exec(text);
  assert.ok(total, text);
  assert.ok(Math.abs(parseFloat(total[1]) / 1000 - expected.cpu) <= 0.01 * expected.cpu + 0.005,
            `pprof total ${total[1]} ms, report CPU ${expected.cpu} s`);
  assertSelfTimes(`go tool pprof (${execFileSync('go', ['version'], {encoding: 'utf8'}).trim()})`,
                  self, expected);
});

test('pprof labels split the samples by fiber and thread', () => {
  const text = pprof('-tags');
  assert.match(text, /fiber: Total/);
  assert.match(text, /thread: Total/);
  assert.match(text, /: main\n/);
});

test('the main binary\'s mapping has its build id', () => {
  const text = pprof('-raw');
  const mappings = text.slice(text.indexOf('Mappings'));
  assert.match(mappings, /^\s*1: 0x[0-9a-f]+\/0x[0-9a-f]+\/0x[0-9a-f]+ \S+ [0-9a-f]{16,} /m);
});
