"""Fixtures for the reader checks: the built site served locally, headless Chromium.

These tests run after the book is built (``make reader-checks``, part of ``make test``);
pytest collects them only with ``--reader-checks``.  They read ``_build/html``, or the built
site that ``COMPANION_READER_SITE`` names (an earlier build, to show what a check finds there).
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import tempfile
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("COMPANION_READER_SITE") or ROOT / "_build" / "html")
SCREENSHOTS = ROOT / "_build" / "screenshots"

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
)


def _which(*names: str) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
        if os.path.isfile(name) and os.access(name, os.X_OK):
            return name
    return None


@pytest.fixture(scope="session")
def site() -> Path:
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site at {SITE}: build the book first (make book), or name a built "
                    "site's html folder in COMPANION_READER_SITE.")
    return SITE


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest's output readable
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        """A browser that leaves a page while a file is still being sent resets the
        connection: not an error of the site, so no traceback in the check's output (any
        other error is printed as before)."""
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


@pytest.fixture(scope="session")
def site_url(site, serve):
    """The built site served over HTTP on 127.0.0.1 (as a reader's browser sees it)."""
    return serve(site)


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium from the Debian packages, driven by selenium (nothing downloaded)."""
    chromium = _which("chromium", "chromium-browser", "/usr/lib/chromium/chromium")
    driver_path = _which("chromedriver", "/usr/lib/chromium/chromedriver")
    if chromium is None or driver_path is None:
        pytest.skip(
            "headless Chromium is not installed, so the rendered site is not checked: "
            "apt-get install -y chromium chromium-driver (CI does this in .ci/run)."
        )
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("selenium is missing: pip install -e '.[test]'")

    os.environ["SE_OFFLINE"] = "true"  # selenium-manager must never fetch a browser
    profile = tempfile.mkdtemp(prefix="companion-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument("--window-size=1280,1600")
    # nothing outside this machine answers: every host but 127.0.0.1 fails to resolve, and
    # the performance log records every request, so a page that tries one is caught
    options.add_argument("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(60)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def _outside_requests(driver) -> list[str]:
    """URLs the browser asked for since the last call that are not on this machine."""
    import json

    urls = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg.get("method") == "Network.requestWillBeSent":
            url = msg["params"]["request"]["url"]
            if not url.startswith(("http://127.0.0.1", "data:", "blob:", "about:", "chrome")):
                urls.append(url)
    return urls


@pytest.fixture(scope="session")
def outside_requests():
    """``outside_requests(driver)``: the URLs asked for since the last call that are not local."""
    return _outside_requests


@pytest.fixture(scope="session")
def serve():
    """``serve(folder)``: the folder served over HTTP on 127.0.0.1 (its URL); stopped at the end."""
    servers = []

    def start(folder: Path) -> str:
        handler = functools.partial(_QuietHandler, directory=str(folder))
        server = _QuietServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def axe() -> str:
    """axe-core's ``axe.min.js`` (npm registry, pinned, sha512-checked; fetched at set-up)."""
    from companion.book.checks import a11y
    try:
        return a11y.axe_source()
    except RuntimeError as err:
        pytest.fail(f"axe-core is not available for the accessibility audit: {err} "
                    "(python -m companion.book.site.vendor fetches it; make env does)")


@pytest.fixture(scope="session")
def audit(axe):
    """``audit(driver, page)``: fail naming the page and the elements if axe-core finds a
    serious or critical violation on the page open in ``driver``."""
    import time

    from companion.book.checks import a11y
    times = []

    def check(driver, page: str, context: str | None = None) -> None:
        t = time.perf_counter()
        result = a11y.run_axe(driver, axe, context)
        times.append(time.perf_counter() - t)
        bad = a11y.failing_violations(result)
        assert not bad, "accessibility audit (axe-core):\n" + a11y.describe(page, bad)

    yield check
    if times:
        print(f"\naccessibility audit: {len(times)} page(s) in {sum(times):.1f} s")


#: the sizes the checks read pages at: ``window`` is the browser's own window (1280 x 1600, no
#: emulation), ``reader`` a reader's desktop column (1300 x 1000), ``phone`` a phone (390 x 844)
VIEWPORTS = {"window": None, "reader": (1300, 1000, False), "phone": (390, 844, True)}

#: waits until MathJax has typeset the page and every image has finished loading
_SETTLED = """
    const done = arguments[arguments.length - 1];
    const images = Array.from(document.images).map(img => img.complete ? null :
        new Promise(r => { img.onload = img.onerror = r; })).filter(Boolean);
    const math = (window.MathJax && MathJax.startup && MathJax.startup.promise)
        ? MathJax.startup.promise : Promise.resolve();
    Promise.all([math, ...images]).then(() => done(true), () => done(false));
"""


class Pages:
    """Pages of the served site, loaded in the browser at a viewport (:data:`VIEWPORTS`).

    ``open(docname, viewport, reuse)`` loads the page and waits for its math and images; it
    returns what the load asked of the network and wrote to the console: ``outside`` (the
    URLs asked for that are not on this machine) and ``console`` (the browser's log entries),
    both from the load alone.  With ``reuse``, a check that only reads the page takes it as
    the previous such check left it, if that is the page open now at that viewport: a load
    by any other check (a fresh load, another size, a click) leaves no mark, and a window
    whose width changed since is loaded again, so the next reader loads the page afresh."""

    viewports = VIEWPORTS

    def __init__(self, browser, site_url: str):
        self.browser, self.site_url = browser, site_url
        self._loads: dict[str, dict] = {}

    def url(self, docname: str) -> str:
        return f"{self.site_url}/{docname}.html"

    def emulate(self, viewport: str) -> None:
        size = VIEWPORTS[viewport]
        if size is None:
            self.browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        else:
            self.browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                "width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": size[2]})

    def open(self, docname: str, viewport: str = "window", reuse: bool = False) -> dict:
        if viewport not in VIEWPORTS:
            raise ValueError(f"unknown viewport {viewport!r}; choose one of {sorted(VIEWPORTS)}")
        url = self.url(docname)
        mark = f"{viewport} {url}"
        if reuse and mark in self._loads:
            shown, width = self.browser.execute_script(
                "return [window.__companionPristine || null, window.innerWidth];")
            if shown == mark and width == self._loads[mark]["width"]:
                return self._loads[mark]
        self.emulate(viewport)
        _outside_requests(self.browser)   # forget what earlier pages asked for and logged
        self.browser.get_log("browser")
        self.browser.get(url)
        self.browser.execute_async_script(_SETTLED)
        load = {"outside": _outside_requests(self.browser), "console": self.browser.get_log("browser"),
                "width": self.browser.execute_script("return window.innerWidth;")}
        if reuse:
            self.browser.execute_script("window.__companionPristine = arguments[0];", mark)
            self._loads[mark] = load
        return load


@pytest.fixture(scope="session")
def pages(browser, site_url):
    """:class:`Pages` of the built site in the session's browser."""
    return Pages(browser, site_url)


def pytest_collection_modifyitems(config, items):
    """Run the page-reading checks page by page and, within a page, viewport by viewport (all
    checks of one page at one size, then the next), in the slots they had, so that they share
    one load of each page at each size: a module names them in ``PAGE_READERS`` (the name of
    each check and the viewport it reads at) and opens its pages with
    ``pages.open(..., reuse=True)``.  The slots of both modules of the browser check are one
    pool when they run in one process.  The order changes only the time: each check is right
    in any order, since a page that another check loaded or changed is loaded again."""
    def viewport(item):
        readers = getattr(item.module, "PAGE_READERS", {})
        return readers.get(item.originalname) if isinstance(readers, dict) else None

    slots = [i for i, item in enumerate(items)
             if viewport(item) is not None
             and "docname" in getattr(getattr(item, "callspec", None), "params", {})]
    pages = {}
    sizes = list(VIEWPORTS)
    ordered = sorted((items[i] for i in slots),
                     key=lambda it: (pages.setdefault(it.callspec.params["docname"], len(pages)),
                                     sizes.index(viewport(it))))
    for i, item in zip(slots, ordered):
        items[i] = item
