#!/bin/sh
# Builds the libFuzzer targets with clang (ASan+UBSan) in build-fuzz and runs
# each for the given number of seconds (default 60) from its seed corpus.
set -eu
cd "$(dirname "$0")/.."
secs=${1:-60}
B=build-fuzz
CC=clang cmake -S . -B $B -DTERN_FUZZ=ON >/dev/null
cmake --build $B -j"$(nproc)" >/dev/null
status=0
# The stateful targets' per-step watchdog (tern_fuzz.h). A VM's stolen time
# counts as the thread's CPU time, so a short run on a busy shared machine
# uses a looser bound than the 20 ms default; a hang still trips it.
export TERN_FUZZ_STEP_MS=${TERN_FUZZ_STEP_MS:-250}
for f in $B/fuzz/fuzz_*; do
    name=$(basename "$f")
    seeds=$(find stack apps tools -path "*/fuzz/corpus/${name#fuzz_}" -type d 2>/dev/null | head -n 1)
    work=$B/corpus/$name
    mkdir -p "$work"
    log=$B/$name.log
    if "$f" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        "$work" ${seeds:+"$seeds"} >"$log" 2>&1; then
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        echo "  ok   $name: $execs runs in ${secs} s, no crash"
    else
        echo "  FAIL $name: see $log"
        tail -n 30 "$log"
        status=1
    fi
done
exit $status
