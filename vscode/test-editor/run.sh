#!/usr/bin/env bash
# Runs the real-editor test (editor.test.mjs). A browser driving a whole editor on a shared,
# loaded machine can time out on a step that works: a failed run prints what it saw (the
# toasts on screen, code-server's output, the extension host's logs) and the walk-through is
# run once more from a new editor. Two failures in a row fail the suite.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
node --test test-editor/*.test.mjs && exit 0
echo "# the real-editor test failed once (output above); running it again in a new editor" >&2
node --test test-editor/*.test.mjs && {
  echo "# the real-editor test passed on its second run: the first failure is above" >&2
  exit 0
}
exit 1
