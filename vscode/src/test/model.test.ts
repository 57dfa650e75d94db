import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  parseProfileSummary,
  parseSpeedscope,
  ProfileFormatError,
  siblingSummaryPath,
  speedscopePathFor,
} from '../model';
import { FIXTURES, SPEEDSCOPE_FIXTURE, SUMMARY_FIXTURE } from './fixtures';

const speedscopeText = readFileSync(SPEEDSCOPE_FIXTURE, 'utf8');
const summaryText = readFileSync(SUMMARY_FIXTURE, 'utf8');

function minimal(overrides: Record<string, unknown> = {}, profile: Record<string, unknown> = {}): string {
  return JSON.stringify({
    shared: { frames: [{ name: 'main', file: '/w/a.c', line: 3 }, { name: 'leaf' }] },
    profiles: [{ type: 'sampled', name: 'fiber 0 (main)', unit: 'milliseconds', samples: [[0, 1]], weights: [1], ...profile }],
    ...overrides,
  });
}

function rejects(text: string, pattern: RegExp, parse: (text: string, fileName: string) => unknown = parseSpeedscope): void {
  assert.throws(
    () => parse(text, 'bad.json'),
    (error) => {
      assert.ok(error instanceof ProfileFormatError, `not a ProfileFormatError: ${String(error)}`);
      assert.match(error.message, /^bad\.json: /);
      assert.match(error.message, pattern);
      assert.doesNotMatch(error.message, /\n/);
      return true;
    },
  );
}

test('parses the speedscope fixture: frames, one profile per fiber, root-first samples', () => {
  const document = parseSpeedscope(speedscopeText, SPEEDSCOPE_FIXTURE);
  assert.equal(document.name, 'hotspot');
  assert.equal(document.exporter, 'osprey 0.1.0');
  assert.equal(document.frames.length, 9);
  assert.deepEqual(document.frames[0], { name: 'main', file: '/w/hotspot.c', line: 57, col: 1 });
  assert.deepEqual(document.frames[2], { name: '(waiting)' });
  assert.deepEqual(
    document.profiles.map((p) => p.name),
    ['fiber 0 (main)', 'fiber 4243 (thread)'],
  );
  assert.equal(document.profiles[1].samples.length, 100);
  assert.deepEqual(document.profiles[1].samples[0], [8, 3, 4, 7]);
  assert.equal(document.profiles[1].weights[0], 1.003);
});

test('converts other time units to milliseconds', () => {
  const document = parseSpeedscope(minimal({}, { unit: 'microseconds', weights: [1500] }), 'x');
  assert.equal(document.profiles[0].weights[0], 1.5);
});

test('rejects malformed speedscope files with one line naming the file and the field', () => {
  rejects('{"shared":', /not valid JSON/);
  rejects('[]', /expected an object/);
  rejects(JSON.stringify({ profiles: [] }), /shared: missing/);
  rejects(minimal({}, { samples: [[0, 9]] }), /profiles\[0\]\.samples\[0\]\[1\]: frame index 9 out of range \(2 frames\)/);
  rejects(minimal({}, { samples: [[0, -1]] }), /samples\[0\]\[1\]: expected an integer >= 0/);
  rejects(minimal({}, { weights: [1, 2] }), /profiles\[0\]\.weights: 2 weights for 1 samples/);
  rejects(minimal({}, { weights: [-1] }), /weights\[0\]: expected a non-negative number/);
  rejects(minimal({}, { type: 'evented' }), /"evented" profiles are not supported/);
  rejects(minimal({}, { unit: 'bytes' }), /unit "bytes" is not a time unit/);
  rejects(minimal({ profiles: [] }), /profiles: no profiles/);
  rejects(
    JSON.stringify({ shared: { frames: [{ name: 'f', line: 0 }] }, profiles: [] }),
    /shared\.frames\[0\]\.line: expected an integer >= 1, got 0/,
  );
  rejects(JSON.stringify({ shared: { frames: [{ file: '/a.c' }] }, profiles: [] }), /shared\.frames\[0\]\.name: missing/);
});

test('an out-of-range activeProfileIndex falls back to the first profile', () => {
  assert.equal(parseSpeedscope(minimal({ activeProfileIndex: 5 }), 'x').activeProfileIndex, 0);
});

test('parses the profile.json fixture', () => {
  const summary = parseProfileSummary(summaryText, SUMMARY_FIXTURE);
  assert.equal(summary.totals.on_cpu, 105);
  assert.equal(summary.fibers.length, 2);
  assert.deepEqual(summary.functions[0], {
    name: 'mix',
    file: '/w/hotspot.c',
    line: 12,
    self: 40,
    total: 40,
    self_pct: 38.1,
    total_pct: 38.1,
  });
  assert.equal(summary.functions.find((fn) => fn.name === 'clone3')?.file, '');
  assert.deepEqual(summary.lines[1], { file: '/w/hotspot.c', line: 26, samples: 70, self: 30, percent: 66.7 });
});

test('rejects malformed profile.json files', () => {
  const good = JSON.parse(summaryText);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- arbitrary mutations of parsed JSON
  const variant = (mutate: (value: any) => void) => {
    const copy = structuredClone(good);
    mutate(copy);
    return JSON.stringify(copy);
  };
  rejects(variant((v) => (v.version = 2)), /version: unsupported version 2/, parseProfileSummary);
  rejects(variant((v) => delete v.totals.on_cpu), /totals\.on_cpu: missing/, parseProfileSummary);
  rejects(variant((v) => (v.lines[0].line = 'x')), /lines\[0\]\.line: expected a number/, parseProfileSummary);
  rejects(variant((v) => (v.functions = {})), /functions: expected an array/, parseProfileSummary);
});

test('the summary sits beside the speedscope file under the same stem', () => {
  assert.equal(siblingSummaryPath('/tmp/o/hot.speedscope.json'), '/tmp/o/hot.profile.json');
  assert.equal(siblingSummaryPath('/tmp/o/hot.json'), undefined);
  assert.equal(speedscopePathFor('/tmp/o/hot.profile.json'), '/tmp/o/hot.speedscope.json');
  assert.equal(speedscopePathFor('/tmp/o/hot.speedscope.json'), '/tmp/o/hot.speedscope.json');
  assert.equal(speedscopePathFor('/tmp/o/other.json'), '/tmp/o/other.json');
});

test('reads the exporter\'s own golden outputs', () => {
  const pair = (name: string) => {
    const base = join(FIXTURES, `exporter-${name}`);
    return {
      document: parseSpeedscope(readFileSync(`${base}.speedscope.json`, 'utf8'), `${base}.speedscope.json`),
      summary: parseProfileSummary(readFileSync(`${base}.profile.json`, 'utf8'), `${base}.profile.json`),
    };
  };
  const odd = pair('odd-names');
  assert.deepEqual(odd.summary.fibers.map((fiber) => fiber.fiber), [0, -1]);
  assert.deepEqual(odd.document.profiles.map((p) => p.name), ['odd-9 (main)', 'effect--1']);
  assert.equal(odd.document.frames[1].name, 'two\nlines');
  assert.deepEqual(odd.document.profiles[1].samples[1], [2, 1, 3]);
  assert.equal(odd.document.frames[3].file, undefined);

  const recursion = pair('recursion-inline');
  assert.deepEqual(recursion.document.profiles[0].samples[0], [3, 0, 0, 0]);
  assert.equal(recursion.summary.functions.length, 4);

  const twoFibers = pair('two-fibers');
  assert.equal(twoFibers.document.profiles.length, twoFibers.summary.fibers.length);
});

/* Every golden pair the writers' tests keep in the repository (tests/data/writers/<case>/), so
 * a change of output format on the C side fails here too. */
const writerGoldens = join(FIXTURES, '..', '..', 'tests', 'data', 'writers');
test(
  'reads every golden pair of the writers\' tests in the repository',
  { skip: existsSync(writerGoldens) ? false : `${writerGoldens} is not in this checkout` },
  () => {
    const cases = readdirSync(writerGoldens).filter((name) =>
      existsSync(join(writerGoldens, name, 'expected.speedscope.json')),
    );
    assert.ok(cases.length > 0);
    for (const name of cases) {
      const base = join(writerGoldens, name, 'expected');
      const document = parseSpeedscope(readFileSync(`${base}.speedscope.json`, 'utf8'), `${base}.speedscope.json`);
      const summary = parseProfileSummary(readFileSync(`${base}.profile.json`, 'utf8'), `${base}.profile.json`);
      assert.equal(document.profiles.length, summary.fibers.length, name);
    }
  },
);
