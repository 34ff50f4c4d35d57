"""Slides from the executed chapters: glued values filled in, slides cut where the chapter
marks them, no address outside the deck's folder, and reveal.js only with the pinned digest."""

import os
import re
import stat
import tarfile

import pytest

from companion.book.slides import REVEAL_VERSION, deck_html, resolve_glue, split_slides, vendor_reveal

GLUE = {
    "n": {"data": {"text/plain": "0.123456"}},
    "np_value": {"data": {"text/plain": "np.float64(0.5)"}},
    "status": {"data": {"text/plain": "holds"}},
    "fig": {"data": {"text/plain": "<Figure>", "image/png": "iVBORw0KGgo="}},
}


def test_glued_numbers_take_their_format_and_numpy_scalars_are_read():
    out = resolve_glue("a {glue:text}`n:.2f` b {glue:text}`np_value:.0%` c {glue:text}`status`", GLUE)
    assert out == "a 0.12 b 50% c holds"


def test_a_glued_figure_becomes_an_image_with_its_caption():
    text = "```{glue:figure} fig\n:name: fig-x\n\nThe caption.\n```\n"
    out = resolve_glue(text, GLUE)
    assert 'src="data:image/png;base64,iVBORw0KGgo="' in out and "The caption." in out and ":name:" not in out


def test_a_missing_glued_name_is_an_error_not_a_placeholder():
    with pytest.raises(KeyError, match="'absent'"):
        resolve_glue("{glue:text}`absent`", GLUE)


def test_slides_start_at_headings_and_at_slide_marks():
    cells = [("markdown", "# Title\n\nintro"), ("image", "PNG"),
             ("markdown", "## A\n\none\n% slide\ntwo\n### B\nthree")]
    slides = split_slides(cells)
    assert [len(s) for s in slides] == [2, 1, 1, 1]
    assert slides[0][0][1].startswith("# Title") and slides[0][1] == ("image", "PNG")
    assert "% slide" not in str(slides) and slides[2][0][1].strip() == "two"


def test_a_deck_names_no_address_outside_its_folder():
    page = deck_html("T", ["<p>\\(x\\)</p>"])
    assert not re.search(r"(src|href)=\"(https?:)?//", page)
    assert 'src="vendor/mathjax/tex-chtml.js"' in page and 'src="vendor/reveal/reveal.js"' in page


def _fake_npm(tmp_path, payload: bytes):
    """An `npm` on PATH whose `pack` writes a reveal.js tarball with ``payload`` inside."""
    src = tmp_path / "pkg" / "package" / "dist"
    src.mkdir(parents=True)
    (src / "reveal.js").write_bytes(payload)
    tgz = tmp_path / f"reveal.js-{REVEAL_VERSION}.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(tmp_path / "pkg" / "package", arcname="package")
    npm = tmp_path / "bin" / "npm"
    npm.parent.mkdir()
    npm.write_text(f'#!/bin/sh\nwhile [ "$1" != "--pack-destination" ]; do shift; done\ncp {tgz} "$2"/\n')
    npm.chmod(npm.stat().st_mode | stat.S_IEXEC)
    return npm.parent


def test_a_tarball_with_another_digest_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{_fake_npm(tmp_path, b'not reveal')}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(RuntimeError, match="digest .* expected"):
        vendor_reveal(tmp_path / "cache")
    assert not (tmp_path / "cache" / f"reveal.js-{REVEAL_VERSION}" / "reveal.js").exists()
