#!/usr/bin/env bash
# Set up on a fresh Debian 12 machine, build everything, and profile the bundled example
# end to end, printing the report. Installs what is missing first. The outputs land in
# profile-out/ (open profile-out/hotspot.speedscope.json at https://www.speedscope.app).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
build/tools/osprey examples/hotspot.c --profile -o profile-out/hotspot
