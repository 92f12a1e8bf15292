/* gpuyield.Job: one job at one priority; a context manager, or what begin() hands back. Its drain
 * wait runs in slices with the GIL released, checking for signals between slices. */
#include "pyext.h"

#include "guarded.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* Between two slices the wait runs Python's signal handlers: this bounds how late Ctrl-C is
 * noticed, and costs one wake-up per slice only while a drain is actually pending. */
#define WAIT_SLICE_NS 50000000ull

JobObject *gyp_job_new(SegmentObject *seg, int priority, int device)
{
    JobObject *self = PyObject_GC_New(JobObject, &gyp_JobType);
    if (!self)
        return NULL;
    Py_INCREF(seg);
    self->segment = seg;
    memset(&self->job, 0, sizeof self->job);
    self->job.priority = priority;
    self->priority = priority;
    self->device = device;
    self->owner_pid = 0;
    self->waited = false;
    self->entering = false;
    PyObject_GC_Track(self);
    return self;
}

/* Count out after a failure, keeping the exception that caused it. */
static void end_keeping_exception(JobObject *self)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (gyp_job_end(self))
        PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

/* Wait for the drain of an entered job. On an exception from a signal handler (Ctrl-C), count
 * the job out first when count_out is set. */
static int wait_drained(JobObject *self, bool count_out)
{
    SegmentObject *seg = self->segment;
    enum gy_wait_result result;
    seg->busy++; /* also across the signal handlers: one must not close() under us */
    for (;;) {
        Py_BEGIN_ALLOW_THREADS
        result = gy_job_wait_drained(&seg->shm, &self->job, WAIT_SLICE_NS);
        Py_END_ALLOW_THREADS
        if (result != GY_WAIT_PENDING)
            break;
        if (PyErr_CheckSignals() < 0) {
            seg->busy--;
            if (count_out)
                end_keeping_exception(self);
            return -1;
        }
    }
    seg->busy--;
    self->waited = true;
    return 0;
}

int gyp_job_begin(JobObject *self, bool wait)
{
    SegmentObject *seg = self->segment;
    if (!seg) {
        gyp_raise(EBADF, "this job's Segment is gone");
        return -1;
    }
    if (self->entering || (self->job.active && self->owner_pid == gy_self_pid())) {
        gyp_raise(EBUSY, "this job (priority %d) is already in progress: make a new seg.job(%d) for a nested job",
                  self->priority, self->priority);
        return -1;
    }
    /* Entering from here: the registration and the device's slot may release the GIL, and another
     * thread entering this same Job meanwhile must get EBUSY, not a second count. */
    self->entering = true;
    int device = self->device;
    if (gyp_segment_ready(seg) || gyp_segment_check_present(seg) || gyp_segment_ensure_registered(seg) ||
        (device == GYP_DEVICE_CURRENT && gyp_resolve_device(seg, NULL, &device))) {
        self->entering = false;
        return -1;
    }
    gy_err err;
    gy_job entered;
    int rc;
    seg->busy++;
    Py_BEGIN_ALLOW_THREADS
    rc = gy_job_enter_on(&seg->shm, self->priority, device, 0, &entered, &err);
    Py_END_ALLOW_THREADS
    seg->busy--;
    self->entering = false;
    if (!rc)
        self->job = entered;
    if (rc) {
        gyp_raise_err(&err);
        return -1;
    }
    self->owner_pid = gy_self_pid();
    self->waited = false;
    return wait ? wait_drained(self, true) : 0;
}

int gyp_job_end(JobObject *self)
{
    SegmentObject *seg = self->segment;
    if (seg && !seg->open) {
        self->job.active = false; /* close() unregistered us, which counted the job out */
        return 0;
    }
    if (self->job.active && self->owner_pid != gy_self_pid()) {
        self->job.active = false;
        gyp_raise(ESRCH, "this job (priority %d) was begun by process %d before a fork: only that process can end it",
                  self->priority, (int)self->owner_pid);
        return -1;
    }
    if (!seg || !self->job.active) {
        gyp_raise(EINVAL, "this job (priority %d) is not in progress: it was never begun, or already ended",
                  self->priority);
        return -1;
    }
    gy_err err;
    int rc;
    seg->busy++;
    Py_BEGIN_ALLOW_THREADS
    rc = gy_job_exit(&seg->shm, &self->job, &err);
    Py_END_ALLOW_THREADS
    seg->busy--;
    if (rc) {
        gyp_raise_err(&err);
        return -1;
    }
    return 0;
}

/* ---- methods ------------------------------------------------------------------------------------ */

static PyObject *job_enter(JobObject *self, PyObject *unused)
{
    (void)unused;
    if (gyp_job_begin(self, true))
        return NULL;
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *job_exit(JobObject *self, PyObject *args)
{
    (void)args;
    if (gyp_job_end(self))
        return NULL;
    Py_RETURN_FALSE; /* never swallow the block's exception */
}

PyDoc_STRVAR(wait_doc,
             "wait($self, /)\n--\n\n"
             "Wait for the drain of a job begun with begin(priority, wait=False): until every\n"
             "lower-priority process drained or had nothing in flight, or the drain timeout passed.\n"
             "Returns at once when the wait already happened. The GIL is released; Ctrl-C raises\n"
             "KeyboardInterrupt and leaves the job in progress (end it yourself).");

static PyObject *job_wait(JobObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->segment || !self->job.active || self->owner_pid != gy_self_pid())
        return gyp_raise(EINVAL, "this job (priority %d) is not in progress in this process: begin it first",
                         self->priority);
    if (gyp_segment_ready(self->segment))
        return NULL;
    if (!self->waited && wait_drained(self, false))
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef job_methods[] = {
    {"__enter__", (PyCFunction)job_enter, METH_NOARGS,
     "Begin the job and wait for the drain; returns the job itself."},
    {"__exit__", (PyCFunction)job_exit, METH_VARARGS, "End the job; the block's exception, if any, goes on."},
    {"wait", (PyCFunction)job_wait, METH_NOARGS, wait_doc},
    {NULL, NULL, 0, NULL},
};

/* ---- attributes --------------------------------------------------------------------------------- */

static PyObject *get_priority(JobObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(self->priority);
}

static PyObject *get_wait_ns(JobObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLongLong(self->job.wait_ns);
}

static PyObject *get_drained(JobObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->job.drained);
}

static PyObject *get_timed_out(JobObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->job.timed_out);
}

static PyObject *get_corun(JobObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->job.corun);
}

static PyObject *get_guarded_arm(JobObject *self, void *closure)
{
    (void)closure;
    if (self->job.guard_arm < 0 || self->job.guard_arm >= GY_GUARD_ARM_COUNT)
        Py_RETURN_NONE;
    return PyUnicode_FromString(gy_guard_arm_name((enum gy_guard_arm)self->job.guard_arm));
}

static PyObject *get_guarded_depth_us(JobObject *self, void *closure)
{
    (void)closure;
    if (self->job.guard_arm < 0 || self->job.guard_arm >= GY_GUARD_ARM_COUNT)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLong(self->job.guard_depth_us);
}

static PyObject *get_guarded_lower_launches(JobObject *self, void *closure)
{
    (void)closure;
    if (self->job.guard_arm < 0 || self->job.guard_arm >= GY_GUARD_ARM_COUNT)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(self->job.guard_lower_launches);
}

static PyObject *get_active(JobObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->job.active && self->owner_pid == gy_self_pid() && self->segment && self->segment->open);
}

static PyGetSetDef job_getset[] = {
    {"priority", (getter)get_priority, NULL, "The job's priority (0..7, higher wins).", NULL},
    {"wait_ns", (getter)get_wait_ns, NULL,
     "Nanoseconds from counting the job in to the end of its drain wait (0 before the wait).", NULL},
    {"drained", (getter)get_drained, NULL,
     "True when every lower-priority process drained (or had nothing in flight) in time.", NULL},
    {"timed_out", (getter)get_timed_out, NULL,
     "True when the drain timeout passed first (the job ran anyway; the timeout is counted in status()).",
     NULL},
    {"corun", (getter)get_corun, NULL,
     "True when the segment's policy is corun (or partition under MPS): the begin closed the gate and returned "
     "at once, and the job ran beside the lower work already queued (and, under partition, beside what lower "
     "processes launch on their few SMs); drained and timed_out stay False.",
     NULL},
    {"guarded_arm", (getter)get_guarded_arm, NULL,
     "Under the guarded policy (with MPS), the arm this job got at its begin (\"stop\", \"partition:64\", ...): "
     "where lower launches go while it runs; None for a job that got none (another policy, no MPS, a job below "
     "the top registered priority).",
     NULL},
    {"guarded_depth_us", (getter)get_guarded_depth_us, NULL,
     "Under the guarded policy (with MPS), the queue depth in microseconds the lower processes' time:US bounds "
     "were raised to in the gap before this job (0: their own; only with --guard-depth); None where "
     "guarded_arm is None.",
     NULL},
    {"guarded_lower_launches", (getter)get_guarded_lower_launches, NULL,
     "Under the guarded policy (with MPS), the kernel and graph launches of the lower-priority processes "
     "so far, as the rule read them at this job's begin (the difference between two jobs' counts is what the "
     "rule charges to the first one's cycle); None where guarded_arm is None.",
     NULL},
    {"active", (getter)get_active, NULL, "True while the job is counted in.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject *job_repr(JobObject *self)
{
    const char *state = self->job.active ? "in progress" : "not in progress";
    const char *wait = !self->waited        ? ""
                       : self->job.corun    ? ", co-running"
                       : self->job.drained  ? ", drained"
                                            : ", timed out";
    return PyUnicode_FromFormat("<gpuyield.Job priority %d, %s%s, wait_ns=%llu>", self->priority, state, wait,
                                (unsigned long long)self->job.wait_ns);
}

static int job_traverse(JobObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->segment);
    return 0;
}

static int job_clear(JobObject *self)
{
    Py_CLEAR(self->segment);
    return 0;
}

static void job_dealloc(JobObject *self)
{
    /* A job still in progress here belongs to a Segment being torn down: its close (or this
     * process's exit and the reaper) counts it out. */
    PyObject_GC_UnTrack(self);
    job_clear(self);
    PyObject_GC_Del(self);
}

PyDoc_STRVAR(job_type_doc,
             "One job at one priority: what seg.job(priority) gives (a context manager) and what\n"
             "seg.begin(priority) returns. After the drain wait, wait_ns / drained / timed_out\n"
             "say what it cost.");

PyTypeObject gyp_JobType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gpuyield.Job",
    .tp_basicsize = sizeof(JobObject),
    .tp_dealloc = (destructor)job_dealloc,
    .tp_repr = (reprfunc)job_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = job_type_doc,
    .tp_traverse = (traverseproc)job_traverse,
    .tp_clear = (inquiry)job_clear,
    .tp_methods = job_methods,
    .tp_getset = job_getset,
};
