"""Output folders that are either complete or absent.

Each variant is recorded into a hidden sibling ``OUT/<workload>/.<variant>.tmp-<pid>-<rand>``
and renamed to ``OUT/<workload>/<variant>`` only once its traces and metadata are
written. Any exception, Ctrl-C included, removes the temporary folder, so a reader (or
TensorBoard) never sees half a recording. A folder being replaced (``--force``) is first
renamed aside, then removed once the new one is in place.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

from traceprobe.errors import OutputError


def exists_message(out: Path) -> str:
    return f"Output folder already exists, will not overwrite without --force: {out}"


def check_out(out: Path, force: bool) -> None:
    """Refuse, before any work, an output that is not a folder or that has content."""
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out} exists and is not a folder; give --out a folder name")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise OutputError(exists_message(out))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"Cannot create output folder {out}: {e.strerror}") from None
    if not os.access(out, os.W_OK):
        raise OutputError(f"Cannot write into output folder {out}; choose another --out")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale(parent: Path, name: str) -> None:
    """Remove temp/old folders of ``name`` left by a process that was killed (SIGKILL)."""
    for kind in ("tmp", "old"):
        for p in parent.glob(f".{name}.{kind}-*"):
            pid = p.name.rsplit("-", 2)[-2]
            if pid.isdigit() and not _pid_alive(int(pid)):
                shutil.rmtree(p, ignore_errors=True)


@contextlib.contextmanager
def staged(final: Path) -> Iterator[Path]:
    """Yield an empty temporary folder; on success it becomes ``final``."""
    parent = final.parent
    created_parent = not parent.exists()
    parent.mkdir(parents=True, exist_ok=True)
    remove_stale(parent, final.name)
    tag = f"{os.getpid()}-{secrets.token_hex(4)}"
    tmp = parent / f".{final.name}.tmp-{tag}"
    tmp.mkdir()
    try:
        yield tmp
        _swap_in(tmp, final, parent / f".{final.name}.old-{tag}")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if created_parent:
            with contextlib.suppress(OSError):
                parent.rmdir()  # only if empty
        raise


def _swap_in(tmp: Path, final: Path, old: Path) -> None:
    moved_aside = False
    if final.exists():
        os.rename(final, old)
        moved_aside = True
    try:
        os.rename(tmp, final)
    except BaseException:
        if moved_aside:
            os.rename(old, final)
        raise
    if moved_aside:
        shutil.rmtree(old, ignore_errors=True)
