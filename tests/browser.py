"""The one way the browser tests find Debian's chromium and drive it through Playwright
(``executable_path``; no browser download): tests/render/test_browser.py, test_step_charts.py."""

from __future__ import annotations

import shutil
from pathlib import Path

CHROMIUM = next((p for p in ("/usr/bin/chromium", shutil.which("chromium") or "")
                 if p and Path(p).is_file()), None)
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - depends on the environment
    sync_playwright = None  # type: ignore[assignment]
