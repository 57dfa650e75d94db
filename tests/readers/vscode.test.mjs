// <stem>.cpuprofile through VS Code's own `.cpuprofile` model: the steps of `buildModel`
// (packages/vscode-js-profile-core/src/cpu/model.ts, with `categorize`, common/model.ts, and
// `maybeFileUrlToPath`, path.ts) of microsoft/vscode-js-profile-visualizer at 67ef42f, the
// source of VS Code's built-in profile table and flame viewers, transcribed line for line where
// they read a node or its callFrame. Neither package is published (npm has no
// vscode-js-profile-core), so the code is here, not installed. It must take every node (it
// calls `url.startsWith` on every frame and `url.includes` on every frame whose `lineNumber` is
// not below 0: a frame without a `url` string throws), file a frame without a source as system
// code, as it did the full form, and give every function the report's self time.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import {output, report, assertSelfTimes} from './common.mjs';

const Category = {System: 0, User: 1, Module: 2};

// path.ts
function maybeFileUrlToPath(fileUrl) {
  if (!fileUrl.startsWith('file:///')) return fileUrl;
  fileUrl = decodeURIComponent(fileUrl.replace('file:///', ''));
  return fileUrl[0] !== '/' && !/^[A-Za-z]:/.test(fileUrl) ? '/' + fileUrl : fileUrl;
}

// common/model.ts
function categorize(callFrame, src) {
  callFrame.functionName = callFrame.functionName || '(anonymous)';
  if (callFrame.lineNumber < 0) return Category.System;
  if (callFrame.url.includes('node_modules') || !src) return Category.Module;
  return Category.User;
}

// cpu/model.ts: ensureSourceLocations and buildModel (without $vscode annotations, which only
// VS Code's own js-debug profiles carry).
function buildModel(profile) {
  const locationsByRef = new Map();
  const getLocationIdFor = callFrame => {
    const ref = [callFrame.functionName, callFrame.url, callFrame.scriptId, callFrame.lineNumber,
                 callFrame.columnNumber].join(':');
    const existing = locationsByRef.get(ref);
    if (existing) return existing.id;
    const id = locationsByRef.size;
    locationsByRef.set(ref, {
      id, callFrame,
      location: {lineNumber: callFrame.lineNumber + 1, columnNumber: callFrame.columnNumber + 1,
                 source: {name: maybeFileUrlToPath(callFrame.url),
                          path: maybeFileUrlToPath(callFrame.url), sourceReference: 0}},
    });
    return id;
  };
  for (const node of profile.nodes) node.locationId = getLocationIdFor(node.callFrame);
  const locations = [...locationsByRef.values()].map(l => ({
    id: l.id, selfTime: 0, callFrame: l.callFrame, category: categorize(l.callFrame, l.location),
  }));
  const idMap = new Map();
  const mapId = nodeId => {
    if (!idMap.has(nodeId)) idMap.set(nodeId, idMap.size);
    return idMap.get(nodeId);
  };
  const nodes = new Array(profile.nodes.length);
  for (const node of profile.nodes) {
    nodes[mapId(node.id)] = {selfTime: 0, locationId: node.locationId,
                             children: node.children?.map(mapId) || []};
  }
  const {samples, timeDeltas} = profile;
  let lastNodeTime = profile.endTime - profile.startTime - timeDeltas[0];
  for (let i = 0; i < timeDeltas.length - 1; i++) {
    nodes[mapId(samples[i])].selfTime += timeDeltas[i + 1];
    lastNodeTime -= timeDeltas[i + 1];
  }
  nodes[mapId(samples[timeDeltas.length - 1])].selfTime += lastNodeTime;
  for (const node of nodes) locations[node.locationId].selfTime += node.selfTime;
  return {nodes, locations};
}

test('the .cpuprofile in VS Code\'s profile model: every node taken, the report\'s self times',
     () => {
  const expected = report();
  const profile = JSON.parse(fs.readFileSync(output('.cpuprofile')));
  const {nodes, locations} = buildModel(profile);
  assert.equal(nodes.length, profile.nodes.length);
  // A frame without a source (a fiber's node, (idle), code without line tables) is system
  // code, as the full form's lineNumber -1 made it; one with a line is the user's.
  for (const location of locations) {
    const known = location.callFrame.url !== '';
    assert.equal(location.category, known ? Category.User : Category.System,
                 `${location.callFrame.functionName} at '${location.callFrame.url}'`);
  }
  const self = new Map();
  for (const location of locations) {
    const name = location.callFrame.functionName;
    self.set(name, (self.get(name) ?? 0) + location.selfTime / 1e6);
  }
  assertSelfTimes('VS Code (vscode-js-profile-core 67ef42f) model', self, expected);
});
