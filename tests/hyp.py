"""``examples(n)``: a test's own Hypothesis example count, scaled by the loaded profile.

A test that names ``max_examples`` overrides the profile's, so the ``long`` profile would not
lengthen it; ``@settings(max_examples=examples(150))`` keeps 150 under the default profiles
(their 100 examples), 1500 under ``long`` (1000), 30 under ``mutants`` (20). Profiles:
tests/conftest.py and docs/TESTING.md.
"""

from __future__ import annotations

from hypothesis import settings


def examples(n: int) -> int:
    return max(1, n * settings.default.max_examples // 100)
