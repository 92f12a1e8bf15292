"""Sketches (numpy, outside the rule) of guarded's test on the stop jobs of the H200 learnings of
2026-11-29 (bench.guard_replay's traces), each arm's jobs the trace's times a cost:
  neighbours ARM_JOBS   the blocked Mann-Whitney test (16 and 4 a block) against tests on each arm
                        job's 1-2 nearest stop jobs each side (a trimmed mean or the sign of the
                        difference, batch variance), jobs at random at share 0.5, 10 runs a trace;
  assignment ARM_JOBS   the blocked test under four assignments at share 0.5 (a coin per job, strict
                        alternation, random-order pairs, blocks of 4 holding 2 stop jobs), 16 runs.
Each prints, per HP kind, the mean and sd of z for a costless arm and at the bound (1.0201x), and
how often z >= 2.5 (the look's threshold).
    python3 bench/results/2026-12-01-test-at-the-noise-limit/test_sketches.py MODE ARM_JOBS   (from the repository root)"""
import glob
import math
import sys

import numpy as np

sys.path.insert(0, '.')
from bench.guard_replay import traces  # noqa: E402

EPS = 1.0201
KINDS = ['small', 'bert', 'frcnn720', 'gemm']
CELLS = [(name.split(' + ')[0], np.array(t, dtype=float))
         for name, t in traces(sorted(glob.glob('bench/results/2026-11-29-h200-*/call*')))]


def blocked_z(mask, x, S=16):
    """The rule's blocked test: each S arm jobs against the stop jobs of the same stretch."""
    ia = np.nonzero(mask)[0]
    num = den = 0.0
    for s in range(0, len(ia) - S + 1, S):
        a0, a1 = ia[s], ia[s + S - 1]
        st = x[a0:a1 + 1][~mask[a0:a1 + 1]]
        k = len(st)
        if not k:
            continue
        d = x[ia[s:s + S]][:, None] - st[None, :] * EPS
        U = (d < 0).sum() + 0.5 * (d == 0).sum()
        num += U - S * k / 2
        den += S * k * (S + k + 1) / 12
    return num / math.sqrt(den)


def neighbour_d(mask, x, K):
    """Each arm job's log over the median log of its K nearest stop jobs each side, less log EPS."""
    lx = np.log(x)
    ia, isp = np.nonzero(mask)[0], np.nonzero(~mask)[0]
    pos = np.searchsorted(isp, ia)
    ds = []
    for p, i in zip(pos, ia):
        nb = isp[max(0, p - K):min(len(isp), p + K)]
        if len(nb) >= 2:
            ds.append(lx[i] - np.median(lx[nb]) - math.log(EPS))
    return np.array(ds)


def batch_z(v, B=16):
    nb = len(v) // B
    v = v[:nb * B].reshape(nb, B).mean(1)
    return -v.mean() / (v.std(ddof=1) / math.sqrt(nb))


def trim(d, c=3):
    s = 1.4826 * np.median(np.abs(d - np.median(d)))
    return np.clip(d, -c * s, c * s)


def design(rng, kind, L):
    """Which of L jobs are the arm's."""
    if kind == 'iid':
        return rng.random(L) < 0.5
    if kind == 'alt':
        return np.arange(L) % 2 == 1
    m = np.zeros(L, bool)
    if kind == 'pairs':
        first = rng.random(L // 2 + 1) < 0.5
        for p in range(L // 2):
            m[2 * p + (1 if first[p] else 0)] = True
    else:  # quads
        for q in range(L // 4):
            m[4 * q + rng.choice(4, 2, replace=False)] = True
    return m


def neighbours(N):
    rng = np.random.default_rng(2)
    names = ['ve16', 've4', 'nnT1', 'nnT2', 'nnS1', 'nnS2']
    for hpk in KINDS:
        out = {}
        for cost in (1.0, EPS):
            zs = {k: [] for k in names}
            for hp, tr in CELLS:
                if hp != hpk:
                    continue
                for _ in range(10):
                    L = 2 * N + 64
                    x = tr[(rng.integers(len(tr)) + np.arange(L)) % len(tr)].copy()
                    mask = rng.random(L) < 0.5
                    x[mask] *= cost
                    zs['ve16'].append(blocked_z(mask, x, 16))
                    zs['ve4'].append(blocked_z(mask, x, 4))
                    for K in (1, 2):
                        d = neighbour_d(mask, x, K)
                        zs['nnT%d' % K].append(batch_z(trim(d)))
                        zs['nnS%d' % K].append(batch_z((d > 0).astype(float) - 0.5))
            for k, v in zs.items():
                out[(k, cost)] = (np.mean(v), np.std(v), np.mean(np.array(v) >= 2.5))
        print(hpk, N)
        for k in names:
            print("  %-5s costless z %.2f sd %.2f P %.2f | at bound z %.2f sd %.2f P %.3f"
                  % (k, *out[(k, 1.0)], *out[(k, EPS)]))


def assignment(N):
    rng = np.random.default_rng(4)
    kinds = ['iid', 'alt', 'pairs', 'quads']
    for hpk in KINDS:
        res = {}
        for cost in (1.0, EPS, 1.03):
            zs = {k: [] for k in kinds}
            for hp, tr in CELLS:
                if hp != hpk:
                    continue
                for _ in range(16):
                    L = 2 * N + 64
                    x = tr[(rng.integers(len(tr)) + np.arange(L)) % len(tr)]
                    for k in kinds:
                        m = design(rng, k, L)
                        xx = x.copy()
                        xx[m] *= cost
                        zs[k].append(blocked_z(m, xx))
            for k, v in zs.items():
                res[(k, cost)] = (np.mean(v), np.std(v), np.mean(np.array(v) >= 2.5))
        print(hpk, N)
        for k in kinds:
            print("  %-6s costless z %.2f sd %.2f P %.2f | bound z %.2f sd %.2f P %.3f | 1.03 P %.3f"
                  % (k, *res[(k, 1.0)], *res[(k, EPS)], res[(k, 1.03)][2]))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("neighbours", "assignment"):
        sys.exit("usage: test_sketches.py neighbours|assignment ARM_JOBS")
    {"neighbours": neighbours, "assignment": assignment}[sys.argv[1]](int(sys.argv[2]))
