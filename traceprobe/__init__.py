"""traceprobe: measure, from PyTorch Profiler traces, whether work actually ran in parallel.

The analysis API (no torch, no GPU needed)::

    import traceprobe
    tl = traceprobe.load("trace.pt.trace.json.gz")       # Timeline: pandas frames, int ns
    tl.kernels, tl.copies, tl.cpu, tl.steps               # DataFrames
    report = traceprobe.analyze(tl)                       # Report (a path works too)
    report.devices_frame()                                # figures as DataFrames, in µs
    report.to_dict()                                      # the JSON contract
    traceprobe.compare(report_a, report_b)                # what changed between two runs
    traceprobe.check(report, ["utilization[0] >= 0.8"])   # expectations, as `traceprobe check`

Recording lives in :mod:`traceprobe.record` and needs torch. Importing this package is
light: each function imports what it needs when called.
"""

from __future__ import annotations

from traceprobe.errors import TraceError, TraceprobeError, UsageError
from traceprobe.load import find_traces, from_document, from_events, load, load_many
from traceprobe.report import MultiReport, Report, analyze, analyze_many
from traceprobe.timeline import Timeline, TraceMeta

__version__ = "0.1.0"

__all__ = [
    "MultiReport",
    "Report",
    "Timeline",
    "TraceError",
    "TraceMeta",
    "TraceprobeError",
    "UsageError",
    "__version__",
    "analyze",
    "analyze_many",
    "find_traces",
    "from_document",
    "from_events",
    "load",
    "load_many",
]
