"""The public loading API: paths in, :class:`~traceprobe.timeline.Timeline` out.

    load(path) -> Timeline                     one trace file
    load_many(paths, jobs=None, progress=False) -> list[Timeline]
                                               files, directories, or a mix
    start(paths, jobs=None) -> Loading         the same, begun in worker processes
                                               while the caller does other work
    find_traces(path) -> list[Path]            what a path expands to

A directory is searched recursively for the TensorBoard profiler layout
(``<worker>.<id>.pt.trace.json[.gz]``, possibly under run folders); when it has
none of those, every ``*.json`` / ``*.json.gz`` in it counts (one file per
rank). Files come back in natural order (``rank-2`` before ``rank-10``), so
the result does not depend on the file system. Each file gives one Timeline.

The work is :func:`traceprobe.reader.read_events` (bytes, gzip, JSON, in
batches) feeding :func:`traceprobe.kineto.collect` (numpy columns), then
:func:`traceprobe.frames.timeline` (pandas frames). Importing this module does
not import pandas: worker processes forked from it decode without it.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traceprobe.errors import TraceError, TraceprobeError
from traceprobe.kineto import Columns, collect
from traceprobe.reader import read_events

if TYPE_CHECKING:
    from traceprobe.timeline import Timeline

PathLike = str | os.PathLike[str]

TENSORBOARD_PATTERNS = ("*.pt.trace.json", "*.pt.trace.json.gz")
TRACE_PATTERNS = ("*.json", "*.json.gz")
MAX_PARTS = 8  # workers that decode one file together (each gunzips all of it)


def load(path: PathLike) -> Timeline:
    """Load one trace file (``.json`` or gzip, whatever its name), in this process.

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
    return _timeline(_collect(p))


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
    jobs = min(_cores(), len(files)) if jobs is None else jobs
    with Loading(files, max(1, min(jobs, len(files)))) as loading:
        return loading.result(progress=progress)


def start(paths: PathLike | Iterable[PathLike], jobs: int | None = None) -> Loading:
    """Start loading ``paths`` in worker processes and return at once.

    For a caller with work of its own before it needs the timelines: the CLI
    imports the analysis stack (pandas, about 0.4 s) while the workers decode.
    Unlike :func:`load_many`, ``jobs`` (default: the usable cores) may exceed
    the number of files: each file is then decoded by ``jobs // files`` workers
    at once (:mod:`traceprobe.split`). ``jobs=1`` loads in this process, in
    ``result()``. Use it as a context manager so that the workers stop if the
    caller fails::

        with loader.start(paths) as loading:
            ...                                  # runs while the files decode
            timelines = loading.result(progress=True)
    """
    files = _expand(paths)
    return Loading(files, max(1, _cores() if jobs is None else jobs))


class Loading:
    """Traces being loaded (see :func:`start`); ``result()`` gives their Timelines.

    Workers only decode (:func:`traceprobe.kineto.collect`: numpy and msgspec)
    and send back flat arrays, which pickle far faster than frames of Python
    strings; the frames are assembled here, in file order. With ``jobs`` > 1
    there is one worker per file, or ``jobs // files`` per file (at most
    ``MAX_PARTS``) when there are more jobs than files.
    """

    def __init__(self, files: list[Path], jobs: int) -> None:
        self.files = files
        self._pool: Any = None
        self._pending: list[Any] = []
        if jobs > 1:
            from concurrent.futures import ProcessPoolExecutor

            parts = max(1, min(jobs // len(files), MAX_PARTS))
            self._pool = pool = ProcessPoolExecutor(max_workers=min(jobs, len(files) * parts))
            for f in files:
                if parts == 1:
                    self._pending.append([pool.submit(_collect_in_worker, str(f))])
                else:
                    self._pending.append(
                        [pool.submit(_part_in_worker, str(f), i, parts) for i in range(parts)]
                    )

    def result(self, progress: bool = False) -> list[Timeline]:
        """The Timelines, in file order; the first failure raises (and stops the rest)."""
        bar = _progress(len(self.files)) if progress else None
        try:
            out = []
            for i, f in enumerate(self.files):
                cols = _collect(f) if self._pool is None else self._received(i, f)
                out.append(_timeline(cols))
                del cols
                if bar is not None:
                    bar.update(1)
            return out
        finally:
            if bar is not None:
                bar.close()
            self.close()

    def _received(self, i: int, f: Path) -> Columns:
        done = [fut.result() for fut in self._pending[i]]
        self._pending[i] = None  # the arrays will live in the frames only
        if len(done) == 1:
            if isinstance(done[0], tuple):  # a TraceError, sent back as plain fields
                raise TraceError(*done[0])
            cols: Columns = done[0]
            return cols
        from traceprobe.split import Unsplittable, merge

        if any(part is None for part in done):
            return _collect(f)  # a part failed: load it here, for the one true error or result
        try:
            return merge(done)
        except Unsplittable:
            return _collect(f)

    def close(self) -> None:
        """Stop the workers (files not yet started are not loaded)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> Loading:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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


def _collect(path: PathLike) -> Columns:
    return collect(read_events(path), str(path))


def _timeline(cols: Columns) -> Timeline:
    from traceprobe.frames import timeline  # pandas: only once the columns are there

    return timeline(cols)


def _collect_in_worker(path: str) -> Columns | tuple[str, str, str]:
    try:
        return _collect(path)
    except TraceError as e:  # TraceError's signature does not survive pickling
        return (e.path, e.problem, e.fix)
    except TraceprobeError as e:  # pragma: no cover - collect raises only TraceError
        return (path, e.message, "")


def _part_in_worker(path: str, part: int, parts: int) -> Columns | None:
    from traceprobe.split import collect_part

    try:
        return collect_part(path, part, parts)
    except Exception:  # any doubt: the parent loads the file itself and raises what it finds
        return None


def _cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def _progress(total: int):  # type: ignore[no-untyped-def]
    from tqdm import tqdm

    return tqdm(total=total, file=sys.stderr, unit="trace", desc="loading")
