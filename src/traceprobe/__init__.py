"""traceprobe: measure, from PyTorch Profiler traces, whether work actually ran in parallel.

The analysis API (no torch needed)::

    import traceprobe
    tl = traceprobe.load("trace.pt.trace.json.gz")      # -> Timeline (pandas frames)
    tl.kernels, tl.copies, tl.cpu                          # DataFrames
    report = traceprobe.analyze(tl)                        # -> Report
    report.to_dict()                                       # the JSON contract

Recording lives in :mod:`traceprobe.record` and needs torch.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["load", "load_many", "analyze", "__version__"]


def __getattr__(name: str):  # lazy: keep `import traceprobe` cheap
    if name in ("load", "load_many"):
        from traceprobe import loader as _load

        return getattr(_load, name)
    if name == "analyze":
        from traceprobe.report import analyze

        return analyze
    raise AttributeError(name)
