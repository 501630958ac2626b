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
import sys

import click

from traceprobe.errors import TraceprobeError

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
            click.echo(f"traceprobe: error: {e}", err=True)
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
                f"traceprobe: internal error{where}: {type(e).__name__}: {e}; this is a bug in "
                "traceprobe: please report it (TRACEPROBE_DEBUG=1 shows the traceback)",
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


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code instead of raising SystemExit.

    Without ``argv`` (the console script, ``python -m traceprobe.cli``) the process
    ends right after, so the objects left are frozen out of the interpreter's final
    garbage collections, which would otherwise walk everything pandas and numpy
    created (about 0.07 s); they are still freed as usual.
    """
    try:
        return _main(argv)
    finally:
        if argv is None:
            gc.freeze()


def _main(argv: list[str] | None) -> int:
    try:
        rv = cli.main(args=argv, prog_name="traceprobe", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("traceprobe: aborted", err=True)
        return 130
    except click.exceptions.ClickException as e:
        e.show()
        return e.exit_code
    except click.exceptions.Exit as e:
        return int(e.exit_code or 0)
    except SystemExit as e:  # ctx.exit inside invoke
        return int(e.code or 0)
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
