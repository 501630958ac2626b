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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

# GPU name fragment -> (PCIe GB/s per direction, NVLink GB/s per direction, HBM GB/s)
LINKS: dict[str, tuple[float, float | None, float]] = {
    "H200": (64.0, 450.0, 4800.0),  # PCIe 5.0 x16; NVLink 4 (900 GB/s both ways); HBM3e
    "H100": (64.0, 450.0, 3350.0),  # SXM: PCIe 5.0 x16; NVLink 4; HBM3
    "A100": (32.0, 300.0, 2039.0),  # PCIe 4.0 x16; NVLink 3 (600 GB/s both ways); 80 GB HBM2e
    "V100": (16.0, 150.0, 900.0),  # PCIe 3.0 x16; NVLink 2 (300 GB/s both ways); HBM2
}
HOST_DIRECTIONS = ("HtoD", "DtoH")


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
    gpu: pd.DataFrame, devices: Sequence[int], names: Mapping[int, str | None]
) -> tuple[CopyRate, ...]:
    """One row per (device, direction, source kind, destination kind), by device then size."""
    c = gpu[(gpu["kind"] == "memcpy") & gpu["device"].isin(list(devices))]
    if c.empty:
        return ()
    known = c["bytes"] >= 0
    c = c.assign(
        known_bytes=c["bytes"].where(known, 0),
        known_ns=(c["end"] - c["start"]).where(known, 0),
    )
    by = c.groupby(["device", "copy_kind", "src_kind", "dst_kind"], sort=True)
    g = pd.DataFrame(  # per column: without a dict-like agg's per-call cost
        {"copies": by.size(), "bytes": by["known_bytes"].sum(), "ns": by["known_ns"].sum()}
    )
    out = []
    for (dev, direction, src, dst), row in g.iterrows():
        nbytes, ns = int(row["bytes"]), int(row["ns"])
        rate = nbytes / ns if ns > 0 and nbytes > 0 else None
        link, peak = expected_link(names.get(int(dev)), str(direction))
        out.append(
            CopyRate(
                device=int(dev),
                direction=str(direction),
                src_kind=str(src),
                dst_kind=str(dst),
                copies=int(row["copies"]),
                bytes=nbytes,
                ns=ns,
                gb_per_s=rate,
                link=link,
                link_gb_per_s=peak,
                link_share=rate / peak if rate is not None and peak else None,
                pageable="Pageable" in (src, dst),
            )
        )
    out.sort(key=lambda r: (r.device, -r.bytes, r.direction, r.src_kind, r.dst_kind))
    return tuple(out)
