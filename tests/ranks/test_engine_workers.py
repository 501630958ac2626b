"""`--cluster local -j N`: a LocalCluster gets at most one worker per core and per trace
(issue 24: -j 10**30 asked Dask for 10**30 workers)."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from traceprobe.engines import cluster


def test_local_workers_are_clamped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster, "_cores", lambda: 4)
    assert cluster.local_workers(10**30) == 4
    assert cluster.local_workers(None) == 4
    assert cluster.local_workers(2) == 2
    assert cluster.local_workers(10**30, items=3) == 3
    assert cluster.local_workers(0, items=0) == 1


def test_the_cluster_is_asked_for_the_clamped_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """GIVEN -j 10**30 WHEN the engine starts a LocalCluster THEN it asks for the cores."""
    asked: dict[str, Any] = {}

    class FakeCluster:
        def __init__(self, **kw: Any) -> None:
            asked.update(kw)

        def close(self) -> None:
            pass

    class FakeClient:
        def __init__(self, *a: Any, **kw: Any) -> None:
            pass

        def close(self) -> None:
            pass

    fake = types.SimpleNamespace(LocalCluster=FakeCluster, Client=FakeClient)
    monkeypatch.setitem(sys.modules, "distributed", fake)
    monkeypatch.setattr(cluster, "_cores", lambda: 3)
    with cluster.DaskEngine(workers=10**30):
        pass
    assert asked["n_workers"] == 3
