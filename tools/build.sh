#!/bin/sh
# Configures and builds into $BUILD_DIR (default build), with $TERN_SANITIZE if set.
set -eu
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
set -- -S . -B "$BUILD_DIR"
[ -n "${TERN_SANITIZE:-}" ] && set -- "$@" "-DTERN_SANITIZE=$TERN_SANITIZE"
[ "${CI:-}" = true ] && set -- "$@" -DTERN_WERROR=ON
cmake "$@" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
