"""The Dask engine: ``summarise(file)`` as Dask tasks on a distributed cluster.

A new ``distributed.LocalCluster`` (``address=None``: ``workers`` single-threaded worker
processes on 127.0.0.1, no dashboard, closed with the engine) or an existing cluster at
``address``. Files go in batches (about 8 per worker thread, at most ``MAX_BATCH`` files
each), so that a thousand small traces do not pay the scheduler's per-task cost a thousand
times; tasks are submitted with ``pure=False`` and gathered as they complete; each result is
taken and its future released at once, so the client holds summaries only.
A worker that dies is retried by Dask (its ``allowed-failures``, 3 by default); a task
whose workers kept dying (``KilledWorker``) becomes a
:class:`~traceprobe.ranks.summary.Failure` naming its files, as a file that cannot be read
does. Any other error a task raises is a bug in traceprobe (``summarise`` turns a trace's
own problems into a ``Failure``): it is raised here as the local engine raises it, so the
same bug gives the same exit code (70) on every engine.

Paths travel as strings and are opened by the workers: local paths that every worker can
open (one machine, or a shared file system mounted at the same place), or fsspec URLs
(``s3://``, ``gs://``, ...) that each worker reads from the store itself, with the storage
options sent along with the function and the credentials of its own environment.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from traceprobe.engines.local import _cores, progress_bar
from traceprobe.errors import UsageError


def _require() -> Any:
    try:
        import distributed
    except ImportError:
        raise UsageError(
            "--cluster/--scheduler need Dask's distributed scheduler: "
            "pip install 'traceprobe[dask]'"
        ) from None
    return distributed


MAX_BATCH = 16
# A LocalCluster's workers share the cores with the work: no statistical profiler sampling the
# task thread every 10 ms (it feeds the dashboard, which is off), the event loop's tick and
# the memory monitor woken every second and every 5 s instead of every 20 and 500 ms. On 512
# generated ranks on 2 cores: the LocalCluster's map 18.9 -> 17.2 s (median of 3), the local
# engine's 15.5 s (docs/BENCHMARKS.md). A cluster at an address keeps its own settings.
QUIET_WORKERS = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
}


def local_workers(workers: int | None, items: int | None = None) -> int:
    """Workers of a new LocalCluster: ``workers`` (default: the usable cores), at most one
    per usable core and one per item, at least one. Single-threaded workers beyond the
    cores only compete for them; ``-j 10**30`` must not ask Dask for 10**30 processes."""
    n = min(workers or _cores(), _cores())
    if items is not None:
        n = min(n, items)
    return max(1, n)


def run_batch(fn: Callable[[str], Any], items: list[str]) -> list[Any]:
    """One Dask task: ``fn`` over a few files, in order."""
    return [fn(x) for x in items]


class DaskEngine:
    name = "dask"

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        """``workers``: of a new LocalCluster (see :func:`local_workers`)."""
        distributed = _require()
        self.address = address
        self._cluster = None
        if address is None:
            import dask

            with dask.config.set(QUIET_WORKERS):  # passed to the workers as they are made
                self._cluster = distributed.LocalCluster(
                    n_workers=local_workers(workers),
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                    silence_logs=logging.ERROR,
                )
            self.client = distributed.Client(self._cluster)
        else:
            try:
                self.client = distributed.Client(address, timeout="20s")
            except (OSError, TimeoutError) as e:
                raise UsageError(
                    f"cannot reach the Dask scheduler at {address} ({e}); start one with "
                    "'dask scheduler' and 'dask worker ADDRESS', or check the address"
                ) from None

    def map(self, fn: Callable[[str], Any], items: Sequence[str], *, progress: bool = False
            ) -> list[Any]:
        from distributed import KilledWorker, as_completed

        from traceprobe.ranks.summary import Failure

        bar = progress_bar(len(items)) if progress else None
        results: list[Any] = [None] * len(items)
        size = max(1, min(MAX_BATCH, len(items) // (8 * self._threads())))
        batches = [list(range(i, min(i + size, len(items)))) for i in range(0, len(items), size)]
        try:
            futures = [self.client.submit(run_batch, fn, [str(items[i]) for i in b], pure=False)
                       for b in batches]
            index = {f.key: b for f, b in zip(futures, batches, strict=True)}
            done = as_completed(futures)
            del futures  # as_completed holds the pending ones, and lets each go once yielded
            for fut in done:
                batch = index.pop(fut.key)
                try:
                    for i, r in zip(batch, fut.result(), strict=True):
                        results[i] = r
                except KilledWorker as e:  # its workers died: the batch's files failed
                    for i in batch:
                        results[i] = Failure(str(items[i]), f"the Dask task failed ({e!r})",
                                             "see the Dask workers' logs")
                fut.release()
                if bar is not None:
                    bar.update(len(batch))
            return results
        finally:
            if bar is not None:
                bar.close()

    def _threads(self) -> int:
        workers = self.client.scheduler_info().get("workers", {})
        return max(1, sum(int(w.get("nthreads", 1)) for w in workers.values()))

    def close(self) -> None:
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()

    def __enter__(self) -> DaskEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

