#!/bin/bash
# make test: build, C unit tests, a short fuzz smoke run, then each pytest
# suite; prints every stage's wall time and fails if any stage failed.
set -u
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
[ -n "${TERN_SANITIZE:-}" ] && [ "$BUILD_DIR" = build ] && BUILD_DIR=build-san
export BUILD_DIR
PY=$(tools/find-python.sh) || exit 1
echo "test: python $PY ($("$PY" --version 2>&1)), build dir $BUILD_DIR${TERN_SANITIZE:+, sanitizers $TERN_SANITIZE}"

declare -a names times results
failed=0
stage() { # name, command...
    local name=$1 t0 t1 rc
    shift
    echo
    echo "=== $name"
    t0=$(date +%s%N)
    "$@"
    rc=$?
    t1=$(date +%s%N)
    names+=("$name")
    local ds=$(( (t1 - t0) / 100000000 ))
    times+=("$((ds / 10)).$((ds % 10))")
    if [ $rc = 0 ]; then results+=(ok); else results+=("FAILED ($rc)"); failed=1; fi
    return $rc
}

pytest_suite() { # dir
    local env=(TERN_LIB_DIR="$PWD/$BUILD_DIR/lib" TERN_BUILD_DIR="$PWD/$BUILD_DIR"
               PYTHONPATH="$PWD/bindings/python")
    if [ -n "${TERN_SANITIZE:-}" ]; then
        local pre=""
        case "$TERN_SANITIZE" in *address*) pre="$(gcc -print-file-name=libasan.so)";; esac
        case "$TERN_SANITIZE" in *undefined*) pre="$pre $(gcc -print-file-name=libubsan.so)";; esac
        # Python's own allocations are not ours to judge; leaks are checked in C tests.
        env+=(LD_PRELOAD="$pre" ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0)
    fi
    env "${env[@]}" "$PY" -m pytest -q -p no:cacheprovider "$1"
    local rc=$?
    [ $rc = 5 ] && { echo "(no tests in $1)"; return 0; }
    return $rc
}

stage build tools/build.sh || { echo "test: build failed"; exit 1; }
stage "unit (C)" "$PY" tools/unit.py "$BUILD_DIR/tests"
if command -v clang >/dev/null && [ -z "${TERN_SANITIZE:-}" ]; then
    stage "fuzz smoke" tools/fuzz.sh "${FUZZ_SMOKE_TIME:-5}"
fi
nsuites=0
ntests=$(PYTHONPATH=bindings/python "$PY" -m pytest -q --collect-only -p no:cacheprovider pytests 2>/dev/null | grep -c '::')
for d in pytests/*/; do
    [ -d "$d" ] || continue
    nsuites=$((nsuites + 1))
    stage "pytest ${d#pytests/}" pytest_suite "$d"
done
if [ "$ntests" = 0 ]; then
    echo "test: no pytest tests exist at all"
    failed=1
fi

echo
echo "=== summary (wall time per stage)"
for i in "${!names[@]}"; do
    printf '  %-28s %8s s  %s\n' "${names[$i]}" "${times[$i]}" "${results[$i]}"
done
[ $failed = 0 ] && echo "test: all passed" || echo "test: FAILED"
exit $failed
