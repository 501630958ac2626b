"""The default engine: a pool of local worker processes (no extra install).

``jobs`` workers (default: the usable cores); one job, or one item, runs in this process.
Items go to the workers in chunks (about 8 per worker, at most ``MAX_BATCH`` items each, as
the Dask engine batches them); results come back in item order.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

MAX_BATCH = 16


class LocalEngine:
    name = "processes"

    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = max(1, jobs or _cores())  # the pool takes min(jobs, items) workers

    def map(self, fn: Callable[[str], Any], items: Sequence[str], *, progress: bool = False
            ) -> list[Any]:
        bar = progress_bar(len(items)) if progress else None
        try:
            if self.jobs == 1 or len(items) <= 1:
                out = []
                for x in items:
                    out.append(fn(x))
                    if bar is not None:
                        bar.update(1)
                return out
            from concurrent.futures import ProcessPoolExecutor

            workers = min(self.jobs, len(items))
            size = max(1, min(MAX_BATCH, len(items) // (8 * workers)))
            results: list[Any] = []
            with ProcessPoolExecutor(max_workers=workers) as pool:
                for r in pool.map(fn, items, chunksize=size):
                    results.append(r)
                    if bar is not None:
                        bar.update(1)
            return results
        finally:
            if bar is not None:
                bar.close()

    def close(self) -> None:
        pass

    def __enter__(self) -> LocalEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress_bar(total: int):  # type: ignore[no-untyped-def]
    from tqdm import tqdm

    return tqdm(total=total, file=sys.stderr, unit="rank", desc="summarising")


def _cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1
