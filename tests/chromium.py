"""The suite's one way to open a headless Chromium (Debian's chromium and chromedriver, installed by
scripts/ensure_chromium.sh): the Dagster UI tests and the Label Studio reviewers' browsers."""

from __future__ import annotations

import shutil

# No GPU process, no background fetches, component updates or sync: nothing leaves 127.0.0.1, and
# on the 2-core test machine no CPU goes to what the tests do not look at.
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium(window: str = "1400,1000", page_load_timeout: float = 90):
    """A new headless Chromium driven by Selenium; the caller quits it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for flag in (*FLAGS, f"--window-size={window}"):
        opts.add_argument(flag)
    # An explicit driver path keeps Selenium Manager from trying to download one.
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    driver.set_page_load_timeout(page_load_timeout)
    return driver
