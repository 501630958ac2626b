"""Many-rank tests: jobs made by scripts/make_ranks.py from the committed DDP samples."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
GPU_DDP = REPO / "sample_traces" / "h200x2" / "ddp" / "train"
CPU_DDP = REPO / "sample_traces" / "cpu" / "ddp" / "train"


def _make_ranks() -> Any:
    spec = importlib.util.spec_from_file_location("make_ranks", REPO / "scripts" / "make_ranks.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


make_ranks = _make_ranks()


def make_job(out: Path, source: Path = GPU_DDP, **kw: Any) -> tuple[Path, dict[str, Any]]:
    truth = make_ranks.make(make_ranks.sources_of([str(source)]), out=out, **kw)
    return out, truth


def traces(job: Path) -> list[str]:
    from traceprobe.load.folders import find_traces

    return [str(f) for f in find_traces(job)]


@pytest.fixture(scope="session")
def job16(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """16 GPU ranks on 2 hosts (clocks seconds apart), rank 5 late by 2 ms at each collective."""
    return make_job(tmp_path_factory.mktemp("job16"), n=16, straggler=5, delay_us=2000.0,
                    jitter_us=20.0, ranks_per_host=8, seed=1)


@pytest.fixture(scope="session")
def job32(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """32 GPU ranks on 4 hosts, two copies of the trace each, rank 21 late by 1.5 ms."""
    return make_job(tmp_path_factory.mktemp("job32"), n=32, straggler=21, delay_us=1500.0,
                    jitter_us=20.0, repeat=2, ranks_per_host=8, seed=2)


@pytest.fixture(scope="session")
def local16(job16: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    """job16 through the default engine (local worker processes)."""
    from traceprobe.engines.job import analyze_ranks

    return analyze_ranks(traces(job16[0]), jobs=2)


@pytest.fixture(scope="session")
def local32(job32: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    from traceprobe.engines.job import analyze_ranks

    return analyze_ranks(traces(job32[0]), jobs=2)


def canonical_json(doc: dict[str, Any]) -> str:
    from traceprobe.render import render

    return json.dumps(json.loads(render(doc, "json")), sort_keys=True)
