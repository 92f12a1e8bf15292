#!/usr/bin/env bash
# gpuyield build driver.
#   ./make.sh         build everything into build/ (warnings are errors)
#   ./make.sh test    build, then run every test suite (plain, ASan+UBSan, TSan); last line "N passed, N failed"
#   ./make.sh suites  run the test suites again without rebuilding (after a ./make.sh test)
#   ./make.sh deps    install the Debian packages the build and the tests need, nothing else
#   ./make.sh clean   remove build/
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD

# Build-time dependencies (Debian names): compiler and make, jansson (run_exp's JSON), SQLite
# (nsight-parser), Python headers (the extension), pytest, matplotlib and numpy (tests, plots),
# clang with its sanitizer/fuzzer runtimes (fuzz targets).
DEBIAN_PACKAGES="build-essential pkg-config libjansson-dev libsqlite3-dev python3 python3-dev python3-pytest python3-matplotlib python3-numpy clang libclang-rt-dev"

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

# The Python the user runs builds the extension; tests need one that also has pytest.
pick_python() {
    local want=${1:-}
    for py in ${PYTHON:-} python3 /usr/bin/python3; do
        command -v "$py" >/dev/null 2>&1 || continue
        if [ -z "$want" ] || "$py" -c "import $want" >/dev/null 2>&1; then echo "$py"; return; fi
    done
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

# So that `import gpuyield` works for that interpreter without PYTHONPATH.
install_pth() {
    local py=$1 dir
    dir=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    if mkdir -p "$dir" 2>/dev/null && echo "$ROOT/build/python" > "$dir/gpuyield.pth" 2>/dev/null; then
        echo "make.sh: built; 'import gpuyield' works for $py ($dir/gpuyield.pth)"
    else
        echo "make.sh: built; to import gpuyield: export PYTHONPATH=$ROOT/build/python"
    fi
}

run_suites() {
    local py; py=$(pick_python pytest)
    if [ -z "$py" ]; then
        echo "make.sh: no python3 with pytest found: run ./make.sh deps (Debian: python3-pytest)" >&2
        exit 1
    fi
    build_python_ext "$py"
    local passed=0 failed=0 suite out p f before leaked
    # Leftovers from an earlier run are not this run's leak; they are named at the end.
    before=$(ls /dev/shm 2>/dev/null | grep "^gpuyield-$(id -u)-test" || true)
    for suite in tests/suites/*.sh; do
        echo "== ${suite#tests/suites/}"
        out=$(mktemp)
        if ! ROOT="$ROOT" BUILD="$ROOT/build" PYTHON="$py" bash "$suite" 2>&1 | tee "$out"; then :; fi
        read -r p f < <(sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed.*$/\1 \2/p' "$out" | tail -n 1)
        if [ -z "${p:-}" ]; then
            echo "make.sh: suite $suite ended without its 'N passed, N failed' line: counted as 1 failure"
            p=0; f=1
        fi
        passed=$((passed + p)); failed=$((failed + f))
        rm -f "$out"; p=; f=
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
        py=$(pick_python)
        if [ -n "$py" ]; then build_python_ext "$py" && install_pth "$py"; fi
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
        "${as_root[@]}" apt-get update -q && "${as_root[@]}" apt-get install -y -q $DEBIAN_PACKAGES
        ;;
    clean) rm -rf build ;;
    *) echo "usage: ./make.sh [build|test|suites|deps|clean]" >&2; exit 2 ;;
esac
