import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { heatForFile, heatText, heatTier, samePath } from '../heat';
import { parseProfileSummary } from '../model';
import { SUMMARY_FIXTURE } from './fixtures';

test('tiers by percent: >= 5 hot, >= 0.5 warm, else cool', () => {
  assert.equal(heatTier(91.7), 'hot');
  assert.equal(heatTier(5), 'hot');
  assert.equal(heatTier(4.9), 'warm');
  assert.equal(heatTier(0.5), 'warm');
  assert.equal(heatTier(0.4), 'cool');
  assert.equal(heatTier(0), 'cool');
});

test('after-line text reads "NN.N% · M samples"', () => {
  assert.equal(heatText({ file: '/a.c', line: 1, samples: 1650, self: 1600, percent: 91.7 }), '91.7% · 1,650 samples');
  assert.equal(heatText({ file: '/a.c', line: 1, samples: 1, self: 1, percent: 0.1 }), '0.1% · 1 sample');
  assert.equal(heatText({ file: '/a.c', line: 1, samples: 20, self: 1, percent: 5 }), '5.0% · 20 samples');
});

test('heat for one file: only its lines, 0-based, in line order', () => {
  const summary = parseProfileSummary(readFileSync(SUMMARY_FIXTURE, 'utf8'), SUMMARY_FIXTURE);
  const heat = heatForFile(summary, '/w/hotspot.c');
  assert.deepEqual(
    heat.map((entry) => [entry.line, entry.tier, entry.text]),
    [
      [14, 'hot', '38.1% · 40 samples'],
      [25, 'hot', '66.7% · 70 samples'],
      [33, 'hot', '28.6% · 30 samples'],
      [49, 'hot', '95.2% · 100 samples'],
      [60, 'warm', '4.8% · 5 samples'],
      [61, 'warm', '1.9% · 2 samples'],
    ],
  );
  assert.deepEqual(heatForFile(summary, '/w/other.c').map((entry) => entry.line), [2]);
  assert.deepEqual(heatForFile(summary, '/w/nothing.c'), []);
  assert.equal(heatForFile(summary, '/w/./sub/../hotspot.c').length, 6, 'paths are compared normalised');
});

test('path comparison folds case only where the file system does', () => {
  assert.ok(samePath('/w/A.c', '/w/a.c', 'darwin'));
  assert.ok(!samePath('/w/A.c', '/w/a.c', 'linux'));
});
