/* gpuyield.Segment: one process's handle on a shared segment. It registers the process lazily,
 * keeps the jobs begun by begin() so that end() can count them out, and reads status. */
#include "pyext.h"
#include "status_text.h"
#include "status_view.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The open handles of this process, linked so that a normal exit frees their slots at once (a
 * handle still referenced at exit is never deallocated). Touched with the GIL held, and by the
 * C atexit handler after the interpreter is finalized. */
static SegmentObject *open_handles;
static bool exit_handler_installed;

static void release_open_handles_at_exit(void)
{
    for (SegmentObject *h = open_handles; h; h = h->open_next)
        if (h->open && h->owner_pid == gy_self_pid())
            gy_release_at_exit(&h->shm);
}

static void link_open(SegmentObject *self)
{
    if (!exit_handler_installed)
        exit_handler_installed = atexit(release_open_handles_at_exit) == 0;
    self->open_prev = NULL;
    self->open_next = open_handles;
    if (open_handles)
        open_handles->open_prev = self;
    open_handles = self;
}

static void unlink_open(SegmentObject *self)
{
    if (self->open_prev)
        self->open_prev->open_next = self->open_next;
    else if (open_handles == self)
        open_handles = self->open_next;
    if (self->open_next)
        self->open_next->open_prev = self->open_prev;
    self->open_prev = self->open_next = NULL;
}

PyObject *gyp_segment_new(gy_shm *shm)
{
    SegmentObject *self = PyObject_GC_New(SegmentObject, &gyp_SegmentType);
    if (!self) {
        gy_close(shm);
        return NULL;
    }
    self->shm = *shm;
    self->open = true;
    self->owner_pid = gy_self_pid();
    self->busy = 0;
    self->registering = 0;
    self->dev = 0;
    self->ino = 0;
    memset(self->ordinal_slots, 0, sizeof self->ordinal_slots);
    link_open(self);
    /* Recorded right after the open; a replacement in between is not told apart (documented). */
    gy_segment_identity(self->shm.name, &self->dev, &self->ino);
    for (int level = 0; level < GY_LEVELS; level++)
        self->begun[level] = NULL;
    for (int level = 0; level < GY_LEVELS; level++) {
        self->begun[level] = PyList_New(0);
        if (!self->begun[level]) {
            Py_DECREF(self);
            return NULL;
        }
    }
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

/* Mark every job this handle began as no longer ours to end: close or fork counted them out. */
static void forget_begun_jobs(SegmentObject *self)
{
    for (int level = 0; level < GY_LEVELS; level++) {
        PyObject *list = self->begun[level];
        if (!list)
            continue;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++)
            ((JobObject *)PyList_GET_ITEM(list, i))->job.active = false;
        PyList_SetSlice(list, 0, PyList_GET_SIZE(list), NULL);
    }
}

int gyp_segment_ready(SegmentObject *self)
{
    if (!self->open) {
        gyp_raise(EBADF, "segment %s is closed: connect again", self->shm.name);
        return -1;
    }
    if (self->owner_pid != gy_self_pid()) {
        /* A forked child shares the parent's mapping but not its registration or its jobs. */
        self->shm.slot = -1;
        self->busy = 0; /* the threads that were inside calls did not survive the fork */
        self->registering = 0;
        forget_begun_jobs(self);
        self->owner_pid = gy_self_pid();
    }
    return 0;
}

/* How often a begin looks the segment's name up. `remove` sets GY_REMOVED_BIT before it unlinks
 * the name, which every begin sees in one load; the lookup only finds a name removed some other
 * way (an rm of /dev/shm/...) or taken by a segment created anew. It is an lstat: without it a
 * begin around a job after idle time went from 51 to 29 us on the H100
 * (bench/results/2026-11-25-host-side-cost, call 6; on the CPU: bench/results/begin_idle_cpu.md). */
#define GYP_NAME_CHECK_NS 1000000000ull

int gyp_segment_check_present(SegmentObject *self)
{
    bool marked = gy_segment_removed(&self->shm);
    uint64_t now = gy_now_ns();
    if (!marked && self->name_checked_ns && now - self->name_checked_ns < GYP_NAME_CHECK_NS)
        return 0;
    self->name_checked_ns = now;
    dev_t dev;
    ino_t ino;
    int present = gy_segment_identity(self->shm.name, &dev, &ino);
    bool replaced = present == 1 && (dev != self->dev || ino != self->ino);
    if (marked || present == 0 || replaced) {
        gyp_raise(ENOENT,
                  "segment %s was removed%s while this process had it open: its experiment is over, so no "
                  "new job can begin on it; connect() again (to the new segment, if one was created)",
                  self->shm.name, replaced ? " and created anew" : "");
        return -1;
    }
    return 0;
}

/* $GPUYIELD_PRIORITY: the priority this process registers at (its launches are gated by it). */
static int registration_priority(int *out)
{
    const char *env = getenv("GPUYIELD_PRIORITY");
    if (gy_priority_parse(env, out)) {
        gyp_raise(EINVAL, "GPUYIELD_PRIORITY='%.40s' is not a priority: set it to an integer in 0..%d, or unset it "
                          "(default 0)",
                  env, GY_LEVELS - 1);
        return -1;
    }
    return 0;
}

static int register_at(SegmentObject *self, int priority)
{
    gy_err err;
    int rc;
    /* The register waits for the mutex (up to its bound): without the GIL, so other threads and
     * Ctrl-C go on. Two threads must not both see slot -1 and both register: the second waits for
     * the first (the flag is read and set under the GIL). */
    bool waited = false;
    while (self->registering) {
        waited = true;
        Py_BEGIN_ALLOW_THREADS
        struct timespec ms = {0, 1000000L};
        nanosleep(&ms, NULL);
        Py_END_ALLOW_THREADS
        if (PyErr_CheckSignals())
            return -1;
    }
    if (waited && self->shm.slot >= 0)
        return 0; /* the other thread registered us */
    self->registering = 1;
    self->busy++;
    Py_BEGIN_ALLOW_THREADS
    rc = gy_register(&self->shm, priority, &err);
    Py_END_ALLOW_THREADS
    self->busy--;
    self->registering = 0;
    if (rc) {
        gyp_raise_err(&err);
        return -1;
    }
    return 0;
}

int gyp_segment_ensure_registered(SegmentObject *self)
{
    if (self->shm.slot >= 0)
        return 0;
    int priority;
    if (registration_priority(&priority))
        return -1;
    return register_at(self, priority);
}

static void close_segment(SegmentObject *self)
{
    if (!self->open)
        return;
    if (self->owner_pid != gy_self_pid())
        self->shm.slot = -1; /* never unregister the parent's slot from a forked child */
    /* Unregistering counts out every job this process still holds (begun ones included). */
    forget_begun_jobs(self);
    unlink_open(self);
    gy_close(&self->shm);
    self->open = false;
}

/* Begun jobs point back at their Segment: a cycle, so both types take part in the GC. */
static int segment_traverse(SegmentObject *self, visitproc visit, void *arg)
{
    for (int level = 0; level < GY_LEVELS; level++)
        Py_VISIT(self->begun[level]);
    return 0;
}

static int segment_clear(SegmentObject *self)
{
    for (int level = 0; level < GY_LEVELS; level++)
        Py_CLEAR(self->begun[level]);
    return 0;
}

static void segment_dealloc(SegmentObject *self)
{
    PyObject_GC_UnTrack(self);
    close_segment(self);
    segment_clear(self);
    PyObject_GC_Del(self);
}

static PyObject *segment_repr(SegmentObject *self)
{
    if (!self->open)
        return PyUnicode_FromFormat("<gpuyield.Segment %s, closed>", self->shm.name);
    if (self->shm.slot >= 0 && self->owner_pid == gy_self_pid())
        return PyUnicode_FromFormat("<gpuyield.Segment %s, registered at priority %d>", self->shm.name,
                                    gy_my_slot(&self->shm)->priority);
    return PyUnicode_FromFormat("<gpuyield.Segment %s, not registered>", self->shm.name);
}

/* ---- methods ------------------------------------------------------------------------------------ */

PyDoc_STRVAR(job_doc,
             "job($self, /, priority, device=None)\n--\n\n"
             "A context manager for one job at `priority` (0..7, higher wins):\n\n"
             "    with seg.job(1) as job:\n"
             "        run_inference()\n\n"
             "Entering counts the job in (launches of lower-priority processes stop) and waits\n"
             "until their in-flight GPU work has drained, or the segment's drain timeout passed.\n"
             "The wait releases the GIL; Ctrl-C raises KeyboardInterrupt within ~50 ms and the job\n"
             "is counted out. `job.wait_ns`, `job.drained` and `job.timed_out` tell what the wait\n"
             "cost. Leaving counts the job out, also when the block raises (the exception goes on).\n\n"
             "device: the GPU whose lower launches the job stops. None (default): the GPU of this\n"
             "thread's current CUDA context when the job begins, every GPU when there is none;\n"
             "\"all\"; a UUID \"GPU-...\" (nvidia-smi -L); or an int ordinal (as CUDA_VISIBLE_DEVICES\n"
             "numbers them). Lower processes with work on other GPUs are neither stopped nor drained.");

/* The device argument: resolved now when given, at begin when None (GYP_DEVICE_CURRENT). */
static int job_device(SegmentObject *self, PyObject *device_obj, int *device)
{
    *device = GYP_DEVICE_CURRENT;
    return device_obj && device_obj != Py_None ? gyp_resolve_device(self, device_obj, device) : 0;
}

static PyObject *segment_job(SegmentObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"priority", "device", NULL};
    PyObject *priority_obj, *device_obj = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:job", keywords, &priority_obj, &device_obj))
        return NULL;
    int priority, device;
    if (gyp_segment_ready(self) || gyp_parse_priority(priority_obj, "job priority", &priority) ||
        job_device(self, device_obj, &device))
        return NULL;
    return (PyObject *)gyp_job_new(self, priority, device);
}

PyDoc_STRVAR(begin_doc,
             "begin($self, /, priority, wait=True, device=None)\n--\n\n"
             "Begin a job at `priority` (0..7) without a `with` block; returns its Job.\n\n"
             "Same as entering seg.job(priority). Jobs nest: begin(1) twice needs end(1) twice.\n"
             "With wait=False the job is only counted in (lower launches stop at once); call\n"
             "job.wait() to wait for the drain. The first begin registers this process at\n"
             "$GPUYIELD_PRIORITY (default 0). Raises gpuyield.Error(ENOENT) when the segment was\n"
             "removed since connect(), ArgumentError for a priority out of range. device: as for\n"
             "job().");

static PyObject *segment_begin(SegmentObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"priority", "wait", "device", NULL};
    PyObject *priority_obj, *device_obj = NULL;
    int wait = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|pO:begin", keywords, &priority_obj, &wait, &device_obj))
        return NULL;
    int priority, device;
    if (gyp_segment_ready(self) || gyp_parse_priority(priority_obj, "job priority", &priority) ||
        job_device(self, device_obj, &device))
        return NULL;
    JobObject *job = gyp_job_new(self, priority, device);
    if (!job)
        return NULL;
    if (gyp_job_begin(job, wait != 0)) {
        Py_DECREF(job);
        return NULL;
    }
    if (PyList_Append(self->begun[priority], (PyObject *)job) < 0) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        gyp_job_end(job);
        PyErr_Clear();
        PyErr_Restore(type, value, tb);
        Py_DECREF(job);
        return NULL;
    }
    return (PyObject *)job;
}

PyDoc_STRVAR(end_doc,
             "end($self, priority, /)\n--\n\n"
             "End the most recent job that begin(priority) began on this Segment (lower-priority\n"
             "launches resume once no job above them remains). Raises gpuyield.ArgumentError when\n"
             "no begun job at that priority is in progress (an end() without its begin()).");

static PyObject *segment_end(SegmentObject *self, PyObject *arg)
{
    int priority;
    if (gyp_segment_ready(self) || gyp_parse_priority(arg, "job priority", &priority))
        return NULL;
    PyObject *list = self->begun[priority];
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (n == 0)
        return gyp_raise(EINVAL,
                         "end(%d) without a matching begin(%d): no job of priority %d begun by this Segment is in "
                         "progress in %s",
                         priority, priority, priority, self->shm.name);
    JobObject *job = (JobObject *)PyList_GET_ITEM(list, n - 1);
    Py_INCREF(job);
    PyList_SetSlice(list, n - 1, n, NULL);
    int rc = gyp_job_end(job);
    Py_DECREF(job);
    if (rc)
        return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(launch_allowed_doc,
             "launch_allowed($self, priority, /)\n--\n\n"
             "True when a process of `priority` may launch kernels now: no job above it is in\n"
             "progress. The hooks' fast path (one atomic load); for tests and tools.");

static PyObject *segment_launch_allowed(SegmentObject *self, PyObject *arg)
{
    int priority;
    if (gyp_segment_ready(self) || gyp_parse_priority(arg, "priority", &priority))
        return NULL;
    return PyBool_FromLong(gy_launch_allowed(&self->shm, priority));
}

PyDoc_STRVAR(register_doc,
             "register($self, /, priority=None)\n--\n\n"
             "Register this process now (normally the first begin does it) at `priority`, or at\n"
             "$GPUYIELD_PRIORITY (default 0) when None. Raises gpuyield.Error(EBUSY) when already\n"
             "registered, gpuyield.Error(ENOSPC) when the process table is full.");

static PyObject *segment_register(SegmentObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"priority", NULL};
    PyObject *priority_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:register", keywords, &priority_obj))
        return NULL;
    if (gyp_segment_ready(self))
        return NULL;
    int priority;
    if (priority_obj == Py_None ? registration_priority(&priority)
                                : gyp_parse_priority(priority_obj, "priority", &priority))
        return NULL;
    if (gyp_segment_check_present(self) || register_at(self, priority))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *bool_object(bool value)
{
    return PyBool_FromLong(value);
}

static int set_counter(PyObject *dict, const char *key, uint64_t value)
{
    PyObject *number = PyLong_FromUnsignedLongLong(value);
    int rc = number ? PyDict_SetItemString(dict, key, number) : -1;
    Py_XDECREF(number);
    return rc;
}

/* One process's dict: pid, priority, state, inflight, then the counters of GY_PROC_COUNTERS. */
static PyObject *proc_dict(const struct gy_status_proc *p)
{
    PyObject *name = PyUnicode_DecodeUTF8(p->name, (Py_ssize_t)strlen(p->name), "replace");
    if (!name)
        return NULL;
    PyObject *proc = Py_BuildValue("{s:i,s:N,s:i,s:s,s:N}", "pid", p->pid, "name", name, "priority", p->priority,
                                   "state", p->state, "inflight", bool_object(p->inflight));
    if (!proc)
        return NULL;
#define SET_COUNTER(name, what)                                                                          \
    if (set_counter(proc, #name, p->name)) {                                                             \
        Py_DECREF(proc);                                                                                 \
        return NULL;                                                                                     \
    }
    GY_PROC_COUNTERS(SET_COUNTER)
#undef SET_COUNTER
    /* Beside the counters, as in gy_status_json: where the process stands with partition. */
    PyObject *partition = PyUnicode_FromString(p->partition);
    if (!partition || PyDict_SetItemString(proc, "partition", partition)) {
        Py_XDECREF(partition);
        Py_DECREF(proc);
        return NULL;
    }
    Py_DECREF(partition);
    PyObject *devices = PyList_New(0); /* device slots launched on; -1: on no known device */
    for (int d = 0; devices && d < GY_MAX_DEVICES; d++) {
        if (!(p->launched_devices & (1u << d)))
            continue;
        PyObject *slot = PyLong_FromLong(d);
        if (!slot || PyList_Append(devices, slot))
            Py_CLEAR(devices);
        Py_XDECREF(slot);
    }
    if (devices && (p->launched_devices & GY_LAUNCHED_UNKNOWN)) {
        PyObject *unknown = PyLong_FromLong(GY_DEVICE_ALL);
        if (!unknown || PyList_Append(devices, unknown))
            Py_CLEAR(devices);
        Py_XDECREF(unknown);
    }
    if (!devices || PyDict_SetItemString(proc, "devices", devices)) {
        Py_XDECREF(devices);
        Py_DECREF(proc);
        return NULL;
    }
    Py_DECREF(devices);
    return proc;
}

static PyObject *status_dict(const struct gy_status *st)
{
    PyObject *jobs = PyList_New(GY_LEVELS);
    PyObject *procs = PyList_New(st->nprocs);
    if (!jobs || !procs)
        goto fail;
    for (int level = 0; level < GY_LEVELS; level++) {
        PyObject *count = PyLong_FromUnsignedLong(st->jobs[level]);
        if (!count)
            goto fail;
        PyList_SET_ITEM(jobs, level, count);
    }
    for (int i = 0; i < st->nprocs; i++) {
        const struct gy_status_proc *p = &st->procs[i];
        PyObject *proc = proc_dict(p);
        if (!proc)
            goto fail;
        PyList_SET_ITEM(procs, i, proc);
    }
    PyObject *devices = PyList_New(st->ndevices);
    for (int i = 0; devices && i < st->ndevices; i++) {
        const struct gy_status_device *d = &st->devices[i];
        PyObject *counts = PyList_New(GY_LEVELS);
        for (int level = 0; counts && level < GY_LEVELS; level++) {
            PyObject *count = PyLong_FromUnsignedLong(d->jobs[level]);
            if (!count)
                Py_CLEAR(counts);
            else
                PyList_SET_ITEM(counts, level, count);
        }
        PyObject *entry = counts ? Py_BuildValue("{s:i,s:s,s:N}", "slot", d->slot, "uuid", d->uuid, "jobs", counts) : NULL;
        if (!entry)
            Py_CLEAR(devices);
        else
            PyList_SET_ITEM(devices, i, entry);
    }
    if (!devices)
        goto fail;
    /* Same keys, same order as gy_status_json (`expcontroller status --json`). */
    PyObject *holder = st->mutex_holder[0] ? PyUnicode_FromString(st->mutex_holder) : (Py_INCREF(Py_None), Py_None);
    if (!holder) {
        Py_DECREF(devices);
        goto fail;
    }
    char stamp[48];
    gy_rfc3339(&st->taken, stamp, sizeof stamp);
    return Py_BuildValue("{s:s,s:s,s:s,s:O,s:N,s:K,s:K,s:K,s:K,s:N,s:N,s:N}", "segment", st->name, "timestamp", stamp, "policy",
                         gy_policy_name(st->policy), "mps", st->mps ? Py_True : Py_False, "jobs", jobs, "job_epoch",
                         (unsigned long long)st->job_epoch, "drain_timeouts",
                         (unsigned long long)st->total_drain_timeouts, "reaped", (unsigned long long)st->reaped,
                         "lock_timeouts", (unsigned long long)st->lock_timeouts, "mutex_holder", holder,
                         "devices", devices, "processes", procs);
fail:
    Py_XDECREF(jobs);
    Py_XDECREF(procs);
    return NULL;
}

/* Fill *st (heap: it is ~10 KiB) with a snapshot as expcontroller shows it (service/status_view.h):
 * names made clean UTF-8 and, with merge, one row per process (its hook's and its extension's
 * slots merged, counters summed); without, one row per slot (_status_slots, for tests). NULL with
 * an exception on failure. */
static struct gy_status *read_status(SegmentObject *self, bool merge)
{
    if (gyp_segment_ready(self))
        return NULL;
    struct gy_status *st = PyMem_Malloc(sizeof *st);
    if (!st) {
        PyErr_NoMemory();
        return NULL;
    }
    gy_err err;
    int rc;
    self->busy++;
    Py_BEGIN_ALLOW_THREADS
    rc = gy_status_read(&self->shm, st, &err);
    Py_END_ALLOW_THREADS
    self->busy--;
    if (rc) {
        PyMem_Free(st);
        gyp_raise_err(&err);
        return NULL;
    }
    if (merge) {
        gy_status_view(st);
    } else {
        gy_utf8_clean(st->name);
        gy_utf8_clean(st->mutex_holder);
        for (int i = 0; i < st->nprocs; i++)
            gy_utf8_clean(st->procs[i].name);
    }
    return st;
}

/* The counters' names in the docstring, from the table: ", launches, graph_launches, ...". */
#define COUNTER_DOC_NAME(name, what) ", " #name
PyDoc_STRVAR(status_doc,
             "status($self, /)\n--\n\n"
             "A snapshot of the segment as a dict with exactly the fields of\n"
             "`expcontroller status --json`: segment (name), jobs (8 counts, one per priority),\n"
             "policy (one of gpuyield.POLICIES), mps, job_epoch, drain_timeouts, reaped, lock_timeouts,\n"
             "mutex_holder (None, or who held the segment's mutex past its bound), and processes: a list of dicts, one\n"
             "per process (the slots of its hook and of this extension merged: counters summed), with pid, priority,\n"
             "state ('running', 'blocked', 'draining'), inflight" GY_PROC_COUNTERS(COUNTER_DOC_NAME) ", partition\n"
             "('-', 'active' or 'fallback: <why>').\n"
             "Works on a removed segment too (it reads the memory this process still maps).\n"
             "Raises gpuyield.Error(EPROTO) when the segment is corrupt.");

static PyObject *segment_status(SegmentObject *self, PyObject *unused)
{
    (void)unused;
    struct gy_status *st = read_status(self, true);
    if (!st)
        return NULL;
    PyObject *dict = status_dict(st);
    PyMem_Free(st);
    return dict;
}

PyDoc_STRVAR(status_slots_doc,
             "_status_slots($self, /)\n--\n\n"
             "status() with one entry per slot as the segment holds them: a process with the hook and\n"
             "this extension has two. For tests.");

static PyObject *segment_status_slots(SegmentObject *self, PyObject *unused)
{
    (void)unused;
    struct gy_status *st = read_status(self, false);
    if (!st)
        return NULL;
    PyObject *dict = status_dict(st);
    PyMem_Free(st);
    return dict;
}

PyDoc_STRVAR(status_json_doc,
             "status_json($self, /)\n--\n\n"
             "The same snapshot as status(), as the JSON text `expcontroller status --json` prints.");

static PyObject *segment_status_json(SegmentObject *self, PyObject *unused)
{
    (void)unused;
    struct gy_status *st = read_status(self, true);
    if (!st)
        return NULL;
    PyObject *text = NULL;
    int len = gy_status_json(st, NULL, 0);
    char *buf = len >= 0 ? PyMem_Malloc((size_t)len + 1) : NULL;
    if (!buf) {
        PyErr_NoMemory();
    } else {
        gy_status_json(st, buf, (size_t)len + 1);
        text = PyUnicode_FromStringAndSize(buf, len);
        PyMem_Free(buf);
    }
    PyMem_Free(st);
    return text;
}

PyDoc_STRVAR(reap_doc,
             "reap($self, /)\n--\n\n"
             "Count out dead processes now (their jobs and slots); returns how many. Waits and the\n"
             "controller reap on their own; this is for tools and tests.");

static PyObject *segment_reap(SegmentObject *self, PyObject *unused)
{
    (void)unused;
    if (gyp_segment_ready(self))
        return NULL;
    int reaped;
    self->busy++;
    Py_BEGIN_ALLOW_THREADS
    reaped = gy_reap(&self->shm);
    Py_END_ALLOW_THREADS
    self->busy--;
    return PyLong_FromLong(reaped);
}

PyDoc_STRVAR(close_doc,
             "close($self, /)\n--\n\n"
             "Unregister this process (counting out every job it still holds) and unmap the\n"
             "segment; the segment itself stays. Idempotent. Raises gpuyield.Error(EBUSY) while\n"
             "another thread is waiting on this Segment.");

static PyObject *segment_close(SegmentObject *self, PyObject *unused)
{
    (void)unused;
    if (self->open && self->owner_pid != gy_self_pid())
        self->busy = 0;
    if (self->busy)
        return gyp_raise(EBUSY, "cannot close %s: another thread is inside a call on it (e.g. waiting for a drain); "
                                "close after that call returns",
                         self->shm.name);
    close_segment(self);
    Py_RETURN_NONE;
}

static PyObject *segment_enter(SegmentObject *self, PyObject *unused)
{
    (void)unused;
    if (gyp_segment_ready(self))
        return NULL;
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *segment_exit(SegmentObject *self, PyObject *args)
{
    (void)args;
    PyObject *r = segment_close(self, NULL);
    if (!r)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

PyDoc_STRVAR(mark_inflight_doc,
             "_mark_inflight($self, /)\n--\n\n"
             "Test-only: register if needed and set this process's in-flight flag, as a kernel\n"
             "launch through the hooks would. A process that never acknowledges a drain after\n"
             "this makes higher-priority begins wait until their drain timeout.");

static PyObject *segment_mark_inflight(SegmentObject *self, PyObject *unused)
{
    (void)unused;
    if (gyp_segment_ready(self) || gyp_segment_ensure_registered(self))
        return NULL;
    gy_mark_inflight(&self->shm);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(ack_drain_doc,
             "_ack_drain($self, /, timeout=5.0)\n--\n\n"
             "Test-only: wait up to `timeout` seconds for a drain request addressed to this process\n"
             "and acknowledge it as drained (as the hooks' helper thread does once its GPU work\n"
             "finished). Returns True when one was acknowledged.");

static PyObject *segment_ack_drain(SegmentObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"timeout", NULL};
    double timeout = 5.0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|d:_ack_drain", keywords, &timeout))
        return NULL;
    if (!(timeout >= 0) || timeout > 3600)
        return gyp_raise(EINVAL, "timeout=%g is out of range: give seconds in [0, 3600]", timeout);
    if (gyp_segment_ready(self) || gyp_segment_ensure_registered(self))
        return NULL;
    uint64_t epoch = 0;
    bool requested;
    self->busy++;
    Py_BEGIN_ALLOW_THREADS
    requested = gy_drain_wait_request(&self->shm, (uint64_t)(timeout * 1e9), &epoch);
    if (requested)
        gy_drain_ack(&self->shm, epoch, false);
    Py_END_ALLOW_THREADS
    self->busy--;
    return PyBool_FromLong(requested);
}

PyDoc_STRVAR(wait_launch_allowed_doc,
             "_wait_launch_allowed($self, /)\n--\n\n"
             "Test-only: block as a gated kernel launch of this process does (registering first if\n"
             "needed) until no job above its priority is in progress; returns the ns blocked. Not\n"
             "interruptible: it wakes every 100 ms only to reap dead processes.");

static PyObject *segment_wait_launch_allowed(SegmentObject *self, PyObject *unused)
{
    (void)unused;
    if (gyp_segment_ready(self) || gyp_segment_ensure_registered(self))
        return NULL;
    uint64_t blocked;
    self->busy++;
    Py_BEGIN_ALLOW_THREADS
    blocked = gy_wait_until_allowed(&self->shm, NULL);
    Py_END_ALLOW_THREADS
    self->busy--;
    return PyLong_FromUnsignedLongLong(blocked);
}

static PyMethodDef segment_methods[] = {
    {"job", (PyCFunction)(void (*)(void))segment_job, METH_VARARGS | METH_KEYWORDS, job_doc},
    {"begin", (PyCFunction)(void (*)(void))segment_begin, METH_VARARGS | METH_KEYWORDS, begin_doc},
    {"end", (PyCFunction)segment_end, METH_O, end_doc},
    {"status", (PyCFunction)segment_status, METH_NOARGS, status_doc},
    {"status_json", (PyCFunction)segment_status_json, METH_NOARGS, status_json_doc},
    {"launch_allowed", (PyCFunction)segment_launch_allowed, METH_O, launch_allowed_doc},
    {"register", (PyCFunction)(void (*)(void))segment_register, METH_VARARGS | METH_KEYWORDS, register_doc},
    {"reap", (PyCFunction)segment_reap, METH_NOARGS, reap_doc},
    {"close", (PyCFunction)segment_close, METH_NOARGS, close_doc},
    {"__enter__", (PyCFunction)segment_enter, METH_NOARGS, "Returns the Segment; leaving the block closes it."},
    {"__exit__", (PyCFunction)segment_exit, METH_VARARGS, "Closes the Segment."},
    {"_status_slots", (PyCFunction)segment_status_slots, METH_NOARGS, status_slots_doc},
    {"_mark_inflight", (PyCFunction)segment_mark_inflight, METH_NOARGS, mark_inflight_doc},
    {"_ack_drain", (PyCFunction)(void (*)(void))segment_ack_drain, METH_VARARGS | METH_KEYWORDS, ack_drain_doc},
    {"_wait_launch_allowed", (PyCFunction)segment_wait_launch_allowed, METH_NOARGS, wait_launch_allowed_doc},
    {NULL, NULL, 0, NULL},
};

/* ---- attributes --------------------------------------------------------------------------------- */

static PyObject *get_name(SegmentObject *self, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(self->shm.name);
}

static PyObject *get_closed(SegmentObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(!self->open);
}

static bool registered_here(SegmentObject *self)
{
    return self->open && self->shm.slot >= 0 && self->owner_pid == gy_self_pid();
}

static PyObject *get_registered(SegmentObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(registered_here(self));
}

static PyObject *get_priority(SegmentObject *self, void *closure)
{
    (void)closure;
    if (!registered_here(self))
        Py_RETURN_NONE;
    return PyLong_FromLong(gy_my_slot(&self->shm)->priority);
}

static PyObject *get_removed(SegmentObject *self, void *closure)
{
    (void)closure;
    dev_t dev;
    ino_t ino;
    int present = gy_segment_identity(self->shm.name, &dev, &ino);
    return PyBool_FromLong(gy_segment_removed(&self->shm) || present == 0 ||
                           (present == 1 && (dev != self->dev || ino != self->ino)));
}

static PyObject *get_drain_timeout_ms(SegmentObject *self, void *closure)
{
    (void)closure;
    if (gyp_segment_ready(self))
        return NULL;
    return PyFloat_FromDouble((double)self->shm.seg->drain_timeout_ns / 1e6);
}

static PyGetSetDef segment_getset[] = {
    {"name", (getter)get_name, NULL, "The full segment name, '/gpuyield-<uid>-<tag>'.", NULL},
    {"closed", (getter)get_closed, NULL, "True after close().", NULL},
    {"registered", (getter)get_registered, NULL, "True once this process is registered in the segment.", NULL},
    {"priority", (getter)get_priority, NULL, "The priority this process registered at, or None.", NULL},
    {"removed", (getter)get_removed, NULL,
     "True when the segment's name no longer leads to the segment this handle maps (removed, or removed\n"
     "and created anew): begin() then raises gpuyield.Error(ENOENT).",
     NULL},
    {"drain_timeout_ms", (getter)get_drain_timeout_ms, NULL, "The segment's bound on a begin's drain wait.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(segment_doc,
             "A process's handle on a gpuyield segment; get one from gpuyield.connect() or\n"
             "gpuyield.create(). Usable as a context manager (closes on exit). Not for use across\n"
             "fork(): a child gets a fresh, unregistered view of the same segment.");

PyTypeObject gyp_SegmentType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gpuyield.Segment",
    .tp_basicsize = sizeof(SegmentObject),
    .tp_dealloc = (destructor)segment_dealloc,
    .tp_repr = (reprfunc)segment_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = segment_doc,
    .tp_traverse = (traverseproc)segment_traverse,
    .tp_clear = (inquiry)segment_clear,
    .tp_methods = segment_methods,
    .tp_getset = segment_getset,
};
