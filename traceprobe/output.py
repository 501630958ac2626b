"""Writing results: atomically, never over something the user has, unless told to.

Every command writes through here::

    check_outputs(files, dirs, inputs, force=force)  # fail early, before any work:
                                             # exists/--force, writable, never an input
    write_text(path, text, force=force)      # "-" or None: stdout

(:func:`check_outputs` is :func:`check_target` / :func:`check_directory` and
:func:`check_not_input` for every output of one command; the CLI's output options
call it once.) A character device (``-o /dev/null``, a terminal) is written as a
stream, in place, without ``--force``: it is never renamed over or replaced.

A file is written to a temporary file in the same directory and moved into place
with ``os.replace``, so a reader (or a crash) never sees half a file. Without
``force`` an existing file is left alone and :class:`~traceprobe.errors.OutputError`
says so; the final move is then a hard link, which fails rather than replace a
file that appeared meanwhile. :func:`atomic_directory` does the same for a set of
files (``--csv DIR``).

An fsspec URL (``-o s3://bucket/report.json``) is written by :func:`write_url` (which
``check_target`` and ``write_text`` call for one): only to stores where an object appears
whole or not at all (``ATOMIC_PROTOCOLS``); a ``file://`` URL is the local path; any other
protocol is refused, before anything is loaded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from traceprobe.errors import OutputError
from traceprobe.urls import describe, is_url, protocol

STDOUT = "-"
PATH_MAX = 4096  # Linux's limit on a path given to a system call, NUL included


# control characters (C0 but tab and newline, DEL, C1) and bidirectional overrides: shown
# as \uXXXX, which is also a JSON escape of the same character (a JSON string stays valid)
_UNSAFE = [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0),
           *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_PRINTABLE = {c: f"\\u{c:04x}" for c in _UNSAFE}
_ONE_LINE = {**_PRINTABLE, 0x0A: "\\u000a", 0x09: " "}


def printable(text: str) -> str:
    """``text`` with control characters and escape sequences made visible (``\\u001b``):
    a name from a trace cannot clear the screen, set the window title or fake a line."""
    return text.translate(_PRINTABLE)


def one_line(text: str) -> str:
    """:func:`printable`, and a newline too (a message is one line, whatever a file name
    holds)."""
    return text.translate(_ONE_LINE)


def printable_data(obj: Any) -> Any:
    """A copy of a report (a Report's dataclass tree, or a report dict: lists, dicts,
    strings) with every string :func:`printable`: for a renderer that adds terminal colour
    codes of its own afterwards."""
    if isinstance(obj, str):
        return printable(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {}
        for f in dataclasses.fields(obj):
            if f.init and not f.metadata.get("internal"):
                v = getattr(obj, f.name)
                p = printable_data(v)
                if p is not v:
                    changes[f.name] = p
        return dataclasses.replace(obj, **changes) if changes else obj
    if isinstance(obj, Sequence) and not isinstance(obj, (list, tuple, bytes)):
        return [printable_data(v) for v in obj]  # a Report's steps (report.blocks)
    if isinstance(obj, dict):
        return {k: printable_data(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [printable_data(v) for v in obj]
    return obj


_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: str) -> str:
    """A CSV cell a spreadsheet shows as text: one starting with ``= + - @`` (or a tab or
    CR) gets a leading ``'`` (OWASP's advice), so a kernel name is never run as a formula;
    control characters are made visible as in :func:`printable`."""
    value = printable(value)
    return "'" + value if value.startswith(_FORMULA) else value


def is_stdout(path: str | os.PathLike[str] | None) -> bool:
    return path is None or str(path) == STDOUT


def exists_message(path: str | os.PathLike[str]) -> str:
    return f"File already exists, will not overwrite without --force: {path}"


def is_device(path: str | os.PathLike[str] | None) -> bool:
    """True for a character device (``/dev/null``, a terminal): written as a stream."""
    if is_stdout(path) or is_url(path):
        return False
    assert path is not None
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def check_outputs(
    files: Iterable[str | os.PathLike[str] | None],
    inputs: Iterable[str | os.PathLike[str]],
    *,
    directories: Mapping[str | os.PathLike[str], Sequence[str]] | None = None,
    force: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> None:
    """Every check of one command's outputs, before any work: each of ``files`` (None or
    ``-``: stdout) and each ``directory -> names`` can be written (:func:`check_target`,
    :func:`check_directory`) and none is one of ``inputs`` (:func:`check_not_input`)."""
    inputs = list(inputs)
    for f in files:
        check_target(f, force=force, storage_options=storage_options)
        check_not_input(f, inputs)
    for d, names in (directories or {}).items():
        check_directory(d, list(names), force=force)
        for name in names:
            check_not_input(Path(d) / name, inputs)


def check_target(
    path: str | os.PathLike[str] | None,
    *,
    force: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> None:
    """Raise OutputError now if writing ``path`` later would fail or overwrite.

    Commands call this before loading anything, so a refused output costs nothing.
    A character device is written in place as a stream: no ``--force`` needed.
    """
    if is_stdout(path):
        return
    assert path is not None
    if is_url(path):
        check_url(str(path), force=force, storage_options=storage_options)
        return
    p = Path(path)
    _check_path(p)
    if is_device(p):
        if not os.access(p, os.W_OK):
            raise OutputError(f"Cannot write {p}: the device is not writable")
        return
    if p.is_dir():
        raise OutputError(f"{p} is a directory; give a file name for the output")
    if p.exists() and not force:
        raise OutputError(exists_message(p))
    parent = p.parent
    if not parent.is_dir():
        raise OutputError(_missing_parent(p, parent))
    if not os.access(parent, os.W_OK):
        raise OutputError(f"Cannot write {p}: directory {parent} is not writable")


def check_not_input(
    path: str | os.PathLike[str] | None, inputs: Iterable[str | os.PathLike[str]]
) -> None:
    """Raise OutputError if ``path`` is one of ``inputs`` (or a folder holding one, for
    an output directory): the same file by name, through a symbolic link, or as a hard
    link. No command writes over what it reads, whatever ``--force`` says."""
    if is_stdout(path):
        return
    assert path is not None
    inputs = list(inputs)
    if is_url(path):  # a URL output can only be a URL input (by its text)
        _check_not_url_input(str(path), [item for item in inputs if is_url(item)])
        return
    inputs = [item for item in inputs if not is_url(item)]
    target = Path(path)
    try:
        st = target.stat()
    except OSError:
        st = None  # does not exist (yet): only a name can match
    real = os.path.realpath(target)
    for item in inputs:
        q = Path(item)
        same = os.path.realpath(q) == real
        if not same and st is not None:
            try:
                qs = q.stat()
                same = (qs.st_dev, qs.st_ino) == (st.st_dev, st.st_ino)
            except OSError:
                pass
        if same:
            raise OutputError(
                f"Will not write {target}: it is an input of this command ({q}); "
                "give another output path"
            )


def _check_path(p: Path) -> None:
    """A path the file system cannot hold at all: say so in one line."""
    if len(os.fsencode(str(p))) >= PATH_MAX or "\0" in str(p):
        raise OutputError(
            f"Cannot write {str(p)[:60]}...: the path is over {PATH_MAX - 1} bytes or holds "
            "a NUL; use a shorter path"
        )
    for part in p.parts:
        if len(os.fsencode(part)) > 255:
            raise OutputError(
                f"Cannot write {p}: the name {part[:40]}... is over 255 bytes; use a shorter name"
            )


def _missing_parent(p: Path, parent: Path) -> str:
    for up in (parent, *parent.parents):
        if up.exists():
            if not up.is_dir():
                return f"Cannot write {p}: {up} is a file, not a directory"
            break
    return f"Cannot write {p}: directory {parent} does not exist; create it first"


def write_text(
    path: str | os.PathLike[str] | None,
    text: str,
    *,
    force: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    raw: bool = False,
) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically; ``-`` or None means stdout; an fsspec
    URL goes to :func:`write_url`. Control characters are made visible (:func:`printable`)
    unless ``raw`` (text whose names were made printable before the renderer added its own
    colour codes)."""
    if not raw:
        text = printable(text)
    if is_stdout(path):
        _write_stdout(text)
        return
    assert path is not None
    if is_url(path):
        write_url(str(path), text.encode("utf-8"), force=force, storage_options=storage_options)
        return
    write_bytes(path, text.encode("utf-8"), force=force)


def write_pieces(
    path: str | os.PathLike[str] | None,
    pieces: Iterable[bytes],
    *,
    force: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> None:
    """Write UTF-8 text given in ``pieces`` (each whole characters) as :func:`write_text`
    writes their concatenation, holding one piece at a time."""
    pieces = (printable(p.decode("utf-8")).encode("utf-8") for p in pieces)
    if is_stdout(path):
        for piece in pieces:
            _write_stdout(piece.decode("utf-8"))
        return
    assert path is not None
    if is_url(path):  # one upload of the whole text (the store's client buffers it anyway)
        write_url(str(path), b"".join(pieces), force=force, storage_options=storage_options)
        return
    write_bytes(path, pieces, force=force)


def write_bytes(
    path: str | os.PathLike[str], data: bytes | Iterable[bytes], *, force: bool = False
) -> None:
    """Write ``data`` (bytes, or pieces of it) to ``path`` atomically; refuse an existing
    file unless ``force``."""
    p = Path(path)
    check_target(p, force=force)
    if is_device(p):
        _write_device(p, data)
        return
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    except OSError as e:
        raise OutputError(f"Cannot write {p}: {e.strerror or e}") from e
    try:
        with os.fdopen(fd, "wb") as f:
            for piece in [data] if isinstance(data, (bytes, bytearray)) else data:
                f.write(piece)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        _move_into_place(Path(tmp), p, force=force)
    except OSError as e:
        raise OutputError(f"Cannot write {p}: {e.strerror or e}") from e
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _write_device(p: Path, data: bytes | Iterable[bytes]) -> None:
    """A character device: opened for writing as it is (never created, renamed or
    truncated into a file) and written as a stream."""
    try:
        fd = os.open(p, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
        try:
            if not stat.S_ISCHR(os.fstat(fd).st_mode):  # swapped for something else meanwhile
                raise OutputError(f"Cannot write {p}: it is no longer a device; run again")
            for piece in [data] if isinstance(data, (bytes, bytearray)) else data:
                view = memoryview(piece)
                while view:
                    view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    except OSError as e:
        raise OutputError(f"Cannot write {p}: {e.strerror or e}") from e


def _move_into_place(tmp: Path, dest: Path, *, force: bool) -> None:
    if force:
        os.replace(tmp, dest)
        return
    try:
        os.link(tmp, dest)  # fails with FileExistsError instead of replacing
    except FileExistsError:
        raise OutputError(exists_message(dest)) from None
    except OSError:  # a filesystem without hard links: check, then replace
        if dest.exists():
            raise OutputError(exists_message(dest)) from None
        os.replace(tmp, dest)


@contextlib.contextmanager
def atomic_directory(
    directory: str | os.PathLike[str], names: list[str], *, force: bool = False
) -> Iterator[Path]:
    """Yield a scratch directory; on success its files ``names`` land in ``directory``.

    A new ``directory`` is built aside and renamed into place in one step. Into an
    existing directory, every file is checked before any is written (so all or none
    are refused) and each is then moved in atomically. On error nothing is left.
    """
    d = Path(directory)
    check_directory(d, names, force=force)
    existing = d.is_dir()
    parent = d if existing else d.parent
    try:
        scratch = Path(tempfile.mkdtemp(prefix=f".{d.name}.", suffix=".tmp", dir=parent))
    except OSError as e:
        raise OutputError(f"Cannot write {d}: {e.strerror or e}") from e
    try:
        yield scratch
        missing = [n for n in names if not (scratch / n).is_file()]
        assert not missing, f"atomic_directory: {missing} were not written"
        if existing:
            for name in names:
                _move_into_place(scratch / name, d / name, force=force)
        else:
            os.chmod(scratch, 0o777 & ~_umask())
            try:
                os.rename(scratch, d)
            except OSError as e:  # created meanwhile
                raise OutputError(exists_message(d)) from e
    except OSError as e:
        raise OutputError(f"Cannot write {d}: {e.strerror or e}") from e
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def check_directory(
    directory: str | os.PathLike[str], names: list[str], *, force: bool = False
) -> None:
    """Raise OutputError now if writing ``names`` into ``directory`` would fail or overwrite."""
    d = Path(directory)
    _check_path(d)
    if d.exists() and not d.is_dir():
        raise OutputError(f"{d} exists and is not a directory; give a directory for the files")
    if d.is_dir():
        if not force:
            for name in names:
                if (d / name).exists():
                    raise OutputError(exists_message(d / name))
        parent = d
    else:
        parent = d.parent
        if not parent.is_dir():
            raise OutputError(_missing_parent(d, parent))
    if not os.access(parent, os.W_OK):
        raise OutputError(f"Cannot write {d}: directory {parent} is not writable")


def _write_stdout(text: str) -> None:
    out = sys.stdout
    try:
        try:
            out.write(text)
        except UnicodeEncodeError:  # a terminal that cannot show "µ": send UTF-8 bytes
            out.flush()
            out.buffer.write(text.encode("utf-8"))
        out.flush()
    except BrokenPipeError:  # the reader went away (`| head`): not an error
        _silence(out)
    except OSError as e:  # a full disk (`> /dev/full`), a closed terminal
        _silence(out)
        raise OutputError(f"Cannot write to standard output: {e.strerror or e}") from None


def _silence(out: Any) -> None:
    """Point ``out`` at /dev/null, so the interpreter's last flush fails quietly."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# --------------------------------------------------------------------------- fsspec URLs

# stores where an upload becomes visible whole, at once, or not at all (S3 and GCS objects,
# Azure blobs committed as one block list, fsspec's in-memory store)
ATOMIC_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "memory"})


def local_path(url: str) -> Path | None:
    """The local path of a plain ``file://`` URL (None for any other URL)."""
    if "::" in url or protocol(url) not in ("file", "local"):
        return None
    return Path(url.split("://", 1)[1])


def check_url(
    url: str, *, force: bool = False, storage_options: Mapping[str, Any] | None = None
) -> None:
    """Raise OutputError now if ``url`` cannot be written atomically, or would overwrite."""
    local = local_path(url)
    if local is not None:
        check_target(local, force=force)
        return
    proto = protocol(url)
    if "::" in url or proto not in ATOMIC_PROTOCOLS:
        raise OutputError(
            f"Will not write {url}: {proto}:// cannot be written atomically (a reader could "
            "see half a file); write a local file, or to an s3://, gs:// or az:// URL"
        )
    if url.endswith("/"):
        raise OutputError(f"{url} is a prefix (a folder); give an object name for the output")
    fs, path = _url_fs(url, storage_options)
    try:
        exists = fs.exists(path)
        is_dir = exists and fs.isdir(path)
    except Exception as e:
        raise _url_error(url, e) from None
    if is_dir:
        raise OutputError(f"{url} is a prefix (a folder); give an object name for the output")
    if exists and not force:
        raise OutputError(exists_message(url))


def write_url(
    url: str,
    data: bytes,
    *,
    force: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> None:
    """Write ``data`` to the object at ``url``: one upload, which the store makes visible
    only once it is complete (``check_url`` refuses stores that cannot). Without ``force``
    an existing object is refused (checked just before: a writer racing this one wins)."""
    local = local_path(url)
    if local is not None:
        write_bytes(local, data, force=force)
        return
    check_url(url, force=force, storage_options=storage_options)
    fs, path = _url_fs(url, storage_options)
    try:
        with fs.open(path, "wb") as f:
            f.write(data)
    except Exception as e:
        raise _url_error(url, e) from None


def _url_fs(url: str, storage_options: Mapping[str, Any] | None) -> tuple[Any, str]:
    try:
        import fsspec.core

        return fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    except Exception as e:  # fsspec or its back end missing, a bad option
        raise _url_error(url, e) from None


def _url_error(url: str, e: BaseException) -> OutputError:
    problem, fix = describe(url, e)
    problem = problem.replace("read this object", "write this object")
    fix = fix.replace("read this object", "write this object")
    return OutputError(f"Cannot write {url}: {problem}; {fix}")


def _check_not_url_input(path: str, inputs: Iterable[str | os.PathLike[str]]) -> None:
    for item in inputs:
        if str(item).rstrip("/") == path.rstrip("/"):
            raise OutputError(
                f"Will not write {path}: it is an input of this command ({item}); "
                "give another output path"
            )
