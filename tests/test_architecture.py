"""The shape of the code, checked: one direction of flow, no torch in the analysis, every
command documented.

load (reader, kineto, loader) -> timeline -> metrics -> report -> render -> cli;
record is a separate wing that writes traces.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from traceprobe.cli import COMMANDS

PKG = Path(__file__).resolve().parents[1] / "traceprobe"
README = Path(__file__).resolve().parents[1] / "README.md"

# Layers, lowest first. A module may import only from its own layer or lower ones.
LAYERS = [
    {"errors", "intervals", "timeline", "output"},
    {"load"},
    {"metrics"},
    {"report"},
    {"ranks"},  # per-rank summaries and the cross-rank reduce (reads load and report)
    {"engines"},  # where summarise(file) runs: local processes or a Dask cluster
    {"render", "expect", "compare", "annotate", "tensorboard", "verify", "hta_bridge"},
    {"cli"},
]


def _layer(top: str) -> int | None:
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    return None


def _imports(path: Path) -> set[str]:
    """Names imported from traceprobe (first component after the package) and other top-levels."""
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "traceprobe":
                out.update(f"{node.module}.{a.name}" for a in node.names)
            else:
                out.add(node.module)
    return out


def _analysis_modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py")
                  if "record" not in p.relative_to(PKG).parts)


@pytest.mark.parametrize("path", _analysis_modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_analysis_never_imports_torch_nor_the_record_wing(path: Path) -> None:
    for name in _imports(path):
        assert name.split(".")[0] != "torch", f"{path.name} imports {name}"
        top = path.relative_to(PKG).parts[0].removesuffix(".py")
        if top == "cli":
            continue
        if top == "verify" and name in ("traceprobe.record.meta", "traceprobe.record.registry"):
            continue  # the verdicts read the recording's metadata and claims (torch-free modules)
        assert not name.startswith("traceprobe.record"), f"{path.name} imports {name}"


@pytest.mark.parametrize("path", _analysis_modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_imports_flow_one_way(path: Path) -> None:
    rel = path.relative_to(PKG)
    top = rel.parts[0].removesuffix(".py")
    mine = _layer(top)
    if mine is None:
        pytest.skip(f"{rel} is in no layer (package glue)")
    for name in _imports(path):
        if not name.startswith("traceprobe."):
            continue
        theirs = _layer(name.split(".")[1])
        if theirs is not None:
            assert theirs <= mine, f"{rel} (layer {mine}) imports {name} (layer {theirs})"


def test_analysis_path_loads_no_torch_at_run_time(tmp_path: Path) -> None:
    code = (
        "import sys, traceprobe.cli.analyze, traceprobe.report, traceprobe.load.pipeline, "
        "traceprobe.render.html, traceprobe.verify, traceprobe.compare, traceprobe.annotate\n"
        "bad = [m for m in ('torch', 'matplotlib', 'tensorboard') if m in sys.modules]\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help_with_an_example_and_is_in_the_readme(name: str) -> None:
    from click.testing import CliRunner

    from traceprobe.cli import cli

    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Example" in result.output
    assert f"traceprobe {name}" in README.read_text(), f"README does not show `traceprobe {name}`"
