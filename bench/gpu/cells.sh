#!/usr/bin/env bash
# A device call's plan of matrix cells, one invocation of the matrix stage each, in order:
#   bash bench/gpu/cells.sh PLAN
# PLAN: one cell a line (blank lines and # comments skipped), whitespace-separated:
#   NAME HP_KINDS LP_KINDS SETUPS LEARN_JOBS ROUNDS BUDGET_S TIMEOUT_S SEED [MORE MATRIX FLAGS...]
# e.g. `gemm-frcnn1440 gemm frcnn1440 hp_alone,lp_alone,corun,guarded_depth 8000 3 205 225 1`.
# Each cell runs `timeout -s TERM TIMEOUT_S bash bench/gpu/run_all.sh matrix` with the matrix's
# `--budget-s BUDGET_S` (a little under the timeout: the matrix refuses a plan it estimates longer)
# and `--no-cost --pin --loads poisson-25`, then MORE (a later --loads wins), its results and log under
# $OUT/NAME (run_all's results.tgz there, the log as $OUT/NAME.log; the heat map and matrix.json
# left out: the record merges them again from raw.json). The whole plan is checked first: a bad
# line, a budget not under its timeout, or timeouts summing past CALL_LIMIT_S (default 570: the
# device allows 600 s a call, and a fresh machine's start comes out of it) refuse it, nothing run.
# RUN_ALL names another runner (a test's).
set -u
plan=${1:-}
if [ -z "$plan" ] || [ ! -r "$plan" ]; then
    echo "cells.sh: usage: bash bench/gpu/cells.sh PLAN (a readable file of cells, one a line)${plan:+: cannot read $plan}" >&2
    exit 2
fi
OUT=${OUT:-/tmp/out}
RUN_ALL=${RUN_ALL:-bench/gpu/run_all.sh}
limit=${CALL_LIMIT_S:-570}
whole='^[0-9]+$'
total=0 n=0 line_no=0
cells=()
while IFS= read -r line || [ -n "$line" ]; do
    line_no=$((line_no + 1))
    line=${line%%#*}
    read -r -a f <<<"$line"
    [ ${#f[@]} -eq 0 ] && continue
    where="cells.sh: $plan:$line_no"
    if [ ${#f[@]} -lt 9 ]; then
        echo "$where: ${#f[@]} fields, a cell needs 9: NAME HP_KINDS LP_KINDS SETUPS LEARN_JOBS ROUNDS BUDGET_S TIMEOUT_S SEED" >&2
        exit 2
    fi
    case ${f[0]} in *[!A-Za-z0-9._-]*|.*) echo "$where: name '${f[0]}': letters, digits, '.', '_' and '-' only, not first '.'" >&2; exit 2 ;; esac
    for i in 4 5 6 7 8; do
        if ! [[ ${f[$i]} =~ $whole ]] || { [ "$i" -ne 8 ] && [ "$((10#${f[$i]}))" -eq 0 ]; }; then
            echo "$where: field $((i + 1)) '${f[$i]}' must be a whole number, above 0 but for the seed" >&2
            exit 2
        fi
    done
    if [ "$((10#${f[6]}))" -ge "$((10#${f[7]}))" ]; then
        echo "$where: budget ${f[6]} s must be under the timeout ${f[7]} s (the matrix unwinds and packs in between)" >&2
        exit 2
    fi
    for c in "${cells[@]}"; do
        [ "${c%% *}" = "${f[0]}" ] && { echo "$where: the name '${f[0]}' is taken by an earlier cell" >&2; exit 2; }
    done
    total=$((total + 10#${f[7]})) n=$((n + 1))
    cells+=("${f[*]}")
done <"$plan"
if [ "$n" -eq 0 ]; then
    echo "cells.sh: $plan holds no cell" >&2
    exit 2
fi
if [ "$total" -gt "$limit" ]; then
    echo "cells.sh: $plan: its $n cells' timeouts sum to $total s, past the call's $limit s (CALL_LIMIT_S): split it" >&2
    exit 2
fi
echo "cells.sh: $n cell(s), at most $total s"
start=$SECONDS
for c in "${cells[@]}"; do
    read -r -a f <<<"$c"
    name=${f[0]}
    args="--hp-kinds ${f[1]} --lp-kinds ${f[2]} --setups ${f[3]} --learn-jobs ${f[4]} --rounds ${f[5]}"
    args="$args --budget-s ${f[6]} --seed ${f[8]} --no-cost --pin --loads poisson-25"
    more="${f[*]:9}"
    mkdir -p "$OUT/$name"
    GY_RESULTS=$OUT/$name/gy-results OUT=$OUT/$name MX_ARGS="$args${more:+ $more}" \
        timeout -s TERM "${f[7]}" bash "$RUN_ALL" matrix 2>&1 | tee "$OUT/$name.log" | grep -v '^\[' | tail -4
    # a warning comes early (before the cell's rounds), out of that tail: said again after it
    grep '^matrix: warning' "$OUT/$name.log" | sed "s/^/cells.sh: $name: /"
    rm -f "$OUT/$name/heatmap.png" "$OUT/$name/matrix.json"
    echo "cells.sh: $name done at $((SECONDS - start)) s"
done
