#!/bin/sh
# Prints the path of a Python 3 that can import pytest. Debian's python3-pytest
# belongs to /usr/bin/python3; the python3 first on PATH may be another one.
for py in ${PYTHON:-} /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
    [ -n "$py" ] && [ -x "$py" ] || continue
    if "$py" -c 'import pytest' 2>/dev/null; then
        echo "$py"
        exit 0
    fi
done
echo "find-python: no python3 with pytest found (tried \$PYTHON, /usr/bin/python3, python3 on PATH);" >&2
echo "find-python: install Debian's python3-pytest (make deps does it as root)" >&2
exit 1
