"""Finding trace files: what a path (a file, a folder of ranks or runs) expands to.

A directory is searched recursively for every ``*.json`` / ``*.json.gz`` file:
the TensorBoard profiler layout (``<worker>.<id>.pt.trace.json[.gz]``, possibly
under run folders) and other names alike (one file per rank), so that no trace is
silently left out; a file there that is not a trace is reported as such by the
loader. Hidden files and folders (``.name``) and traceprobe's own metadata
(``traceprobe.meta.json`` of older recordings) are not traces. Files come back in
natural order (``rank-2`` before ``rank-10``), so the result does not depend on the
file system.

A URL (``s3://bucket/job/``, see :mod:`traceprobe.urls`) follows the same rules: an object
is itself, a prefix is a folder (every trace object under it, by the same names), and a
URL with ``*``, ``?`` or ``[`` is a glob whose matches count as if each were named (a
matching prefix is searched as a folder). URLs stay strings (``Path`` would fold ``//``).
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, overload

from traceprobe.errors import TraceError
from traceprobe.urls import has_glob, is_url

PathLike = str | os.PathLike[str]

TENSORBOARD_PATTERNS = ("*.pt.trace.json", "*.pt.trace.json.gz")
TRACE_PATTERNS = ("*.json", "*.json.gz")


def os_error(p: Path, e: OSError) -> TraceError | None:
    """The one-line error for a path the OS refused in a way that names its fix (a loop of
    symbolic links, a name too long, a link to a missing file); None for any other error."""
    if e.errno == errno.ELOOP:
        return TraceError(p, "is a loop of symbolic links", "point at the trace file itself")
    if e.errno == errno.ENAMETOOLONG:
        return TraceError(
            p, "a name in the path is too long for the file system", "check the path"
        )
    if isinstance(e, FileNotFoundError) and p.is_symlink():
        return TraceError(p, "is a symbolic link to a missing file", "fix the link or its target")
    return None


@overload
def find_traces(
    path: os.PathLike[str], storage_options: Mapping[str, Any] | None = None
) -> list[Path]: ...


@overload
def find_traces(
    path: str, storage_options: Mapping[str, Any] | None = None
) -> list[Path] | list[str]: ...


def find_traces(
    path: PathLike, storage_options: Mapping[str, Any] | None = None
) -> list[Path] | list[str]:
    """The trace files a path names: itself if a file, else those under a directory.

    A URL gives URLs (strings; see the module docstring), read with ``storage_options``."""
    if is_url(path):
        return find_objects(str(path), storage_options)
    p = Path(path)
    try:
        os.stat(p)
    except OSError as e:
        known = os_error(p, e)
        if known is not None:
            raise known from None
        if isinstance(e, FileNotFoundError):
            raise TraceError(p, "no such file or directory", "check the path") from None
        raise TraceError(p, f"cannot read it ({e.strerror or e})", "check the path") from None
    if p.is_file():
        return [p]
    if not p.is_dir():
        raise TraceError(p, "is neither a file nor a directory", "pass a trace file")
    found = _glob(p, TRACE_PATTERNS)
    if not found:
        raise TraceError(
            p,
            "no trace files (*.pt.trace.json[.gz], *.json, *.json.gz) in this directory",
            "point at the folder torch.profiler.tensorboard_trace_handler "
            "wrote, or at a trace file",
        )
    return found


NOT_TRACES = frozenset({"traceprobe.meta.json"})  # record's metadata, before it was renamed


def _glob(root: Path, patterns: tuple[str, ...]) -> list[Path]:
    """Every file under ``root`` matching ``patterns`` (following links to folders, each
    folder once). A folder that cannot be listed is an error, not a silent gap."""
    import fnmatch

    hits: set[Path] = set()
    seen: set[tuple[int, int]] = set()
    refused: list[OSError] = []
    for top, dirs, names in os.walk(root, onerror=refused.append, followlinks=True):
        try:
            st = os.stat(top)
            key = (st.st_dev, st.st_ino)
        except OSError:
            key = (-1, len(seen))
        if key in seen:  # a link back up the tree: walked once
            dirs[:] = []
            continue
        seen.add(key)
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for n in names:
            if (not n.startswith(".") and n not in NOT_TRACES
                    and any(fnmatch.fnmatchcase(n, pat) for pat in patterns)):
                q = Path(top) / n
                if q.is_file():
                    hits.add(q)
    if refused:
        e = refused[0]
        where = e.filename or root
        raise TraceError(where, f"cannot read this folder inside {root} ({e.strerror or e}); "
                         "the traces in it would be left out",
                         "fix its permissions, or name the other trace files themselves")
    return sorted(hits, key=_natural_key)


def _natural_key(p: Path | str) -> list[tuple[int, int | str]]:
    text = p if isinstance(p, str) else p.as_posix()
    return [(0, int(t)) if t.isdigit() else (1, t) for t in re.split(r"(\d+)", text) if t]


def find_objects(url: str, storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """The trace objects a URL names: the object, those under a prefix, a glob's matches."""
    from traceprobe.urls import error, filesystem

    fs, path = filesystem(url, storage_options)
    try:
        if has_glob(url):
            hits = fs.glob(path, detail=True)
            found: set[str] = set()
            for name, info in hits.items():
                if info.get("type") == "directory":
                    found.update(_under(fs, name))
                else:
                    found.add(name)
            if not found:
                raise TraceError(url, "no objects match this pattern",
                                 "check the pattern (it is matched against object names)")
        else:
            if fs.info(path).get("type") != "directory":
                return [url]
            found = set(_under(fs, path))
            if not found:
                raise TraceError(
                    url,
                    "no trace objects (*.pt.trace.json[.gz], *.json, *.json.gz) under this prefix",
                    "point at the prefix the traces were uploaded to, or at one object",
                )
    except TraceError:
        raise
    except Exception as e:
        raise error(url, e) from None
    return sorted((fs.unstrip_protocol(name) for name in found), key=_natural_key)


def _under(fs: Any, root: str) -> list[str]:
    """The trace objects under a prefix, by the rules of :func:`_glob` for a folder."""
    root = root.rstrip("/")
    out = []
    for name in fs.find(root):
        rel = name[len(root):].lstrip("/").split("/")
        if (rel[-1].endswith((".json", ".json.gz")) and rel[-1] not in NOT_TRACES
                and not any(part.startswith(".") for part in rel)):
            out.append(name)
    return out


def expand(
    paths: PathLike | Iterable[PathLike], storage_options: Mapping[str, Any] | None = None
) -> list[Path | str]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[Path | str] = []
    seen: set[Path | str] = set()
    for item in paths:
        for f in find_traces(item, storage_options):
            key = f if isinstance(f, str) else f.resolve()
            if key not in seen:
                seen.add(key)
                files.append(f)
    if not files:
        raise TraceError("<no paths>", "no trace paths given", "name at least one trace file")
    return files
