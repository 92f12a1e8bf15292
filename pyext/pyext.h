/* Shared declarations of the gpuyield._gpuyield extension: the exception classes, the Segment
 * and Job types, and the helpers their files call across. The extension is a thin layer over
 * the controller library (controller/gpuyield.h); it adds no protocol of its own. */
#ifndef GY_PYEXT_H
#define GY_PYEXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>
#include <sys/types.h>

#include "gpuyield.h"
#include "self_pid.h"

/* gpuyield.Error (OSError): every controller or OS failure, errno set where one fits.
 * gpuyield.ArgumentError (Error, ValueError): a bad value (priority, name, timeout). */
extern PyObject *gyp_Error;
extern PyObject *gyp_ArgumentError;

extern PyTypeObject gyp_SegmentType;
extern PyTypeObject gyp_JobType;

typedef struct SegmentObject {
    PyObject_HEAD
    gy_shm shm;
    bool open;
    pid_t owner_pid; /* the process that owns the registration; a forked child starts afresh */
    dev_t dev;       /* identity of the shm object at connect time: tells removal or replacement */
    ino_t ino;
    uint64_t name_checked_ns; /* when a begin last looked the name up (gy_now_ns; 0: never) */
    int busy;        /* calls running with the GIL released: close() must not unmap under them */
    int registering; /* a thread registers with the GIL released: others wait for it */
    PyObject *begun[GY_LEVELS]; /* per level, a list of the Jobs begun by begin(), ended LIFO */
    /* The device slot of each CUDA ordinal of this process, plus one (0: not resolved yet). A
     * begin on the current context, or on an int ordinal, looks it up here instead of asking the
     * driver for the UUID and the segment for its slot under the mutex each time (about 60 us a
     * job on an H100 under MPS, 2026-11-24). A GPU's UUID and slot never change while the segment
     * lives. */
#define GYP_ORDINAL_CACHE 64
    int ordinal_slots[GYP_ORDINAL_CACHE];
    struct SegmentObject *open_prev, *open_next; /* the open handles, freed at a normal exit */
} SegmentObject;

typedef struct {
    PyObject_HEAD
    SegmentObject *segment;
    gy_job job;
    int priority;
    int device;      /* the device slot it gates, or GY_DEVICE_ALL (job_device.c) */
    pid_t owner_pid; /* the process that began it */
    bool waited;     /* the drain wait has finished (drained or timed out) */
    bool entering;   /* a thread is counting it in (GIL released): others get EBUSY */
} JobObject;

/* seg.job()/begin()'s device argument (NULL or None: the current context's GPU, else every GPU)
 * -> a device slot of the segment, or GY_DEVICE_ALL. -1 with an exception set. */
int gyp_resolve_device(SegmentObject *seg, PyObject *device, int *slot);

/* Raise Error (or ArgumentError for EINVAL) with this errno and message; returns NULL. */
PyObject *gyp_raise(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Raise from a controller error. */
PyObject *gyp_raise_err(const gy_err *err);

/* A priority argument: an int (not a bool) in 0..GY_LEVELS-1. Returns 0, or -1 with an
 * exception set. `what` names the argument in the message. */
int gyp_parse_priority(PyObject *obj, const char *what, int *out);

/* Wrap an open gy_shm (ownership moves to the new object; closed on failure). */
PyObject *gyp_segment_new(gy_shm *shm);
/* Open, and owned by this process (a forked child drops the parent's registration and jobs).
 * Returns 0, or -1 with an exception set. */
int gyp_segment_ready(SegmentObject *seg);
/* Raise Error(ENOENT) when the segment's name no longer leads to the object we mapped. */
int gyp_segment_check_present(SegmentObject *seg);
/* Register lazily at $GPUYIELD_PRIORITY (default 0). */
int gyp_segment_ensure_registered(SegmentObject *seg);

/* A new, not yet begun Job of this segment. */
/* device: a device slot, GY_DEVICE_ALL, or GYP_DEVICE_CURRENT (resolved when the job begins). */
#define GYP_DEVICE_CURRENT (-2)
JobObject *gyp_job_new(SegmentObject *seg, int priority, int device);
/* Count the job in; with wait, also wait for the drain (counted out again if interrupted). */
int gyp_job_begin(JobObject *job, bool wait);
/* Count the job out. */
int gyp_job_end(JobObject *job);

#endif
