/*
 * Per-line heat from `<stem>.profile.json` lines[]: which lines of one file get an after-line
 * note `NN.N% · M samples`, and in which tier. The editor side only turns these into
 * decorations. Percent is of on-CPU samples (the exporter's `percent`).
 */

import * as path from 'path';
import type { LineSummary, ProfileSummary } from './model';
import { formatCount } from './format';

export type HeatTier = 'hot' | 'warm' | 'cool';

/** At or above this percent a line is hot. */
export const HOT_PERCENT = 5;
/** At or above this percent (and below HOT_PERCENT) a line is warm; below, cool. */
export const WARM_PERCENT = 0.5;

export function heatTier(percent: number): HeatTier {
  if (percent >= HOT_PERCENT) return 'hot';
  if (percent >= WARM_PERCENT) return 'warm';
  return 'cool';
}

/* "91.7% · 1,650 samples" (one sample: "sample"). */
export function heatText(line: LineSummary): string {
  return `${line.percent.toFixed(1)}% · ${formatCount(line.samples)} ${line.samples === 1 ? 'sample' : 'samples'}`;
}

export interface HeatLine {
  /** 0-based, as editors count. */
  line: number;
  tier: HeatTier;
  text: string;
  percent: number;
}

/* Normalised for comparison: resolved, and case-folded on case-insensitive platforms. */
export function samePath(a: string, b: string, platform: string = process.platform): boolean {
  const normalise = (p: string) => {
    const resolved = path.resolve(p);
    return platform === 'win32' || platform === 'darwin' ? resolved.toLowerCase() : resolved;
  };
  return normalise(a) === normalise(b);
}

/* The heat of one file: one entry per profiled line of it, in line order. When the profile
 * names the same line twice (it should not), the larger count wins. */
export function heatForFile(summary: ProfileSummary, filePath: string): HeatLine[] {
  const byLine = new Map<number, LineSummary>();
  for (const entry of summary.lines) {
    if (!samePath(entry.file, filePath)) continue;
    const previous = byLine.get(entry.line);
    if (!previous || entry.samples > previous.samples) byLine.set(entry.line, entry);
  }
  return [...byLine.values()]
    .sort((a, b) => a.line - b.line)
    .map((entry) => ({
      line: entry.line - 1,
      tier: heatTier(entry.percent),
      text: heatText(entry),
      percent: entry.percent,
    }));
}

/* The files a profile has heat for (distinct, in first-seen order). */
export function filesWithHeat(summary: ProfileSummary): string[] {
  return [...new Set(summary.lines.map((line) => line.file))];
}
