"""A chapter as slides: what of an executed chapter goes on which slide (the parsing half of
:mod:`companion.book.editions.slides`).

:func:`chapter_markdown` reads the executed notebook (solutions removed, glued values filled
in, figures and tables standing as ``@@figure:<n>@@`` / ``@@table:<n>@@`` lines) and
:func:`plan_chapter` turns that Markdown into :class:`Slide` objects within the word budget;
:func:`check_answer_slides` refuses an answer slide that loses a verdict. Rendering the slides
as HTML is :mod:`companion.book.editions.slide_render`'s.

**Which table a deck shows.** A chapter shows many tables (fig3_decided: 23); a deck shows
the tables of the code cells the chapter tags ``slide`` and, where it tags none, its *key
table*: the first table the chapter shows after its answer box (the first it shows at all
where it has no answer box, or none after it), in the section where the chapter shows it, split
at :data:`TABLE_ROWS` rows with its header on each slide (:func:`split_html_table`).  A table
is one that a code cell's output shows as HTML (made by :func:`companion.book.tables.readable`,
or written by the chapter's code), not a Markdown table of the prose, which a ``% slide``
mark puts on a slide.  :func:`shown_tables` counts what a deck must then show.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .notebook_cells import _CODE_OPEN, _closes
from .slide_glue import _GLUE_ANY, _GLUE_FIGURE, SlideError, _figure_alt, _figure_only, resolve_glue

__all__ = ["SLIDE_WORDS", "TABLE_ROWS", "Slide", "SlideError", "resolve_glue", "trim", "pack_bullets",
           "split_table", "plan_chapter", "without_asides", "pack_answer", "answer_verdicts",
           "check_answer_slides", "drawn_figures", "chapter_markdown", "shown_tables", "split_html_table",
           "output_tables", "key_tables"]

# ----------------------------------------------------------------------------- planning
#: the most words of prose one slide may carry (its body and its figure's caption, not its
#: title; a formula, a link or a glued value counts as one word, as in
#: :func:`companion.book.editions.solutions.prose_words`); the rest of the text goes to speaker notes
SLIDE_WORDS = 60
#: the most rows of a table on one slide (a longer table is split, its header repeated)
TABLE_ROWS = 8
#: sections that are not lecture material
_SKIP_SECTIONS = ("exercises", "what to remember")
#: the most words of a section's lead that a table it introduces shares a slide with (two lines)
_TABLE_LEAD_WORDS = 30

_LABEL_LINE = re.compile(r"^\([A-Za-z0-9_:.-]+\)=\s*$")
_OPTION_LINE = re.compile(r"^\s*:[A-Za-z_-]+:")
_SLIDE_START = re.compile(r"^%\s*slide\b:?\s*(?P<title>.*)$")
_SLIDE_END = re.compile(r"^%\s*end[ -]?slide\s*$")
_FIGURE_MARK = re.compile(r"^@@figure:(\d+)@@$")
_TABLE_MARK = re.compile(r"^@@table:(\d+)@@$")
_HTML_TABLE = re.compile(r"<table\b.*?</table\s*>", re.S | re.I)
_BLOCK_OPEN = re.compile(r"^(?P<fence>:{3,}|`{3,})\{(?P<name>[^}]+)\}\s*(?P<args>.*)$")


@dataclass
class Slide:
    """One slide: a title, a Markdown body, an optional figure ``(png, alt)`` with its caption,
    an optional table (HTML) and speaker notes (Markdown)."""
    title: str
    body: str = ""
    figure: tuple | None = None
    caption: str = ""
    notes: str = ""
    table: str = ""      # one table's HTML as the chapter's code made it (rendered through safe_html)

    def words(self) -> int:
        from .solutions import prose_words

        return prose_words(self.body) + prose_words(self.caption)



def _words(text: str) -> int:
    from .solutions import prose_words

    return prose_words(text)


def _tokens(text: str) -> list[str]:
    """Words of ``text`` with every formula, link and HTML tag kept whole."""
    return re.findall(r"\$\$.*?\$\$|\$[^$\n]*\$|\{[^}\s]+\}`[^`]*`\S*|\[[^\]]*\]\([^)]*\)|<[^>]+>|\S+", text, re.S)


#: where a sentence ends: after . ! ? : ; and before a capital, a bracket, a formula or bold,
#: but never after an abbreviation that names a figure, an equation or a section ("Fig. S5b")
_SENTENCE_END = re.compile(r"(?<!\bFig\.)(?<!\bFigs\.)(?<!\bEq\.)(?<!\bEqs\.)(?<!\bSec\.)(?<!\bTab\.)(?<!\bThm\.)"
                           r"(?<!\bProp\.)(?<!\bDef\.)(?<!\bApp\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)(?<!\bcf\.)"
                           r"(?<=[.!?:;])\s+(?=[A-Z(\[$*])")


def trim(text: str, budget: int = SLIDE_WORDS) -> tuple[str, str]:
    """``(kept, rest)``: the leading sentences of ``text`` within ``budget`` words; a first
    sentence over the budget is cut at a word (formulas and links kept whole) and ends in '...'."""
    if _words(text) <= budget:
        return text.strip(), ""
    text = " ".join(text.split())
    sentences = re.split(_SENTENCE_END, text)
    kept: list[str] = []
    for i, sentence in enumerate(sentences):
        if _words(" ".join(kept + [sentence])) > budget:
            while kept and kept[-1].endswith(":"):   # a label ("Fig. 3a:") stays with what it labels
                kept.pop()
                i -= 1
            if kept:
                return " ".join(kept), " ".join(sentences[i:])
            break
        kept.append(sentence)
    toks, cut = _tokens(text), []
    for tok in toks:
        if _words(" ".join(cut + [tok])) > budget - 1:
            break
        cut.append(tok)
    return " ".join(cut) + " ...", " ".join(toks[len(cut):])


def _bullets(lines: list[str]) -> list[str]:
    """The items of a Markdown list (continuation lines joined), or the paragraphs."""
    items: list[str] = []
    for line in lines:
        m = re.match(r"^\s*(?:[-*+]|\d+\.)\s+(.*)$", line)
        if m:
            items.append(m.group(1))
        elif line.strip() and items:
            items[-1] += " " + line.strip()
        elif line.strip():
            items.append(line.strip())
    return items


def pack_bullets(title: str, items: list[str], budget: int = SLIDE_WORDS) -> list[Slide]:
    """Bullets on as few slides as the budget allows; a bullet over it is trimmed, its rest a note."""
    slides: list[Slide] = []
    current: list[str] = []
    notes: list[str] = []
    for item in items:
        kept, rest = trim(item, budget)
        if current and _words("\n".join(current + [kept])) > budget:
            slides.append(Slide(title, "\n".join(f"- {c}" for c in current), notes="\n\n".join(notes)))
            current, notes = [], []
        current.append(kept)
        if rest:
            notes.append(f"{kept.removesuffix(' ...')} {rest}")
    if current:
        slides.append(Slide(title, "\n".join(f"- {c}" for c in current), notes="\n\n".join(notes)))
    return slides


def without_asides(text: str) -> str:
    """``text`` without its parenthetical asides (formulas kept whole, and the brackets inside
    them), spaces before punctuation tidied."""
    out, depth = [], 0
    for tok in re.split(r"(\$\$.*?\$\$|\$[^$\n]*\$|[()])", text, flags=re.S):
        if not tok:
            continue
        if tok == "(":
            depth += 1
        elif tok == ")" and depth:
            depth -= 1
        elif depth == 0:
            out.append(tok)
    short = re.sub(r"[ \t]+([,.;:])", r"\1", "".join(out))
    return re.sub(r"[ \t]{2,}", " ", short).strip()


def pack_answer(items: list[str], budget: int = SLIDE_WORDS) -> list[Slide]:
    """The answer box's points as "The answer" slides: a point over the budget is shown
    without its parenthetical asides where that fits (the whole point goes to the notes), so
    that its verdict stays on the slide; otherwise it is trimmed as any bullet
    (:func:`pack_bullets`)."""
    shown, whole = [], {}
    for item in items:
        short = without_asides(item) if _words(item) > budget else item
        if short != item and _words(short) <= budget:
            whole[short] = item
            shown.append(short)
        else:
            shown.append(item)
    slides = pack_bullets("The answer", shown, budget)
    for short, item in whole.items():
        for slide in slides:
            if f"- {short}" in slide.body.splitlines():
                slide.notes = "\n\n".join(filter(None, [slide.notes, item]))
                break
    return slides


_VERDICT = re.compile(r"\*\*\s*\{glue(?::text)?\}`[^`]+`\s*\*\*")


def answer_verdicts(markdown: str) -> list[tuple[int, str]]:
    """The verdicts a chapter's answer box states: its glued values set in bold
    (``**{glue:text}`name`**``), each as ``(k, clause)``: the index of its point among the
    box's points (the question excepted) and the clause that states it, from the last
    ``;``, ``,`` or sentence end before it (``Fig. 3a: **{glue:text}`status`**``)."""
    box = re.search(r"^(:{3,})\{admonition\}\s+The answer.*?$(.*?)^\1\s*$", markdown, re.M | re.S)
    if not box:
        return []
    inner = [ln for ln in box.group(2).splitlines() if not _OPTION_LINE.match(ln)]
    points = [b for b in _bullets(inner) if not b.startswith("**Question.**")]
    found = []
    for k, point in enumerate(points):
        for m in _VERDICT.finditer(point):
            start = max((b.end() for b in re.finditer(r"[;,]\s|[.!?]\s(?=[A-Z])", point[:m.start()])), default=0)
            found.append((k, " ".join(point[start:m.end()].split())))
    return found


def check_answer_slides(chapter: str, slides: list[Slide], verdicts: list[tuple[int, str]], glue: dict) -> None:
    """Refuse (:class:`SlideError`, naming the chapter and the slide) an answer slide with a
    point that names something and says nothing after it ("Fig. 3a:"), and a verdict of the
    answer box (:func:`answer_verdicts`) that its point's slide does not state."""
    lines = []            # (slide number, the point as shown), in the order of the box's points
    for n, slide in enumerate(slides, 1):
        if slide.title == "The answer":
            lines += [(n, ln[2:]) for ln in slide.body.splitlines() if ln.startswith("- ")]
    for n, line in lines:
        if re.search(r"(:|\*\*\s*\*\*)\s*$", line) or re.search(r"\*\*\s*\*\*", line):
            raise SlideError(f"{chapter}: slide {n} ('The answer') states {line!r} with nothing after it; "
                             "its value went to the notes or was never glued")
    for k, clause in verdicts:
        try:
            stated = " ".join(resolve_glue(_links_text(clause), glue).split())
        except KeyError:
            raise SlideError(f"{chapter}: the slide 'The answer' states the verdict {clause!r}, which no execution "
                             "of the chapter glued (is the book built?)") from None
        n, line = lines[k] if k < len(lines) else (None, "")
        line = " ".join(line.split())
        if stated not in line and without_asides(stated) not in line:
            where = f"slide {n} ('The answer')" if n else "no slide 'The answer'"
            raise SlideError(f"{chapter}: {where} does not state the verdict {stated!r} of the answer box's point "
                             f"{k + 1}; shorten that point so that its verdict fits a slide")


def split_table(md: str, rows: int = TABLE_ROWS) -> list[str]:
    """A Markdown table of more than ``rows`` body rows as several tables, header repeated."""
    lines = [ln for ln in md.strip().splitlines() if ln.strip()]
    if len(lines) < 3 or not re.match(r"^\|?\s*:?-{3,}", lines[1]):
        return [md]
    head, body = lines[:2], lines[2:]
    return ["\n".join(head + body[i:i + rows]) for i in range(0, len(body), rows)] or [md]


def key_tables(order: list[tuple[int, bool]], tagged: list[bool]) -> set[int]:
    """The tables a deck shows (module docstring): those of cells tagged ``slide`` or, where no
    cell is, the first shown after the answer box, else the first; ``order``: ``(table, after
    the answer box)`` in reading order; ``tagged[n]``: table ``n``'s cell is tagged ``slide``."""
    chosen = {n for n, _ in order if n < len(tagged) and tagged[n]}
    if chosen or not order:
        return chosen
    return {next((n for n, after in order if after), order[0][0])}


def split_html_table(table: str, rows: int = TABLE_ROWS) -> list[str]:
    """An HTML table of more than ``rows`` body rows as several tables, each with the table's
    caption and header rows; a table whose rows cannot be told apart is kept whole."""
    m = re.search(r"<tbody\b[^>]*>(.*?)</tbody\s*>", table, re.S | re.I)
    if not m:
        return [table]
    body = re.findall(r"<tr\b.*?</tr\s*>", m.group(1), re.S | re.I)
    if len(body) <= rows or re.sub(r"<tr\b.*?</tr\s*>", "", m.group(1), flags=re.S | re.I).strip():
        return [table]
    head, tail = table[:m.start(1)], table[m.end(1):]
    return [head + "".join(body[i:i + rows]) + tail for i in range(0, len(body), rows)]


def output_tables(output) -> list[str]:
    """The tables one code-cell output shows: each ``<table>...</table>`` of its HTML."""
    data = output.get("data") or {}
    page = data.get("text/html")
    if not page:
        return []
    page = "".join(page) if isinstance(page, list) else str(page)
    return _HTML_TABLE.findall(page)


def _links_text(text: str) -> str:
    """References without text of their own: shown as words, not as label names."""
    text = re.sub(r"\{(ref|numref)\}`([^`<]+)`", r"{\1}`in the book <\2>`", text)
    text = re.sub(r"\{prf:ref\}`[^`]*`", "the statement in the book", text)
    text = re.sub(r"\{eq\}`[^`]*`", "the equation in the book", text)
    return re.sub(r"\{term\}`([^`<]+?)(?:\s*<[^>]+>)?`", r"\1", text)


def plan_chapter(markdown: str, figures: list[tuple], chapter: str = "chapter",
                 exercises_url=None, tables: list[tuple] | None = None) -> tuple[str, list[Slide]]:
    """``(title, slides)`` from a chapter's Markdown (glued values filled in, solutions removed)
    in which ``@@figure:<n>@@`` lines stand for ``figures[n] = (png, alt, caption)``.

    What goes on slides: the title and the question; the learning goals; the answer's points;
    per section its first sentences (the rest are speaker notes), each formal statement, each
    figure with its caption, and each block the chapter marks with a ``% slide`` comment line
    (up to the next heading, mark or ``% end slide``), shown whole: a marked block over
    :data:`SLIDE_WORDS` is a :class:`SlideError` naming the chapter and the block; then the
    closing "What to remember", and links to the exercises. Tables are split at
    :data:`TABLE_ROWS` rows. ``@@table:<n>@@`` lines stand for ``tables[n] = (html, tagged)``
    (a code cell's table; ``tagged``: the cell is tagged ``slide``); the deck shows those of
    :func:`key_tables` where the chapter shows them.

    A section whose first item is a figure (its lead announces it: "every claim's status in
    one picture") shows the figure on the lead's slide, when the lead and the figure's caption
    together fit :data:`SLIDE_WORDS`; one whose first item is a table it shows, the table's
    first rows, when the lead is at most two lines (``_TABLE_LEAD_WORDS``).
    """
    title = chapter
    goals: list[str] = []
    answer: list[str] = []
    summary: list[str] = []
    exercises: list[str] = []
    sections: list[dict] = []
    section = {"title": "", "prose": [], "items": []}   # items: ("figure", n) | ("marked", title, md) | ("box", title, md)
    lines = markdown.splitlines()
    i = 0
    marked: dict | None = None
    answered = False
    table_order: list[tuple[int, bool]] = []   # (table, shown after the answer box) in reading order
    tables = tables or []

    def close_marked():
        nonlocal marked
        if marked is not None:
            body = "\n".join(marked["lines"]).strip()
            if body or marked["figures"]:
                section["items"].append(("marked", marked["title"] or section["title"] or title, body,
                                         marked["figures"]))
            marked = None

    def prose(line):
        if marked is not None:
            marked["lines"].append(line)
        elif section["title"].lower() in _SKIP_SECTIONS:
            if section["title"].lower() == "what to remember":
                summary.append(line)
        else:
            section["prose"].append(line)

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        i += 1
        code = _CODE_OPEN.match(stripped)
        if code:   # a code block: its lines as written, never a heading, a mark or a comment of the chapter
            prose(line)
            while i < len(lines):
                i += 1
                prose(lines[i - 1])
                if _closes(lines[i - 1], code.group("fence")):
                    break
            continue
        if _LABEL_LINE.match(stripped) or (stripped.startswith("%") and not _SLIDE_START.match(stripped)
                                           and not _SLIDE_END.match(stripped)):
            continue
        tab = _TABLE_MARK.match(stripped)
        if tab:
            section["items"].append(("table", int(tab.group(1))))
            table_order.append((int(tab.group(1)), answered))
            continue
        fig = _FIGURE_MARK.match(stripped)
        if fig:
            if marked is not None:
                marked["figures"].append(int(fig.group(1)))
            else:
                section["items"].append(("figure", int(fig.group(1))))
            continue
        heading = re.match(r"^(#{1,3}) (.*)$", line)
        if heading:
            close_marked()
            if len(heading.group(1)) == 1:
                title = heading.group(2).strip()
                continue
            sections.append(section)
            section = {"title": heading.group(2).strip(), "prose": [], "items": []}
            continue
        start = _SLIDE_START.match(stripped)
        if start:
            close_marked()
            marked = {"title": start.group("title").strip(), "lines": [], "figures": []}
            continue
        if _SLIDE_END.match(stripped):
            close_marked()
            continue
        block = _BLOCK_OPEN.match(stripped)
        if block:
            fence, name, args = block.group("fence"), block.group("name"), block.group("args").strip()
            raw = []
            while i < len(lines) and lines[i].strip() != fence:
                raw.append(lines[i])
                i += 1
            i += 1
            inner = [ln for ln in raw if not _OPTION_LINE.match(ln) and not _LABEL_LINE.match(ln.strip())]
            if marked is not None and name in ("math",):
                marked["lines"] += ["$$", *inner, "$$"]
            elif name == "admonition" and args.lower().startswith("learning goals"):
                goals = _bullets(inner)
            elif name == "admonition" and args.lower().startswith("the answer"):
                answer = _bullets(inner)
                answered = True
            elif name == "exercise":
                found = re.search(r"^:label: (\S+)", "\n".join(raw), re.M)
                exercises.append(found.group(1) if found else "")
            elif name == "prf:proof":      # a proof is for the notes of its statement
                section["items"].append(("proof", "\n".join(inner).strip()))
            elif name.startswith("prf:"):
                kind = name.split(":", 1)[1].capitalize()
                section["items"].append(("box", f"{kind}: {args}" if args else kind, "\n".join(inner).strip(), []))
            elif name == "math":
                section["prose"] += ["$$", *inner, "$$"]
            continue
        prose(line)
    close_marked()
    sections.append(section)

    slides: list[Slide] = []
    answer_points = [b for b in answer if not b.startswith("**Question.**")]
    question = next((b.removeprefix("**Question.**").strip() for b in answer if b.startswith("**Question.**")), "")
    kept, rest = trim(question) if question else ("", "")
    slides.append(Slide(title, kept, notes=rest))
    if goals:
        slides += pack_bullets("Learning goals", [g for g in goals if not g.startswith("After this chapter")])
    if answer_points:
        slides += pack_answer(answer_points)
    shown_tables = key_tables(table_order, [bool(t[1]) for t in tables])
    for sec in sections:
        if sec["title"].lower() in _SKIP_SECTIONS:
            continue
        items = [it for it in sec["items"] if it[0] != "table" or it[1] in shown_tables]
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", "\n".join(sec["prose"])) if p.strip()]
        lead = next((p for p in paragraphs if not p.startswith(("|", "$$", "```", "~~~"))), "")
        has_marks = any(item[0] == "marked" for item in sec["items"])
        if sec["title"] and not has_marks:
            kept, rest = trim(lead) if lead else ("", "")
            others = [p for p in paragraphs if p != lead]
            notes = "\n\n".join(([rest] if rest else []) + others)
            slides.append(Slide(sec["title"], kept, notes=notes))
            if items and items[0][0] == "figure":   # the picture the lead announces, on its slide
                png, alt, caption = figures[items[0][1]]
                cap, cap_rest = trim(caption) if caption else ("", "")
                if _words(kept) + _words(cap) <= SLIDE_WORDS:
                    slides[-1].figure, slides[-1].caption = (png, alt), cap
                    slides[-1].notes = "\n\n".join(filter(None, [slides[-1].notes, cap_rest]))
                    items.pop(0)
            elif items and items[0][0] == "table" and _words(kept) <= _TABLE_LEAD_WORDS:
                first, *others = split_html_table(tables[items.pop(0)[1]][0])   # the table the lead introduces
                slides[-1].table = first
                slides += [Slide(sec["title"], table=piece) for piece in others]
        elif has_marks and paragraphs and slides:
            slides[-1].notes = "\n\n".join(filter(None, [slides[-1].notes, *paragraphs]))
        for item in items:
            if item[0] == "table":
                slides += [Slide(sec["title"] or title, table=piece) for piece in split_html_table(tables[item[1]][0])]
            elif item[0] == "figure":
                png, alt, caption = figures[item[1]]
                kept, rest = trim(caption) if caption else ("", "")
                slides.append(Slide(sec["title"] or title, figure=(png, alt), caption=kept, notes=rest))
            elif item[0] == "box":
                kept, rest = trim(item[2])
                slides.append(Slide(item[1], kept, notes=rest))
            elif item[0] == "proof":
                slides[-1].notes = "\n\n".join(filter(None, [slides[-1].notes, "Proof. " + item[1]]))
            else:   # a block the chapter marks for a slide: shown whole, within the budget
                _, name, body, figs = item
                md_tables = [blk for blk in re.split(r"\n\s*\n", body) if blk.lstrip().startswith("|")]
                prose = "\n\n".join(blk for blk in re.split(r"\n\s*\n", body) if not blk.lstrip().startswith("|"))
                if _words(prose) > SLIDE_WORDS:
                    raise SlideError(f"{chapter}: the slide {name!r} marked '% slide' has {_words(prose)} words of "
                                     f"prose, over the budget of {SLIDE_WORDS}; shorten it or mark less")
                parts = [split_table(t) for t in md_tables] or [[""]]
                pieces = [p for ps in parts for p in ps]
                for k, piece in enumerate(pieces):
                    fig = figures[figs[0]] if figs and k == 0 else None
                    slides.append(Slide(name, "\n\n".join(filter(None, [prose if k == 0 else "", piece])),
                                        figure=fig[:2] if fig else None, caption=trim(fig[2])[0] if fig else ""))
                for n in figs[1:]:
                    png, alt, caption = figures[n]
                    slides.append(Slide(name, figure=(png, alt), caption=trim(caption)[0], notes=trim(caption)[1]))
    items = _bullets(summary)
    if items:
        slides += pack_bullets("What to remember", items)
    if exercises:
        links = [f"[Exercise {k}]({exercises_url(label)})" if exercises_url else f"Exercise {k}"
                 for k, label in enumerate(exercises, 1) if label]
        slides.append(Slide("Exercises", "In the book, with hints and checks: " + ", ".join(links) + "."))
    return title, [s for s in slides if s.body or s.figure or s.notes or s.table or s is slides[0]]


def chapter_markdown(nb, glue: dict, chapter: str) -> tuple[str, list[tuple], list[tuple]]:
    """``(markdown, figures, tables)``: the chapter's Markdown (solutions removed, glued values
    filled in) with an ``@@figure:<n>@@`` line where each figure stands and an ``@@table:<n>@@``
    line where each table of a code cell's output stands, the figures ``(png, alt, caption)``
    and the tables ``(html, tagged)`` (``tagged``: the cell is tagged ``slide``).  A cell tagged
    ``slide`` that draws no figure and shows no table is a :class:`SlideError`."""
    from .solutions import cells_without_solutions

    parts: list[str] = []
    figures: list[tuple] = []
    tables: list[tuple] = []

    def glued_figure(m):
        name = m.group("name")
        if "::" in name:   # myst-nb's page::name: another page's figure, which no deck carries
            raise SlideError(f"{chapter}: the figure {name!r} is pasted from the page {name.partition('::')[0]!r}, "
                             "which this chapter's deck does not carry; glue it in this chapter too")
        if name in glue and "image/png" not in glue[name].get("data", {}) and not _figure_only(m):
            return m.group(0)   # {glue} / {glue:any} of a value that is no figure: resolve_glue pastes its text
        if name not in glue or "image/png" not in glue[name].get("data", {}):
            raise KeyError(f"glued name {name!r} is not in the chapter's executed outputs (is the book built?)")
        caption = " ".join(ln for ln in m.group("body").splitlines() if not ln.startswith(":")).strip()
        figures.append((glue[name]["data"]["image/png"], _figure_alt(glue[name].get("metadata"), name), caption))
        return f"\n@@figure:{len(figures) - 1}@@\n"

    for n, cell in cells_without_solutions(nb.cells):   # gated solutions' code cells left out too
        tags = set((cell.get("metadata") or {}).get("tags", []))
        if cell.cell_type == "markdown":
            text = _GLUE_ANY.sub(glued_figure, cell.source)
            parts.append(resolve_glue(_links_text(text), glue))
        elif cell.cell_type == "code":
            drawn = 0
            if not tags & {"remove-output", "remove-cell"}:
                for out in cell.get("outputs", []):
                    if "scrapbook" in out.get("metadata", {}):
                        continue  # a glued value, shown where the text uses it
                    png = out.get("data", {}).get("image/png")
                    if png:
                        figures.append((png, _figure_alt(out.get("metadata"), "figure"), ""))
                        parts.append(f"@@figure:{len(figures) - 1}@@")
                        drawn += 1
                        continue
                    for table in output_tables(out):
                        tables.append((table, "slide" in tags))
                        parts.append(f"@@table:{len(tables) - 1}@@")
                        drawn += 1
            if "slide" in tags and not drawn:
                raise SlideError(f"{chapter}: code cell {n} is tagged 'slide' but draws no figure and shows no table")
    return "\n\n".join(parts), figures, tables


def _shown_outputs(nb):
    """The outputs a deck may show of an executed chapter's code cells: a glued value (shown
    where the text uses it), a cell whose output is removed and a solution's cells (a gated
    ``{solution-start}`` ... ``{solution-end}``, which no deck shows) excepted."""
    from .solutions import cells_without_solutions

    for _, cell in cells_without_solutions(nb.cells):
        tags = set((cell.get("metadata") or {}).get("tags", []))
        if cell.cell_type == "code" and not tags & {"remove-output", "remove-cell"}:
            yield from (o for o in cell.get("outputs", []) if "scrapbook" not in (o.get("metadata") or {}))


def drawn_figures(nb, markdown: str = "") -> int:
    """How many figures an executed chapter shows outside its solutions: the images of its code
    cells' outputs (:func:`_shown_outputs`) and the figures its text pastes (``{glue:figure}``)."""
    from .solutions import strip_solutions

    pasted = len(_GLUE_FIGURE.findall(strip_solutions(markdown))) if markdown else 0
    return sum("image/png" in (o.get("data") or {}) for o in _shown_outputs(nb)) + pasted


def shown_tables(nb) -> int:
    """How many tables an executed chapter's code shows outside its solutions: the HTML tables of
    its code cells' outputs (:func:`_shown_outputs`) that are not figures, as
    :func:`chapter_markdown` finds them."""
    return sum(len(output_tables(o)) for o in _shown_outputs(nb) if "image/png" not in (o.get("data") or {}))
