/*
 * End to end with the real CLI: the extension's runner runs `osprey examples/hotspot.c --run
 * --profile -o STEM`, and what the CLI writes parses, lays out and heats the way a user of
 * the example expects. The CLI is $OSPREY_CLI, or the repository's build-test/ or build/
 * tree; without one the test is skipped and says why.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { heatForFile, samePath } from '../heat';
import { ALL_FIBERS, hotFunctions, matchingOnCpuWeight, selectSamples, toSamples } from '../layout';
import { parseProfileSummary, parseSpeedscope } from '../model';
import { runProfiler } from '../runner';

const repository = resolve(__dirname, '..', '..', '..');
const example = join(repository, 'examples', 'hotspot.c');
const candidates = [
  process.env.OSPREY_CLI,
  join(repository, 'build-test', 'tools', 'osprey'),
  join(repository, 'build', 'tools', 'osprey'),
].filter((candidate): candidate is string => !!candidate);
const cli = candidates.find((candidate) => existsSync(candidate));

test(
  'the real CLI profiles examples/hotspot.c into files the extension reads',
  { skip: cli ? false : `no osprey CLI built (looked at ${candidates.join(', ')}; or set OSPREY_CLI)` },
  async () => {
    const directory = mkdtempSync(join(tmpdir(), 'osprey-cli-e2e-'));
    try {
      const stem = join(directory, 'hotspot');
      let stdout = '';
      const result = await runProfiler({
        cli: cli!,
        file: example,
        stem,
        cwd: directory,
        onOutput: (text, stream) => {
          if (stream === 'stdout') stdout += text;
        },
      });
      assert.equal(result.exitCode, 0, result.stderrTail.join('\n'));
      assert.match(stdout, /checksum of 25000 blocks: [0-9a-f]{16}/);

      const speedscopePath = `${stem}.speedscope.json`;
      const summaryPath = `${stem}.profile.json`;
      const document = parseSpeedscope(readFileSync(speedscopePath, 'utf8'), speedscopePath);
      const summary = parseProfileSummary(readFileSync(summaryPath, 'utf8'), summaryPath);

      // The worker thread's time is in checksum_block: most of its samples have it on the stack.
      // (Profiles are named as perf names threads, hotspot-<tid>; the summary's fibers, in the
      // same order, have the labels.)
      assert.equal(document.profiles.length, summary.fibers.length);
      const thread = summary.fibers.findIndex((fiber) => fiber.label === 'thread');
      assert.ok(thread >= 0, summary.fibers.map((fiber) => fiber.label).join(', '));
      const checksum = Uint8Array.from(document.frames, (frame) => (frame.name === 'checksum_block' ? 1 : 0));
      const samples = selectSamples(document, thread);
      assert.ok(matchingOnCpuWeight(samples, checksum) > samples.onCpuWeight / 2);

      // And the editor marks hot the line where the time is spent, inside checksum_block.
      const source = readFileSync(example, 'utf8').split('\n');
      const start = source.findIndex((line) => /\bchecksum_block\(const/.test(line));
      const end = source.findIndex((line, index) => index > start && line === '}');
      assert.ok(start >= 0 && end > start, 'checksum_block is defined in examples/hotspot.c');
      const busiest = summary.lines
        .filter((line) => samePath(line.file, example))
        .reduce((a, b) => (b.self > a.self ? b : a));
      assert.ok(busiest.line - 1 > start && busiest.line - 1 < end, `busiest line ${busiest.line} outside checksum_block`);
      const heat = heatForFile(summary, example);
      assert.equal(heat.find((entry) => entry.line === busiest.line - 1)?.tier, 'hot', JSON.stringify(heat));

      // One source for every number: the viewer's table of this run is the run's profile.json
      // (what the terminal report prints), function for function.
      const period = 1000 / summary.totals.rate_hz;
      const all = selectSamples(document, ALL_FIBERS);
      assert.equal(toSamples(all.onCpuWeight, period), summary.totals.on_cpu);
      const table = hotFunctions(document.frames, all).map((row) => [row.name, row.file, toSamples(row.self, period), toSamples(row.total, period), row.selfPercent, row.totalPercent]);
      const report = summary.functions.map((fn) => [fn.name, fn.file, fn.self, fn.total, fn.self_pct, fn.total_pct]);
      const byName = (rows: unknown[][]) => new Map(rows.map((row) => [`${row[0]}\u0000${row[1]}`, row]));
      assert.deepEqual(byName(table), byName(report));

      // And the offline page is written beside the other outputs, the profile inside it.
      const page = readFileSync(`${stem}.html`, 'utf8');
      assert.ok(!page.includes('@OSPREY_DATA@') && page.includes('"speedscope":{'), 'hotspot.html holds the profile');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  },
);
