import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { frameRanks } from '../colour';
import {
  ALL_FIBERS,
  firstRectEndingAfter,
  hotFunctions,
  matchingOnCpuWeight,
  periodMs,
  toSamples,
  layoutLeftHeavy,
  layoutTimeOrder,
  matchFrames,
  rectAt,
  selectSamples,
  sortHotFunctions,
  type Layout,
  type Rect,
} from '../layout';
import { parseProfileSummary, parseSpeedscope } from '../model';
import { FIXTURES, SPEEDSCOPE_FIXTURE } from './fixtures';
import * as path from 'path';

const document = parseSpeedscope(readFileSync(SPEEDSCOPE_FIXTURE, 'utf8'), SPEEDSCOPE_FIXTURE);
const ranks = frameRanks(document.frames);
const W = 1.003;
const THREAD = 1;
const frameIndex = (name: string) => document.frames.findIndex((frame) => frame.name === name);

function near(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual} != ${expected}`);
}

function rectsOf(layout: Layout, name: string): Rect[] {
  return layout.rects.filter((rect) => rect.frame === frameIndex(name));
}

test('selecting a fiber gives its samples; all fibers concatenates them in profile order', () => {
  assert.equal(selectSamples(document, THREAD).stacks.length, 100);
  const all = selectSamples(document, ALL_FIBERS, { includeWaiting: true });
  assert.equal(all.stacks.length, 200);
  assert.deepEqual(all.stacks[0], document.profiles[0].samples[0]);
  assert.deepEqual(all.stacks[100], document.profiles[1].samples[0]);
  assert.throws(() => selectSamples(document, 7), RangeError);
});

test('Left Heavy merges stacks and puts the heaviest child first', () => {
  const layout = layoutLeftHeavy(selectSamples(document, THREAD), ranks);
  near(layout.totalWeight, 100 * W, 'total');
  assert.equal(layout.totalSamples, 100);
  assert.equal(layout.byDepth.length, 5);
  const [checksum] = rectsOf(layout, 'checksum_block');
  const [fill] = rectsOf(layout, 'fill_block');
  const [mix] = rectsOf(layout, 'mix');
  assert.equal(rectsOf(layout, 'checksum_block').length, 1);
  assert.equal(checksum.depth, 3);
  near(checksum.start, 0, 'checksum start');
  near(checksum.width, 70 * W, 'checksum width');
  near(checksum.self, 30 * W, 'checksum self');
  assert.equal(checksum.samples, 70);
  assert.equal(checksum.selfSamples, 30);
  near(fill.start, 70 * W, 'fill start');
  near(fill.width, 30 * W, 'fill width');
  assert.equal(mix.depth, 4);
  near(mix.start, 0, 'mix under checksum');
  near(mix.width, 40 * W, 'mix width');
  const [root] = layout.byDepth[0];
  assert.equal(document.frames[root.frame].name, 'clone3');
  near(root.width, 100 * W, 'root spans everything');
  near(root.self, 0, 'root self');
});

test('Left Heavy breaks weight ties by frame rank, not by document order', () => {
  // Both fibers weigh 100 samples: clone3 (no file, ranks first) goes left of main.
  const layout = layoutLeftHeavy(selectSamples(document, ALL_FIBERS, { includeWaiting: true }), ranks);
  assert.deepEqual(
    layout.byDepth[0].map((rect) => document.frames[rect.frame].name),
    ['clone3', 'main'],
  );
  near(layout.byDepth[0][1].start, 100 * W, 'main starts after clone3');
});

test('children never stick out of their parent and siblings do not overlap', () => {
  for (const layout of [
    layoutLeftHeavy(selectSamples(document, ALL_FIBERS, { includeWaiting: true }), ranks),
    layoutTimeOrder(selectSamples(document, ALL_FIBERS, { includeWaiting: true })),
  ]) {
    for (let depth = 1; depth < layout.byDepth.length; depth++) {
      const row = layout.byDepth[depth];
      for (let i = 0; i < row.length; i++) {
        const rect = row[i];
        if (i > 0) assert.ok(row[i - 1].start + row[i - 1].width <= rect.start + 1e-9, 'overlap');
        const parent = rectAt(layout, depth - 1, rect.start + rect.width / 2);
        if (!parent) assert.fail(`no parent for a rect at depth ${depth}`);
        assert.ok(parent.start <= rect.start + 1e-9 && rect.start + rect.width <= parent.start + parent.width + 1e-9);
      }
    }
  }
});

test('Time Order keeps recorded order and merges adjacent equal stacks', () => {
  const layout = layoutTimeOrder(selectSamples(document, THREAD));
  near(layout.totalWeight, 100 * W, 'total');
  // The thread alternates 3 fill_block, then 7 checksum_block (the last 4 inside mix), ten times.
  const fills = rectsOf(layout, 'fill_block');
  const checksums = rectsOf(layout, 'checksum_block');
  const mixes = rectsOf(layout, 'mix');
  assert.equal(fills.length, 10);
  assert.equal(checksums.length, 10);
  assert.equal(mixes.length, 10);
  fills.forEach((fill, block) => {
    near(fill.start, block * 10 * W, `fill ${block} start`);
    near(fill.width, 3 * W, `fill ${block} width`);
    near(checksums[block].start, (block * 10 + 3) * W, `checksum ${block} start`);
    near(checksums[block].width, 7 * W, `checksum ${block} width`);
    near(checksums[block].self, 3 * W, `checksum ${block} self`);
    near(mixes[block].start, (block * 10 + 6) * W, `mix ${block} start`);
    assert.equal(mixes[block].samples, 4);
  });
  // Frames above a change continue: one clone3, one start_thread, one worker.
  assert.equal(rectsOf(layout, 'clone3').length, 1);
  assert.equal(rectsOf(layout, 'worker').length, 1);
});

test('Time Order does not merge equal frames whose callers differ', () => {
  const layout = layoutTimeOrder({ stacks: [[0, 5], [4, 5], [4, 5], [0, 5]], weights: [1, 1, 1, 1], waiting: new Uint8Array(4), onCpuWeight: 4, waitingWeight: 0 });
  assert.deepEqual(
    layout.byDepth[1].map((rect) => [rect.start, rect.width]),
    [[0, 1], [1, 2], [3, 1]],
  );
});

test('hit testing finds the rectangle under a point', () => {
  const layout = layoutLeftHeavy(selectSamples(document, THREAD), ranks);
  assert.equal(rectAt(layout, 3, 35 * W)?.frame, frameIndex('checksum_block'));
  assert.equal(rectAt(layout, 3, 85 * W)?.frame, frameIndex('fill_block'));
  assert.equal(rectAt(layout, 4, 85 * W), undefined);
  assert.equal(rectAt(layout, 9, 1), undefined);
  assert.equal(rectAt(layout, 0, 100 * W + 1), undefined);
});

test('the first rectangle of a row that reaches a point', () => {
  const row = layoutTimeOrder(selectSamples(document, THREAD)).byDepth[3];
  assert.equal(firstRectEndingAfter(row, 0), 0);
  assert.equal(firstRectEndingAfter(row, 3 * W - 1e-6), 0);
  assert.equal(firstRectEndingAfter(row, 3 * W + 1e-6), 1);
  assert.equal(firstRectEndingAfter(row, 95 * W), 19);
  assert.equal(firstRectEndingAfter(row, 100 * W + 1e-6), row.length);
  assert.equal(firstRectEndingAfter([], 1), 0);
});

test('search matches names case-insensitively and reports the share of samples', () => {
  assert.equal(matchFrames(document.frames, '   '), undefined);
  const matches = matchFrames(document.frames, 'MIX')!;
  assert.deepEqual([...matches].flatMap((m, i) => (m ? [document.frames[i].name] : [])), ['mix']);
  near(matchingOnCpuWeight(selectSamples(document, THREAD), matches), 40 * W, 'mix in thread');
  near(matchingOnCpuWeight(selectSamples(document, ALL_FIBERS), matches), 40 * W, 'mix in all');
  const block = matchFrames(document.frames, '_block')!;
  near(matchingOnCpuWeight(selectSamples(document, THREAD), block), 100 * W, 'block in thread');
  assert.equal(matchingOnCpuWeight(selectSamples(document, 0), block), 0);
  // Waiting samples never count as a match share, even when they are drawn.
  const waits = matchFrames(document.frames, 'waiting')!;
  assert.equal(matchingOnCpuWeight(selectSamples(document, ALL_FIBERS, { includeWaiting: true }), waits), 0);
});

test('hot functions: on-CPU only, self at the leaf, total once per sample, shares of on-CPU time', () => {
  const all = selectSamples(document, ALL_FIBERS, { includeWaiting: true });
  const rows = hotFunctions(document.frames, all).map((row) => ({ ...row, self: toSamples(row.self, W), total: toSamples(row.total, W) }));
  assert.deepEqual(rows.slice(0, 3).map((row) => [row.name, row.self, row.total, row.selfPercent]), [
    ['mix', 40, 40, 38.1],
    ['checksum_block', 30, 70, 28.6],
    ['fill_block', 30, 30, 28.6],
  ]);
  assert.ok(!rows.some((row) => row.name === '(waiting)'), 'waiting is not a hot function');
  const recursive = hotFunctions(document.frames, { stacks: [[0, 0, 0]], weights: [1], waiting: Uint8Array.of(0), onCpuWeight: 1, waitingWeight: 0 });
  assert.deepEqual(recursive.map((row) => [row.name, row.self, row.total]), [['main', 1, 1]]);
  // A share at a tenth's half in samples rounds up, as profile.json's does (63 of 1008 periods
  // of 1000/997 ms, summed as a profile's weights are: 6.3%, where the weights' ratio alone gave 6.2).
  const period = 1000 / 997;
  const sum = (n: number) => Array.from({ length: n }, () => period).reduce((a, b) => a + b, 0);
  const tie = hotFunctions(document.frames, { stacks: [[0], [1]], weights: [sum(63), sum(945)], waiting: Uint8Array.of(0, 0), onCpuWeight: sum(1008), waitingWeight: 0 });
  assert.equal(tie.find((row) => row.self === sum(63))?.selfPercent, 6.3);
  const byTotal = sortHotFunctions(rows, 'total');
  // Equal totals fall back to self, then to the name.
  assert.deepEqual(byTotal.slice(0, 4).map((row) => [row.name, row.total]), [
    ['clone3', 100],
    ['start_thread', 100],
    ['worker', 100],
    ['checksum_block', 70],
  ]);
});

test('an empty selection lays out to nothing without dividing by zero', () => {
  const empty = { stacks: [], weights: [], waiting: new Uint8Array(0), onCpuWeight: 0, waitingWeight: 0 };
  for (const layout of [layoutLeftHeavy(empty, ranks), layoutTimeOrder(empty)]) {
    assert.equal(layout.rects.length, 0);
    assert.equal(layout.totalWeight, 0);
    assert.equal(rectAt(layout, 0, 0), undefined);
  }
  assert.deepEqual(hotFunctions(document.frames, empty), []);
  // A sample with an empty stack takes time in Time Order but draws nothing.
  const gap = layoutTimeOrder({ stacks: [[0], [], [0]], weights: [1, 1, 1], waiting: new Uint8Array(3), onCpuWeight: 3, waitingWeight: 0 });
  assert.deepEqual(gap.rects.map((rect) => [rect.start, rect.width]), [[0, 1], [2, 1]]);
});

test('waiting time is left out by default and counted apart when shown', () => {
  const onCpu = selectSamples(document, ALL_FIBERS);
  assert.equal(onCpu.stacks.length, 105);
  near(onCpu.waitingWeight, 0, 'no waiting by default');
  const shown = selectSamples(document, ALL_FIBERS, { includeWaiting: true });
  near(shown.onCpuWeight, onCpu.onCpuWeight, 'on-CPU time does not change when waiting is shown');
  near(shown.waitingWeight, 95 * W, 'waiting time');
  const layout = layoutLeftHeavy(shown, ranks);
  const main = rectsOf(layout, 'main')[0];
  near(main.waiting, 95 * W, 'main waited 95 samples');
  near(layout.onCpuWeight, 105 * W, 'the whole percentages are of');
});

test('the profiler\'s own osp__ frames are dropped from every stack', () => {
  const withOwn = {
    ...document,
    frames: [...document.frames, { name: 'osp__sample_handler', file: '/w/shim/sample.c' }],
    profiles: [{ name: 'x', samples: [[0, document.frames.length]], weights: [1] }],
  };
  const samples = selectSamples(withOwn, 0);
  assert.deepEqual(samples.stacks, [[0]]);
});

/* One source for all numbers: the table of a real run, all fibers, is the exporter's own
 * profile.json (which the terminal report prints): same functions, counts and percentages. */
for (const stem of ['real-hotspot', 'real-mixed', 'real-mixed-weighted']) {
  test(`${stem}: the hot table is profile.json's functions, number for number`, () => {
    const flamePath = path.join(FIXTURES, `${stem}.speedscope.json`);
    const summaryPath = path.join(FIXTURES, `${stem}.profile.json`);
    const flame = parseSpeedscope(readFileSync(flamePath, 'utf8'), flamePath);
    const summary = parseProfileSummary(readFileSync(summaryPath, 'utf8'), summaryPath);
    const period = periodMs(flame);
    const samples = selectSamples(flame, ALL_FIBERS);
    assert.equal(toSamples(samples.onCpuWeight, period), summary.totals.on_cpu);
    const ours = hotFunctions(flame.frames, samples).map((row) => [row.name, row.file, toSamples(row.self, period), toSamples(row.total, period), row.selfPercent, row.totalPercent]);
    const theirs = summary.functions.map((fn) => [fn.name, fn.file, fn.self, fn.total, fn.self_pct, fn.total_pct]);
    const key = (row: unknown[]) => `${row[0]}\u0000${row[1]}`;
    assert.deepEqual(new Map(ours.map((row) => [key(row), row])), new Map(theirs.map((row) => [key(row), row])));
  });
}
