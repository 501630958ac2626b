"""``traceprobe profile``: any training script, unmodified, under torch.profiler.

Thin: the options come from :data:`traceprobe.record.profile.OPTIONS` (shared with the
argparse twin ``python -m traceprobe.record.profile``); the work is
:func:`traceprobe.record.profile.profile`. torch is imported only when a script runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from traceprobe.errors import UsageError
from traceprobe.record.profile import OPTIONS, Args
from traceprobe.record.profile.options import command_line, split


def _options(f: Callable[..., Any]) -> Callable[..., Any]:
    for o in reversed(OPTIONS):
        if o.name == "into":
            continue  # internal: set only for the ranks this command launches
        flags = [f"--{o.name}"] + ([f"-{o.short}"] if o.short else [])
        if o.kind is None:
            f = click.option(*flags, is_flag=True, help=o.help)(f)
        else:
            f = click.option(*flags, type=o.kind, default=o.default, show_default=o.default
                             is not None, help=o.help)(f)
    return f


class ProfileCommand(click.Command):
    """Options end where ``python``'s would: at ``--``, ``-m MODULE`` or the script's name;
    everything after belongs to the script (even ``--out``), so click only sees the options."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            opts, script, module, rest = split(args)
        except UsageError as e:
            raise click.UsageError(str(e)) from None
        ctx.meta[TARGET] = (script, module, tuple(rest))
        return super().parse_args(ctx, opts)


TARGET = "traceprobe.profile.target"


@click.command("profile", cls=ProfileCommand)
@click.option("-m", "module", metavar="MODULE", help="Run a module, as python -m MODULE [ARGS].")
@_options
@click.argument("command", nargs=-1, metavar="[--] SCRIPT.py [ARGS]...")
@click.pass_context
def profile(ctx: click.Context, module: str | None, command: tuple[str, ...], **values: Any) -> int:
    """Run SCRIPT.py (or -m MODULE) exactly as python would, under torch.profiler.

    No edits to the script: a step is one optimizer step (PyTorch's global optimizer
    hook), so ProfilerStep#N marks training iterations and --wait/--warmup/--active/
    --repeat pick which are recorded (by default iterations 5-7 after the first).
    Scripts that never step an optimizer fall back to time windows and say so.
    Writes OUT/NAME/<host>[_<rank>].<ms>.pt.trace.json.gz (TensorBoard layout, read by
    HTA) with its metadata file, then prints the analyze headlines. The script's
    output is untouched and its exit status is traceprobe's; a script that fails or is
    stopped (Ctrl-C, SIGTERM) still leaves the steps it completed in a valid trace.

    \b
    Example:
        traceprobe profile -- examples/mlp_cpu.py --steps 40
        traceprobe profile --active 5 -o runs --name base -- train.py --lr 3e-4
        traceprobe profile -m mypkg.train --epochs 1
        traceprobe profile --nproc-per-node 2 -- examples/ddp_train.py
        torchrun --nproc-per-node 2 -m traceprobe.record.profile -- train.py
        traceprobe analyze traceprobe-profile/mlp_cpu

    \b
    Exit codes:
        the script's own (0 when it succeeded), except:
        2  no such script, not Python, bad option
        4  OUT/NAME exists (use --force) or cannot be written
        5  torch missing, the script fails on import, or torchrun wrote no trace
    """
    script, module, rest = ctx.meta[TARGET]
    values["into"] = None
    a = Args(values, script, module, rest)
    from traceprobe.record.profile import profile as run_profile

    status = run_profile(a, ["traceprobe", "profile", *command_line(a)], echo=click.echo)
    ctx.exit(status)
    return status  # pragma: no cover

