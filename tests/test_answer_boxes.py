"""Every chapter that asks a question opens with its answer: an admonition "The answer" right
after the learning goals, whose every number and status is glued on the same page and whose
links point at labels that exist (issue 42: a reader of the boxes alone gets the findings)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
# pages that ask no question of the paper: the front page (its chain of claims, with computed
# statuses, is its summary), the teaching kit, the build's status, the bibliography, appendices
NO_QUESTION = {"intro", "figures_and_tables", "teaching", "bibliography", "glossary", "notation", "status"}  # reference pages


def toc_chapters() -> list[str]:
    """The pages of _toc.yml, less those of the "Appendices" part (reference pages)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]]
    for part in toc.get("parts", []):
        if part.get("caption") != "Appendices":
            files += [c["file"] for c in part.get("chapters", [])]
    return [Path(f).name for f in files]


def answer_box(text: str) -> str | None:
    m = re.search(r"^:::\{admonition\} The answer\n(.*?)^:::$", text, re.S | re.M)
    return m.group(1) if m else None


def glued_names(text: str) -> tuple[set[str], set[str]]:
    """Names glued on the page, and prefixes of names glued in a loop (``glue(f"st_{key}")``)."""
    plain = set(re.findall(r"""glue(?:_value|_text|_number)?\(\s*["']([A-Za-z0-9_]+)["']""", text))
    prefixes = set(re.findall(r"""glue(?:_value|_text|_number)?\(\s*f["']([A-Za-z0-9_]+)\{""", text))
    prefixes |= set(re.findall(r"""glue(?:_value|_text|_number)?\(\s*["']([A-Za-z0-9_]+)["']\s*\+""", text))
    # names glued through a variable in a loop: for q, name in (("symmetry", "osw_sym"), ...):
    # glue(name, ...) and glue(f"{name}_status", ...); every quoted name of a code cell counts
    if re.search(r"glue(?:_value|_text|_number)?\(\s*[A-Za-z_]\w*\s*,", text) or re.search(r"glue(?:_value|_text|_number)?\(\s*f[\"']\{", text):
        code = "\n".join(re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", text, re.S))
        literals = set(re.findall(r"""["']([a-z][a-z0-9_]+)["']""", code))
        suffixes = set(re.findall(r"""glue(?:_value|_text|_number)?\(\s*f["']\{\w+\}([A-Za-z0-9_]*)["']""", text))
        plain |= {lit + s for lit in literals for s in suffixes | {""}}
    return plain, prefixes


def questions() -> list[str]:
    return [c for c in toc_chapters() if c not in NO_QUESTION]


@pytest.mark.parametrize("chapter", questions())
def test_the_chapter_opens_with_its_answer(chapter):
    text = (ROOT / "book" / f"{chapter}.md").read_text(encoding="utf-8")
    box = answer_box(text)
    assert box is not None, f"book/{chapter}.md has no ':::{{admonition}} The answer' box"
    body = text[text.index("\n# "):]
    first_section = body.find("\n## ")
    assert body.index("{admonition} The answer") < (first_section if first_section > 0 else len(body)), \
        f"book/{chapter}.md: the answer box must come before the first section"
    assert "**Question.**" in box, f"book/{chapter}.md: the box states its question first"
    assert "{glue:text}" in box, f"book/{chapter}.md: the answer's numbers are glued, not typed"


@pytest.mark.parametrize("chapter", questions())
def test_every_glued_name_and_link_in_the_box_exists_on_the_page(chapter):
    text = (ROOT / "book" / f"{chapter}.md").read_text(encoding="utf-8")
    box = answer_box(text) or ""
    plain, prefixes = glued_names(text)
    missing = [n for n in re.findall(r"\{glue:text\}`([A-Za-z0-9_]+)", box)
               if n not in plain and not any(n.startswith(p) for p in prefixes)]
    assert not missing, f"book/{chapter}.md's answer box glues names no cell of the page glues: {missing}"
    labels = set(re.findall(r"^\(([A-Za-z0-9_-]+)\)=", text, re.M))
    dangling = [r for r in re.findall(r"\{ref\}`([A-Za-z0-9_-]+)`", box) if r not in labels]
    assert not dangling, f"book/{chapter}.md's answer box links labels that are not on the page: {dangling}"


def test_the_checks_catch_a_box_whose_name_is_glued_nowhere():
    page = ("# T\n\n:::{admonition} The answer\n:class: tip\n\n**Question.** q?\n\n- {glue:text}`nowhere`\n:::\n"
            "```{code-cell} ipython3\nglue(\"elsewhere\", 1)\n```\n")
    plain, prefixes = glued_names(page)
    names = re.findall(r"\{glue:text\}`([A-Za-z0-9_]+)", answer_box(page))
    assert names == ["nowhere"] and "nowhere" not in plain and "elsewhere" in plain
