"""Per-CPU host counters around a matrix window, to tell why a host-bound HP runs slower beside a
busy LP: interrupts served, time in interrupt handlers, time the hypervisor took (steal), and how
busy each CPU was. Read from /proc/stat and /proc/interrupts (Linux); {} where they cannot be read.

  snap = read()            ... the window ...       delta(snap, read(), seconds)
      -> {"cpu3": {"busy": share, "irq": share, "steal": share, "intr_per_s": n,
                   "intr_top": {source: n per s, ...}}, ...}
An interrupt's source is its /proc/interrupts row: LOC (timer), RES (a wake-up sent by another
CPU), CAL (function call), TLB (shootdown), or a device's row by its last word (nvidia, ...).
"""
FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def read(stat="/proc/stat", interrupts="/proc/interrupts"):
    """{cpu name: {field: ticks, ..., "intr": interrupts served so far}}."""
    out = {}
    try:
        with open(stat) as f:
            for line in f:
                words = line.split()
                if words and words[0].startswith("cpu") and words[0] != "cpu":
                    out[words[0]] = dict(zip(FIELDS, (int(w) for w in words[1:1 + len(FIELDS)])))
        with open(interrupts) as f:
            cpus = ["cpu" + c[3:] for c in f.readline().split()]  # the header: CPU0 CPU1 ...
            for line in f:
                words = line.split()
                if not words:
                    continue
                counts = words[1:1 + len(cpus)]
                rest = words[1 + len(cpus):]
                source = words[0].rstrip(":") if not words[0][:-1].isdigit() else (rest[-1] if rest else words[0])
                for name, count in zip(cpus, counts):
                    if count.isdigit() and name in out:
                        out[name]["intr"] = out[name].get("intr", 0) + int(count)
                        by = out[name].setdefault("by_source", {})
                        by[source] = by.get(source, 0) + int(count)
    except (OSError, ValueError):
        return {}
    return out


def delta(before, after, seconds):
    """Per CPU over a window of `seconds`: shares of its time busy (not idle or iowait), in
    interrupt handlers (irq + softirq) and stolen; interrupts served per second."""
    if not before or not after or seconds <= 0:
        return {}
    out = {}
    for cpu, a in after.items():
        b = before.get(cpu)
        if not b:
            continue
        d = {k: a.get(k, 0) - b.get(k, 0) for k in FIELDS + ("intr",)}
        by = {src: n - b.get("by_source", {}).get(src, 0) for src, n in a.get("by_source", {}).items()}
        top = sorted(((n, src) for src, n in by.items() if n > 0), reverse=True)[:4]
        total = sum(d[k] for k in FIELDS)
        if total <= 0:
            continue
        out[cpu] = {"busy": round(1 - (d["idle"] + d["iowait"]) / total, 4),
                    "irq": round((d["irq"] + d["softirq"]) / total, 4),
                    "steal": round(d["steal"] / total, 4),
                    "intr_per_s": round(d["intr"] / seconds, 1),
                    "intr_top": {src: round(n / seconds, 1) for n, src in top}}
    return out


def busiest_cpus_of(source, snapshot, share=0.1):
    """The CPUs (numbers) that served at least `share` of `source`'s interrupts in a read()
    snapshot (counts since boot): for "nvidia", the CPUs the GPU's interrupts land on."""
    counts = {int(cpu[3:]): c.get("by_source", {}).get(source, 0) for cpu, c in snapshot.items()}
    total = sum(counts.values())
    return sorted(cpu for cpu, n in counts.items() if total and n >= share * total)


def cpu_list(text):
    """The CPUs of a kernel CPU list ("14", "0-3,8"), as a sorted list; [] if it does not parse."""
    cpus = set()
    try:
        for part in text.strip().split(","):
            lo, _, hi = part.partition("-")
            cpus.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        return []
    return sorted(cpus)


def gpu_irq_cpus(interrupts="/proc/interrupts", irq_dir="/proc/irq", stat="/proc/stat"):
    """The CPUs the GPU's (nvidia) interrupts are delivered to: the kernel's effective affinity of
    each nvidia interrupt line where it names a few CPUs, else the CPUs that served most of them
    since boot (on the H200 machine, a fresh boot's count pointed at CPU 0 while every interrupt
    of the workload went to CPU 14: the affinity is what holds now)."""
    targets = set()
    try:
        with open(interrupts) as f:
            f.readline()
            for line in f:
                words = line.split()
                if words and words[0].rstrip(":").isdigit() and words[-1].startswith("nvidia"):
                    with open(f"{irq_dir}/{words[0].rstrip(':')}/effective_affinity_list") as a:
                        targets.update(cpu_list(a.read()))
    except OSError:
        targets = set()
    snapshot = read(stat, interrupts)
    if targets and len(targets) <= max(2, len(snapshot) // 4):
        return sorted(targets)
    return busiest_cpus_of("nvidia", snapshot)


def cpu_siblings(sys_cpu="/sys/devices/system/cpu"):
    """{cpu: [the CPUs sharing its core, itself included]} from each CPU's thread_siblings_list:
    a launch-bound HP runs slower on a CPU whose sibling is busy (hypothesis for the HP workers'
    speed moving 10-25 % between rounds on the H200). {} where the kernel does not say."""
    import glob
    import os
    out = {}
    for path in glob.glob(os.path.join(sys_cpu, "cpu[0-9]*", "topology", "thread_siblings_list")):
        cpu = path.split(os.sep)[-3][3:]
        try:
            with open(path) as f:
                siblings = cpu_list(f.read())
        except OSError:
            continue
        if cpu.isdigit() and siblings:
            out[int(cpu)] = siblings
    return dict(sorted(out.items()))
