"""The depth's gap gain after its first 64, 128, 256, 384, 512 cycles (early_gain.txt): per guarded_depth
learning, cumulative from its start, over bench.gpu.lp_cycles.gap_depth_launches.
    PYTHONPATH=. python3 bench/results/2026-12-03-h200-matrix-coverage-2/early_gain.py FOLDER..."""
import sys
from bench.gpu import lp_cycles
for folder in sys.argv[1:]:
    raw = lp_cycles.load(folder)
    for seg in raw['segments']:
        if seg['setup'] != 'guarded_depth_learn': continue
        rows = lp_cycles.gap_depth_launches(seg)
        # per depth trial: consecutive stretch where a given depth appears; cumulative own since start
        own_l = own_ms = 0.0; acc = {}
        marks = {}
        for d, ms, l, i in rows:
            if d == 'own':
                own_l += l; own_ms += ms; continue
            a = acc.setdefault(d, [0.0, 0.0, 0]); a[0] += l; a[1] += ms; a[2] += 1
            if a[2] in (64, 128, 256, 384, 512) and own_ms:
                marks.setdefault(d, []).append(f"{a[2]}:{(a[0]/a[1])/(own_l/own_ms):.3f}")
        print(folder.split('/')[-1], seg['lp'], {d: ' '.join(v) for d, v in marks.items()})
