"""The spread of the LP launches over stop jobs' cycles, by the depth of the gap after the job, and how often a
trial's gain reading (ratio of the two sides' sums, n cycles each, drawn from the learning's own cycles, 400
draws, seed 1) reads over 1.03 (GY_GUARD_CYCLE_GAIN): gain_noise.txt.
    PYTHONPATH=. python3 bench/results/2026-12-04-h200-depth-gain-rule/gain_noise.py FOLDER..."""
import math
import random
import sys

from bench.gpu import lp_cycles

random.seed(1)
for folder in sys.argv[1:]:
    raw = lp_cycles.load(folder)
    for seg in raw['segments']:
        if seg['setup'] != 'guarded_depth_learn': continue
        rows = lp_cycles.gap_depth_launches(seg)
        pools = {}
        for d, ms, l, i in rows:
            pools.setdefault(d, []).append((l, ms))
        own = pools.get('own', [])
        if len(own) < 200: continue
        R0 = sum(l for l, _ in own) / sum(m for _, m in own)
        # per-cycle relative sd of the ratio estimator: sd of (l - R*ms)/mean(ms)/R
        mu = sum(m for _, m in own) / len(own)
        sd0 = math.sqrt(sum((l - R0 * m) ** 2 for l, m in own) / (len(own) - 1)) / mu / R0
        out = []
        for d, p in pools.items():
            if d == 'own' or len(p) < 128: continue
            R = sum(l for l, _ in p) / sum(m for _, m in p)
            mu_d = sum(m for _, m in p) / len(p)
            sdd = math.sqrt(sum((l - R * m) ** 2 for l, m in p) / (len(p) - 1)) / mu_d / R
            # chance a trial of n cycles (n own, n depth drawn) reads > 1.03 
            fr = {}
            for n in (128, 256, 512):
                hits = 0
                for _ in range(400):
                    a = random.choices(p, k=n); b = random.choices(own, k=n)
                    g = (sum(x for x, _ in a) / sum(y for _, y in a)) / (sum(x for x, _ in b) / sum(y for _, y in b))
                    hits += g > 1.03
                fr[n] = hits / 400
            out.append(f"{d} n{len(p)} gain {R/R0:.3f} sd/cycle {sdd:.2f}  P(>1.03) 128:{fr[128]:.2f} 256:{fr[256]:.2f} 512:{fr[512]:.2f}")
        print(folder.split('/')[-1][:40], seg['lp'], f"own n{len(own)} sd/cycle {sd0:.2f}", ' | '.join(out))
