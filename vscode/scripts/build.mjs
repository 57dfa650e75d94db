// Build: type-check and compile src/ (extension, pure modules, unit tests) to out/ with tsc,
// then bundle the webview script (src/webview/main.ts and the pure modules it uses) into one
// file, out/webview/flamegraph.js, that the webview loads under its content-security policy.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
rmSync(join(root, 'out'), { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/lib/tsc.js');
execFileSync(process.execPath, [tsc, '-p', root], { stdio: 'inherit' });
await esbuild.build({
  entryPoints: [join(root, 'src/webview/main.ts')],
  outfile: join(root, 'out/webview/flamegraph.js'),
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: 'es2020',
  logLevel: 'warning',
});
