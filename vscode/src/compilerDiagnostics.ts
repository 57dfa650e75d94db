/*
 * Compiler messages in the CLI's output (`file:line:col: error: text`, as clang prints them)
 * turned into diagnostics for the Problems panel. Node only, no editor API: the editor side
 * maps these onto vscode.Diagnostic.
 */

import * as path from 'path';

export interface CompilerDiagnostic {
  /** Absolute path (resolved against the directory the compiler ran in). */
  file: string;
  /** 1-based. */
  line: number;
  /** 1-based; 1 when the compiler gave none. */
  column: number;
  severity: 'error' | 'warning' | 'note';
  message: string;
}

const LINE = /^(.+?):(\d+):(?:(\d+):)?\s+(fatal error|error|warning|note):\s+(.*)$/;

/* Every diagnostic line of the text, in order; anything else (carets, source excerpts,
 * "N errors generated.", the CLI's own words) is skipped. */
export function parseCompilerOutput(text: string, cwd: string): CompilerDiagnostic[] {
  const found: CompilerDiagnostic[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const match = LINE.exec(raw.trim());
    if (!match) continue;
    const [, file, line, column, kind, message] = match;
    found.push({
      file: path.resolve(cwd, file),
      line: Number(line),
      column: column ? Number(column) : 1,
      severity: kind === 'note' ? 'note' : kind === 'warning' ? 'warning' : 'error',
      message,
    });
  }
  return found;
}
