/*
 * Running the Osprey CLI: `<cli> <file> --run --profile -o <stem>`, streaming its output,
 * cancellable, and turning every way it can fail into one message carrying the CLI's own
 * words (the last lines it wrote to stderr). Node only, no editor API, so it is tested with
 * a stand-in CLI.
 *
 * The CLI starts in its own process group (detached) so cancelling reaches the profiled
 * program and anything it started too: SIGTERM to the group, SIGKILL after a grace period.
 */

import { spawn } from 'child_process';
import { constants, tmpdir } from 'os';

export interface RunOptions {
  cli: string;
  file: string;
  /** Output stem: the CLI writes `<stem>.speedscope.json`, `<stem>.profile.json`, … */
  stem: string;
  cwd?: string;
  signal?: AbortSignal;
  /** Every chunk the CLI writes, as it arrives. */
  onOutput?: (text: string, stream: 'stdout' | 'stderr') => void;
  /** Milliseconds between SIGTERM and SIGKILL on cancel. */
  killGraceMs?: number;
}

export interface RunResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  cancelled: boolean;
  /** The last non-empty lines of stderr (at most STDERR_TAIL_LINES). */
  stderrTail: string[];
  /** The first stderr line that reads like a diagnostic (`…: error: …`), if any. */
  firstError?: string;
}

export const STDERR_TAIL_LINES = 8;

/** The CLI could not be started at all (not found, not executable). */
export class CliStartError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'CliStartError';
  }
}

export function profileArguments(file: string, stem: string): string[] {
  return [file, '--run', '--profile', '-o', stem];
}

const DIAGNOSTIC = /(^|:\s*)(fatal )?error:/i;

/* Keeps the last `limit` non-empty lines of a stream fed in arbitrary chunks, and the first
 * line that reads like a compiler diagnostic (the one that names the real problem; a build
 * failure's last lines are carets, counts and the CLI's summary). */
export class LineTail {
  private partial = '';
  private readonly lines: string[] = [];
  firstError: string | undefined;
  constructor(private readonly limit: number) {}

  push(text: string): void {
    const parts = (this.partial + text).split(/\r?\n/);
    this.partial = parts.pop() ?? '';
    for (const line of parts) this.add(line);
  }

  private add(line: string): void {
    if (line.trim() === '') return;
    if (this.firstError === undefined && DIAGNOSTIC.test(line)) this.firstError = line.trim();
    this.lines.push(line);
    if (this.lines.length > this.limit) this.lines.shift();
  }

  finish(): string[] {
    if (this.partial !== '') this.add(this.partial);
    this.partial = '';
    return [...this.lines];
  }
}

/* Runs the CLI to completion (or cancellation). Rejects only with CliStartError. */
export function runProfiler(options: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    if (options.signal?.aborted) {
      resolve({ exitCode: null, signal: null, cancelled: true, stderrTail: [] });
      return;
    }
    const child = spawn(options.cli, profileArguments(options.file, options.stem), {
      cwd: options.cwd,
      // The CLI colours its report only on a terminal; say so anyway, this is a pipe.
      env: { ...process.env, NO_COLOR: '1' },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const tail = new LineTail(STDERR_TAIL_LINES);
    let cancelled = false;
    let killTimer: NodeJS.Timeout | undefined;
    let settled = false;

    const killGroup = (signal: NodeJS.Signals) => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, signal);
      } catch {
        // ESRCH: the group is already gone.
      }
    };
    const onAbort = () => {
      cancelled = true;
      killGroup('SIGTERM');
      killTimer = setTimeout(() => killGroup('SIGKILL'), options.killGraceMs ?? 5000);
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });

    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (text: string) => options.onOutput?.(text, 'stdout'));
    child.stderr.on('data', (text: string) => {
      tail.push(text);
      options.onOutput?.(text, 'stderr');
    });

    child.on('error', (error: NodeJS.ErrnoException) => {
      if (settled) return;
      settled = true;
      options.signal?.removeEventListener('abort', onAbort);
      if (killTimer) clearTimeout(killTimer);
      if (error.code === 'ENOENT') {
        reject(
          new CliStartError(
            `Osprey: the CLI "${options.cli}" was not found (set osprey.cliPath to the osprey executable)`,
            error.code,
          ),
        );
      } else {
        reject(new CliStartError(`Osprey: cannot run the CLI "${options.cli}": ${error.message}`, error.code));
      }
    });

    child.on('close', (exitCode, signal) => {
      if (settled) return;
      settled = true;
      options.signal?.removeEventListener('abort', onAbort);
      if (cancelled) {
        // The CLI is gone; make sure nothing it left in its group outlives the cancel.
        killGroup('SIGKILL');
      }
      if (killTimer) clearTimeout(killTimer);
      const stderrTail = tail.finish();
      resolve({ exitCode, signal, cancelled, stderrTail, firstError: tail.firstError });
    });
  });
}

/* One message for a run that did not succeed, undefined for success (exit 0). The CLI's own
 * last stderr lines carry the detail (compile errors, crashes, bad input); temporary paths in
 * them (the run's output folder, the CLI's scratch build) are reduced to their file names. */
export function describeFailure(result: RunResult, file: string, temporary: readonly string[] = []): string | undefined {
  if (result.cancelled) return `Osprey: profiling ${file} was cancelled.`;
  if (result.exitCode === 0) return undefined;
  const how =
    result.signal !== null
      ? `was killed by ${result.signal}`
      : `exited with status ${result.exitCode}${programSignalNote(result.exitCode)}`;
  const last = result.stderrTail.slice(-2).map((line) => line.trim());
  const lines = result.firstError && !last.includes(result.firstError) ? [result.firstError, ...last] : last;
  const detail = hideTemporaryPaths(lines.join(' | '), temporary);
  return `Osprey: profiling ${file} failed: the CLI ${how}${detail ? `: ${detail}` : ' (no error output)'}`;
}

/* Paths under the given folders, or under a temporary folder the CLI makes
 * (`$TMPDIR/osprey-…/`), lose their folders: `/tmp/osprey-Ab3/prog` → `prog`. */
export function hideTemporaryPaths(text: string, temporary: readonly string[] = [], tmp = tmpdir()): string {
  let result = text;
  for (const folder of temporary) if (folder) result = result.split(`${folder.replace(/\/+$/, '')}/`).join('');
  const escaped = tmp.replace(/\/+$/, '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return result.replace(new RegExp(`${escaped}/osprey[^/\\s'"]*/(?:[^\\s'"]*/)?`, 'g'), '');
}

/* The CLI passes on the program's exit code, and a program killed by signal N as 128+N (as a
 * shell reports it): name the signal when the status reads that way. */
function programSignalNote(exitCode: number | null): string {
  if (exitCode === null || exitCode <= 128) return '';
  const number = exitCode - 128;
  const name = Object.entries(constants.signals).find(([, value]) => value === number)?.[0];
  return name ? ` (the program was killed by ${name})` : '';
}
