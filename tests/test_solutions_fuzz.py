"""No solution reaches a student (issue 74, family 3): fuzzed MyST documents mixing every form
a solution takes — colon- and backtick-fenced ``{solution}`` of any fence length, sphinx-
exercise's gated ``{solution-start}``/``{solution-end}`` (code cells included), solutions inside
exercises, dropdowns, lists and quotes, nested directives and code inside solutions — lose every
line of solution text and keep every other line byte for byte: in the student pages
(:func:`strip_solutions`), the student notebooks (jupytext after stripping) and the decks
(:func:`cells_without_solutions` on the notebook's cells)."""

from __future__ import annotations

import random
import re

import pytest

from companion.book.editions.solutions import cells_without_solutions, strip_solutions

DOCS = 300


class Doc:
    def __init__(self, rng: random.Random, cells_only: bool = False):
        self.rng, self.cells_only = rng, cells_only
        self.n = 0
        self.keep: list[str] = []       # blocks that must survive byte for byte

    def tag(self, kind: str) -> str:
        self.n += 1
        return f"{kind}{self.n}"

    # ------------------------------------------------------------- what is not a solution
    def keep_block(self) -> str:
        r, t = self.rng, self.tag("KEEP")
        options = [
            f"A paragraph {t} with $x$ and *stars*.",
            f"```python\nprint('{t}')\n\n\nvalue = 1\n```",
            f"```{{code-cell}} ipython3\n{t} = 1\n\n\n{t} += 1\n```",
            f":::{{note}}\nA note {t}.\n:::",
            f"$$\n{t} = 1\n$$",
            f"- a list item {t}\n- another",
            f"> a quote {t}",
            f"## A heading {t}",
            f"::::{{exercise}}\n:label: ex-{t}\n\nDo {t}.\n\n:::{{hint}}\nHint {t}.\n:::\n::::",
            f"````markdown\nshown as code {t}: ```{{solution}} is only text here\n````",
        ]
        block = r.choice(options[:-1] if self.cells_only else options)
        self.keep.append(block)
        return block

    # ------------------------------------------------------------- solutions
    def body(self, depth: int, mark: str, length: int, code_cells: bool) -> str:
        """A solution's body: text, code, nested directives (fences shorter than ``length``)."""
        r = self.rng
        parts = [f":class: dropdown\n"] if r.random() < 0.5 else []
        for _ in range(r.randint(1, 4)):
            s = self.tag("SECRET")
            choice = r.randint(0, 5)
            if choice == 0:
                parts.append(f"The secret argument {s}.")
            elif choice == 1:
                fence = "`" * 3 if mark == ":" or length > 3 else None
                parts.append(f"{fence}python\n{s} = 42\n\n\nprint({s})\n{fence}" if fence else f"Also {s}.")
            elif choice == 2 and length > 3:
                inner = mark * r.randint(3, length - 1)
                parts.append(f"{inner}{{note}}\nnested {s}\n{inner}")
            elif choice == 3 and code_cells and mark == ":":
                parts.append(f"```{{code-cell}} ipython3\n{s} = 1\n```")
            elif choice == 4:
                parts.append(f"$$\n{s}\n$$")
            else:
                parts.append(f"- a listed {s}\n- more")
        return "\n\n".join(parts)

    def solution(self, depth: int = 0) -> str:
        r = self.rng
        form = r.choice(["colon", "backtick", "gated", "gated-backtick", "in-exercise", "in-list"]
                        if depth == 0 else ["colon", "backtick"])
        if self.cells_only and form in ("in-list",):
            form = "colon"
        if form in ("colon", "backtick"):
            mark = ":" if form == "colon" else "`"
            length = r.randint(3, 6)
            f = mark * length
            label = f" ex-{self.tag('SECRETLABEL')}" if r.random() < 0.7 else ""
            return f"{f}{{solution}}{label}\n{self.body(depth, mark, length, not self.cells_only)}\n{f}"
        if form.startswith("gated"):
            mark = "`" if form == "gated-backtick" else ":"
            f = mark * r.randint(3, 5)
            inner = []
            for _ in range(r.randint(1, 3)):
                s = self.tag("SECRET")
                inner.append(r.choice([f"Gated text {s}.", f"```{{code-cell}} ipython3\n{s} = 2\n\n\n{s}\n```",
                                       f":::{{note}}\ngated note {s}\n:::"]))
            return (f"{f}{{solution-start}} ex-{self.tag('SECRETLABEL')}\n{f}\n\n" + "\n\n".join(inner)
                    + f"\n\n{f}{{solution-end}}\n{f}")
        if form == "in-exercise":
            inner = self.solution(depth + 1)
            longest = max((len(m) for m in re.findall(r"^(:{3,}|`{3,})", inner, re.M)), default=3)
            f = ":" * (longest + 1)
            t = self.tag("KEEP")
            head, tail = f"{f}{{exercise}}\n:label: ex-{t}\n\nExercise text {t}.", f
            self.keep += [head, tail]
            return f"{head}\n\n{inner}\n{tail}"
        t = self.tag("KEEP")     # in a list item: indented under it
        item = f"- an item {t}"
        self.keep.append(item)
        return item + "\n\n" + "\n".join(("  " + ln) if ln else "" for ln in self.solution(1).splitlines())

    def document(self) -> str:
        r = self.rng
        blocks = [self.keep_block() if r.random() < 0.55 else self.solution() for _ in range(r.randint(2, 9))]
        return "\n\n".join(blocks) + "\n"


def _check_text(doc: Doc, out: str, what: str):
    assert "SECRET" not in out, f"{what}: solution text survived:\n{out}"
    for block in doc.keep:
        assert block in out, f"{what}: lost {block!r}"


@pytest.mark.parametrize("seed", range(DOCS))
def test_fuzz_strip_solutions_removes_every_solution_and_keeps_everything_else(seed):
    doc = Doc(random.Random(seed))
    text = doc.document()
    _check_text(doc, strip_solutions(text), f"seed {seed}")


@pytest.mark.parametrize("seed", range(0, DOCS, 3))
def test_fuzz_student_notebooks_and_deck_cells_hold_no_solution(seed):
    import jupytext

    doc = Doc(random.Random(10_000 + seed), cells_only=True)
    text = doc.document()
    # the student notebook: the page stripped, then split into cells
    nb = jupytext.reads(strip_solutions(text), fmt="md:myst")
    joined = "\n".join(c.source for c in nb.cells)
    assert "SECRET" not in joined
    # the deck: the instructor's notebook (solutions in it), its cells stripped one by one
    full = jupytext.reads(text, fmt="md:myst")
    kept = cells_without_solutions(full.cells)
    joined = "\n".join(c["source"] for _, c in kept)
    assert "SECRET" not in joined, joined
    for block in doc.keep:
        if "code-cell" in block:     # a code cell survives as a code cell, its source byte for byte
            code = block.split("\n", 1)[1].rsplit("\n```", 1)[0]
            assert any(c["cell_type"] == "code" and c["source"] == code for _, c in kept), block
        else:
            assert block in joined, block


def test_the_issue_forms_reach_no_student():
    """The two forms the colon-only stripper let through: a backtick-fenced solution and a
    gated solution with a code cell."""
    page = ("Intro.\n\n```{solution} ex-a-1\nbacktick secret\n```\n\n"
            ":::{solution-start} ex-a-2\n:::\n\n```{code-cell} ipython3\ngated_secret = 1\n```\n\n"
            "Gated prose secret.\n\n:::{solution-end}\n:::\n\nOutro.\n")
    out = strip_solutions(page)
    assert "secret" not in out and out == "Intro.\n\nOutro.\n"


@pytest.mark.parametrize("page, words", [
    (":::{solution-start} ex\n:::\n\nsecret\n", "never closed with {solution-end}"),
    ("text\n\n:::{solution-end}\n:::\n", "closes no {solution-start}"),
    ("```{solution}\nsecret\n", "never closed"),
    (":::{solution-start} a\n:::\n\n:::{solution-start} b\n:::\n\n:::{solution-end}\n:::\n", "inside another"),
    ("```{eval-rst}\n.. solution:: ex-1\n\n   secret\n```\n", "RST solution"),
])
def test_a_solution_that_cannot_be_removed_safely_is_a_one_line_error(page, words):
    with pytest.raises(ValueError, match=re.escape(words)) as err:
        strip_solutions(page)
    assert "\n" not in str(err.value)


def test_text_that_only_looks_like_a_solution_is_kept():
    page = "```python\n# ```{solution}\nx = 1\n```\n\n$$\n:::{solution}\n$$\n\nInline `{solution}` role.\n"
    assert strip_solutions(page) == page
