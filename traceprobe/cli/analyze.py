"""`traceprobe analyze`: load traces, analyze them, render the report, write it.

Thin: it resolves paths and options, checks every output once (:mod:`traceprobe.cli.options`)
and calls the library (loader → report → render → output); every figure comes from
:mod:`traceprobe.report`. The many-rank summary is :mod:`traceprobe.cli.ranks`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Literal

import click

from traceprobe import output
from traceprobe.cli.notices import notices, say
from traceprobe.cli.options import output_options, pick_format
from traceprobe.cli.ranks import (
    RANKS_AUTO,
    color_terminal,
    engine_options,
    storage_option,
    summarise,
    unique,
)
from traceprobe.cli.window import window_option
from traceprobe.errors import TraceError, UsageError
from traceprobe.render import formats

FORMATS = formats()  # html among them (a registered format)

HELP = """Measure overlap in PyTorch Profiler (Kineto) traces.

    PATH is a trace file (.json or .json.gz) or a directory of them. For each
    trace: how busy each GPU was, how much GPUs, streams, copies and compute
    overlapped, and what the host did while a GPU sat idle. Several traces get
    one section each, plus their overlap with each other (one host clock
    assumed, e.g. one trace per rank).

    \b
    Example:
        traceprobe analyze run.pt.trace.json.gz
        traceprobe analyze traces/ --format json --output report.json
        traceprobe analyze run.json.gz --step all --device 0 --csv frames/
        traceprobe analyze run.json.gz --format html --output report.html --plot timeline.png
        traceprobe analyze s3://bucket/job/ --cluster local -f json -o s3://bucket/report.json

    A trace cut short (a job killed while the profiler wrote it) is salvaged: the
    complete events before the cut are analysed, stderr and the report say so
    (--strict refuses it instead). Of several traces, one that cannot be read is
    named on stderr and left out; the others are reported (exit 3 unless --skip-bad).
    No output may be one of the inputs, whatever --force says.

    PATH may be an fsspec URL (s3://, gs://, az://, http(s)://, file://): an object, a
    prefix (searched as a folder) or a glob (s3://bucket/job/rank*.json.gz). Credentials
    and endpoints come from the environment (AWS_*, FSSPEC_S3_ENDPOINT_URL, ...) and
    --storage-option; each worker opens its own URLs.

    \b
    Exit codes:
        0  the report was written
        2  usage error (bad option or argument, a --device the traces lack)
        3  a trace could not be read or understood (the message names the file),
           or was cut short under --strict
        4  the output exists (use --force), is an input, or cannot be written
"""


class StepParam(click.ParamType):
    """``--step``: a ProfilerStep number, or ``all``."""

    name = "N|all"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int) or value == "all":
            return value
        text = str(value).strip().lower()
        if text == "all":
            return "all"
        try:
            n = int(text)
        except ValueError:
            self.fail(f"{value!r} is neither a step number nor 'all'", param, ctx)
        if n < 0:
            self.fail(f"step numbers are 0 or more, not {n}", param, ctx)
        return n


@click.command("analyze", help=HELP)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@output_options(FORMATS, force_help="Overwrite an existing --output file or --csv files.")
@click.option("--step", type=StepParam(), default=None, metavar="N|all",
              help="Analyse only ProfilerStep N; 'all': the whole trace and each step.")
@window_option
@click.option("-d", "--device", "devices", type=click.IntRange(min=0), multiple=True,
              metavar="D", help="Only GPU D (repeat for several).  [default: every GPU]")
@click.option("--csv", "csv_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              metavar="DIR", help="Also write the event frames and per-GPU/per-stream "
              "figures as CSV files into DIR.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="Load with N processes; more than the files splits each file between "
              "them.  [default: one per file, up to the cores]")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              metavar="PNG", help="Also draw the timeline as a static PNG (one per trace).")
@click.option("--tensorboard", "tb", is_flag=True,
              help="Also write per-step figures as TensorBoard scalars beside each trace.")
@click.option("--top", type=click.IntRange(min=0), default=None, metavar="N",
              help="Show N top kernels and CPU ops.  [default: 10; JSON: all the report has]")
@click.option("--strict", is_flag=True,
              help="Refuse a trace that was cut short (exit 3) instead of analysing the "
              "complete events before the cut.")
@click.option("--skip-bad", is_flag=True,
              help="Exit 0 when some traces of several cannot be read (each is still named "
              "on stderr and left out of the report).")
@click.option("--hta", is_flag=True,
              help="Also run HolisticTraceAnalysis on each trace (pip install "
              "'traceprobe[hta]') and add its per-rank breakdowns to the report as \"hta\" "
              "(JSON only; other formats leave them out).")
@click.option("--ranks", "ranks_mode", is_flag=True,
              help="Summarise the traces as the ranks of one job (`traceprobe ranks`): rank "
              f"table, stragglers, collectives (automatic above {RANKS_AUTO} traces).")
@engine_options
@storage_option
def analyze(paths: tuple[str, ...], fmt: str | None, output_path: str, force: bool,
            step: int | Literal["all"] | None, window: str, devices: tuple[int, ...],
            csv_dir: Path | None, jobs: int | None, plot_path: str | None, tb: bool,
            top: int | None, strict: bool, skip_bad: bool, hta: bool, ranks_mode: bool = False,
            cluster: str | None = None, scheduler: str | None = None, rank: int | None = None,
            storage_option: tuple[str, ...] = ()) -> None:
    from traceprobe.load import pipeline as loader
    from traceprobe.urls import parse_options

    so = parse_options(storage_option) or None
    fmt = pick_format(fmt, output_path, FORMATS)
    # refuse before resolving anything
    output.check_target(output_path, force=force, storage_options=so)
    _refuse_urls(paths, csv_dir, plot_path, tb=tb, hta=hta)
    files = unique([f for p in paths for f in loader.find_traces(p, so)])
    if ranks_mode or cluster or scheduler or rank is not None or len(files) > RANKS_AUTO:
        _refuse_for_ranks(step=step is not None, device=bool(devices), window=window != "steps",
                          plot=plot_path is not None, tensorboard=tb, hta=hta)
        summarise(files, fmt, output_path, force=force, csv_dir=csv_dir, jobs=jobs,
                  cluster=cluster, scheduler=scheduler, rank=rank, top=top, storage_options=so)
        return
    _check_outputs(files, output_path, csv_dir, plot_path, tb=tb, hta=hta, force=force, so=so)
    timelines, files, errors = _load(files, jobs, strict=strict, so=so)
    stream = fmt == "json" and not (hta or csv_dir is not None or plot_path is not None)
    rep, per_trace, multi, pieces, stepped = _report(
        timelines, step, list(devices) or None, window, stream=stream, top=top, tb=tb)
    if hta:  # HTA's figures go into the JSON dict (other formats leave them out)
        data = _with_hta(rep, files)
        rep = data if fmt == "json" else rep
    if pieces is not None:
        output.write_pieces(output_path, pieces, force=force, storage_options=so)
    else:
        text = _render(rep, timelines, fmt, output_path, top=top)
        if (multi is not None and fmt in ("text", "markdown") and window == "steps"
                and step is None and not devices):
            text = _with_job_lines(text, files, timelines, multi.reports)
        output.write_text(output_path, text, force=force, storage_options=so,
                          raw=_colored(fmt, output_path))
    _write_extras(timelines, files, per_trace, csv_dir, plot_path, stepped, tb=tb, force=force)
    if errors and not skip_bad:
        raise click.exceptions.Exit(TraceError.exit_code)


def _refuse_for_ranks(**given: bool) -> None:
    """The options of one trace's full report make no sense with the many-rank summary."""
    bad = [f"--{name}" for name, on in given.items() if on]
    if bad:
        raise UsageError(f"{', '.join(bad)} cannot be used with the many-rank summary "
                         "(--ranks, --cluster, --scheduler, --rank, or more than "
                         f"{RANKS_AUTO} traces); analyse one rank's file for them")


def _refuse_urls(paths: tuple[str, ...], csv_dir: Path | None, plot_path: str | None, *,
                 tb: bool, hta: bool) -> None:
    """Of the outputs only -o may be a URL; --tensorboard and --hta work beside local files."""
    from traceprobe.urls import is_url

    urls = [p for p in paths if is_url(p)]
    if urls and (tb or hta):
        raise UsageError(f"{'--tensorboard' if tb else '--hta'} reads or writes beside each "
                         f"trace on local disk, not at a URL ({urls[0]}); copy the traces "
                         "to a local folder for it")
    for flag, value in (("--csv", csv_dir), ("--plot", plot_path)):
        # click made a Path of it, which folds "s3://b" into "s3:/b"
        if value is not None and re.match(r"[A-Za-z][A-Za-z0-9+.\-]+:/", str(value)):
            raise UsageError(f"{flag} writes local files, and {value} looks like a URL; give "
                             "a local path (of the outputs, only -o may be a URL)")


def _check_outputs(files: list[Any], output_path: str, csv_dir: Path | None,
                   plot_path: str | None, *, tb: bool, hta: bool, force: bool,
                   so: dict[str, Any] | None) -> None:
    """Every output of the command checked against the inputs before anything is loaded."""
    if hta:
        from traceprobe import hta_bridge

        hta_bridge.require()
    dirs: dict[Any, Any] = {}
    if csv_dir is not None:
        from traceprobe.render.csv import FILES  # pandas: only when asked for CSV

        dirs[csv_dir] = list(FILES)
    plots: list[Any] = []
    if plot_path is not None:
        from traceprobe.render.plot import plot_targets

        plots = plot_targets(plot_path, len(files))
    output.check_outputs([output_path, *plots], files, directories=dirs, force=force,
                         storage_options=so)
    if tb:
        from traceprobe import tensorboard

        groups: dict[Path, list[Path]] = {}
        for f in files:
            groups.setdefault(Path(f).parent, []).append(Path(f))
        for run_dir, traces in groups.items():
            tensorboard.check_targets(run_dir, traces, force=force)


def _load(files: list[Any], jobs: int | None, *, strict: bool, so: dict[str, Any] | None
          ) -> tuple[list[Any], list[Any], list[TraceError]]:
    """Load every trace (in worker processes); the ones that fail are named and left out."""
    from traceprobe.load import pipeline as loader

    errors: list[TraceError] = []
    with loader.start(files, jobs=jobs, storage_options=so) as loading:
        # the analysis stack (pandas) is imported while worker processes decode
        from traceprobe import report as rp  # noqa: F401

        timelines = loading.result(progress=len(files) > 1 and sys.stderr.isatty(),
                                   errors=errors)
        files = loading.loaded
    for e in errors:
        say(f"traceprobe: error: {e}")
    if not timelines:
        raise click.exceptions.Exit(TraceError.exit_code)
    notices(timelines, strict=strict)
    return timelines, files, errors


def _report(timelines: list[Any], step: int | Literal["all"] | None, only: list[int] | None,
            window: str, *, stream: bool, top: int | None, tb: bool = False
            ) -> tuple[Any, list[Any], Any, Any, list[Any]]:
    """The Report (of several traces: the MultiReport), one Report per trace, the
    MultiReport of several traces (or None), for one trace's JSON alone (``stream``) its
    pieces too (written a step at a time: :func:`traceprobe.render.jsonfmt.pieces`), and
    with ``tb`` every trace's step="all" report (the same analysis where it can:
    report.build.analyze_with_steps)."""
    from traceprobe import report as rp

    if only is not None:
        from traceprobe.report.build import check_devices

        check_devices(timelines, only)
    stepped: list[Any] = []
    rep: Any
    if tb:  # the scalars need every step: one analysis per trace gives both reports
        from traceprobe.report.build import analyze_with_steps

        rep, stepped = analyze_with_steps(timelines, step=step, devices=only, window=window)
    elif len(timelines) == 1:
        rep = rp.analyze(timelines[0], step=step, devices=only, window=window)
    else:
        rep = rp.analyze_many(timelines, step=step, devices=only, window=window)
    if len(timelines) == 1:
        pieces = None
        if stream:
            from traceprobe.render.jsonfmt import pieces as json_pieces

            pieces = json_pieces(rep, top=top)
        return rep, [rep], None, pieces, stepped
    return rep, list(rep.reports), rep, None, stepped


def _with_hta(rep: Any, files: list[Any]) -> dict[str, Any]:
    """The report's JSON dict with HTA's figures in each trace's ``"hta"``."""
    from traceprobe import hta_bridge
    from traceprobe.render.jsonfmt import as_dict

    data = as_dict(rep)
    per_trace = list(data["traces"]) if "traces" in data else [data]
    for failure in hta_bridge.add_hta([Path(f) for f in files], per_trace):
        say(f"traceprobe: warning: {failure}")
    return data


def _colored(fmt: str, output_path: str) -> bool:
    return fmt == "text" and output.is_stdout(output_path) and _color_terminal()


def _render(rep: Any, timelines: list[Any], fmt: str, output_path: str, *,
            top: int | None) -> str:
    from traceprobe.render import render

    if fmt == "html":
        return render(rep, fmt, top=top, timelines=timelines)
    color = _colored(fmt, output_path)
    # colour codes are the renderer's own: the names are made printable before it runs
    return render(output.printable_data(rep) if color else rep, fmt, top=top, color=color)


def _with_job_lines(text: str, files: list[Any], timelines: list[Any], reports: Any) -> str:
    """The cross-rank headline and the ``--ranks`` hint after the per-trace report, when
    some of the traces are ranks of one job (traceprobe.ranks.jobs)."""
    from traceprobe.ranks.jobs import job_lines

    lines = job_lines(files, timelines, reports)
    return text if not lines else text.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n"


def _write_extras(timelines: list[Any], files: list[Any], per_trace: list[Any],
                  csv_dir: Path | None, plot_path: str | None, stepped: list[Any], *,
                  tb: bool, force: bool) -> None:
    """--csv, --plot, --tensorboard, after the report."""
    if csv_dir is not None:
        from traceprobe.render.csv import write_csv

        write_csv(timelines, csv_dir, reports=per_trace, force=force)
    if plot_path is not None:
        from traceprobe.render.plot import write_plots

        write_plots(timelines, per_trace, plot_path, force=force)
    if tb:
        from traceprobe import tensorboard
        from traceprobe.render.jsonfmt import as_dict

        groups: dict[Path, list[dict]] = {}
        for f, r in zip(files, stepped, strict=True):  # reports made with step="all"
            groups.setdefault(Path(f).parent, []).append(as_dict(r))  # the JSON's figures
        for run_dir, reports in groups.items():
            tensorboard.write_scalars(run_dir, reports, force=force)


def _color_terminal() -> bool:
    return color_terminal()
