"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/ (committed; rerun
after a layout change). Offsets follow controller/segment_layout.h (layout version 1)."""
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- segment_open: control byte + segment bytes -------------------------------------------
PROCS, SLOT, JOBS, ACTIVE, EPOCH = 320, 128, 236, 128, 272


def segment(slots=(), jobs=(), active=0, epoch=0, length=PROCS + 4 * SLOT):
    b = bytearray(length)
    for i, (state, pid, start, prio, held) in enumerate(slots):
        off = PROCS + i * SLOT
        struct.pack_into("<IiQi", b, off, state, pid, start, prio)
        struct.pack_into("<8H", b, off + 20, *held)
        struct.pack_into("<I", b, off + 36, 1)  # inflight
    struct.pack_into("<8I", b, JOBS, *(list(jobs) + [0] * (8 - len(jobs))))
    struct.pack_into("<I", b, ACTIVE, active)
    struct.pack_into("<Q", b, EPOCH, epoch)
    return bytes(b)


put("segment_open", "empty_valid", bytes([0x03]))
put("segment_open", "two_slots", bytes([0x03 | (5 << 2)]) + segment(
    [(1, 1, 1, 2, [0, 0, 1, 0, 0, 0, 0, 0]), (2, 999999, 5, 0, [0] * 8)], jobs=[0, 0, 1], active=4, epoch=7))
put("segment_open", "bad_states", bytes([0x03 | (7 << 2)]) + segment(
    [(77, 1, 1, 2, [0] * 8), (1, -5, 1, 9, [0] * 8), (3, 1, 1, 3, [65535] * 8)], jobs=[0xffffffff] * 8,
    active=0xffffffff, epoch=2**64 - 1))
put("segment_open", "wrong_size", bytes([0x00]) + b"GPUYIELD" + bytes(100))
put("segment_open", "unfixed_header", bytes([0x01]) + struct.pack("<QIIIi", 0x444C454959555047, 1, 16704, 0, 1))

# ---- guard_state: the bytes of struct gy_guard from its start (guarded_layout.h), then job bytes ----
# current, in_force, trial, reason, confirmed, pinned as u32: every arm and the reason out of range
put("guard_state", "init_defaults", b"")  # the guard as gy_guard_init leaves it
put("guard_state", "arms_out_of_range", struct.pack("<6I", 7, 200, 9999, 77, 1, 0))
put("guard_state", "all_ones", b"\xff" * 7000)  # past the guard's size: its job bytes too
# found_1, found_2: the fuzzer's first two findings (a window's recent_n past its ring; a ratio of
# job times past 4 294 in ppm), kept as found

# ---- run_exp_config: experiment files ----------------------------------------------------------
for name in ("input.json", "3models.json", "input_controlevent.json"):
    shutil.copy(os.path.join(HERE, "..", "exp_configs", name), os.path.join(HERE, "corpus", "run_exp_config", name))
put("run_exp_config", "minimal.json", b'{"models": [{"model_name": "resnet50", "input_file_path": "x.png", '
    b'"output_file_path": "out", "output_file_name": "a", "priority": 7, "sleep_time": 0.1, "resize": false, '
    b'"control": {"control": true, "controlsync": true, "controlEvent": false, '
    b'"queue_limit": {"sync": 1, "event_group": 2}}}], "exp_dur": 1, "device_id": 0}')
put("run_exp_config", "wrong_types.json", b'{"models": [{"model_name": 5, "priority": "high", "resize_size": [1]}], '
    b'"exp_dur": -1, "device_id": 1e99, "extra": null}')
put("run_exp_config", "syntax.json", b'{"models": [\n  {"model_name": "resnet50",}\n]}\n')

# ---- nsight_csv: nsys stats cuda_kern_exec_trace ---------------------------------------------------
HEADER = ('"API Start (ns)","API Dur (ns)","Queue Start (ns)","Queue Dur (ns)","Kernel Start (ns)",'
          '"Kernel Dur (ns)","Total Dur (ns)","PID","TID","DevId","API Function","GridXYZ","BlockXYZ","Kernel Name"\n')
rows = ('1000,50,1050,10,1060,400,460,4242,4242,0,cuLaunchKernel,"   1    1    1","   1    1    1",'
        '"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int, T2, T3)"\n'
        '2000,40,,,2040,300,340,4242,4243,0,cudaLaunchKernel,"  64    1    1"," 256    1    1",relu_kernel\n'
        '3000,45,3045,5,3050,700,750,5151,5151,0,cuLaunchKernelEx,"   8    8    1","  32    8    1",'
        '"gemm ""quoted"" name, with comma"\n')
put("nsight_csv", "three_kernels.csv", (HEADER + rows).encode())
put("nsight_csv", "preamble.csv", ("Generating SQLite file report.sqlite from report.nsys-rep\n"
                                   "Processing [report.sqlite] with [cuda_kern_exec_trace.py]...\n\n" + HEADER
                                   + rows.splitlines()[1] + "\n").encode())
put("nsight_csv", "broken_rows.csv", (HEADER + '1,2,3\n"unterminated,5\n-1,-2,,,-3,-4,0,x,y,0,f,g,h,k\n').encode())
