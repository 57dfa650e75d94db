/*
 * Frame colours and the frame order. A frame's colour is a function of its own identity — its
 * name and the base name of its file — hashed onto a fixed ramp, so a function keeps its colour
 * across runs of the same program (and across checkouts in other folders), whatever else the
 * profile holds. The order on frames (file, then name, then index) is the deterministic total
 * order the flame graph breaks ties with, so the same document is drawn the same everywhere.
 *
 * DESIGN. The comparator is a TOTAL order on frames: it answers 0 only for the same frame
 * (same index). Without the index term, two frames sharing file and name (one function
 * inlined at two sites, two runtime frames with no file) would compare equal and their ranks
 * would follow the array order a stable sort preserves — a property of the document's layout,
 * not of the frames. File and name are compared as a PAIR (file first, then name), never as
 * one spliced string, so ("/w/a b.osp", "z") and ("/w/a", "b.osp z") stay distinct. Strings
 * compare by UTF-16 code unit (`<`), never localeCompare, whose answer depends on the locale.
 * A missing file compares as "", so frames without a file rank first.
 */

import type { Frame } from './model';

/* Code-unit order: -1, 0 or 1. */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/* Total order on frame indices of one document: file, then name, then index. */
export function compareFrames(frames: readonly Frame[], a: number, b: number): number {
  const byFile = compareCodeUnits(frames[a].file ?? '', frames[b].file ?? '');
  if (byFile !== 0) return byFile;
  const byName = compareCodeUnits(frames[a].name, frames[b].name);
  if (byName !== 0) return byName;
  return a < b ? -1 : a > b ? 1 : 0;
}

/* ranks[i] = position of frame i in the total order (0-based, a permutation of 0..n-1). */
export function frameRanks(frames: readonly Frame[]): Int32Array {
  const order = Array.from(frames, (_, index) => index).sort((a, b) => compareFrames(frames, a, b));
  const ranks = new Int32Array(frames.length);
  order.forEach((frameIndex, rank) => {
    ranks[frameIndex] = rank;
  });
  return ranks;
}

/* A fixed warm ramp (flame-graph tradition); neighbouring entries differ enough that
 * neighbouring ranks — usually functions of one file — stay distinguishable. */
export const RAMP: readonly string[] = [
  '#e8743b', '#f2b134', '#d9534f', '#f59c5b', '#c9a227', '#e0603a',
  '#f7c66b', '#cf6d3f', '#eb8f4a', '#d4b13c', '#e24f4f', '#f0a870',
];

/* FNV-1a over UTF-16 code units. */
function fnv1a(text: string, hash: number): number {
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/* The identity a colour is drawn from: (base name of the file, name) as a PAIR — each part
 * length-prefixed, so ("a b", "c") and ("a", "b c") hash as different keys. The folder is left
 * out so the same program built in another checkout keeps its colours. */
export function colourKey(frame: Frame): string {
  const file = (frame.file ?? '').split('/').pop() ?? '';
  return `${file.length}:${file}${frame.name.length}:${frame.name}`;
}

/* The ramp colour of one frame, from its identity alone. */
export function identityColour(frame: Frame): string {
  return RAMP[fnv1a(colourKey(frame), 0x811c9dc5) % RAMP.length];
}

/* The synthetic leaf the exporter adds under waiting samples; drawn grey so blocked time never
 * reads as CPU time. A function of the frame alone, like every other colour. */
export const WAITING_FRAME_NAME = '(waiting)';
export const WAITING_COLOUR = '#9a9a9a';

export function isWaitingFrame(frame: Frame): boolean {
  return frame.name === WAITING_FRAME_NAME && frame.file === undefined;
}

/* Colour for every frame of a document, indexed like frames. */
export function frameColours(frames: readonly Frame[]): string[] {
  return frames.map((frame) => (isWaitingFrame(frame) ? WAITING_COLOUR : identityColour(frame)));
}
