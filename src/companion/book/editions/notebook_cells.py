"""What a chapter's cells become in its Colab notebook: MyST Markdown as plain Markdown, with
the build's answers carried in.

Colab and Jupyter render neither MyST directives nor roles: :func:`colab_markdown` writes
them as Markdown (quoted blocks, collapsed solutions, links to the published book), with a
glued value's text where the build glued it (:func:`glued_values`, :func:`glue_text`).  A
glued figure becomes its image (:func:`paste_glued_figures`), and the code cells get the
outputs the build's execution gave them, within :data:`OUTPUT_BUDGET` bytes
(:func:`carry_outputs`).  :mod:`companion.book.editions.notebooks` puts them together.
"""

from __future__ import annotations

import re

#: a MyST role as MyST reads one (mdit_py_plugins.myst_role): a name of letters, digits and ``_-+:``
#: in braces, then its content between runs of as many backticks as open it (``{code}``a`b```)
_ROLE = re.compile(r"\{(?P<role>[a-zA-Z0-9_+:-]+)\}(?P<ticks>`+)(?P<body>.+?)(?P=ticks)")
_FENCE_OPEN = re.compile(r"^(?P<fence>:{3,}|`{3,})\{(?P<name>[^}]+)\}\s*(?P<args>.*)$")
#: a fenced block that is no directive (code, or MyST shown as an example): kept as it is written
_CODE_OPEN = re.compile(r"^(?P<fence>`{3,}|~{3,})(?![^`~]*\{)")
_EQ_LABEL = re.compile(r"^(\s*\$\$)\s*\([^)]*\)\s*$")
#: a MyST target line, ``(label)=`` before a heading or block, as MyST reads one (any label
#: between the brackets): the book's anchor, shown as raw text by Jupyter and Colab
_TARGET = re.compile(r"^\s*\(.+\)=\s*$")
#: a MyST comment line (``% ...``, the decks' ``% slide`` marks too): not shown by the book
_COMMENT = re.compile(r"^\s{0,3}%")


def _closes(line: str, fence: str) -> bool:
    """Whether ``line`` closes a block opened by ``fence``: a run of its character at least as
    long, and nothing else (as MyST and CommonMark end a fence)."""
    stripped = line.strip()
    return len(stripped) >= len(fence) and set(stripped) == {fence[0]}


#: the mime type under which myst-nb stores a value glued with ``display=False``
GLUE_PREFIX = "application/papermill.record/"


def glued_values(executed) -> dict:
    """``{name: text/plain}`` of every value an executed chapter glued (myst-nb keeps each in
    a cell output whose metadata names it), read from the executed notebook (nbformat)."""
    out = {}
    for cell in executed.cells:
        for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
            name = o.get("metadata", {}).get("scrapbook", {}).get("name")
            data = o.get("data", {})
            text = data.get(GLUE_PREFIX + "text/plain", data.get("text/plain"))
            if name and text is not None:
                out[name] = text if isinstance(text, str) else "".join(text)
    return out


def glue_text(name: str, spec: str, values: dict) -> str | None:
    """A glued value as ``{glue:text}`name:spec``` shows it on the page (myst-nb's rule,
    :func:`companion.book.site.executions.text`), or None when the build glued no such name."""
    if name not in values:
        return None
    from ..site.executions import text

    try:
        return text(values[name], spec)
    except (ValueError, TypeError):
        return values[name]


def other_page(body: str) -> str | None:
    """The page a glue reference's ``body`` pastes from (myst-nb's ``page::name``), or None."""
    doc, sep, _ = body.partition("::")
    return doc if sep else None


def refuse_other_pages(text: str) -> None:
    """Refuse (``ValueError``, one line naming the reference) a value ``text`` pastes from another
    page (``{glue:text}`page::name```): the notebooks carry the values of their own chapter only,
    and the name before ``::`` is no name of this chapter (its own value of that name, where it
    glues one, is not the value the page shows)."""
    for m in _ROLE.finditer(text):
        if m.group("role").startswith("glue") and other_page(m.group("body")) is not None:
            raise ValueError(f"{{{m.group('role')}}}`{m.group('body')}` pastes a value of the page "
                             f"{other_page(m.group('body'))!r}, which this chapter's notebook does not carry; "
                             "glue the value in this chapter too, and paste it from here")
    for m in re.finditer(r"^\s*(?:`{3,}|:{3,})\{glue(?::[a-z]*)?\}\s+(\S*::\S*)", text, re.M):
        raise ValueError(f"the figure {m.group(1)!r} is pasted from another page, which this chapter's notebook "
                         "does not carry; glue the figure in this chapter too, and paste it from here")


def _reference_words(target: str, role: str, titles: dict | None) -> str:
    """The words a reference without text of its own shows where a notebook cannot number it:
    the heading it names (``titles``, :func:`companion.book.site.chapters.book_links`), else
    its label's words (:func:`label_words`)."""
    last = target.split("/")[-1]
    if role != "numref" and titles:
        title = titles.get(target) or titles.get(last)
        if title:
            title = _ROLE.sub(lambda m: _role(m, None, None), title)
            return title.replace("[", "\\[").replace("]", "\\]")
    return label_words(last if role == "doc" else target, role)


def _role(match: re.Match, values: dict | None = None, links: dict | None = None) -> str:
    role, body = match.group("role"), match.group("body")
    explicit = re.match(r"^(?P<text>.*?)\s*<(?P<target>[^>]+)>$", body)
    text = explicit.group("text") if explicit else body
    if role.startswith("glue"):
        if other_page(body) is not None:
            if values is not None:
                refuse_other_pages(match.group(0))
            return f"`{body}` (computed by the code of the page {other_page(body)})"
        name, _, spec = body.partition(":")
        value = glue_text(name, spec, values or {})
        if value is None:
            return f"`{name}` (computed by this chapter's code)"
        from ..site.markup import pasted

        return pasted(value)   # plain text, as on the book's page: no markup, no HTML from a value
    if role in ("eq", "prf:ref"):   # never the raw label: a name a reader can read, linked where known
        target = (explicit.group("target") if explicit else body).strip()
        shown = text if explicit else label_words(target, role)
        url = (links or {}).get(target)
        return f"[{shown}]({url})" if url else shown
    if role in ("ref", "doc", "numref"):
        target = (explicit.group("target") if explicit else body).strip()
        url = (links.get(target) or links.get(target.split("/")[-1])) if links else None
        titles = getattr(links, "titles", None)
        if explicit and role == "numref":   # "Figure %s": the site's number, which a notebook cannot give
            words = f"({_label_rest(target)})"
            shown = text.replace("%s", words).replace("{number}", words).replace(
                "{name}", _reference_words(target, "ref", titles))
        elif explicit:
            shown = text
        elif titles is not None or role == "numref":
            shown = _reference_words(target, role, titles)
        elif url:
            shown = target.split("/")[-1].replace("_", " ") if role == "doc" else text
        else:
            shown = text
        return f"[{shown}]({url})" if url else shown
    if role == "cite" or role.startswith("cite:"):
        return _citation(role, text, getattr(links, "citations", None))
    if role == "math":   # inline math stays math ($...$), which Colab and Jupyter typeset
        return f"${body}$"
    return text


def _citation(role: str, keys: str, citations: dict | None) -> str:
    """A citation as the site's author-year style writes it (``{cite}``: ``(Saponati et al., 2025)``,
    ``{cite:t}``: ``Saponati et al. (2025)``), from ``citations``
    (:func:`companion.book.site.chapters.book_links`); ``[key]`` where a key is not known."""
    found = [citations.get(k.strip()) for k in keys.split(",")] if citations else [None]
    if not all(found):
        return f"[{keys}]"
    if role in ("cite:t", "cite:ts"):
        return "; ".join(f"{who} ({year})" for who, year in found)
    return "(" + "; ".join(f"{who}, {year}" for who, year in found) + ")"


#: the book's label prefixes and what they name (``prop-logits-bilinear``: a proposition)
_LABEL_KINDS = {"eq": "Eq.", "prop": "Proposition", "thm": "Theorem", "lem": "Lemma", "def": "Definition",
                "cor": "Corollary", "rem": "Remark", "ex": "Example", "alg": "Algorithm", "conj": "Conjecture",
                "assump": "Assumption", "fig": "Figure", "tab": "Table"}


def label_words(label: str, role: str = "prf:ref") -> str:
    """A cross-reference's label as a reader reads it, where a notebook cannot number it as
    the site does: ``prop-logits-bilinear`` -> ``Proposition (logits bilinear)``,
    ``eq-bilinear-logit`` -> ``Eq. (bilinear logit)``; a label of no known kind is its words
    (``Eq. (...)`` for an equation)."""
    kind, _, rest = label.partition("-")
    name = _LABEL_KINDS.get(kind.lower())
    words = _label_rest(label)
    if name is None:
        name = "Eq." if role == "eq" else ""
    return f"{name} ({words})" if name else words


def _label_rest(label: str) -> str:
    """A label's words without its kind (``fig-logit-order`` -> ``logit order``)."""
    kind, _, rest = label.partition("-")
    return (rest if _LABEL_KINDS.get(kind.lower()) and rest else label).replace("-", " ").replace("_", " ").strip()


def _cite_this() -> list[str]:
    """The lines of the site's "Cite this book" box as a quoted block: the version, and the
    BibTeX of the book (this version) and of the paper, as :class:`companion.book.sphinxext.CiteThis`
    writes them."""
    from ..site.citation import book_bibtex, book_version, paper_bibtex

    version = book_version()
    lines = ["> **Cite this book**", ">",
             f"> You are reading version {version.label}. To cite this book, and the paper it accompanies:"]
    for bib in (book_bibtex(version), paper_bibtex()):
        lines += [">", "> ```bibtex", *(f"> {line}".rstrip() for line in bib.splitlines()), "> ```"]
    return lines


#: directives the book's build fills from its data and files (no text of their own in the page)
_SITE_ONLY = frozenset({"release-changes", "build-status", "bibliography", "nb-exec-table", "tableofcontents"})


def colab_markdown(text: str, values: dict | None = None, links: dict | None = None) -> str:
    """A MyST Markdown cell as plain Markdown that Colab and Jupyter render.

    Directives become quoted blocks with a bold title (``dropdown`` and ``solution`` become a
    collapsible ``<details>``, so exercise solutions stay hidden; ``math`` becomes a ``$$`` block);
    roles become their text, a glued value the build's value where ``values``
    (:func:`glued_values`) holds it, a cross-reference a link to the published book where
    ``links`` (:func:`book_links`) knows its target; equation labels after a closing ``$$``,
    target lines ``(label)=`` and comment lines ``% ...`` are dropped, as MyST reads them.  A
    fenced block that is no directive (code, or MyST shown as an example) is kept as written.
    """
    out: list[str] = []
    stack: list[tuple[str, str]] = []  # (closing fence, kind)
    code: str | None = None            # the fence of a plain code block the line is in
    for line in text.splitlines():
        stripped = line.strip()
        depth = sum(1 for _, kind in stack if kind == "quote")
        if code is not None:   # a code block's lines as they are written
            if _closes(line, code):
                code = None
            out.append(("> " * depth + line).rstrip() if depth else line)
            continue
        if stack and _closes(line, stack[-1][0]):
            _, kind = stack.pop()
            out.append({"details": "\n</details>\n", "math": "$$"}.get(kind, ""))
            continue
        in_math = bool(stack) and stack[-1][1] == "math"
        opened_code = None if in_math else _CODE_OPEN.match(stripped)
        if opened_code:
            code = opened_code.group("fence")
            out.append(("> " * depth + line).rstrip() if depth else line)
            continue
        if _COMMENT.match(line) and not in_math:
            continue  # a MyST comment: the book never shows it
        opened = _FENCE_OPEN.match(stripped)
        if opened:
            name, args = opened.group("name"), opened.group("args").strip()
            fence = opened.group("fence")
            if name == "dropdown":   # the title as text inside HTML: its roles read, then escaped
                import html

                def plain(m):
                    body = m.group("body")
                    if m.group("role").startswith("glue") and other_page(body) is None:
                        value = glue_text(body.partition(":")[0], body.partition(":")[2], values or {})
                        # one line of text, as the site's title shows it: a blank line would end
                        # the <summary> and let the rest of the value be read as Markdown
                        return " ".join(value.split()) if value is not None else body.partition(":")[0]
                    return _role(m, values, None)
                # the title's own character references read as MyST reads them (``&amp;`` is '&'),
                # a glued value as the text it is: each escaped once
                out.append(f"<details><summary>{html.escape(_ROLE.sub(plain, html.unescape(args))) or 'Details'}"
                           "</summary>\n")
                kind = "details"
            elif name == "solution":  # an exercise's solution: collapsed, as on the site
                out.append("<details><summary>Solution</summary>\n")
                kind = "details"
            elif name == "math":
                out.append("$$")
                kind = "math"
            elif name == "cite-this":   # the site's "Cite this book" box (companion.book.sphinxext.CiteThis)
                out.extend(_cite_this())
                kind = "quote"
            else:
                title = name.split(":")[-1].replace("-", " ").capitalize()
                if args:   # a title's roles read as a line's are (a glued value pasted as text)
                    args = _ROLE.sub(lambda m: _role(m, values, links), args)
                if name == "admonition" and args:
                    title = args
                elif args:
                    title = f"{title} ({args})"
                out.extend([f"> **{title}**", ">"])
                if name in _SITE_ONLY:   # the build writes it from its data: say so, never an empty box
                    out.append("> *Made by the book's build from its data and files: read it on this page of the "
                               "published book.*")
                kind = "quote"
            stack.append((fence, kind))
            continue
        if stack and re.match(r"^:[a-zA-Z_-]+:", stripped):
            continue  # a directive's option (:label:, :class:, ...)
        if _TARGET.match(line) and not in_math:
            continue  # a target (label)=: the heading or block after it shows as itself
        line = _ROLE.sub(lambda m: _role(m, values, links), _EQ_LABEL.sub(r"\1", line))
        out.append(("> " * depth + line).rstrip() if depth else line)
    return "\n".join(out)


# ------------------------------------------------------------------ the build's outputs
#: the most a notebook's carried outputs may weigh (figures as PNG included), in bytes
OUTPUT_BUDGET = 5_000_000


#: what a carried output may hold as it is: text and raster images (Jupyter and Colab show them
#: as data); HTML and Markdown only when inert (:func:`_inert_bundle`); any other type is dropped
_PLAIN_TYPES = ("text/plain", "image/png", "image/jpeg", "image/gif")
#: the text/plain of an object that has only a rich form (``<IPython.core.display.HTML object>``,
#: ``<pandas.io.formats.style.Styler at 0x...>``): nothing to show once the rich form is left out
_BARE_REPR = re.compile(r"^<[\w.]+ (?:object|at 0x[0-9a-fA-F]+)>$")
#: a Markdown link's or reference's address, and a formula's link (MathJax's \href, \url)
_MD_ADDRESS = re.compile(r"\]\(\s*<?([^\s)>]*)|^\s{0,3}\[[^\]]+\]:\s*<?(\S*?)>?(?:\s|$)", re.M)
_MATH_LINK = re.compile(r"\\(?:href|url)\b")


def _inert_markdown(text: str) -> bool:
    from ..site.markup import _SAFE_URL, inert_html

    if _MATH_LINK.search(text) or not inert_html(text):
        return False
    return all(_SAFE_URL.match(re.sub(r"[\x00-\x20\x7f]", "", a or b)) for a, b in _MD_ADDRESS.findall(text))


def _inert_bundle(o):
    """``o`` (an execution's output) with only what shows as data: text, raster images, and HTML
    or Markdown that holds no script, handler or active address
    (:func:`companion.book.site.markup.inert_html`), the survey's explorer excepted, whose
    script is the package's own (:func:`companion.book.explorer.is_explorer_html`).  An output
    whose only other form is an object's bare repr says in its place that the cell shows more
    when run.  Jupyter itself runs no script of an untrusted notebook's output; Colab does."""
    import nbformat

    if o.get("output_type") not in ("display_data", "execute_result"):
        return o
    from ..site.markup import inert_html

    data, kept, left = o.get("data", {}), {}, False
    for mime, value in data.items():
        text = value if isinstance(value, str) else "".join(value) if isinstance(value, list) else None
        if mime in _PLAIN_TYPES:
            kept[mime] = value
        elif mime == "text/html" and text is not None and (inert_html(text) or _is_explorer(text)):
            kept[mime] = value
        elif mime == "text/markdown" and text is not None and _inert_markdown(text):
            kept[mime] = value
        else:
            left = True
    if not left:
        return o
    plain = kept.get("text/plain", "")
    plain = plain if isinstance(plain, str) else "".join(plain)
    if len(kept) == (1 if "text/plain" in kept else 0) and (not plain or _BARE_REPR.match(plain.strip())):
        kept["text/plain"] = ("(this output of the build runs code in the page, so the notebook does "
                              "not carry it: run the cell to see it)")
    new = dict(o, data=kept)
    return nbformat.from_dict(new)


def _is_explorer(text: str) -> bool:
    from ..explorer import is_explorer_html

    return is_explorer_html(text)


def _output_bytes(o) -> int:
    import json

    return len(json.dumps(o, default=str))


def carry_outputs(nb, executed, budget: int = OUTPUT_BUDGET) -> dict:
    """Copy into ``nb``'s code cells the outputs the build's execution gave the cell with the
    same source (matched in order, so a student notebook, which lacks the solutions' cells,
    gets outputs for exactly the cells it has).  A value glued with ``display=False`` is no
    output: it is carried as the line ``name = value`` that a re-run shows under the cell
    (:func:`companion.book.paste.shown`; a glued figure is in the text instead); outputs past
    ``budget`` bytes are replaced by one line saying so.  Returns ``{"cells": cells with
    outputs, "bytes": size carried, "dropped": outputs left out for the budget}``."""
    import nbformat

    from ..paste import shown

    pool: dict[str, list] = {}
    for cell in executed.cells:
        if cell.cell_type == "code":
            pool.setdefault(cell.source.strip(), []).append(cell)
    used = dropped = cells = 0
    for cell in nb.cells:
        if cell.cell_type != "code" or not pool.get(cell.source.strip()):
            continue
        done = pool[cell.source.strip()].pop(0)
        keep, left_out = [], 0
        for o in done.get("outputs", []):
            scrap = (o.get("metadata") or {}).get("scrapbook") or {}
            if scrap.get("mime_prefix"):      # a value glued without display
                data = {k[len(scrap["mime_prefix"]):]: v for k, v in o.get("data", {}).items()}
                if "image/png" in data or "text/plain" not in data:
                    continue
                text = data["text/plain"] if isinstance(data["text/plain"], str) else "".join(data["text/plain"])
                shown_data, shown_meta = shown(scrap.get("name", "?"), text)
                o = nbformat.v4.new_output("display_data", data=shown_data, metadata=shown_meta)
            o = _inert_bundle(o)
            size = _output_bytes(o)
            if used + size > budget:
                left_out += 1
                continue
            used += size
            keep.append(o)
        if left_out:
            dropped += left_out
            keep.append(nbformat.v4.new_output("stream", name="stdout", text=(
                f"({left_out} output(s) of the build not carried here: a notebook keeps at most "
                f"{budget:,} bytes of outputs; run the cell to see them)\n")))
        cell.outputs = keep
        cell.execution_count = done.get("execution_count")
        cells += bool(keep)
    return {"cells": cells, "bytes": used, "dropped": dropped}


#: the figure directive, and the directives that paste any value (``{glue}``, ``{glue:}``, ``{glue:any}``)
_GLUE_FIGURE_BLOCK = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{glue(?P<kind>:figure|:any|:)?\}\s+(?P<name>\S+)[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$",
    re.M | re.S)


def paste_glued_figures(text: str, execution) -> tuple[str, int]:
    """``text`` with each ``{glue:figure}`` directive, and each ``{glue}`` or ``{glue:any}``
    directive of a figure, replaced by the build's image (a Markdown image with a ``data:``
    address, which Colab and Jupyter both show; Colab does not show cell attachments) and its
    caption (a ``{glue}`` of a value that is no figure by that value's text); returns the text
    and the bytes pasted.  A figure the build did not glue is left for
    :func:`companion.book.site.executions.missing` to name."""
    pasted = 0

    def figure(m):
        nonlocal pasted
        from ..site.markup import pasted as plain_text   # (``pasted`` here counts the bytes pasted)

        got = execution.figure(m.group("name")) if execution is not None else None
        if got is None:
            value = (execution.values.get(m.group("name")) if execution is not None and m.group("kind") != ":figure"
                     else None)
            # a value that is no figure, pasted by {glue} / {glue:any}: its text, as on the page
            return m.group(0) if value is None else plain_text(glue_text(m.group("name"), "", {m.group("name"): value}))
        png, alt = got

        png = "".join(png.split())
        if not re.fullmatch(r"[A-Za-z0-9+/]*={0,2}", png):   # pasted into a link's address: ")" would end it
            raise ValueError(f"the glued figure {m.group('name')!r} has image/png data that is not base64 text, "
                             "so it is not pasted into the notebook; glue a figure (a matplotlib Figure) under it.")

        alt = plain_text(alt.replace("[", "(").replace("]", ")"))
        caption = "\n".join(ln for ln in m.group("body").splitlines() if not re.match(r"^\s*:[\w-]+:", ln)).strip()
        pasted += len(png)
        return f"![{alt}](data:image/png;base64,{png})\n\n*Figure.* {caption}\n"

    return _GLUE_FIGURE_BLOCK.sub(figure, text), pasted
