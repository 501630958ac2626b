"""The CLI stays thin (issue 23): no function in traceprobe/cli is longer than 60 lines."""

from __future__ import annotations

import ast
from pathlib import Path

CLI = Path(__file__).resolve().parents[2] / "traceprobe" / "cli"
LIMIT = 60


def test_no_cli_function_is_longer_than_60_lines() -> None:
    long = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                body = node.end_lineno - node.lineno + 1 if node.end_lineno else 0
                if body > LIMIT:
                    long.append(f"{path.name}:{first} {node.name} ({body} lines)")
    assert not long, long
