"""The shape of the code, checked: one direction of flow, no import circles, no torch (nor
click) in the analysis, every command documented.

load -> timeline -> metrics -> report -> render -> cli; record is a separate wing that writes
traces. The checker (module_graph, import_cycles, layer_violations) reads any copy of the
package, and is shown to catch a circle and an upward import in a deliberately broken copy.
Renderers draw what metrics computed (drawing_violations): they import from metrics only the
entry points made for pictures and compute no sets of time, shown failing on planted copies.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from traceprobe.cli import COMMANDS

PKG = Path(__file__).resolve().parents[1] / "traceprobe"
README = Path(__file__).resolve().parents[1] / "README.md"

# Layers, lowest first. A module may import only from its own layer or lower ones.
LAYERS = [
    {"errors", "intervals", "timeline", "output", "urls"},
    {"load"},
    {"metrics", "graph", "efficiency"},
    {"report"},
    {"ranks"},  # per-rank summaries and the cross-rank reduce (reads load and report)
    {"engines"},  # where summarise(file) runs: local processes or a Dask cluster
    {"render", "expect", "comparison", "annotate", "tensorboard", "verify", "hta_bridge"},
    {"cli"},
]


def _layer(top: str) -> int | None:
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    return None


def _imports(path: Path) -> set[str]:
    """Names imported from traceprobe (first component after the package) and other top-levels."""
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "traceprobe":
                out.update(f"{node.module}.{a.name}" for a in node.names)
            else:
                out.add(node.module)
    return out


def _analysis_modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py")
                  if "record" not in p.relative_to(PKG).parts)


@pytest.mark.parametrize("path", _analysis_modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_analysis_never_imports_torch_nor_the_record_wing(path: Path) -> None:
    for name in _imports(path):
        assert name.split(".")[0] != "torch", f"{path.name} imports {name}"
        top = path.relative_to(PKG).parts[0].removesuffix(".py")
        if top == "cli":
            continue
        if top == "verify" and name in ("traceprobe.record.meta", "traceprobe.record.registry"):
            continue  # the verdicts read the recording's metadata and claims (torch-free modules)
        assert not name.startswith("traceprobe.record"), f"{path.name} imports {name}"


@pytest.mark.parametrize("path", _analysis_modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_imports_flow_one_way(path: Path) -> None:
    rel = path.relative_to(PKG)
    top = rel.parts[0].removesuffix(".py")
    mine = _layer(top)
    if mine is None:
        pytest.skip(f"{rel} is in no layer (package glue)")
    for name in _imports(path):
        if not name.startswith("traceprobe."):
            continue
        theirs = _layer(name.split(".")[1])
        if theirs is not None:
            assert theirs <= mine, f"{rel} (layer {mine}) imports {name} (layer {theirs})"


def test_analysis_path_loads_no_torch_at_run_time(tmp_path: Path) -> None:
    code = (
        "import sys, traceprobe.cli.analyze, traceprobe.report, traceprobe.load.pipeline, "
        "traceprobe.render.html, traceprobe.verify, traceprobe.comparison, traceprobe.annotate\n"
        "bad = [m for m in ('torch', 'matplotlib', 'tensorboard') if m in sys.modules]\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help_with_an_example_and_is_in_the_readme(name: str) -> None:
    from click.testing import CliRunner

    from traceprobe.cli import cli

    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Example" in result.output
    assert f"traceprobe {name}" in README.read_text(), f"README does not show `traceprobe {name}`"


# ----------------------------------------------------------------------------- the checker
# A module graph of any copy of the package (so a deliberately broken copy can prove the checks
# fail), with every import the file holds: top-level, inside functions, relative. Only the
# imports under ``if TYPE_CHECKING:`` are left out: they never run, so they cannot close a circle.


def _dotted(pkg: Path, path: Path) -> str:
    parts = [pkg.name, *path.relative_to(pkg).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _run_time_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    out: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def module_graph(pkg: Path) -> dict[str, set[str]]:
    """Each module of the package at ``pkg`` -> the package's modules it imports."""
    files = {_dotted(pkg, p): p for p in sorted(pkg.rglob("*.py"))}

    def resolve(name: str) -> str | None:  # the longest prefix that is one of our modules
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            if ".".join(parts[:i]) in files:
                return ".".join(parts[:i])
        return None

    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        here = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        targets: set[str | None] = set()
        for node in _run_time_imports(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(resolve(a.name) for a in node.names)
                continue
            base = node.module or ""
            if node.level:
                anchor = here.split(".")[: len(here.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets.update(resolve(f"{base}.{a.name}") for a in node.names)
        graph[mod] = {t for t in targets if t is not None and t != mod}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every circle of imports, one per strongly connected group, as a path ``a -> b -> a``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def connect(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    cycles = []
    for group in groups:  # walk one circle inside the group, from its first module
        start = min(group)
        path, seen = [start], {start}
        while True:
            nxt = min(w for w in graph[path[-1]] if w in group)
            if nxt in seen:
                cycles.append(path[path.index(nxt):] + [nxt])
                break
            path.append(nxt)
            seen.add(nxt)
    return cycles


def _part(pkg: Path, module: str) -> str | None:
    """The top-level part of the package a module belongs to (``load``, ``cli``...)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def part_graph(pkg: Path) -> dict[str, set[str]]:
    """The same graph between the package's parts (``load``, ``report``...); root glue left out."""
    out: dict[str, set[str]] = {}
    for mod, targets in module_graph(pkg).items():
        mine = _part(pkg, mod)
        if mine is None:
            continue
        theirs = {_part(pkg, t) for t in targets} - {mine, None}
        out.setdefault(mine, set()).update(t for t in theirs if t is not None)
    return out


def layer_violations(pkg: Path) -> list[str]:
    """Imports that go up the LAYERS, and torch or click imported below the CLI/record wing."""
    bad = []
    for mod, targets in module_graph(pkg).items():
        mine = _part(pkg, mod)
        if mine is None:
            continue
        for t in targets:
            theirs = _part(pkg, t)
            lm, lt = _layer(mine), _layer(theirs) if theirs else None
            if lm is not None and lt is not None and lt > lm:
                bad.append(f"{mod} (layer {lm}) imports {t} (layer {lt})")
    for path in sorted(pkg.rglob("*.py")):
        mod = _dotted(pkg, path)
        if _part(pkg, mod) in ("cli", "record"):
            continue
        for node in _run_time_imports(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if node.level == 0 else [])
            for name in names:
                if name.split(".")[0] in ("torch", "click"):
                    bad.append(f"{mod} imports {name} (only cli/ and record/ may)")
    return bad


def test_the_package_has_no_import_circles() -> None:
    assert import_cycles(module_graph(PKG)) == []
    assert import_cycles(part_graph(PKG)) == []


def test_the_package_imports_flow_down_the_layers() -> None:
    assert layer_violations(PKG) == []


def test_the_checker_catches_a_circle_an_upward_import_and_click_below_the_cli(
    tmp_path: Path,
) -> None:
    import shutil

    broken = tmp_path / "traceprobe"
    shutil.copytree(PKG, broken, ignore=shutil.ignore_patterns("__pycache__"))
    assert import_cycles(module_graph(broken)) == [] and layer_violations(broken) == []

    def inject(rel: str, code: str) -> None:
        path = broken / rel
        path.write_text(path.read_text() + "\n\n" + code + "\n")

    # a circle closed by a function-level, relative import: tables -> units -> tables
    inject("render/units.py", "def _late():\n    from . import tables\n    return tables")
    # an upward import inside a function: load reads the report
    inject("load/read.py", "def _up():\n    from traceprobe.report.build import analyze\n"
                           "    return analyze")
    # a circle between two parts of the package: intervals (layer 0) <-> timeline
    inject("intervals.py", "def _tl():\n    import traceprobe.timeline\n")
    inject("timeline.py", "def _iv():\n    from traceprobe import intervals\n")
    inject("metrics/top.py", "import click")

    cycles = import_cycles(module_graph(broken))
    assert any({"traceprobe.render.tables", "traceprobe.render.units"} <= set(c)
               and c[0] == c[-1] for c in cycles), cycles
    assert ["traceprobe.intervals", "traceprobe.timeline", "traceprobe.intervals"] in cycles
    # between parts: the two above, and load -> report -> load closed by the upward import
    assert sorted(import_cycles(part_graph(broken))) == [
        ["intervals", "timeline", "intervals"], ["load", "report", "load"]]
    bad = layer_violations(broken)
    assert "traceprobe.load.read (layer 1) imports traceprobe.report.build (layer 3)" in bad
    assert "traceprobe.metrics.top imports click (only cli/ and record/ may)" in bad


# ----------------------------------------------------------------------------- drawing
# Renderers draw what metrics computed: they import from metrics only the entry points made
# for pictures, and build no sets of time themselves (no union, intersection, difference,
# coverage... of intervals). ``annotate`` draws the same sets into a trace: the second rule
# holds for it too. Measuring a set over pixels (``measure_within``, ``covered_within``) and
# coarsening it for a resolution (``merge_close``) are drawing, allowed.

DRAWERS = ("render",)  # parts whose every module is a renderer
ALSO_DRAWS = ("traceprobe.annotate",)  # modules held to the second rule
# what renderers may import from metrics: the sets pictures draw (bands), the host account
# (regions: the host's classes; nesting: which event encloses which) and the window set
FOR_PICTURES = ("traceprobe.metrics.bands", "traceprobe.metrics.regions",
                "traceprobe.metrics.nesting", "traceprobe.metrics.grouping.Windows")
DRAWING = frozenset({"Spans", "EMPTY", "measure_within", "covered_within", "merge_close"})
# left for the host account's move into metrics (issue 23, the host half): the host lanes
# still find each thread's innermost event here
LEFT = {"traceprobe.render.lanes:host_lanes"}


def _interval_uses(tree: ast.Module) -> list[tuple[str, str]]:
    """(enclosing top-level name, interval function) for every use of a name taken from
    ``traceprobe.intervals``, or of an attribute of that module, in ``tree``."""
    names: dict[str, str] = {}
    modules: set[str] = set()
    for node in _run_time_imports(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "traceprobe.intervals":
            names.update({a.asname or a.name: a.name for a in node.names})
        elif isinstance(node, ast.ImportFrom) and node.module == "traceprobe":
            modules.update(a.asname or a.name for a in node.names if a.name == "intervals")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "traceprobe.intervals":
                    modules.add(a.asname or "traceprobe.intervals")
    out = []
    for top in tree.body:
        where = getattr(top, "name", "<module>")
        for node in ast.walk(top):
            if isinstance(node, ast.Name) and node.id in names:
                out.append((where, names[node.id]))
            elif isinstance(node, ast.Attribute) and ast.unparse(node.value) in modules:
                out.append((where, node.attr))
    return out


def drawing_violations(pkg: Path) -> list[str]:
    """Renderers that import metrics internals, and renderers (or annotate) that compute
    sets of time themselves."""
    bad = []
    for path in sorted(pkg.rglob("*.py")):
        mod = _dotted(pkg, path)
        draws = _part(pkg, mod) in DRAWERS
        if not draws and mod not in ALSO_DRAWS:
            continue
        tree = ast.parse(path.read_text())
        if draws:
            for node in _run_time_imports(tree):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    taken = [f"{node.module}.{a.name}" for a in node.names]
                elif isinstance(node, ast.Import):
                    taken = [a.name for a in node.names]
                else:
                    continue
                for name in taken:
                    if (name.startswith("traceprobe.metrics.") or name == "traceprobe.metrics"
                            ) and not name.startswith(FOR_PICTURES):
                        bad.append(f"{mod} imports {name} (metrics internals)")
        for where, fn in _interval_uses(tree):
            if fn not in DRAWING and f"{mod}:{where}" not in LEFT:
                bad.append(f"{mod}:{where} computes intervals ({fn})")
    return bad


def test_renderers_draw_what_metrics_computed() -> None:
    assert drawing_violations(PKG) == []


PLANTED = {
    "metrics internals": ("render/text.py", "from traceprobe.metrics.devices import device_busy",
                          "traceprobe.render.text imports traceprobe.metrics.devices.device_busy "
                          "(metrics internals)"),
    "a whole package": ("render/markdown.py", "def _m():\n    import traceprobe.metrics.idle",
                        "traceprobe.render.markdown imports traceprobe.metrics.idle "
                        "(metrics internals)"),
    "an interval of its own": (
        "render/csv.py",
        "from traceprobe.intervals import intersect as _both\n\n\ndef _hidden(a, b):\n"
        "    return _both(a, b)",
        "traceprobe.render.csv:_hidden computes intervals (intersect)"),
    "through the module": (
        "render/plot.py", "def _gaps(a):\n    from traceprobe import intervals as iv\n"
                          "    return iv.gaps(a, 0, 10)",
        "traceprobe.render.plot:_gaps computes intervals (gaps)"),
    "annotate too": ("annotate.py", "def _u(a, b):\n    import traceprobe.intervals\n"
                                    "    return traceprobe.intervals.union(a, b)",
                     "traceprobe.annotate:_u computes intervals (union)"),
}


@pytest.mark.parametrize("case", sorted(PLANTED))
def test_the_drawing_check_fails_on_a_planted_copy(case: str, tmp_path: Path) -> None:
    """GIVEN a copy of the package with one renderer that imports metrics internals or
    computes intervals itself THEN the check names it (and only it)."""
    import shutil

    broken = tmp_path / "traceprobe"
    shutil.copytree(PKG, broken, ignore=shutil.ignore_patterns("__pycache__"))
    rel, code, want = PLANTED[case]
    path = broken / rel
    path.write_text(path.read_text() + "\n\n" + code + "\n")
    assert drawing_violations(broken) == [want]


# ----------------------------------------------------------------------------- the report
# Renderers take the Report (integer ns) and write display units only in the cell; only the
# JSON renderer turns a report into the dict of docs/REPORT_SCHEMA.md (``to_dict``, and
# its pieces ``head_dict``/``step_dicts``; ``jsonfmt.as_dict`` wraps them).

DICT_MAKERS = frozenset({"to_dict", "head_dict", "step_dicts", "as_dict"})
JSON_RENDERER = "traceprobe.render.jsonfmt"


def dict_violations(pkg: Path) -> list[str]:
    """Renderers other than the JSON one that turn a report into its dict: a call of (or an
    import, or a ``getattr`` by name, of) ``to_dict``, ``head_dict``, ``step_dicts`` or
    ``as_dict``."""
    bad = []
    for path in sorted(pkg.rglob("*.py")):
        mod = _dotted(pkg, path)
        if _part(pkg, mod) not in DRAWERS or mod == JSON_RENDERER:
            continue
        tree = ast.parse(path.read_text())
        for top in tree.body:
            where = getattr(top, "name", "<module>")
            for node in ast.walk(top):
                if isinstance(node, ast.Attribute) and node.attr in DICT_MAKERS:
                    name = node.attr
                elif isinstance(node, ast.Name) and node.id in DICT_MAKERS:
                    name = node.id
                elif (isinstance(node, ast.Call) and ast.unparse(node.func) == "getattr"
                      and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
                      and node.args[1].value in DICT_MAKERS):
                    name = str(node.args[1].value)
                elif isinstance(node, ast.ImportFrom):
                    names = [a.name for a in node.names if a.name in DICT_MAKERS]
                    if not names:
                        continue
                    name = names[0]
                else:
                    continue
                bad.append(f"{mod}:{where} turns the report into its dict ({name})")
    return sorted(set(bad))


def test_only_the_json_renderer_makes_the_report_dict() -> None:
    assert dict_violations(PKG) == []


PLANTED_DICTS = {
    "a call": ("render/text.py", "def _d(report):\n    return report.to_dict()",
               "traceprobe.render.text:_d turns the report into its dict (to_dict)"),
    "by name": ("render/html.py", "def _d(report):\n    return getattr(report, 'to_dict')()",
                "traceprobe.render.html:_d turns the report into its dict (to_dict)"),
    "the JSON renderer's helper": (
        "render/markdown.py", "def _d(report):\n    from traceprobe.render.jsonfmt import "
                              "as_dict\n    return as_dict(report)",
        "traceprobe.render.markdown:_d turns the report into its dict (as_dict)"),
    "the steps one by one": (
        "render/csv.py", "def _steps(report):\n    return list(report.step_dicts())",
        "traceprobe.render.csv:_steps turns the report into its dict (step_dicts)"),
}


@pytest.mark.parametrize("case", sorted(PLANTED_DICTS))
def test_the_dict_check_fails_on_a_planted_copy(case: str, tmp_path: Path) -> None:
    """GIVEN a copy of the package with one renderer (not the JSON one) that turns the
    report into its dict THEN the check names it (and only it)."""
    import shutil

    broken = tmp_path / "traceprobe"
    shutil.copytree(PKG, broken, ignore=shutil.ignore_patterns("__pycache__"))
    rel, code, want = PLANTED_DICTS[case]
    path = broken / rel
    path.write_text(path.read_text() + "\n\n" + code + "\n")
    assert dict_violations(broken) == [want]
