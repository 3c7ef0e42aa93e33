"""Debian's chromium, headless through chromium-driver (Selenium), and the screenshots the
browser tests take: into the test's tmp_path, and to $PROOFFLOW_SCREENSHOTS when set (the
README's and docs' PNGs come from there: ``PROOFFLOW_SCREENSHOTS=docs pytest ...``)."""
from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
MISSING = "needs Debian's chromium and chromium-driver (.ci/run installs them)"


@contextlib.contextmanager
def chromium(tmp_path: Path, size: str = "1280,1350"):
    """A headless chromium driver with its profile and chromedriver's log in ``tmp_path``."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--window-size={size}", f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER, log_output=str(tmp_path / "chromedriver.log")),
                              options=opts)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def shot(driver, tmp_path: Path, name: str) -> Path:
    """Screenshot into tmp_path, the page source beside it; to $PROOFFLOW_SCREENSHOTS too
    when set, in 128 colours (small enough to commit)."""
    path = tmp_path / name
    driver.save_screenshot(str(path))
    path.with_suffix(".html").write_text(driver.page_source)
    if os.environ.get("PROOFFLOW_SCREENSHOTS"):
        from PIL import Image
        out = Path(os.environ["PROOFFLOW_SCREENSHOTS"])
        out.mkdir(parents=True, exist_ok=True)
        with Image.open(path) as im:
            im.convert("RGB").quantize(colors=128).save(out / name, optimize=True)
    return path
