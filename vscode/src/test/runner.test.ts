import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CliStartError, describeFailure, hideTemporaryPaths, LineTail, runProfiler, STDERR_TAIL_LINES } from '../runner';

const scratch = mkdtempSync(join(tmpdir(), 'osprey-runner-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/* A stand-in for the osprey CLI: a shell script with the given body. */
function fakeCli(name: string, body: string): string {
  const file = join(scratch, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(condition: () => boolean, what: string): Promise<void> {
  for (let attempt = 0; attempt < 1000; attempt++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail(`gave up waiting for ${what}`);
}

test('runs `<cli> <file> --run --profile -o <stem>` and streams its output', async () => {
  const cli = fakeCli('ok', 'for a in "$@"; do echo "arg:$a"; done; echo "to stderr" >&2; echo "NO_COLOR=$NO_COLOR"');
  const chunks: string[] = [];
  const result = await runProfiler({
    cli,
    file: '/w/hot spot.c',
    stem: '/tmp/o/hot spot',
    onOutput: (text, stream) => chunks.push(`${stream}:${text}`),
  });
  assert.deepEqual(result, { exitCode: 0, signal: null, cancelled: false, stderrTail: ['to stderr'], firstError: undefined });
  const stdout = chunks.filter((c) => c.startsWith('stdout:')).map((c) => c.slice(7)).join('');
  assert.equal(stdout, 'arg:/w/hot spot.c\narg:--run\narg:--profile\narg:-o\narg:/tmp/o/hot spot\nNO_COLOR=1\n');
  assert.equal(describeFailure(result, 'hot spot.c'), undefined);
});

test('a missing CLI is a start error that names the setting', async () => {
  await assert.rejects(runProfiler({ cli: join(scratch, 'no-such-osprey'), file: '/w/a.c', stem: '/tmp/a' }), (error) => {
    assert.ok(error instanceof CliStartError);
    assert.equal(error.code, 'ENOENT');
    assert.match(error.message, /^Osprey: the CLI ".*no-such-osprey" was not found \(set osprey\.cliPath/);
    return true;
  });
});

test('a failing run reports the CLI\'s last stderr lines', async () => {
  const cli = fakeCli(
    'compile-error',
    'i=0; while [ $i -lt 20 ]; do echo "noise $i" >&2; i=$((i+1)); done\n' +
      'echo "osprey: /w/a.c:3:9: error: expected \';\' after expression" >&2\nexit 3',
  );
  const result = await runProfiler({ cli, file: '/w/a.c', stem: join(scratch, 'a') });
  assert.equal(result.exitCode, 3);
  assert.equal(result.stderrTail.length, STDERR_TAIL_LINES);
  assert.equal(result.stderrTail.at(-1), "osprey: /w/a.c:3:9: error: expected ';' after expression");
  const message = describeFailure(result, 'a.c')!;
  assert.match(message, /^Osprey: profiling a\.c failed: the CLI exited with status 3: /);
  assert.match(message, /noise 19 \| osprey: \/w\/a\.c:3:9: error: expected ';' after expression$/);
});

test('a compile error names the first diagnostic, then how the CLI ended', async () => {
  const clang = [
    "/w/bad.c:1:25: error: use of undeclared identifier 'x'",
    'int main(void) { return x }',
    '                        ^',
    "/w/bad.c:1:26: error: expected ';' after return statement",
    'int main(void) { return x }',
    '                         ^',
    '                         ;',
    '2 errors generated.',
    'osprey: /w/bad.c: build failed (clang exited with status 1)',
  ];
  const script = clang.map((line) => `printf '%s\\n' "${line.replace(/"/g, '\\"')}" >&2`).join('\n');
  const result = await runProfiler({ cli: fakeCli('clang-error', `${script}\nexit 1`), file: '/w/bad.c', stem: '/tmp/bad' });
  assert.equal(result.firstError, "/w/bad.c:1:25: error: use of undeclared identifier 'x'");
  assert.equal(
    describeFailure(result, 'bad.c'),
    "Osprey: profiling bad.c failed: the CLI exited with status 1: /w/bad.c:1:25: error: use of undeclared identifier 'x' | " +
      '2 errors generated. | osprey: /w/bad.c: build failed (clang exited with status 1)',
  );
});

test('a crash is reported with the signal', async () => {
  const result = await runProfiler({ cli: fakeCli('crash', 'echo "Segmentation fault" >&2; kill -SEGV $$'), file: '/w/a.c', stem: '/tmp/a' });
  assert.equal(result.signal, 'SIGSEGV');
  assert.match(describeFailure(result, 'a.c')!, /the CLI was killed by SIGSEGV: Segmentation fault$/);
});

test('a status of 128+N names the signal that killed the program', async () => {
  const result = await runProfiler({ cli: fakeCli('status-139', 'echo "Segmentation fault" >&2; exit 139'), file: '/w/a.c', stem: '/tmp/a' });
  assert.match(describeFailure(result, 'a.c')!, /exited with status 139 \(the program was killed by SIGSEGV\): Segmentation fault$/);
  const plain = await runProfiler({ cli: fakeCli('status-2', 'exit 2'), file: '/w/a.c', stem: '/tmp/a' });
  assert.match(describeFailure(plain, 'a.c')!, /exited with status 2 \(no error output\)$/);
});

test('a silent failure still says so', async () => {
  const result = await runProfiler({ cli: fakeCli('silent', 'exit 1'), file: '/w/a.c', stem: '/tmp/a' });
  assert.match(describeFailure(result, 'a.c')!, /exited with status 1 \(no error output\)$/);
});

test('cancel kills the whole process group, escalating to SIGKILL', async () => {
  const pidFile = join(scratch, 'grandchild.pid');
  // The CLI ignores SIGTERM and starts a long-running program (as the profiled program is).
  const cli = fakeCli('slow', `trap '' TERM\nsleep 1000 &\necho $! > '${pidFile}.tmp' && mv '${pidFile}.tmp' '${pidFile}'\nwait`);
  const abort = new AbortController();
  const running = runProfiler({ cli, file: '/w/a.c', stem: '/tmp/a', signal: abort.signal, killGraceMs: 100 });
  await waitFor(() => existsSync(pidFile), 'the fake CLI to start its program');
  const grandchild = Number(readFileSync(pidFile, 'utf8'));
  assert.ok(alive(grandchild));
  abort.abort();
  const result = await running;
  assert.equal(result.cancelled, true);
  assert.equal(describeFailure(result, 'a.c'), 'Osprey: profiling a.c was cancelled.');
  await waitFor(() => !alive(grandchild), 'the profiled program to die');
});

test('an already-cancelled run does not start', async () => {
  const abort = new AbortController();
  abort.abort();
  const marker = join(scratch, 'started');
  const result = await runProfiler({ cli: fakeCli('marker', `touch '${marker}'`), file: '/a.c', stem: '/a', signal: abort.signal });
  assert.equal(result.cancelled, true);
  assert.equal(existsSync(marker), false);
});

test('the stderr tail keeps the last non-empty lines across chunk boundaries', () => {
  const tail = new LineTail(2);
  tail.push('one\ntw');
  tail.push('o\n\n  \nthr');
  tail.push('ee');
  assert.deepEqual(tail.finish(), ['two', 'three']);
});

test('failure messages carry no temporary paths', () => {
  const result = {
    exitCode: 139,
    signal: null,
    cancelled: false,
    stderrTail: ['osprey: /tmp/osprey-build-Xy12/hotspot was killed by signal 11', 'written: /tmp/osprey-Ab3/hotspot.speedscope.json'],
  };
  const message = describeFailure(result, 'hotspot.c', ['/tmp/osprey-Ab3'])!;
  assert.ok(message.startsWith('Osprey: '), message);
  assert.doesNotMatch(message, /\/tmp\//);
  assert.match(message, /hotspot was killed by signal 11/);
  assert.match(message, /written: hotspot\.speedscope\.json/);
  assert.equal(hideTemporaryPaths('see /var/t/osprey-1/a/b.c:3', [], '/var/t'), 'see b.c:3');
  assert.equal(hideTemporaryPaths('/home/me/src/a.c:3: error', [], '/tmp'), '/home/me/src/a.c:3: error');
});
