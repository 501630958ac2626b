"""The public loading API: paths in, :class:`~traceprobe.timeline.Timeline` out.

    load(path) -> Timeline                     one trace file
    load_many(paths, jobs=None, progress=False) -> list[Timeline]
                                               files, directories, or a mix
    find_traces(path) -> list[Path]            what a path expands to

A directory is searched recursively for the TensorBoard profiler layout
(``<worker>.<id>.pt.trace.json[.gz]``, possibly under run folders); when it has
none of those, every ``*.json`` / ``*.json.gz`` in it counts (one file per
rank). Files come back in natural order (``rank-2`` before ``rank-10``), so
the result does not depend on the file system. Each file gives one Timeline.

The work is :func:`traceprobe.reader.read_events` (bytes, gzip, JSON, in
batches) feeding :func:`traceprobe.kineto.build` (columns, then frames).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from traceprobe.errors import TraceError, TraceprobeError
from traceprobe.kineto import build
from traceprobe.reader import read_events
from traceprobe.timeline import Timeline

PathLike = str | os.PathLike[str]

TENSORBOARD_PATTERNS = ("*.pt.trace.json", "*.pt.trace.json.gz")
TRACE_PATTERNS = ("*.json", "*.json.gz")


def load(path: PathLike) -> Timeline:
    """Load one trace file (``.json`` or gzip, whatever its name).

    A directory that holds exactly one trace is accepted too.
    """
    p = Path(path)
    if p.is_dir():
        found = find_traces(p)
        if len(found) > 1:
            raise TraceError(
                p,
                f"holds {len(found)} traces, load() reads one",
                "use load_many() (or pass one file)",
            )
        p = found[0]
    return build(read_events(p), str(p))


def load_many(
    paths: PathLike | Iterable[PathLike], jobs: int | None = None, progress: bool = False
) -> list[Timeline]:
    """Load every trace that ``paths`` names, one Timeline per file, in order.

    Directories expand with :func:`find_traces`; a file named twice loads once.
    Several files load in parallel processes (``jobs`` defaults to
    ``min(cpu_count, files)``; ``jobs=1`` or a single file loads here).
    ``progress=True`` shows a tqdm bar on stderr.
    """
    files = _expand(paths)
    if jobs is None:
        jobs = min(os.cpu_count() or 1, len(files))
    jobs = max(1, min(jobs, len(files)))
    bar = _progress(len(files)) if progress else None
    try:
        if jobs == 1:
            out = []
            for f in files:
                out.append(load(f))
                if bar is not None:
                    bar.update(1)
            return out
        pool = ProcessPoolExecutor(max_workers=jobs)
        try:
            results: list[Timeline] = []
            for r in pool.map(_load_in_worker, [str(f) for f in files]):
                if isinstance(r, tuple):  # a TraceError, sent back as plain fields
                    raise TraceError(*r)
                results.append(r)
                if bar is not None:
                    bar.update(1)
            return results
        finally:
            pool.shutdown(wait=True, cancel_futures=True)  # a failure stops the rest
    finally:
        if bar is not None:
            bar.close()


def find_traces(path: PathLike) -> list[Path]:
    """The trace files a path names: itself if a file, else those under a directory."""
    p = Path(path)
    if p.is_file():
        return [p]
    if not p.exists():
        raise TraceError(p, "no such file or directory", "check the path")
    if not p.is_dir():
        raise TraceError(p, "is neither a file nor a directory", "pass a trace file")
    found = _glob(p, TENSORBOARD_PATTERNS) or _glob(p, TRACE_PATTERNS)
    if not found:
        raise TraceError(
            p,
            "no trace files (*.pt.trace.json[.gz], *.json, *.json.gz) in this directory",
            "point at the folder torch.profiler.tensorboard_trace_handler "
            "wrote, or at a trace file",
        )
    return found


def _glob(root: Path, patterns: tuple[str, ...]) -> list[Path]:
    hits = {q for pat in patterns for q in root.rglob(pat) if q.is_file()}
    return sorted(hits, key=_natural_key)


def _natural_key(p: Path) -> list[tuple[int, int | str]]:
    return [(0, int(t)) if t.isdigit() else (1, t) for t in re.split(r"(\d+)", p.as_posix()) if t]


def _expand(paths: PathLike | Iterable[PathLike]) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[Path] = []
    seen: set[Path] = set()
    for item in paths:
        for f in find_traces(item):
            key = f.resolve()
            if key not in seen:
                seen.add(key)
                files.append(f)
    if not files:
        raise TraceError("<no paths>", "no trace paths given", "name at least one trace file")
    return files


def _load_in_worker(path: str) -> Timeline | tuple[str, str, str]:
    try:
        return load(path)
    except TraceError as e:  # TraceError's signature does not survive pickling
        return (e.path, e.problem, e.fix)
    except TraceprobeError as e:  # pragma: no cover - load raises only TraceError
        return (path, e.message, "")


def _progress(total: int):  # type: ignore[no-untyped-def]
    from tqdm import tqdm

    return tqdm(total=total, file=sys.stderr, unit="trace", desc="loading")
