"""The Dask engines for real: a distributed.LocalCluster (worker processes, loopback) and a
`dask scheduler` + `dask worker` started from the command line, as a user would.

Both must give exactly the JSON of the local path (which test_ranks_jobs checks against the
generator's truth and the raw events); the 2-rank DDP samples go through the cluster too.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import CPU_DDP, GPU_DDP, REPO, traces

pytest.importorskip("distributed")

from traceprobe.cli import main  # noqa: E402
from traceprobe.engines import ENV, choose  # noqa: E402
from traceprobe.engines.job import analyze_ranks  # noqa: E402
from traceprobe.render import render  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _dask() -> list[str]:
    exe = Path(sys.executable).parent / "dask"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "dask"]


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`dask scheduler` and `dask worker --nworkers 2` on 127.0.0.1, stopped afterwards."""
    from distributed import Client

    tmp = tmp_path_factory.mktemp("dask")
    addr = f"tcp://127.0.0.1:{_free_port()}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # the workers import this checkout
    env.pop(ENV, None)
    procs = []
    try:
        with open(tmp / "scheduler.log", "wb") as log:
            procs.append(subprocess.Popen(
                [*_dask(), "scheduler", "--host", "127.0.0.1", "--port", addr.rsplit(":", 1)[1],
                 "--no-dashboard"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp))
        with open(tmp / "worker.log", "wb") as log:
            procs.append(subprocess.Popen(
                [*_dask(), "worker", addr, "--nworkers", "2", "--nthreads", "1", "--host",
                 "127.0.0.1", "--no-dashboard", "--local-directory", str(tmp)],
                env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp))
        deadline = time.monotonic() + 90
        while True:
            try:
                with Client(addr, timeout="5s") as c:
                    c.wait_for_workers(2, timeout=max(1.0, deadline - time.monotonic()))
                break
            except OSError:
                if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                    raise
                time.sleep(0.5)
        yield addr
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _cli(tmp: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, Path]:
    out = tmp / f"out{len(list(tmp.iterdir()))}.json"
    old = dict(os.environ)
    try:
        if env:
            os.environ.update(env)
        rc = main(["analyze", *args, "-f", "json", "-o", str(out)])
    finally:
        os.environ.clear()
        os.environ.update(old)
    return rc, out.read_text() if out.exists() else "", out


def test_local_cluster_gives_the_local_json(
    tmp_path: Path, job32: tuple[Path, dict[str, Any]], local32: dict[str, Any]
) -> None:
    """`analyze JOB --cluster local` (a LocalCluster of 2 worker processes) on 32 ranks."""
    rc, text, _ = _cli(tmp_path, str(job32[0]), "--cluster", "local", "-j", "2")
    assert rc == 0
    assert text == render(local32, "json")
    assert '"last_rank": 21' in text  # the injected straggler, as the local path finds it


def test_scheduler_gives_the_local_json(
    scheduler: str, tmp_path: Path, job16: tuple[Path, dict[str, Any]], local16: dict[str, Any]
) -> None:
    rc, text, _ = _cli(tmp_path, str(job16[0]), "--scheduler", scheduler)
    assert rc == 0
    assert text == render(local16, "json")


@pytest.mark.parametrize("job", [GPU_DDP, CPU_DDP], ids=["gpu-nccl", "cpu-gloo"])
def test_ddp_samples_through_the_cluster(scheduler: str, tmp_path: Path, job: Path) -> None:
    """The 2-rank samples on the cluster, the address from DASK_SCHEDULER_ADDRESS."""
    rc, text, _ = _cli(tmp_path, str(job), "--ranks", env={ENV: scheduler})
    assert rc == 0
    assert text == render(analyze_ranks(traces(job), jobs=1), "json")
    assert '"count": 2' in text


def test_environment_address_picks_the_cluster(scheduler: str, monkeypatch: Any) -> None:
    monkeypatch.setenv(ENV, scheduler)
    with choose() as engine:
        assert engine.name == "dask"
        assert engine.client.scheduler.address == scheduler


def test_a_bad_file_is_reported_as_on_the_local_path(
    scheduler: str, tmp_path: Path, capsys: Any
) -> None:
    job = tmp_path / "job"
    job.mkdir()
    for f in GPU_DDP.glob("*.pt.trace.json.gz"):
        shutil.copy(f, job / f.name)
    (job / "zz_rank2.pt.trace.json").write_text('{"traceEvents": [{"ph": "X", "ts": ')
    rc_local, _, _ = _cli(tmp_path, str(job), "--ranks", "-j", "1")
    err_local = capsys.readouterr().err
    rc_dask, _, _ = _cli(tmp_path, str(job), "--scheduler", scheduler)
    err_dask = capsys.readouterr().err
    assert rc_local == rc_dask != 0
    assert err_local == err_dask and "zz_rank2.pt.trace.json" in err_dask


def test_a_local_cluster_s_workers_run_quiet() -> None:
    """The LocalCluster's workers get the engine's quiet settings (no statistical profiler,
    slow ticks: they share the cores with the work), and the client's own config is left as
    it was."""
    import dask

    from traceprobe.engines.cluster import QUIET_WORKERS, DaskEngine

    before = {k: dask.config.get(k) for k in QUIET_WORKERS}
    engine = DaskEngine(workers=1)
    try:
        seen = engine.client.run(lambda: {k: dask.config.get(k) for k in QUIET_WORKERS})
    finally:
        engine.close()
    assert list(seen.values()) == [QUIET_WORKERS]
    assert {k: dask.config.get(k) for k in QUIET_WORKERS} == before != QUIET_WORKERS
