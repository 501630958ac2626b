"""Fill the verdicts into docs/CLAIMS.md from a committed verdicts JSON.

    python scripts/claims.py            # rewrite the generated parts of docs/CLAIMS.md
    python scripts/claims.py --check    # exit 1, saying what differs, when they are out of date

The prose of docs/CLAIMS.md is written by hand; the parts between ``<!-- verdicts: VARIANTS -->``
and ``<!-- /verdicts -->`` (one per claim, naming the recorded variants that test it) and between
``<!-- machine -->`` and ``<!-- /machine -->`` are generated here (in README.md too, whose
"Verdicts on the claims" table shows some of the variants) from
``sample_traces/verdicts-h200x2.json`` (what ``traceprobe verify sample_traces/h200x2 -f json``
wrote). Rerun after regenerating that JSON. Every variant of the JSON must belong to some claim.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "CLAIMS.md"
README = ROOT / "README.md"  # its "Verdicts on the claims" table: some variants, same rows
VERDICTS = ROOT / "sample_traces" / "verdicts-h200x2.json"

BLOCK = re.compile(r"(<!-- verdicts: (?P<names>[^>]*?) -->\n)(?P<body>.*?)(<!-- /verdicts -->)",
                   re.S)
MACHINE = re.compile(r"(<!-- machine -->)(?P<body>.*?)(<!-- /machine -->)", re.S)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def block(names: list[str], by_name: Mapping[str, Mapping[str, Any]]) -> str:
    """The verdict table of one claim: variant, verdict, why."""
    missing = [n for n in names if n not in by_name]
    if missing:
        raise SystemExit(f"claims: {', '.join(missing)} not in the verdicts JSON; fix the"
                         " <!-- verdicts: ... --> line of docs/CLAIMS.md")
    rows = ["| variant | verdict | why (measured) |", "| :--- | :--- | :--- |"]
    for n in names:
        v = by_name[n]
        rows.append(f"| `{n}` | **{v['verdict']}** | {_cell(v['why'])} |")
    return "\n".join(rows) + "\n"


def machine_line(data: Mapping[str, Any], source: Path) -> str:
    m = data.get("machine") or {}
    gpus = m.get("gpus") or []
    where = f"{len(gpus)} x {gpus[0]}" if gpus and len(set(gpus)) == 1 else ", ".join(gpus)
    shown = source.relative_to(ROOT) if source.is_relative_to(ROOT) else source
    metas = [p for name in ("traceprobe.meta.jsonc", "traceprobe.meta.json")  # now, and before
             for p in (ROOT / str(data.get("source"))).rglob(name)]
    days = sorted({json.loads(p.read_text()).get("started", "")[:10] for p in metas} - {""})
    when = f", recorded {days[0]}" + (f" to {days[-1]}" if len(days) > 1 else "") if days else ""
    return (f"{where or 'no GPU'}, torch {m.get('torch')}, CUDA {m.get('cuda')}{when}; generated"
            f" by `scripts/claims.py` from `{shown}`")


def render(doc: str, data: Mapping[str, Any], source: Path, every: bool = True) -> str:
    """``doc`` with its generated parts filled; ``every``: each variant must be named."""
    by_name = {f"{v['workload']}/{v['variant']}": v for v in data["verdicts"]}
    used: list[str] = []

    def fill(m: re.Match[str]) -> str:
        names = m.group("names").split()
        used.extend(names)
        return m.group(1) + block(names, by_name) + m.group(4)

    out = BLOCK.sub(fill, doc)
    out = MACHINE.sub(lambda m: m.group(1) + machine_line(data, source) + m.group(3), out)
    left = [n for n in by_name if n not in used]
    if every and left:
        raise SystemExit(f"claims: no claim in docs/CLAIMS.md names {', '.join(left)}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check; exit 1 when out of date")
    ap.add_argument("--verdicts", type=Path, default=VERDICTS, help="[%(default)s]")
    ap.add_argument("--doc", type=Path, default=DOC, help="[%(default)s]")
    ap.add_argument("--readme", type=Path, default=README, help="[%(default)s]")
    a = ap.parse_args(argv)
    data = json.loads(a.verdicts.read_text())
    stale = 0
    for path, every in ((a.doc, True), (a.readme, False)):
        doc = path.read_text()
        new = render(doc, data, a.verdicts.resolve(), every)
        if new == doc:
            continue
        if a.check:
            diff = difflib.unified_diff(doc.splitlines(), new.splitlines(), "committed",
                                        "from the JSON", lineterm="", n=0)
            print("\n".join(diff), file=sys.stderr)
            print(f"claims: {path} is out of date; run python scripts/claims.py",
                  file=sys.stderr)
            stale = 1
            continue
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(new)
        tmp.replace(path)  # atomic: never half a document
        print(f"claims: wrote {path}")
    return stale


if __name__ == "__main__":
    sys.exit(main())
