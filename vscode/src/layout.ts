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
 * Also here: the search (which frames match, and what share of samples contains a match) and
 * the hot-function table derived from samples when no profile.json is at hand.
 */

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
}

export interface Rect {
  frame: number;
  depth: number;
  /** Milliseconds from the left edge of the view. */
  start: number;
  /** Milliseconds of samples in which this frame is on the stack at this place. */
  width: number;
  /** Milliseconds of those samples in which this frame is the leaf. */
  self: number;
  samples: number;
  selfSamples: number;
}

export interface Layout {
  rects: Rect[];
  /** rects grouped by depth, each group sorted by start — for hit testing. */
  byDepth: Rect[][];
  totalWeight: number;
  totalSamples: number;
}

/* The samples of one fiber, or of every fiber one after another (profile order). */
export function selectSamples(document: FlameDocument, fiber: FiberSelection): Samples {
  if (fiber !== ALL_FIBERS) {
    const profile = document.profiles[fiber];
    if (!profile) throw new RangeError(`no fiber ${fiber}`);
    return { stacks: profile.samples, weights: profile.weights };
  }
  const stacks: number[][] = [];
  const weights: number[] = [];
  for (const profile of document.profiles) {
    for (let i = 0; i < profile.samples.length; i++) {
      stacks.push(profile.samples[i]);
      weights.push(profile.weights[i]);
    }
  }
  return { stacks, weights };
}

function finish(rects: Rect[], totalWeight: number, totalSamples: number): Layout {
  const byDepth: Rect[][] = [];
  for (const rect of rects) (byDepth[rect.depth] ??= []).push(rect);
  for (const row of byDepth) row?.sort((a, b) => a.start - b.start);
  for (let depth = 0; depth < byDepth.length; depth++) byDepth[depth] ??= [];
  return { rects, byDepth, totalWeight, totalSamples };
}

interface TreeNode {
  frame: number;
  weight: number;
  self: number;
  samples: number;
  selfSamples: number;
  children: Map<number, TreeNode>;
}

function newNode(frame: number): TreeNode {
  return { frame, weight: 0, self: 0, samples: 0, selfSamples: 0, children: new Map() };
}

/* Left Heavy: stacks merged into a tree; children heaviest first, ties by ascending rank. */
export function layoutLeftHeavy(samples: Samples, ranks: Int32Array): Layout {
  const root = newNode(-1);
  let totalWeight = 0;
  for (let i = 0; i < samples.stacks.length; i++) {
    const stack = samples.stacks[i];
    const weight = samples.weights[i];
    totalWeight += weight;
    let node = root;
    for (const frame of stack) {
      let child = node.children.get(frame);
      if (!child) node.children.set(frame, (child = newNode(frame)));
      child.weight += weight;
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
  return finish(rects, totalWeight, samples.stacks.length);
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
    let shared = 0;
    while (shared < stack.length && shared < open.length && open[shared].frame === stack[shared]) shared++;
    while (open.length > shared) open.pop();
    for (let depth = 0; depth < shared; depth++) {
      open[depth].width += weight;
      open[depth].samples += 1;
    }
    for (let depth = shared; depth < stack.length; depth++) {
      const rect = { frame: stack[depth], depth, start: x, width: weight, self: 0, samples: 1, selfSamples: 0 };
      rects.push(rect);
      open.push(rect);
    }
    if (stack.length > 0) {
      open[stack.length - 1].self += weight;
      open[stack.length - 1].selfSamples += 1;
    }
    x += weight;
  }
  return finish(rects, x, samples.stacks.length);
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

/* How many samples have at least one matching frame on their stack. */
export function countMatchingSamples(samples: Samples, matches: Uint8Array): number {
  let count = 0;
  for (const stack of samples.stacks) if (stack.some((frame) => matches[frame] === 1)) count++;
  return count;
}

export interface HotFunction {
  name: string;
  file: string;
  line: number;
  /** Samples where the function is the leaf. */
  self: number;
  /** Samples where the function is anywhere on the stack (counted once per sample). */
  total: number;
  selfPercent: number;
  totalPercent: number;
}

/* A self/total table computed from samples, one row per frame that appears, sorted by self
 * desc, then total desc, then name. Used when no profile.json sits beside the speedscope. */
export function hotFunctionsFromSamples(frames: readonly Frame[], samples: Samples): HotFunction[] {
  const self = new Float64Array(frames.length);
  const total = new Float64Array(frames.length);
  const seen = new Int32Array(frames.length).fill(-1);
  samples.stacks.forEach((stack, sampleIndex) => {
    for (const frame of stack) {
      if (seen[frame] !== sampleIndex) {
        seen[frame] = sampleIndex;
        total[frame] += 1;
      }
    }
    if (stack.length > 0) self[stack[stack.length - 1]] += 1;
  });
  const count = samples.stacks.length;
  const percent = (value: number) => (count === 0 ? 0 : Math.round((value / count) * 1000) / 10);
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
