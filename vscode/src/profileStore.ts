/*
 * Keeps a profile somewhere that lasts: a run writes into a temporary directory, and the
 * flame graph must survive a window reload, so the files the viewer reads
 * (`<stem>.speedscope.json`, `<stem>.profile.json`) are copied into the extension's storage
 * folder, one subfolder per source file (the latest run of a file replaces the previous one).
 * Node only, no editor API.
 */

import { createHash } from 'crypto';
import * as fs from 'fs/promises';
import * as path from 'path';

/* True when the file can be reached. */
export async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

const SUFFIXES = ['.speedscope.json', '.profile.json'];

/* Copies `<stem>.*` for the viewer into `<storage>/profiles/<key>/` and returns the kept
 * speedscope path. `key` names what the profile is of (the source file's path). */
export async function keepProfile(storage: string, stem: string, key: string): Promise<string> {
  const folder = path.join(storage, 'profiles', createHash('sha256').update(key).digest('hex').slice(0, 16));
  await fs.mkdir(folder, { recursive: true });
  const name = path.basename(stem);
  for (const suffix of SUFFIXES) {
    const target = path.join(folder, name + suffix);
    try {
      // Temporary name in the same folder, then rename: never a half-written kept copy.
      await fs.copyFile(stem + suffix, `${target}.tmp`);
      await fs.rename(`${target}.tmp`, target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      await fs.rm(target, { force: true });
    }
  }
  return path.join(folder, name + SUFFIXES[0]);
}
