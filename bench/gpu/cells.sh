#!/usr/bin/env bash
# A device call's plan of matrix cells, one invocation of the matrix stage each, in order:
#   bash bench/gpu/cells.sh PLAN
# PLAN: one cell a line (blank lines and # comments skipped), whitespace-separated:
#   NAME HP_KINDS LP_KINDS SETUPS LEARN_JOBS ROUNDS BUDGET_S TIMEOUT_S SEED [MORE MATRIX FLAGS...]
# e.g. `gemm-frcnn1440 gemm frcnn1440 hp_alone,lp_alone,corun,guarded_depth 8000 3 205 225 1`.
# Each cell runs `timeout -s TERM -k 10 TIMEOUT_S bash bench/gpu/run_all.sh matrix` with the matrix's
# `--budget-s BUDGET_S` (a little under the timeout: the matrix refuses a plan it estimates longer)
# and `--no-cost --pin --loads poisson-25`, then MORE (a later --loads wins). As each cell ends, its
# run_all results.tgz (as NAME/results.tgz) and its log (NAME.log) are appended to $OUT/cells.tar
# and removed from $OUT: a device call brings back at most 8 files, no deeper than $OUT/a/b, so one
# archive carries every cell of the call, and a call cut short still holds the cells that ended
# (the heat map, matrix.json and the unpacked results are left out: the record merges them again
# from raw.json; `python3 -m bench.gpu.record_cells` reads cells.tar). The whole plan is checked first: a bad
# line, a budget not under its timeout, a timeout past 570 s, or timeouts summing past CALL_LIMIT_S
# (default 570: the device allows 600 s a call, and a fresh machine's start comes out of it) refuse
# it, nothing run.
# RUN_ALL names another runner (a test's).
# FILL=1: a plan longer than one call (a whole sweep): cells start in order while the time used plus
# the next cell's timeout stays within CALL_LIMIT_S; the first that would pass it and the rest are
# not run, named in the output and in $OUT/not_run.txt (a cell runs well under its timeout, so a
# call fills with more cells than a plan cut in advance by timeouts). FROM=NAME starts at the cell
# NAME (the next call's: `FILL=1 FROM=NAME bash bench/gpu/cells.sh PLAN`). A lease's last minutes:
# CALL_LIMIT_S lowered, FILL=1, runs the cells from FROM that fit (refused if the first does not).
set -u
plan=${1:-}
if [ -z "$plan" ] || [ ! -r "$plan" ]; then
    echo "cells.sh: usage: bash bench/gpu/cells.sh PLAN (a readable file of cells, one a line)${plan:+: cannot read $plan}" >&2
    exit 2
fi
OUT=${OUT:-/tmp/out}
RUN_ALL=${RUN_ALL:-bench/gpu/run_all.sh}
limit=${CALL_LIMIT_S:-570}
fill=${FILL:-0} from=${FROM:-}
if ! [[ $limit =~ ^[0-9]+$ ]] || [ "$((10#$limit))" -eq 0 ]; then
    echo "cells.sh: CALL_LIMIT_S=$limit: a whole number of seconds above 0 (570 by default)" >&2
    exit 2
fi
limit=$((10#$limit))
cap=$((limit > 570 ? limit : 570))
case $fill in 0|1) ;; *) echo "cells.sh: FILL=$fill: 1 (fill the call from a longer plan) or 0" >&2; exit 2 ;; esac
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
    case ${f[0]} in *[!A-Za-z0-9._-]*|.*|-*) echo "$where: name '${f[0]}': letters, digits, '.', '_' and '-' only, not first '.' or '-'" >&2; exit 2 ;; esac
    # a cell's log, or a call's own files (call.log: the call's command tees its output there)
    case ${f[0]} in *.log|not_run.txt|gpu_start.txt|gpu_end.txt|cells.tar|call)
        echo "$where: name '${f[0]}' is taken by the call's files (NAME.log, call.log, not_run.txt, gpu_start.txt, gpu_end.txt, cells.tar): rename the cell" >&2
        exit 2 ;;
    esac
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
    # past the longest call (570 s, or a CALL_LIMIT_S raised above it): no call can run the cell; a
    # CALL_LIMIT_S lowered for a call's last minutes leaves longer cells to later calls (FILL=1)
    if [ "$((10#${f[7]}))" -gt "$cap" ]; then
        echo "$where: timeout ${f[7]} s is past the call's $cap s (CALL_LIMIT_S): no call can run it" >&2
        exit 2
    fi
    cells+=("${f[*]}")
done <"$plan"
if [ -n "$from" ]; then  # the cells before FROM ran in an earlier call
    for i in "${!cells[@]}"; do
        [ "${cells[$i]%% *}" = "$from" ] && { cells=("${cells[@]:$i}"); from=; break; }
    done
    if [ -n "$from" ]; then
        echo "cells.sh: FROM=$from: $plan has no cell of that name" >&2
        exit 2
    fi
fi
for c in "${cells[@]}"; do
    read -r -a f <<<"$c"
    total=$((total + 10#${f[7]})) n=$((n + 1))
done
if [ "$n" -eq 0 ]; then
    echo "cells.sh: $plan holds no cell" >&2
    exit 2
fi
if [ "$total" -gt "$limit" ] && [ "$fill" = 0 ]; then
    echo "cells.sh: $plan: its $n cells' timeouts sum to $total s, past the call's $limit s (CALL_LIMIT_S): split it, or FILL=1" >&2
    exit 2
fi
read -r -a f <<<"${cells[0]}"
if [ "$((10#${f[7]}))" -gt "$limit" ]; then  # (FILL=1: without it the sum above refused the plan)
    echo "cells.sh: the first cell, ${f[0]}, has a timeout of ${f[7]} s, past the call's $limit s (CALL_LIMIT_S): nothing would run; raise CALL_LIMIT_S, or run a plan of the cells that fit" >&2
    exit 2
fi
if [ -e "$OUT/cells.tar" ]; then  # an earlier call's cells: never appended to, never overwritten
    echo "cells.sh: $OUT/cells.tar exists (an earlier call's cells): move it away, or set OUT to another folder" >&2
    exit 2
fi
if [ "$total" -gt "$limit" ]; then
    echo "cells.sh: $n cell(s), their timeouts $total s: as many as fit the call's $limit s (FILL=1)"
else
    echo "cells.sh: $n cell(s), at most $total s"
fi
mkdir -p "$OUT"
rm -f "$OUT/not_run.txt"  # an earlier call's into the same folder
start=$SECONDS
failed=()
for i in "${!cells[@]}"; do
    read -r -a f <<<"${cells[$i]}"
    name=${f[0]}
    if [ $((SECONDS - start + 10#${f[7]})) -gt "$limit" ]; then
        left=("${cells[@]:$i}")
        printf '%s\n' "${left[@]%% *}" >"$OUT/not_run.txt"
        echo "cells.sh: not run, $((SECONDS - start)) s used and $name's timeout ${f[7]} s would pass the call's $limit s: ${left[*]%% *}"
        echo "cells.sh: next: FILL=1 FROM=$name bash bench/gpu/cells.sh $plan"
        break
    fi
    args="--hp-kinds ${f[1]} --lp-kinds ${f[2]} --setups ${f[3]} --learn-jobs ${f[4]} --rounds ${f[5]}"
    args="$args --budget-s ${f[6]} --seed ${f[8]} --no-cost --pin --loads poisson-25"
    more="${f[*]:9}"
    mkdir -p "$OUT/$name"
    GY_RESULTS=$OUT/$name/gy-results OUT=$OUT/$name MX_ARGS="$args${more:+ $more}" \
        timeout -s TERM -k 10 "${f[7]}" bash "$RUN_ALL" matrix 2>&1 | tee "$OUT/$name.log" | grep -v '^\[' | tail -4
    rc=${PIPESTATUS[0]}
    # run_all.sh packs and exits 0 whatever its stage did: the matrix's own exit is in the log
    if [ "$rc" = 0 ] && ! grep -q '^matrix exit 0$' "$OUT/$name.log"; then
        rc=$(sed -n 's/^matrix exit \([0-9]*\)$/\1/p' "$OUT/$name.log" | tail -n 1)
        rc=${rc:-1}
    fi
    # a warning comes early (before the cell's rounds), out of that tail: said again after it
    grep '^matrix: warning' "$OUT/$name.log" | sed "s/^/cells.sh: $name: /"
    # cut before run_all.sh packed: what the matrix wrote so far, packed as run_all.sh would (the
    # record keeps a raw.json that can be read, and says the cell did not finish)
    if [ ! -e "$OUT/$name/results.tgz" ] && [ -d "$OUT/$name/gy-results" ]; then
        tar czf "$OUT/$name/results.tgz" -C "$OUT/$name" gy-results
    fi
    packed=("$name.log")
    [ -e "$OUT/$name/results.tgz" ] && packed+=("$name/results.tgz")
    if tar -rf "$OUT/cells.tar" -C "$OUT" -- "${packed[@]}"; then
        rm -rf "${OUT:?}/$name" "$OUT/$name.log"
    else  # left in place for a look by hand: the call's files may then be more than come back
        echo "cells.sh: $name: could not append it to $OUT/cells.tar: its files left in $OUT/$name" >&2
    fi
    case $rc in
    0) echo "cells.sh: $name done at $((SECONDS - start)) s" ;;
    124|137) echo "cells.sh: $name cut by its timeout ${f[7]} s at $((SECONDS - start)) s"; failed+=("$name") ;;
    *) echo "cells.sh: $name: its matrix exited $rc at $((SECONDS - start)) s (see $name.log, in cells.tar)"; failed+=("$name") ;;
    esac
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "cells.sh: ${#failed[@]} cell(s) did not finish: ${failed[*]}"
    exit 1
fi
