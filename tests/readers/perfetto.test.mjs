// <stem>.trace.json against what Perfetto's JSON importer (trace_processor's
// json_trace_tokenizer.cc and json_trace_parser_impl.cc, which ui.perfetto.dev runs as wasm)
// needs to build a thread track per fiber. Perfetto's UI and trace processor are not on npm or
// in Debian, so no Perfetto code runs here (exporters/README.md says what was tried); these
// are its importer's rules, checked on a real run, and the per-fiber totals a Perfetto user
// reads off the tracks, checked against the terminal report.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {output, report, runDir} from './common.mjs';

const trace = JSON.parse(fs.readFileSync(output('.trace.json')));
const events = trace.traceEvents;
const isUint32 = v => Number.isInteger(v) && v >= 0 && v <= 0xffffffff;
const isTime = v => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const track = e => `${e.pid}:${e.tid}`;

// The report's thread lines: "thread 0 (main)  running 98.4%  waiting 1.6%  (1215 samples)",
// or "running 96.7%  preempted 3.3%  waiting 0.0%  (356 samples)"
// (a runtime's own fibers: "fiber 7 (fiber)"); the trace names each track "fiber ID (LABEL)".
function fibers() {
  const text = fs.readFileSync(path.join(runDir, 'report.txt'), 'utf8');
  const rate = report().rate;
  const found = [];
  // With the kernel's switch records a preempted share stands between them: the shares are of
  // the thread's time, samples and preempted periods together.
  const line = /^\s+(?:thread|fiber) (-?\d+) \((.*)\)\s+running\s+([\d.]+)%(?:\s+preempted\s+([\d.]+)%)?\s+waiting\s+([\d.]+)%\s+\((\d+) samples\)/;
  for (const row of text.split('\n')) {
    const match = line.exec(row);
    if (!match) continue;
    const sampled = parseInt(match[6], 10) / rate;
    const preempted = match[4] !== undefined ? parseFloat(match[4]) / 100 : 0;
    const seconds = preempted < 1 ? sampled / (1 - preempted) : sampled;
    found.push({name: `fiber ${match[1]} (${match[2]})`, periods: parseInt(match[6], 10),
                running: seconds * parseFloat(match[3]) / 100,
                waiting: seconds * parseFloat(match[5]) / 100});
  }
  assert.ok(found.length >= 2, `thread lines in:\n${text}`);
  return found;
}

test('the document is what Perfetto\'s tokenizer reads: traceEvents first, known keys only', () => {
  const keys = Object.keys(trace);
  assert.equal(keys[0], 'traceEvents', 'the tokenizer reads the events as soon as it meets them');
  // Older importers stop at a top-level key they do not know; displayTimeUnit must be ms or ns.
  assert.deepEqual(keys.filter(k => !['traceEvents', 'displayTimeUnit', 'otherData'].includes(k)),
                   []);
  assert.ok(['ms', 'ns'].includes(trace.displayTimeUnit));
  assert.equal(typeof trace.otherData, 'object');
  assert.ok(Array.isArray(events) && events.length > 0);
});

test('every event has the types Perfetto\'s parser takes', () => {
  for (const e of events) {
    const where = JSON.stringify(e).slice(0, 160);
    assert.ok(typeof e.ph === 'string' && e.ph.length === 1, `ph: ${where}`);
    assert.ok(['M', 'P', 'X'].includes(e.ph), `a phase this writer means to write: ${where}`);
    assert.ok(isUint32(e.pid) && isUint32(e.tid), `pid and tid fit uint32: ${where}`);
    assert.equal(typeof e.name, 'string', `name: ${where}`);
    // The tokenizer drops every event without a numeric ts, metadata excepted.
    if (e.ph !== 'M') assert.ok(isTime(e.ts), `ts: ${where}`);
    // The parser drops a complete event without a numeric dur.
    if (e.ph === 'X') assert.ok(isTime(e.dur), `dur: ${where}`);
    if (e.ph === 'P') assert.equal(typeof e.id, 'string', `a profile's id: ${where}`);
  }
});

test('each fiber is one thread track, named by thread_name metadata', () => {
  const named = new Map();
  for (const e of events.filter(e => e.ph === 'M' && e.name === 'thread_name')) {
    assert.ok(typeof e.args?.name === 'string' && e.args.name.length > 0);
    assert.ok(!named.has(track(e)), `one name per track: ${track(e)}`);
    named.set(track(e), e.args.name);
  }
  const processes = events.filter(e => e.ph === 'M' && e.name === 'process_name');
  assert.equal(processes.length, 1);
  assert.ok(processes[0].args.name.length > 0);
  for (const e of events.filter(e => e.ph !== 'M'))
    assert.ok(named.has(track(e)), `an event on an unnamed track: ${JSON.stringify(e).slice(0, 120)}`);
  assert.deepEqual([...named.values()].sort(), fibers().map(f => f.name).sort());
});

test('per track: timestamps in order, waits never overlap, samples well formed', () => {
  const byTrack = new Map();
  for (const e of events.filter(e => e.ph !== 'M')) {
    if (!byTrack.has(track(e))) byTrack.set(track(e), []);
    byTrack.get(track(e)).push(e);
  }
  for (const [key, list] of byTrack) {
    for (let i = 1; i < list.length; i++)
      if (list[i].ph === list[i - 1].ph)
        assert.ok(list[i].ts >= list[i - 1].ts, `${key}: ${list[i].ph} events out of order`);
    // Complete events on one track must nest for the slice tracker: these are flat, so each
    // ends before the next begins.
    const waits = list.filter(e => e.ph === 'X');
    for (let i = 1; i < waits.length; i++)
      assert.ok(waits[i - 1].ts + waits[i - 1].dur <= waits[i].ts,
                `${key}: wait at ${waits[i - 1].ts} overlaps the one at ${waits[i].ts}`);
    // A wait names its site; the first wait at a site on a track carries its stack, the later
    // ones there the site alone (the stack once per site and track, not once per wait).
    const sites = new Set();
    for (const wait of waits) {
      assert.ok(Number.isInteger(wait.args?.site), `${key}: a wait's site`);
      if (sites.has(wait.args.site)) {
        assert.equal(wait.args.stack, undefined, `${key}: site ${wait.args.site}'s stack again`);
      } else {
        assert.ok(Array.isArray(wait.args.stack) && wait.args.stack.length > 0,
                  `${key}: the first wait at site ${wait.args.site} carries its stack`);
        sites.add(wait.args.site);
      }
    }
    // The V8 profile: one Profile, then its chunks under the same id.
    const profiles = list.filter(e => e.ph === 'P');
    if (profiles.length === 0) continue;
    assert.equal(profiles[0].name, 'Profile', `${key}: Profile comes first`);
    assert.ok(isTime(profiles[0].args.data.startTime));
    const ids = new Set();
    for (const chunk of profiles.slice(1)) {
      assert.equal(chunk.name, 'ProfileChunk');
      assert.equal(chunk.id, profiles[0].id, `${key}: a chunk of another profile`);
      const {cpuProfile, timeDeltas} = chunk.args.data;
      for (const node of cpuProfile.nodes ?? []) {
        assert.ok(Number.isInteger(node.id) && !ids.has(node.id), `${key}: node id ${node.id}`);
        assert.ok(node.parent === undefined || ids.has(node.parent),
                  `${key}: node ${node.id}'s parent comes before it`);
        ids.add(node.id);
      }
      assert.equal(cpuProfile.samples.length, timeDeltas.length, `${key}: a delta per sample`);
      assert.ok(cpuProfile.samples.every(id => ids.has(id)), `${key}: samples name known nodes`);
      assert.ok(timeDeltas.every(d => Number.isInteger(d) && d >= 0), `${key}: deltas`);
    }
  }
});

test('per fiber, the track\'s CPU samples and waits are the report\'s running and waiting time', () => {
  const expected = report();
  const names = new Map(events.filter(e => e.name === 'thread_name')
                          .map(e => [track(e), e.args.name]));
  // What a Perfetto user reads off a track: its CPU samples, each lasting until the next one
  // (the (idle) node is no CPU), and its slices.
  const running = new Map(), waiting = new Map();
  for (const e of events) {
    const name = names.get(track(e));
    if (e.ph === 'X') waiting.set(name, (waiting.get(name) ?? 0) + e.dur / 1e6);
  }
  const streams = new Map();
  for (const e of events.filter(e => e.ph === 'P')) {
    if (!streams.has(track(e))) streams.set(track(e), {idle: new Set(), samples: [], deltas: []});
    const stream = streams.get(track(e));
    if (e.name !== 'ProfileChunk') continue;
    for (const node of e.args.data.cpuProfile.nodes ?? [])
      if (['(idle)', '(root)'].includes(node.callFrame.functionName)) stream.idle.add(node.id);
    stream.samples.push(...e.args.data.cpuProfile.samples);
    stream.deltas.push(...e.args.data.timeDeltas);
  }
  for (const [key, stream] of streams) {
    let busy = 0;
    for (let i = 0; i + 1 < stream.samples.length; i++)
      if (!stream.idle.has(stream.samples[i])) busy += stream.deltas[i + 1] / 1e6;
    running.set(names.get(key), busy);
  }
  const lines = [];
  for (const fiber of fibers()) {
    const cpu = running.get(fiber.name) ?? 0, waits = waiting.get(fiber.name) ?? 0;
    lines.push(`${fiber.name}: running report ${fiber.running.toFixed(3)} s, trace ` +
               `${cpu.toFixed(3)} s; waiting report ${fiber.waiting.toFixed(3)} s, trace ` +
               `${waits.toFixed(3)} s`);
    // 1% of the run's CPU, plus the report's rounding of its percentages (0.05% of the fiber's
    // samples) and a microsecond per sample of the trace's integer timestamps.
    const seconds = fiber.periods / expected.rate;
    const slack = 0.01 * expected.cpu + 0.0005 * seconds + fiber.periods * 1e-6;
    assert.ok(Math.abs(cpu - fiber.running) <= slack, lines.join('\n'));
    // A wait is cut at the thread's next sample, so the slices may fall short of the waiting
    // periods by what a preempted or late sample took back: 1% of the fiber's time.
    assert.ok(Math.abs(waits - fiber.waiting) <= slack + 0.01 * seconds, lines.join('\n'));
  }
  console.log(`Perfetto's importer rules, per fiber track:\n  ` + lines.join('\n  '));
});
