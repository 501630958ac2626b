"""Benchmark traceprobe against HTA and against the cost of just decoding the trace.

    python scripts/bench.py TRACE [--runs 5] [--write-docs docs/BENCHMARKS.md]
    python scripts/bench.py TRACE --scale 1,2,5,10,24 [--runs 3] [--gzip | --no-gzip]
    python scripts/bench.py TEMPLATES_DIR --ranks 1024 [--sizes 1,4] [--runs 1]
                                            (many ranks: local vs Dask, scripts/bench_ranks.py)
    python scripts/bench.py TEMPLATES_DIR --ranks 256 --url [--sizes 1,4] [--runs 1]
                                            (the ranks on local disk vs an S3 server, both on a
                                            Dask LocalCluster: scripts/bench_url.py)

Every measured thing runs as its own whole process (interpreter start and imports
included, as a user pays them), one at a time, the rows taking turns round by round
so that drift in the machine hits them all alike; one unmeasured warm-up round first
puts the trace in the page cache. Wall time is ``perf_counter`` around the child;
peak RSS is the child's ``ru_maxrss`` from ``os.wait4`` (its own high-water mark),
read by a small launcher process (see LAUNCHER for why).

Rows (``--only`` picks some, by key):

  hta         HTA: ``TraceAnalysis(trace_dir=D)``, D holding only a link to TRACE
  traceprobe  ``traceprobe analyze TRACE --format json --output TMP`` (``--traceprobe-cmd``)
  msgspec     the decode floor: gunzip + msgspec into typed Structs of only the fields
              an overlap analysis needs (ph cat name pid tid ts dur, args device stream
              correlation "External id")
  gunzip      gunzip alone (read + decompress)
  orjson      gunzip + orjson into dicts
  json        gunzip + stdlib json into dicts (what HTA does first)
  startup     python + import numpy, pandas (the fixed cost both tools pay)
  analyze-alone  the traceprobe row with the report's critical path switched off (in-process
              CLI, ``report.build._critical_paths`` stubbed): what the graph adds to analyze
  whatif      ``traceprobe whatif TRACE --format json --output TMP``: load, graph, replay
              twice, every step's critical path (goal: at most 2x analyze-alone)

``--scale`` measures how traceprobe's time and peak memory grow with the trace: it
writes k-fold copies of TRACE with scripts/enlarge_trace.py (into --data-dir, reused
when newer than TRACE and the script) and reports seconds and MB per raw (uncompressed) MB.

``--shapes`` measures ``traceprobe analyze`` on generated traces of shapes that once made
its cost grow faster than the trace (issue 9): 10,000 streams on one GPU (stream
concurrency), and 10,000 ProfilerSteps with ``--step all`` (one sub-report per step), both
generated, and 10,000 real steps (the committed 100-step H200 trace enlarged 100 times) with
``--step all``; TRACE is not needed. The target is under 10 s each on a 2-core machine, and
``--step all``'s peak memory within 1.2x of the whole-trace report's on the same trace (the
``-whole`` rows): the steps are built and written a block at a time.

The report is Markdown; ``--write-docs FILE`` puts exactly what was printed between
``<!-- bench:start -->`` and ``<!-- bench:end -->`` in FILE (``bench-scale`` markers
for ``--scale``, ``bench-shapes`` for ``--shapes``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SECTIONS = {"compare": "bench", "scale": "bench-scale", "shapes": "bench-shapes"}  # --write-docs
SPEED_GOAL, MEMORY_GOAL, FLOOR_GOAL = 12, 0.30, 2  # issue 22: vs HTA's time and memory, the floor

LABELS: dict[str, str] = {
    "hta": "HTA TraceAnalysis",
    "traceprobe": "traceprobe analyze",
    "msgspec": "floor: gunzip + msgspec Structs",
    "gunzip": "gunzip only",
    "orjson": "gunzip + orjson dicts",
    "json": "gunzip + json dicts",
    "startup": "python + import numpy, pandas",
    "analyze-alone": "traceprobe analyze without the critical path",
    "whatif": "traceprobe whatif (critical path + replay)",
}
ALL_ROWS = list(LABELS)
DEFAULT_TRACEPROBE_CMD = (
    "{python} -m traceprobe.cli analyze {trace} --format json --output {output}"
)


# --------------------------------------------------------------------------- children


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data


def _floor_type() -> type:
    """The typed Structs of the decode floor: only the fields an overlap analysis reads."""
    import msgspec

    opt = msgspec.field
    args = msgspec.defstruct(
        "Args",
        [
            ("device", int | None, None),
            ("stream", int | None, None),
            ("correlation", int | None, None),
            ("external_id", int | None, opt(default=None, name="External id")),
        ],
        gc=False,  # no GC tracking: about twice as fast to decode 200k events, and smaller
    )
    event = msgspec.defstruct(
        "Event",
        [
            ("ph", str, ""),
            ("cat", str | None, None),
            ("name", str | None, None),
            ("pid", int | str | None, None),
            ("tid", int | str | None, None),
            ("ts", float | None, None),
            ("dur", float | None, None),
            ("args", args | None, None),
        ],
        gc=False,
    )
    return msgspec.defstruct("Trace", [("traceEvents", list[event], opt(default_factory=list))])


def _child(kind: str, path: str) -> None:
    """What one measured decode process does; prints a one-line JSON summary."""
    if kind == "gunzip":
        data = _read(path)
        n = len(data)
    elif kind == "json":
        n = len(json.loads(_read(path))["traceEvents"])
    elif kind == "orjson":
        import orjson

        n = len(orjson.loads(_read(path))["traceEvents"])
    elif kind == "msgspec":
        import msgspec

        n = len(msgspec.json.decode(_read(path), type=_floor_type()).traceEvents)
    elif kind == "startup":
        import numpy  # noqa: F401
        import pandas  # noqa: F401

        n = 0
    elif kind == "analyze-alone":
        import tempfile

        import traceprobe.report.build as build
        from traceprobe.cli import cli

        build._critical_paths = lambda tl, window=None, **_: {"window": None, "steps": {}}  # type: ignore
        with tempfile.TemporaryDirectory() as d:
            out = str(Path(d) / "out.json")
            cli.main(["analyze", path, "--format", "json", "--output", out],
                     standalone_mode=False)
            n = Path(out).stat().st_size
    elif kind == "hta":
        from hta.trace_analysis import TraceAnalysis

        t = TraceAnalysis(trace_dir=path)
        n = sum(len(df) for df in t.t.get_all_traces().values())
    else:
        raise SystemExit(f"unknown child kind {kind!r}")
    print(json.dumps({"kind": kind, "n": n}))


# --------------------------------------------------------------------------- measuring


@dataclass
class Run:
    seconds: float
    peak_rss_mb: float
    rc: int
    out: str
    err_tail: str


@dataclass
class Row:
    key: str
    label: str
    argv: list[str]
    runs: list[Run] = field(default_factory=list)

    @property
    def ok_runs(self) -> list[Run]:
        return [r for r in self.runs if r.rc == 0]

    @property
    def failed(self) -> Run | None:
        bad = [r for r in self.runs if r.rc != 0]
        return bad[0] if bad else None

    def median_s(self) -> float | None:
        ok = self.ok_runs
        return statistics.median(r.seconds for r in ok) if ok else None

    def median_rss(self) -> float | None:
        ok = self.ok_runs
        return statistics.median(r.peak_rss_mb for r in ok) if ok else None


# Why a launcher: on Linux a process's ru_maxrss survives exec, and at exec it takes the
# high-water mark of the memory image it replaces, i.e. of the process that forked it. A
# child forked straight from this script would report at least this script's RSS (which
# grows when --scale has written copies). So a bare `python -S` (about 9 MB) forks the
# measured command, times it, reaps it with wait4 and writes "seconds maxrss exitcode".
# ru_maxrss is one process's high-water mark: for a command that starts worker processes
# it would hide the workers. So the launcher also samples, every 4 ms, the resident memory
# of the whole process tree (/proc/PID/statm of the child and its descendants, summed) and
# reports the larger of the two peaks.
LAUNCHER = r"""
import os, sys, time
out, argv = sys.argv[1], sys.argv[2:]
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def tree_kib(root):
    # Resident memory of `root` and every descendant now alive (worker processes count).
    total, todo = 0, [root]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm") as fh:
                total += int(fh.read().split()[1]) * PAGE_KIB
            with open(f"/proc/{p}/task/{p}/children") as fh:
                todo.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            pass
    return total


t0 = time.perf_counter()
tree = 0
try:
    pid = os.posix_spawnp(argv[0], argv, os.environ)
except OSError as e:
    sys.stderr.write(f"cannot start {argv[0]}: {e}\n")
    rc, dt, maxrss = 127, 0.0, 0
else:
    while True:
        got, status, ru = os.wait4(pid, os.WNOHANG)
        if got:
            break
        tree = max(tree, tree_kib(pid))
        time.sleep(0.004)
    dt = time.perf_counter() - t0
    rc, maxrss = os.waitstatus_to_exitcode(status), ru.ru_maxrss
with open(out, "w") as fh:
    fh.write(f"{dt!r} {max(maxrss, tree)} {rc}\n")
"""


def _maxrss_mb(v: int) -> float:
    return v / 2**20 if sys.platform == "darwin" else v / 1024  # bytes on macOS, KiB elsewhere


def measure(argv: list[str], workdir: Path) -> Run:
    """Run argv as a child; its wall seconds and its own peak RSS (via LAUNCHER)."""
    out_p, err_p, res_p = workdir / "child.out", workdir / "child.err", workdir / "child.res"
    res_p.unlink(missing_ok=True)
    with open(out_p, "wb") as out, open(err_p, "wb") as err:
        done = subprocess.run(
            [sys.executable, "-S", "-c", LAUNCHER, str(res_p), *argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
        )
    err_lines = err_p.read_text(errors="replace").strip().splitlines()
    err_tail = err_lines[-1] if err_lines else "(nothing on stderr)"
    try:
        seconds, maxrss, rc = res_p.read_text().split()
    except (OSError, ValueError):
        return Run(0.0, 0.0, done.returncode or 1, "", f"launcher failed: {err_tail}")
    return Run(
        seconds=float(seconds),
        peak_rss_mb=_maxrss_mb(int(maxrss)),
        rc=int(rc),
        out=out_p.read_text(errors="replace"),
        err_tail=err_tail,
    )


def hta_dir(trace: Path, workdir: Path) -> Path:
    """A directory holding only a link to `trace`, named as HTA wants (shared with --hta)."""
    from traceprobe.hta_bridge import rank_dir

    return rank_dir(trace, workdir)


def argv_for(key: str, trace: Path, workdir: Path, traceprobe_cmd: str) -> list[str]:
    py = sys.executable
    if key == "traceprobe":
        fill = {
            "{python}": py,
            "{trace}": str(trace),
            "{output}": str(workdir / "traceprobe-out.json"),
        }
        parts = shlex.split(traceprobe_cmd)
        for old, new in fill.items():
            parts = [p.replace(old, new) for p in parts]
        return parts
    if key == "whatif":
        return [py, "-m", "traceprobe.cli", "whatif", str(trace), "--format", "json",
                "--output", str(workdir / "traceprobe-out.json")]
    target = str(hta_dir(trace, workdir)) if key == "hta" else str(trace)
    return [py, str(Path(__file__).resolve()), "--child", key, target]


def run_rows(rows: list[Row], runs: int, warmup: int, workdir: Path, log) -> None:
    for rnd in range(warmup + runs):
        order = rows[rnd % len(rows) :] + rows[: rnd % len(rows)]  # rotate who goes first
        for row in order:
            if row.failed is not None:
                continue  # a broken command is reported once, not retried
            out_file = workdir / "traceprobe-out.json"
            out_file.unlink(missing_ok=True)
            r = measure(row.argv, workdir)
            out_file.unlink(missing_ok=True)
            tag = "warm-up" if rnd < warmup else f"run {rnd - warmup + 1}/{runs}"
            state = "ok" if r.rc == 0 else f"FAILED rc={r.rc}: {r.err_tail}"
            log(f"  {tag:>9}  {row.key:<10} {r.seconds:7.2f} s {r.peak_rss_mb:8.0f} MB  {state}")
            if rnd >= warmup or r.rc != 0:
                row.runs.append(r)


# --------------------------------------------------------------------------- reporting


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gb() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _git_rev() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],  # read-only
            capture_output=True,
            text=True,
            timeout=10,
        )
        return out.stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def _compile_traceprobe() -> None:
    """Byte-compile traceprobe first, as ``pip install`` does: an editable checkout run with
    PYTHONDONTWRITEBYTECODE (set on CI machines) would otherwise compile every module from
    source in every run (~0.1 s), which no installed copy does. HTA is installed, so compiled."""
    import compileall

    compileall.compile_dir(str(REPO / "traceprobe"), quiet=1)


def machine_lines() -> list[str]:
    cores = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    pkgs = ", ".join(
        f"{name} {_version(dist)}"
        for name, dist in [
            ("traceprobe", "traceprobe"),
            ("HTA (traceinsight)", "traceinsight"),
            ("pandas", "pandas"),
            ("numpy", "numpy"),
            ("msgspec", "msgspec"),
            ("orjson", "orjson"),
        ]
    )
    return [
        f"- Machine: {_cpu_model()}, {cores} cores ({usable} usable), {_ram_gb()} RAM, "
        f"{platform.system()} {platform.release()}",
        f"- Python {platform.python_version()}; {pkgs}; traceprobe tree at {_git_rev()}"
        " (byte-compiled, as an installed copy is)",
    ]


def raw_size(path: Path) -> int:
    """Uncompressed size in bytes (streamed, so the parent stays small)."""
    with open(path, "rb") as fh:
        if fh.read(2) != b"\x1f\x8b":
            return path.stat().st_size
    n = 0
    with gzip.open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            n += len(chunk)
    return n


def _events(rows: list[Row]) -> str:
    for key in ("msgspec", "orjson", "json"):
        for row in rows:
            if row.key == key and row.ok_runs:
                try:
                    return f"{json.loads(row.ok_runs[0].out)['n']:,} events"
                except (ValueError, KeyError):
                    pass
    return "events not counted"


def _ratio(x: float | None, ref: float | None) -> str:
    if x is None or ref is None or ref == 0:
        return "–"
    return f"{x / ref:.2f}×"


def _spread(row: Row) -> str:
    ok = row.ok_runs
    if not ok:
        return "–"
    return f"{min(r.seconds for r in ok):.2f}–{max(r.seconds for r in ok):.2f}"


def table(rows: list[Row]) -> list[str]:
    by = {r.key: r for r in rows}
    hta_s = by["hta"].median_s() if "hta" in by else None
    hta_m = by["hta"].median_rss() if "hta" in by else None
    fl_s = by["msgspec"].median_s() if "msgspec" in by else None
    fl_m = by["msgspec"].median_rss() if "msgspec" in by else None
    out = [
        "| what | runs | median s | min–max s | median peak RSS MB "
        "| time / HTA | RSS / HTA | time / floor | RSS / floor |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        s, m = row.median_s(), row.median_rss()
        if s is None:
            bad = row.failed
            why = f"failed (exit {bad.rc}): {bad.err_tail}" if bad else "no runs"
            out.append(f"| {row.label} | 0 | {why.replace('|', '/')[:120]} | | | | | | |")
            continue
        n_bad = len(row.runs) - len(row.ok_runs)
        n_runs = f"{len(row.ok_runs)}" + (f" ({n_bad} failed)" if n_bad else "")
        out.append(
            f"| {row.label} | {n_runs} | {s:.2f} | {_spread(row)} | {m:.0f} "
            f"| {_ratio(s, hta_s)} | {_ratio(m, hta_m)} | {_ratio(s, fl_s)} | {_ratio(m, fl_m)} |"
        )
    wi, alone = by.get("whatif"), by.get("analyze-alone")
    if wi and alone and wi.median_s() is not None and alone.median_s():
        r = wi.median_s() / alone.median_s()
        out += ["", f"critical path + replay (whatif) / analyze without it: {r:.2f}× "
                    f"(goal ≤ 2×: {'met' if r <= 2 else 'NOT met'})."]
    tp = by.get("traceprobe")
    if tp and tp.median_s() is not None and hta_s and hta_m:
        speed = hta_s / tp.median_s()
        mem = tp.median_rss() / hta_m
        speed_ok = "met" if speed >= SPEED_GOAL else "NOT met"
        mem_ok = "met" if mem <= MEMORY_GOAL else "NOT met"
        out += [
            "",
            f"traceprobe vs HTA: {speed:.1f}× as fast (goal ≥ {SPEED_GOAL}×: {speed_ok}),"
            f" {mem:.2f} of its peak memory (goal ≤ {MEMORY_GOAL:.2f}: {mem_ok}).",
        ]
        if fl_s:
            f = tp.median_s() / fl_s
            out.append(f"traceprobe vs the decode floor: {f:.2f}× its time (goal ≤ "
                       f"{FLOOR_GOAL}×: {'met' if f <= FLOOR_GOAL else 'NOT met'}).")
    return out


def report(trace: Path, rows: list[Row], runs: int) -> str:
    size = trace.stat().st_size
    raw = raw_size(trace)
    lines = [
        f"### `{trace.name}` ({size / 1e6:.1f} MB on disk, {raw / 1e6:.1f} MB raw JSON, "
        f"{_events(rows)})",
        "",
        *machine_lines(),
        f"- {runs} measured runs per row, each a fresh process, rows taking turns, "
        f"after one warm-up round; {time.strftime('%Y-%m-%d')}",
        f"- Load average when done: {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
        "(1, 5, 15 min; 2 cores)",
        "",
        *table(rows),
    ]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- scaling


def scaled_copies(
    trace: Path, ks: list[int], data_dir: Path, gz: bool, log
) -> list[tuple[int, Path]]:
    """k-fold copies of trace, written by scripts/enlarge_trace.py in its own process."""
    stem = trace.name.removesuffix(".gz").removesuffix(".json")
    out = []
    for k in ks:
        dst = data_dir / f"{stem}.x{k}.json{'.gz' if gz else ''}"
        newest_input = max(trace.stat().st_mtime, (HERE / "enlarge_trace.py").stat().st_mtime)
        if not dst.exists() or dst.stat().st_mtime < newest_input:
            t0 = time.perf_counter()
            cmd = [
                sys.executable,
                str(HERE / "enlarge_trace.py"),
                str(trace),
                str(dst),
                "-k",
                str(k),
            ]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            log(
                f"  wrote {dst} ({dst.stat().st_size / 1e6:.0f} MB) in "
                f"{time.perf_counter() - t0:.1f} s"
            )
        out.append((k, dst))
    return out


def _within(values: list[float], tol: float = 0.25) -> tuple[bool, float]:
    """Whether all values are within ±tol of their median, and the worst deviation."""
    if not values:
        return False, float("nan")
    med = statistics.median(values)
    worst = max(abs(v / med - 1) for v in values) if med else float("inf")
    return worst <= tol, worst


def scale_report(trace: Path, results: list[tuple[int, Path, int, list[Row]]], runs: int) -> str:
    lines = [
        f"### Scaling: k copies of `{trace.name}` (scripts/enlarge_trace.py)",
        "",
        *machine_lines(),
        f"- {runs} measured runs per size and row, median shown; MB = 10^6 bytes of raw JSON",
        "",
    ]
    keys = [row.key for row in results[0][3]]
    for key in keys:
        lines += [
            f"**{LABELS[key]}**",
            "",
            "| k | file MB | raw MB | median s | s / raw MB | peak RSS MB | RSS MB / raw MB "
            "| marginal s / MB | marginal RSS / MB |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        pts = []
        for k, path, raw, rows in results:
            row = next(r for r in rows if r.key == key)
            s, m = row.median_s(), row.median_rss()
            mb = raw / 1e6
            if s is None:
                bad = row.failed
                why = f"failed (exit {bad.rc}): {bad.err_tail}" if bad else "no runs"
                lines.append(
                    f"| {k} | {path.stat().st_size / 1e6:.1f} | {mb:.1f} | {why[:100]} | | | | | |"
                )
                continue
            pts.append((mb, s, m))
            if len(pts) > 1 and mb > pts[0][0]:
                ms = f"{(s - pts[0][1]) / (mb - pts[0][0]):.4f}"
                mm = f"{(m - pts[0][2]) / (mb - pts[0][0]):.2f}"
            else:
                ms = mm = "–"
            lines.append(
                f"| {k} | {path.stat().st_size / 1e6:.1f} | {mb:.1f} | {s:.2f} | {s / mb:.4f} "
                f"| {m:.0f} | {m / mb:.2f} | {ms} | {mm} |"
            )
        if len(pts) >= 2:
            per_s = _within([s / mb for mb, s, _ in pts])
            per_m = _within([m / mb for mb, _, m in pts])
            base = pts[0]
            marg = [p for p in pts[1:] if p[0] > base[0]]
            mar_s = _within([(s - base[1]) / (mb - base[0]) for mb, s, _ in marg])
            mar_m = _within([(m - base[2]) / (mb - base[0]) for mb, _, m in marg])

            def say(name: str, res: tuple[bool, float]) -> str:
                ok, worst = res
                return f"{name} {'within' if ok else 'NOT within'} ±25% (worst {worst:+.0%})"

            marginal = (
                say("time", mar_s) + "; " + say("RSS", mar_m)
                if len(marg) >= 2
                else "needs at least three sizes"
            )
            lines += [
                "",
                "Per MB over whole runs: " + say("time", per_s) + "; " + say("RSS", per_m) + ".",
                "Marginal per MB (above the smallest size, so the fixed start-up cost drops out): "
                + marginal
                + ".",
            ]
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------- docs


def _markers(path: Path, name: str) -> tuple[str, str, str]:
    """(text, start marker, end marker) of path; exits with the fix when they are missing."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    try:
        doc = path.read_text()
    except OSError as e:
        raise SystemExit(f"{path}: cannot read it to write the report into ({e.strerror})") from e
    if start not in doc or end not in doc or doc.index(start) > doc.index(end):
        raise SystemExit(
            f"{path}: no '{start}' ... '{end}' section to rewrite; add the two marker lines "
            "where the figures should go"
        )
    return doc, start, end


def write_docs(path: Path, text: str, name: str = "bench") -> None:
    """Replace what is between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` in path."""
    doc, start, end = _markers(path, name)
    head, rest = doc.split(start, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{start}\n{text.rstrip()}\n{end}{tail}")


# --------------------------------------------------------------------------- main


# --------------------------------------------------------------------------- shapes


def many_streams_trace(n: int = 10_000) -> dict:
    """One GPU with ``n`` streams (CUDA graphs, NCCL channels), two kernels each, launched in
    waves of 64 so that streams overlap; one launch call per kernel."""
    events: list[dict] = []
    corr = 0
    for s in range(n):
        for k in range(2):
            corr += 1
            t = (s // 64) * 200 + k * 100 + (s % 64)
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                           "pid": 1, "tid": 1, "ts": t, "dur": 2, "args": {"correlation": corr}})
            events.append({"ph": "X", "cat": "kernel", "name": f"k{s % 50}", "pid": 0,
                           "tid": 1000 + s, "ts": t + 5, "dur": 80,
                           "args": {"device": 0, "stream": 1000 + s, "correlation": corr}})
    return {"schemaVersion": 1, "traceEvents": events}


def many_steps_trace(n: int = 10_000) -> dict:
    """``n`` ProfilerSteps, each with a launch, a kernel, a copy and an op (for --step all)."""
    events: list[dict] = []
    for i in range(n):
        t = i * 100
        events += [
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1,
             "tid": 1, "ts": t, "dur": 100},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t + 1,
             "dur": 8},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
             "ts": t + 2, "dur": 5, "args": {"correlation": 2 * i}},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": t + 10,
             "dur": 50, "args": {"device": 0, "stream": 7, "correlation": 2 * i}},
            {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0,
             "tid": 8, "ts": t + 20, "dur": 30,
             "args": {"device": 0, "stream": 8, "correlation": 2 * i + 1, "bytes": 4096}},
        ]
    return {"schemaVersion": 1, "traceEvents": events}


REAL_STEPS = "sample_traces/h200/many-steps"  # 100 real steps (scripts/gpu/many_steps.sh)
REAL_COPIES = 100  # -> 10,000 real-shaped steps (scripts/enlarge_trace.py)


def real_steps_trace(path: Path) -> None:
    """10,000 steps as recorded: the committed 100-step H200 trace enlarged 100 times."""
    src = next((REPO / REAL_STEPS).glob("*.pt.trace.json*"))
    subprocess.run([sys.executable, str(REPO / "scripts" / "enlarge_trace.py"), "-k",
                    str(REAL_COPIES), "--gzip-level", "1", str(src), str(path)],
                   check=True, stdout=subprocess.DEVNULL)


def _json_gz(make):  # type: ignore[no-untyped-def]
    """A writer of ``make()``'s trace as gzipped JSON."""
    def write(path: Path) -> None:
        path.write_bytes(gzip.compress(json.dumps(make()).encode(), mtime=0))
    return write


# key: (label, writer of the trace, extra arguments, the key whose trace it reuses)
SHAPES: dict[str, tuple[str, object, list[str], str | None]] = {
    "streams-10k": ("10,000 streams, one GPU", _json_gz(many_streams_trace), [], None),
    "steps-10k": ("10,000 steps, --step all", _json_gz(many_steps_trace), ["--step", "all"],
                  None),
    "steps-10k-whole": ("the same, whole trace only", None, [], "steps-10k"),
    "real-10k": ("10,000 real H200 steps, --step all", real_steps_trace, ["--step", "all"],
                 None),
    "real-10k-whole": ("the same, whole trace only", None, [], "real-10k"),
}
SHAPE_TARGET_S = 10.0
SHAPE_MEMORY_GOAL = 1.2  # --step all's peak over the whole-trace report's, same trace


def shape_rows(workdir: Path, traceprobe_cmd: str, log) -> list[Row]:
    rows = []
    for key, (label, make, extra, same_as) in SHAPES.items():
        path = workdir / f"{same_as or key}.json.gz"
        if same_as is None and callable(make):
            make(path)
            log(f"bench: wrote {path.name} ({path.stat().st_size / 1e6:.1f} MB gzipped)")
        rows.append(Row(key, label, argv_for("traceprobe", path, workdir, traceprobe_cmd) + extra))
    return rows


def shapes_report(rows: list[Row], runs: int) -> str:
    out = [
        "| shape | runs | median s | min–max s | median peak RSS MB | under 10 s |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in rows:
        s, m = row.median_s(), row.median_rss()
        ok = "–" if s is None else ("yes" if s < SHAPE_TARGET_S else "**no**")
        shown = "failed" if s is None else f"{s:.2f}"
        out.append(
            f"| {row.label} | {len(row.ok_runs)}/{runs} | {shown} | {_spread(row)} | "
            f"{'–' if m is None else f'{m:.0f}'} | {ok} |"
        )
    by_key = {r.key: r for r in rows}
    notes = []
    for key, (label, _, _, same_as) in SHAPES.items():
        base = by_key.get(f"{key}-whole")
        if same_as is None and base is not None and key in by_key:
            a, b = by_key[key].median_rss(), base.median_rss()
            if a is not None and b:
                ok = "met" if a / b <= SHAPE_MEMORY_GOAL else "NOT met"
                notes.append(f"{label}: peak memory {a / b:.2f}× the whole-trace report's on "
                             f"the same trace (goal ≤ {SHAPE_MEMORY_GOAL}×: {ok}).")
    return "\n".join([*machine_lines(), "", *out, *([""] + notes if notes else [])]) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python scripts/bench.py trace.json.gz --runs 5 "
        "--write-docs docs/BENCHMARKS.md\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("trace", type=Path, nargs="?", help="a Kineto trace (.json or .json.gz)")
    ap.add_argument("--runs", type=int, default=5, help="measured runs per row (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="unmeasured rounds first (default 1)")
    ap.add_argument("--only", default=None, help=f"rows to run, of {','.join(ALL_ROWS)}")
    ap.add_argument(
        "--traceprobe-cmd",
        default=DEFAULT_TRACEPROBE_CMD,
        help="command for the traceprobe row; {python}, {trace}, {output} are filled in",
    )
    ap.add_argument(
        "--write-docs",
        type=Path,
        default=None,
        metavar="FILE",
        help="put the printed report between the bench markers of FILE",
    )
    ap.add_argument(
        "--scale",
        default=None,
        metavar="K,K,...",
        help="linearity mode: measure k-fold copies of TRACE (e.g. 1,2,5,10,24)",
    )
    ap.add_argument(
        "--data-dir",
        type=Path,
        default=REPO / "bench-data",
        help="where --scale writes its copies (default bench-data/)",
    )
    gz = ap.add_mutually_exclusive_group()
    gz.add_argument(
        "--gzip",
        dest="gzip",
        action="store_true",
        default=None,
        help="--scale copies are gzipped (default: as TRACE is)",
    )
    gz.add_argument("--no-gzip", dest="gzip", action="store_false")
    ap.add_argument("--shapes", action="store_true",
                    help="measure generated 10,000-stream and 10,000-step traces and 10,000 "
                    "real H200 steps (no TRACE)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--ranks", type=int, default=None, metavar="N",
                    help="many-rank mode: an N-rank job made from the traces in TRACE (a "
                    "folder), local processes vs a Dask LocalCluster (scripts/bench_ranks.py)")
    ap.add_argument("--sizes", default="1,4", metavar="K,K",
                    help="--ranks: size multipliers of the generated traces (default 1,4)")
    ap.add_argument("--url", action="store_true",
                    help="--ranks: the job on local disk vs on an S3 server on 127.0.0.1 "
                    "(moto), both on a Dask LocalCluster (scripts/bench_url.py)")
    a = ap.parse_args(argv)
    if a.url and not a.ranks:
        ap.error("--url measures a many-rank job: give --ranks N")
    if a.ranks and a.url:
        import bench_url

        if "--runs" not in (argv if argv is not None else sys.argv):
            a.runs = 1
        if a.write_docs:
            _markers(a.write_docs, bench_url.MARKER)
        return bench_url.main(a, machine_lines(), write_docs)
    if a.ranks:
        import bench_ranks

        if "--runs" not in (argv if argv is not None else sys.argv):
            a.runs = 1  # a 1,024-rank run takes minutes
        if a.write_docs:
            _markers(a.write_docs, bench_ranks.MARKER)
        return bench_ranks.main(a, machine_lines(), write_docs)

    if a.child:
        _child(a.child, str(a.trace))
        return 0
    _compile_traceprobe()
    if a.shapes:
        if a.write_docs:
            _markers(a.write_docs, SECTIONS["shapes"])  # fail now, not after minutes
        workdir = Path(tempfile.mkdtemp(prefix="traceprobe-bench-"))
        try:
            rows = shape_rows(workdir, a.traceprobe_cmd, lambda m: print(m, file=sys.stderr))
            run_rows(rows, a.runs, a.warmup, workdir, lambda m: print(m, file=sys.stderr))
            text = shapes_report(rows, a.runs)
            print(text, end="")
            if a.write_docs:
                write_docs(a.write_docs, text, SECTIONS["shapes"])
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        return 0
    if a.trace is None:
        ap.error("give a TRACE (or --shapes)")

    trace: Path = a.trace.resolve()
    if not trace.is_file():
        ap.error(f"no such trace file: {a.trace}")
    section = SECTIONS["compare" if a.scale is None else "scale"]
    if a.write_docs:
        _markers(a.write_docs, section)  # fail now, not after minutes of measuring
    default_rows = ALL_ROWS if a.scale is None else ["traceprobe", "msgspec"]
    keys = default_rows if a.only is None else [k.strip() for k in a.only.split(",") if k.strip()]
    unknown = [k for k in keys if k not in LABELS]
    if unknown:
        ap.error(f"unknown rows {unknown}; choose from {','.join(ALL_ROWS)}")

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    workdir = Path(tempfile.mkdtemp(prefix="traceprobe-bench-"))
    try:
        if a.scale is None:
            rows = [Row(k, LABELS[k], argv_for(k, trace, workdir, a.traceprobe_cmd)) for k in keys]
            log(f"bench: {trace.name}, rows {', '.join(keys)}, {a.runs} runs")
            run_rows(rows, a.runs, a.warmup, workdir, log)
            text = report(trace, rows, a.runs)
        else:
            ks = sorted({int(x) for x in a.scale.split(",")})
            gzipped = a.gzip if a.gzip is not None else trace.name.endswith(".gz")
            copies = scaled_copies(trace, ks, a.data_dir, gzipped, log)
            results = []
            for k, path in copies:
                rows = [
                    Row(key, LABELS[key], argv_for(key, path, workdir, a.traceprobe_cmd))
                    for key in keys
                ]
                log(f"bench: {path.name}")
                run_rows(rows, a.runs, a.warmup, workdir, log)
                results.append((k, path, raw_size(path), rows))
            text = scale_report(trace, results, a.runs)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(text, end="")
    if a.write_docs:
        write_docs(a.write_docs, text, section)
        log(f"bench: wrote the report into {a.write_docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
