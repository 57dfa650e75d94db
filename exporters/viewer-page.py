#!/usr/bin/env python3
# viewer-page.py ESBUILD NODE VSCODE_DIR OUTPUT DEPFILE — the offline page `osprey` fills in
# (<stem>.html), built from the VS Code extension's sources at build time so that one copy of
# the renderer lives in the tree: esbuild bundles the webview (vscode/src/webview/main.ts, as
# vscode/scripts/build.mjs does for the extension) and webviewHtml.ts, whose
# renderOfflineTemplate wraps the bundle into the page; node runs it. DEPFILE lists every
# source the bundles read, so ninja rebuilds the page when one changes.
import json
import os
import subprocess
import sys
import tempfile

esbuild, node, vscode, output, depfile = sys.argv[1:6]
src = os.path.join(vscode, 'src')
with tempfile.TemporaryDirectory(prefix='osprey-viewer-') as scratch:
    script = os.path.join(scratch, 'flamegraph.js')
    page = os.path.join(scratch, 'webviewHtml.js')
    inputs = set()
    for entry, out, options in (
            ('webview/main.ts', script, ['--format=iife', '--platform=browser', '--target=es2020',
                                         '--charset=utf8', '--legal-comments=none']),
            ('webviewHtml.ts', page, ['--format=cjs', '--platform=node', '--target=node18'])):
        meta = out + '.meta.json'
        subprocess.run([esbuild, os.path.join(src, entry), '--bundle', '--log-level=warning',
                        '--outfile=' + out, '--metafile=' + meta] + options, check=True, cwd=vscode)
        inputs.update(os.path.join(vscode, name) for name in json.load(open(meta))['inputs'])
    render = ('const fs = require("fs");'
              'const { renderOfflineTemplate } = require(process.argv[1]);'
              'fs.writeFileSync(process.argv[3], renderOfflineTemplate(fs.readFileSync(process.argv[2], "utf8")));')
    subprocess.run([node, '-e', render, page, script, output + '.tmp'], check=True)
    os.replace(output + '.tmp', output)
with open(depfile, 'w') as out:
    out.write(output.replace(' ', '\\ ') + ': ' +
              ' '.join(sorted(p.replace(' ', '\\ ') for p in inputs)) + '\n')
