"""The explorer page's own script run under node, with a stub of the page's elements: what it
writes in the scores line of the first form it shows (tests of the explorer share it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

HARNESS = r"""
const html = require("fs").readFileSync(process.argv[2], "utf8");
const script = html.slice(html.indexOf("<script>") + 8, html.lastIndexOf("</script>"));
const els = {};
const el = () => ({ value: "", innerHTML: "", options: [], dataset: {}, textContent: "", width: 64, height: 64,
  add(o) { this.options.push(o); if (this.options.length === 1) this.value = o.value; },
  getContext() { return new Proxy({}, { get: () => () => {}, set: () => true }); } });
const root = { querySelector: (c) => els[c] || (els[c] = el()), dataset: {} };
global.document = { getElementById: () => root };
global.Option = function (t, v) { this.text = t; this.value = v; };
global.atob = (s) => Buffer.from(s, "base64").toString("binary");
eval(script);
console.log(els[".qk-scores"].textContent);
"""


def shown_scores(page: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    """Run the script of the explorer ``page`` under node; its stdout is the scores line."""
    harness = tmp_path / "run.js"
    harness.write_text(HARNESS)
    return subprocess.run(["node", str(harness), str(page)], capture_output=True, text=True, timeout=20)
