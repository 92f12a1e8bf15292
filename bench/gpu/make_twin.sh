#!/usr/bin/env bash
# A second build for the matrix's @twin setups (guarded@twin, guarded_depth@twin): COMMIT's rule
# beside the working tree's, in the same rounds (bench/gpu/README.md, "two builds side by side").
#   bash bench/gpu/make_twin.sh COMMIT [OUT]      (OUT: .gpu-build-twin, ignored by git; carry it)
# Builds COMMIT's tree (git archive: the working tree is not touched) with CUDA into OUT, keeps the
# sources its Python extension is made of in OUT/src (run_all.sh builds that extension on the GPU
# machine, for its Python, when TWIN_BUILD names OUT) and the commit in OUT/COMMIT.
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: bash bench/gpu/make_twin.sh COMMIT [OUT]" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
COMMIT=$(git -C "$ROOT" rev-parse --verify --short "$1^{commit}" 2>/dev/null) || { echo "make_twin: no commit '$1' in $ROOT" >&2; exit 2; }
OUT=${2:-$ROOT/.gpu-build-twin}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
TREE=$(mktemp -d)
trap 'rm -rf "$TREE"' EXIT
git -C "$ROOT" archive "$COMMIT" | tar -x -C "$TREE"
# make runs in COMMIT's tree: its sources, its build.mk (ROOT alone would not switch the sources)
make -s -C "$TREE" -f build.mk -j"$(nproc)" O="$OUT" CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" ROOT="$TREE" all
rm -rf "$OUT/obj" "$OUT/tests" "$OUT/fuzz" "$OUT/src"
mkdir -p "$OUT/src"
cp -r "$TREE/pyext" "$TREE/controller" "$TREE/service" "$OUT/src/"
echo "$COMMIT" > "$OUT/COMMIT"
case $OUT in "$ROOT"/*) NAME="\$PWD/${OUT#"$ROOT"/}" ;; *) NAME=$OUT ;; esac
echo "make_twin: $COMMIT built into $OUT ($(du -sh "$OUT" | cut -f1)); carry it, run with TWIN_BUILD=$NAME"
