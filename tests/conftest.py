"""Shared test set-up: the helper modules in tests/ (tracebuild, frames) import by bare name."""

from __future__ import annotations

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
