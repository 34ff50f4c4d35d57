"""What the student edition changes in a chapter's source: every ``{solution}`` directive
removed (:func:`strip_solutions`), and each exercise's starter code moved into a code cell of
its own (:func:`split_check_cells`).  Used by the student site (:mod:`companion.book.student`)
and the student notebooks (:mod:`companion.book.notebooks`), neither of which imports the other.
"""

from __future__ import annotations

import re

__all__ = ["strip_solutions", "split_check_cells"]

_SOLUTION_OPEN = re.compile(r"^(?P<fence>:{3,})\{solution\}")


def strip_solutions(text: str) -> str:
    """``text`` (MyST Markdown) without its ``{solution}`` directives, each with its body.

    A solution ends at the first line that is exactly its own colon fence (directives nested
    inside it use longer fences, as MyST requires). An unterminated solution is an error,
    not a silent truncation of the page.
    """
    out, fence, start, just_removed = [], None, 0, False
    lines = text.splitlines(keepends=True)
    for n, line in enumerate(lines, 1):
        if fence is None:
            opened = _SOLUTION_OPEN.match(line)
            if opened:
                fence, start = opened.group("fence"), n
                continue
            # the blank line after a removed block goes with it (and nothing else changes:
            # code cells must stay byte for byte, the execution cache matches them)
            if just_removed and not line.strip() and (not out or not out[-1].strip()):
                continue
            just_removed = False
            out.append(line)
        elif line.rstrip("\r\n") == fence:
            fence, just_removed = None, True
    if fence is not None:
        raise ValueError(f"a {{solution}} directive opened on line {start} is never closed with '{fence}'")
    return "".join(out)


def _split_markdown(text: str) -> list[tuple[str, str]]:
    """``[(kind, source)]``: ``text`` cut after each exercise whose starter code calls
    ``check``, that code moved into a ``code`` piece right after its exercise."""
    pieces, current, pending = [], [], []
    fence, block = None, None
    for line in text.splitlines():
        if block is not None:                       # inside a fenced Python block of an exercise
            if line.strip() == "```":
                code = "\n".join(block)
                if 'check("ex-' in code:
                    pending.append(code)
                    current.append("*(Write your answer in the code cell below this exercise.)*")
                else:
                    current.extend(["```python", *block, "```"])
                block = None
            else:
                block.append(line)
            continue
        if fence is None:
            opened = re.match(r"^(:{3,})\{exercise\}", line)
            if opened:
                fence = opened.group(1)
        elif line.strip() == "```python":
            block = []
            continue
        elif line.rstrip() == fence:
            current.append(line)
            fence = None
            if pending:
                pieces.append(("markdown", "\n".join(current)))
                pieces.extend(("code", code) for code in pending)
                current, pending = [], []
            continue
        current.append(line)
    if block is not None or fence is not None:
        raise ValueError("an exercise directive or its code block is never closed")
    if current and "\n".join(current).strip():
        pieces.append(("markdown", "\n".join(current)))
    return pieces


def split_check_cells(nb) -> int:
    """Move each exercise's starter code (a Python block calling ``check``) out of its
    Markdown cell into a code cell right after the exercise; return how many were moved."""
    import nbformat

    moved, cells = 0, []
    for cell in nb.cells:
        if cell.cell_type != "markdown" or 'check("ex-' not in cell.source:
            cells.append(cell)
            continue
        for kind, source in _split_markdown(cell.source):
            if kind == "markdown":
                cells.append(nbformat.v4.new_markdown_cell(source))
            else:
                new = nbformat.v4.new_code_cell(source)
                new.metadata["tags"] = ["exercise"]
                cells.append(new)
                moved += 1
    nb.cells = cells
    return moved
