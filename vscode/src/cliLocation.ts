/*
 * Which `osprey` to run. The setting `osprey.cliPath` wins when it names something that exists:
 * an absolute path, a path relative to a workspace folder (`build/tools/osprey`), or a command
 * on PATH. Left at its default (`osprey`) and with no `osprey` on PATH, the CLI of a workspace
 * that builds it is found where the README's build puts it: `<folder>/build/tools/osprey`
 * (then `build-*\/tools/osprey`). Node only, no editor API.
 */

import { accessSync, constants, readdirSync } from 'fs';
import * as path from 'path';

export const DEFAULT_CLI = 'osprey';

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(command: string, envPath: string): string | undefined {
  for (const directory of envPath.split(path.delimiter)) {
    if (directory && executable(path.join(directory, command))) return path.join(directory, command);
  }
  return undefined;
}

/* The build trees of a workspace folder, `build` first, then `build-*` in name order. */
function buildTrees(folder: string): string[] {
  let names: string[] = [];
  try {
    names = readdirSync(folder).filter((name) => name.startsWith('build-')).sort();
  } catch {
    /* an unreadable folder has none */
  }
  return ['build', ...names].map((name) => path.join(folder, name, 'tools', 'osprey'));
}

export interface CliLookup {
  /** The executable to run, when one was found. */
  cli?: string;
  /** Where it looked, for the message when nothing was found. */
  looked: string[];
}

export function locateCli(setting: string, workspaceFolders: readonly string[], envPath = process.env.PATH ?? ''): CliLookup {
  const wanted = setting.trim() || DEFAULT_CLI;
  const looked: string[] = [];
  if (path.isAbsolute(wanted)) {
    looked.push(wanted);
    return { cli: executable(wanted) ? wanted : undefined, looked };
  }
  if (wanted.includes('/')) {
    for (const folder of workspaceFolders) {
      const candidate = path.join(folder, wanted);
      looked.push(candidate);
      if (executable(candidate)) return { cli: candidate, looked };
    }
    return { looked };
  }
  const found = onPath(wanted, envPath);
  looked.push(`${wanted} on PATH`);
  if (found) return { cli: found, looked };
  if (wanted !== DEFAULT_CLI) return { looked };
  for (const folder of workspaceFolders) {
    for (const candidate of buildTrees(folder)) {
      looked.push(candidate);
      if (executable(candidate)) return { cli: candidate, looked };
    }
  }
  return { looked };
}
