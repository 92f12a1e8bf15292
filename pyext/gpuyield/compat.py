"""Compatibility layer for scripts written for the original experiment's ``libgeek.so``.

Those scripts did::

    lib.setMem(1, suffix.encode()); lib.waitForEmptyGPU()
    ... run the high-priority inference ...
    lib.setMem(0, suffix.encode())

Here the same calls map onto a gpuyield segment whose experiment tag is ``"compat" + suffix``
(suffix ``"3"`` -> tag ``compat3`` -> segment ``/gpuyield-<uid>-compat3``). A suffix may be a
str, bytes (ASCII) or an int; the resulting tag must be a valid tag (1..40 characters from
[A-Za-z0-9._-]). A high-priority job of the old two-level world is a priority-1 job.
"""

from __future__ import annotations

import errno

from . import _gpuyield

COMPAT_PRIORITY = _gpuyield.COMPAT_PRIORITY  # the mapping itself is C's: controller/compat_tag.c

_segments = {}  # tag -> Segment opened (or created) by this process
_pending = None  # the job begun by the last setMem(1), whose drain waitForEmptyGPU() waits for


def compat_tag(suffix: str | bytes | int) -> str:
    """The experiment tag that a libgeek ``suffix`` stands for: ``"compat" + suffix``."""
    if isinstance(suffix, bytes):
        try:
            suffix = suffix.decode("ascii")
        except UnicodeDecodeError:
            raise _gpuyield.ArgumentError(errno.EINVAL, "suffix %r is not ASCII: use characters from [A-Za-z0-9._-]" % (suffix,)) from None
    elif isinstance(suffix, int) and not isinstance(suffix, bool):
        suffix = str(suffix)
    elif not isinstance(suffix, str):
        raise TypeError("suffix must be a str, bytes or int, not %s" % type(suffix).__name__)
    if "\0" in suffix:
        raise _gpuyield.ArgumentError(errno.EINVAL, "suffix %r holds a NUL character: use characters from [A-Za-z0-9._-]" % (suffix,))
    return _gpuyield.compat_tag(suffix)  # ArgumentError with the C library's message if invalid


def _segment(suffix: str | bytes | int) -> _gpuyield.Segment:
    tag = compat_tag(suffix)
    seg = _segments.get(tag)
    if seg is not None and not seg.closed and seg.removed:
        seg.close()  # removed (and perhaps created anew) by someone else: reconnect
    if seg is None or seg.closed:
        seg = _gpuyield.connect(tag)
        _segments[tag] = seg
    return seg


def create_shared_mem_and_locks(suffix: str | bytes | int) -> None:
    """Create the segment for ``suffix`` (tag ``"compat" + suffix``).

    Raises gpuyield.Error (errno EEXIST) when it exists already."""
    tag = compat_tag(suffix)
    old = _segments.pop(tag, None)
    if old is not None:
        old.close()
    _segments[tag] = _gpuyield.create(tag)


def setMem(value: int, suffix: str | bytes | int) -> None:
    """``setMem(1, suffix)``: a priority-1 job begins on segment ``"compat" + suffix``: it is
    counted in (lower-priority launches stop) without waiting; call waitForEmptyGPU() to wait for
    the drain. ``setMem(0, suffix)``: that job ends. Jobs nest: two setMem(1) need two setMem(0).
    Raises gpuyield.ArgumentError for a value other than 0 or 1, or setMem(0) without setMem(1)."""
    global _pending
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("setMem value must be the int 1 (a job begins) or 0 (it ends), not %s" % type(value).__name__)
    if value not in (0, 1):
        raise _gpuyield.ArgumentError(errno.EINVAL, "setMem value %d is invalid: use 1 (a high-priority job begins) or 0 (it ends)" % value)
    seg = _segment(suffix)
    if value == 1:
        _pending = seg.begin(COMPAT_PRIORITY, wait=False)
    else:
        seg.end(COMPAT_PRIORITY)
        if _pending is not None and not _pending.active:
            _pending = None


def waitForEmptyGPU() -> None:
    """Wait until lower-priority processes have drained their GPU work for the job begun by the
    last setMem(1) (or until the segment's drain timeout). Returns at once when no such job is in
    progress. The GIL is released while waiting; Ctrl-C raises KeyboardInterrupt."""
    if _pending is not None and _pending.active:
        _pending.wait()


def remove_shared_mem_and_locks(suffix: str | bytes | int) -> None:
    """Close this process's handle on segment ``"compat" + suffix`` and remove the segment.

    Raises gpuyield.Error (errno ENOENT) when there is no such segment."""
    global _pending
    tag = compat_tag(suffix)
    seg = _segments.pop(tag, None)
    if seg is not None:
        seg.close()
    if _pending is not None and not _pending.active:
        _pending = None
    _gpuyield.remove(tag)
