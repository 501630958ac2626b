"""``traceprobe record``: run the experiments under torch.profiler (needs torch).

Thin: check the names, build the options, call :func:`traceprobe.record.record`.
torch is imported only when something is recorded, never for ``--list`` or ``--help``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from traceprobe.record import registry

DEFAULT_OUT = "traceprobe-out"


def _list() -> None:
    for w in registry.WORKLOADS:
        extra = " (torchrun, one trace per rank)" if w.distributed else ""
        click.echo(f"{w.name}{extra}")
        click.echo(f"    variants: {', '.join(w.variants)}")
        click.echo(f"    devices:  {', '.join(w.wants)}")
        click.echo(f"    claim:    {w.claim}")
        for variant, claim in w.variant_claims:
            click.echo(f"    claim of {variant}: {claim}")


def _count(name: str, minimum: int, default: int, text: str) -> Callable[..., None]:
    return click.option(
        name, type=click.IntRange(min=minimum), default=default, show_default=True, help=text
    )


def profiler_options(f: Callable[..., None]) -> Callable[..., None]:
    """The schedule and profiler flags, as one bundle."""
    options = [
        _count("--wait", 0, 0, "Profiler schedule: steps skipped."),
        _count("--warmup", 0, 1, "Profiler schedule: steps traced but discarded."),
        _count("--active", 1, 1, "Profiler schedule: steps recorded into a trace."),
        _count("--repeat", 1, 1, "Profiler schedule: cycles (one trace file each)."),
        _count("--plain-steps", 0, 3, "Steps timed without the profiler, after the warm-up step."),
        click.option("--record-shapes", is_flag=True, help="Record operator input shapes."),
        click.option("--profile-memory", is_flag=True, help="Record tensor allocations."),
        click.option("--with-stack", is_flag=True, help="Record Python stacks (large traces)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


HELP = """Run the D2L §12.3 experiments under torch.profiler and write traces + metadata.

    Each WORKLOAD (all when none are given; NAME/VARIANT picks one variant) is recorded
    into OUT/<workload>/<variant>/ as <worker>.<id>.pt.trace.json.gz files plus
    traceprobe.meta.jsonc. A workload that wants more GPUs than the machine has runs on
    what is there and says so. `scheduled` keeps its own schedule (wait 1, warmup 1,
    active 3); the others use --wait/--warmup/--active/--repeat.

    \b
    Example:
        traceprobe record --list
        traceprobe record                      # everything, on every device present
        traceprobe record copy dag/two-streams --out runs/h200 --record-shapes
        traceprobe record --device cpu --force # the CPU fallback, over a previous run
        tensorboard --logdir traceprobe-out    # with torch-tb-profiler installed

    \b
    Exit codes:
        0  every variant was recorded
        2  usage error (unknown workload or variant, bad option)
        4  OUT has content (use --force) or cannot be written
        5  torch missing, no CUDA for --device cuda, or a variant failed
"""


@click.command("record", help=HELP)
@click.argument("workloads", nargs=-1, metavar="[WORKLOAD[/VARIANT]]...")
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_OUT,
    show_default=True,
    help="Output folder.",
)
@click.option(
    "--device",
    type=click.Choice(["auto", "cpu", "cuda"]),
    default="auto",
    show_default=True,
    help="auto: the GPUs when CUDA is available, else the CPU.",
)
@click.option(
    "--scale",
    type=click.Choice(["auto", "small", "full"]),
    default="auto",
    show_default=True,
    help="Problem sizes; auto: full on GPUs, small on the CPU.",
)
@click.option("--list", "list_", is_flag=True, help="Print the workloads and exit.")
@click.option(
    "--force",
    is_flag=True,
    help="Write into a non-empty --out, replacing the variant folders recorded.",
)
@profiler_options
@click.option("--progress/--no-progress", default=True, help="Progress bars on stderr.")
def record(
    workloads: tuple[str, ...],
    out: Path,
    device: str,
    scale: str,
    list_: bool,
    force: bool,
    wait: int,
    warmup: int,
    active: int,
    repeat: int,
    plain_steps: int,
    record_shapes: bool,
    profile_memory: bool,
    with_stack: bool,
    progress: bool,
) -> None:
    if list_:
        _list()
        return
    for sel in workloads:
        name = sel.partition("/")[0]
        if name not in registry.names():
            raise click.BadArgumentUsage(registry.unknown_message(name))

    from traceprobe.record import Schedule, options
    from traceprobe.record import record as run_record

    values = {"out": out, "device": device, "scale": scale, "wait": wait, "warmup": warmup,
              "active": active, "repeat": repeat, "plain-steps": plain_steps}
    flags = {"record-shapes": record_shapes, "profile-memory": profile_memory,
             "with-stack": with_stack, "force": force}
    command = [
        "traceprobe", "record", *workloads,
        *(arg for k, v in values.items() for arg in (f"--{k}", str(v))),
        *(f"--{k}" for k, on in flags.items() if on),
    ]
    opts = options(
        device=device,
        scale=scale,
        schedule=Schedule(wait, warmup, active, repeat),
        record_shapes=record_shapes,
        profile_memory=profile_memory,
        with_stack=with_stack,
        plain_steps=plain_steps,
        command=command,
    )
    metas = run_record(list(workloads), out, opts, force=force, progress=progress, echo=click.echo)
    click.echo(
        f"Wrote {len(metas)} variant folder(s) under {out}; open with: tensorboard --logdir {out}"
    )
