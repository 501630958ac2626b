"""Where ``summarise(file)`` runs: local worker processes (default) or a Dask cluster.

    engine = choose(cluster=None, scheduler=None, jobs=None)   # -> Engine
    results = engine.map(summarise, files, progress=True)       # in file order
    engine.close()                                              # or use `with`

Engines only decide *where* a function of one file runs; what it computes is
:mod:`traceprobe.ranks`. Each call returns a small picklable result (a summary, or a
:class:`~traceprobe.ranks.summary.Failure` for a file that cannot be read), so the
client receives summaries, never a trace. Which engine:

* ``scheduler`` (an address such as ``tcp://10.0.0.5:8786``): that Dask cluster;
* ``cluster="local"``: a new ``distributed.LocalCluster`` of ``jobs`` single-threaded
  worker processes on 127.0.0.1, closed with the engine;
* else the environment's ``DASK_SCHEDULER_ADDRESS`` (as Nsight Systems' recipes read it);
* else local worker processes (:class:`~traceprobe.engines.local.LocalEngine`; no extra).

Dask engines need ``pip install 'traceprobe[dask]'``; workers must be able to import
traceprobe and open the paths given (the same path on every worker: a shared file system, or
an fsspec URL such as ``s3://bucket/job/rank0.json.gz`` that every worker can reach).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from traceprobe.errors import UsageError

ENV = "DASK_SCHEDULER_ADDRESS"


class Engine(Protocol):
    name: str

    def map(self, fn: Callable[[str], Any], items: Sequence[str], *, progress: bool = False
            ) -> list[Any]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Engine: ...

    def __exit__(self, *exc: object) -> None: ...


def choose(
    *, cluster: str | None = None, scheduler: str | None = None, jobs: int | None = None
) -> Engine:
    """The engine the options and the environment ask for (see the module docstring)."""
    if cluster is not None and cluster != "local":
        raise UsageError(f"--cluster {cluster!r}: the only cluster traceprobe starts is 'local'")
    if cluster is not None and scheduler is not None:
        raise UsageError("--cluster local starts a cluster, --scheduler uses one: give one of them")
    address = scheduler or (None if cluster else os.environ.get(ENV) or None)
    if cluster == "local" or address:
        from traceprobe.engines.cluster import DaskEngine

        return DaskEngine(address=address, workers=jobs)
    from traceprobe.engines.local import LocalEngine

    return LocalEngine(jobs)
