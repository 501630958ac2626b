"""What ``traceprobe profile`` costs: the same script timed with and without it.

    PYTHONPATH=. python3 scripts/profile_overhead.py --runs 3 -- examples/mlp_cpu.py --steps 60

Runs ``python SCRIPT ARGS`` and ``python -m traceprobe.record.profile -o TMP -- SCRIPT
ARGS`` alternately, ``--runs`` times each, and prints per variant the median wall time
and the median CPU time (user + system of the process and its children, which a busy
machine disturbs less than wall time), then the differences and, from the profiled
runs' metadata, the median per-step overhead (recorded step / unprofiled step, same
run). Needs only the standard library and torch, so it runs on a bare GPU box.
``--json FILE`` also writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from traceprobe.record import meta  # noqa: E402 (torch-free)


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--json", type=Path)
    p.add_argument("--profile-args", default="", help="options for traceprobe profile, quoted")
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        p.error("give the script after --: scripts/profile_overhead.py -- train.py ARGS")
    cut = argv.index("--")
    args, target = p.parse_args(argv[:cut]), argv[cut + 1 :]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")])}
    rows: dict[str, list[tuple[float, float]]] = {"plain": [], "profiled": []}
    overheads: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            rows["plain"].append(timed([sys.executable, *target], env))
            out = Path(tmp) / f"run{i}"
            rows["profiled"].append(timed([sys.executable, "-m", "traceprobe.record.profile",
                                           "-o", str(out), *shlex.split(args.profile_args), "--",
                                           *target], env))
            for m in out.glob(f"*/{meta.FILENAME}"):
                value = json.loads(m.read_text())["timing"]["step_overhead"]
                if value is not None:
                    overheads.append(value)
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in rows.items()}
    result = {
        "command": ["python", *target],
        "runs": args.runs,
        "plain_wall_s": med["plain"][0],
        "profiled_wall_s": med["profiled"][0],
        "plain_cpu_s": med["plain"][1],
        "profiled_cpu_s": med["profiled"][1],
        "added_wall_s": med["profiled"][0] - med["plain"][0],
        "added_cpu_s": med["profiled"][1] - med["plain"][1],
        "step_overhead_median": statistics.median(overheads) if overheads else None,
        "all": rows,
    }
    print(f"python {' '.join(target)}  ({args.runs} runs each, medians)")
    for k in ("plain", "profiled"):
        print(f"  {k:9s} wall {med[k][0]:7.2f} s   cpu {med[k][1]:7.2f} s")
    added = result["added_wall_s"], result["added_cpu_s"]
    print(f"  added     wall {added[0]:+7.2f} s   cpu {added[1]:+7.2f} s")
    if overheads:
        print(f"  a recorded step took {result['step_overhead_median']:.2f}x an unprofiled one")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
