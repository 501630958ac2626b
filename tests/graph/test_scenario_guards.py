"""whatif's scenario guards (issue 24): factors that overflow the int64 durations, and
regular expressions that backtrack without bound, are usage errors before any load."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracebuild import TraceBuilder
from traceprobe.cli import cli
from traceprobe.errors import UsageError
from traceprobe.graph.scenarios import parse


def trace(tmp_path: Path, names: list[str]) -> Path:
    t = TraceBuilder()
    t.step(1, ts=0, dur=1000)
    for i, n in enumerate(names):
        t.launch(n, cpu_ts=1 + 10 * i, cpu_dur=2, gpu_ts=5 + 50 * i, gpu_dur=40)
    return t.write(tmp_path / "t.json")


@pytest.mark.parametrize("factor", ["nan", "inf", "-inf", "1e-11", "1e-13", "1e-300", "0",
                                    "-2", "1e30"])
def test_a_factor_out_of_range_is_refused(tmp_path: Path, factor: str) -> None:
    """GIVEN kernels:gemm=F with F non-finite or far out of range THEN exit 2, one line (the
    old code predicted 58x faster for kernels made slower, or crashed with exit 70)."""
    t = trace(tmp_path, ["gemm"])
    r = CliRunner().invoke(cli, ["whatif", str(t), "-s", f"kernels:gemm={factor}"])
    assert r.exit_code == 2, r.output
    assert r.stderr.count("\n") == 1 and "factor from 0.001 to 1e+09" in r.stderr


def test_factors_in_range_scale_the_kernels(tmp_path: Path) -> None:
    """The limits themselves are accepted, and slower (F < 1) predicts no shorter step."""
    import json

    t = trace(tmp_path, ["gemm"])
    for f in ("0.001", "1e9", "0.5"):
        r = CliRunner().invoke(cli, ["whatif", str(t), "-s", f"kernels:gemm={f}", "-f", "json"])
        assert r.exit_code == 0, r.output
        w = json.loads(r.stdout)["windows"][0]
        if f == "0.5":
            assert w["predicted_us"] >= w["measured_us"]


@pytest.mark.parametrize("rx", [r"(a+)+$", r"(a*)*b", r"(a|ab)*c", r"(\w+\s?)*$", r"(a|a)+$",
                                r"((ab)*)+x"])
def test_a_pattern_that_backtracks_without_bound_is_refused(tmp_path: Path, rx: str) -> None:
    """GIVEN kernels:(a+)+$=2 and names of 33 a's and '!' THEN exit 2 at once, not a hang."""
    t = trace(tmp_path, ["a" * 33 + "!"])
    t0 = time.perf_counter()
    r = CliRunner().invoke(cli, ["whatif", str(t), "-s", f"kernels:{rx}=2"])
    assert time.perf_counter() - t0 < 5
    assert r.exit_code == 2, r.output
    assert "exponential time" in r.stderr


@pytest.mark.parametrize("rx", ["gemm", "gemm|conv", "(gemm|conv)+", "sm90_.*_tn", "a{2,5}",
                                "(?:ab)+", r"\bnccl"])
def test_ordinary_patterns_pass(rx: str) -> None:
    parse(f"kernels:{rx}=2")
    parse(f"spread:{rx}=2")


def test_spread_counts() -> None:
    for bad in ("0", "2000", "x"):
        with pytest.raises(UsageError):
            parse(f"spread:gemm={bad}")
