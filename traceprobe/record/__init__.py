"""The record wing: run the D2L §12.3 experiments under torch.profiler.

    from traceprobe.record import record, Options
    metas = record(["copy", "dag/two-streams"], Path("traceprobe-out"), Options(device="auto"))

Layout written (one folder per variant, each complete or absent)::

    OUT/<workload>/<variant>/<worker>.<id>.pt.trace.json.gz   # one per rank for ddp
    OUT/<workload>/<variant>/traceprobe.meta.jsonc            # schema traceprobe.meta/1
    OUT/<workload>/<variant>/torch.log                        # torch's own log lines (quiet)

``tensorboard --logdir OUT`` (with torch-tb-profiler) opens it. Modules, in the order
data flows: :mod:`.registry` (what there is; no torch) -> :mod:`.devices` (what runs
where) -> :mod:`.workloads` (the experiments) -> :mod:`.runner` (warm-up, plain timing,
profiling) -> :mod:`.meta` (the metadata file) with :mod:`.staging` (atomic folders);
:mod:`.launch` and :mod:`.ddp_worker` for the torchrun workload.

Importing this package does not import torch; :func:`record` does, and says how to get
it when it is missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from traceprobe.errors import RecordError
from traceprobe.record.registry import WORKLOADS, Schedule, WorkloadSpec, select

if TYPE_CHECKING:
    from traceprobe.record.runner import Echo, Options

__all__ = ["WORKLOADS", "Schedule", "WorkloadSpec", "select", "record", "require_torch", "options"]

TORCH_MISSING = "torch is not installed: pip install 'traceprobe[record]'"


def require_torch() -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        raise RecordError(TORCH_MISSING) from None


def options(**kw: Any) -> Options:
    """A :class:`traceprobe.record.runner.Options` (imports torch)."""
    require_torch()
    from traceprobe.record.runner import Options

    return Options(**kw)


def record(
    selectors: list[str] | tuple[str, ...],
    out: str | Path,
    opts: Options | None = None,
    *,
    force: bool = False,
    progress: bool = True,
    echo: Echo = print,
) -> list[dict[str, Any]]:
    """Record the selected ``workload[/variant]`` names (all when empty) into ``out``."""
    require_torch()
    from traceprobe.record import runner

    return runner.record(selectors, Path(out), opts, force=force, progress=progress, echo=echo)
