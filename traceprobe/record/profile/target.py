"""The user's script or module, run in this process exactly as ``python`` would run it.

:func:`resolve` checks, before anything runs, that the target is there and is Python
(a :class:`~traceprobe.errors.UsageError` with one line otherwise). :func:`run` executes
it as ``__main__`` with ``sys.argv`` and ``sys.path[0]`` set as ``python SCRIPT ARGS``
(or ``python -m MODULE ARGS``) sets them, and turns the way it ended into the exit
status ``python`` would have returned:

    returned / sys.exit(0)  -> 0          sys.exit(n) -> n      sys.exit("msg") -> 1
    uncaught exception      -> 1 (traceback printed as python prints it)
    Ctrl-C (SIGINT)         -> 130        SIGTERM     -> 143    (128 + signal)

Importing this module does not import torch.
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from traceprobe.errors import UsageError


class Terminated(BaseException):
    """Raised in the main thread when SIGTERM arrives (see :mod:`.session`)."""


@dataclass(frozen=True)
class Target:
    kind: str  # "script" | "module"
    name: str  # the path as given, or the module name
    args: tuple[str, ...]

    @property
    def label(self) -> str:
        return self.name if self.kind == "script" else f"-m {self.name}"

    @property
    def stem(self) -> str:
        """A run name: the script's file stem, or the module's last part."""
        return Path(self.name).stem if self.kind == "script" else self.name.rsplit(".", 1)[-1]

    def argv(self) -> list[str]:
        return [self.name, *self.args] if self.kind == "script" else ["-m", self.name, *self.args]


def resolve(script: str | None, module: str | None, args: tuple[str, ...]) -> Target:
    """Check the target; one-line UsageError when it is missing or not Python."""
    if module:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError) as e:
            raise UsageError(f"-m {module}: cannot be found ({e}); check the module name") from None
        if spec is None:
            raise UsageError(
                f"-m {module}: no such module on sys.path; run from the folder that holds it"
            )
        return Target("module", module, args)
    if not script:
        raise UsageError("no script given: traceprobe profile [OPTIONS] -- SCRIPT.py [ARGS]")
    p = Path(script)
    if not p.exists():
        raise UsageError(f"{script}: no such file; give the path to your training script")
    if p.is_dir():
        if (p / "__main__.py").is_file():
            return Target("script", script, args)
        raise UsageError(f"{script}: is a folder without __main__.py; give a .py script")
    try:
        source = p.read_bytes()
        compile(source, str(p), "exec")
    except SyntaxError as e:
        raise UsageError(
            f"{script}: not a Python script (line {e.lineno}: {e.msg}); "
            "give the .py file python would run"
        ) from None
    except (ValueError, OSError) as e:  # NUL bytes (a binary), unreadable
        raise UsageError(f"{script}: cannot be read as Python ({e}); give a .py script") from None
    return Target("script", script, args)


@dataclass
class Ended:
    """How the script ended: its exit status, and the exception that ended it, if any."""

    status: int
    error: BaseException | None = None
    how: str = "returned"  # returned | exit | exception | SIGINT | SIGTERM


def run(target: Target) -> Ended:
    """Run ``target`` as ``__main__``; nothing is printed (see :func:`report`)."""
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    try:
        sys.argv = [target.name, *target.args]  # for -m, runpy puts the module's file first
        if target.kind == "script":
            _set_path0(os.path.dirname(os.path.abspath(target.name)))
            runpy.run_path(target.name, run_name="__main__")
        else:
            _set_path0(os.getcwd())
            runpy.run_module(target.name, run_name="__main__", alter_sys=True)
        return Ended(0)
    except SystemExit as e:
        return Ended(exit_status(e.code), None, "exit")
    except KeyboardInterrupt as e:
        return Ended(130, e, "SIGINT")
    except Terminated as e:
        return Ended(143, e, "SIGTERM")
    except BaseException as e:  # noqa: BLE001 - what python does: print it, exit 1
        return Ended(1, e, "exception")
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0


def import_error_line(target: Target, e: BaseException) -> str | None:
    """One line for a script that died of an ImportError (None for other errors)."""
    if not isinstance(e, ImportError):
        return None
    tb = _script_frames(e.__traceback__)
    where = f" (line {tb.tb_lineno})" if tb is not None else ""
    return (
        f"{target.label}: fails on import{where}: {type(e).__name__}: {e}; "
        "install what it imports in this environment, or fix the import"
    )


def failed_at(target: Target, e: BaseException | None) -> str | None:
    """Where the script failed: ``train.py:42 in load_batch`` (the innermost frame in the
    target's own file, else the innermost of all), plus what was raised; None without an
    error (or for Ctrl-C and SIGTERM, which stop a script anywhere)."""
    if e is None or isinstance(e, (KeyboardInterrupt, Terminated, SystemExit)):
        return None
    frames = traceback.extract_tb(_script_frames(e.__traceback__))
    if not frames:
        return f"{type(e).__name__}: {e}"
    own = os.path.abspath(target.name) if target.kind == "script" else None
    mine = [f for f in frames if own is not None and os.path.abspath(f.filename) == own]
    f = (mine or frames)[-1]
    deeper = "" if f is frames[-1] else f" (raised in {Path(frames[-1].filename).name}:" \
        f"{frames[-1].lineno} in {frames[-1].name})"
    return f"{type(e).__name__}: {e} at {Path(f.filename).name}:{f.lineno} in {f.name}{deeper}"


def print_traceback(e: BaseException) -> None:
    """The traceback as ``python script.py`` prints it: without traceprobe's and runpy's frames."""
    if isinstance(e, Terminated):
        return
    traceback.print_exception(type(e), e, _script_frames(e.__traceback__))


def _script_frames(tb: TracebackType | None) -> TracebackType | None:
    skip = (os.path.dirname(__file__), os.path.dirname(runpy.__file__ or ""), "<frozen runpy>")
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(skip):
        tb = tb.tb_next
    return tb


def _set_path0(folder: str) -> None:
    if sys.path:
        sys.path[0] = folder
    else:
        sys.path.append(folder)


def exit_status(code: object) -> int:
    """``sys.exit(code)`` -> the process's exit status, as the interpreter computes it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1
