"""Torch's own log lines off the console, into a log file beside the traces.

While it profiles, torch's C++ side writes lines such as ``STAGE:... Completed Stage: Warm Up``
(Kineto), ``USDT:... SyncActivityProfilerHandler.cpp:52] profiler_start`` and ``[W...
CPUAllocator.cpp:245] Memory block of unknown size was allocated before the profiling started``
straight to file descriptors 1 and 2, which Python's ``sys.stdout``/``sys.stderr`` cannot
catch. :func:`to_log` points those two descriptors at ``<variant>/torch.log`` for the profiled
steps; the progress bar keeps writing to the console through :func:`console`, a stream on a
copy of descriptor 2 taken before, and traceprobe's own lines are printed outside the block::

    with console() as out, tqdm(file=out) as bar:      # the bar: on the console
        with to_log(variant / "torch.log"):            # torch's lines: in the log
            with torch.profiler.profile(...) as prof:
                ...; prof.step(); bar.update()
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

LOG_NAME = "torch.log"


def _flush_all() -> None:
    """Python's and C's buffered output, written out before the descriptors change."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    try:
        ctypes.CDLL(None).fflush(None)  # printf's buffers
    except (OSError, AttributeError):  # no C library to ask (not on Linux/macOS)
        pass


@contextmanager
def to_log(path: Path) -> Iterator[None]:
    """File descriptors 1 and 2 appended to ``path`` inside the block, then restored."""
    _flush_all()
    try:
        saved = (os.dup(1), os.dup(2))
    except OSError:  # no descriptor 1 or 2 (closed): nothing can reach a console anyway
        yield
        return
    try:
        with open(path, "ab") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            try:
                yield
            finally:
                _flush_all()
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


@contextmanager
def console() -> Iterator[TextIO]:
    """The console's stderr, still there while :func:`to_log` holds descriptor 2.

    ``sys.stderr`` itself where it is not a real descriptor (a test runner's buffer, which
    :func:`to_log` does not touch).
    """
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        yield sys.stderr
        return
    sys.stderr.flush()
    stream = os.fdopen(os.dup(fd), "w", buffering=1, encoding=sys.stderr.encoding or "utf-8",
                       errors="replace")
    try:
        yield stream
    finally:
        stream.close()


def drop_if_empty(path: Path) -> None:
    """Remove the log when torch wrote nothing into it."""
    if path.exists() and path.stat().st_size == 0:
        path.unlink()
