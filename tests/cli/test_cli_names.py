"""Command names: the British spelling `analyse`, and the closest command on a typo."""

from __future__ import annotations

from pathlib import Path

import pytest

from traceprobe.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "sample_traces" / "h200x2" / "copy" / "side-stream"


def test_analyse_is_analyze(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(SAMPLE), "-f", "json"]) == 0
    american = capsys.readouterr().out
    assert main(["analyse", str(SAMPLE), "-f", "json"]) == 0
    assert capsys.readouterr().out == american and '"schema"' in american


def test_help_lists_the_alias_beside_its_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "analyze, analyse" in capsys.readouterr().out


@pytest.mark.parametrize("typo, meant", [("analyz", "analyze"), ("verfy", "verify"),
                                         ("comapre", "compare"), ("recrod", "record"),
                                         ("analyse-", "analyze")])
def test_a_typo_names_the_closest_command(
    typo: str, meant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([typo]) == 2
    err = capsys.readouterr().err
    assert f"No such command '{typo}'. Did you mean '{meant}'?" in err


def test_nothing_close_suggests_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["zzz"]) == 2
    err = capsys.readouterr().err
    assert "No such command 'zzz'." in err and "Did you mean" not in err
