#!/usr/bin/env bash
# Builds the gpuyield Python package into BUILD/python for $PYTHON_BIN (default python3):
# the C extension gpuyield._gpuyield (pyext/*.c, linked with the controller library; it exports
# its module init alone: pyext/exports.map) plus the pure-Python modules of pyext/gpuyield/. Put
# BUILD/python on PYTHONPATH to import it (or install the package instead: `pip install .`, see
# pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-$PWD/build}
PY=${PYTHON_BIN:-python3}
read -r INCLUDE SUFFIX < <("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"], sysconfig.get_config_var("EXT_SUFFIX"))')
if [ ! -f "$INCLUDE/Python.h" ]; then
    echo "pyext: no Python.h for $PY (looked in $INCLUDE): install its headers (Debian: python3-dev)" >&2
    exit 1
fi
DEST=$BUILD/python/gpuyield
mkdir -p "$DEST"
cp pyext/gpuyield/*.py "$DEST/"
SOURCES=$(ls pyext/*.c 2>/dev/null || true)
# status() shows a snapshot as expcontroller does: one row per process, clean UTF-8 names. Those two
# files of the service room, not its library (the extension carries no metrics or MPS code).
VIEW_SOURCES="service/status_merge.c service/utf8_clean.c"
if [ -n "$SOURCES" ]; then
    gcc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -O2 -g -fPIC -pthread -shared \
        -Wl,--version-script=pyext/exports.map -I"$INCLUDE" -Icontroller -Iservice $SOURCES $VIEW_SOURCES \
        "$BUILD/lib/libgycontrol.a" \
        -o "$DEST/_gpuyield$SUFFIX"
fi
