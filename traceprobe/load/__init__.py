"""Loading: trace files in, :class:`~traceprobe.timeline.Timeline` out.

The stages, in the order data flows (one module each):

    files       file -> bytes       plain or gzip, streamed; a gzip stream cut short is noted
    read        bytes -> events     msgspec decodes JSON in batches; a text cut short is salvaged
    timestamps                      exact µs text -> integer ns (never through float64)
    coerce                          loose JSON values (str/int/float/None) -> int64 columns
    schema                          the categories and the flat Columns both ends agree on
    columns     events -> columns   each batch into compact numpy columns (no pandas)
    frames      columns -> Timeline pandas frames and the trace's metadata
    split                           one large file decoded by several workers, merged back
    folders                         which files a path names (ranks, runs, TensorBoard layout)
    pipeline                        the stages joined, in this process or in worker processes

These functions import the stages when called, so ``import traceprobe`` stays light. Inside
the package, import a stage by its full name (``from traceprobe.load.read import ...``):
``traceprobe.load`` itself is the :func:`load` function at the top of the package.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from traceprobe.load.pipeline import Loading
    from traceprobe.timeline import Timeline

PathLike = str | os.PathLike[str]

__all__ = ["find_traces", "from_document", "from_events", "load", "load_many", "start"]


def load(path: PathLike, storage_options: Mapping[str, Any] | None = None) -> Timeline:
    """One trace file (``.json`` or gzip, whatever its name), or a folder holding one trace;
    or an fsspec URL of either (``s3://bucket/rank0.json.gz``), read with ``storage_options``."""
    from traceprobe.load.pipeline import load as _load

    return _load(path, storage_options)


def load_many(
    paths: PathLike | Iterable[PathLike],
    jobs: int | None = None,
    progress: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> list[Timeline]:
    """Every trace ``paths`` names (files, folders, URLs, prefixes, globs, a mix), one Timeline
    per file, in order; several files load in parallel processes (``jobs``); ``progress``
    shows a bar on stderr."""
    from traceprobe.load.pipeline import load_many as _load_many

    return _load_many(paths, jobs=jobs, progress=progress, storage_options=storage_options)


def start(
    paths: PathLike | Iterable[PathLike],
    jobs: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Loading:
    """Begin loading in worker processes and return at once (``.result()`` waits)."""
    from traceprobe.load.pipeline import start as _start

    return _start(paths, jobs=jobs, storage_options=storage_options)


def find_traces(
    path: PathLike, storage_options: Mapping[str, Any] | None = None
) -> list[Path] | list[str]:
    """The trace files a path names: itself if a file, else those found under a folder
    (for a URL: the object, the objects under a prefix, or a glob's matches, as URLs)."""
    from traceprobe.load.folders import find_traces as _find

    return _find(path, storage_options)


def from_document(doc: object, source: str = "<memory>") -> Timeline:
    """A Timeline from a trace given as Python objects (``{"traceEvents": [...]}`` or a list)."""
    from traceprobe.load.pipeline import from_document as _from_document

    return _from_document(doc, source)  # type: ignore[arg-type]


def from_events(events: Iterable[dict], source: str = "<memory>", **top: object) -> Timeline:
    """A Timeline from a list of event dicts; ``top`` adds top-level keys (``distributedInfo``)."""
    from traceprobe.load.pipeline import from_events as _from_events

    return _from_events(events, source, **top)
