"""The stages joined: paths in, :class:`~traceprobe.timeline.Timeline` out, here or in workers.

    load(path) -> Timeline                     one trace file (or an fsspec URL of one)
    load_many(paths, jobs=None, progress=False) -> list[Timeline]
                                               files, directories, or a mix
    start(paths, jobs=None) -> Loading         the same, begun in worker processes
                                               while the caller does other work
    from_document(doc) / from_events(events)   a Timeline from Python objects (tests, notebooks)

Each file gives one Timeline: :func:`.read.read_events` (bytes, gzip, JSON, in batches)
feeding :func:`.columns.collect` (numpy columns), then :func:`.frames.timeline` (pandas
frames). Importing this module does not import pandas: worker processes forked from it
decode without it. :func:`from_document` and :func:`from_events` encode Python objects to
JSON and take the same path as a file; pass ``decimal.Decimal`` timestamps to keep sub-µs
digits exact. A path may be an fsspec URL (``s3://bucket/job/``, :mod:`traceprobe.urls`);
``storage_options`` go to its file system, in this process and in the workers, which open
the URL themselves.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from traceprobe.errors import TraceError, TraceprobeError
from traceprobe.load.columns import collect
from traceprobe.load.folders import PathLike, expand, find_traces
from traceprobe.load.read import EventStream, read_events
from traceprobe.load.schema import Columns
from traceprobe.urls import is_url

if TYPE_CHECKING:
    from traceprobe.timeline import Timeline

_ENCODER = msgspec.json.Encoder(decimal_format="number")
MAX_PARTS = 8  # workers that decode one file together (each gunzips all of it)


def load(path: PathLike, storage_options: Mapping[str, Any] | None = None) -> Timeline:
    """Load one trace file (``.json`` or gzip, whatever its name), in this process.

    A directory (or a URL's prefix) that holds exactly one trace is accepted too.
    """
    p: Path | str = str(path) if is_url(path) else Path(path)
    if isinstance(p, str) or p.is_dir():
        found = find_traces(p, storage_options)
        if len(found) > 1:
            raise TraceError(
                p,
                f"holds {len(found)} traces, load() reads one",
                "use load_many() (or pass one file)",
            )
        p = found[0]
    return _timeline(_collect(p, storage_options))


def load_many(
    paths: PathLike | Iterable[PathLike],
    jobs: int | None = None,
    progress: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> list[Timeline]:
    """Load every trace that ``paths`` names, one Timeline per file, in order.

    Directories expand with :func:`find_traces`; a file named twice loads once.
    Several files load in parallel processes (``jobs`` defaults to
    ``min(cpu_count, files)``; ``jobs=1`` or a single file loads here).
    ``progress=True`` shows a tqdm bar on stderr.
    """
    files = expand(paths, storage_options)
    jobs = min(_cores(), len(files)) if jobs is None else jobs
    with Loading(files, max(1, min(jobs, len(files))), storage_options) as loading:
        return loading.result(progress=progress)


def start(
    paths: PathLike | Iterable[PathLike],
    jobs: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Loading:
    """Start loading ``paths`` in worker processes and return at once.

    For a caller with work of its own before it needs the timelines: the CLI
    imports the analysis stack (pandas, about 0.4 s) while the workers decode.
    ``jobs`` defaults to one worker per file, up to the usable cores; a single
    file then loads in this process, in ``result()`` (``jobs=1`` too). A ``jobs``
    above the number of files has each file decoded by ``jobs // files`` workers at
    once (:mod:`traceprobe.split`): on the 98 MB benchmark trace on 2 cores that was
    no faster (2.8 s against 2.6 s, median of 5) and held 1.5x the memory (330 MB
    against 220 MB in all processes), so it is only done when asked for. Use it as a
    context manager so that the workers stop if the caller fails::

        with loader.start(paths) as loading:
            ...                                  # runs while the files decode
            timelines = loading.result(progress=True)
    """
    files = expand(paths, storage_options)
    return Loading(files, max(1, min(_cores(), len(files)) if jobs is None else jobs),
                   storage_options)


class Loading:
    """Traces being loaded (see :func:`start`); ``result()`` gives their Timelines.

    Workers only decode (:func:`traceprobe.kineto.collect`: numpy and msgspec)
    and send back flat arrays, which pickle far faster than frames of Python
    strings; the frames are assembled here, in file order. With ``jobs`` > 1
    there is one worker per file, or ``jobs // files`` per file (at most
    ``MAX_PARTS``) when there are more jobs than files (never for URLs: each part would
    fetch the whole object).
    """

    def __init__(
        self,
        files: Sequence[Path | str],
        jobs: int,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.files = list(files)
        self.storage_options = storage_options
        self.fallbacks = 0  # files split between workers that were then loaded sequentially
        self._pool: Any = None
        self._pending: list[Any] = []
        if jobs > 1:
            from concurrent.futures import ProcessPoolExecutor

            parts = max(1, min(jobs // len(files), MAX_PARTS))
            if any(is_url(f) for f in files):
                parts = 1
            self._pool = pool = ProcessPoolExecutor(max_workers=min(jobs, len(files) * parts))
            for f in files:
                if parts == 1:
                    self._pending.append(
                        [pool.submit(_collect_in_worker, str(f), storage_options)]
                    )
                else:
                    self._pending.append(
                        [pool.submit(_part_in_worker, str(f), i, parts) for i in range(parts)]
                    )

    def result(
        self, progress: bool = False, errors: list[TraceError] | None = None
    ) -> list[Timeline]:
        """The Timelines, in file order. The first failure raises (and stops the rest),
        unless ``errors`` is a list: then a file that cannot be read adds its
        :class:`TraceError` there and is left out (``loaded`` names the files kept)."""
        bar = _progress(len(self.files)) if progress else None
        self.loaded: list[Path | str] = []
        try:
            out = []
            for i, f in enumerate(self.files):
                try:
                    cols = (_collect(f, self.storage_options) if self._pool is None
                            else self._received(i, f))
                except TraceError as e:
                    if errors is None:
                        raise
                    errors.append(e)
                    continue
                out.append(_timeline(cols))
                self.loaded.append(f)
                del cols
                if bar is not None:
                    bar.update(1)
            return out
        finally:
            if bar is not None:
                bar.close()
            self.close()

    def _received(self, i: int, f: Path | str) -> Columns:
        done = [fut.result() for fut in self._pending[i]]
        self._pending[i] = None  # the arrays will live in the frames only
        if len(done) == 1:
            if isinstance(done[0], tuple):  # a TraceError, sent back as plain fields
                raise TraceError(*done[0])
            cols: Columns = done[0]
            return cols
        from traceprobe.load.split import Unsplittable, merge

        why = next((part for part in done if isinstance(part, str)), None)
        if why is None:
            try:
                cols = merge(done)
            except Unsplittable as e:
                why = str(e)
            else:
                cols.notes["parallel"] = {"parts": len(done), "merged": True}
                return cols
        # the one expected failure (see split.Unsplittable): load it here, for the one
        # canonical result or error, and say so in meta.extra["parallel"]
        self.fallbacks += 1
        cols = _collect(f, self.storage_options)
        cols.notes["parallel"] = {"parts": len(done), "merged": False, "fallback": why}
        return cols

    def close(self) -> None:
        """Stop the workers (files not yet started are not loaded)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> Loading:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _collect(path: PathLike, storage_options: Mapping[str, Any] | None = None) -> Columns:
    return collect(read_events(path, storage_options), str(path))


def _timeline(cols: Columns) -> Timeline:
    from traceprobe.load.frames import timeline  # pandas: only once the columns are there

    return timeline(cols)


def _collect_in_worker(
    path: str, storage_options: Mapping[str, Any] | None = None
) -> Columns | tuple[str, str, str]:
    try:
        return _collect(path, storage_options)
    except TraceError as e:  # TraceError's signature does not survive pickling
        return (e.path, e.problem, e.fix)
    except TraceprobeError as e:  # pragma: no cover - collect raises only TraceError
        return (path, e.message, "")


def _part_in_worker(path: str, part: int, parts: int) -> Columns | str:
    """One part's columns, or why the split cannot give the sequential result
    (:class:`~traceprobe.load.split.Unsplittable`: the parent then loads the file
    itself). Anything else is a bug and propagates."""
    from traceprobe.load.split import Unsplittable, collect_part

    try:
        return collect_part(path, part, parts)
    except Unsplittable as e:
        return str(e) or "unsplittable"


def _cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def _progress(total: int):  # type: ignore[no-untyped-def]
    from tqdm import tqdm

    return tqdm(total=total, file=sys.stderr, unit="trace", desc="loading")


def build(stream: EventStream, source: str) -> Timeline:
    """Turn a stream of decoded events into a Timeline (frames as in :mod:`traceprobe.timeline`)."""
    from traceprobe.load.frames import timeline

    return timeline(collect(stream, source))


def from_document(doc: Mapping[str, Any] | list[Any], source: str = "<memory>") -> Timeline:
    """A Timeline from a trace given as Python objects (``{"traceEvents": [...]}`` or a list).

    Encodes to JSON and decodes it like a file, so there is one loading path.
    """
    try:
        data = _ENCODER.encode(doc)
    except (TypeError, msgspec.EncodeError) as e:
        raise TraceError(
            source,
            f"cannot encode the document as JSON ({e})",
            "pass only dicts, lists, str, int, float and Decimal",
        ) from None
    return build(EventStream([data], source), source)


def from_events(
    events: Iterable[Mapping[str, Any]], source: str = "<memory>", **top: Any
) -> Timeline:
    """A Timeline from a list of event dicts; ``top`` adds top-level keys
    (``distributedInfo=...``, ``deviceProperties=...``)."""
    return from_document({**top, "traceEvents": list(events)}, source)
