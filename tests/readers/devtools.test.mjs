// <stem>.cpuprofile and <stem>.trace.json through Chrome DevTools' own CPU profile model
// (front_end/models/cpu_profile of the npm chrome-devtools-frontend, bundled for node with
// esbuild): the self time of each function in its call tree (hitCount × the mean interval,
// what the Bottom-Up and Call Tree tabs show) and on its timeline (forEachFrame, what the flame
// chart draws) must be the report's; waiting is (idle), which DevTools leaves out of CPU time.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {createRequire} from 'node:module';
import * as esbuild from 'esbuild';
import {output, report, assertSelfTimes} from './common.mjs';

const require = createRequire(import.meta.url);
const devtoolsVersion = require('chrome-devtools-frontend/package.json').version;

async function loadModel() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'osprey-devtools-'));
  const bundle = path.join(dir, 'cpu-profile-model.mjs');
  await esbuild.build({
    stdin: {
      contents: "export {CPUProfileDataModel} from " +
                "'chrome-devtools-frontend/front_end/models/cpu_profile/CPUProfileDataModel.ts';",
      resolveDir: path.dirname(new URL(import.meta.url).pathname),
      loader: 'js',
    },
    bundle: true, platform: 'node', format: 'esm', outfile: bundle, logLevel: 'warning',
  });
  const module = await import(bundle);
  fs.rmSync(dir, {recursive: true, force: true});
  return module.CPUProfileDataModel;
}

// Self seconds per function name, from the tree and from the timeline, leaving out V8's
// meta nodes and the synthetic fiber roots.
function selfTimes(model) {
  const tree = new Map(), timeline = new Map();
  const add = (map, name, ms) => map.set(name, (map.get(name) ?? 0) + ms / 1000);
  const walk = node => {
    add(tree, node.functionName, node.self);
    node.children.forEach(walk);
  };
  walk(model.profileHead);
  model.forEachFrame(() => {}, (_depth, node, _sample, _ts, _duration, selfTime) =>
    add(timeline, node.functionName, selfTime));
  return {tree, timeline};
}

test('the .cpuprofile in DevTools\' model: every function its report self time', async () => {
  const CPUProfileDataModel = await loadModel();
  const expected = report();
  const profile = JSON.parse(fs.readFileSync(output('.cpuprofile')));
  // Sized by the call tree, not the samples: a node's samples are one sample lasting them all.
  assert.ok(profile.samples.length < expected.samples / 2,
            `${profile.samples.length} samples in the .cpuprofile for ${expected.samples} rows`);
  const model = new CPUProfileDataModel(profile);
  const {tree, timeline} = selfTimes(model);
  assertSelfTimes(`DevTools ${devtoolsVersion} call tree`, tree, expected);
  assertSelfTimes(`DevTools ${devtoolsVersion} timeline`, timeline, expected);
  // CPU time is everything but (idle): the run's CPU, not CPU plus the waits.
  const idle = model.idleNode ? model.idleNode.self / 1000 : 0;
  const busy = (model.profileEndTime - model.profileStartTime) / 1000 - idle;
  assert.ok(Math.abs(busy - expected.cpu) <= 0.01 * expected.cpu + 0.005,
            `DevTools busy ${busy} s, report CPU ${expected.cpu} s`);
  assert.ok(idle > 0, 'the example sleeps: its waits are (idle)');
});

// A thread's samples in the trace, put together as DevTools' trace model does: the Profile
// event's start time, then every ProfileChunk's nodes, samples and time deltas in order.
function traceProfiles(trace) {
  const byThread = new Map();
  for (const event of trace.traceEvents) {
    if (event.ph !== 'P') continue;
    const key = `${event.pid}:${event.tid}`;
    if (!byThread.has(key)) byThread.set(key, {nodes: [], samples: [], timeDeltas: []});
    const profile = byThread.get(key);
    if (event.name === 'Profile') profile.startTime = event.args.data.startTime;
    if (event.name === 'ProfileChunk') {
      const chunk = event.args.data;
      profile.nodes.push(...(chunk.cpuProfile.nodes ?? []));
      profile.samples.push(...(chunk.cpuProfile.samples ?? []));
      profile.timeDeltas.push(...(chunk.timeDeltas ?? []));
    }
  }
  for (const profile of byThread.values())
    profile.endTime = profile.startTime + profile.timeDeltas.reduce((a, b) => a + b, 0);
  return byThread;
}

test('the .trace.json in DevTools\' model: one profile per fiber, on real time', async () => {
  const CPUProfileDataModel = await loadModel();
  const expected = report();
  const trace = JSON.parse(fs.readFileSync(output('.trace.json')));
  const profiles = traceProfiles(trace);
  const names = trace.traceEvents.filter(e => e.name === 'thread_name').map(e => e.args.name);
  assert.equal(profiles.size, names.length, 'a profile per fiber track');
  const timeline = new Map();
  for (const profile of profiles.values()) {
    const model = new CPUProfileDataModel(profile);
    const times = selfTimes(model);
    for (const [name, seconds] of times.timeline)
      timeline.set(name, (timeline.get(name) ?? 0) + seconds);
  }
  // The Performance panel sums the timeline (each sample lasts until the thread's next one):
  // that is the measure here. (The call tree's hitCount × mean interval is not used for
  // traces: the idle gaps between samples are samples of their own.)
  assertSelfTimes(`DevTools ${devtoolsVersion} trace timeline`, timeline, expected);
  const waits = trace.traceEvents.filter(e => e.ph === 'X' && e.cat === 'osprey.waiting');
  assert.ok(waits.length > 0 && waits.every(e => e.name.startsWith('waiting in ')));
});
