"""The one statistics module of the benchmarks: nearest-rank percentiles, a block bootstrap that
resamples whole rounds (or cycles, or invocation x round blocks) and never single jobs, and a ratio
with its interval.

Why blocks: consecutive jobs of one process correlate (lag-1 0.3-0.9 on the H100 records), so
resampling single jobs gives intervals several times too narrow. A block is whatever was measured
together: one round's numerator and denominator jobs stay in the same block, so a resample keeps
their pairing.
"""
import math
import random

RESAMPLES = 2000
SEED = 1


def nearest_rank(values, q):
    """The q-th percentile (q in 0..100) by nearest rank: the smallest value with at least q % of
    the values at or below it. None for no values. p50 of [10, 20, 30, 40] is 20; under 100 values
    p99 is the maximum."""
    if not values:
        return None
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside 0..100")
    ordered = sorted(values)
    rank = max(1, math.ceil(len(ordered) * q / 100 - 1e-9))
    return ordered[rank - 1]


def resample_blocks(blocks, rng):
    """len(blocks) blocks drawn with replacement, each whole."""
    return [blocks[rng.randrange(len(blocks))] for _ in blocks]


def block_bootstrap(strata, statistic, resamples=RESAMPLES, seed=SEED, level=0.95):
    """A percentile interval [lo, hi] of statistic(resampled strata), or None when no resample
    gives a value. strata: a list of lists of blocks; each resample draws, within every stratum,
    as many whole blocks as it has (a paired design is one stratum of rounds; an unpaired one two
    strata). statistic gets the resampled strata and returns a number or None. Deterministic for
    a seed."""
    if any(not s for s in strata):
        return None
    rng = random.Random(seed)
    values = []
    for _ in range(resamples):
        v = statistic([resample_blocks(s, rng) for s in strata])
        if v is not None:
            values.append(v)
    return percentile_interval(values, level)


def pooled(blocks, key):
    """Every item of key(block) over the blocks, in one list."""
    return [x for b in blocks for x in key(b)]


def ratio(num, den):
    return None if num is None or den in (None, 0) else num / den


def percentile_of(key, q):
    """A statistic for ratio_two_stage: the nearest-rank q-th percentile of key(block) pooled."""
    return lambda blocks: nearest_rank(pooled(blocks, key), q)


def rate_of(key):
    """A statistic for ratio_two_stage: events per second pooled, key(block) = (count, seconds)."""
    def rate(blocks):
        n = sum(key(b)[0] for b in blocks)
        s = sum(key(b)[1] for b in blocks)
        return n / s if s > 0 else None
    return rate


def two_stage_values(invocations, statistic, resamples=RESAMPLES, seed=SEED):
    """statistic(blocks) of each two-stage resample (two_stage_bootstrap), the Nones left out."""
    invocations = [inv for inv in invocations if inv]
    if not invocations:
        return []
    rng = random.Random(seed)
    values = []
    for _ in range(resamples):
        blocks = [b for inv in resample_blocks(invocations, rng) for b in resample_blocks(inv, rng)]
        v = statistic(blocks)
        if v is not None:
            values.append(v)
    return values


def percentile_interval(values, level=0.95):
    """[lo, hi] of VALUES (a bootstrap's), or None for none."""
    if not values:
        return None
    tail = (1 - level) / 2 * 100
    return [nearest_rank(values, tail), nearest_rank(values, 100 - tail)]


def two_stage_bootstrap(invocations, statistic, resamples=RESAMPLES, seed=SEED, level=0.95):
    """A percentile interval [lo, hi] of statistic(blocks) when blocks (rounds) sit inside
    invocations (leases, days): each resample draws invocations with replacement, then, inside
    each drawn invocation, as many of its rounds with replacement. Rounds of one invocation share
    its machine and its start-up, so resampling them as if independent gives intervals too narrow.
    With one invocation this is the round bootstrap. None when no resample gives a value."""
    return percentile_interval(two_stage_values(invocations, statistic, resamples, seed), level)


def ratio_two_stage(invocations, num_stat, den_stat, resamples=RESAMPLES, seed=SEED, digits=4, over=None):
    """{"value", "ci"} of num_stat(blocks) / den_stat(blocks) over every invocation's rounds, the
    interval from two_stage_bootstrap (each block carries its numerator and denominator data). With
    OVER, also "resamples_over": the share of the resamples whose ratio is above OVER (how often a
    rerun of rounds like these would land over a target; a lower bound for a tail statistic, since a
    resample holds only the jobs measured)."""
    blocks = [b for inv in invocations for b in inv]
    value = ratio(num_stat(blocks), den_stat(blocks))
    values = two_stage_values(invocations, lambda bs: ratio(num_stat(bs), den_stat(bs)), resamples, seed)
    ci = percentile_interval(values)
    rnd = lambda v: None if v is None else round(v, digits)
    out = {"value": rnd(value), "ci": [rnd(ci[0]), rnd(ci[1])] if ci else None}
    if over is not None and values:
        out["resamples_over"] = round(sum(v > over for v in values) / len(values), 4)
    return out
