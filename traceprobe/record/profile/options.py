"""The options of ``traceprobe profile``, written once for both of its parsers.

``traceprobe profile`` (click, :mod:`traceprobe.cli.profile`) and ``python -m
traceprobe.record.profile`` (argparse: what runs under the user's own ``torchrun`` and on
a machine with nothing but torch) read the same :data:`OPTIONS`; :func:`split` finds
where traceprobe's options end and the target's command line begins, as ``python``
does: at ``--``, at ``-m MODULE``, or at the first word that is not an option.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traceprobe.errors import UsageError

DEFAULT_OUT = "traceprobe-profile"


@dataclass(frozen=True)
class Opt:
    name: str  # the long flag, without dashes
    kind: type | None  # None: a flag
    default: Any
    help: str
    short: str | None = None


OPTIONS: list[Opt] = [
    Opt("out", str, DEFAULT_OUT, "Output folder; the run goes into OUT/NAME/.", "o"),
    Opt("name", str, None, "Run folder name (default: the script's or module's name)."),
    Opt("force", None, False, "Replace OUT/NAME if it exists."),
    Opt("wait", int, 3, "Profiler schedule: steps skipped (after the first)."),
    Opt("warmup", int, 2, "Profiler schedule: steps traced but discarded."),
    Opt("active", int, 3, "Profiler schedule: steps recorded into a trace."),
    Opt("repeat", int, 1, "Profiler schedule: cycles (one trace file each)."),
    Opt("host-steps", int, 0, "Steps after the first, before the rest of the schedule, each begun "
        "on an idle GPU and timed: "
        "the host's unprofiled time per step, stored in the trace so that `traceprobe whatif` "
        "calibrates the profiler's cost on it (10 is plenty; 0: none)."),
    Opt("step-on", str, None, "A step ends when a record_function range or Python function "
        "of this name ends (instead of at optimizer steps)."),
    Opt("window-ms", float, 1000.0, "Length of a time window when stepping by time."),
    Opt("window-after", float, 30.0, "Seconds without an optimizer step before falling back "
        "to time windows; 0: time windows from the start."),
    Opt("record-shapes", None, False, "Record operator input shapes."),
    Opt("profile-memory", None, False, "Record tensor allocations."),
    Opt("with-stack", None, False, "Record Python stacks (large traces)."),
    Opt("nproc-per-node", int, None, "Launch through torch.distributed.run with this many "
        "ranks on this node, each profiled."),
    Opt("nnodes", str, "1", "torchrun --nnodes (with --nproc-per-node)."),
    Opt("node-rank", int, 0, "torchrun --node-rank (with --nproc-per-node)."),
    Opt("rdzv-endpoint", str, None, "torchrun --rdzv-endpoint HOST:PORT for several nodes."),
    Opt("into", str, None, "(internal) the run folder a launched rank writes into."),
]

VALUED = {f"--{o.name}" for o in OPTIONS if o.kind is not None} | {
    f"-{o.short}" for o in OPTIONS if o.short and o.kind is not None
}


@dataclass
class Args:
    values: dict[str, Any]  # option name with "_" -> value
    script: str | None
    module: str | None
    args: tuple[str, ...]

    def __getattr__(self, key: str) -> Any:
        try:
            return self.values[key]
        except KeyError:
            raise AttributeError(key) from None

    @property
    def out(self) -> Path:
        return Path(self.values["out"])


def split(argv: list[str]) -> tuple[list[str], str | None, str | None, list[str]]:
    """``[opts..., (-- | -m MOD | SCRIPT), args...]`` -> (opts, script, module, args)."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            rest = argv[i + 1 :]
            return argv[:i], (rest[0] if rest else None), None, rest[1:]
        if word == "-m":
            if i + 1 >= len(argv):
                raise UsageError("-m needs a module name: traceprobe profile -m MODULE [ARGS]")
            return argv[:i], None, argv[i + 1], argv[i + 2 :]
        if word.startswith("-") and word != "-":
            i += 2 if (word in VALUED and "=" not in word) else 1
            continue
        return argv[:i], word, None, argv[i + 1 :]
    return argv, None, None, []


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m traceprobe.record.profile",
        usage="%(prog)s [OPTIONS] (SCRIPT.py | -m MODULE) [ARGS...]",
        description="Profile an unmodified PyTorch script (as `traceprobe profile`).",
    )
    for o in OPTIONS:
        flags = [f"--{o.name}"] + ([f"-{o.short}"] if o.short else [])
        if o.kind is None:
            p.add_argument(*flags, action="store_true", help=o.help)
        else:
            p.add_argument(*flags, type=o.kind, default=o.default, help=o.help)
    return p


def parse(argv: list[str]) -> Args:
    """Parse ``python -m traceprobe.record.profile`` arguments (argparse exits on --help)."""
    opts, script, module, rest = split(argv)
    ns = parser().parse_args(opts)
    return Args(vars(ns), script, module, tuple(rest))


def command_line(a: Args) -> list[str]:
    """The options that differ from the defaults, then the target: a line that reproduces."""
    out: list[str] = []
    for o in OPTIONS:
        value = a.values.get(o.name.replace("-", "_"))
        if o.name == "into" or value == o.default:
            continue
        out += [f"--{o.name}"] if o.kind is None else [f"--{o.name}", str(value)]
    if a.module:
        return [*out, "-m", a.module, *a.args]
    return [*out, "--", *([a.script] if a.script else []), *a.args]
