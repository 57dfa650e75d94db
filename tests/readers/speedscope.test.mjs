// <stem>.speedscope.json in speedscope's own app (npm `speedscope`, dist/release, opened the
// way its CLI opens a file) in headless Chromium: it must open on the busiest fiber, and the
// self times of its Sandwich view, summed over the fibers, must be the report's.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {createRequire} from 'node:module';
import {chromium} from 'playwright-core';
import {output, report, assertSelfTimes} from './common.mjs';

const require = createRequire(import.meta.url);
const speedscopeDir = path.dirname(require.resolve('speedscope/package.json'));
const speedscopeVersion = require('speedscope/package.json').version;
const chromiumArgs = ['--no-sandbox', '--headless', '--disable-gpu', '--no-first-run',
                      '--disable-background-networking', '--disable-component-update',
                      '--disable-sync'];

function seconds(text) {
  const match = /^([\d.]+)(ns|µs|us|ms|s)\b/.exec(text.trim());
  assert.ok(match, `a speedscope duration: ${text}`);
  const scale = {ns: 1e-9, 'µs': 1e-6, us: 1e-6, ms: 1e-3, s: 1}[match[2]];
  return parseFloat(match[1]) * scale;
}

// Open `document` (a speedscope file's JSON, or another format speedscope imports, named
// `name`) and return the profile shown and its Sandwich table as [name, self seconds].
async function openInSpeedscope(browser, document, scratch, name = 'run.speedscope.json',
                                shownPattern = /^\S+-\d+ (\((main|thread)\) )?\(\d+\/\d+\)$/) {
  const loader = path.join(scratch, `load-${name}-${document.activeProfileIndex}.js`);
  const base64 = Buffer.from(JSON.stringify(document)).toString('base64');
  fs.writeFileSync(loader, `speedscope.loadFileFromBase64(${JSON.stringify(name)}, ` +
                           `${JSON.stringify(base64)})`);
  const page = await browser.newPage({viewport: {width: 1600, height: 4000}});
  const index = path.join(speedscopeDir, 'dist', 'release', 'index.html');
  await page.goto(`file://${index}#localProfilePath=${loader}`);
  await page.getByText('Sandwich').first().waitFor({timeout: 30000});
  // A file of one profile (an imported .cpuprofile) has no profile name of its own to show.
  const shown = shownPattern ? await page.getByText(shownPattern).first().innerText() : '';
  await page.getByText('Sandwich').first().click();
  await page.getByText('Symbol Name').waitFor({timeout: 30000});
  const text = await page.evaluate(() => document.body.innerText);
  await page.close();
  const lines = text.slice(text.indexOf('Symbol Name') + 'Symbol Name'.length)
                    .split('\n').map(line => line.trim()).filter(line => line !== '');
  const rows = [];
  for (let i = 0; i + 2 < lines.length; i += 3) {
    if (!/^[\d.]+(ns|µs|us|ms|s) \(/.test(lines[i]) || !/^[\d.]+(ns|µs|us|ms|s) \(/.test(lines[i + 1]))
      break;
    rows.push([lines[i + 2], seconds(lines[i + 1])]);
  }
  assert.ok(rows.length > 0, `a Sandwich table in:\n${text.slice(0, 2000)}`);
  return {shown, rows};
}

test('speedscope opens on the busiest fiber and its self times are the report\'s', async () => {
  const expected = report();
  const original = JSON.parse(fs.readFileSync(output('.speedscope.json')));
  const summary = JSON.parse(fs.readFileSync(output('.profile.json')));
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'osprey-speedscope-'));
  const browser = await chromium.launch({executablePath: '/usr/bin/chromium', args: chromiumArgs});
  try {
    // The fiber with the most on-CPU samples is the one it opens on.
    const busiest = summary.fibers.reduce((best, fiber, i) =>
      fiber.on_cpu > summary.fibers[best].on_cpu ? i : best, 0);
    const first = await openInSpeedscope(browser, original, scratch);
    assert.ok(first.shown.startsWith(original.profiles[busiest].name + ' ('),
              `opened on ${first.shown}, the busiest is ${original.profiles[busiest].name}`);
    // Every fiber in turn, through the file's own activeProfileIndex.
    const self = new Map();
    for (let i = 0; i < original.profiles.length; i++) {
      const {shown, rows} = i === busiest ? first
                                          : await openInSpeedscope(browser,
                                              {...original, activeProfileIndex: i}, scratch);
      assert.ok(shown.startsWith(original.profiles[i].name + ' ('), shown);
      for (const [name, seconds] of rows)
        if (name !== '(waiting)') self.set(name, (self.get(name) ?? 0) + seconds);
    }
    assertSelfTimes(`speedscope ${speedscopeVersion} Sandwich`, self, expected);
  } finally {
    await browser.close();
    fs.rmSync(scratch, {recursive: true, force: true});
  }
});

// The .cpuprofile through speedscope's Chrome importer: its call frames as written (no column
// where there is no line) give every function the report's self time.
test('speedscope imports the .cpuprofile with the report\'s self times', async () => {
  const expected = report();
  const profile = JSON.parse(fs.readFileSync(output('.cpuprofile')));
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'osprey-speedscope-'));
  const browser = await chromium.launch({executablePath: '/usr/bin/chromium', args: chromiumArgs});
  try {
    const {rows} = await openInSpeedscope(browser, profile, scratch, 'run.cpuprofile', null);
    assertSelfTimes(`speedscope ${speedscopeVersion} Sandwich of the .cpuprofile`,
                    new Map(rows), expected);
  } finally {
    await browser.close();
    fs.rmSync(scratch, {recursive: true, force: true});
  }
});
