"""What the student edition changes in a chapter's source: every solution removed
(:func:`strip_solutions`: ``{solution}`` directives of any fence, and gated
``{solution-start}``/``{solution-end}`` blocks; :func:`cells_without_solutions` for a
notebook), and each exercise's starter code moved into a code cell of its own
(:func:`split_check_cells`).  Used by the student site (:mod:`companion.book.editions.student`)
and the student notebooks (:mod:`companion.book.editions.notebooks`), neither of which imports the other.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["strip_solutions", "split_check_cells", "cells_without_solutions", "directives", "without_directives",
           "directive_options", "prose_words"]

#: a solution directive's name in a fence's info string: ``{solution}``, sphinx-exercise's gated
#: ``{solution-start}`` / ``{solution-end}``, with or without a domain (``{exercise:solution}``)
#: (in any case: docutils looks a directive's name up in lower case, so ``{Solution}`` is one too)
_SOLUTION_NAME = re.compile(r"^\{\s*(?:[\w.-]+:)?(solution|solution-start|solution-end)\s*\}", re.I)
_DIRECTIVE = re.compile(r"^\{\s*([\w.:-]+)\s*\}")
#: directives whose body is not MyST Markdown (code, math, raw input): never parsed for solutions
_RAW_DIRECTIVES = {"code-cell", "code", "code-block", "sourcecode", "literalinclude", "math", "raw",
                   "eval-rst", "eval-md", "mermaid", "graphviz", "csv-table", "bibliography", "glue:math"}
#: an RST solution directive (docutils allows spaces between the name and its ``::``)
_RST_SOLUTION = re.compile(r"^\s*\.\.\s+(?:[\w.-]+:)?solution(?:-start|-end)?[ \t]*::", re.M | re.I)
#: a MyST solution directive's name anywhere in a text (a front matter's substitution)
SOLUTION_ANYWHERE = re.compile(r"\{\s*(?:[\w.-]+:)?solution(?:-start|-end)?\s*\}", re.I)
#: a line as Markdown counts lines (``\n``, ``\r\n`` or ``\r`` ends it); ``str.splitlines`` also
#: breaks at form feeds, U+2028 and other characters, and lines counted one way were cut the other
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _lines(text: str) -> list[str]:
    """``text``'s lines with their ends, numbered as the parser's token maps number them."""
    return _LINE.findall(text)


@lru_cache(maxsize=1)
def _parser():
    """The book's own Markdown parser: MyST with the extensions of ``_config.yml``, so that a
    solution is exactly what the book renders as one (fences of ``:`` or backticks, any length)."""
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    config = MdParserConfig(enable_extensions={"colon_fence", "dollarmath", "amsmath", "deflist",
                                               "html_image", "substitution"})
    return create_md_parser(config, RendererHTML)


def _fence_closed(lines: list[str], tok) -> tuple[bool, int]:
    """Whether the fence ``tok`` ends on a closing line, and that line's fence length."""
    first, last = tok.map
    ch, n = tok.markup[0], len(tok.markup)
    if last - 1 <= first or last > len(lines):
        return False, 0
    m = re.fullmatch(rf"[ \t>]*({re.escape(ch)}{{{n},}})[ \t]*", lines[last - 1].rstrip("\r\n"))
    return (True, len(m.group(1))) if m else (False, 0)


def _events(text: str, offset: int = 0, depth: int = 0) -> list[tuple]:
    """``(kind, first, last, depth)`` of every solution in ``text`` in document order, lines
    counted from ``offset``: kind ``solution`` (the whole directive), ``start`` / ``end`` (the
    gated directives).  Directive bodies are searched too (a solution in an exercise, a
    dropdown, a list or a quote), code and math are not."""
    lines = _lines(text)
    found = []
    for tok in _parser().parse(text):
        if tok.type == "front_matter" and (SOLUTION_ANYWHERE.search(tok.content) or _RST_SOLUTION.search(tok.content)):
            # a substitution (myst: substitutions:) pastes its Markdown, directives included,
            # wherever {{ name }} stands: its solution would reach the student page whole
            raise ValueError(f"the front matter on line {offset + 1} holds a solution directive (in a substitution), "
                             "which cannot be removed for the student edition; write the solution in the page")
        if tok.type not in ("fence", "colon_fence") or tok.map is None:
            continue
        first, last = tok.map
        sol = _SOLUTION_NAME.match(tok.info.strip())
        if sol:
            name = sol.group(1).lower()
            closed, length = _fence_closed(lines, tok)
            where = f"a {{{name}}} directive opened on line {offset + first + 1}"
            if not closed:
                raise ValueError(f"{where} is never closed with '{tok.markup}': close it, or the rest of "
                                 "the page would be taken for its body")
            if length != len(tok.markup):
                raise ValueError(f"{where} with '{tok.markup}' is closed on line {offset + last} by "
                                 f"'{tok.markup[0] * length}' (MyST ends a fence at the first line of at least "
                                 "as many marks); nest directives inside a solution with fewer marks than "
                                 f"its own, e.g. '{tok.markup[0] * 4}{{solution}}' around '{tok.markup[0] * 3}{{note}}'")
            kind = {"solution": "solution", "solution-start": "start", "solution-end": "end"}[name]
            found.append((kind, offset + first, offset + last, depth))
            continue
        d = _DIRECTIVE.match(tok.info.strip())
        if d is None:
            continue                                   # a plain code block
        if d.group(1) in _RAW_DIRECTIVES:
            if d.group(1) == "eval-rst" and _RST_SOLUTION.search(tok.content):
                raise ValueError(f"an {{eval-rst}} block on line {offset + first + 1} holds an RST solution "
                                 "directive, which cannot be removed for the student edition; write it as a "
                                 "MyST {solution} directive")
            continue
        # a directive's body is MyST again: search it, its lines counted from the line after its fence
        found.extend(_events(tok.content, offset + first + 1, depth + 1))
    return found


def _strip(text: str, gate_open: bool = False, open_end: bool = False) -> tuple[str, bool]:
    """``text`` without its solutions; ``gate_open``: the text begins inside a gated solution
    (a notebook's cell after a ``solution-start`` cell); ``open_end``: a gate may stay open
    at the end (returned as the second value) instead of being an error."""
    lines = _lines(text)
    spans, gate = [], (0, 0) if gate_open else None   # gate: (first line, depth) of an open solution-start
    for kind, first, last, depth in _events(text):
        if kind == "solution":
            if gate is None:
                spans.append((first, last))
        elif kind == "start":
            if gate is not None:
                raise ValueError(f"a {{solution-start}} on line {first + 1} opens inside another gated solution; "
                                 "close the first with {solution-end}")
            gate = (first, depth)
        else:
            if gate is None:
                raise ValueError(f"a {{solution-end}} on line {first + 1} closes no {{solution-start}}; "
                                 "remove it or add the start")
            if depth != gate[1]:
                raise ValueError(f"the {{solution-end}} on line {first + 1} is not in the same block as its "
                                 f"{{solution-start}} on line {gate[0] + 1}; put both at the same level")
            spans.append((gate[0], last))
            gate = None
    still_open = gate is not None
    if still_open:
        if not open_end:
            raise ValueError(f"a {{solution-start}} directive opened on line {gate[0] + 1} is never closed "
                             "with {solution-end}: add it where the solution ends")
        spans.append((gate[0], len(lines)))
    drop = set()
    for first, last in spans:
        drop.update(range(first, last))
    out, just_removed = [], False
    for n, line in enumerate(lines):
        if n in drop:
            just_removed = True
            continue
        # the blank line after a removed block goes with it (and nothing else changes:
        # code cells must stay byte for byte, the execution cache matches them)
        if just_removed and not line.strip() and (not out or not out[-1].strip()):
            continue
        just_removed = False
        out.append(line)
    return "".join(out), still_open


def strip_solutions(text: str) -> str:
    """``text`` (MyST Markdown) without its solutions, each with its whole body: every
    ``{solution}`` directive, colon- or backtick-fenced with fences of any length, wherever it
    stands (in an exercise, a dropdown, a list or a quote), and everything from a gated
    ``{solution-start}`` to its ``{solution-end}`` (code cells included).

    The page is parsed by the book's own MyST parser, so a solution is exactly what the
    book renders as one; everything else is kept byte for byte.  An unterminated solution, a
    fence closed by a longer one (nesting the wrong way round) or an unpaired gated directive
    is an error naming the line and the fix, not a silent truncation or leak.  A byte-order
    mark at the start is read as Sphinx and MyST read it, as no text (a solution or a front
    matter on the first line is one), and kept.
    """
    if text.startswith("\ufeff"):
        return "\ufeff" + _strip(text[1:])[0]
    return _strip(text)[0]


def cells_without_solutions(cells) -> list[tuple[int, object]]:
    """``[(index, cell)]`` of a notebook's cells without solutions (for the decks, which read
    the executed notebook): each Markdown cell's solutions removed (a copy of the cell), and
    every cell from a gated ``{solution-start}`` to its ``{solution-end}`` left out, code cells
    and their outputs included, though the gate spans several cells."""
    import copy

    kept, gate = [], False
    for n, cell in enumerate(cells):
        if cell.get("cell_type") == "markdown":
            text, gate = _strip(cell.get("source", ""), gate_open=gate, open_end=True)
            if text.strip() or not cell.get("source", "").strip():
                new = copy.copy(cell)
                new["source"] = text
                kept.append((n, new))
        elif not gate:
            kept.append((n, cell))
    if gate:
        raise ValueError("a {solution-start} directive is never closed with {solution-end} in the notebook; "
                         "add it where the solution ends")
    return kept


def directives(text: str, names, offset: int = 0, depth: int = 0) -> list[dict]:
    """Every directive of ``text`` named in ``names`` (lower case, without a domain:
    ``{exercise}``, ``{Solution}``, ``{exercise:solution}``), as the book's parser reads it, in
    document order: ``{"name", "kind", "first", "last", "depth", "content"}``, ``kind`` being
    ``whole``, or ``start`` / ``end`` for a gated ``{name-start}`` / ``{name-end}``; ``first`` and
    ``last`` count lines from 0 (``last`` excluded); ``closed``: whether a closing fence ends it.  Directive bodies are searched too (an
    exercise in a dropdown), code and math are not; nothing is refused (see :func:`strip_solutions`
    for a page's solutions)."""
    found = []
    for tok in _parser().parse(text):
        if tok.type not in ("fence", "colon_fence") or tok.map is None:
            continue
        d = _DIRECTIVE.match(tok.info.strip())
        if d is None:
            continue
        first, last = tok.map
        full = d.group(1).lower()
        name = full.rsplit(":", 1)[-1] if full not in _RAW_DIRECTIVES else full
        base, kind = name, "whole"
        for end in ("start", "end"):
            if name.endswith("-" + end) and name[:-len(end) - 1] in names:
                base, kind = name[:-len(end) - 1], end
        if base in names:
            found.append({"name": base, "kind": kind, "first": offset + first, "last": offset + last,
                          "depth": depth, "content": tok.content, "closed": _fence_closed(_lines(text), tok)[0]})
        elif full not in _RAW_DIRECTIVES:
            found.extend(directives(tok.content, names, offset + first + 1, depth + 1))
    return found


def without_directives(text: str, names) -> str:
    """``text`` without the lines of its directives named in ``names`` (:func:`directives`),
    a gated one from its start to its end (to the end of the text where it has none)."""
    lines, drop, gate = _lines(text), set(), None
    for d in directives(text, names):
        if d["kind"] == "whole" and gate is None:
            drop.update(range(d["first"], d["last"]))
        elif d["kind"] == "start" and gate is None:
            gate = d["first"]
        elif d["kind"] == "end" and gate is not None:
            drop.update(range(gate, d["last"]))
            gate = None
    if gate is not None:
        drop.update(range(gate, len(lines)))
    return "".join(line for n, line in enumerate(lines) if n not in drop)


def directive_options(content: str) -> dict:
    """The options a directive's body opens with: ``:key: value`` lines, or a YAML block
    between ``---`` lines (MyST's two forms)."""
    lines = content.splitlines()
    if lines and lines[0].strip() == "---":
        import yaml

        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        try:
            data = yaml.safe_load("\n".join(lines[1:end])) if end else None
        except yaml.YAMLError:
            data = None
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
    out = {}
    for line in lines:
        m = re.match(r"^\s*:([\w-]+):(?:\s+(.*))?$", line)
        if not m:
            break
        out[m.group(1)] = (m.group(2) or "").strip()
    return out


#: the info strings of a fenced block of Python starter code
_PYTHON = {"python", "python3", "py", "ipython3", "ipython"}
#: the call of an exercise's check in its starter code, quoted either way (``check("ex-a", f)``,
#: ``check('ex-a', f)``)
_CHECK_CALL = re.compile(r"\bcheck\(\s*[\"']ex-")


def _split_markdown(text: str) -> list[tuple[str, str]]:
    """``[(kind, source)]``: ``text`` cut after each exercise whose starter code calls
    ``check``, that code moved into a ``code`` piece right after its exercise.  Exercises are
    found by the book's parser (:func:`directives`: any fence, closed by a longer one, with a
    title); an exercise or a starter block that is never closed is an error."""
    lines = [line.rstrip("\r\n") for line in _lines(text)]
    moves: dict[int, list[str]] = {}          # the exercise's closing line -> its starter code
    drop: dict[int, int] = {}                 # a starter block's first line -> its end
    for d in directives(text, {"exercise"}):
        if d["kind"] != "whole":
            continue
        inner = _lines(d["content"])
        for tok in _parser().parse(d["content"]):
            if (tok.type != "fence" or tok.map is None or tok.info.strip().lower() not in _PYTHON
                    or not _CHECK_CALL.search(tok.content)):
                continue
            if not (d["closed"] and _fence_closed(inner, tok)[0]):
                raise ValueError("an exercise directive or its code block is never closed")
            first = d["first"] + 1 + tok.map[0]
            drop[first] = d["first"] + 1 + tok.map[1]
            moves.setdefault(d["last"] - 1, []).append(tok.content[:-1] if tok.content.endswith("\n") else tok.content)
    pieces, current, n = [], [], 0
    while n < len(lines):
        if n in drop:
            current.append("*(Write your answer in the code cell below this exercise.)*")
            n = drop[n]
            continue
        current.append(lines[n])
        if n in moves:
            pieces.append(("markdown", "\n".join(current)))
            pieces.extend(("code", code) for code in moves[n])
            current = []
        n += 1
    if current and "\n".join(current).strip():
        pieces.append(("markdown", "\n".join(current)))
    return pieces


def split_check_cells(nb) -> int:
    """Move each exercise's starter code (a Python block calling ``check``) out of its
    Markdown cell into a code cell right after the exercise; return how many were moved."""
    import nbformat

    moved, cells = 0, []
    for cell in nb.cells:
        if cell.cell_type != "markdown" or not _CHECK_CALL.search(cell.source):
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


# ------------------------------------------------------------ the words a reader reads
_FRONT = re.compile(r"\A---\n.*?\n---\n", re.S)
#: the directives a reader does not read as the lecture's reading
_NOT_READ = frozenset({"code-cell", "exercise", "solution"})


def _drop_blocks(text: str) -> str:
    """``text`` without its code cells, exercises and solutions, as the book's parser finds
    them (:func:`without_directives`: any fence, a name in
    capitals or with a domain, a gated ``{solution-start}`` ... ``{solution-end}``)."""
    return without_directives(text, _NOT_READ)


def prose_words(text: str) -> int:
    """The words a reader sees in a MyST chapter source (reading only, not the exercises).

    Left out: the front matter, code cells, ``{exercise}`` and ``{solution}`` blocks, MyST
    labels ``(x)=``, comments, directive names and option lines. A role (``{glue:text}``,
    ``{ref}``, ``{cite}`` ...) and a formula (``$...$`` or a display block) count as one word.
    A page saved with a byte-order mark or with ``\\r\\n`` or ``\\r`` line ends counts as the same
    page saved without them (Sphinx reads it so).
    """
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    text = _drop_blocks(_FRONT.sub("", text))
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"^\([A-Za-z0-9_-]+\)=[ \t]*$", "", text, flags=re.M)       # labels
    text = re.sub(r"^%.*$", "", text, flags=re.M)                             # comments
    text = re.sub(r"^[ \t]*:[A-Za-z_-]+:.*$", "", text, flags=re.M)           # directive options
    text = re.sub(r"\$\$.*?\$\$", " FORMULA ", text, flags=re.S)
    text = re.sub(r"^(`{3,}|:{3,})\{math\}.*?^\1[ \t]*$", " FORMULA ", text, flags=re.S | re.M)
    text = re.sub(r"\$[^$\n]+\$", " FORMULA ", text)
    text = re.sub(r"\{[\w:.-]+\}`[^`]*`", " ROLE ", text)                     # {ref}`x`, {glue:text}`y`
    text = re.sub(r"^(`{3,}|:{3,})\{[\w:.-]+\}", "", text, flags=re.M)        # a directive's name
    text = re.sub(r"\]\([^)]*\)", "]", text)                                  # a link's address
    return len(re.findall(r"[A-Za-z0-9]+(?:['\u2019-][A-Za-z0-9]+)*", text))
