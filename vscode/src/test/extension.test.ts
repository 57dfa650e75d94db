/*
 * src/extension.ts loaded against the stand-in `vscode` module (fake-vscode.ts) and driven
 * through its commands with stand-in CLIs: what it registers, runs, shows, posts and decorates.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as fake from './fake-vscode';
import { SPEEDSCOPE_FIXTURE, SUMMARY_FIXTURE } from './fixtures';

fake.installFakeVscode();
// eslint-disable-next-line @typescript-eslint/no-require-imports
const extension = require('../extension') as typeof import('../extension');

const root = join(__dirname, '..', '..');
const scratch = mkdtempSync(join(tmpdir(), 'osprey-extension-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
// The profiled sources live here; the fixture's /w/ paths are rewritten to point at it.
const sources = join(scratch, 'w');
mkdirSync(sources);
const source = join(sources, 'hotspot.c');

function fakeCli(name: string, body: string): string {
  const file = join(scratch, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

/* Behaves like `osprey FILE --run --profile -o STEM` on the fixture: prints the program's
 * output and writes the profile pair. */
const goodCli = fakeCli(
  'osprey-good',
  `echo "checksum of 25000 blocks: 00ff"\n` +
    `sed 's#/w/#${sources}/#g' '${SPEEDSCOPE_FIXTURE}' > "$5.speedscope.json"\n` +
    `sed 's#/w/#${sources}/#g' '${SUMMARY_FIXTURE}' > "$5.profile.json"`,
);

const hotspot = fake.fakeEditor(fake.fakeDocument(source, 70));
const other = fake.fakeEditor(fake.fakeDocument(join(sources, 'unrelated.c'), 10));

/* Message handlers run asynchronously: wait (without a deadline that could fail a slow machine
 * spuriously, but bounded) until the condition holds. */
async function waitFor(condition: () => boolean): Promise<void> {
  for (let attempt = 0; attempt < 2000 && !condition(); attempt++) await new Promise((r) => setTimeout(r, 10));
}

async function runCommand(id: string): Promise<void> {
  const handler = fake.recorded.commands.get(id);
  assert.ok(handler, `${id} is registered`);
  await handler();
}

/* The heat set on an editor by its latest setDecorations call per tier: tier → [line, text]. */
function heatOf(editor: fake.FakeEditor): Record<string, [number, string][]> {
  const latest = new Map<string, fake.DecorationCall>();
  for (const call of editor.decorations) latest.set(call.type.key, call);
  const byColour: Record<string, [number, string][]> = {};
  for (const call of latest.values()) {
    const ruler = call.type.options.overviewRulerColor ?? 'no-ruler';
    byColour[ruler] = call.options.map((o) => [o.range.start.line, o.renderOptions.after.contentText]);
  }
  return byColour;
}

before(() => {
  extension.activate({ subscriptions: [], extensionUri: fake.Uri.file(root) } as never);
});

test('activation registers every command the manifest contributes', () => {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const contributed = manifest.contributes.commands.map((command: { command: string }) => command.command).sort();
  assert.deepEqual([...fake.recorded.commands.keys()].sort(), contributed);
  assert.deepEqual(contributed, ['osprey.openProfile', 'osprey.profileCurrentFile']);
});

test('Profile Current File runs the CLI, shows output, opens the flame graph and heat', async () => {
  fake.recorded.settings.set('osprey.cliPath', goodCli);
  fake.window.activeTextEditor = hotspot;
  fake.showEditors([hotspot, other]);
  await runCommand('osprey.profileCurrentFile');
  assert.deepEqual(fake.recorded.errors, []);
  const output = fake.recorded.output.join('');
  assert.ok(output.startsWith(`$ ${goodCli} ${source} --run --profile -o `), output);
  assert.match(output, /^\$ .* -o \/.*\/osprey-[^/]+\/hotspot\n/);
  assert.match(output, /checksum of 25000 blocks: 00ff\n/);
  assert.match(output, /\[exit status 0\]/);

  assert.equal(fake.recorded.panels.length, 1);
  const panel = fake.recorded.panels[0];
  assert.match(panel.html, /default-src &#39;none&#39;; script-src &#39;nonce-[A-Za-z0-9]+&#39;/);
  assert.match(panel.html, /src="file:\/\/.*\/out\/webview\/flamegraph\.js"/);
  assert.equal(panel.posted.length, 0, 'nothing is posted before the page is ready');
  panel.receive({ type: 'ready' });
  assert.equal(panel.posted.length, 1);
  const load = panel.posted[0] as { type: string; title: string; document: { frames: unknown[] }; summary: unknown };
  assert.equal(load.type, 'load');
  assert.equal(load.title, 'Osprey: hotspot');
  assert.equal(load.document.frames.length, 9);
  assert.ok(load.summary, 'the sibling profile.json is sent along');

  writeFileSync(source, '/* hotspot */\n');
  panel.receive({ type: 'openSource', file: `${sources}/../w/hotspot.c`, line: 21 });
  panel.receive({ type: 'openSource', file: source, line: 0 }); // invalid: ignored
  panel.receive({ type: 'openSource', file: './nptl/pthread_create.c', line: 442 });
  await waitFor(() => fake.recorded.shownDocuments.length > 0 && fake.recorded.warnings.length > 0);
  assert.deepEqual(fake.recorded.shownDocuments, [{ file: source, line: 20 }]);
  assert.deepEqual(fake.recorded.warnings, ['Osprey: source not found on this machine: ./nptl/pthread_create.c:442']);

  assert.deepEqual(heatOf(hotspot), {
    'rgba(229, 83, 61, 0.9)': [
      [14, '38.1% · 40 samples'],
      [25, '66.7% · 70 samples'],
      [33, '28.6% · 30 samples'],
      [49, '95.2% · 100 samples'],
    ],
    'rgba(217, 154, 43, 0.7)': [
      [60, '4.8% · 5 samples'],
      [61, '1.9% · 2 samples'],
    ],
    'no-ruler': [],
  });
  assert.deepEqual(heatOf(other), { 'rgba(229, 83, 61, 0.9)': [], 'rgba(217, 154, 43, 0.7)': [], 'no-ruler': [] });
});

test('heat follows a file shown later and turns off with osprey.heat.enabled', () => {
  const later = fake.fakeEditor(fake.fakeDocument(`${sources}/./sub/../hotspot.c`, 70));
  fake.showEditors([later]);
  assert.equal(heatOf(later)['rgba(229, 83, 61, 0.9)'].length, 4);
  fake.changeSetting('osprey.heat.enabled', false);
  assert.deepEqual(heatOf(later), { 'rgba(229, 83, 61, 0.9)': [], 'rgba(217, 154, 43, 0.7)': [], 'no-ruler': [] });
  fake.changeSetting('osprey.heat.enabled', true);
  assert.equal(heatOf(later)['rgba(229, 83, 61, 0.9)'].length, 4);
});

test('a missing CLI is an error naming the setting; nothing opens', async () => {
  fake.recorded.errors.length = 0;
  fake.recorded.settings.set('osprey.cliPath', join(scratch, 'no-such-osprey'));
  await runCommand('osprey.profileCurrentFile');
  assert.equal(fake.recorded.errors.length, 1);
  assert.match(fake.recorded.errors[0], /Osprey CLI not found: ".*no-such-osprey" \(set osprey\.cliPath/);
  assert.equal(fake.recorded.panels[0].posted.length, 1, 'the panel was not sent anything new');
});

test('a compile error shows the CLI\'s own words', async () => {
  fake.recorded.errors.length = 0;
  fake.recorded.settings.set(
    'osprey.cliPath',
    fakeCli('osprey-bad', `echo "osprey: $1:3:9: error: expected ';' after expression" >&2\nexit 1`),
  );
  await runCommand('osprey.profileCurrentFile');
  assert.deepEqual(fake.recorded.errors, [
    `Osprey: profiling hotspot.c failed: the CLI exited with status 1: osprey: ${source}:3:9: error: expected ';' after expression`,
  ]);
});

test('a crash that still left a profile reports the crash and opens the profile', async () => {
  fake.recorded.errors.length = 0;
  const panel = fake.recorded.panels[0];
  const before = panel.posted.length;
  fake.recorded.settings.set(
    'osprey.cliPath',
    fakeCli('osprey-crash', `cp '${SPEEDSCOPE_FIXTURE}' "$5.speedscope.json"\necho "Segmentation fault" >&2\nexit 139`),
  );
  await runCommand('osprey.profileCurrentFile');
  assert.equal(fake.recorded.errors.length, 1);
  assert.match(fake.recorded.errors[0], /exited with status 139 \(the program was killed by SIGSEGV\): Segmentation fault$/);
  assert.equal(panel.posted.length, before + 1);
});

test('cancel stops the run and says so', async () => {
  fake.recorded.errors.length = 0;
  fake.recorded.infos.length = 0;
  fake.recorded.settings.set('osprey.cliPath', fakeCli('osprey-slow', 'sleep 1000'));
  fake.recorded.cancelWhen = () => true;
  await runCommand('osprey.profileCurrentFile');
  assert.deepEqual(fake.recorded.infos, ['Profiling hotspot.c was cancelled.']);
  assert.deepEqual(fake.recorded.errors, []);
});

test('one run at a time', async () => {
  fake.recorded.errors.length = 0;
  fake.recorded.infos.length = 0;
  const started = join(scratch, 'long.started');
  fake.recorded.settings.set('osprey.cliPath', fakeCli('osprey-long', `touch '${started}'\nexec sleep 1000`));
  let secondDone = false;
  fake.recorded.cancelWhen = () => secondDone;
  const first = runCommand('osprey.profileCurrentFile');
  await waitFor(() => existsSync(started));
  await runCommand('osprey.profileCurrentFile');
  assert.deepEqual(fake.recorded.errors, ['Osprey: a profiling run is already in progress.']);
  secondDone = true;
  await first;
  assert.deepEqual(fake.recorded.infos, ['Profiling hotspot.c was cancelled.']);
});

test('a cancelled run that still wrote the profile of what ran shows it', async () => {
  fake.recorded.infos.length = 0;
  const panel = fake.recorded.panels[0];
  const before = panel.posted.length;
  const ready = join(scratch, 'stoppable.ready');
  fake.recorded.settings.set(
    'osprey.cliPath',
    fakeCli(
      'osprey-stoppable',
      `trap 'cp "${SPEEDSCOPE_FIXTURE}" "$5.speedscope.json"; exit 143' TERM\ntouch '${ready}'\nsleep 1000 & wait`,
    ),
  );
  fake.recorded.cancelWhen = () => existsSync(ready);
  await runCommand('osprey.profileCurrentFile');
  assert.deepEqual(fake.recorded.infos, ['Profiling hotspot.c was cancelled.']);
  assert.equal(panel.posted.length, before + 1);
});

test('a bad profile file is one error naming it', async () => {
  fake.recorded.errors.length = 0;
  fake.recorded.settings.set(
    'osprey.cliPath',
    fakeCli('osprey-garbage', `echo '{"shared":{"frames":[]},"profiles":[{"type":"evented"}]}' > "$5.speedscope.json"`),
  );
  await runCommand('osprey.profileCurrentFile');
  assert.equal(fake.recorded.errors.length, 1);
  assert.match(fake.recorded.errors[0], /^Osprey: \/.*\/hotspot\.speedscope\.json: profiles\[0\]\.type: "evented" profiles are not supported/);
});

test('Open Profile… reads a picked profile pair, from either of its files', async () => {
  fake.recorded.errors.length = 0;
  const panel = fake.recorded.panels[0];
  fake.recorded.openDialogAnswer = [fake.Uri.file(SUMMARY_FIXTURE)];
  const before = panel.posted.length;
  await runCommand('osprey.openProfile');
  fake.recorded.openDialogAnswer = undefined;
  assert.deepEqual(fake.recorded.errors, []);
  assert.equal(panel.posted.length, before + 1);
  const load = panel.posted.at(-1) as { document: { name: string }; summary?: { totals: { on_cpu: number } } };
  assert.equal(load.document.name, 'hotspot');
  assert.equal(load.summary?.totals.on_cpu, 105);
  await runCommand('osprey.openProfile'); // dialog dismissed: nothing happens
  assert.equal(panel.posted.length, before + 1);
});

test('each run replaces the previous run\'s temporary directory; deactivate removes the last', async () => {
  fake.recorded.settings.set('osprey.cliPath', goodCli);
  const outputDirectory = () => /-o (\/\S+)\/hotspot\n/.exec(fake.recorded.output.join(''))![1];
  await runCommand('osprey.profileCurrentFile');
  const first = outputDirectory();
  assert.ok(existsSync(join(first, 'hotspot.speedscope.json')));
  await runCommand('osprey.profileCurrentFile');
  const second = outputDirectory();
  assert.notEqual(second, first);
  assert.equal(existsSync(first), false);
  await extension.deactivate();
  assert.equal(existsSync(second), false);
});
