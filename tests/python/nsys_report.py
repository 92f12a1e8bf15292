"""Writes SQLite files with the schema of an Nsight Systems export (`nsys export --type sqlite`,
schema 3.x as nsys 2024-2025 write it: nullable columns where nsys has them, ENUM and
TARGET_INFO tables beside the activity tables), filled with values a test chooses. Used by the
nsight-parser tests and by bench/nsight_parser_bench.sh; also writes the `nsys stats
--report cuda_kern_exec_trace --format csv` form of the same data."""
import csv
import sqlite3

SCHEMA = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL REFERENCES StringIds(id), priority INTEGER, globalTid INTEGER);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, label TEXT NOT NULL);
CREATE TABLE ENUM_CUDA_KERNEL_LAUNCH_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, label TEXT NOT NULL);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT,
    isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER,
    smCount INTEGER, pwGpuId INTEGER, uuid TEXT, luid INTEGER, chipName TEXT, cuDevice INTEGER, ctxId INTEGER,
    ctrlDevice INTEGER, computeMajor INTEGER, computeMinor INTEGER);
CREATE TABLE TARGET_INFO_CUDA_STREAM (streamId INTEGER NOT NULL, hwId INTEGER NOT NULL, vmId INTEGER NOT NULL,
    processId INTEGER NOT NULL, contextId INTEGER NOT NULL, priority INTEGER NOT NULL, flag INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
    greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
    demangledName INTEGER NOT NULL REFERENCES StringIds(id), shortName INTEGER NOT NULL REFERENCES StringIds(id),
    mangledName INTEGER REFERENCES StringIds(id), launchType INTEGER, cacheConfig INTEGER,
    registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
    blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
    staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
    localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL,
    sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
    start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER,
    correlationId INTEGER, nameId INTEGER NOT NULL REFERENCES StringIds(id), returnValue INTEGER NOT NULL,
    callchainId INTEGER);
CREATE TABLE NVTX_EVENTS (
    start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER,
    color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER REFERENCES StringIds(id),
    domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
    int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT, binaryData TEXT);
"""

# Tables that the original experiment's command line adds (nsys profile -t cuda,nvtx,osrt,cudnn,cublas
# -s cpu --cudabacktrace=true): OS runtime calls, cuDNN and cuBLAS ranges, CPU samples with their
# call chains, CUDA API backtraces, thread scheduling. nsight-parser must read around them.
EXTRA_SCHEMA = """
CREATE TABLE OSRT_API (start INTEGER NOT NULL, end INTEGER, eventClass INTEGER NOT NULL, globalTid INTEGER,
    correlationId INTEGER, nameId INTEGER NOT NULL REFERENCES StringIds(id), returnValue INTEGER NOT NULL,
    nestingLevel INTEGER, callchainId INTEGER);
CREATE TABLE OSRT_CALLCHAINS (id INTEGER NOT NULL, symbol INTEGER NOT NULL, module INTEGER NOT NULL,
    kernelMode INTEGER, thumbCode INTEGER, unresolved INTEGER, specialEntry INTEGER, originalIP INTEGER,
    unwindMethod INTEGER, stackDepth INTEGER NOT NULL, PRIMARY KEY (id, stackDepth));
CREATE TABLE CUDNN_EVENTS (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
    globalTid INTEGER, nameId INTEGER NOT NULL REFERENCES StringIds(id));
CREATE TABLE CUBLAS_EVENTS (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
    globalTid INTEGER, nameId INTEGER NOT NULL REFERENCES StringIds(id));
CREATE TABLE COMPOSITE_EVENTS (id INTEGER NOT NULL PRIMARY KEY, start INTEGER NOT NULL, cpu INTEGER,
    threadState INTEGER, globalTid INTEGER, cpuCycles INTEGER NOT NULL);
CREATE TABLE SAMPLING_CALLCHAINS (id INTEGER NOT NULL REFERENCES COMPOSITE_EVENTS(id), symbol INTEGER NOT NULL,
    module INTEGER NOT NULL, kernelMode INTEGER, thumbCode INTEGER, unresolved INTEGER, specialEntry INTEGER,
    originalIP INTEGER, unwindMethod INTEGER, stackDepth INTEGER NOT NULL, PRIMARY KEY (id, stackDepth));
CREATE TABLE CUDA_CALLCHAINS (id INTEGER NOT NULL, symbol INTEGER NOT NULL, module INTEGER NOT NULL,
    unresolved INTEGER, originalIP INTEGER, stackDepth INTEGER NOT NULL, PRIMARY KEY (id, stackDepth));
CREATE TABLE SCHED_EVENTS (start INTEGER NOT NULL, cpu INTEGER NOT NULL, isSchedIn INTEGER NOT NULL,
    globalTid INTEGER, threadState INTEGER, threadBlock INTEGER);
"""
EXTRA_TABLES = ["OSRT_API", "OSRT_CALLCHAINS", "CUDNN_EVENTS", "CUBLAS_EVENTS", "COMPOSITE_EVENTS",
                "SAMPLING_CALLCHAINS", "CUDA_CALLCHAINS", "SCHED_EVENTS"]

EVENT_TYPES = [(33, "NvtxCategory", "NVTX Category"), (34, "NvtxMark", "NVTX Mark"),
               (39, "NvtxThread", "NVTX Thread"), (59, "NvtxPushPopRange", "NVTX PushPop Range"),
               (60, "NvtxStartEndRange", "NVTX StartEnd Range"), (75, "NvtxDomainCreate", "NVTX Domain Create"),
               (76, "NvtxDomainDestroy", "NVTX Domain Destroy")]
PUSH_POP, START_END, MARK = 59, 60, 34
RUNTIME_EVENT_CLASS = 1


def global_pid(pid):
    """globalPid as nsys packs it: pid in bits 24..47 (a hardware id above)."""
    return (1 << 56) | (pid << 24)


def global_tid(pid, tid):
    return global_pid(pid) | tid


class Report:
    """Collects rows, then write(path) makes the SQLite file.

    kernel(...) rows: dict(pid, start, end, stream, corr, name, short) where corr may be None;
    launch(...) rows: dict(pid, tid, start, end, corr, name);
    nvtx(...) rows: dict(pid, tid, start, end, text, event_type, use_text_id)."""

    def __init__(self):
        self.strings = {}
        self.processes = []
        self.kernels = []
        self.launches = []
        self.ranges = []

    def string_id(self, value):
        if value not in self.strings:
            self.strings[value] = len(self.strings)
        return self.strings[value]

    def process(self, pid, name):
        self.processes.append((pid, name))

    def kernel(self, pid, start, end, stream=7, corr=None, name="void kern<int, 2>(float*)", short=None):
        self.kernels.append(dict(pid=pid, start=start, end=end, stream=stream, corr=corr, name=name,
                                 short=short or name.split("(")[0].split("<")[0].split()[-1]))

    def launch(self, pid, start, end, corr, name="cudaLaunchKernel_v7000", tid=None):
        self.launches.append(dict(pid=pid, tid=tid or pid, start=start, end=end, corr=corr, name=name))

    def nvtx(self, pid, start, end, text, event_type=PUSH_POP, use_text_id=False, tid=None):
        self.ranges.append(dict(pid=pid, tid=tid or pid, start=start, end=end, text=text,
                                event_type=event_type, use_text_id=use_text_id))

    def write(self, path, runtime=True, nvtx=True, processes=True, kernels=True, extra_tables=False):
        """extra_tables: also the tables of the original's command line (EXTRA_SCHEMA), filled with
        rows of the same processes and times (many more rows than kernels, as in real exports)."""
        db = sqlite3.connect(path)
        statements = [s for s in SCHEMA.split(";") if s.strip()]
        skip = set()
        if not runtime:
            skip.add("CUPTI_ACTIVITY_KIND_RUNTIME")
        if not nvtx:
            skip.add("NVTX_EVENTS")
        if not processes:
            skip.add("PROCESSES")
        if not kernels:
            skip.add("CUPTI_ACTIVITY_KIND_KERNEL")
        for s in statements:
            if not any(f"TABLE {t} " in s for t in skip):
                db.execute(s)
        db.executemany("INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (?,?,?)", EVENT_TYPES)
        db.execute("INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.18.0')")
        db.execute("INSERT INTO TARGET_INFO_GPU (vmId, id, name, computeMajor, computeMinor) "
                   "VALUES (0, 0, 'NVIDIA H100 80GB HBM3', 9, 0)")
        if processes:
            db.executemany("INSERT INTO PROCESSES VALUES (?,?,?)",
                           [(global_pid(p), p, n) for p, n in self.processes])
        if kernels:
            rows = []
            for i, k in enumerate(self.kernels):
                rows.append((k["start"], k["end"], 0, 1, None, k["stream"], k["corr"], global_pid(k["pid"]),
                             self.string_id(k["name"]), self.string_id(k["short"]), None, 0, 0, 32,
                             64, 1, 1, 256, 1, 1, 0, 0, 0, 0, i, 0, None, 0))
            db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (" + ",".join("?" * 28) + ")", rows)
        if runtime:
            db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,?,?)",
                           [(l["start"], l["end"], RUNTIME_EVENT_CLASS, global_tid(l["pid"], l["tid"]), l["corr"],
                             self.string_id(l["name"]), 0, None) for l in self.launches])
        if nvtx:
            rows = []
            for r in self.ranges:
                text_id = self.string_id(r["text"]) if r["use_text_id"] else None
                rows.append((r["start"], r["end"], r["event_type"], None, None, None,
                             None if r["use_text_id"] else r["text"], global_tid(r["pid"], r["tid"]),
                             global_tid(r["pid"], r["tid"]) if r["event_type"] == START_END else None,
                             text_id, 0))
            db.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, rangeId, category, color, text, "
                           "globalTid, endGlobalTid, textId, domainId) VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
        if extra_tables:
            self._write_extra(db)
        db.executemany("INSERT INTO StringIds VALUES (?,?)", [(i, v) for v, i in self.strings.items()])
        db.commit()
        db.close()

    def _write_extra(self, db):
        for statement in EXTRA_SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
        pids = sorted({k["pid"] for k in self.kernels} | {p for p, _ in self.processes}) or [1]
        times = sorted(k["start"] for k in self.kernels) or [1_000_000]
        osrt, dnn, blas, samples, sched, chains = [], [], [], [], [], []
        for i, t in enumerate(times):
            for pid in pids:
                tid = global_tid(pid, pid)
                osrt.append((t - 500, t - 100, 27, tid, None, self.string_id("pthread_cond_timedwait"), 0, 0, i))
                osrt.append((t - 90, None, 27, tid, None, self.string_id("ioctl"), 0, 1, None))  # unfinished
                dnn.append((t - 80, t - 10, 0, tid, self.string_id("cudnnConvolutionForward")))
                blas.append((t - 70, t - 20, 0, tid, self.string_id("cublasSgemm_v2")))
                samples.append((len(samples), t, i % 16, 1, tid, 1000 + i))
                sched.append((t, i % 16, i % 2, tid, 1, None))
            for depth in range(3):
                chains.append((i, self.string_id("frame%d" % depth), self.string_id("libtorch_cuda.so"), 0, 0, 0,
                               0, 0x7f0000 + depth, 1, depth))
        db.executemany("INSERT INTO OSRT_API VALUES (?,?,?,?,?,?,?,?,?)", osrt)
        db.executemany("INSERT INTO OSRT_CALLCHAINS VALUES (?,?,?,?,?,?,?,?,?,?)", chains)
        db.executemany("INSERT INTO CUDNN_EVENTS VALUES (?,?,?,?,?)", dnn)
        db.executemany("INSERT INTO CUBLAS_EVENTS VALUES (?,?,?,?,?)", blas)
        db.executemany("INSERT INTO COMPOSITE_EVENTS VALUES (?,?,?,?,?,?)", samples)
        db.executemany("INSERT INTO SAMPLING_CALLCHAINS VALUES (?,?,?,?,?,?,?,?,?,?)",
                       [(s[0],) + c[1:] for s, c in zip(samples, chains * (len(samples) // max(len(chains), 1) + 1))])
        db.executemany("INSERT INTO CUDA_CALLCHAINS VALUES (?,?,?,?,?,?)",
                       [(c[0], c[1], c[2], 0, c[7], c[9]) for c in chains])
        db.executemany("INSERT INTO SCHED_EVENTS VALUES (?,?,?,?,?,?)", sched)
        # --cudabacktrace: runtime calls point at a backtrace
        try:
            db.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET callchainId = correlationId % 7")
        except sqlite3.OperationalError:  # written without the runtime table
            pass

    def write_kern_exec_csv(self, path, preamble=True):
        """The nsys stats cuda_kern_exec_trace CSV of the kernels that have a launch call."""
        launch_of = {(l["pid"], l["corr"]): l for l in self.launches}
        rows = []
        for k in self.kernels:
            l = launch_of.get((k["pid"], k["corr"]))
            if l is None:
                continue
            queued = k["start"] - l["end"] >= 0
            rows.append([l["start"], l["end"] - l["start"], l["end"] if queued else "",
                         k["start"] - l["end"] if queued else "", k["start"], k["end"] - k["start"],
                         max(l["end"], k["end"]) - l["start"], k["pid"], l["tid"], 0, l["name"][:-6],
                         "  64    1    1", " 256    1    1", k["name"]])
        rows.sort(key=lambda r: r[0])
        with open(path, "w", newline="") as f:
            if preamble:
                f.write("Generating SQLite file report.sqlite from report.nsys-rep\n")
                f.write("Processing [report.sqlite] with [cuda_kern_exec_trace.py]... \n")
            w = csv.writer(f)
            w.writerow(["API Start (ns)", "API Dur (ns)", "Queue Start (ns)", "Queue Dur (ns)",
                        "Kernel Start (ns)", "Kernel Dur (ns)", "Total Dur (ns)", "PID", "TID", "DevId",
                        "API Function", "GridXYZ", "BlockXYZ", "Kernel Name"])
            w.writerows(rows)
