#!/usr/bin/env bash
# Set up on a fresh Debian 12 machine, build everything, and profile the bundled example
# end to end, printing the report. Installs what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
mkdir -p profile-out
if [ -x build/tools/osprey ]; then
  build/tools/osprey examples/hotspot.c --profile -o profile-out/hotspot
else
  # Until the CLI lands: run the example under the preload shim and summarise the raw file.
  OSPREY_PROFILE=profile-out/hotspot.raw.json LD_PRELOAD="$PWD/build/shim/libospreyprof.so" \
    build/examples/hotspot
  if [ -f profile-out/hotspot.raw.json ]; then
    python3 - profile-out/hotspot.raw.json <<'PY'
import json, sys
raw = json.load(open(sys.argv[1]))
print(f"{sys.argv[1]}: {len(raw['samples'])} samples, {len(raw['stacks'])} stacks, "
      f"{len(raw['threads'])} threads, {raw['dropped']} dropped")
PY
  else
    echo "no raw profile was written (collector not built yet)" >&2
    exit 1
  fi
fi
