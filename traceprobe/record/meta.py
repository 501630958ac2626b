"""``traceprobe.meta.jsonc``: what was recorded, how, on what, and how long it took.

One file per variant folder, beside its trace(s); schema ``traceprobe.meta/1``. Fields
are only ever added; readers use ``.get(key, default)``. Times are seconds (``*_s``) or
milliseconds (``*_ms``, CUDA events), named so. Importing this module does not import
torch (:func:`environment` does, when called), so readers can use :func:`read` freely.

Top-level fields::

    schema            "traceprobe.meta/1"
    workload, variant, claim
    devices_wanted    ["cuda:0", "cuda:1"]      roles the experiment wants
    devices_used      ["cpu", "cpu"]            what they ran on: aligned with devices_wanted,
                                                except where a variant uses fewer (mlp/single)
                                                and for ddp (one entry per rank)
    fallback          true when a GPU role ran on the CPU
    note              null, or why devices_used differs from devices_wanted (and other caveats)
    machine           {"device": "auto", "kind": "cuda"|"cpu", "gpus": 2}
    torch, cuda       versions (cuda null on a CPU build)
    gpus              [{"index", "name", "memory_gib", "capability", "multiprocessors"}]
    scale, sizes      "small"|"full" and the workload's Sizes dataclass as a dict
    correct           true/false from the workload's own check, null if it has none
    correct_detail    one line
    facts             workload-specific facts (e.g. copy's dest_pinned, ddp's backend)
    profiler          {"activities", "schedule": {wait, warmup, active, repeat},
                       "schedule_from": "options"|"workload", "record_shapes",
                       "profile_memory", "with_stack", "steps_run", "profiled_steps"}
    timing            see traceprobe.record.runner.measure
    traces            [{"file", "bytes", "rank"}]  names relative to the variant folder
    ranks             ddp only: per rank {"rank", "device", "timing", "correct", ...}
    command           the `traceprobe record ...` line that reproduces the run (argv: sys.argv)
    hostname, started (UTC ISO 8601), recorded_s, python, traceprobe
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sys
from pathlib import Path
from typing import Any

SCHEMA = "traceprobe.meta/1"
# JSON, but not named *.json: HolisticTraceAnalysis reads every *.json and *.gz of a trace
# folder as a rank's trace (and TensorBoard's plugin every *.pt.trace.json), so a
# *.json beside the traces displaced rank 0's real trace
FILENAME = "traceprobe.meta.jsonc"
LEGACY_FILENAME = "traceprobe.meta.json"  # what recordings before this wrote; still read
FILENAMES = (FILENAME, LEGACY_FILENAME)


def environment() -> dict[str, Any]:
    """Facts about this process and machine, shared by every variant of a run."""
    import torch

    from traceprobe import __version__
    from traceprobe.record.devices import gpu_names

    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpus": gpu_names(),
        "hostname": socket.gethostname(),
        "python": platform.python_version(),
        "traceprobe": __version__,
        "command": list(sys.argv),
    }


def write(path: Path, meta: dict[str, Any]) -> None:
    """Write atomically (temp file + rename), so a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(meta, indent=2, sort_keys=False, default=str) + "\n")
    os.replace(tmp, path)


def read(path: Path) -> dict[str, Any]:
    """The metadata object; ValueError when it is not JSON or not an object of the
    expected shape (``traces`` a list of objects, ``timing`` an object)."""
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict):
        raise ValueError(f"a JSON {type(data).__name__}, not an object")
    traces = data.get("traces", [])
    if not isinstance(traces, list) or not all(isinstance(t, dict) for t in traces):
        raise ValueError('"traces" is not a list of objects')
    for t in traces:
        if "file" in t and not isinstance(t["file"], str):
            raise ValueError('a "file" in "traces" is not a string')
    for key in ("timing", "profiler", "machine"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise ValueError(f'"{key}" is not an object')
    for key in ("ranks", "gpus", "devices_used"):
        if data.get(key) is not None and not isinstance(data[key], list):
            raise ValueError(f'"{key}" is not a list')
    return data


def find(out: Path) -> list[Path]:
    """Every metadata file under ``out`` (in finished variant folders only)."""
    found: dict[Path, Path] = {}
    for name in reversed(FILENAMES):  # the current name wins over a legacy one beside it
        for p in Path(out).glob(f"*/*/{name}"):
            if not p.parent.name.startswith("."):
                found[p.parent] = p
    return sorted(found.values())


def summary_line(m: dict[str, Any]) -> str:
    """One line per variant: where it ran, plain vs profiled step time, traces, check."""
    t = m.get("timing", {})
    plain = t.get("plain", {}).get("mean_s")
    prof = t.get("profiled", {}).get("active_mean_s")
    traces = m.get("traces", [])
    mb = sum(x.get("bytes", 0) for x in traces) / 1e6
    correct = m.get("correct")
    parts = [
        f"{m['workload']}/{m['variant']}".ljust(36),
        ",".join(m.get("devices_used", [])).ljust(16),
        f"plain {_ms(plain)}/step",
        f"profiled {_ms(prof)}/step",
        f"{len(traces)} trace(s) {mb:.2f} MB",
    ]
    if correct is not None:
        parts.append(f"correct={str(correct).lower()}")
    return "  ".join(parts)


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:8.2f} ms"


def summarize(out: Path) -> str:
    """A short report of every variant under ``out`` (for scripts/record_gpu.sh)."""
    lines: list[str] = []
    total, largest = 0, (0, "")
    paths = find(out)
    for path in paths:
        m = read(path)
        lines.append(summary_line(m))
        t = m.get("timing", {})
        extra = []
        if t.get("profiler_overhead") is not None:
            extra.append(f"profiler overhead x{t['profiler_overhead']:.2f}")
        for dev, ms in t.get("profiled", {}).get("cuda_event_ms", {}).items():
            extra.append(f"{dev} events {sum(ms) / len(ms):.2f} ms/step")
        for key, value in m.get("facts", {}).items():
            extra.append(f"{key}={value}")
        lines.append("    " + "; ".join(extra))
        if m.get("note"):
            lines.append(f"    note: {m['note']}")
        for tr in m.get("traces", []):
            total += tr["bytes"]
            largest = max(largest, (tr["bytes"], f"{m['workload']}/{m['variant']}/{tr['file']}"))
    lines.append(
        f"{len(paths)} variant(s); traces {total / 1e6:.1f} MB in all, "
        f"largest {largest[0] / 1e6:.2f} MB ({largest[1] or '-'})"
    )
    return "\n".join(lines)


if __name__ == "__main__":  # python -m traceprobe.record.meta OUT
    print(summarize(Path(sys.argv[1] if len(sys.argv) > 1 else "traceprobe-out")))
