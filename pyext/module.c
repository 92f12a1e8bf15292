/* The module gpuyield._gpuyield: exception classes, argument helpers, and the module-level calls
 * connect / create / remove / segment_name. */
#include "compat_tag.h"
#include "pyext.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

PyObject *gyp_Error;
PyObject *gyp_ArgumentError;

PyObject *gyp_raise(int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    PyObject *type = code == EINVAL ? gyp_ArgumentError : gyp_Error;
    /* OSError(errno, strerror): str() gives "[Errno N] message", .errno and .strerror are set. */
    /* The message may quote user bytes (env values, names) cut at any byte: never fail on them. */
    PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
    PyObject *exc = text ? PyObject_CallFunction(type, "iN", code, text) : NULL;
    if (exc) {
        PyErr_SetObject(type, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

PyObject *gyp_raise_err(const gy_err *err)
{
    return gyp_raise(err->code ? err->code : EIO, "%s", err->msg[0] ? err->msg : "gpuyield: unknown error");
}

int gyp_parse_priority(PyObject *obj, const char *what, int *out)
{
    if (!PyLong_Check(obj) || PyBool_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int in 0..%d (higher wins), not %.80s", what, GY_LEVELS - 1,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    int overflow = 0;
    long value = PyLong_AsLongAndOverflow(obj, &overflow);
    if (value == -1 && PyErr_Occurred())
        return -1;
    if (overflow || value < 0 || value >= GY_LEVELS) {
        if (overflow)
            gyp_raise(EINVAL, "%s is out of range (a huge int): use 0..%d (higher wins)", what, GY_LEVELS - 1);
        else
            gyp_raise(EINVAL, "%s %ld is out of range: use 0..%d (higher wins)", what, value, GY_LEVELS - 1);
        return -1;
    }
    *out = (int)value;
    return 0;
}

/* A segment name argument: None (the default: $GPUYIELD_SHM, else "default") or a str without
 * NUL characters. Sets *out to NULL for None. */
static int parse_name(PyObject *obj, const char **out)
{
    if (obj == NULL || obj == Py_None) {
        *out = NULL;
        return 0;
    }
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "segment name must be a str (an experiment tag, or /gpuyield-<uid>-<tag>) or None, not %.80s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(obj, &len);
    if (!s)
        return -1;
    if ((size_t)len != strlen(s)) {
        gyp_raise(EINVAL, "segment name contains a NUL character: use 1..40 characters from [A-Za-z0-9._-]");
        return -1;
    }
    *out = s;
    return 0;
}

PyDoc_STRVAR(connect_doc,
             "connect(name=None)\n--\n\n"
             "Open an existing gpuyield segment and return a Segment.\n\n"
             "name: an experiment tag (1..40 characters from [A-Za-z0-9._-]) or a full segment name\n"
             "'/gpuyield-<uid>-<tag>'; None means $GPUYIELD_SHM (set by run_exp), else 'default'.\n"
             "The process is not registered yet: it registers on its first begin, at priority\n"
             "$GPUYIELD_PRIORITY (default 0).\n\n"
             "Raises gpuyield.Error (errno ENOENT when no such segment exists, EACCES when it\n"
             "belongs to another user, EPROTO when it is corrupt or from another gpuyield version),\n"
             "gpuyield.ArgumentError for a malformed name, TypeError for a name that is not a str.");

static PyObject *connect_segment(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *keywords[] = {"name", NULL};
    PyObject *name_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:connect", keywords, &name_obj))
        return NULL;
    const char *name;
    if (parse_name(name_obj, &name))
        return NULL;
    gy_shm shm;
    gy_err err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gy_open(name, &shm, &err);
    Py_END_ALLOW_THREADS
    if (rc)
        return gyp_raise_err(&err);
    return gyp_segment_new(&shm);
}

/* drain_timeout_ms: None (the segment default), or a positive number of milliseconds. */
static int parse_timeout_ms(PyObject *obj, uint64_t *out_ns)
{
    *out_ns = 0;
    if (obj == NULL || obj == Py_None)
        return 0;
    if (PyBool_Check(obj) || !(PyLong_Check(obj) || PyFloat_Check(obj))) {
        PyErr_Format(PyExc_TypeError, "drain_timeout_ms must be a number of milliseconds or None, not %.80s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    double ms = PyFloat_AsDouble(obj);
    if (ms == -1.0 && PyErr_Occurred())
        return -1;
    /* Bounded at a day: a larger drain bound is a mistake (the wait is also interruptible). */
    if (!(ms > 0) || ms > 86400000.0) {
        gyp_raise(EINVAL, "drain_timeout_ms=%g is out of range: give milliseconds in (0, 86400000], or None "
                          "for the default (%llu ms)",
                  ms, (unsigned long long)(GY_DEFAULT_DRAIN_TIMEOUT_NS / 1000000ull));
        return -1;
    }
    uint64_t ns = (uint64_t)(ms * 1e6);
    *out_ns = ns ? ns : 1;
    return 0;
}

PyDoc_STRVAR(create_doc,
             "create(name=None, drain_timeout_ms=None)\n--\n\n"
             "Create a new segment (mode 0600, fails if it exists) and return a Segment on it.\n\n"
             "Use it to run gpuyield without run_exp. name: as for connect(). drain_timeout_ms:\n"
             "how long a begin waits at most for lower-priority work to drain (None: 2000 ms).\n"
             "The segment outlives the Segment object: remove it with gpuyield.remove(name).\n\n"
             "Raises gpuyield.Error (errno EEXIST when it already exists), gpuyield.ArgumentError\n"
             "for a malformed name or timeout, TypeError for arguments of the wrong type.");

static PyObject *create_segment(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *keywords[] = {"name", "drain_timeout_ms", NULL};
    PyObject *name_obj = Py_None, *timeout_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:create", keywords, &name_obj, &timeout_obj))
        return NULL;
    const char *name;
    uint64_t timeout_ns;
    if (parse_name(name_obj, &name) || parse_timeout_ms(timeout_obj, &timeout_ns))
        return NULL;
    gy_shm shm;
    gy_err err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gy_create(name, timeout_ns, &shm, &err);
    Py_END_ALLOW_THREADS
    if (rc)
        return gyp_raise_err(&err);
    return gyp_segment_new(&shm);
}

PyDoc_STRVAR(remove_doc,
             "remove(name)\n--\n\n"
             "Remove (unlink) the segment `name` (a tag or a full segment name).\n\n"
             "Processes that have it open keep their mapping, but nobody can connect to it any\n"
             "more, and their begin() raises gpuyield.Error(ENOENT). Raises gpuyield.Error\n"
             "(errno ENOENT) when there is no such segment.");

static PyObject *remove_segment(PyObject *self, PyObject *arg)
{
    (void)self;
    if (arg == Py_None) {
        PyErr_SetString(PyExc_TypeError, "remove() needs the segment's name (a str): it never guesses which one");
        return NULL;
    }
    const char *name;
    if (parse_name(arg, &name))
        return NULL;
    gy_err err;
    if (gy_remove(name, &err))
        return gyp_raise_err(&err);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(segment_name_doc,
             "segment_name(name=None)\n--\n\n"
             "The full segment name '/gpuyield-<uid>-<tag>' (its file is /dev/shm/gpuyield-<uid>-<tag>)\n"
             "that a tag, a full name or None (the default) stands for. Touches nothing.");

static PyObject *segment_name(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *keywords[] = {"name", NULL};
    PyObject *name_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:segment_name", keywords, &name_obj))
        return NULL;
    const char *name;
    if (parse_name(name_obj, &name))
        return NULL;
    char full[GY_NAME_MAX];
    gy_err err;
    if (gy_segment_name(name, full, &err))
        return gyp_raise_err(&err);
    return PyUnicode_FromString(full);
}

PyDoc_STRVAR(compat_tag_doc,
             "compat_tag(suffix, /)\n--\n\n"
             "The tag a libgeek suffix (a str) stands for: \"" GY_COMPAT_TAG_PREFIX "\" + suffix. Raises\n"
             "gpuyield.ArgumentError when that is no valid tag. gpuyield.compat_tag takes bytes and ints too.");

static PyObject *compat_tag(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *suffix = PyUnicode_AsUTF8(arg);
    if (!suffix)
        return NULL;
    char tag[GY_NAME_MAX];
    gy_err err;
    if (gy_compat_tag(suffix, tag, &err))
        return gyp_raise_err(&err);
    return PyUnicode_FromString(tag);
}

static PyMethodDef module_methods[] = {
    {"connect", (PyCFunction)(void (*)(void))connect_segment, METH_VARARGS | METH_KEYWORDS, connect_doc},
    {"create", (PyCFunction)(void (*)(void))create_segment, METH_VARARGS | METH_KEYWORDS, create_doc},
    {"remove", remove_segment, METH_O, remove_doc},
    {"segment_name", (PyCFunction)(void (*)(void))segment_name, METH_VARARGS | METH_KEYWORDS, segment_name_doc},
    {"compat_tag", compat_tag, METH_O, compat_tag_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(module_doc, "C core of gpuyield; import the package `gpuyield` instead.");

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "gpuyield._gpuyield", module_doc, -1, module_methods, NULL, NULL, NULL, NULL,
};

PyDoc_STRVAR(error_doc,
             "A gpuyield call failed. An OSError: .errno says what kind (ENOENT: no such segment,\n"
             "EEXIST: it exists already, EACCES: another user's, EPROTO: corrupt or another version,\n"
             "ESRCH: our registration was reaped, EBUSY: busy in another thread, EBADF: closed,\n"
             "ENOSPC: process table full, EINVAL: see ArgumentError); .strerror says what, where and\n"
             "how to fix it.");
PyDoc_STRVAR(argument_error_doc,
             "A bad argument value (a priority out of 0..7, a malformed segment name, a bad timeout,\n"
             "an end() without a begin()): both a gpuyield.Error (errno EINVAL) and a ValueError.");

static int add_object(PyObject *module, const char *name, PyObject *obj)
{
    /* PyModule_AddObject steals the reference only on success. */
    if (!obj || PyModule_AddObject(module, name, obj) < 0) {
        Py_XDECREF(obj);
        return -1;
    }
    return 0;
}

/* gpuyield.POLICIES: the policy names of the table (policies.h), in the order of their values. */
static PyObject *policy_names(void)
{
    PyObject *names = PyTuple_New(GY_POLICY_COUNT);
    for (int i = 0; names && i < GY_POLICY_COUNT; i++) {
        PyObject *name = PyUnicode_FromString(gy_policy_name((enum gy_policy)i));
        if (!name) {
            Py_CLEAR(names);
            break;
        }
        PyTuple_SET_ITEM(names, i, name);
    }
    return names;
}

PyMODINIT_FUNC PyInit__gpuyield(void)
{
    if (PyType_Ready(&gyp_SegmentType) < 0 || PyType_Ready(&gyp_JobType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (!module)
        return NULL;
    gyp_Error = PyErr_NewExceptionWithDoc("gpuyield.Error", error_doc, PyExc_OSError, NULL);
    if (!gyp_Error)
        goto fail;
    PyObject *bases = PyTuple_Pack(2, gyp_Error, PyExc_ValueError);
    if (!bases)
        goto fail;
    gyp_ArgumentError = PyErr_NewExceptionWithDoc("gpuyield.ArgumentError", argument_error_doc, bases, NULL);
    Py_DECREF(bases);
    if (!gyp_ArgumentError)
        goto fail;
    Py_INCREF(gyp_Error);
    Py_INCREF(gyp_ArgumentError);
    Py_INCREF(&gyp_SegmentType);
    Py_INCREF(&gyp_JobType);
    if (add_object(module, "Error", gyp_Error) || add_object(module, "ArgumentError", gyp_ArgumentError) ||
        add_object(module, "Segment", (PyObject *)&gyp_SegmentType) ||
        add_object(module, "Job", (PyObject *)&gyp_JobType) ||
        add_object(module, "POLICIES", policy_names()) ||
        PyModule_AddIntConstant(module, "LEVELS", GY_LEVELS) < 0 ||
        PyModule_AddIntConstant(module, "COMPAT_PRIORITY", GY_COMPAT_PRIORITY) < 0 ||
        PyModule_AddIntConstant(module, "MAX_PROCS", GY_MAX_PROCS) < 0 ||
        PyModule_AddIntConstant(module, "DEFAULT_DRAIN_TIMEOUT_MS",
                                (long)(GY_DEFAULT_DRAIN_TIMEOUT_NS / 1000000ull)) < 0 ||
        PyModule_AddStringConstant(module, "__version__", gy_version()) < 0)
        goto fail;
    return module;
fail:
    Py_DECREF(module);
    return NULL;
}
