/*
 * Flame-graph geometry: which samples a view shows (one fiber or all of them), and how their
 * stacks become rectangles. A rectangle spans [start, start + width) in milliseconds of sample
 * weight along x and sits at one depth (0 = root) along y; the drawing code only scales it.
 *
 * - Left Heavy merges identical stack prefixes into one tree and orders each node's children
 *   by weight, heaviest first (ties by frame rank, so the picture is a function of the
 *   profile). It answers "where does the time go".
 * - Time Order keeps samples in recorded order and merges a frame with the same frame at the
 *   same depth of the previous sample when the whole stack above it is equal — adjacent equal
 *   stacks become one rectangle. It answers "what happened when".
 *
 * Every number the view shows comes from here, computed from the selected samples: the hot
 * table, the tooltip, the search share and the status line. Percentages are shares of ON-CPU
 * time (a sample whose leaf is the exporter's `(waiting)` frame is waiting time), as in the
 * terminal report and profile.json; waiting samples are left out of the selection unless asked
 * for, and then counted as waiting, never as CPU. Frames named `osp__*` (the profiler's own)
 * are dropped from every stack.
 */

import { isWaitingFrame } from './colour';
import type { FlameDocument, Frame } from './model';

export type ViewKind = 'left-heavy' | 'time-order';

/** A fiber index into FlameDocument.profiles, or ALL_FIBERS. */
export type FiberSelection = number;
export const ALL_FIBERS = -1;

export interface Samples {
  /** Root-first stacks of frame indices. */
  stacks: number[][];
  /** Milliseconds per sample, parallel to stacks. */
  weights: number[];
  /** 1 where the sample is waiting time (its leaf is `(waiting)`), parallel to stacks. */
  waiting: Uint8Array;
  /** Milliseconds of on-CPU samples. */
  onCpuWeight: number;
  /** Milliseconds of waiting samples (0 when they were left out). */
  waitingWeight: number;
}

export interface SelectOptions {
  /** Keep waiting samples (drawn grey, counted apart). Default false. */
  includeWaiting?: boolean;
}

/** The profiler's own frames start with this; they are removed from every stack. */
export const PROFILER_FRAME_PREFIX = 'osp__';

export interface Rect {
  frame: number;
  depth: number;
  /** Milliseconds from the left edge of the view. */
  start: number;
  /** Milliseconds of samples in which this frame is on the stack at this place. */
  width: number;
  /** Milliseconds of those samples in which this frame is the leaf. */
  self: number;
  /** Milliseconds of width that are waiting samples. */
  waiting: number;
  samples: number;
  selfSamples: number;
}

export interface Layout {
  rects: Rect[];
  /** rects grouped by depth, each group sorted by start — for hit testing. */
  byDepth: Rect[][];
  totalWeight: number;
  /** Milliseconds of on-CPU samples: the whole that percentages are of. */
  onCpuWeight: number;
  totalSamples: number;
}

/* The samples of one fiber, or of every fiber one after another (profile order); waiting
 * samples only when asked for, `osp__*` frames removed. */
export function selectSamples(document: FlameDocument, fiber: FiberSelection, options: SelectOptions = {}): Samples {
  const fibers = fiber === ALL_FIBERS ? document.profiles : [document.profiles[fiber]];
  if (fibers[0] === undefined) throw new RangeError(`no fiber ${fiber}`);
  const ignored = Uint8Array.from(document.frames, (frame) => (frame.name.startsWith(PROFILER_FRAME_PREFIX) ? 1 : 0));
  const waitingLeaf = Uint8Array.from(document.frames, (frame) => (isWaitingFrame(frame) ? 1 : 0));
  const anyIgnored = ignored.includes(1);
  const stacks: number[][] = [];
  const weights: number[] = [];
  const waiting: number[] = [];
  let onCpuWeight = 0;
  let waitingWeight = 0;
  for (const profile of fibers) {
    for (let i = 0; i < profile.samples.length; i++) {
      let stack = profile.samples[i];
      const isWaiting = stack.length > 0 && waitingLeaf[stack[stack.length - 1]] === 1;
      if (isWaiting && !options.includeWaiting) continue;
      if (anyIgnored) stack = stack.filter((frame) => ignored[frame] === 0);
      stacks.push(stack);
      weights.push(profile.weights[i]);
      waiting.push(isWaiting ? 1 : 0);
      if (isWaiting) waitingWeight += profile.weights[i];
      else onCpuWeight += profile.weights[i];
    }
  }
  return { stacks, weights, waiting: Uint8Array.from(waiting), onCpuWeight, waitingWeight };
}

/* Milliseconds of one sampling period: the smallest weight in the document (a row stands for
 * one or more periods). Turns milliseconds back into sample counts. */
export function periodMs(document: FlameDocument): number {
  let smallest = Infinity;
  for (const profile of document.profiles) for (const weight of profile.weights) if (weight > 0 && weight < smallest) smallest = weight;
  return Number.isFinite(smallest) ? smallest : 1;
}

/* Milliseconds as a count of sampling periods ("samples"). */
export function toSamples(ms: number, period: number): number {
  return Math.round(ms / period);
}

function finish(rects: Rect[], totalWeight: number, onCpuWeight: number, totalSamples: number): Layout {
  const byDepth: Rect[][] = [];
  for (const rect of rects) (byDepth[rect.depth] ??= []).push(rect);
  for (const row of byDepth) row?.sort((a, b) => a.start - b.start);
  for (let depth = 0; depth < byDepth.length; depth++) byDepth[depth] ??= [];
  return { rects, byDepth, totalWeight, onCpuWeight, totalSamples };
}

interface TreeNode {
  frame: number;
  weight: number;
  self: number;
  waiting: number;
  samples: number;
  selfSamples: number;
  children: Map<number, TreeNode>;
}

function newNode(frame: number): TreeNode {
  return { frame, weight: 0, self: 0, waiting: 0, samples: 0, selfSamples: 0, children: new Map() };
}

/* Left Heavy: stacks merged into a tree; children heaviest first, ties by ascending rank. */
export function layoutLeftHeavy(samples: Samples, ranks: Int32Array): Layout {
  const root = newNode(-1);
  let totalWeight = 0;
  for (let i = 0; i < samples.stacks.length; i++) {
    const stack = samples.stacks[i];
    const weight = samples.weights[i];
    const waiting = samples.waiting[i] === 1 ? weight : 0;
    totalWeight += weight;
    let node = root;
    for (const frame of stack) {
      let child = node.children.get(frame);
      if (!child) node.children.set(frame, (child = newNode(frame)));
      child.weight += weight;
      child.waiting += waiting;
      child.samples += 1;
      node = child;
    }
    if (node !== root) {
      node.self += weight;
      node.selfSamples += 1;
    }
  }
  const rects: Rect[] = [];
  // Explicit work list: stacks can be deeper than the JS call stack is comfortable with.
  const work: { node: TreeNode; depth: number; start: number }[] = [{ node: root, depth: -1, start: 0 }];
  while (work.length > 0) {
    const { node, depth, start } = work.pop()!;
    if (depth >= 0) {
      rects.push({
        frame: node.frame,
        depth,
        start,
        width: node.weight,
        self: node.self,
        waiting: node.waiting,
        samples: node.samples,
        selfSamples: node.selfSamples,
      });
    }
    const children = [...node.children.values()].sort(
      (a, b) => b.weight - a.weight || ranks[a.frame] - ranks[b.frame],
    );
    let childStart = start;
    for (const child of children) {
      work.push({ node: child, depth: depth + 1, start: childStart });
      childStart += child.weight;
    }
  }
  return finish(rects, totalWeight, samples.onCpuWeight, samples.stacks.length);
}

/* Time Order: samples in recorded order; a frame continues the previous sample's rectangle
 * at its depth when every frame from the root down to it is the same. */
export function layoutTimeOrder(samples: Samples): Layout {
  const rects: Rect[] = [];
  const open: Rect[] = [];
  let x = 0;
  for (let i = 0; i < samples.stacks.length; i++) {
    const stack = samples.stacks[i];
    const weight = samples.weights[i];
    const waiting = samples.waiting[i] === 1 ? weight : 0;
    let shared = 0;
    while (shared < stack.length && shared < open.length && open[shared].frame === stack[shared]) shared++;
    while (open.length > shared) open.pop();
    for (let depth = 0; depth < shared; depth++) {
      open[depth].width += weight;
      open[depth].waiting += waiting;
      open[depth].samples += 1;
    }
    for (let depth = shared; depth < stack.length; depth++) {
      const rect = { frame: stack[depth], depth, start: x, width: weight, self: 0, waiting, samples: 1, selfSamples: 0 };
      rects.push(rect);
      open.push(rect);
    }
    if (stack.length > 0) {
      open[stack.length - 1].self += weight;
      open[stack.length - 1].selfSamples += 1;
    }
    x += weight;
  }
  return finish(rects, x, samples.onCpuWeight, samples.stacks.length);
}

export function layoutView(samples: Samples, view: ViewKind, ranks: Int32Array): Layout {
  return view === 'left-heavy' ? layoutLeftHeavy(samples, ranks) : layoutTimeOrder(samples);
}

/* Index of the first rectangle of a row (sorted, non-overlapping) that ends after x;
 * row.length when none does. */
export function firstRectEndingAfter(row: readonly Rect[], x: number): number {
  let low = 0;
  let high = row.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (row[middle].start + row[middle].width <= x) low = middle + 1;
    else high = middle;
  }
  return low;
}

/* The rectangle covering x (ms) at a depth, or undefined. */
export function rectAt(layout: Layout, depth: number, x: number): Rect | undefined {
  const row = layout.byDepth[depth];
  if (!row) return undefined;
  const rect = row[firstRectEndingAfter(row, x)];
  return rect && rect.start <= x ? rect : undefined;
}

/* Frames whose name contains the query, case-insensitively; undefined for an empty query. */
export function matchFrames(frames: readonly Frame[], query: string): Uint8Array | undefined {
  const needle = query.trim().toLowerCase();
  if (needle === '') return undefined;
  return Uint8Array.from(frames, (frame) => (frame.name.toLowerCase().includes(needle) ? 1 : 0));
}

/* Milliseconds of ON-CPU samples with at least one matching frame on their stack. */
export function matchingOnCpuWeight(samples: Samples, matches: Uint8Array): number {
  let weight = 0;
  samples.stacks.forEach((stack, index) => {
    if (samples.waiting[index] === 0 && stack.some((frame) => matches[frame] === 1)) weight += samples.weights[index];
  });
  return weight;
}

export interface HotFunction {
  name: string;
  file: string;
  line: number;
  /** On-CPU milliseconds where the function is the leaf. */
  self: number;
  /** On-CPU milliseconds where the function is anywhere on the stack (once per sample). */
  total: number;
  /** Shares of the selection's on-CPU milliseconds, rounded to 0.1 as profile.json rounds. */
  selfPercent: number;
  totalPercent: number;
}

/* The hot-function table of a selection: on-CPU samples only, one row per function that is on
 * an on-CPU stack, sorted by self desc, then total desc, then name. A function is its frame:
 * the exporter writes one frame per function, so these rows are profile.json's `functions`
 * restricted to the selection. */
export function hotFunctions(frames: readonly Frame[], samples: Samples): HotFunction[] {
  const self = new Float64Array(frames.length);
  const total = new Float64Array(frames.length);
  const seen = new Int32Array(frames.length).fill(-1);
  samples.stacks.forEach((stack, sampleIndex) => {
    if (samples.waiting[sampleIndex] === 1) return;
    const weight = samples.weights[sampleIndex];
    for (const frame of stack) {
      if (seen[frame] !== sampleIndex) {
        seen[frame] = sampleIndex;
        total[frame] += weight;
      }
    }
    if (stack.length > 0) self[stack[stack.length - 1]] += weight;
  });
  const whole = samples.onCpuWeight;
  // Weights are milliseconds, whole periods each: their ratio carries floating-point noise far
  // below 1e-12, so it is nudged by that much to round a share that is exactly a tenth's half in
  // samples (23 of 1840: 1.25%) up, as profile.json's rounding of sample counts does.
  const percent = (value: number) => {
    if (whole === 0) return 0;
    const tenths = (value / whole) * 1000;
    return Math.round(tenths * (1 + 1e-12)) / 10;
  };
  const rows: HotFunction[] = [];
  frames.forEach((frame, index) => {
    if (total[index] === 0) return;
    rows.push({
      name: frame.name,
      file: frame.file ?? '',
      line: frame.line ?? 0,
      self: self[index],
      total: total[index],
      selfPercent: percent(self[index]),
      totalPercent: percent(total[index]),
    });
  });
  return sortHotFunctions(rows, 'self');
}

export type HotSortKey = 'self' | 'total';

/* Sorted copy: by the key desc, then the other desc, then name (code units), then file. */
export function sortHotFunctions(rows: readonly HotFunction[], key: HotSortKey): HotFunction[] {
  const other: HotSortKey = key === 'self' ? 'total' : 'self';
  return [...rows].sort(
    (a, b) =>
      b[key] - a[key] ||
      b[other] - a[other] ||
      (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) ||
      (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) ||
      a.line - b.line,
  );
}
