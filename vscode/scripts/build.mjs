// Build: type-check and compile src/ (extension, pure modules, unit tests) to out/ with tsc,
// then bundle the renderer (src/webview/main.ts and the pure modules it uses) into one file,
// out/webview/flamegraph.js, that the webview loads under its content-security policy, and
// wrap the same bundle into the offline page template, out/viewer-template.html (one renderer,
// two hosts). The C build makes the same page from these sources for `osprey`'s <stem>.html
// (exporters/viewer-page.py), so no copy of it is kept in the tree.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
rmSync(join(root, 'out'), { recursive: true, force: true });
execFileSync(process.execPath, [require.resolve('typescript/lib/tsc.js'), '-p', root], { stdio: 'inherit' });
await esbuild.build({
  entryPoints: [join(root, 'src/webview/main.ts')],
  outfile: join(root, 'out/webview/flamegraph.js'),
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: 'es2020',
  charset: 'utf8',
  legalComments: 'none',
  logLevel: 'warning',
});
const { renderOfflineTemplate } = require(join(root, 'out/webviewHtml.js'));
const template = renderOfflineTemplate(readFileSync(join(root, 'out/webview/flamegraph.js'), 'utf8'));
writeFileSync(join(root, 'out/viewer-template.html'), template);
