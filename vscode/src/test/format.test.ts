import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatCount, formatMs, formatPercent, formatSamples, percentOf } from '../format';

test('counts group thousands without a locale', () => {
  assert.equal(formatCount(0), '0');
  assert.equal(formatCount(999), '999');
  assert.equal(formatCount(1000), '1,000');
  assert.equal(formatCount(1234567), '1,234,567');
  assert.equal(formatCount(-4200), '-4,200');
});

test('durations pick a readable unit', () => {
  assert.equal(formatMs(0.4216), '0.42 ms');
  assert.equal(formatMs(12.54), '12.5 ms');
  assert.equal(formatMs(1830.2), '1.83 s');
});

test('percentages have one decimal', () => {
  assert.equal(formatPercent(37.24), '37.2%');
  assert.equal(formatPercent(100), '100.0%');
  assert.equal(percentOf(1, 4), 25);
  assert.equal(percentOf(1, 0), 0);
});

test('sample counts agree in number', () => {
  assert.equal(formatSamples(1), '1 sample');
  assert.equal(formatSamples(3631), '3,631 samples');
});
