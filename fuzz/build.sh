#!/usr/bin/env bash
# Builds the libFuzzer programs of the fuzz targets with clang (ASan + UBSan + coverage):
#   fuzz/build.sh [OUT_DIR]     (default build/fuzz; then fuzz/run.sh TARGET SECONDS)
# Targets: segment_open (controller), run_exp_config (run_exp/config.c), nsight_csv
# (nsight-parser/read_csv.c and the per-model tables). Needs clang and its fuzzer runtime
# (Debian: clang libclang-rt-dev, or clang-14 libclang-rt-14-dev), libjansson-dev, libsqlite3-dev.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "${1:-$ROOT/build/fuzz}" && cd "${1:-$ROOT/build/fuzz}" && pwd)
CLANG=${CLANG:-}
if [ -z "$CLANG" ]; then
    for c in clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14; do
        command -v "$c" > /dev/null 2>&1 && { CLANG=$c; break; }
    done
fi
if [ -z "$CLANG" ]; then
    echo "fuzz/build.sh: no clang found: install clang and its fuzzer runtime (Debian: clang libclang-rt-dev)" >&2
    exit 1
fi
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CFLAGS="-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -g -O1 -pthread $SAN"
CFLAGS="$CFLAGS -DGY_VERSION=\"$(cat "$ROOT/VERSION")\"" # controller/version.c
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' |
        "$CLANG" -x c -fsanitize=fuzzer - -o "$OUT/.probe" 2> /dev/null; then
    echo "fuzz/build.sh: $CLANG cannot link -fsanitize=fuzzer: install its fuzzer runtime (Debian: libclang-rt-dev)" >&2
    exit 1
fi
rm -f "$OUT/.probe"

# compile OBJDIR SOURCE... : one object per source, instrumented for coverage.
compile() {
    local objdir=$OUT/obj/$1; shift
    mkdir -p "$objdir"
    local src
    for src in "$@"; do
        "$CLANG" $CFLAGS -fsanitize=fuzzer-no-link -Icontroller -Irun_exp -Insight-parser -Ifuzz \
            -c "$src" -o "$objdir/$(basename "${src%.c}").o"
    done
}
cd "$ROOT"
compile controller controller/*.c
compile run_exp run_exp/config.c run_exp/image.c run_exp/models.c
compile nsight-parser $(ls nsight-parser/*.c | grep -v main.c)
compile fuzz fuzz/segment_open_fuzz.c fuzz/guard_state_fuzz.c fuzz/run_exp_config_fuzz.c fuzz/nsight_csv_fuzz.c fuzz/fuzz_file.c

link() { # link TARGET OBJECTS... LIBS...
    local target=$1; shift
    "$CLANG" -fsanitize=fuzzer $SAN -pthread "$@" -o "$OUT/${target}_fuzzer"
    echo "built $OUT/${target}_fuzzer"
}
O=$OUT/obj
link segment_open "$O/fuzz/segment_open_fuzz.o" "$O"/controller/*.o
link guard_state "$O/fuzz/guard_state_fuzz.o" "$O"/controller/*.o
link run_exp_config "$O/fuzz/run_exp_config_fuzz.o" "$O/fuzz/fuzz_file.o" "$O"/run_exp/*.o "$O/controller/policies.o" \
    -ljansson -lm
link nsight_csv "$O/fuzz/nsight_csv_fuzz.o" "$O/fuzz/fuzz_file.o" "$O"/nsight-parser/*.o -lsqlite3 -ljansson -lm
