"""A page whose answer box glues a name no cell glued, or links a label that moved away, fails
the build (-W, as `make book` runs it) and the message names what is missing, instead of a page
with an empty box or "??"."""

from __future__ import annotations

import subprocess
import sys

import pytest

from companion.book.editions.notebooks import JUPYTEXT_HEADER as HEADER


def build(tmp_path, page: str) -> subprocess.CompletedProcess:
    pytest.importorskip("myst_nb")
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text("extensions = ['myst_nb']\nnb_execution_mode = 'force'\n"
                                 "myst_enable_extensions = ['colon_fence']\n")
    (src / "index.md").write_text(HEADER + page)
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(src),
                           str(tmp_path / "html")], capture_output=True, text=True, timeout=300)


def test_an_answer_box_whose_glued_name_is_missing_fails_the_build_by_name(tmp_path):
    page = ("# Page\n\n:::{admonition} The answer\n\n**Question.** q? Answer: {glue:text}`nowhere_glued`.\n:::\n\n"
            "```{code-cell} ipython3\nfrom myst_nb import glue\nglue('somewhere_else', 1, display=False)\n```\n")
    out = build(tmp_path, page)
    assert out.returncode != 0
    assert "nowhere_glued" in out.stderr


def test_a_link_to_a_label_that_moved_away_fails_the_build_by_name(tmp_path):
    page = "# Page\n\nSee {ref}`a-label-on-another-page`.\n"
    out = build(tmp_path, page)
    assert out.returncode != 0
    assert "a-label-on-another-page" in out.stderr


def test_the_same_page_with_its_name_glued_and_its_label_present_builds(tmp_path):
    page = ("# Page\n\n(here)=\n## Here\n\n:::{admonition} The answer\n\n**Question.** q? {glue:text}`glued`, "
            "{ref}`here`.\n:::\n\n```{code-cell} ipython3\nfrom myst_nb import glue\nglue('glued', 1, display=False)\n```\n")
    out = build(tmp_path, page)
    assert out.returncode == 0, out.stderr
