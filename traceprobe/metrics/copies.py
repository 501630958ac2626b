"""Copy bandwidth: per device, direction and memory kinds, what the copies achieved.

A row groups the memory copies of one device by (direction, source kind, destination
kind) — e.g. ``DtoH`` ``Device -> Pageable``. ``bytes`` sums ``args.bytes`` and ``ns`` the
copies' own durations, both over the copies whose size is known (``copies`` counts all);
``gb_per_s = bytes / ns`` (bytes per ns = GB/s, 10^9 bytes per second). The link's
expected rate comes from :data:`LINKS`, a table of theoretical per-direction peaks by GPU
name (the trace's ``deviceProperties`` carry no PCIe generation): PCIe for host copies,
NVLink for peer copies, half the HBM bandwidth for device-to-device copies (a copy both
reads and writes). ``link_share = gb_per_s / link_gb_per_s``. A copy to or from
*pageable* host memory goes through a staging buffer and blocks the host; ``pageable``
says so, and the fix is ``pin_memory`` (``tensor.pin_memory()``, ``DataLoader(pin_memory=True)``).

:func:`copy_rates` gives the rows of every window of a cut frame at once (grouped by
(window, device, direction, kinds) in one pass, :func:`.grouping.key_groups`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.metrics.grouping import Windows, key_groups, of_kind, per_window, values_at, win_of

# GPU name fragment -> (PCIe GB/s per direction, NVLink GB/s per direction, HBM GB/s)
LINKS: dict[str, tuple[float, float | None, float]] = {
    "H200": (64.0, 450.0, 4800.0),  # PCIe 5.0 x16; NVLink 4 (900 GB/s both ways); HBM3e
    "H100": (64.0, 450.0, 3350.0),  # SXM: PCIe 5.0 x16; NVLink 4; HBM3
    "A100": (32.0, 300.0, 2039.0),  # PCIe 4.0 x16; NVLink 3 (600 GB/s both ways); 80 GB HBM2e
    "V100": (16.0, 150.0, 900.0),  # PCIe 3.0 x16; NVLink 2 (300 GB/s both ways); HBM2
}
HOST_DIRECTIONS = ("HtoD", "DtoH")
KEY = ("device", "copy_kind", "src_kind", "dst_kind")


@dataclass(frozen=True)
class CopyRate:
    device: int
    direction: str
    src_kind: str
    dst_kind: str
    copies: int
    bytes: int
    ns: int
    gb_per_s: float | None
    link: str | None  # "PCIe", "NVLink", "HBM"
    link_gb_per_s: float | None
    link_share: float | None
    pageable: bool


def expected_link(name: str | None, direction: str) -> tuple[str | None, float | None]:
    """The link a copy of ``direction`` uses on a GPU called ``name``, and its peak GB/s."""
    for frag, (pcie, nvlink, hbm) in LINKS.items():
        if name and frag in name:
            if direction in HOST_DIRECTIONS:
                return "PCIe", pcie
            if direction == "PtoP":
                return "NVLink", nvlink
            if direction == "DtoD":
                return "HBM", hbm / 2
    return None, None


def copy_rates(
    gpu: pd.DataFrame, devices: Sequence[int], names: Mapping[int, str | None],
    windows: Windows,
) -> list[tuple[CopyRate, ...]]:
    """Per window of a cut ``gpu`` frame: one row per (device, direction, source kind,
    destination kind), by device then size.

    Grouped by (window, device, direction, source kind, destination kind) in one pass;
    within a window, rows by device, then bytes descending, then direction and kinds."""
    rows = (of_kind(gpu, "memcpy")
            & np.isin(gpu["device"].to_numpy(dtype=np.int64), list(devices)))
    nbytes = gpu["bytes"].to_numpy(dtype=np.int64)[rows]
    dur = (gpu["end"].to_numpy(dtype=np.int64) - gpu["start"].to_numpy(dtype=np.int64))[rows]
    known = nbytes >= 0
    g = key_groups(win_of(gpu)[rows], [values_at(gpu, c, rows) for c in KEY])
    copies = g.size()
    total_bytes = g.sum(np.where(known, nbytes, 0))
    total_ns = g.sum(np.where(known, dur, 0))
    order = g.order(g.codes[0], -total_bytes, *g.codes[1:])
    links: dict[tuple[int, str], tuple[str | None, float | None]] = {}
    out = []
    for dev, direction, src, dst, count, b, ns in zip(
        *(v[order].tolist() for v in g.values),
        copies[order].tolist(), total_bytes[order].tolist(), total_ns[order].tolist(),
        strict=True,
    ):
        rate = b / ns if ns > 0 and b > 0 else None
        at = (int(dev), str(direction))
        if at not in links:
            links[at] = expected_link(names.get(at[0]), at[1])
        link, peak = links[at]
        out.append(
            CopyRate(
                device=int(dev),
                direction=str(direction),
                src_kind=str(src),
                dst_kind=str(dst),
                copies=count,
                bytes=b,
                ns=ns,
                gb_per_s=rate,
                link=link,
                link_gb_per_s=peak,
                link_share=rate / peak if rate is not None and peak else None,
                pageable="Pageable" in (src, dst),
            )
        )
    return per_window(out, g.win[order], windows)
