"""The end of `make demo`: this machine's verdicts beside the committed GPU ones, then those.

    python scripts/demo.py OUT [--reference sample_traces/verdicts-h200x2.json]

On a machine without a GPU almost every claim is "cannot tell on this machine"; the answer the
project exists for was recorded elsewhere, on GPUs, and is committed with its traces. This prints
a table of the variants with the verdict here and there, then the committed GPU verdicts with
their reasons, labelled with the machine and the date they were recorded on. The verdicts here
are computed from OUT (``traceprobe.verify.verify_dir``); the GPU ones are read from the committed
JSON as it is (``traceprobe verify sample_traces/h200x2 -f json`` made it), never recomputed.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "sample_traces" / "verdicts-h200x2.json"


def machine_words(machine: Mapping[str, Any]) -> str:
    """``2 x NVIDIA H200, torch 2.11.0+cu130, CUDA 13.0`` or ``the CPU (no GPU), torch ...``."""
    gpus = machine.get("gpus") or []
    where = (f"{len(gpus)} x {gpus[0]}" if gpus and len(set(gpus)) == 1
             else " + ".join(gpus) if gpus else "the CPU (no GPU)")
    parts = [where, f"torch {machine.get('torch')}"]
    if machine.get("cuda"):
        parts.append(f"CUDA {machine['cuda']}")
    return ", ".join(parts)


def recorded_dates(folder: Path) -> str:
    """The day(s) the variants under ``folder`` were recorded (their metadata's ``started``)."""
    metas = [p for name in ("traceprobe.meta.jsonc", "traceprobe.meta.json")  # now, and before
             for p in folder.rglob(name)]
    days = sorted({json.loads(p.read_text()).get("started", "")[:10] for p in metas} - {""})
    if not days:
        return "an unknown date"
    return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"


def side_by_side(here: Mapping[str, Any], there: Mapping[str, Any], there_label: str) -> list[str]:
    mine = {f"{v['workload']}/{v['variant']}": v["verdict"] for v in here["verdicts"]}
    theirs = [(f"{v['workload']}/{v['variant']}", v["verdict"]) for v in there["verdicts"]]
    names = [n for n, _ in theirs] + [n for n in mine if n not in dict(theirs)]
    rows = [("variant", "this machine", there_label)]
    rows += [(n, mine.get(n, "(not recorded)"), dict(theirs).get(n, "-")) for n in names]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    lines = [f"  {a:<{w0}}  {b:<{w1}}  {c}" for a, b, c in rows]
    lines.insert(1, f"  {'-' * w0}  {'-' * w1}  {'-' * len(there_label)}")
    return lines


def gpu_verdicts(there: Mapping[str, Any], width: int = 100) -> list[str]:
    """Each committed verdict: ``variant: verdict`` and its reason, wrapped."""
    lines = []
    for v in there["verdicts"]:
        lines.append(f"  {v['workload']}/{v['variant']}: {v['verdict']}")
        lines += textwrap.wrap(v["why"], width, initial_indent="      ",
                               subsequent_indent="      ")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="the folder `traceprobe record` wrote")
    ap.add_argument("--reference", type=Path, default=REFERENCE,
                    help="committed verdicts JSON of a GPU recording [%(default)s]")
    a = ap.parse_args(argv)

    from traceprobe.errors import TraceprobeError
    from traceprobe.verify import verify_dir

    try:
        here = verify_dir(a.out)
    except TraceprobeError as e:
        print(f"demo: {e}", file=sys.stderr)
        return e.exit_code
    there = json.loads(a.reference.read_text())
    traces = ROOT / there["source"]
    gpus = machine_words(there["machine"])
    when = recorded_dates(traces)
    short = gpus.split(",")[0]
    print()
    print("Verdicts side by side")
    print(f"  this machine: {a.out}, recorded on {machine_words(here['machine'])},"
          f" {recorded_dates(a.out)}")
    print(f"  elsewhere:    {there['source']}, recorded on {gpus}, {when} (committed)")
    print()
    print("\n".join(side_by_side(here, there, f"{short} (recorded elsewhere)")))
    print()
    ref = a.reference.resolve()
    shown = ref.relative_to(ROOT) if ref.is_relative_to(ROOT) else ref
    print(f"Recorded elsewhere, not on this machine: {gpus}, on {when}.")
    print(f"The claims checked on these GPUs, as committed in {shown} (traces in"
          f" {there['source']}/):")
    print("\n".join(gpu_verdicts(there)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
