"""The README's Python API session runs, and prints what the README shows (a doctest)."""

from __future__ import annotations

import doctest
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _readme_session() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Python API (notebooks)", 1)[1].split("\n## ", 1)[0]
    m = re.search(r"```pycon\n(.*?)```", section, re.S)
    assert m, "README's API section has no ```pycon block"
    return m.group(1)


def test_the_readme_api_session_prints_what_the_readme_shows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pandas as pd

    monkeypatch.chdir(ROOT)  # the session reads sample_traces/ relative to the repository
    session = _readme_session()
    test = doctest.DocTestParser().get_doctest(session, {}, "README.md", "README.md", 0)
    assert len(test.examples) >= 10
    out: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    with pd.option_context("display.width", 80, "display.max_columns", 20):  # not a terminal
        runner.run(test, out=out.append)
    assert runner.failures == 0, "".join(out)


def test_dir_lists_the_api_and_import_is_light() -> None:
    code = (
        "import sys, traceprobe\n"
        "api = {'load', 'load_many', 'analyze', 'analyze_many', 'compare', 'check', 'Timeline',"
        " 'Report', 'MultiReport', 'find_traces'}\n"
        "assert api <= set(traceprobe.__all__) <= set(dir(traceprobe)), dir(traceprobe)\n"
        "assert not hasattr(traceprobe, '__getattr__')\n"
        "import traceprobe.report.model\n"
        "heavy = [m for m in ('pandas', 'numpy', 'torch', 'click') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


def test_no_submodule_import_replaces_a_public_name() -> None:
    """Importing ``traceprobe.X`` sets the package's attribute X to the module; a public
    function named like a submodule imported later (``compare`` was) would then vanish."""
    code = (
        "import importlib, pkgutil, traceprobe\n"
        "before = {n: getattr(traceprobe, n) for n in traceprobe.__all__}\n"
        "for m in pkgutil.walk_packages(traceprobe.__path__, 'traceprobe.'):\n"
        "    if not m.name.startswith(('traceprobe.record', 'traceprobe.cli')):\n"
        "        importlib.import_module(m.name)\n"
        "changed = [n for n in before if getattr(traceprobe, n) is not before[n]]\n"
        "assert not changed, changed\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
