"""The accessibility audit's parts that run without a browser: axe-core vendored from the
npm registry with its sha512 checked, and the filter of serious and critical violations
(on a result axe-core 4.10.3 produced for tests/data/axe_sample.html's page in headless
Chromium)."""

from __future__ import annotations

import copy
import json
import os
import stat
import tarfile
from pathlib import Path

import pytest

from companion.book.checks import a11y

from companion.book.site import vendor
ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "data" / "axe_sample_result.json"


def _fake_npm(tmp_path, name, version, files: dict):
    pkg = tmp_path / "pkg" / "package"
    for rel, payload in files.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_bytes(payload)
    tgz = tmp_path / f"{name}-{version}.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(pkg, arcname="package")
    npm = tmp_path / "bin" / "npm"
    npm.parent.mkdir(exist_ok=True)
    npm.write_text(f'#!/bin/sh\nwhile [ "$1" != "--pack-destination" ]; do shift; done\ncp {tgz} "$2"/\n')
    npm.chmod(npm.stat().st_mode | stat.S_IEXEC)
    return npm.parent, tgz


def test_axe_core_with_another_digest_is_refused(tmp_path, monkeypatch):
    bin_dir, _ = _fake_npm(tmp_path, "axe-core", vendor.AXE_VERSION, {"axe.min.js": b"not axe"})
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(RuntimeError, match="digest .* expected"):
        vendor.vendor_axe(tmp_path / "cache")
    assert not (tmp_path / "cache" / f"axe-core-{vendor.AXE_VERSION}" / "axe.min.js").exists()


def test_a_tarball_with_the_pinned_digest_is_extracted_and_reused(tmp_path, monkeypatch):
    bin_dir, tgz = _fake_npm(tmp_path, "demo", "1.0.0", {"dist/demo.js": b"ok", "README.md": b"r"})
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    integrity = vendor.integrity_of(tgz.read_bytes())
    out = vendor.npm_package("demo", "1.0.0", integrity, "dist", "demo.js", tmp_path / "cache")
    assert (out / "demo.js").read_bytes() == b"ok" and not (out / "README.md").exists()
    tgz.unlink()  # a second call must not fetch again
    assert vendor.npm_package("demo", "1.0.0", integrity, "dist", "demo.js", tmp_path / "cache") == out


def test_the_pinned_integrity_is_an_npm_sha512():
    import base64

    assert vendor.AXE_INTEGRITY.startswith("sha512-")
    assert len(base64.b64decode(vendor.AXE_INTEGRITY[len("sha512-"):])) == 64


def test_the_vendored_axe_core_matches_its_version_if_fetched():
    path = Path(os.environ.get("COMPANION_CACHE", Path.home() / ".cache" / "companion")) / "vendor" / \
        f"axe-core-{vendor.AXE_VERSION}" / "axe.min.js"
    if not path.is_file():
        pytest.skip("axe-core is not fetched here (python -m companion.book.site.vendor)")
    assert f"axe v{vendor.AXE_VERSION}" in path.read_text(encoding="utf-8")[:300]


def test_the_filter_keeps_serious_and_critical_violations_and_names_the_elements():
    result = json.loads(SAMPLE.read_text(encoding="utf-8"))
    ids = {v["id"]: v["impact"] for v in result["violations"]}
    assert ids == {"button-name": "critical", "color-contrast": "serious", "image-alt": "critical",
                   "list": "serious"}
    # add a moderate and a minor violation: they must not fail the audit
    extra = copy.deepcopy(result)
    extra["violations"].append({"id": "landmark-one-main", "impact": "moderate", "help": "h",
                                "nodes": [{"impact": "moderate", "target": ["html"], "html": "<html>"}]})
    extra["violations"].append({"id": "mixed", "impact": "serious", "help": "h", "nodes": [
        {"impact": "minor", "target": ["#a"], "html": "<a id=a>"},
        {"impact": "serious", "target": ["#b"], "html": "<b id=b>"}]})
    bad = a11y.failing_violations(extra)
    assert [v["id"] for v in bad] == ["button-name", "color-contrast", "image-alt", "list", "mixed"]
    assert [n["target"] for n in bad[-1]["nodes"]] == [["#b"]]
    text = a11y.describe("book/sample.html", bad)
    assert "book/sample.html: image-alt (critical)" in text
    assert "element img" in text and "<img" in text
    assert "element button" in text
    assert not a11y.failing_violations({"violations": []})
    assert not a11y.failing_violations(extra, impacts=("nonexistent",))
