"""Torch's own log lines off the console, into a log file beside the traces.

While the profiler starts and stops, torch's C++ side (Kineto and the profiler handler) writes
lines such as ``STAGE:... Completed Stage: Warm Up`` and ``USDT:...
SyncActivityProfilerHandler.cpp:52] profiler_start`` straight to file descriptors 1 and 2,
which Python's ``sys.stdout``/``sys.stderr`` cannot catch. :func:`to_log` points those two
descriptors at a file for the length of one call (``prof.step()``, entering and leaving the
profiler), so they land in ``<variant>/torch.log`` and traceprobe's own output (the progress
bar, the summary lines) stays on the console, written between those calls.

    with quietly(torch.profiler.profile(...), log) as prof:
        for _ in steps:
            step()
            with to_log(log):
                prof.step()
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

LOG_NAME = "torch.log"


def _flush_c_stdio() -> None:
    """Flush C's stdio buffers (printf) so nothing buffered leaks out after the switch back."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to ask (not on Linux/macOS)
        pass


@contextmanager
def to_log(path: Path) -> Iterator[None]:
    """File descriptors 1 and 2 appended to ``path`` inside the block, then restored."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    try:
        saved = (os.dup(1), os.dup(2))
    except OSError:  # no descriptor 1 or 2 to redirect (closed): nothing can reach a console
        yield
        return
    try:
        with open(path, "ab") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            try:
                yield
            finally:
                _flush_c_stdio()
                for stream in (sys.stdout, sys.stderr):
                    if stream is not None:
                        stream.flush()
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


@contextmanager
def quietly(manager: AbstractContextManager[T], path: Path) -> Iterator[T]:
    """Enter and leave ``manager`` (a profiler) under :func:`to_log`; its body runs as usual."""
    with to_log(path):
        value = manager.__enter__()
    try:
        yield value
    except BaseException:
        with to_log(path):
            if not manager.__exit__(*sys.exc_info()):
                raise
    else:
        with to_log(path):
            manager.__exit__(None, None, None)


def drop_if_empty(path: Path) -> None:
    """Remove the log when torch wrote nothing into it."""
    if path.exists() and path.stat().st_size == 0:
        path.unlink()
