import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { frameRanks } from '../colour';
import {
  ALL_FIBERS,
  countMatchingSamples,
  firstRectEndingAfter,
  hotFunctionsFromSamples,
  layoutLeftHeavy,
  layoutTimeOrder,
  matchFrames,
  rectAt,
  selectSamples,
  sortHotFunctions,
  type Layout,
  type Rect,
} from '../layout';
import { parseSpeedscope } from '../model';
import { SPEEDSCOPE_FIXTURE } from './fixtures';

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
  const all = selectSamples(document, ALL_FIBERS);
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
  const layout = layoutLeftHeavy(selectSamples(document, ALL_FIBERS), ranks);
  assert.deepEqual(
    layout.byDepth[0].map((rect) => document.frames[rect.frame].name),
    ['clone3', 'main'],
  );
  near(layout.byDepth[0][1].start, 100 * W, 'main starts after clone3');
});

test('children never stick out of their parent and siblings do not overlap', () => {
  for (const layout of [
    layoutLeftHeavy(selectSamples(document, ALL_FIBERS), ranks),
    layoutTimeOrder(selectSamples(document, ALL_FIBERS)),
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
  const layout = layoutTimeOrder({ stacks: [[0, 5], [4, 5], [4, 5], [0, 5]], weights: [1, 1, 1, 1] });
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
  assert.equal(countMatchingSamples(selectSamples(document, THREAD), matches), 40);
  assert.equal(countMatchingSamples(selectSamples(document, ALL_FIBERS), matches), 40);
  const block = matchFrames(document.frames, '_block')!;
  assert.equal(countMatchingSamples(selectSamples(document, THREAD), block), 100);
  assert.equal(countMatchingSamples(selectSamples(document, 0), block), 0);
});

test('hot functions from samples: self at the leaf, total once per sample', () => {
  const rows = hotFunctionsFromSamples(document.frames, selectSamples(document, ALL_FIBERS));
  assert.deepEqual(rows.slice(0, 4).map((row) => [row.name, row.self, row.total, row.selfPercent]), [
    ['(waiting)', 95, 95, 47.5],
    ['mix', 40, 40, 20],
    ['checksum_block', 30, 70, 15],
    ['fill_block', 30, 30, 15],
  ]);
  const recursive = hotFunctionsFromSamples(document.frames, { stacks: [[0, 0, 0]], weights: [1] });
  assert.deepEqual(recursive.map((row) => [row.name, row.self, row.total]), [['main', 1, 1]]);
  const byTotal = sortHotFunctions(rows, 'total');
  // Equal totals fall back to self (main ran 5 samples itself), then to the name.
  assert.deepEqual(byTotal.slice(0, 4).map((row) => row.total), [100, 100, 100, 100]);
  assert.deepEqual(byTotal.slice(0, 4).map((row) => row.name), ['main', 'clone3', 'start_thread', 'worker']);
});

test('an empty selection lays out to nothing without dividing by zero', () => {
  const empty = { stacks: [], weights: [] };
  for (const layout of [layoutLeftHeavy(empty, ranks), layoutTimeOrder(empty)]) {
    assert.equal(layout.rects.length, 0);
    assert.equal(layout.totalWeight, 0);
    assert.equal(rectAt(layout, 0, 0), undefined);
  }
  assert.deepEqual(hotFunctionsFromSamples(document.frames, empty), []);
  // A sample with an empty stack takes time in Time Order but draws nothing.
  const gap = layoutTimeOrder({ stacks: [[0], [], [0]], weights: [1, 1, 1] });
  assert.deepEqual(gap.rects.map((rect) => [rect.start, rect.width]), [[0, 1], [2, 1]]);
});
