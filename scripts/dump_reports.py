"""Before/after yardstick: every report of every sample and corpus trace, as JSON files.

    PYTHONPATH=. python scripts/dump_reports.py OUTDIR [--only-ranks]
    diff -r BEFORE AFTER        # or: python scripts/dump_reports.py --diff BEFORE AFTER

For each trace under sample_traces/, bench/ and ../shared/corpus (when present) it writes
``analyze(step="all")`` (the whole report and every step's sub-report) as one JSON file, and
for each folder of rank traces the many-rank summary. A refactor that claims "behaviour
identical" shows an empty diff. Keys listed with --ignore (dotted, e.g.
``critical_path``) are dropped before writing, for changes a fix makes on purpose.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _shared_dir() -> Path:
    """``../shared`` beside the checkout; in a git worktree (``/work/wt/NAME``), the one
    beside the main checkout, so that a worktree's dump names the same corpus traces
    (``$DUMP_SHARED``, when set, names it outright)."""
    import os

    if os.environ.get("DUMP_SHARED"):
        return Path(os.environ["DUMP_SHARED"])
    here = REPO.parent / "shared"
    if here.is_dir():
        return here
    import subprocess

    try:
        common = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--git-common-dir"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return here
    main = (REPO / common).resolve().parent
    return main.parent / "shared"


SHARED = _shared_dir()


def _traces() -> list[Path]:
    out: list[Path] = []
    for r in (REPO / "sample_traces", REPO / "bench"):
        out += [p for p in r.rglob("*") if ".pt.trace.json" in p.name]
    corpus = SHARED / "corpus"
    if corpus.is_dir():
        out += [p for p in corpus.rglob("*") if p.name.endswith((".json", ".json.gz"))]
    return sorted(set(out))


def _name(p: Path) -> str:
    """The file's name in the dump: its path from the checkout (or from shared/corpus), so
    that two checkouts (worktrees) of the project give the same names."""
    for root, tag in ((REPO, ""), (SHARED, "shared__")):
        try:
            return tag + str(p.relative_to(root)).replace("/", "__")
        except ValueError:
            pass
    return str(p).replace("/", "__")


def _local(text: str) -> str:
    """Paths inside a report, made independent of where the checkout is."""
    return text.replace(str(SHARED), "<shared>").replace(str(REPO), "<repo>")


def _drop(d, keys):
    for k in keys:
        parts = k.split(".")
        stack = [d]
        for p in parts[:-1]:
            stack = [x[p] for x in stack if isinstance(x, dict) and p in x]
        for x in stack:
            if isinstance(x, dict):
                x.pop(parts[-1], None)
    for s in d.get("steps", []) or []:
        if isinstance(s, dict):
            _drop(s, keys)
    return d


def dump(out: Path, ignore: list[str], big: bool) -> int:
    import traceprobe
    from traceprobe.errors import TraceprobeError

    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for p in _traces():
        if not big and p.stat().st_size > 3_000_000:
            continue
        rel = _name(p)
        try:
            rep = traceprobe.analyze(traceprobe.load(str(p)), step="all").to_dict()
            text = json.dumps(_drop(rep, ignore), indent=1, sort_keys=True, default=str)
        except TraceprobeError as e:
            text = f"error: {type(e).__name__}: {e}\n"
        (out / f"{rel}.json").write_text(_local(text))
        n += 1
    for d in sorted({p.parent for p in _traces()}):
        files = traceprobe.find_traces(str(d))
        if len(files) < 2:
            continue
        try:
            rep = traceprobe.analyze_many([traceprobe.load(f) for f in files]).to_dict()
            text = json.dumps(_drop(rep, ignore), indent=1, sort_keys=True, default=str)
        except TraceprobeError as e:
            text = f"error: {type(e).__name__}: {e}\n"
        rel = _name(d)
        (out / f"many__{rel}.json").write_text(_local(text))
        n += 1
    print(f"dump_reports: {n} reports in {out}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--ignore", action="append", default=[], help="dotted key to drop")
    ap.add_argument("--big", action="store_true", help="include traces over 3 MB (bench)")
    ap.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"))
    a = ap.parse_args()
    if a.diff:
        import filecmp
        b, c = (Path(x) for x in a.diff)
        names = sorted({p.name for p in b.iterdir()} | {p.name for p in c.iterdir()})
        bad = [n for n in names if not (b / n).exists() or not (c / n).exists()
               or not filecmp.cmp(b / n, c / n, shallow=False)]
        for n in bad:
            print("differs:", n)
        print(f"dump_reports: {len(names) - len(bad)} of {len(names)} identical")
        return 1 if bad else 0
    if not a.out:
        ap.error("OUTDIR is required")
    return dump(Path(a.out), a.ignore, a.big)


if __name__ == "__main__":
    raise SystemExit(main())
