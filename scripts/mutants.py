"""Mutation testing for traceprobe's figure core: plant one small bug at a time, run the tests.

Usage (from the repository root; ``make mutants`` runs the first form)::

    python scripts/mutants.py --write-docs docs/TESTING.md     # every target, ~20-30 min on 1 core
    python scripts/mutants.py --only traceprobe/intervals.py   # one module
    python scripts/mutants.py --list                           # print the mutants, run nothing

How it works (no third-party tool; ``ast`` and ``pytest`` only):

1. The repository's ``traceprobe/``, ``tests/``, ``sample_traces/``, ``docs/`` and
   ``pyproject.toml`` are copied into a temporary folder, so the checkout is never touched.
2. Each target module is parsed and every *site* of these operators is listed:
   comparison swaps (``<``/``<=``, ``>``/``>=``, ``==``/``!=``, ``in``/``not in``,
   ``is``/``is not``), arithmetic swaps (``+``/``-``, ``*``/``/``, ``//``/``/``),
   bitwise mask swaps (``&``/``|``, numpy masks), ``and``/``or``, dropping ``not`` and
   unary minus, ``+=``/``-=``, integer constants ``n`` -> ``n + 1``, ``True``/``False``, and
   the strings ``"left"``/``"right"`` (``np.searchsorted`` sides). Type annotations and
   boolean keyword flags (``frozen=True``, ``strict=True``, ``sort=False``: options whose
   flip no figure can show, or that only change an error path) are not mutated.
3. For each site the mutated module (``ast.unparse``) is written into the copy and the
   module's own test selection (``TARGETS`` below, fastest files first) runs with
   ``pytest -x`` in a process forked from one that has already imported numpy, pandas,
   pytest and hypothesis, so a mutant costs the tests, not the imports. The Hypothesis
   profile is ``mutants`` (tests/conftest.py): derandomized, so every run draws the same
   examples.
4. A mutant is *killed* when the tests fail (or error, or run past the time limit: four
   times the clean run plus 30 s), *survived* when they pass. The score is killed / all.
   Surviving mutants are listed with file, line, the change and the original line: each
   is either a missing test or an equivalent mutant (a change no input can observe).

``--write-docs FILE`` replaces the text between ``<!-- mutants:begin -->`` and
``<!-- mutants:end -->`` in FILE with the results (so the numbers in docs/TESTING.md are the
tool's, not typed by hand). It is not a CI gate: a full run takes tens of minutes.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPY = ("traceprobe", "tests", "sample_traces", "docs", "pyproject.toml")
BEGIN, END = "<!-- mutants:begin -->", "<!-- mutants:end -->"

_METRICS = [
    "tests/test_intervals_grouped.py",
    "tests/metrics/test_devices.py",
    "tests/metrics/test_overlap.py",
    "tests/metrics/test_host.py",
    "tests/metrics/test_top.py",
    "tests/report/test_edges.py",
    "tests/report/test_model.py",
    "tests/metrics/test_metrics_property.py",
]
# module -> the tests that exercise it, fastest first (pytest -x stops at the first failure)
TARGETS: dict[str, list[str]] = {
    "traceprobe/intervals.py": ["tests/test_intervals_grouped.py", "tests/test_intervals.py"],
    "traceprobe/metrics/__init__.py": _METRICS,
    "traceprobe/metrics/devices.py": _METRICS,
    "traceprobe/metrics/overlap.py": _METRICS,
    "traceprobe/metrics/host.py": _METRICS,
    "traceprobe/metrics/top.py": _METRICS,
    "traceprobe/load/timestamps.py": [
        "tests/report/test_edges.py::test_timestamps_at_the_int64_nanosecond_edges",
        "tests/report/test_edges.py::test_absent_and_junk_timestamps_are_zero_ns_with_their_status",
        "tests/load/test_pipeline.py::test_unusual_numbers_convert_exactly",
        "tests/load/test_pipeline.py::test_us_to_ns_reports_absent_and_junk",
        "tests/load/test_pipeline.py::test_us_to_ns_is_exact_for_kineto_style_values",
        "tests/load/test_pipeline.py::test_us_to_ns_matches_decimal",
        "tests/load/test_pipeline.py::test_adjacent_kernels_at_ns_boundaries_do_not_overlap",
        "tests/load/test_pipeline.py::test_current_format_gives_exact_frames",
        "tests/load/test_pipeline.py::test_decimal_timestamps_in_python_documents_stay_exact",
    ],
    "traceprobe/load/split.py": ["tests/load/test_split.py"],
}

_CMP: dict[type, type] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
    ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}  # fmt: skip
_BIN: dict[type, type] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.Mod: ast.FloorDiv,
}  # fmt: skip
_SYM = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
    ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.Add: "+",
    ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.BitAnd: "&",
    ast.BitOr: "|", ast.Mod: "%", ast.And: "and", ast.Or: "or",
}  # fmt: skip


class _Mutator(ast.NodeTransformer):
    """Lists mutation sites in a fixed order; with ``target`` set, applies that one."""

    def __init__(self, skip: set[int], target: int | None = None) -> None:
        self.skip, self.target = skip, target
        self.sites: list[tuple[int, str]] = []

    def _offer(self, node: ast.AST, what: str, make: Callable[[], ast.AST]) -> ast.AST | None:
        i = len(self.sites)
        self.sites.append((getattr(node, "lineno", 0), what))
        return make() if i == self.target else None

    def visit(self, node: ast.AST) -> ast.AST:
        if id(node) in self.skip:
            return node
        node = self.generic_visit(node)
        out = self._mutate(node)
        return node if out is None else out

    def _mutate(self, node: ast.AST) -> ast.AST | None:  # noqa: C901 - one branch per operator
        out: ast.AST | None = None
        if isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                new = _CMP.get(type(op))
                if new is not None:

                    def make(k: int = k, new: type = new) -> ast.AST:
                        node.ops[k] = new()
                        return node

                    what = f"{_SYM[type(op)]} -> {_SYM[new]}"
                    out = self._offer(node, what, make) or out
        elif isinstance(node, ast.BinOp | ast.AugAssign):
            new = _BIN.get(type(node.op))
            if new is not None and (isinstance(node, ast.BinOp) or new in (ast.Add, ast.Sub)):

                def make() -> ast.AST:
                    node.op = new()
                    return node

                what = f"{_SYM[type(node.op)]} -> {_SYM[new]}"
                if isinstance(node, ast.AugAssign):
                    what = what.replace(" ->", "= ->") + "="
                out = self._offer(node, what, make)
        elif isinstance(node, ast.BoolOp):
            new = ast.Or if isinstance(node.op, ast.And) else ast.And

            def make() -> ast.AST:
                node.op = new()
                return node

            out = self._offer(node, f"{_SYM[type(node.op)]} -> {_SYM[new]}", make)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
            what = "drop 'not'" if isinstance(node.op, ast.Not) else "drop unary '-'"
            out = self._offer(node, what, lambda: node.operand)
        elif isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                out = self._offer(node, f"{v} -> {not v}", lambda: ast.Constant(not v))
            elif isinstance(v, int):
                out = self._offer(node, f"{v} -> {v + 1}", lambda: ast.Constant(v + 1))
            elif v in ("left", "right"):
                w = "right" if v == "left" else "left"
                out = self._offer(node, f"'{v}' -> '{w}'", lambda: ast.Constant(w))
        return out


def _skipped(tree: ast.AST, src: str) -> set[int]:
    """Ids of nodes not to mutate: annotations, docstrings, lines marked ``# pragma: no mutate``."""
    skip: set[int] = set()
    quiet = {i + 1 for i, line in enumerate(src.splitlines()) if "pragma: no mutate" in line}
    for node in ast.walk(tree):
        anns = []
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            anns.append(node.annotation)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            anns.append(node.returns)
        for a in anns:
            skip.update(id(n) for n in ast.walk(a))
        if getattr(node, "lineno", None) in quiet:
            skip.add(id(node))
        if isinstance(node, ast.keyword) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, bool):  # frozen=True, strict=True, sort=False ...
                skip.add(id(node.value))
    return skip


def sites(src: str) -> list[tuple[int, str]]:
    tree = ast.parse(src)
    m = _Mutator(_skipped(tree, src))
    m.visit(tree)
    return m.sites


def mutate(src: str, i: int) -> str:
    tree = ast.parse(src)
    m = _Mutator(_skipped(tree, src), target=i)
    tree = m.visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree))


@dataclass
class Result:
    module: str
    line: int
    what: str
    outcome: str  # killed | survived | timeout
    code: str


def _run_tests(work: Path, tests: list[str], limit: float) -> tuple[str, float]:
    """Fork a child that runs ``pytest -x tests`` in ``work``; ('pass'|'fail'|'timeout', s)."""
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:  # child: fresh traceprobe imports from the copy
        try:
            os.chdir(work)
            sys.path.insert(0, str(work))
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            import pytest

            rc = pytest.main(
                ["-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "--no-header", *tests]
            )
            os._exit(int(rc))
        except BaseException:  # noqa: BLE001 - any crash of the child kills the mutant
            os._exit(99)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            rc = os.waitstatus_to_exitcode(status)
            return ("pass" if rc == 0 else "fail"), time.monotonic() - t0
        if time.monotonic() - t0 > limit:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout", time.monotonic() - t0
        time.sleep(0.02)


def run(
    only: list[str] | None, log: Callable[[str], None]
) -> tuple[list[Result], dict[str, float]]:
    os.environ["TRACEPROBE_HYPOTHESIS"] = "mutants"
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    sys.dont_write_bytecode = True
    import hypothesis  # noqa: F401 - imported once here, inherited by every forked run
    import numpy  # noqa: F401
    import pandas  # noqa: F401
    import pytest  # noqa: F401

    results: list[Result] = []
    clean: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="traceprobe-mutants-") as tmp:
        work = Path(tmp)
        for name in COPY:
            src = ROOT / name
            if src.is_dir():
                shutil.copytree(src, work / name, ignore=shutil.ignore_patterns("__pycache__"))
            elif src.exists():
                shutil.copy2(src, work / name)
        for module, tests in TARGETS.items():
            if only and module not in only:
                continue
            tests = [t for t in tests if (work / t.split("::")[0]).exists()]
            original = (work / module).read_text()
            verdict, secs = _run_tests(work, tests, 600)
            if verdict != "pass":
                raise SystemExit(f"{module}: its tests fail before any mutation ({verdict})")
            clean[module] = secs
            limit = 4 * secs + 30
            found = sites(original)
            lines = original.splitlines()
            log(f"{module}: {len(found)} mutants, clean run {secs:.1f}s")
            try:
                for i, (line, what) in enumerate(found):
                    (work / module).write_text(mutate(original, i))
                    verdict, _ = _run_tests(work, tests, limit)
                    outcome = {"pass": "survived", "fail": "killed"}.get(verdict, verdict)
                    code = lines[line - 1].strip() if 0 < line <= len(lines) else ""
                    results.append(Result(module, line, what, outcome, code))
                    if outcome != "killed":
                        log(f"  {outcome}: {module}:{line} {what}    {code}")
            finally:
                (work / module).write_text(original)
    return results, clean


def markdown(results: list[Result], clean: dict[str, float], minutes: float, stamp: str) -> str:
    out = [
        BEGIN,
        "Written by `python scripts/mutants.py --write-docs docs/TESTING.md` (`make mutants`); "
        f"written {stamp}; the runs took {minutes:.0f} min in all (each module's results are "
        "kept in docs/mutants.json; `--only MODULE` reruns one).",
        "",
        "| module | tests run per mutant | mutants | killed | survived | timed out | score |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    tot = {"n": 0, "killed": 0, "survived": 0, "timeout": 0}
    for module in clean:
        rs = [r for r in results if r.module == module]
        k = sum(r.outcome == "killed" for r in rs)
        s = sum(r.outcome == "survived" for r in rs)
        t = sum(r.outcome == "timeout" for r in rs)
        files = sorted({x.split("::")[0].removeprefix("tests/") for x in TARGETS[module]})
        score = f"{(k + t) / len(rs):.0%}" if rs else "-"
        out.append(
            f"| `{module}` | {', '.join(files)} | {len(rs)} | {k} | {s} | {t} | {score} |"
        )
        tot["n"] += len(rs)
        tot["killed"] += k
        tot["survived"] += s
        tot["timeout"] += t
    if tot["n"]:
        score = (tot["killed"] + tot["timeout"]) / tot["n"]
        out.append(
            f"| **all** | | {tot['n']} | {tot['killed']} | {tot['survived']} | "
            f"{tot['timeout']} | **{score:.1%}** |"
        )
    out += ["", "Surviving mutants (a missing test, or a change no input can observe):", ""]
    surv = [r for r in results if r.outcome == "survived"]
    out += [f"- `{r.module}:{r.line}` {r.what}: `{r.code}`" for r in surv] or ["- none"]
    out.append(END)
    return "\n".join(out)


def _write_docs(path: Path, block: str) -> None:
    text = path.read_text() if path.exists() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", help="a module path from TARGETS (repeatable)")
    ap.add_argument("--list", action="store_true", help="print the mutants and run nothing")
    ap.add_argument(
        "--render-only", action="store_true", help="run nothing; write the kept results"
    )
    ap.add_argument("--write-docs", type=Path, help="put the results into this markdown file")
    ap.add_argument(
        "--results",
        type=Path,
        default=ROOT / "docs" / "mutants.json",
        help="every module's last results (JSON); a run replaces the modules it ran "
        "(default docs/mutants.json), --write-docs renders them all",
    )
    a = ap.parse_args(argv)
    unknown = [m for m in a.only or [] if m not in TARGETS]
    if unknown:
        ap.error(f"not a target: {', '.join(unknown)}; targets are {', '.join(TARGETS)}")
    if a.list:
        for module in TARGETS:
            if not a.only or module in a.only:
                for line, what in sites((ROOT / module).read_text()):
                    print(f"{module}:{line}: {what}")
        return 0
    t0 = time.monotonic()
    results, clean = ([], {}) if a.render_only else run(a.only, lambda s: print(s, flush=True))
    minutes = (time.monotonic() - t0) / 60
    old = json.loads(a.results.read_text()) if a.results.exists() else {}
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for module, secs in clean.items():
        rs = [asdict(r) for r in results if r.module == module]
        share = minutes * len(rs) / max(1, len(results))  # this module's part of the run
        old[module] = {"clean_s": round(secs, 1), "when": stamp, "minutes": share, "results": rs}
    old = {m: old[m] for m in TARGETS if m in old}  # the order of TARGETS; drop stale modules
    tmp = a.results.with_suffix(".tmp")
    tmp.write_text(json.dumps(old, indent=1) + "\n")
    os.replace(tmp, a.results)
    log_all = [Result(**r) for m in old.values() for r in m["results"]]
    minutes = sum(v.get("minutes", 0) for v in old.values()) or minutes
    block = markdown(log_all, {m: v["clean_s"] for m, v in old.items()}, minutes, stamp)
    print(block)
    if a.write_docs:
        _write_docs(a.write_docs, block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
