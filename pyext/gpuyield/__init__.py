"""gpuyield: share one GPU between inference processes of different priority.

A high-priority job takes the GPU: while it runs, kernel launches of lower-priority processes
(intercepted by the preloaded hooks library) wait, after their in-flight work has drained.
A worker only marks where its job begins and ends:

    import gpuyield
    seg = gpuyield.connect()            # the segment named by $GPUYIELD_SHM (run_exp sets it)
    with seg.job(1) as job:             # count in at priority 1, wait for lower work to drain
        run_inference()
    print(job.wait_ns, job.drained, job.timed_out)

Priorities are 0..7, higher wins. A process registers in the segment on its first begin, at
priority $GPUYIELD_PRIORITY (default 0): that is the priority its own launches are gated at.

gpuyield.__version__ is the version of the whole project (its VERSION file), as the tools'
--version print it.

Calls:
    connect(name=None)                    open an existing segment -> Segment
    create(name=None, drain_timeout_ms=None)  create one (without run_exp) -> Segment
    remove(name)                          remove (unlink) a segment
    segment_name(name=None)               the full '/gpuyield-<uid>-<tag>' a tag stands for
    Segment.job(p)                        context manager: one job at priority p
    Segment.begin(p, wait=True) / end(p)  the same without `with` (nestable, counted)
    Segment.status()                      dict, the fields of `expcontroller status --json`
    Segment.launch_allowed(p)             may a priority-p process launch now?
    Segment.close()                       unregister (counting out held jobs) and unmap

Where the rest of the tool lies:
    hook_path()                           the preload library libgpuyield.so beside this package
                                          (also: python3 -m gpuyield hook-path)

Constants: LEVELS (8), MAX_PROCS, DEFAULT_DRAIN_TIMEOUT_MS, POLICIES (the policy names a
segment may hold, as status()['policy'] gives them: the table of controller/policies.h).

Errors: gpuyield.Error (an OSError; .errno says what kind, the message says what to do) and
gpuyield.ArgumentError (an Error and a ValueError) for bad values; TypeError for wrong types.
A segment removed while open: status() still reads it, begin() raises Error(ENOENT).
A process that dies inside a job is counted out by whoever reaps first (any waiter, the
controller, Segment.reap()).

Compatibility with the original experiment's libgeek.so (segment tag "compat" + suffix):
    create_shared_mem_and_locks(suffix), setMem(1 or 0, suffix), waitForEmptyGPU(),
    remove_shared_mem_and_locks(suffix)
"""

from ._gpuyield import (
    DEFAULT_DRAIN_TIMEOUT_MS,
    LEVELS,
    POLICIES,
    MAX_PROCS,
    ArgumentError,
    Error,
    Job,
    Segment,
    __version__,
    connect,
    create,
    remove,
    segment_name,
)
from .tools import hook_path
from .compat import (
    compat_tag,
    create_shared_mem_and_locks,
    remove_shared_mem_and_locks,
    setMem,
    waitForEmptyGPU,
)

__all__ = [
    "__version__",
    "connect",
    "create",
    "remove",
    "segment_name",
    "hook_path",
    "Segment",
    "Job",
    "Error",
    "ArgumentError",
    "LEVELS",
    "POLICIES",
    "MAX_PROCS",
    "DEFAULT_DRAIN_TIMEOUT_MS",
    "compat_tag",
    "create_shared_mem_and_locks",
    "setMem",
    "waitForEmptyGPU",
    "remove_shared_mem_and_locks",
]
