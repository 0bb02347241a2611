#!/bin/sh
# Runs bench/<name>/run (or every benchmark). Each writes
# bench/results/<name>.json and .png (see docs/benchmarks.md).
set -eu
cd "$(dirname "$0")/.."
found=0
for d in bench/*/; do
    [ -x "$d/run" ] || continue
    name=$(basename "$d")
    if [ -n "${1:-}" ] && [ "$1" != "$name" ]; then continue; fi
    found=1
    tools/build.sh
    mkdir -p bench/results
    "$d/run" "bench/results/$name"
done
if [ $found = 0 ]; then
    echo "bench: no benchmark ${1:+named '$1' }exists yet (bench/<name>/run)" >&2
    exit 1
fi
