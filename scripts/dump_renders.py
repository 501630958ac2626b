"""Before/after yardstick for the renderers: every format of every report, as files.

    PYTHONPATH=. python scripts/dump_renders.py OUTDIR [--only SUBSTRING]
    python scripts/dump_reports.py --diff BEFORE AFTER      # the same byte-for-byte diff

For each trace of sample_traces/ and ../shared/corpus (the traces scripts/dump_reports.py
reads, under 3 MB) it writes, through the library's one entry point
``traceprobe.render.render(report, fmt, ...)``:

* every registered format (``render.formats()``: text, json, markdown, html, ...) of the
  whole report and of ``step="all"``; html with the trace's timeline (the picture), text
  also with ``color=True`` and with ``top=3``;

and through the CLI (in-process, click's runner), for the sample traces:

* ``analyze TRACE --csv DIR --plot PNG`` (the CSV files and the PNG) and ``analyze`` as
  text and markdown with ``--step all``;
* for each folder of two or more traces: ``analyze FOLDER`` (the several-traces report) in
  every format, and ``ranks FOLDER`` (the many-rank summary) as text, markdown, html and
  json, with ``--rank 0`` and ``--csv``.

Traces are named from the checkout (``sample_traces/...``: the script runs in it), and any
absolute path left inside an output is made independent of the checkout as dump_reports
does, so two checkouts give the same bytes. A refactor
of the renderers that claims "output identical" shows an empty diff.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from dump_reports import _local, _name, _traces  # noqa: E402


def _write(path: Path, data: str | bytes) -> None:
    if isinstance(data, str):
        data = _local(data).encode()
    path.write_bytes(data)


def _library(out: Path, p: Path) -> None:
    import traceprobe
    from traceprobe.errors import TraceprobeError
    from traceprobe.render import formats, render

    rel = _name(REPO / p if not p.is_absolute() else p)
    try:
        tl = traceprobe.load(str(p))
        reps = {"whole": traceprobe.analyze(tl), "all": traceprobe.analyze(tl, step="all")}
    except TraceprobeError as e:
        _write(out / f"{rel}.error", f"error: {type(e).__name__}: {e}\n")
        return
    for tag, rep in reps.items():
        for fmt in formats():
            extra = {"timelines": [tl]} if fmt == "html" else {}
            _write(out / f"{rel}.{tag}.{fmt}", render(rep, fmt, **extra))
        _write(out / f"{rel}.{tag}.text-color", render(rep, "text", color=True))
        _write(out / f"{rel}.{tag}.text-top3", render(rep, "text", top=3))
        _write(out / f"{rel}.{tag}.html-bare", render(rep, "html"))


def _cli(out: Path, tag: str, args: list[str]) -> None:
    from click.testing import CliRunner

    from traceprobe.cli import cli

    res = CliRunner().invoke(cli, args, catch_exceptions=True)
    text = f"exit {res.exit_code}\n{res.output}"
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        text += f"exception: {type(res.exception).__name__}: {res.exception}\n"
    _write(out / f"{tag}.cli", text)


def _collect(out: Path, folder: Path, tag: str) -> None:
    """Move what the CLI wrote into ``folder`` into ``out``, one file each (sorted)."""
    for f in sorted(folder.rglob("*")):
        if f.is_file():
            name = tag + "__" + str(f.relative_to(folder)).replace("/", "__")
            data = f.read_bytes()
            if f.suffix.lower() != ".png":
                data = _local(data.decode()).encode()
            (out / name).write_bytes(data)
            f.unlink()


def _via_cli(out: Path, traces: list[Path], scratch: Path) -> None:
    import traceprobe

    for p in traces:
        if not str(p).startswith("sample_traces"):
            continue
        rel = _name(REPO / p)
        work = scratch / rel
        work.mkdir(parents=True)
        _cli(out, f"{rel}.extras", ["analyze", str(p), "-o", str(work / "report.txt"),
                                    "--csv", str(work / "csv"), "--plot",
                                    str(work / "plot.png")])
        for fmt, ext in (("text", "txt"), ("markdown", "md")):
            _cli(out, f"{rel}.cli-all-{fmt}", ["analyze", str(p), "--step", "all", "-f", fmt,
                                                "-o", str(work / f"all.{ext}")])
        _collect(out, work, rel)
    for d in sorted({p.parent for p in traces}):
        if not str(d).startswith("sample_traces"):
            continue
        if len(traceprobe.find_traces(str(d))) < 2:
            continue
        rel = "many__" + _name(REPO / d)
        work = scratch / rel
        work.mkdir(parents=True)
        for fmt in ("text", "json", "markdown", "html"):
            _cli(out, f"{rel}.analyze-{fmt}", ["analyze", str(d), "-f", fmt,
                                               "-o", str(work / f"analyze.{fmt}")])
            _cli(out, f"{rel}.ranks-{fmt}", ["ranks", str(d), "-f", fmt,
                                             "-o", str(work / f"ranks.{fmt}")])
            _cli(out, f"{rel}.ranks0-{fmt}", ["ranks", str(d), "-f", fmt, "--rank", "0",
                                              "-o", str(work / f"ranks0.{fmt}")])
        _cli(out, f"{rel}.ranks-csv", ["ranks", str(d), "-o", str(work / "ranks-csv.txt"),
                                       "--csv", str(work / "ranks-csv")])
        _collect(out, work, rel)


def _relative(p: Path) -> Path:
    try:
        return p.relative_to(REPO)
    except ValueError:
        return p


def main() -> int:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--only", help="only traces whose path contains this")
    a = ap.parse_args()
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    # traces named from the checkout (sample_traces/...), so that the names drawn into a
    # PNG's title, or setting a table's width, are the same in any two checkouts
    os.chdir(REPO)
    traces = [_relative(p) for p in _traces() if p.stat().st_size <= 3_000_000
              and not re.search(r"(^|/)bench/", str(p.relative_to(p.anchor)))]
    if a.only:
        traces = [p for p in traces if a.only in str(p)]
    for p in traces:
        _library(out, p)
    with tempfile.TemporaryDirectory() as scratch:
        _via_cli(out, traces, Path(scratch))
    print(f"dump_renders: {sum(1 for _ in out.iterdir())} files in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
