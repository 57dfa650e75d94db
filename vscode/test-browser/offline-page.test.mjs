// The offline page `osprey` writes as <stem>.html: the same renderer as the webview, from the
// template the build generates from the webview code (out/viewer-template.html; the C build
// makes the same page from the same sources, exporters/viewer-page.py), opened from disk in headless Chromium with nothing fetched. The real CLI
// (build-test/ or build/, or $OSPREY_CLI) writes one for examples/hotspot.c when it is built;
// the fixtures fill the template the way exporters/html.c does otherwise, including a frame
// name that tries to close the page's <script>.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const CHROMIUM = '/usr/bin/chromium';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const repo = join(root, '..');
const results = join(root, 'test-results');
const templateFile = join(root, 'out/viewer-template.html');
const cli = [process.env.OSPREY_CLI, join(repo, 'build-test/tools/osprey'), join(repo, 'build/tools/osprey')].filter(Boolean).find((c) => existsSync(c));

let browser;
let scratch;

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing (apt-get install chromium)`);
  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  scratch = mkdtempSync(join(tmpdir(), 'osprey-page-'));
  mkdirSync(results, { recursive: true });
});

after(async () => {
  await browser?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/* As exporters/html.c fills the template. */
function fill(template, title, speedscope, summary) {
  const safe = (text) => text.replace(/</g, '\\u003c');
  const escaped = title.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  const data = `{"title":${safe(JSON.stringify(title))},"speedscope":${safe(speedscope)},"summary":${summary === null ? 'null' : safe(summary)}}`;
  return template.replace('@OSPREY_TITLE@', escaped).replace('@OSPREY_DATA@', data);
}

async function open(file, width = 1100) {
  const page = await browser.newPage({ viewport: { width, height: 650 }, deviceScaleFactor: 1 });
  const problems = [];
  const requests = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('request', (request) => requests.push(request.url()));
  await page.goto(pathToFileURL(file).href);
  await page.waitForFunction(() => document.querySelectorAll('#hot-body tr').length > 0, null, { timeout: 10_000 });
  return { page, problems, requests };
}

test('a filled page draws the profile offline, with the report\'s numbers', async () => {
  const speedscope = readFileSync(join(root, 'fixtures/real-mixed.speedscope.json'), 'utf8');
  const summaryText = readFileSync(join(root, 'fixtures/real-mixed.profile.json'), 'utf8');
  const file = join(scratch, 'mixed.html');
  writeFileSync(file, fill(readFileSync(templateFile, 'utf8'), 'mixed', speedscope, summaryText));
  const { page, problems, requests } = await open(file);
  const summary = JSON.parse(summaryText);
  const first = await page.locator('#hot-body tr').first().locator('td').allTextContents();
  assert.deepEqual(first.slice(0, 3), [summary.functions[0].name, `${summary.functions[0].self_pct.toFixed(1)}%`, `${summary.functions[0].total_pct.toFixed(1)}%`]);
  assert.equal(await page.title(), 'Osprey: mixed');
  assert.equal((await page.locator('#fiber option').count()), 4);
  // Hover and select work; there is no editor to open a source in, so no "Profile again".
  await page.locator('#canvas').hover({ position: { x: 30, y: 9 } });
  assert.equal(await page.locator('#tooltip').isVisible(), true);
  assert.equal(await page.locator('#profile-again').isHidden(), true);
  assert.deepEqual(requests.filter((url) => !url.startsWith('file:')), [], 'nothing fetched');
  assert.deepEqual(problems, []);
  await page.close();
});

test('a frame name cannot break out of the page', async () => {
  const speedscope = JSON.stringify({
    $schema: 'https://www.speedscope.app/file-format-schema.json',
    shared: { frames: [{ name: '</script><script>window.pwned=1</script>' }, { name: 'leaf <!--' }] },
    profiles: [{ type: 'sampled', name: 'fiber 1 (main)', unit: 'milliseconds', startValue: 0, endValue: 2, samples: [[0, 1], [0]], weights: [1, 1] }],
  });
  const file = join(scratch, 'odd.html');
  writeFileSync(file, fill(readFileSync(templateFile, 'utf8'), 'a <b>&"c', speedscope, null));
  const { page, problems } = await open(file);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  assert.equal(await page.title(), 'Osprey: a <b>&"c');
  assert.deepEqual((await page.locator('#hot-body tr td:first-child').allTextContents()).sort(), ['</script><script>window.pwned=1</script>', 'leaf <!--'].sort());
  assert.deepEqual(problems, []);
  await page.close();
});

test('osprey writes <stem>.html that opens in a browser (README screenshot)', { skip: cli ? false : 'no osprey CLI built' }, async () => {
  const stem = join(scratch, 'out', 'hotspot');
  execFileSync(cli, [join(repo, 'examples/hotspot.c'), '--profile', '-o', stem], { stdio: 'pipe' });
  const { page, problems, requests } = await open(`${stem}.html`, 1100);
  const summary = JSON.parse(readFileSync(`${stem}.profile.json`, 'utf8'));
  const row = await page.locator('#hot-body tr[data-name="checksum_block"] td').allTextContents();
  assert.equal(row[1], `${summary.functions.find((fn) => fn.name === 'checksum_block').self_pct.toFixed(1)}%`);
  assert.deepEqual(requests.filter((url) => !url.startsWith('file:')), []);
  assert.deepEqual(problems, []);
  await page.screenshot({ path: join(results, 'offline-page.png') });
  await page.close();
});
