"""The Sphinx extension's version footer, citation box, release changes, exercise labels and
figure alt text / source data, on a tiny sample book built here (no execution: the
notebook's outputs are made in this process through the book kernels' formatter)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("myst_nb")
pytest.importorskip("sphinx_book_theme")

ROOT = Path(__file__).resolve().parents[1]


def _figure_output(bad: bool = False) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from companion.book.figures import source_data as sd

    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1, 2], [0.5, 1.5, 1.0], label="sample series")
    ax.set_title("A sample")
    png, meta = sd.figure_bundle(fig)
    plt.close(fig)
    out = {"output_type": "display_data", "metadata": {} if bad else {"image/png": meta},
           "data": {"image/png": base64.b64encode(png).decode(), "text/plain": "<Figure>"}}
    if bad:  # another image, so that its file name differs
        out["data"]["image/png"] = base64.b64encode(png + b"\0").decode()
    return out, meta


def _notebook(outputs) -> str:
    cells = [{"cell_type": "markdown", "id": "c1", "metadata": {}, "source": "# A chapter\n"},
             {"cell_type": "code", "id": "c2", "metadata": {}, "execution_count": 1, "source": "fig",
              "outputs": outputs}]
    return json.dumps({"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                    "language": "python"}},
                       "nbformat": 4, "nbformat_minor": 5})


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from sphinx.cmd.build import build_main

    from companion.book.site import changes
    src = tmp_path_factory.mktemp("sample")
    out = src / "_build"
    good, meta = _figure_output()
    bad, _ = _figure_output(bad=True)
    (src / "conf.py").write_text(
        'extensions = ["myst_nb", "sphinx_exercise", "companion.book.sphinxext"]\n'
        'html_theme = "sphinx_book_theme"\nnb_execution_mode = "off"\n'
        'companion_exercise_labels = "labels.yaml"\nmyst_enable_extensions = ["colon_fence"]\n'
        'exclude_patterns = ["_build"]\n'
        'companion_repository_url = "https://github.com/example/sample"\n')
    # publish_notebooks reads the table of contents; the sample has no MyST chapter to convert
    (src / "_toc.yml").write_text("format: jb-book\nroot: index\nchapters:\n- file: status\n")
    (src / "labels.yaml").write_text("ex-known: {difficulty: 2, importance: core, minutes: 12}\n")
    (src / "index.md").write_text(
        "# Sample\n\n```{toctree}\nchapter\nstatus\nglossary\n```\n\n```{cite-this}\n```\n\n"
        "The claim **holds** once the gate passes; the identity holds for every gate, and Holm's "
        "correction follows. `gate` in code stays code.\n\n"
        ":::{exercise}\n:label: ex-known\nA labelled exercise.\n:::\n\n"
        ":::{exercise}\n:label: ex-unknown\nAn exercise with no entry.\n:::\n")
    (src / "glossary.md").write_text("# Glossary\n\n```{glossary}\nholds\n  The claim's test decides for it.\n\n"
                                     "gate\n  What admits runs to a test.\n\nHolm\n  A correction for many tests.\n```\n")
    (src / "status.md").write_text("# Status\n\n## What changed\n\n```{release-changes}\n```\n")
    (src / "chapter.ipynb").write_text(_notebook([good, bad]))
    original = changes.current_verdicts
    changes.current_verdicts = lambda cache=None: [
        {"key": "table_1", "claim": "Table 1: speed-up", "kind": "empirical", "status": "inconclusive",
         "status_first": "not testable here"},
        {"key": "thm", "claim": "Thm.", "kind": "empirical", "status": "holds", "status_first": "holds"}]
    try:
        rc = build_main(["-b", "html", "-q", "-w", str(src / "warnings.txt"), str(src), str(out)])
    finally:
        changes.current_verdicts = original
    assert rc == 0, (src / "warnings.txt").read_text()
    return {"out": out, "warnings": (src / "warnings.txt").read_text(), "meta": meta}


def test_every_page_shows_the_version_and_the_cite_box(built):
    from companion.book.site.citation import book_version

    label = book_version(ROOT).label
    for page in ("index.html", "chapter.html", "status.html"):
        html = (built["out"] / page).read_text(encoding="utf-8")
        assert f"version {label} of the book" in html, page
        assert "Cite this book" in html and "@inproceedings{saponati2025structures," in html
        assert "companion-bibtex-book" in html and f"version = {{{book_version(ROOT).package}}}" in html
        footer = html[html.index("companion-version"):]
        assert '<a class="companion-changelog" href="https://github.com/example/sample/blob/main/CHANGELOG.md">' \
            in footer, page


def test_the_style_sheet_for_link_contrast_is_served(built):
    css = built["out"] / "_static" / "companion.css"
    assert css.is_file() and "div.exercise a.reference" in css.read_text()
    assert "_static/companion.css" in (built["out"] / "index.html").read_text(encoding="utf-8")


def test_the_cite_this_directive_renders_both_entries(built):
    html = (built["out"] / "index.html").read_text(encoding="utf-8")
    box = html[html.index("companion-cite-box"):]
    assert "@software{companion" in box and "saponati2025structures" in box


def test_exercise_labels_are_shown_and_a_missing_one_is_a_warning(built):
    html = (built["out"] / "index.html").read_text(encoding="utf-8")
    assert "Difficulty 2 of 3 (moderate) · importance: core · time: about 12 min" in html
    assert re.search(r"exercise ex-unknown on index has no entry in labels\.yaml", built["warnings"])
    assert "ex-known" not in built["warnings"]


def test_release_changes_lists_rule_and_verdict_changes(built):
    html = (built["out"] / "status.html").read_text(encoding="utf-8")
    assert "The last release, 0.1.0," in html and "version 1 of the verdict rules" in html
    assert "companion-rules-changes" in html and "table_1" in html and "primary" in html
    assert "Of the 2 claims judged under both versions, 1 read differently now." in html
    # the changelog is a link, and the section names this build's version (rules revision included)
    assert 'href="https://github.com/example/sample/blob/main/CHANGELOG.md"' in html
    from companion.book.site.citation import book_version
    assert f"this page belongs to version {book_version(ROOT).label}" in html
    verdicts = html[html.index("companion-verdict-changes"):]
    assert "Table 1: speed-up" in verdicts and "not testable here" in verdicts and "inconclusive" in verdicts


def test_figures_get_alt_text_and_their_csv_next_to_the_image(built):
    from companion.book.figures import source_data as sd

    html = (built["out"] / "chapter.html").read_text(encoding="utf-8")
    imgs = re.findall(r'<img[^>]*src="(_images/[0-9a-f]+\.png)"[^>]*>', html)
    assert len(imgs) == 2
    good = next(i for i in re.findall(r"<img[^>]*>", html) if "sample series" in i)
    assert 'alt="Figure with 1 panel. Panel 1 &#39;A sample&#39;' in good or "Panel 1 'A sample'" in good
    links = re.findall(r'class="[^"]*companion-source-data-link[^"]*"[^>]*href="([^"]+)"|'
                       r'href="([^"]+)"[^>]*class="[^"]*companion-source-data-link', html)
    hrefs = [a or b for a, b in links]
    assert len(hrefs) == 1 and hrefs[0].startswith("_images/") and hrefs[0].endswith(".csv")
    csv = built["out"] / hrefs[0]
    assert csv.is_file() and csv.with_suffix(".png").is_file()  # next to the image
    assert csv.read_text(encoding="utf-8") == sd.decode_csv(built["meta"]["companion"]["csv"])
    back = sd.read_csv_text(csv.read_text(encoding="utf-8"))
    assert back["y"].tolist() == [0.5, 1.5, 1.0]
    # the image shown without the kernel's metadata is named in a warning
    assert re.search(r"the figure [0-9a-f]+\.png on chapter has no alt text", built["warnings"])
    assert re.search(r"the figure [0-9a-f]+\.png on chapter has no source data", built["warnings"])


def test_the_first_use_of_each_glossary_word_links_its_entry(built):
    html = (built["out"] / "index.html").read_text(encoding="utf-8")
    links = re.findall(r'<a class="companion-term reference internal" href="glossary.html#(term-[\w-]+)"[^>]*>([^<]+)</a>',
                       html)
    assert sorted(links) == [("term-Holm", "Holm"), ("term-gate", "gate"), ("term-holds", "holds")], links
    # the status word is linked where it is stated in bold, not in "the identity holds"
    assert "<strong><a class=\"companion-term" in html
    # the glossary page itself links nothing to itself
    assert "companion-term" not in (built["out"] / "glossary.html").read_text(encoding="utf-8")
