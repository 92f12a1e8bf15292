#!/usr/bin/env bash
# Suite 70: gpuyield.plot and the benchmarks' metric code. tests/python/test_plot.py with the
# package built into $BUILD/python (and the kernels plot end to end through $BUILD/bin/nsight-parser
# when it is built), tests/python/test_bench_metrics.py and test_bench_stats.py (bench/gpu's
# launch table, gating proof and statistics on synthetic inputs), tests/python/test_partition_records.py
# and test_partition_runs.py (the partition proof's analysis on synthetic records, its runs on fake
# programs), test_readme_verdict.py (the published verdict figures against their record),
# test_perf_page.py (docs/performance.md and the README's summary are bench/perf_page.py's output),
# test_docs.py (the README's shape, the set-up commands, links), test_matrix.py (the matrix
# benchmark's plan and verdict on synthetic records, a dry run with a stand-in backend),
# test_bench_runner.py (bench/gpu/run_all.sh's stages against bench/gpu/README.md's table),
# test_learning_blocks.py (the learning's blocks per arm, on synthetic records), test_make_twin.py
# (bench/gpu/make_twin.sh: a commit built for the matrix's @twin setups), test_default_decision.py
# (bench/gpu/default_decision.py: the default's two tests per pooled cell), test_stop_cost.py
# (bench/gpu/stop_cost.py: a guarded segment's stop rounds against corun's). Ends with
# "N passed, N failed" converted from pytest's summary (errors count as failures).
set -uo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
PYTHON=${PYTHON:-/usr/bin/python3}
. "$ROOT/tests/lib/suite.sh"
cd "$ROOT"

if [ ! -f "$BUILD/lib/libgycontrol.a" ] || ! PYTHON_BIN=$PYTHON bash pyext/build_ext.sh "$BUILD"; then
    fail "gpuyield-package" "cannot build the gpuyield package into $BUILD/python: build first (./make.sh)"
    finish
    exit 1
fi
PYTHONPATH="$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" MPLBACKEND=Agg NSIGHT_PARSER=$BUILD/bin/nsight-parser \
    run_pytest pytest tests/python/test_plot.py tests/python/test_bench_metrics.py tests/python/test_bench_stats.py \
        tests/python/test_partition_records.py tests/python/test_partition_runs.py \
        tests/python/test_readme_verdict.py tests/python/test_perf_page.py tests/python/test_docs.py \
        tests/python/test_matrix.py tests/python/test_bench_runner.py tests/python/test_learning_blocks.py \
        tests/python/test_make_twin.py tests/python/test_default_decision.py tests/python/test_stop_cost.py
finish
