"""The light install: a clean venv, ``pip install .`` with no extras, no torch; the analysis
(``analyze``, ``verify``) runs on the committed samples and prints exactly what the full install
prints; ``record`` says how to get torch.

Slow-ish (a venv and numpy/pandas unpacked: about a minute): it runs in CI through ``make test``.
The venv and the copy of the sources live in pytest's temporary folder; pip keeps no cache
(``--no-cache-dir``), so nothing is left outside the repository's test run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = "sample_traces/h200x2"


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PIP_NO_CACHE_DIR"] = "1"
    return env


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """GIVEN the package as a clean clone has it, installed with no extras into a new venv."""
    tmp = tmp_path_factory.mktemp("light")
    src = tmp / "src"
    listed = subprocess.run(["git", "ls-files", "-z", "setup.cfg", "pyproject.toml", "README.md",
                             "traceprobe"], cwd=ROOT, capture_output=True, check=False)
    files = [f for f in listed.stdout.decode().split("\0") if f] if listed.returncode == 0 else []
    if not files:  # not a git checkout: the same files from the tree
        files = ["setup.cfg", "pyproject.toml", "README.md"] + [
            str(p.relative_to(ROOT)) for p in (ROOT / "traceprobe").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts]
    for f in files:
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, src / f)
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    r = subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", str(src)],
                       capture_output=True, text=True, env=_clean_env(), timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return env_dir / "bin"


def run(bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / "traceprobe"), *args], cwd=ROOT, capture_output=True,
                          text=True, env=_clean_env(), timeout=300)


def here(*args: str) -> subprocess.CompletedProcess[str]:
    """The same command from this (full) install."""
    return subprocess.run([sys.executable, "-m", "traceprobe.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_the_light_install_has_no_torch_and_only_the_analysis_dependencies(light: Path) -> None:
    code = ("import importlib.util as u, traceprobe, sys\n"
            "print(traceprobe.__file__)\n"
            "print(sorted(m for m in ('torch', 'matplotlib', 'isal', 'orjson', 'tensorboard',"
            " 'traceinsight') if u.find_spec(m)))\n")
    # (not from the checkout's folder: `python -c` puts the current folder on the path)
    r = subprocess.run([str(light / "python"), "-c", code], cwd=light, capture_output=True,
                       text=True, env=_clean_env())
    where, extras = r.stdout.splitlines()
    assert where.startswith(str(light.parent)), where  # the installed copy, not this checkout
    assert extras == "[]"


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ("analyze", f"{SAMPLE}/two-devices/parallel", "-f", "json"),
    ("analyze", f"{SAMPLE}/copy/side-stream"),
    ("verify", SAMPLE, "-f", "json"),
], ids=["analyze-json", "analyze-text", "verify-json"])
def test_analyze_and_verify_print_what_the_full_install_prints(light: Path, args) -> None:
    light_run, full_run = run(light, *args), here(*args)
    assert light_run.returncode == 0, light_run.stderr
    assert light_run.stdout == full_run.stdout
    assert len(light_run.stdout) > 1000


@pytest.mark.slow
def test_record_says_how_to_get_torch(light: Path, tmp_path: Path) -> None:
    r = run(light, "record", "two-devices", "--out", str(tmp_path / "o"))
    assert r.returncode == 5
    assert r.stderr.strip() == (
        "traceprobe: error: torch is not installed: pip install 'traceprobe[record]'")
    assert not (tmp_path / "o").exists()
