#!/usr/bin/env bash
# gpuyield build driver.
#   ./make.sh         build everything into build/ (warnings are errors)
#   ./make.sh test    build, then run every test suite (plain, ASan+UBSan, TSan); last line "N passed, N failed"
#   ./make.sh suites  run the test suites again without rebuilding (after a ./make.sh test)
#   ./make.sh deps    install the Debian packages the build and the tests need, nothing else
#   ./make.sh package DIR   what `pip install .` installs (setup.py runs it): the tools, libraries and
#                     fake driver (build.mk's `installed`) and the extension for $PYTHON, into DIR
#   ./make.sh clean   remove build/
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD

# Build-time dependencies (Debian names): compiler and make, jansson (run_exp's JSON), SQLite
# (nsight-parser), Python headers (the extension), pytest, matplotlib and numpy (tests, plots),
# setuptools, wheel and venv (`pip install --no-build-isolation .` offline, and its test), PyYAML (the deploy/
# manifests' test), clang with its sanitizer/fuzzer runtimes (fuzz targets).
DEBIAN_PACKAGES="build-essential pkg-config libjansson-dev libsqlite3-dev python3 python3-dev python3-pytest python3-matplotlib python3-numpy python3-setuptools python3-wheel python3-venv python3-yaml clang libclang-rt-dev"

# A usable CUDA toolkit has an nvcc that runs and the driver and runtime API headers. Tried in
# order: $CUDA_HOME (CUDA_HOME=none skips CUDA), the toolkit of the nvcc on PATH, /usr/local/cuda.
# Prints nothing when none is usable; the build then skips the parts that need CUDA (the GPU
# benchmark programs and the cuda_abi.h check).
cuda_usable() { [ -x "$1/bin/nvcc" ] && "$1/bin/nvcc" --version >/dev/null 2>&1 && [ -f "$1/include/cuda.h" ] && [ -f "$1/include/cuda_runtime.h" ]; }
find_cuda() {
    [ "${CUDA_HOME:-}" = none ] && return 0
    local candidates=() nvcc_path
    [ -n "${CUDA_HOME:-}" ] && candidates+=("$CUDA_HOME")
    nvcc_path=$(command -v nvcc 2>/dev/null) && candidates+=("$(dirname "$(dirname "$(readlink -f "$nvcc_path")")")")
    candidates+=(/usr/local/cuda)
    for dir in "${candidates[@]}"; do
        if cuda_usable "$dir"; then echo "$dir"; return 0; fi
    done
}

# The interpreters tried, in order: $PYTHON (then the only one), else the python3 on PATH (a pyenv,
# conda or venv one) and the system's /usr/bin/python3 (where Debian's packages go).
python_candidates() {
    if [ -n "${PYTHON:-}" ]; then echo "$PYTHON"; return; fi
    local seen="" py exe
    for py in python3 /usr/bin/python3; do
        exe=$("$py" -c 'import sys; print(sys.executable)' 2>/dev/null) || continue
        case " $seen " in *" $exe "*) continue ;; esac
        seen="$seen $exe"; echo "$exe"
    done
}
has_python_headers() { "$1" -c 'import os, sysconfig; os.stat(sysconfig.get_paths()["include"] + "/Python.h")' >/dev/null 2>&1; }
# The first candidate that has the C headers and imports every module named.
pick_python() {
    local py modules; modules=$(IFS=,; echo "$*")
    for py in $(python_candidates); do
        has_python_headers "$py" || continue
        if [ -z "$modules" ] || "$py" -c "import $modules" >/dev/null 2>&1; then echo "$py"; return; fi
    done
}

# The Debian packages missing for `package` (gcc and make, jansson's and SQLite's headers, the
# Python headers of $1), as " name name ..."; nothing when all are there.
package_missing() {
    local missing="" header
    if ! command -v gcc >/dev/null 2>&1 || ! command -v make >/dev/null 2>&1; then
        missing=" build-essential"
    else
        for header in jansson.h:libjansson-dev sqlite3.h:libsqlite3-dev; do
            echo "#include <${header%%:*}>" | gcc -E -x c - >/dev/null 2>&1 || missing="$missing ${header#*:}"
        done
    fi
    has_python_headers "$1" || missing="$missing python3-dev"
    echo "$missing"
}

build() {
    local san=${1:-} out=build
    [ -n "$san" ] && out=build/$san
    local cuda; cuda=$(find_cuda)
    if [ -z "$cuda" ] && [ -z "$san" ]; then
        echo "make.sh: no usable CUDA toolkit (bin/nvcc with include/cuda.h in \$CUDA_HOME, beside the nvcc on PATH or in /usr/local/cuda): skipping the GPU benchmark programs and the cuda_abi.h check"
    fi
    make -s -f build.mk -j"$(nproc)" O="$out" SAN="$san" CUDA_HOME="$cuda" ROOT="$ROOT" all
}

build_python_ext() {
    local py=$1
    PYTHON_BIN="$py" bash pyext/build_ext.sh "$ROOT/build"
}

# The package goes into build/python for every candidate interpreter with C headers (run_exp's
# workers may run under another one than the plots). Nothing is written outside build/: to import
# it, `pip install .` or PYTHONPATH=build/python. build/bin/gpuyield-python runs the interpreter
# chosen for the plots (the first with matplotlib and numpy) with build/python on its path.
build_python_package() {
    local py built="" plot_py
    for py in $(python_candidates); do
        has_python_headers "$py" || continue
        build_python_ext "$py" && built="$built $py"
    done
    if [ -z "$built" ]; then
        echo "make.sh: no python3 with its C headers (Python.h): the gpuyield Python package is not built; run ./make.sh deps (Debian: python3-dev)" >&2
        return 1
    fi
    plot_py=$(pick_python matplotlib numpy)
    [ -n "$plot_py" ] || plot_py=${built# }; plot_py=${plot_py%% *}
    cat > build/bin/gpuyield-python <<EOS
#!/bin/sh
# Written by make.sh: the Python it built the gpuyield package for, with build/python on its path.
PYTHONPATH="$ROOT/build/python\${PYTHONPATH:+:\$PYTHONPATH}" exec "$plot_py" "\$@"
EOS
    chmod +x build/bin/gpuyield-python
    echo "make.sh: Python package built into build/python for$built"
    echo "make.sh: build/bin/gpuyield-python runs $plot_py with it (plots: build/bin/gpuyield-python -m gpuyield.plot ...);"
    echo "         elsewhere: PYTHONPATH=$ROOT/build/python, or install it: python3 -m pip install ."
    "$plot_py" -c 'import matplotlib, numpy' >/dev/null 2>&1 ||
        echo "make.sh: note: $plot_py has no matplotlib/numpy, which plots need: ./make.sh deps (Debian: python3-matplotlib python3-numpy)"
}

run_suites() {
    local py; py=$(pick_python pytest)
    if [ -z "$py" ]; then
        echo "make.sh: no python3 with pytest found: run ./make.sh deps (Debian: python3-pytest)" >&2
        exit 1
    fi
    build_python_ext "$py"
    local passed=0 failed=0 suite out p f before leaked start=$SECONDS suite_start
    # Leftovers from an earlier run are not this run's leak; they are named at the end.
    before=$(ls /dev/shm 2>/dev/null | grep "^gpuyield-$(id -u)-test" || true)
    for suite in tests/suites/*.sh; do
        echo "== ${suite#tests/suites/}"
        out=$(mktemp)
        suite_start=$SECONDS
        if ! ROOT="$ROOT" BUILD="$ROOT/build" PYTHON="$py" bash "$suite" 2>&1 | tee "$out"; then :; fi
        read -r p f < <(sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed.*$/\1 \2/p' "$out" | tail -n 1)
        if [ -z "${p:-}" ]; then
            echo "make.sh: suite $suite ended without its 'N passed, N failed' line: counted as 1 failure"
            p=0; f=1
        fi
        passed=$((passed + p)); failed=$((failed + f))
        rm -f "$out"; p=; f=
        # CI must end within 15 minutes: each suite's share, so that a slow one shows
        echo "-- ${suite#tests/suites/}: $((SECONDS - suite_start)) s (all so far $((SECONDS - start)) s)"
    done
    # Only a segment no live process made is a leak: another worktree's suites may be running.
    if ! leaked=$("$py" tests/lib/leaked_segments.py --except $before); then
        echo "make.sh: tests left segments in /dev/shm (their creators are dead):"; echo "$leaked"
        failed=$((failed + 1))
    fi
    if [ -n "$before" ]; then
        echo "make.sh: note: test segments left from before this run (expcontroller clean removes dead ones):"
        echo "$before"
    fi
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}

case "${1:-build}" in
    build|"")
        build
        build_python_package
        ;;
    test)
        build; build asan; build tsan
        run_suites
        ;;
    suites) run_suites ;;
    deps)
        as_root=()
        if [ "$(id -u)" -ne 0 ]; then
            command -v sudo >/dev/null 2>&1 || { echo "make.sh deps: apt-get needs root: run it as root or install sudo" >&2; exit 1; }
            as_root=(sudo DEBIAN_FRONTEND=noninteractive)
        fi
        echo "make.sh: installing $DEBIAN_PACKAGES"
        # Another apt (unattended-upgrades on a fresh machine) may hold the lock: wait for it.
        apt_cmd=(apt-get -o DPkg::Lock::Timeout=300)
        "${as_root[@]}" "${apt_cmd[@]}" update -q && "${as_root[@]}" "${apt_cmd[@]}" install -y -q $DEBIAN_PACKAGES
        ;;
    package)
        out=${2:-}
        case "$out" in /*) ;; *) echo "usage: ./make.sh package /ABSOLUTE/DIR" >&2; exit 2 ;; esac
        py=${PYTHON:-python3}
        missing=$(package_missing "$py")
        if [ -n "$missing" ]; then
            echo "make.sh: building gpuyield needs$missing: install them (Debian: apt-get install$missing; ./make.sh deps installs all the build needs)" >&2
            exit 1
        fi
        if ! make -s -f build.mk -j"$(nproc)" O="$out" CUDA_HOME="$(find_cuda)" ROOT="$ROOT" installed; then
            echo "make.sh: the build of the tools and libraries failed (the compiler's errors are above)" >&2
            exit 1
        fi
        PYTHON_BIN="$py" bash pyext/build_ext.sh "$out"
        ;;
    clean) rm -rf build ;;
    *) echo "usage: ./make.sh [build|test|suites|deps|package DIR|clean]" >&2; exit 2 ;;
esac
