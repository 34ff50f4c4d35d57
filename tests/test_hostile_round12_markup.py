"""Hostile round 12 (issue 74): a chapter's raw HTML in a deck (:func:`safe_html`) and executed
notebooks that lie (a name glued twice, a value with markup, a table output with a script).

(a) A differential fuzz: a few thousand hostile fragments go through ``safe_html`` (and through the
deck's whole Markdown renderer); the result is read twice, by a strict grammar of what
``safe_html`` may write and by :class:`html.parser.HTMLParser` as a browser reads it (entities
decoded, then the address read with the WHATWG URL rules: leading and trailing C0 controls and
spaces stripped, tabs and line breaks removed anywhere).  No element may carry an ``on*``
attribute, no address a scheme other than http, https, mailto (or a raster ``data:image`` on an
``<img>``), and no script, frame, object, embed, svg or math element may survive.

(b) The value that reaches the deck or the notebook is the one the page shows: myst-nb keeps the
LAST output glued under a name (``myst_nb.ext.glue.extract_glue_data``: ``data[key] = ...``
after a "duplicate" warning), and formats ``{glue:text}`name:spec``` by reading the text as a
Python literal first.
"""

from __future__ import annotations

import html
import random
import re
from html.parser import HTMLParser

import nbformat
import pytest

from companion.book.site.markup import safe_html

# ============================================================ (a) safe_html, fuzzed

_RUN_TAGS = {"script", "iframe", "object", "embed", "svg", "math", "style", "frame", "frameset", "base",
             "form", "link", "meta", "applet", "template", "noscript", "textarea", "title", "xmp", "plaintext"}
_URL_ATTRS = {"href", "src", "xlink:href", "action", "formaction", "srcdoc", "data", "poster", "background",
              "srcset", "ping", "cite", "longdesc", "lowsrc", "dynsrc"}
_OK_SCHEMES = {"http", "https", "mailto"}


def _scheme(value: str) -> str | None:
    """The scheme a browser reads in an (entity-decoded) address, or None for a relative one
    (WHATWG URL: strip leading/trailing C0 controls and space, drop tab/LF/CR anywhere)."""
    bare = value.strip("".join(map(chr, range(0x21))))
    bare = re.sub(r"[\t\n\r]", "", bare)
    m = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", bare)
    return m.group(1).lower() if m else None


class _Browser(HTMLParser):
    """Every element and attribute of an HTML string, values decoded as a browser decodes them."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, list]] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, attrs))

    handle_startendtag = handle_starttag


def _dangers(out: str) -> list[str]:
    found = []
    # 1. the strict grammar of what safe_html writes: a tag is <name( attr="...")*/?> or </name>,
    #    nothing else may start with "<" and a letter, "/" or "!" ("<" in text is &lt;)
    for m in re.finditer(r"<(?=[A-Za-z/!?])", out):
        rest = out[m.start():]
        if not re.match(r'</?[a-z][a-z0-9]*(?: [a-z][a-z-]*="[^"<>]*")*/?>', rest):
            found.append(f"unexpected markup at {rest[:40]!r}")
    # 2. read as a browser reads it
    b = _Browser()
    b.feed(out)
    b.close()
    for tag, attrs in b.elements:
        if tag in _RUN_TAGS:
            found.append(f"<{tag}> element")
        for name, value in attrs:
            name = name.lower()
            if name.startswith("on"):
                found.append(f"{name}= on <{tag}>")
            if name in _URL_ATTRS and value is not None:
                scheme = _scheme(value)
                raster = (tag == "img" and name == "src"
                          and re.match(r"\s*data:image/(png|jpeg|gif|webp);base64,", value, re.I))
                if scheme and scheme not in _OK_SCHEMES and not raster:
                    found.append(f"{name}={value!r} ({scheme}:) on <{tag}>")
            if name == "style" and re.search(r"url\s*\(|expression", value or "", re.I):
                found.append(f"style={value!r}")
    return found


_JS = ["javascript:alert(1)", "&#106;avascript:alert(1)", "&#x6A;avascript&colon;alert(1)", "java&#x09;script:x",
       "java\tscript:x", "\x01javascript:x", " \x0bjavascript:x", "JaVaScRiPt:x", "jav&#13;ascript:x",
       "&#0000106&#0000097vascript:x", "vbscript:x", "data:text/html,<script>alert(1)</script>",
       "data:image/svg+xml;base64,PHN2Zz4=", "jav\u0000ascript:x", "javascript&#58;x", "java&Tab;script:x",
       "&NewLine;javascript:x", "https://ok.example/a", "#frag", "./rel.html", "mailto:a@b.c",
       "data:image/png;base64,iVBORw0K", "//evil.example/x", "javascript%3Ax"]
_TAGS = ["a", "A", "img", "IMG", "div", "td", "svg", "script", "ScRiPt", "iframe", "object", "embed", "math",
         "form", "button", "input", "details", "table", "style", "textarea", "title", "p", "span", "base"]
_ATTRS = ["href", "HREF", "src", "Src", "xlink:href", "action", "formaction", "srcdoc", "data", "onerror",
          "OnClick", "onmouseover", "style", "title", "alt", "class", "on\x00load", "ontoggle"]


def _attr(rng: random.Random) -> str:
    name = rng.choice(_ATTRS)
    value = rng.choice(_JS + ["alert(1)", "background:url(javascript:alert(1))", "x", "<script>alert(1)</script>"])
    q = rng.choice(['"', "'", ""])
    if not q:
        value = value.replace(" ", "")
    sep = rng.choice([" ", "  ", "/", "\n", "\t", " \x0c"])
    return f"{sep}{name}={q}{value}{q}" if rng.random() > 0.1 else f"{sep}{name}"


def _piece(rng: random.Random) -> str:
    tag = rng.choice(_TAGS)
    kind = rng.randrange(10)
    if kind < 4:
        return f"<{tag}{''.join(_attr(rng) for _ in range(rng.randint(0, 3)))}{rng.choice(['>', '/>', ' >', ''])}"
    if kind == 4:
        return rng.choice(["<!--", "-->", "<!-->", "--!>", "<![CDATA[", "]]>", "<!x>", "<?php ", "?>", "</", "<"])
    if kind == 5:
        return rng.choice(["<svg><script>alert(1)</script></svg>",
                           '<math><mi xlink:href="javascript:alert(1)">x</mi></math>',
                           '<iframe srcdoc="&lt;script&gt;alert(1)&lt;/script&gt;"></iframe>',
                           '<form><button formaction="javascript:alert(1)">x</button></form>',
                           '<object data="javascript:alert(1)"></object>',
                           '<div style="background:url(javascript:alert(1))">x</div>',
                           "<!--<script>alert(1)</script>-->", "<![CDATA[<img src=x onerror=alert(1)>]]>",
                           "<!--><img src=x onerror=alert(1)>-->", "<scr<script>ipt>alert(1)</script>",
                           '<a href="x"<img src=x onerror=alert(1)>', "<img src=x onerror=alert(1)//"])
    if kind == 6:
        return f"</{tag}>"
    return rng.choice(["text ", "&lt;", "&amp;", "&#60;script&#62;", " & ", "\"'", "\x00", "\n\n", "|", "`"])


def _fragments(n: int, seed: int = 12) -> list[str]:
    rng = random.Random(seed)
    return ["".join(_piece(rng) for _ in range(rng.randint(1, 6))) for _ in range(n)]


FRAGMENTS = _fragments(3000)


def test_fuzz_safe_html_leaves_nothing_that_runs():
    bad = []
    for frag in FRAGMENTS:
        got = _dangers(safe_html(frag))
        if got:
            bad.append((frag, got))
    assert not bad, f"{len(bad)} of {len(FRAGMENTS)} fragments kept markup that runs, e.g. {bad[:3]}"


def test_fuzz_deck_renderer_leaves_nothing_that_runs():
    """The deck's whole renderer (Markdown with raw HTML, inline and as blocks, and its own links)."""
    from companion.book.editions.slide_render import markdown_renderer

    md = markdown_renderer()
    bad = []
    for frag in FRAGMENTS[:1500]:
        for doc in (frag, f"Text {frag} more\n", f"| a | b |\n|---|---|\n| {frag} | x |\n"):
            got = _dangers(md.render(doc))
            if got:
                bad.append((doc, got))
    assert not bad, f"{len(bad)} deck renders kept markup that runs, e.g. {bad[:3]}"


def test_fuzz_checker_is_not_blind():
    """The reader above does see each danger when it is there (so a pass means something)."""
    for raw in ['<img src=x onerror=alert(1)>', '<a href="&#106;avascript:x">', '<a href="\x01java\tscript:x">',
                "<svg></svg>", '<div style="background:url(javascript:x)">', '<iframe srcdoc="x">',
                '<math><mi xlink:href="data:text/html,x">']:
        assert _dangers(raw), raw


@pytest.mark.parametrize("frag, kept", [
    ('<a href="https://example.org/x?a=1&amp;b=2">link</a>', '<a href="https://example.org/x?a=1&amp;b=2">link</a>'),
    ('<TABLE class=t><TR><TD colspan=2>1</TD></TR></TABLE>',
     '<table class="t"><tr><td colspan="2">1</td></tr></table>'),
    ('<img alt="a" src="data:image/png;base64,iVBO">', '<img alt="a" src="data:image/png;base64,iVBO">'),
    ('<a href="#sec">s</a>', '<a href="#sec">s</a>'),
])
def test_inert_markup_is_kept(frag, kept):
    """Not a blanket escape: the inert markup a chapter writes stays markup, as written."""
    assert safe_html(frag) == kept


@pytest.mark.parametrize("frag, text", [
    ("<script>alert(1)</script>", "<script>alert(1)</script>"),
    ("<svg><script>alert(1)</script>", "<svg><script>alert(1)</script>"),
    ("a <b", "a <b"),
])
def test_dropped_markup_shows_as_its_text(frag, text):
    """A tag that would run shows as the text it is (read back by a browser, the same characters)."""
    out = safe_html(frag)
    b = _Browser()
    b.feed(out)
    b.close()
    assert not [t for t, _ in b.elements if t in _RUN_TAGS]
    assert html.unescape(re.sub(r"</?[a-z]+>", "", out)) == text


# ============================================================ (b) executed notebooks that lie

def _glued(name: str, text: str, display: bool = False):
    """An output as myst-nb's ``glue`` writes it (``display=False``: mime prefix)."""
    prefix = "application/papermill.record/" if not display else ""
    meta = {"scrapbook": {"name": name, "mime_prefix": prefix}} if prefix else {"scrapbook": {"name": name}}
    return nbformat.v4.new_output("display_data", data={prefix + "text/plain": text}, metadata=meta)


def _twice_glued():
    """``x`` glued twice: first 0.1 (a stale value), then 0.25 (the value the chapter computed
    last, the one myst-nb's page shows)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("glue('x', 0.1)", outputs=[_glued("x", "0.1")]),
                nbformat.v4.new_code_cell("glue('x', 0.25)", outputs=[_glued("x", "0.25")])]
    return nb


def _page_value(nb, name):
    """What myst-nb's page shows: the last output glued under ``name`` (read here by hand)."""
    last = None
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            if (o.get("metadata") or {}).get("scrapbook", {}).get("name") == name:
                last = [v for k, v in o["data"].items() if k.endswith("text/plain")][0]
    return last


def test_name_glued_twice_execution_has_the_page_value():
    from companion.book.site.executions import glue_records

    nb = _twice_glued()
    assert glue_records(nb)["x"]["data"]["text/plain"] == _page_value(nb, "x") == "0.25"


def test_name_glued_twice_notebook_has_the_page_value():
    from companion.book.editions.notebook_cells import colab_markdown, glued_values

    nb = _twice_glued()
    got = colab_markdown("The value is {glue:text}`x:.2f`.", glued_values(nb))
    assert got.strip() == f"The value is {float(_page_value(nb, 'x')):.2f}."


def test_name_glued_twice_deck_has_the_page_value():
    from companion.book.editions.slide_plan import resolve_glue
    from companion.book.site.executions import glue_records

    nb = _twice_glued()
    got = resolve_glue("The value is {glue:text}`x:.2f`.", glue_records(nb))
    assert got == f"The value is {float(_page_value(nb, 'x')):.2f}."


HOSTILE_VALUES = ["'<img src=x onerror=alert(1)>'", "'<script>alert(1)</script>'", "'[x](javascript:alert(1))'",
                  "'<a href=\"javascript:alert(1)\">x</a>'", "'# heading <b>b</b>'"]


@pytest.mark.parametrize("raw", HOSTILE_VALUES)
def test_glued_markup_reaches_the_deck_as_text(raw):
    """A glued string with markup: the deck (rendered) shows its characters, no element."""
    from companion.book.editions.slide_plan import resolve_glue
    from companion.book.editions.slide_render import markdown_renderer

    glue = {"v": {"data": {"text/plain": raw}, "metadata": {}}}
    out = markdown_renderer().render(resolve_glue("Value: {glue:text}`v`", glue))
    b = _Browser()
    b.feed(out)
    b.close()
    assert [t for t, _ in b.elements] == ["p"], out
    text = html.unescape(re.sub(r"</?p>", "", out)).strip()
    assert text == "Value: " + eval(raw)   # the literal, as myst-nb reads it (a str literal here)


@pytest.mark.parametrize("raw", HOSTILE_VALUES)
def test_glued_markup_reaches_the_notebook_as_text(raw):
    """The notebook's Markdown (rendered as Jupyter renders it, CommonMark with raw HTML)."""
    from markdown_it import MarkdownIt

    from companion.book.editions.notebook_cells import colab_markdown

    out = MarkdownIt("commonmark", {"html": True}).render(colab_markdown("Value: {glue:text}`v`", {"v": raw}))
    b = _Browser()
    b.feed(out)
    b.close()
    assert [t for t, _ in b.elements] == ["p"], out
    assert html.unescape(re.sub(r"</?p>", "", out)).strip() == "Value: " + eval(raw)


def test_glued_figure_alt_with_markup_stays_an_attribute():
    from companion.book.editions.slide_plan import resolve_glue

    glue = {"f": {"data": {"image/png": "iVBORw0K"},
                  "metadata": {"image/png": {"alt": '"><script>alert(1)</script><img src=x onerror=alert(1) x="'}}}}
    out = resolve_glue("```{glue:figure} f\nCaption\n```\n", glue)
    b = _Browser()
    b.feed(out)
    b.close()
    assert [t for t, _ in b.elements] == ["figure", "img", "figcaption"]
    assert dict(b.elements[1][1])["alt"] == glue["f"]["metadata"]["image/png"]["alt"]


@pytest.mark.parametrize("raw, spec", [("'0.25'", ".1%"), ("'3'", ".2f"), ("7", "d"), ("'0.5'", "")])
def test_deck_formats_a_glued_value_as_the_page_does(raw, spec):
    """myst-nb's rule (:func:`companion.book.site.executions.text`, independent of the deck):
    the text read as a literal, then ``spec``: a string '0.25' with ``.1%`` is 25.0%."""
    from companion.book.editions.slide_plan import resolve_glue

    value = eval(raw)
    kind = spec[-1:] if spec else ""
    want = format(float(value) if kind in "eEfFgGn%" and kind else int(value) if kind in "bcdoxX" and kind
                  else value, spec)
    glue = {"v": {"data": {"text/plain": raw}, "metadata": {}}}
    spec_part = f":{spec}" if spec else ""
    assert resolve_glue(f"{{glue:text}}`v{spec_part}`", glue) == want


def test_table_output_with_script_next_to_text_plain_reaches_the_deck_inert():
    """A cell output whose text/html holds a table with a script and an event handler (its
    text/plain the honest value): the deck's table shows the numbers, and nothing runs."""
    from companion.book.editions.slide_plan import output_tables
    from companion.book.editions.slide_render import table_html

    page = ('<table onmouseover="alert(1)"><tr><td>0.25<script>alert(1)</script></td>'
            '<td><img src=x onerror=alert(1)></td><td><a href="jav&#x09;ascript:alert(1)">l</a></td></tr></table>')
    out = nbformat.v4.new_output("execute_result", data={"text/plain": "0.25", "text/html": page}, execution_count=1)
    tables = output_tables(out)
    assert len(tables) == 1
    shown = table_html(tables[0])
    assert not _dangers(shown), _dangers(shown)
    assert "0.25" in shown


def test_out_of_order_execution_counts_carry_each_cell_its_own_output():
    """An executed notebook run out of order (counts 3, 1, 2): each cell of the generated notebook
    gets the output of the cell with its source, never its neighbour's (matched by source)."""
    from companion.book.editions.notebook_cells import carry_outputs

    executed = nbformat.v4.new_notebook()
    srcs = ["a = 1\na", "b = 2\nb", "c = 3\nc"]
    for src, count in zip(srcs, [3, 1, 2]):
        executed.cells.append(nbformat.v4.new_code_cell(src, execution_count=count, outputs=[
            nbformat.v4.new_output("execute_result", data={"text/plain": src[-1] + "=" + src.split("= ")[1][0]},
                                   execution_count=count)]))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in reversed(srcs)]
    carry_outputs(nb, executed)
    for cell in nb.cells:
        want = cell.source[-1] + "=" + cell.source.split("= ")[1][0]
        assert [o["data"]["text/plain"] for o in cell.outputs] == [want]


def test_nbformat3_notebook_glue_is_read(tmp_path):
    """An executed notebook written in nbformat 3: read as version 4 (as the build reads it), its
    glued value is found, with the value it holds."""
    from companion.book.site.executions import glue_records

    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": "glue('x', 0.5)", "language": "python", "prompt_number": 1, "outputs": [
            {"output_type": "display_data", "metadata": {"scrapbook": {"name": "x"}}, "text": "0.5"}]}]}]}
    path = tmp_path / "c.ipynb"
    import json

    path.write_text(json.dumps(v3), encoding="utf-8")
    nb = nbformat.read(str(path), as_version=4)
    assert glue_records(nb)["x"]["data"]["text/plain"] == "0.5"


def test_carried_glued_value_with_markup_name_is_plain_text():
    """A value glued without display, its name and value holding markup: the notebook carries
    it as the text/plain line ``name = value`` (what a re-run shows), no HTML bundle."""
    from companion.book.editions.notebook_cells import carry_outputs

    name, value = "<img src=x onerror=alert(1)>", "'<script>alert(1)</script>'"
    executed = nbformat.v4.new_notebook()
    executed.cells = [nbformat.v4.new_code_cell("glue(n, v)", outputs=[_glued(name, value)])]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("glue(n, v)")]
    carry_outputs(nb, executed)
    (out,) = nb.cells[0].outputs
    assert out["data"] == {"text/plain": f"{name} = {value}"}


def test_glued_figure_alt_with_markup_in_the_notebook_is_text():
    from markdown_it import MarkdownIt

    from companion.book.editions.notebook_cells import paste_glued_figures
    from companion.book.site.executions import Execution

    alt = 'x](javascript:alert(1)) <img src=x onerror=alert(1)> "'
    ex = Execution("c", glue={"f": {"data": {"image/png": "iVBORw0K"}, "metadata": {"image/png": {"alt": alt}}}})
    text, _ = paste_glued_figures("```{glue:figure} f\nCap\n```\n", ex)
    out = MarkdownIt("commonmark", {"html": True}).render(text)
    b = _Browser()
    b.feed(out)
    b.close()
    assert [t for t, _ in b.elements] == ["p", "img", "p", "em"], out
    img = dict(b.elements[1][1])
    assert img["src"] == "data:image/png;base64,iVBORw0K"
    # the alt as written into the Markdown, read back (markdown-it-py drops entities from an alt,
    # so the source is read: entities decoded, backslash escapes removed)
    written = re.match(r"!\[(.*)\]\(data:", text).group(1)
    assert re.sub(r"\\(.)", r"\1", html.unescape(written)) == alt.replace("[", "(").replace("]", ")")


def test_book_links_of_a_page_named_with_markup_stay_one_address(tmp_path):
    """A page whose file name holds ``) <img onerror=...>``: its address, pasted into a
    notebook's Markdown link, is one address (percent-encoded), never a second element."""
    from urllib.parse import unquote

    from markdown_it import MarkdownIt

    from companion.book.site.chapters import book_links

    doc = "book/a) <img src=x onerror=alert(1)> \"q\""
    (tmp_path / "book").mkdir()
    (tmp_path / f"{doc}.md").write_text("---\njupytext:\n  x: 1\nkernelspec:\n  name: python3\n---\n# A\n",
                                        encoding="utf-8")
    (tmp_path / "_toc.yml").write_text(f"root: '{doc}'\n", encoding="utf-8")
    site = "https://o.github.io/r/"
    url = book_links(tmp_path, site)[doc]
    out = MarkdownIt("commonmark", {"html": True}).render(f"See [the page]({url}).")
    b = _Browser()
    b.feed(out)
    b.close()
    assert [t for t, _ in b.elements] == ["p", "a"], out
    assert unquote(dict(b.elements[1][1])["href"]) == f"{site}{doc}.html"


# ============================================================ build status: run sets as recorded

@pytest.mark.parametrize("device, kind", [
    ("Tesla T4", "GPU"), ("NVIDIA H100 80GB HBM3", "GPU"), ("AMD Instinct MI300X", "GPU"), ("cuda:0", "GPU"),
    ("cpu (2 threads)", "CPU"), ("AMD EPYC 7B13", "CPU"), ("Intel(R) Xeon(R) CPU @ 2.20GHz", "CPU"),
    ("?", "unrecorded"), ("TPU v4", "unrecorded"), ("mps", "unrecorded"), ("", "unrecorded"), (None, "unrecorded"),
    ("<script>gpu</script>", "GPU"), (3, "unrecorded"),
])
def test_device_kind_reads_what_a_run_recorded(device, kind):
    from companion.book.site.build_status import device_kind

    assert device_kind(device) == kind


def test_cached_run_sets_sum_what_the_runs_recorded(tmp_path):
    """Hours and steps per set, summed by hand from the provenance written here; a run without
    history.csv (unfinished) and a duration that is no number count nothing."""
    import json

    from companion.book.site.build_status import cached_run_sets

    runs = [("s-encoder-a", 3600, 100, "Tesla T4", True), ("s-decoder-b", 1800, 100, "cpu", True),
            ("s-encoder-c", 7200, 50, "Tesla T4", False), ("s-encoder-d", "9000", 100, "Tesla T4", True),
            ("s-encoder-e", True, 100, "Tesla T4", True)]
    for name, secs, steps, device, finished in runs:
        d = tmp_path / name
        d.mkdir()
        (d / "provenance.json").write_text(json.dumps({"duration_s": secs, "config": {"steps": steps, "corpus": "c"},
                                                       "hardware": {"device": device}}), encoding="utf-8")
        if finished:
            (d / "history.csv").write_text("step,loss\n", encoding="utf-8")
    (row,) = cached_run_sets(tmp_path)
    counted = [r for r in runs if r[4]]
    hours = sum(r[1] for r in counted if type(r[1]) in (int, float)) / 3600
    assert (row["set"], row["runs"], row["hours"], row["steps"], row["kind"]) == \
        ("s", len(counted), round(hours, 2), "100", "CPU and GPU")
    # the two finished runs whose time is no number are counted apart, not read as 0 h
    assert row["runs without a recorded time"] == sum(1 for r in counted if type(r[1]) not in (int, float))


# ============================================================ the execution cache, seeded from records that lie

_CHAPTER = ("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
            "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n# C\n\n"
            "```{code-cell} ipython3\nx = 1\nx\n```\n")


@pytest.mark.parametrize("record", [{"docname": "book/c"}, {"docname": "book/c", "execution_seconds": "soon"}])
def test_seed_refuses_a_record_without_its_time_in_one_line(tmp_path, record):
    """A record of an executed chapter that lacks ``execution_seconds`` (or gives no number): a
    one-line refusal naming the record, not a KeyError, and nothing seeded in its name."""
    import json

    from companion.base.errors import CompanionError
    from companion.book.site.book_cache import seed

    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "c.md").write_text(_CHAPTER, encoding="utf-8")
    executed = tmp_path / "executed"
    executed.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# C"), nbformat.v4.new_code_cell("x = 1\nx", execution_count=1,
                outputs=[nbformat.v4.new_output("execute_result", data={"text/plain": "1"}, execution_count=1)])]
    nb.metadata = {"jupytext": {"text_representation": {"extension": ".md", "format_name": "myst"}},
                   "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    nbformat.write(nb, str(executed / "c.ipynb"))
    (executed / "c.json").write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises((ValueError, CompanionError)) as err:
        seed(executed, tmp_path / "cache", root=tmp_path)
    msg = str(err.value)
    assert "\n" not in msg and "c.json" in msg and "execution_seconds" in msg, msg


@pytest.mark.parametrize("page", [
    "<b>0.5</b><script>alert(1)</script>",
    '<table><tr><td onmouseover="alert(1)">0.5</td></tr></table>',
    '<a href="jav&#x09;ascript:alert(1)">0.5</a>',
    "<svg><script>alert(1)</script></svg>",
])
def test_carried_html_output_with_script_keeps_the_computed_text_and_runs_nothing(page):
    """A cell output with text/html holding a script next to the honest text/plain: the notebook
    carries the computed text (text/plain as it was) and no HTML that runs."""
    from companion.book.editions.notebook_cells import carry_outputs

    executed = nbformat.v4.new_notebook()
    executed.cells = [nbformat.v4.new_code_cell("show()", outputs=[
        nbformat.v4.new_output("display_data", data={"text/plain": "0.5", "text/html": page})])]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("show()")]
    carry_outputs(nb, executed)
    (out,) = nb.cells[0].outputs
    assert out["data"]["text/plain"] == "0.5"
    carried = out["data"].get("text/html", "")
    assert not _dangers("".join(carried) if isinstance(carried, list) else carried)


def test_carried_inert_html_output_is_kept_as_computed():
    """A table a chapter shows (pandas-like, with a style block) is carried as it is."""
    from companion.book.editions.notebook_cells import carry_outputs

    page = '<style scoped>td {color: red}</style><table class="dataframe"><tr><td>0.5</td></tr></table>'
    executed = nbformat.v4.new_notebook()
    executed.cells = [nbformat.v4.new_code_cell("df", outputs=[
        nbformat.v4.new_output("execute_result", data={"text/plain": "0.5", "text/html": page}, execution_count=1)])]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("df")]
    carry_outputs(nb, executed)
    assert nb.cells[0].outputs[0]["data"] == {"text/plain": "0.5", "text/html": page}


# ----------------------------------------------------------- carried outputs: inert or not carried

def test_fuzz_what_inert_html_lets_through_runs_nothing():
    """Every fuzzed fragment that :func:`inert_html` calls inert (so a notebook carries it as it
    is) has, read as a browser reads it, no element or attribute that runs, fetches or submits;
    a ``<style>`` block is allowed when no rule in it fetches anything.  The check is not vacuous:
    some fragments are let through and most are not."""
    from companion.book.site.markup import inert_html

    passed, bad = 0, []
    for frag in FRAGMENTS:
        if not inert_html(frag):
            continue
        passed += 1
        b = _Browser()
        b.feed(frag)
        b.close()
        for tag, attrs in b.elements:
            if tag in _RUN_TAGS - {"style"} or any(
                    n.lower().startswith("on") or (n.lower() in _URL_ATTRS and _scheme(v or "") not in (None, *_OK_SCHEMES))
                    for n, v in attrs):
                bad.append(frag)
    assert not bad, bad[:3]
    assert 50 < passed < len(FRAGMENTS) // 2, passed


@pytest.mark.parametrize("mime, value, carried", [
    ("text/markdown", "**0.5** of [the runs](https://example.org/runs)", True),
    ("text/markdown", "[the runs](javascript:alert(1))", False),
    ("text/markdown", "[the runs][r]\n\n[r]: JaVa&#x09;script:alert(1)", False),
    ("text/markdown", "$\\href{javascript:alert(1)}{x}$", False),
    ("text/markdown", "<img src=x onerror=alert(1)>", False),
    ("image/svg+xml", "<svg><script>alert(1)</script></svg>", False),
    ("application/javascript", "alert(1)", False),
    ("text/html", "<table><tr><td style=\"background:url(https://evil.example/x)\">0.5</td></tr></table>", False),
    ("text/html", "<style>td {color: red}</style><table><tr><td>0.5</td></tr></table>", True),
])
def test_a_carried_rich_output_is_kept_only_when_inert(mime, value, carried):
    """Markdown, SVG, JavaScript and HTML outputs: carried as they are only when nothing in them
    runs or fetches; otherwise left out, the text/plain beside them kept."""
    from companion.book.editions.notebook_cells import carry_outputs

    executed = nbformat.v4.new_notebook()
    executed.cells = [nbformat.v4.new_code_cell("show()", outputs=[
        nbformat.v4.new_output("display_data", data={"text/plain": "0.5", mime: value})])]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("show()")]
    carry_outputs(nb, executed)
    (out,) = nb.cells[0].outputs
    assert out["data"]["text/plain"] == "0.5"
    assert (mime in out["data"]) is carried


def test_the_real_tables_a_chapter_shows_are_inert_and_pandas_unescaped_styler_is_not():
    """What a chapter's kernel shows for a table (:func:`companion.book.tables.readable`, for a
    DataFrame and a Styler) and pandas' own DataFrame HTML are carried as they are.  pandas'
    Styler writes cell text unescaped (a model named ``bert <base>`` becomes a ``<base>``
    element), so its raw HTML is not carried."""
    import pandas as pd

    from companion.book.site.markup import inert_html
    from companion.book.tables import readable

    df = pd.DataFrame({"symmetry": [0.25, -0.5], "model": ["bert <base>", "a & b"]})
    assert inert_html(readable(df))
    assert inert_html(readable(df.style.format(precision=2).hide(axis="index")))
    assert inert_html(df._repr_html_())
    assert "<base>" in df.style.to_html() and not inert_html(df.style.to_html())
    assert inert_html(df.style.format(escape="html").background_gradient(subset=["symmetry"]).to_html())


def test_the_survey_explorer_is_carried_and_a_forged_one_is_not():
    """The survey's explorer (the package's own script around embedded JSON) is carried, even
    with a model named ``</script><script>...``; the same page with a script added, or with data
    that would leave its script, is not, and the cell says why instead of a bare repr."""
    from companion.book.editions.notebook_cells import carry_outputs
    from companion.book.explorer import explorer_html, is_explorer_html

    rec = {"n": 1, "heat": "AA==", "scale": 1.0, "rows": [1.0], "cols": [1.0], "symmetry": 0.5, "directionality": 0.0}
    page = explorer_html({"</script><script>alert(1)</script>": {"encoder": [
        {"index": 0, "all": rec, "heads": [], "n_heads": 1, "d": 1}]}})
    assert is_explorer_html(page)
    forged = [page + "<script>alert(1)</script>",
              page.replace("\\u003c/script\\u003e\\u003cscript\\u003e", "</script><script>", 1),
              page.replace('"directionality":0.0', '"directionality":0.0,"x":alert(1)', 1)]
    assert forged[1] != page and forged[2] != page
    for html_out, kept in [(page, True)] + [(f, False) for f in forged]:
        executed = nbformat.v4.new_notebook()
        executed.cells = [nbformat.v4.new_code_cell("HTML(page)", outputs=[nbformat.v4.new_output(
            "display_data", data={"text/plain": "<IPython.core.display.HTML object>", "text/html": html_out})])]
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("HTML(page)")]
        carry_outputs(nb, executed)
        (out,) = nb.cells[0].outputs
        assert ("text/html" in out["data"]) is kept
        if not kept:
            assert "run the cell" in out["data"]["text/plain"]
