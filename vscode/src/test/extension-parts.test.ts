/* The editor-free parts of the extension: finding the CLI on first run, compiler output as
 * Problems-panel diagnostics, and the kept copy of a profile that survives a reload. */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { locateCli } from '../cliLocation';
import { parseCompilerOutput } from '../compilerDiagnostics';
import { keepProfile } from '../profileStore';

const scratch = mkdtempSync(join(tmpdir(), 'osprey-parts-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function executable(file: string): string {
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(file, '#!/bin/sh\n');
  chmodSync(file, 0o755);
  return file;
}

test('first run: with the default setting and no osprey on PATH, the workspace build is found', () => {
  const workspace = join(scratch, 'ws');
  const built = executable(join(workspace, 'build', 'tools', 'osprey'));
  const emptyPath = join(scratch, 'empty-bin');
  mkdirSync(emptyPath, { recursive: true });
  assert.equal(locateCli('osprey', [join(scratch, 'other'), workspace], emptyPath).cli, built);
  assert.equal(locateCli('', [workspace], emptyPath).cli, built);
  // A relative setting is relative to the workspace folder, not to the C file's folder.
  assert.equal(locateCli('build/tools/osprey', [workspace], emptyPath).cli, built);
  // On PATH wins over the workspace build.
  const bin = join(scratch, 'bin');
  const onPath = executable(join(bin, 'osprey'));
  assert.equal(locateCli('osprey', [workspace], `${emptyPath}:${bin}`).cli, onPath);
  // build-* trees count too when there is no build/.
  const other = join(scratch, 'ws2');
  const test = executable(join(other, 'build-test', 'tools', 'osprey'));
  assert.equal(locateCli('osprey', [other], emptyPath).cli, test);
});

test('nothing found: says where it looked', () => {
  const lookup = locateCli('osprey', [join(scratch, 'nowhere')], join(scratch, 'empty-bin'));
  assert.equal(lookup.cli, undefined);
  assert.deepEqual(lookup.looked.slice(0, 2), ['osprey on PATH', join(scratch, 'nowhere', 'build', 'tools', 'osprey')]);
  assert.equal(locateCli('/no/such/osprey', []).cli, undefined);
});

test('compiler errors become diagnostics; other lines are skipped', () => {
  const output = [
    'broken.c:5:12: error: use of undeclared identifier \'y\'',
    '    5 |     return y;',
    '      |            ^',
    '/abs/inc.h:2:1: warning: something odd [-Wodd]',
    'broken.c:9: note: declared here',
    '1 error generated.',
    'osprey: clang failed (exit status 1)',
  ].join('\n');
  assert.deepEqual(parseCompilerOutput(output, '/w'), [
    { file: '/w/broken.c', line: 5, column: 12, severity: 'error', message: "use of undeclared identifier 'y'" },
    { file: '/abs/inc.h', line: 2, column: 1, severity: 'warning', message: 'something odd [-Wodd]' },
    { file: '/w/broken.c', line: 9, column: 1, severity: 'note', message: 'declared here' },
  ]);
});

test('a kept profile outlives the run folder, one per source file', async () => {
  const run = join(scratch, 'run');
  mkdirSync(run, { recursive: true });
  writeFileSync(join(run, 'hot.speedscope.json'), '{"a":1}');
  writeFileSync(join(run, 'hot.profile.json'), '{"b":2}');
  const storage = join(scratch, 'storage');
  const kept = await keepProfile(storage, join(run, 'hot'), '/w/hot.c');
  rmSync(run, { recursive: true });
  assert.equal(readFileSync(kept, 'utf8'), '{"a":1}');
  assert.equal(readFileSync(kept.replace('.speedscope.json', '.profile.json'), 'utf8'), '{"b":2}');
  // The next run of the same file replaces it; a run without profile.json leaves none behind.
  mkdirSync(run);
  writeFileSync(join(run, 'hot.speedscope.json'), '{"a":2}');
  assert.equal(await keepProfile(storage, join(run, 'hot'), '/w/hot.c'), kept);
  assert.equal(readFileSync(kept, 'utf8'), '{"a":2}');
  assert.equal(existsSync(kept.replace('.speedscope.json', '.profile.json')), false);
  assert.notEqual(await keepProfile(storage, join(run, 'hot'), '/w/other/hot.c'), kept);
});
