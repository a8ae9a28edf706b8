"""Debian's Chromium, headless, driven by Selenium through chromium-driver: for the site's browser tests and for
README's screenshots.

    python -m render.browser OUT_FOLDER    # build the site, then screenshot lesson 0, a lesson page and a diff page,
                                           # at 1280 and at 390 px

Both programs come from apt (`apt-get install chromium chromium-driver`; .ci/run installs them where they are
missing): a browser download (Selenium Manager's, Playwright's) cannot work on a machine without the internet, so
the driver is named by its path and nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def available() -> bool:
    return Path(CHROMIUM).is_file() and Path(DRIVER).is_file()


@contextlib.contextmanager
def chromium(width: int = 1280, height: int = 900):
    """A headless Chromium of that window size, with its console and network logs kept (driver.get_log)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--disable-dev-shm-usage",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-default-apps", "--disable-extensions", "--allow-file-access-from-files"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    with tempfile.TemporaryDirectory() as profile:
        options.add_argument(f"--user-data-dir={profile}")
        driver = webdriver.Chrome(service=Service(DRIVER), options=options)
        try:
            driver.set_window_size(width, height)
            load(driver, "about:blank")  # (off Chromium's own start page before the first page of ours)
            yield driver
        finally:
            driver.quit()


def load(driver, url: str, timeout: float = 30.0) -> None:
    """driver.get(url), then wait until the document has loaded. chromium-driver's get waits for the load event
    as a rule, but one CI run (Python 3.11) found a page of ours still "loading" when it returned."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    try:
        WebDriverWait(driver, timeout, poll_frequency=0.05).until(
            lambda d: d.execute_script("return document.readyState") == "complete")
    except TimeoutException:
        raise AssertionError(f"{url} was still loading after {timeout:g} s") from None


def screenshot(url: str, out: Path, width: int, height: int, scroll_to: str | None = None) -> None:
    """A PNG of the page's window at that size (scrolled to the element of id `scroll_to`), scaled down to 70%
    and reduced to a palette so that it stays small."""
    from PIL import Image

    with chromium(width, height) as driver:
        load(driver, url)
        if scroll_to:
            driver.execute_script(f"document.getElementById({scroll_to!r}).scrollIntoView()")
        driver.save_screenshot(str(out))
    image = Image.open(out).convert("RGB")
    image = image.resize((round(image.width * 0.7), round(image.height * 0.7)), Image.LANCZOS)
    image.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(out, optimize=True)


SHOTS = ("lesson-page.png", "diff-page.png", "lesson0-page.png", "lesson0-page-390.png", "lesson-page-390.png",
         "diff-page-390.png")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m render.browser OUT_FOLDER", file=sys.stderr)
        return 2
    if not available():
        print(f"python -m render.browser: no {CHROMIUM} or {DRIVER}: apt-get install chromium chromium-driver",
              file=sys.stderr)
        return 2
    from render.__main__ import build
    from render.source import ROOT

    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        site = Path(folder) / "_site"
        build(site)
        lines = (ROOT / "ppo_cartpole.py").read_text().splitlines()
        # GAE's recursion beside its equations (11, 12), each typeset once on the page
        update = next(n for n, line in enumerate(lines, start=1) if "delta_t = r_t + gamma * V(s_{t+1})" in line)
        screenshot((site / "lessons" / "ppo_cartpole.html").as_uri(), out / "lesson-page.png", 1280, 820,
                   scroll_to=f"L{update - 4}")
        screenshot((site / "diffs" / "ppo_cartpole--ppo_lunarlander_vec.html").as_uri(), out / "diff-page.png",
                   1280, 820)
        screenshot((site / "lesson-0.html").as_uri(), out / "lesson0-page.png", 1280, 820,
                   scroll_to="the-clip-case-by-case")
        # a phone's width: the same pages at 390 px
        screenshot((site / "lesson-0.html").as_uri(), out / "lesson0-page-390.png", 390, 844,
                   scroll_to="the-clip-case-by-case")
        screenshot((site / "lessons" / "ppo_cartpole.html").as_uri(), out / "lesson-page-390.png", 390, 844,
                   scroll_to=f"L{update - 4}")
        screenshot((site / "diffs" / "ppo_cartpole--ppo_lunarlander_vec.html").as_uri(), out / "diff-page-390.png",
                   390, 844)
    for name in SHOTS:
        print(f"{out / name}: {(out / name).stat().st_size // 1024} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
