"""Synthesises a large Nsight Systems SQLite export (the schema of tests/python/nsys_report.py)
for bench/nsight_parser_bench.sh: N kernels over two processes, each with its launch call, one
more API call per kernel that launches nothing (as real traces have), and NVTX ranges.
Usage: nsight_parser_synth.py OUT.sqlite N_KERNELS"""
import random
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
from nsys_report import EVENT_TYPES, SCHEMA, global_pid, global_tid  # noqa: E402

NAMES = ["void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
         "at::detail::Array<char*, 1>>(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
         "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off",
         "void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false, true>(...)",
         "void at::native::(anonymous namespace)::upsample_bilinear2d_out_frame<float, float>(...)",
         "cudaLaunchKernel_v7000", "cudaStreamIsCapturing_v10000"]


def main():
    out, n = sys.argv[1], int(sys.argv[2])
    Path(out).unlink(missing_ok=True)
    db = sqlite3.connect(out)
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    for statement in SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)
    db.executemany("INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (?,?,?)", EVENT_TYPES)
    db.executemany("INSERT INTO StringIds VALUES (?,?)", list(enumerate(NAMES)))
    pids = (51001, 51002)
    db.executemany("INSERT INTO PROCESSES VALUES (?,?,?)", [(global_pid(p), p, "python3") for p in pids])
    rng = random.Random(1)
    kernels, calls = [], []
    clock = {p: 1_000_000 for p in pids}
    for i in range(n):
        pid = pids[i % 2]
        corr = 2 * (i // 2) + 1
        issue = clock[pid]
        start = issue + 6_000 + rng.randint(0, 500_000)
        end = start + rng.randint(1_000, 400_000)
        kernels.append((start, end, 0, 1, None, 7 + i % 3, corr, global_pid(pid), i % 4, i % 4, None, 0, 0, 32,
                        64, 1, 1, 256, 1, 1, 0, 0, 0, 0, i, 0, None, 0))
        calls.append((issue, issue + 5_000, 1, global_tid(pid, pid), corr, 4, 0, None))
        calls.append((issue + 5_100, issue + 5_600, 1, global_tid(pid, pid), corr + 1, 5, 0, None))
        clock[pid] = issue + 7_000
        if len(kernels) == 100_000:
            db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (" + ",".join("?" * 28) + ")", kernels)
            db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,?,?)", calls)
            kernels, calls = [], []
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (" + ",".join("?" * 28) + ")", kernels)
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,?,?)", calls)
    ranges = [(1_000_000 + j * 10_000, 1_000_000 + j * 10_000 + 3_000, 59, None, None, None,
               ("preemption", "sync", "job")[j % 3], global_tid(pids[j % 2], pids[j % 2]), None, None, 0)
              for j in range(n // 100)]
    db.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, rangeId, category, color, text, globalTid, "
                   "endGlobalTid, textId, domainId) VALUES (?,?,?,?,?,?,?,?,?,?,?)", ranges)
    db.commit()
    db.close()


if __name__ == "__main__":
    main()
