"""The `traceprobe` command: a thin click group.

Each subcommand lives in its own module under ``traceprobe.cli`` and is imported
only when used, so ``traceprobe analyze`` never pays for torch or matplotlib.
Library errors (:class:`traceprobe.errors.TraceprobeError`) become a one-line
message on stderr and the error's exit code here, and nowhere else.
"""

from __future__ import annotations

import difflib
import gc
import importlib
import os
import signal
import sys
from typing import Any

import click

from traceprobe.errors import TraceprobeError
from traceprobe.output import one_line

INTERNAL_ERROR = 70  # a bug in traceprobe (EX_SOFTWARE); documented in README "Exit codes"

# name -> (module, attribute, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "analyze": ("traceprobe.cli.analyze", "analyze", "Measure overlap in profiler traces."),
    "record": ("traceprobe.cli.record", "record", "Run the experiments under torch.profiler."),
    "verify": ("traceprobe.cli.verify", "verify", "Verdicts on the recorded experiments' claims."),
    "ranks": ("traceprobe.cli.ranks", "ranks", "Summarise many ranks of one job."),
    "compare": ("traceprobe.cli.compare", "compare", "Two traces side by side."),
    "check": ("traceprobe.cli.check", "check", "Fail when a trace misses expectations (CI)."),
    "annotate": ("traceprobe.cli.annotate", "annotate", "Copy a trace with overlap/idle tracks."),
    "whatif": ("traceprobe.cli.whatif", "whatif", "Predict steps under what-if changes."),
    "profile": ("traceprobe.cli.profile", "profile", "Profile any training script, unmodified."),
}

# other spellings accepted for a command (not listed as commands of their own)
ALIASES: dict[str, str] = {"analyse": "analyze"}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        name = ALIASES.get(name, name)
        if name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[name]
        return getattr(importlib.import_module(module), attr)

    def resolve_command(  # type: ignore[override]
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and ALIASES.get(name, name) not in COMMANDS:
            close = difflib.get_close_matches(name, [*COMMANDS, *ALIASES], n=1, cutoff=0.5)
            hint = f" Did you mean '{ALIASES.get(close[0], close[0])}'?" if close else ""
            ctx.fail(f"No such command '{name}'.{hint}")
        return super().resolve_command(ctx, args)

    def main(self, *args: Any, standalone_mode: bool = True, **kw: Any) -> Any:  # type: ignore[override]
        """As click's, but a usage error is one ``traceprobe: error:`` line (click prints
        a block of usage, a hint and the error), with control characters made visible."""
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kw)  # type: ignore[call-overload]
        try:
            rv = super().main(*args, standalone_mode=False, **kw)  # type: ignore[call-overload]
        except click.exceptions.ClickException as e:
            click.echo(usage_line(e), err=True)
            sys.exit(e.exit_code)
        except click.exceptions.Abort:
            click.echo("traceprobe: aborted", err=True)
            sys.exit(130)
        sys.exit(rv if isinstance(rv, int) else 0)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        also = {c: a for a, c in ALIASES.items()}
        rows = [(f"{name}, {also[name]}" if name in also else name, COMMANDS[name][2])
                for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except TraceprobeError as e:
            click.echo(f"traceprobe: error: {one_line(str(e))}", err=True)
            ctx.exit(e.exit_code)
        except KeyboardInterrupt:
            click.echo("traceprobe: interrupted", err=True)
            ctx.exit(130)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as e:  # a bug: one line and its own exit code, never 1 (`check`)
            if os.environ.get("TRACEPROBE_DEBUG"):
                raise
            where = f" in {ctx.invoked_subcommand}" if ctx.invoked_subcommand else ""
            click.echo(
                f"traceprobe: internal error{where}: {type(e).__name__}: {one_line(str(e))}; "
                "this is a bug in traceprobe: please report it (TRACEPROBE_DEBUG=1 shows the "
                "traceback)",
                err=True,
            )
            ctx.exit(INTERNAL_ERROR)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="traceprobe")
def cli() -> None:
    """traceprobe: did your PyTorch work actually run in parallel?

    Record the D2L §12.3 experiments under torch.profiler, or analyze any
    PyTorch Profiler (Kineto) Chrome trace, and get overlap figures with
    definitions: device vs device, copy vs compute, stream vs stream, host vs GPU.
    """


def usage_line(e: click.exceptions.ClickException) -> str:
    """``traceprobe: error: MESSAGE See 'traceprobe CMD --help'.`` on one line."""
    ctx = getattr(e, "ctx", None)
    where = ctx.command_path if ctx is not None else "traceprobe"
    hint = f" See '{where} --help'." if isinstance(e, click.exceptions.UsageError) else ""
    message = one_line(e.format_message())
    return f"traceprobe: error: {message}{hint}"


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code instead of raising SystemExit.

    Without ``argv`` (the console script, ``python -m traceprobe.cli``) the process
    ends right after, so the objects left are frozen out of the interpreter's final
    garbage collections, which would otherwise walk everything pandas and numpy
    created (about 0.07 s); they are still freed as usual.
    """
    previous = _on_sigterm()
    try:
        return _main(argv)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if argv is None:
            gc.freeze()


def _on_sigterm() -> Any:
    """SIGTERM ends the command as Ctrl-C does: through ``finally`` blocks, so that no
    temporary file or folder of a half-written output is left (exit 143). Only in the
    main thread (signals cannot be set elsewhere); returns the handler it replaced."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def terminated(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    return signal.signal(signal.SIGTERM, terminated)


def _main(argv: list[str] | None) -> int:
    try:
        rv = cli.main(args=argv, prog_name="traceprobe", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("traceprobe: aborted", err=True)
        return 130
    except click.exceptions.ClickException as e:
        click.echo(usage_line(e), err=True)
        return e.exit_code
    except click.exceptions.Exit as e:
        return int(e.exit_code or 0)
    except SystemExit as e:  # ctx.exit inside invoke
        return int(e.code or 0)
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
