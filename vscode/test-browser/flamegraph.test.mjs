// The flame-graph webview in headless Chromium (Debian's /usr/bin/chromium driven by
// playwright-core): the real HTML (with its content-security policy) and the real bundled
// script, with acquireVsCodeApi stubbed to record what the page posts. The fixture profile
// is the one the unit tests use; geometry below follows from it (fiber "thread": 100 samples,
// checksum_block 70 of them on the left at depth 3, fill_block 30 on the right).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const CHROMIUM = '/usr/bin/chromium';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { parseSpeedscope, parseProfileSummary } = require(join(root, 'out/model.js'));
const { renderWebviewHtml, makeNonce } = require(join(root, 'out/webviewHtml.js'));

const ROW_HEIGHT = 18;
const BACKGROUND = [10, 20, 30];
const THREAD_FIBER = '1';
const results = join(root, 'test-results');

let context;
let page;
let userDataDir;
const pageErrors = [];

before(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: the webview tests need Debian's chromium (apt-get install chromium)`,
    );
  }
  const { chromium } = await import('playwright-core');
  mkdirSync(results, { recursive: true });
  userDataDir = mkdtempSync(join(tmpdir(), 'osprey-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1200, height: 600 },
    deviceScaleFactor: 1,
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on('pageerror', (error) => pageErrors.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' || /Content Security Policy/i.test(message.text())) {
      pageErrors.push(`console: ${message.text()}`);
    }
  });
  // What VS Code provides: the messaging API and the theme's CSS variables on <html>.
  await page.addInitScript((background) => {
    window.__posted = [];
    window.acquireVsCodeApi = () => ({ postMessage: (message) => window.__posted.push(message) });
    document.addEventListener('DOMContentLoaded', () =>
      document.documentElement.style.setProperty('--vscode-editor-background', `rgb(${background.join(', ')})`),
    );
  }, BACKGROUND);

  const html = renderWebviewHtml({
    cspSource: 'file:',
    nonce: makeNonce(),
    scriptUri: pathToFileURL(join(root, 'out/webview/flamegraph.js')).href,
    title: 'test',
  });
  const htmlPath = join(results, 'flamegraph.html');
  writeFileSync(htmlPath, html);
  await page.goto(pathToFileURL(htmlPath).href);
  await page.waitForFunction(() => window.__posted.some((message) => message.type === 'ready'));

  const speedscopePath = join(root, 'fixtures/hotspot.speedscope.json');
  const summaryPath = join(root, 'fixtures/hotspot.profile.json');
  const message = {
    type: 'load',
    title: 'Osprey: hotspot',
    document: parseSpeedscope(readFileSync(speedscopePath, 'utf8'), speedscopePath),
    summary: parseProfileSummary(readFileSync(summaryPath, 'utf8'), summaryPath),
  };
  await page.evaluate((data) => window.dispatchEvent(new MessageEvent('message', { data })), message);
});

after(async () => {
  await context?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

async function canvasBox() {
  const box = await page.locator('#canvas').boundingBox();
  assert.ok(box, 'canvas is laid out');
  return box;
}

/* A point on the canvas: fraction of the width, middle of a depth row. */
async function point(fraction, depth) {
  const box = await canvasBox();
  return { x: box.x + fraction * box.width, y: box.y + (depth + 0.5) * ROW_HEIGHT };
}

async function pixel(fraction, depth) {
  const { x, y } = await point(fraction, depth);
  const box = await canvasBox();
  return page.evaluate(
    ([px, py]) => [...document.getElementById('canvas').getContext('2d').getImageData(px, py, 1, 1).data],
    [Math.round(x - box.x), Math.round(y - box.y)],
  );
}

async function canvasImage() {
  return page.evaluate(() => document.getElementById('canvas').toDataURL());
}

async function posted() {
  return page.evaluate(() => window.__posted.filter((message) => message.type === 'openSource'));
}

/* A click selects the frame (and opens nothing); Enter then opens its source. */
async function clickAndExpectSource(fraction, depth) {
  const before = (await posted()).length;
  const { x, y } = await point(fraction, depth);
  await page.mouse.click(x, y);
  assert.equal((await posted()).length, before, `a click at ${fraction}, depth ${depth} only selects`);
  await page.keyboard.press('Enter');
  const after = await posted();
  assert.equal(after.length, before + 1, `Enter after a click at ${fraction}, depth ${depth} posts one message`);
  return after.at(-1);
}

const sameRgb = (a, b) => a[0] === b[0] && a[1] === b[1] && a[2] === b[2];

test('renders the profile with frames on the theme background', async () => {
  const counts = await page.evaluate((background) => {
    const canvas = document.getElementById('canvas');
    const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let painted = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (data[i] !== background[0] || data[i + 1] !== background[1] || data[i + 2] !== background[2]) painted++;
    }
    return { painted, total: data.length / 4 };
  }, BACKGROUND);
  assert.ok(counts.painted > counts.total * 0.02, `only ${counts.painted} of ${counts.total} pixels painted`);
  const box = await canvasBox();
  assert.ok(box.width > 400 && box.height > 100);
  // Below the deepest stack the canvas shows the editor background.
  assert.deepEqual((await pixel(0.5, 15)).slice(0, 3), BACKGROUND);
  assert.equal(await page.locator('#status').textContent(), '105 samples on-CPU · 105.3 ms');
  await page.screenshot({ path: join(results, 'flamegraph.png') });
  assert.deepEqual(pageErrors, []);
});

test('a theme change redraws with the new editor background', async () => {
  const light = [250, 250, 240];
  await page.evaluate((colour) => {
    document.documentElement.style.setProperty('--vscode-editor-background', `rgb(${colour.join(', ')})`);
    document.body.className = 'vscode-light';
  }, light);
  await page.waitForFunction(
    (colour) => {
      const canvas = document.getElementById('canvas');
      const pixel = canvas.getContext('2d').getImageData(5, canvas.height - 5, 1, 1).data;
      return pixel[0] === colour[0] && pixel[1] === colour[1] && pixel[2] === colour[2];
    },
    light,
    { timeout: 10000 },
  );
  await page.evaluate((colour) => {
    document.documentElement.style.setProperty('--vscode-editor-background', `rgb(${colour.join(', ')})`);
    document.body.className = '';
  }, BACKGROUND);
  await page.waitForFunction(
    (colour) => {
      const canvas = document.getElementById('canvas');
      return canvas.getContext('2d').getImageData(5, canvas.height - 5, 1, 1).data[0] === colour[0];
    },
    BACKGROUND,
    { timeout: 10000 },
  );
});

test('the fiber filter lists every fiber plus All fibers and changes the drawing', async () => {
  const options = await page.locator('#fiber option').allTextContents();
  assert.deepEqual(options, ['All fibers', 'fiber 0 (main)', 'fiber 4243 (thread)']);
  const all = await canvasImage();
  await page.selectOption('#fiber', THREAD_FIBER);
  assert.notEqual(await canvasImage(), all);
  assert.equal(await page.locator('#status').textContent(), '100 samples on-CPU · 100.3 ms');
});

test('hover shows name, location, self and total in ms and %, and samples', async () => {
  const { x, y } = await point(0.35, 3);
  await page.mouse.move(x, y);
  const tooltip = page.locator('#tooltip');
  assert.equal(await tooltip.isVisible(), true);
  const text = await tooltip.innerText();
  assert.match(text, /checksum_block/);
  assert.match(text, /\/w\/hotspot\.c:21/);
  assert.match(text, /On-CPU total: 70\.2 ms \(70\.0%\)/);
  assert.match(text, /On-CPU self: 30\.1 ms \(30\.0%\)/);
  assert.match(text, /70 samples/);
  await page.mouse.move(x, (await canvasBox()).y + 15 * ROW_HEIGHT);
  assert.equal(await tooltip.isVisible(), false);
});

test('a click selects a frame; Enter or its location in the details line opens the source', async () => {
  assert.deepEqual(await clickAndExpectSource(0.35, 3), { type: 'openSource', file: '/w/hotspot.c', line: 21 });
  assert.deepEqual(await clickAndExpectSource(0.85, 3), { type: 'openSource', file: '/w/hotspot.c', line: 31 });
  assert.deepEqual(await clickAndExpectSource(0.2, 4), { type: 'openSource', file: '/w/hotspot.c', line: 12 });
  // The selection is described, with its location as a link.
  assert.match(await page.locator('#details').innerText(), /mix[\s\S]*hotspot\.c:12/);
  const before = (await posted()).length;
  await page.click('#details a.location');
  assert.deepEqual((await posted()).at(-1), { type: 'openSource', file: '/w/hotspot.c', line: 12 });
  assert.equal((await posted()).length, before + 1);
  // Frames without a file (clone3 at the root) have no source to open.
  const { x, y } = await point(0.5, 0);
  await page.mouse.click(x, y);
  await page.keyboard.press('Enter');
  assert.equal((await posted()).length, before + 1);
  // Focus stays with the graph: Escape clears the selection.
  await page.keyboard.press('Escape');
  assert.match(await page.locator('#details').innerText(), /^Click a frame/);
});

test('search dims non-matching frames and reports the matching share', async () => {
  const checksumBefore = await pixel(0.35, 3);
  const fillBefore = await pixel(0.85, 3);
  await page.fill('#search', 'FILL');
  assert.equal(await page.locator('#match-summary').textContent(), '30.0% of on-CPU time matches');
  const checksumAfter = await pixel(0.35, 3);
  const fillAfter = await pixel(0.85, 3);
  assert.ok(!sameRgb(checksumBefore, checksumAfter), 'checksum_block is dimmed');
  assert.ok(sameRgb(fillBefore, fillAfter), 'fill_block keeps its colour');
  // Dimmed means closer to the background.
  const distance = (p) => Math.abs(p[0] - BACKGROUND[0]) + Math.abs(p[1] - BACKGROUND[1]) + Math.abs(p[2] - BACKGROUND[2]);
  assert.ok(distance(checksumAfter) < distance(checksumBefore));
  await page.selectOption('#fiber', '0');
  assert.equal(await page.locator('#match-summary').textContent(), '0.0% of on-CPU time matches');
  await page.selectOption('#fiber', THREAD_FIBER);
  await page.locator('#search').press('Escape');
  assert.equal(await page.locator('#match-summary').textContent(), '');
  assert.ok(sameRgb(await pixel(0.35, 3), checksumBefore), 'clearing the search restores the colours');
});

test('double-click zooms to a frame without opening it, 0 resets', async () => {
  const { x, y } = await point(0.85, 3);
  const before = (await posted()).length;
  await page.mouse.dblclick(x, y);
  assert.equal((await posted()).length, before, 'a double click opens nothing');
  // fill_block now spans the width: its left part is where checksum_block was.
  assert.equal((await clickAndExpectSource(0.1, 3)).line, 31);
  await page.keyboard.press('0');
  assert.equal((await clickAndExpectSource(0.1, 3)).line, 21);
});

test('wheel zooms around the cursor, Escape resets, drag pans without opening source', async () => {
  const { x, y } = await point(0.35, 3);
  await page.mouse.move(x, y);
  await page.mouse.wheel(0, -700); // zoom in about 4x around 35%
  // 72% was fill_block; zoomed in around 35% it now shows checksum_block.
  assert.equal((await clickAndExpectSource(0.72, 3)).line, 21);
  assert.equal((await clickAndExpectSource(0.35, 3)).line, 21, 'the frame under the cursor stays');
  await page.keyboard.press('Escape');
  assert.equal((await clickAndExpectSource(0.72, 3)).line, 31);

  await page.mouse.move(x, y);
  await page.mouse.wheel(0, -700);
  const before = (await posted()).length;
  const image = await canvasImage();
  const box = await canvasBox();
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(x - box.width * 0.3, y, { steps: 5 });
  await page.mouse.up();
  assert.equal((await posted()).length, before, 'a drag is not a click');
  assert.notEqual(await canvasImage(), image, 'the drag moved the view');
  await page.keyboard.press('0');
});

test('Time Order draws samples in recorded order', async () => {
  await page.keyboard.press('Escape');
  const leftHeavy = await canvasImage();
  await page.click('#view-time-order');
  assert.equal(await page.locator('#view-time-order').getAttribute('aria-pressed'), 'true');
  assert.notEqual(await canvasImage(), leftHeavy);
  // The thread starts with three fill_block samples, then checksum_block.
  assert.equal((await clickAndExpectSource(0.01, 3)).line, 31);
  assert.equal((await clickAndExpectSource(0.05, 3)).line, 21);
  await page.screenshot({ path: join(results, 'flamegraph-time-order.png') });
  await page.click('#view-left-heavy');
  await page.keyboard.press('Escape');
  assert.equal(await canvasImage(), leftHeavy, 'switching back restores the Left Heavy drawing');
});

test('the hot table follows the fiber, sorts by self or total, and opens source explicitly', async () => {
  assert.match(await page.locator('#hot-caption').textContent(), /on-CPU, fiber 4243 \(thread\) \(100 samples\)/);
  assert.deepEqual(await page.locator('#hot-body tr').first().locator('td').allTextContents(), ['mix', '40.0%', '40.0%', 'hotspot.c:12']);
  await page.selectOption('#fiber', '-1');
  const firstRow = async () => page.locator('#hot-body tr').first().locator('td').allTextContents();
  assert.deepEqual(await firstRow(), ['mix', '38.1%', '38.1%', 'hotspot.c:12']);
  const titles = await page.locator('#hot-body tr').first().locator('td').evaluateAll((cells) => cells.map((cell) => cell.title));
  assert.deepEqual(titles, ['mix', '40 samples · 40.1 ms', '40 samples · 40.1 ms', '']);
  await page.click('#sort-total');
  assert.equal(await page.locator('#sort-total').getAttribute('aria-sort'), 'descending');
  // Equal totals: then self, then name — clone3 (a runtime frame, no file) comes first.
  assert.deepEqual(await firstRow(), ['clone3', '0.0%', '95.2%', '']);
  await page.click('#sort-self');
  const before = (await posted()).length;
  await page.locator('#hot-body tr').nth(1).locator('td').first().click(); // checksum_block (self 30, total 70)
  assert.equal((await posted()).length, before, 'a click on a row selects it');
  assert.equal(await page.locator('#hot-body tr').nth(1).getAttribute('aria-selected'), 'true');
  assert.match(await page.locator('#details').innerText(), /checksum_block/);
  await page.keyboard.press('Enter');
  assert.deepEqual((await posted()).at(-1), { type: 'openSource', file: '/w/hotspot.c', line: 21 });
  await page.locator('#hot-body tr').first().locator('a.location').click();
  assert.deepEqual((await posted()).at(-1), { type: 'openSource', file: '/w/hotspot.c', line: 12 });
  assert.equal((await posted()).length, before + 2);
  assert.match(await page.locator('#hot-caption').textContent(), /on-CPU, all fibers \(105 samples\)/);
  assert.deepEqual(pageErrors, []);
});

test('a real profile of examples/hotspot.c renders and searches', async () => {
  const { matchingOnCpuWeight, matchFrames, selectSamples, ALL_FIBERS } = require(join(root, 'out/layout.js'));
  const speedscopePath = join(root, 'fixtures/real-hotspot.speedscope.json');
  const summaryPath = join(root, 'fixtures/real-hotspot.profile.json');
  const document = parseSpeedscope(readFileSync(speedscopePath, 'utf8'), speedscopePath);
  const summary = parseProfileSummary(readFileSync(summaryPath, 'utf8'), summaryPath);
  const message = { type: 'load', title: 'Osprey: hotspot', document, summary };
  const before = await canvasImage();
  await page.evaluate((data) => window.dispatchEvent(new MessageEvent('message', { data })), message);
  assert.notEqual(await canvasImage(), before);
  const share = (fiber) => {
    const samples = selectSamples(document, fiber);
    return (100 * matchingOnCpuWeight(samples, matchFrames(document.frames, 'checksum'))) / samples.onCpuWeight;
  };
  await page.fill('#search', 'checksum');
  assert.equal(await page.locator('#match-summary').textContent(), `${share(ALL_FIBERS).toFixed(1)}% of on-CPU time matches`);
  const thread = document.profiles.findIndex((profile) => profile.name.endsWith('(thread)'));
  await page.selectOption('#fiber', String(thread));
  assert.equal(await page.locator('#match-summary').textContent(), `${share(thread).toFixed(1)}% of on-CPU time matches`);
  assert.ok(share(thread) > 50, `checksum_block in ${share(thread)}% of the worker's samples`);
  await page.screenshot({ path: join(results, 'flamegraph-hotspot.png') });
  // The hot table and the search agree: checksum_block's total share is the search share.
  await page.selectOption('#fiber', '-1');
  const checksumRow = page.locator('#hot-body tr[data-name="checksum_block"] td');
  assert.equal(await checksumRow.nth(2).textContent(), `${share(ALL_FIBERS).toFixed(1)}%`);
  assert.equal(await checksumRow.nth(1).textContent(), `${summary.functions[0].self_pct.toFixed(1)}%`);
  // A match of one sample in two thousand is still drawn, in the match colour.
  await page.fill('#search', 'clock_nanosleep');
  const matchPixels = await page.evaluate(() => {
    const canvas = document.getElementById('canvas');
    const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let count = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i] === 30 && data[i + 1] === 144 && data[i + 2] === 255) count++;
    return count;
  });
  assert.ok(matchPixels >= 2 * 17, `the tiny match shows (${matchPixels} pixels in the match colour)`);
  await page.fill('#search', '');
  assert.equal(await page.locator('#hot-body tr').first().locator('td').first().textContent(), 'checksum_block');
  assert.equal(summary.functions[0].name, 'checksum_block');
  assert.deepEqual(pageErrors, []);
});

test('a real profile of examples/mixed.c renders every fiber (the README screenshot)', async () => {
  const speedscopePath = join(root, 'fixtures/real-mixed.speedscope.json');
  const summaryPath = join(root, 'fixtures/real-mixed.profile.json');
  const document = parseSpeedscope(readFileSync(speedscopePath, 'utf8'), speedscopePath);
  const summary = parseProfileSummary(readFileSync(summaryPath, 'utf8'), summaryPath);
  const message = { type: 'load', title: 'Osprey: mixed', document, summary };
  await page.evaluate((data) => window.dispatchEvent(new MessageEvent('message', { data })), message);
  await page.fill('#search', '');
  await page.selectOption('#fiber', { index: 0 });
  const allFibers = await canvasImage();
  // Three fibers: each one alone draws something different from all of them together.
  for (let fiber = 0; fiber < document.profiles.length; fiber++) {
    await page.selectOption('#fiber', String(fiber));
    assert.notEqual(await canvasImage(), allFibers, `fiber ${fiber} alone looks like all fibers`);
  }
  await page.selectOption('#fiber', { index: 0 });
  assert.equal(await canvasImage(), allFibers);
  assert.equal(await page.locator('#hot-body tr').first().locator('td').first().textContent(),
    summary.functions[0].name);
  assert.equal(summary.functions[0].name, 'partition');
  await page.screenshot({ path: join(results, 'flamegraph-mixed.png') });
  assert.deepEqual(pageErrors, []);
});

test('waiting time is hidden by default, and shown grey and apart on demand', async () => {
  const speedscopePath = join(root, 'fixtures/real-hotspot.speedscope.json');
  const document = parseSpeedscope(readFileSync(speedscopePath, 'utf8'), speedscopePath);
  await page.evaluate((data) => window.dispatchEvent(new MessageEvent('message', { data })), { type: 'load', title: 'x', document });
  const grey = () => page.evaluate(() => {
    const canvas = document.getElementById('canvas');
    const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let count = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i] === 154 && data[i + 1] === 154 && data[i + 2] === 154) count++;
    return count;
  });
  assert.equal(await grey(), 0, 'no waiting frame drawn by default');
  assert.doesNotMatch(await page.locator('#status').textContent(), /waiting/);
  await page.click('#show-waiting');
  assert.equal(await page.locator('#show-waiting').getAttribute('aria-pressed'), 'true');
  assert.ok((await grey()) > 1000, 'the main thread\'s waiting shows in grey');
  assert.match(await page.locator('#status').textContent(), /on-CPU · .* waiting$/);
  // The table does not change: waiting is never CPU time.
  assert.equal(await page.locator('#hot-body tr').first().locator('td').first().textContent(), 'checksum_block');
  await page.click('#show-waiting');
});

/* The editor's side-by-side width is 520-780 px: every number in the table must fit. */
for (const width of [520, 650, 780, 1180]) {
  test(`the hot table is readable at ${width} px`, async () => {
    await page.setViewportSize({ width, height: 600 });
    await page.waitForTimeout(50);
    const cells = await page.locator('#hot-body tr td.number, #hot thead th').evaluateAll((list) =>
      list.map((cell) => ({ text: cell.textContent, fits: cell.scrollWidth <= cell.clientWidth })),
    );
    assert.ok(cells.length > 8);
    for (const cell of cells) assert.ok(cell.fits, `"${cell.text}" is cut off at ${width} px`);
    const names = await page.locator('#hot-body tr td:first-child').evaluateAll((list) => list.slice(0, 3).map((cell) => cell.clientWidth));
    for (const name of names) assert.ok(name >= 120, `the function column is ${name} px wide at ${width} px`);
    if (width === 650) await page.screenshot({ path: join(results, 'flamegraph-650.png') });
    await page.setViewportSize({ width: 1200, height: 600 });
  });
}
