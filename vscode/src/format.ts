/*
 * Number formatting shared by the flame graph, the hot table and the heat decorations. Plain
 * arithmetic, no locale: the same profile reads the same everywhere.
 */

/* 1234567 → "1,234,567" (integers; fractions are rounded). */
export function formatCount(value: number): string {
  const digits = String(Math.round(Math.abs(value)));
  const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return value < 0 ? `-${grouped}` : grouped;
}

/* A duration in milliseconds: "0.42 ms", "12.5 ms", "1.83 s". */
export function formatMs(ms: number): string {
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  return `${ms.toFixed(2)} ms`;
}

/* A percentage with one decimal: 37.24 → "37.2%". */
export function formatPercent(percent: number): string {
  return `${percent.toFixed(1)}%`;
}

/* part / whole as a percentage; 0 when whole is 0. */
export function percentOf(part: number, whole: number): number {
  return whole > 0 ? (part / whole) * 100 : 0;
}

/* "1 sample", "3 samples". */
export function formatSamples(count: number): string {
  return `${formatCount(count)} ${count === 1 ? 'sample' : 'samples'}`;
}
