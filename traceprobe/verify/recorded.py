"""The recorded variants: finding their metadata under a folder and loading their traces.

    recorded = load_recorded("traceprobe-out")   # -> [Recorded], one per variant
    machine_of([v.meta for v in recorded])       # the machine they were recorded on

A variant is a folder with a ``traceprobe.meta.jsonc`` (any depth; hidden staging folders
skipped) and the traces it lists; :class:`Recorded` holds its metadata, its report dict
(report.analyze, docs/REPORT_SCHEMA.md) and the timeline-only figures
(:func:`traceprobe.verify.figures.timeline_figures`) that rules read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from traceprobe.errors import TraceError, UsageError
from traceprobe.expect.names import measure
from traceprobe.record import meta as meta_file
from traceprobe.verify.figures import timeline_figures


@dataclass(frozen=True)
class Recorded:
    """One recorded variant: its metadata, its report dict, and timeline-only figures.

    ``report`` is one trace's ``traceprobe.report/1`` dict, or for several traces (DDP,
    one per rank) the several-traces dict with ``traces`` and ``cross_trace``.
    """

    meta: Mapping[str, Any]
    report: Mapping[str, Any]
    extra: Mapping[str, Any] = field(default_factory=dict)
    # The variant folder relative to the verified folder, e.g. "two-devices/parallel";
    # its parent's parent is the recording, and peers come from the same recording.
    folder: str = ""

    @property
    def recording(self) -> str:
        parts = Path(self.folder).parts
        return str(Path(*parts[:-2])) if len(parts) > 2 else ""

    @property
    def workload(self) -> str:
        return str(self.meta.get("workload", "?"))

    @property
    def variant(self) -> str:
        return str(self.meta.get("variant", "?"))

    @property
    def reports(self) -> list[Mapping[str, Any]]:
        """One report dict per trace."""
        if "traces" in self.report and "trace" not in self.report:
            return list(self.report.get("traces") or [])
        return [self.report]

    def figure(self, name: str, index: int | None = None) -> float | None:
        """A traceprobe.expect name read from the (first) trace's report; None: undefined."""
        return measure(self.reports[0], name, index).value

    @property
    def steps(self) -> int:
        """ProfilerSteps in the (first) trace; else the metadata's profiled steps; else 1."""
        n = (self.reports[0].get("counts") or {}).get("steps")
        n = n or (self.meta.get("profiler") or {}).get("profiled_steps")
        return max(int(n or 1), 1)

    @property
    def timing(self) -> Mapping[str, Any]:
        t = self.meta.get("timing")
        if not t and self.meta.get("ranks"):
            t = self.meta["ranks"][0].get("timing")
        return t or {}

    def span_us(self, key: str = "span_us") -> float:
        """``span_us`` or ``gpu_span_us``; the largest over ranks for several traces."""
        return max((float(r.get(key) or 0.0) for r in self.reports), default=0.0)

    def per_step_us(self, key: str) -> float | None:
        value = self.span_us(key)
        return value / self.steps if value > 0 else None

    @property
    def plain_step_us(self) -> float | None:
        s = (self.timing.get("plain") or {}).get("mean_s")
        return None if s is None else s * 1e6

    @property
    def profiled_step_us(self) -> float | None:
        s = (self.timing.get("profiled") or {}).get("active_mean_s")
        return None if s is None else s * 1e6

    @property
    def has_gpu(self) -> bool:
        return any(r.get("devices") for r in self.reports)


def find_metadata(root: Path) -> list[Path]:
    """Every finished variant's metadata under ``root`` (hidden staging folders skipped);
    one per folder, the current file name before the legacy ``traceprobe.meta.json``."""
    found: dict[Path, Path] = {}
    for name in reversed(meta_file.FILENAMES):
        for p in root.rglob(name):
            if p.is_file() and not any(
                part.startswith(".") for part in p.relative_to(root).parts
            ):
                found[p.parent] = p
    return sorted(found.values())


def trace_paths(meta_path: Path, m: Mapping[str, Any]) -> list[Path]:
    folder = meta_path.parent
    listed = [folder / t["file"] for t in m.get("traces") or [] if t.get("file")]
    for p in listed:
        if not p.is_file():
            raise TraceError(p, f"listed in {meta_path} but missing",
                             "record the variant again (traceprobe record --force)")
    if listed:
        return listed
    from traceprobe.load.folders import find_traces

    return find_traces(folder)


def machine_of(metas: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    first = metas[0]
    mach = first.get("machine") or {}
    out: dict[str, Any] = {
        "kind": mach.get("kind"),
        "gpu_count": len(first.get("gpus") or []),
        "gpus": [g.get("name") for g in first.get("gpus") or []],
        "torch": first.get("torch"),
        "cuda": first.get("cuda"),
        "hostname": first.get("hostname"),
    }
    mixed = [k for k in ("hostname", "torch", "cuda") if len({str(m.get(k)) for m in metas}) > 1]
    if mixed:
        out["note"] = f"the variants were recorded with different {', '.join(mixed)}"
    return out


def load_recorded(
    path: str | Path, *, jobs: int | None = None, errors: list[TraceError] | None = None
) -> list[Recorded]:
    """Every variant recorded under ``path``, in :func:`find_metadata` order, analysed.

    Raises UsageError when ``path`` holds no recording. A metadata file or a trace it
    lists that cannot be read raises TraceError, unless ``errors`` is a list: then the
    error is added there and that variant is left out (the others are still analysed).
    """
    from traceprobe import report as rp
    from traceprobe.load import pipeline as loader

    root = Path(path)
    if root.is_file():
        raise UsageError(f"{root} is a file; give the folder `traceprobe record` wrote "
                         "(default traceprobe-out), not one of its files")
    if not root.is_dir():
        raise UsageError(f"{root}: no such directory; give the folder `traceprobe record` "
                         "wrote (default traceprobe-out)")
    metas_at = find_metadata(root)
    if not metas_at:
        raise UsageError(f"{root}: no {meta_file.FILENAME} under it; record the experiments "
                         f"first: traceprobe record --out {root}")
    variants: list[tuple[Path, Any, list[Path]]] = []
    for p in metas_at:
        try:
            try:
                m = meta_file.read(p)
            except (OSError, ValueError) as e:
                raise TraceError(p, f"cannot read the metadata ({e})",
                                 "record the variant again") from None
            variants.append((p, m, trace_paths(p, m)))
        except TraceError as e:
            if errors is None:
                raise
            errors.append(e)
    files = [f for _, _, fs in variants for f in fs]
    loaded: dict[Path, Any] = {}
    if files:
        with loader.start(files, jobs=jobs) as loading:
            tls_all = loading.result(errors=errors)
            loaded = {Path(f).resolve(): t for f, t in zip(loading.loaded, tls_all, strict=True)}
    recorded = []
    for p, m, fs in variants:
        if not all(f.resolve() in loaded for f in fs):
            continue  # a trace of it could not be read: named in ``errors``
        tls = [loaded[f.resolve()] for f in fs]
        if not any(t.get("rank") is not None for t in m.get("traces") or []):
            tls = tls[:1]  # --repeat N: one trace per cycle; the first cycle speaks for all
        step = "all" if m.get("workload") == "scheduled" else None
        if len(tls) == 1:
            report = rp.analyze(tls[0], step=step).to_dict()
        else:
            report = rp.analyze_many(tls, step=step).to_dict()
        extra = timeline_figures(tls[0]) if len(tls) == 1 else {}
        recorded.append(Recorded(m, report, extra, p.parent.relative_to(root).as_posix()))
    return recorded
