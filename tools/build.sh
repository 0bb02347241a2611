#!/bin/sh
# Configures and builds into $BUILD_DIR (default build), with $TERN_SANITIZE if set.
# Quiet: one status line; the compiler's whole output goes to $BUILD_DIR/build.log
# and is shown only when the build fails. V=1 (or TERN_VERBOSE=1) shows it live.
set -eu
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
set -- -S . -B "$BUILD_DIR"
[ -n "${TERN_SANITIZE:-}" ] && set -- "$@" "-DTERN_SANITIZE=$TERN_SANITIZE"
[ "${CI:-}" = true ] && set -- "$@" -DTERN_WERROR=ON
# Called from make, the build's own make would announce every directory it
# enters ("gmake[3]: Entering directory ..."): it is not a sub-make of ours.
unset MAKEFLAGS MAKELEVEL MFLAGS || true
jobs=$(nproc)
if [ "${V:-}" = 1 ] || [ "${TERN_VERBOSE:-}" = 1 ]; then
    cmake "$@" >/dev/null
    exec cmake --build "$BUILD_DIR" -j"$jobs"
fi
first=""
[ -f "$BUILD_DIR/CMakeCache.txt" ] || first=" (the first build takes a few minutes)"
mkdir -p "$BUILD_DIR"
log="$BUILD_DIR/build.log"
t0=$(date +%s)
printf 'build: compiling Tern into %s/%s (log: %s) ... ' "$BUILD_DIR" "$first" "$log"
if { cmake "$@" && cmake --build "$BUILD_DIR" -j"$jobs"; } >"$log" 2>&1; then
    echo "done in $(($(date +%s) - t0)) s"
    warnings=$(grep -c 'warning:' "$log" || true)
    [ "$warnings" -gt 0 ] && echo "build: $warnings compiler warning(s), see $log"
    exit 0
fi
echo "FAILED"
# What the compiler and cmake said, without make's progress chatter.
grep -v -e ': Entering directory' -e ': Leaving directory' -e '^\[ *[0-9]*%\] ' \
    -e '^-- ' "$log" || true
echo "build: FAILED; the whole log is $log (V=1 make build shows it live)"
exit 1
