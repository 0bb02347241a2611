#!/bin/sh
# Installs the Debian packages Tern needs, if any are missing. As root it runs
# apt-get; otherwise it prints the exact command and fails.
set -eu
PKGS="cmake make gcc clang libclang-rt-14-dev libexpat1-dev zlib1g-dev libsodium-dev \
python3 python3-pytest python3-matplotlib python3-numpy iproute2 procps tshark"
missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
echo "deps: missing Debian packages:$missing"
if [ "$(id -u)" != 0 ]; then
    echo "deps: run as root:  apt-get update && apt-get install -y --no-install-recommends$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
