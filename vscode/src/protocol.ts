/*
 * Messages between the extension and the flame-graph webview, and the state the webview keeps
 * so a reloaded window can restore it.
 */

import type { FlameDocument, ProfileSummary } from './model';

/** Extension → webview: draw this profile. */
export interface LoadMessage {
  type: 'load';
  title: string;
  document: FlameDocument;
  /** From `<stem>.profile.json` when present (the run's rate and totals). */
  summary?: ProfileSummary;
  /** The kept copy of the speedscope file, remembered for restoring after a reload. */
  restorePath?: string;
  /** The source file the profile came from, when it can be profiled again. */
  source?: string;
}

/** What the webview keeps across a window reload (vscode.setState). */
export interface WebviewState {
  restorePath: string;
  source?: string;
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

/** Webview → extension: profile the source of this profile again. */
export interface ProfileAgainMessage {
  type: 'profileAgain';
}

export type ToWebview = LoadMessage;
export type FromWebview = ReadyMessage | OpenSourceMessage | ProfileAgainMessage;

/* Validates a message from the webview (it is untrusted input to the extension). */
export function parseFromWebview(message: unknown): FromWebview | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const candidate = message as Record<string, unknown>;
  if (candidate.type === 'ready') return { type: 'ready' };
  if (candidate.type === 'profileAgain') return { type: 'profileAgain' };
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

/* Validates restored webview state (it comes back from storage). */
export function parseWebviewState(state: unknown): WebviewState | undefined {
  if (typeof state !== 'object' || state === null) return undefined;
  const candidate = state as Record<string, unknown>;
  if (typeof candidate.restorePath !== 'string' || candidate.restorePath === '') return undefined;
  return {
    restorePath: candidate.restorePath,
    source: typeof candidate.source === 'string' ? candidate.source : undefined,
  };
}
