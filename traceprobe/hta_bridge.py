"""HolisticTraceAnalysis (HTA) figures beside traceprobe's: ``traceprobe analyze --hta``.

    require()                     # UsageError unless HTA is installed; its version
    add_hta(files, reports)       # reports[i]["hta"] = hta_figures(files[i]); failures listed

HTA is an optional extra (``pip install 'traceprobe[hta]'``, on PyPI as ``traceinsight``),
imported only here and only when asked for. The figures are HTA's own, under HTA's own
column names, JSON-safe (numpy -> Python, NaN -> null)::

    "hta": {"version": "0.6.1", "scope": "rank",
            "temporal_breakdown": [{"rank", "idle_time(us)", "compute_time(us)",
                                    "non_compute_time(us)", "kernel_time(us)", ...}],
            "comm_comp_overlap": [{"rank", "comp_comm_overlap_pctg"}]}

When HTA itself fails on a trace (it raises bare asserts on some), the report keeps
traceprobe's figures and says so: ``"hta": {"version": ..., "error": "..."}``, and the CLI
prints one warning line; traceprobe's own analysis does not depend on HTA.

They differ from traceprobe's by construction; what HTA does, from its code (0.6):

* ``scope: rank``: HTA merges every GPU of a process into one rank, so its figures are per
  rank, not per device; its ``idle_time(us)`` is time with *no* GPU of the trace busy
  (traceprobe: ``serial.gpu_span_us - serial.busy_union_us``), not one device's idle time.
* What counts as GPU busy: every event with a stream (``stream != -1`` in
  hta/analyzers/breakdown_analysis.py ``get_temporal_breakdown``), which includes
  ``cuda_sync`` events and CPU-side events that carry a stream, not only kernels, copies
  and memsets; and GPU work HTA cannot tie to a launch in the trace (it links kernels to
  runtime calls by correlation, hta/common/trace.py) may be left out.
* Its window is its first to last such event (``kernel_time(us)``), less the work launched
  from the last ProfilerStep when the trace has two or more; ``--step``/``--device`` do not
  apply.
* It rounds every event inward to whole microseconds: start up (``ceil``), end down
  (``floor``), in hta/common/trace_parser.py.

So the two agree only where the definitions do: a single-GPU trace whose stream-bearing
events are exactly its kernels, copies and memsets, within the sub-µs rounding.
"""

from __future__ import annotations

import contextlib
import io
import logging
import tempfile
import traceback
import warnings
from collections.abc import Iterator, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from traceprobe.errors import TraceError, UsageError
from traceprobe.render.jsonfmt import clean

MISSING = "--hta needs HolisticTraceAnalysis: pip install 'traceprobe[hta]'"


class HtaError(TraceError):
    """HTA itself failed on a trace (traceprobe's own analysis of it went fine)."""


def require() -> str:
    """HTA's version; :class:`UsageError` when it is not installed. Imports only the light
    top-level package, so the CLI can refuse before loading any trace."""
    try:
        import hta
    except ImportError:
        raise UsageError(MISSING) from None
    return str(hta.__version__)


def add_hta(files: Sequence[Path], reports: Sequence[MutableMapping[str, Any]]) -> list[str]:
    """Put HTA's figures for ``files[i]`` into ``reports[i]["hta"]`` (one report per file).

    Where HTA fails on a trace, ``reports[i]["hta"]`` says so (``"error"``) and the
    message (naming the file) is returned, one per failure; the other figures stand."""
    failed = []
    for trace, report in zip(files, reports, strict=True):
        try:
            report["hta"] = hta_figures(Path(trace))
        except HtaError as e:
            report["hta"] = {"version": require(), "error": e.problem}
            failed.append(str(e))
    return failed


def hta_figures(trace: Path) -> dict[str, Any]:
    """HTA's temporal breakdown and comm/compute overlap of one trace file."""
    version = require()
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError:  # installed, but a dependency of it is not
        raise UsageError(MISSING) from None
    with tempfile.TemporaryDirectory(prefix="traceprobe-hta-") as tmp, _quiet():
        try:
            analysis = TraceAnalysis(trace_dir=str(rank_dir(trace, Path(tmp))))
            breakdown = analysis.get_temporal_breakdown(visualize=False)
            overlap = analysis.get_comm_comp_overlap(visualize=False)
        except Exception as e:  # HTA raises bare asserts, KeyErrors...: name the file instead
            raise HtaError(
                trace,
                f"HTA {version} failed on it ({_where(e)})",
                "run without --hta for traceprobe's own figures",
            ) from e
    return {
        "version": version,
        "scope": "rank",  # every GPU of the process merged into one row: not per device
        "temporal_breakdown": clean(breakdown.to_dict("records")),
        "comm_comp_overlap": clean(overlap.to_dict("records")),
    }


def rank_dir(trace: Path, workdir: Path) -> Path:
    """A directory in ``workdir`` holding only a link to ``trace``, named as HTA wants.

    HTA (hta/common/trace_file.py) takes every file in the directory whose name ends in
    ``.json`` or ``.gz`` and finds its rank by the text ``"rank": N`` inside (else rank 0).
    """
    d = workdir / "hta_trace"
    d.mkdir(exist_ok=True)
    name = trace.name
    if not (name.endswith(".json") or name.endswith(".gz")):
        with open(trace, "rb") as fh:
            name = "rank-0.json.gz" if fh.read(2) == b"\x1f\x8b" else "rank-0.json"
    link = d / name
    if not link.exists():
        link.symlink_to(trace.resolve())
    return d


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence HTA: its parse timings logged at WARNING, numpy/pandas warnings, prints."""
    log = logging.getLogger("hta")
    level = log.level
    log.setLevel(logging.CRITICAL + 1)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        log.setLevel(level)


def _where(e: BaseException) -> str:
    """``AssertionError at breakdown_analysis.py:684``: what HTA raised, and where."""
    what = " ".join(f"{type(e).__name__}: {e}".split())[:200].removesuffix(":")
    frames = traceback.extract_tb(e.__traceback__)
    return f"{what} at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else what
