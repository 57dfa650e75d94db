/*
 * Messages between the extension and the flame-graph webview.
 */

import type { FlameDocument, ProfileSummary } from './model';

/** Extension → webview: draw this profile. */
export interface LoadMessage {
  type: 'load';
  title: string;
  document: FlameDocument;
  /** From `<stem>.profile.json` when present: the hot table uses its on-CPU numbers. */
  summary?: ProfileSummary;
}

/** Webview → extension: the script is listening; send the profile. */
export interface ReadyMessage {
  type: 'ready';
}

/** Webview → extension: open this source location (line is 1-based). */
export interface OpenSourceMessage {
  type: 'openSource';
  file: string;
  line: number;
}

export type ToWebview = LoadMessage;
export type FromWebview = ReadyMessage | OpenSourceMessage;

/* Validates a message from the webview (it is untrusted input to the extension). */
export function parseFromWebview(message: unknown): FromWebview | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const candidate = message as Record<string, unknown>;
  if (candidate.type === 'ready') return { type: 'ready' };
  if (
    candidate.type === 'openSource' &&
    typeof candidate.file === 'string' &&
    candidate.file !== '' &&
    typeof candidate.line === 'number' &&
    Number.isInteger(candidate.line) &&
    candidate.line >= 1
  ) {
    return { type: 'openSource', file: candidate.file, line: candidate.line };
  }
  return undefined;
}
