"""bench.gpu.stats (the benchmarks' one statistics module: the matrix's and the partition proof's)
on synthetic inputs; the matrix's two-stage bootstrap is tested in test_matrix.py."""
import pytest

from bench.gpu import stats


def test_nearest_rank_on_known_inputs():
    assert stats.nearest_rank([40, 10, 30, 20], 50) == 20
    assert stats.nearest_rank(list(range(1, 101)), 99) == 99
    assert stats.nearest_rank(list(range(1, 91)), 99) == 90  # under 100 values: the maximum
    assert stats.nearest_rank([5.0], 0) == 5.0 and stats.nearest_rank([], 50) is None
    with pytest.raises(ValueError):
        stats.nearest_rank([1], 101)


def test_block_bootstrap_keeps_blocks_together():
    # Two blocks, each of one repeated value: a resample holds whole blocks, so the pooled
    # values come only in multiples of a block (never a mixture inside one block).
    blocks = [[1.0] * 5, [2.0] * 5]
    seen = set()

    def stat(strata):
        pooled = stats.pooled(strata[0], list)
        assert len(pooled) == 10 and pooled.count(1.0) % 5 == 0
        seen.add(pooled.count(1.0))
        return sum(pooled)

    stats.block_bootstrap([blocks], stat, resamples=200)
    assert seen == {0, 5, 10}


def test_rate_pools_counts_over_seconds():
    rate = stats.rate_of(lambda b: b)
    assert rate([(10, 1.0), (30, 3.0)]) == 10.0 and rate([(1, 0.0)]) is None
