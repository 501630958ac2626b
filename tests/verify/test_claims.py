"""docs/CLAIMS.md: every committed GPU verdict sits beside its claim, and the generated parts
are what scripts/claims.py makes of sample_traces/verdicts-h200x2.json."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "CLAIMS.md"
VERDICTS = ROOT / "sample_traces" / "verdicts-h200x2.json"
SCRIPT = ROOT / "scripts" / "claims.py"


def claims(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          cwd=ROOT)


def test_the_committed_doc_is_what_the_script_makes_of_the_committed_verdicts() -> None:
    r = claims("--check")
    assert r.returncode == 0, r.stderr


def test_every_verdict_is_in_a_row_of_the_doc_under_a_claim() -> None:
    text = DOC.read_text()
    row = re.compile(r"^\| `([\w-]+/[\w-]+)` \| \*\*([^*]+)\*\* \| (.*) \|$", re.M)
    rows = {m.group(1): (m.group(2), m.group(3)) for m in row.finditer(text)}
    for v in json.loads(VERDICTS.read_text())["verdicts"]:
        name = f"{v['workload']}/{v['variant']}"
        assert rows.get(name) == (v["verdict"], v["why"].replace("|", "\\|")), name
    heading_before = {name: text.rfind("\n### ", 0, text.index(f"| `{name}`")) for name in rows}
    assert all(i >= 0 for i in heading_before.values())


def test_a_changed_verdict_changes_the_doc_and_check_says_so(tmp_path: Path) -> None:
    data = json.loads(VERDICTS.read_text())
    flipped = next(v for v in data["verdicts"] if v["workload"] == "copy"
                   and v["variant"] == "side-stream")
    flipped["verdict"], flipped["why"] = "does not hold", "a reason made up for this test"
    changed = tmp_path / "verdicts.json"
    changed.write_text(json.dumps(data))
    doc = tmp_path / "CLAIMS.md"
    doc.write_text(DOC.read_text())
    readme = tmp_path / "README.md"  # the script fills README's table too: never the real one
    readme.write_text((ROOT / "README.md").read_text())
    r = claims("--check", "--verdicts", str(changed), "--doc", str(doc), "--readme", str(readme))
    assert r.returncode == 1 and "a reason made up for this test" in r.stderr
    assert claims("--verdicts", str(changed), "--doc", str(doc), "--readme",
                  str(readme)).returncode == 0
    assert "| `copy/side-stream` | **does not hold** | a reason made up for this test |" in (
        readme.read_text())  # README's verdict table shows copy/side-stream too
    new = doc.read_text()
    assert "| `copy/side-stream` | **does not hold** | a reason made up for this test |" in new
    before, after = DOC.read_text().splitlines(), new.splitlines()
    assert len(before) == len(after)
    changed_lines = [b for a, b in zip(before, after, strict=True) if a != b]
    assert len(changed_lines) == 2  # that row, and the line naming the JSON it came from
    assert f"from `{changed.resolve()}`" in changed_lines[0]


def test_a_variant_no_claim_names_is_an_error(tmp_path: Path) -> None:
    data = json.loads(VERDICTS.read_text())
    data["verdicts"].append({**data["verdicts"][0], "workload": "new", "variant": "thing"})
    extra = tmp_path / "verdicts.json"
    extra.write_text(json.dumps(data))
    readme = tmp_path / "README.md"
    readme.write_text((ROOT / "README.md").read_text())
    r = claims("--check", "--verdicts", str(extra), "--readme", str(readme))
    assert r.returncode != 0 and "new/thing" in r.stderr


def test_the_readme_points_at_the_doc_not_outside_the_repository() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "shared/seed" not in readme
    assert "docs/CLAIMS.md" in readme
