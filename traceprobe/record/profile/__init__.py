"""``traceprobe profile``: any training script, unmodified, under torch.profiler.

    from traceprobe.record.profile import main
    status = main(["--out", "runs", "--", "train.py", "--epochs", "1"])

Modules, in the order data flows: :mod:`.options` (the options, for click and
argparse) -> :mod:`.target` (the script or module, run as ``python`` would) ->
:mod:`.steps` (where a step ends; the profiler and its schedule) -> :mod:`.session` (one
process profiled, its trace written atomically) -> :mod:`.job` (one process, ranks
launched through torchrun, or ranks of the user's own launcher; staging and metadata)
-> :mod:`.summary` (what is printed at the end). ``python -m traceprobe.record.profile``
is the same command without click, for the user's own ``torchrun`` and for machines with
nothing but torch. Importing this package does not import torch.
"""

from __future__ import annotations

from collections.abc import Callable

from traceprobe.record.profile.options import DEFAULT_OUT, OPTIONS, Args, parse

__all__ = ["DEFAULT_OUT", "OPTIONS", "Args", "parse", "main", "profile"]


def profile(args: Args, command: list[str], echo: Callable[[str], None] = print) -> int:
    """Profile what ``args`` names; return the script's exit status (see :mod:`.job`)."""
    from traceprobe.record.profile import job

    return job.run(args, command, echo)


def main(argv: list[str]) -> int:
    """``python -m traceprobe.record.profile ARGV``: errors as one line, exit codes as the CLI."""
    import sys

    from traceprobe.errors import TraceprobeError

    try:
        return profile(parse(argv), ["python", "-m", "traceprobe.record.profile", *argv])
    except TraceprobeError as e:
        print(f"traceprobe: error: {e}", file=sys.stderr)
        return e.exit_code
