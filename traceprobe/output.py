"""Writing results: atomically, never over something the user has, unless told to.

Every command writes through here::

    check_target(path, force=force)          # fail early, before any work
    write_text(path, text, force=force)      # "-" or None: stdout

A file is written to a temporary file in the same directory and moved into place
with ``os.replace``, so a reader (or a crash) never sees half a file. Without
``force`` an existing file is left alone and :class:`~traceprobe.errors.OutputError`
says so; the final move is then a hard link, which fails rather than replace a
file that appeared meanwhile. :func:`atomic_directory` does the same for a set of
files (``--csv DIR``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from traceprobe.errors import OutputError

STDOUT = "-"


def is_stdout(path: str | os.PathLike[str] | None) -> bool:
    return path is None or str(path) == STDOUT


def exists_message(path: str | os.PathLike[str]) -> str:
    return f"File already exists, will not overwrite without --force: {path}"


def check_target(path: str | os.PathLike[str] | None, *, force: bool = False) -> None:
    """Raise OutputError now if writing ``path`` later would fail or overwrite.

    Commands call this before loading anything, so a refused output costs nothing.
    """
    if is_stdout(path):
        return
    assert path is not None
    p = Path(path)
    if p.is_dir():
        raise OutputError(f"{p} is a directory; give a file name for the output")
    if p.exists() and not force:
        raise OutputError(exists_message(p))
    parent = p.parent
    if not parent.is_dir():
        raise OutputError(f"Cannot write {p}: directory {parent} does not exist; create it first")
    if not os.access(parent, os.W_OK):
        raise OutputError(f"Cannot write {p}: directory {parent} is not writable")


def write_text(path: str | os.PathLike[str] | None, text: str, *, force: bool = False) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically; ``-`` or None means stdout."""
    if is_stdout(path):
        _write_stdout(text)
        return
    assert path is not None
    write_bytes(path, text.encode("utf-8"), force=force)


def write_bytes(path: str | os.PathLike[str], data: bytes, *, force: bool = False) -> None:
    """Write ``data`` to ``path`` atomically; refuse an existing file unless ``force``."""
    p = Path(path)
    check_target(p, force=force)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    except OSError as e:
        raise OutputError(f"Cannot write {p}: {e.strerror or e}") from e
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        _move_into_place(Path(tmp), p, force=force)
    except OSError as e:
        raise OutputError(f"Cannot write {p}: {e.strerror or e}") from e
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


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
            raise OutputError(
                f"Cannot write {d}: directory {parent} does not exist; create it first"
            )
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
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, out.fileno())  # so the interpreter's last flush fails quietly


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
