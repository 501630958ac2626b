"""Shared test set-up: the helper modules in tests/ (tracebuild, frames) import by bare name."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

CORPUS = HERE.parents[1] / "shared" / "corpus"
SAMPLES = HERE.parent / "sample_traces"


@pytest.fixture
def corpus_dir() -> Path:
    """../shared/corpus beside the checkout; skips where it is absent (a user's checkout)."""
    if not CORPUS.is_dir():
        pytest.skip(f"third-party trace corpus not found at {CORPUS}")
    return CORPUS


# Hypothesis profiles (docs/TESTING.md). TRACEPROBE_HYPOTHESIS picks one; CI=true picks "ci".
#   ci       derandomized: every run draws the same examples, so a red CI run reproduces
#   dev      the default locally: random examples, failures kept in .hypothesis/ and replayed
#   long     ten times the examples of dev (tests' own max_examples scale too, see examples())
#   mutants  derandomized and no example database, for scripts/mutants.py
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None)
settings.register_profile("dev", print_blob=True)
settings.register_profile(
    "long", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "mutants", derandomize=True, database=None, deadline=None, max_examples=20
)
PROFILE = os.environ.get(
    "TRACEPROBE_HYPOTHESIS", "ci" if os.environ.get("CI", "").lower() == "true" else "dev"
)
settings.load_profile(PROFILE)


def pytest_report_header(config: pytest.Config) -> str:
    seed = "derandomized (fixed examples)" if settings().derandomize else "random examples"
    return f"hypothesis profile: {PROFILE}, {seed} (choose with TRACEPROBE_HYPOTHESIS=ci|dev|long)"
