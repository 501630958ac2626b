"""The baseline report of ``traceprobe check --baseline``: a report JSON, or a trace to analyse.

    base = read_baseline("main.json")                       # analyze -f json's output
    base = read_baseline("main.pt.trace.json.gz", step=None, window="steps")

A ``.json`` file whose top level holds ``"schema": "traceprobe.report/1"`` is taken as it is
(the window it was analysed with is its own); anything else is loaded as a trace and analysed
with the same ``step`` and ``window`` as the checked traces.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from traceprobe.errors import TraceError, UsageError

REPORT_SCHEMA = "traceprobe.report/1"
MULTI_SCHEMA = "traceprobe.reports/1"
_SCHEMA = re.compile(r'"schema"\s*:\s*"traceprobe\.reports?/1"')
_SNIFF = 4096  # a report JSON names its schema first (render/jsonfmt writes it first)


def read_baseline(path: str | Path, *, step: int | None = None,
                  window: str = "steps") -> dict[str, Any]:
    """The baseline report dict; TraceError for a file that is neither, UsageError for a
    report of several traces or a folder of several."""
    p = Path(path)
    if p.is_file() and p.suffix.lower() == ".json" and _is_report(p):
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise TraceError(p, f"cannot read the baseline report: {e}",
                             "write it again with `traceprobe analyze -f json`") from None
        if data.get("schema") == MULTI_SCHEMA:
            raise UsageError(f"{p}: the baseline report holds several traces; give one "
                             "trace's report (or the trace) as --baseline")
        return dict(data)
    from traceprobe import report as rp
    from traceprobe.load import pipeline as loader

    found = [str(f) for f in loader.find_traces(str(p))]
    if len(found) != 1:
        raise UsageError(f"{p} holds {len(found)} traces; give one trace (or one report "
                         "JSON) as --baseline")
    return rp.analyze(loader.load(found[0]), step=step, window=window).to_dict()


def _is_report(p: Path) -> bool:
    try:
        with p.open("rb") as f:
            head = f.read(_SNIFF).decode("utf-8", "replace")
    except OSError:
        return False
    return _SCHEMA.search(head) is not None
