"""Lecture slides from the chapters: one reveal.js deck per chapter, readable offline.

::

    python -m companion.book.slides           # after `make book`: -> _build/slides/<chapter>.slides.html

A deck is made from the chapter as the book executed it (``_build/jupyter_execute``): its
text, its theorems and definitions as boxed blocks, its equations typeset by MathJax, its
figures (the glued ones included) and every glued number filled in. Code and printed
tables stay in the book. Solutions are left out (the decks can be handed to students).

Slide boundaries: every heading (``#``, ``##``, ``###``) starts a slide, and a MyST comment
line ``% slide`` (invisible in the book) starts one anywhere else.

Nothing is fetched when a deck is opened: reveal.js comes from the npm registry at set-up
(:func:`vendor_reveal`, pinned and checked against the registry's sha512), MathJax from the
``sphinx-mathjax-offline`` package that the book already uses; both are copied next to the
decks.
"""

from __future__ import annotations

import argparse
import ast
import html
import json
import re
import shutil
import sys
from pathlib import Path

__all__ = ["REVEAL_VERSION", "REVEAL_INTEGRITY", "vendor_reveal", "resolve_glue", "split_slides",
           "chapter_slides", "deck_html", "build_slides", "main"]

REVEAL_VERSION = "5.2.1"
#: the npm registry's integrity string for reveal.js 5.2.1 (``npm view reveal.js@5.2.1 dist.integrity``)
REVEAL_INTEGRITY = "sha512-r7//6mIM5p34hFiDMvYfXgyjXqGRta+/psd9YtytsgRlrpRzFv4RbH76TXd2qD+7ZPZEbpBDhdRhJaFgfQ7zNQ=="

_SLIDE_MARK = re.compile(r"^%\s*slide\s*$")
_HEADING = re.compile(r"^#{1,3} ")
_GLUE_ROLE = re.compile(r"\{glue(?::(?:text|md))?\}`(?P<name>[^`:]+)(?::(?P<fmt>[^`]*))?`")
_GLUE_FIGURE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{glue:figure\}\s+(?P<name>\S+)\s*\n(?P<body>.*?)^(?P=fence)\s*$",
                          re.M | re.S)


# ----------------------------------------------------------------------------- vendoring
def vendor_reveal(cache: Path | None = None) -> Path:
    """The folder of reveal.js's ``dist`` files, fetched once from the npm registry.

    The package tarball is checked against :data:`REVEAL_INTEGRITY` before anything is
    extracted; a mismatch is an error naming both digests (:func:`companion.book.vendor.npm_package`,
    which also fetches axe-core for the accessibility audit).
    """
    from .vendor import npm_package

    return npm_package("reveal.js", REVEAL_VERSION, REVEAL_INTEGRITY, "dist", "reveal.js", cache)


def _mathjax_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the slides need MathJax from sphinx-mathjax-offline: pip install -e '.[book]'")
    return Path(list(spec.submodule_search_locations)[0]) / "static" / "mathjax"


# ----------------------------------------------------------------------------- content
def _glue_value(entry: dict):
    data = entry.get("data", {})
    text = data.get("text/plain", "")
    numpy_scalar = re.fullmatch(r"np\.\w+\((.*)\)", text)  # e.g. np.float64(0.5)
    try:
        return ast.literal_eval(numpy_scalar.group(1) if numpy_scalar else text)
    except (ValueError, SyntaxError):
        return text


def _figure_alt(metadata, default: str) -> str:
    """The alt text the book's kernels attach to a figure (companion.book.figures.source_data)."""
    alt = ((metadata or {}).get("image/png") or {}).get("alt") if isinstance(metadata, dict) else None
    return str(alt) if alt else default


def resolve_glue(text: str, glue: dict) -> str:
    """Fill every glued number and figure of a Markdown cell from the chapter's glue store.

    A glued name that the store lacks is an error: a slide never shows a placeholder.
    """
    def missing(name):
        raise KeyError(f"glued name {name!r} is not in the chapter's executed outputs (is the book built?)")

    def figure(m):
        name = m.group("name")
        if name not in glue or "image/png" not in glue[name].get("data", {}):
            missing(name)
        caption = "\n".join(ln for ln in m.group("body").splitlines() if not ln.startswith(":")).strip()
        png = glue[name]["data"]["image/png"]
        alt = _figure_alt(glue[name].get("metadata"), name)
        return (f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{png}"/>'
                f"<figcaption>\n\n{caption}\n\n</figcaption></figure>")

    def role(m):
        name, fmt = m.group("name"), m.group("fmt")
        if name not in glue:
            missing(name)
        value = _glue_value(glue[name])
        return format(value, fmt) if fmt else str(value)

    return _GLUE_ROLE.sub(role, _GLUE_FIGURE.sub(figure, text))


def split_slides(cells: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """``[(kind, content)]`` (kind ``markdown`` or ``image``) cut into slides at headings and
    ``% slide`` marks; empty slides are dropped."""
    slides: list[list[tuple[str, str]]] = [[]]
    for kind, content in cells:
        if kind != "markdown":
            slides[-1].append((kind, content))
            continue
        chunk: list[str] = []
        for line in content.splitlines():
            if _SLIDE_MARK.match(line) or _HEADING.match(line):
                if chunk:
                    slides[-1].append(("markdown", "\n".join(chunk)))
                    chunk = []
                slides.append([])
                if _SLIDE_MARK.match(line):
                    continue
            chunk.append(line)
        if "\n".join(chunk).strip():
            slides[-1].append(("markdown", "\n".join(chunk)))
    return [s for s in slides if any(c.strip() for _, c in s)]


def _markdown():
    from markdown_it import MarkdownIt
    from mdit_py_plugins.amsmath import amsmath_plugin
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = (MarkdownIt("commonmark", {"html": True}).enable("table")
          .use(dollarmath_plugin, double_inline=True).use(amsmath_plugin))
    esc = html.escape
    md.add_render_rule("math_inline", lambda self, t, i, o, e: f"\\({esc(t[i].content)}\\)")
    md.add_render_rule("math_inline_double", lambda self, t, i, o, e: f"\\[{esc(t[i].content)}\\]")
    md.add_render_rule("math_block", lambda self, t, i, o, e: f"<p>\\[{esc(t[i].content)}\\]</p>\n")
    md.add_render_rule("math_block_label", lambda self, t, i, o, e: f"<p>\\[{esc(t[i].content)}\\]</p>\n")
    md.add_render_rule("amsmath", lambda self, t, i, o, e: f"<p>{esc(t[i].content)}</p>\n")
    return md


def chapter_slides(executed: Path, glue: dict) -> tuple[str, list[str]]:
    """``(title, [slide HTML])`` of one executed chapter notebook."""
    import nbformat

    from .notebooks import colab_markdown
    from .student import strip_solutions

    nb = nbformat.read(executed, as_version=4)
    cells: list[tuple[str, str]] = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            text = resolve_glue(strip_solutions(cell.source), glue)
            cells.append(("markdown", colab_markdown(text)))
        elif cell.cell_type == "code":
            for out in cell.get("outputs", []):
                if "scrapbook" in out.get("metadata", {}):
                    continue  # a glued value, shown where the text uses it
                png = out.get("data", {}).get("image/png")
                if png:
                    cells.append(("image", (png, _figure_alt(out.get("metadata"), "figure"))))
    md = _markdown()
    title = next((ln[2:].strip() for kind, c in cells if kind == "markdown" for ln in c.splitlines()
                  if ln.startswith("# ")),
                 executed.stem)
    slides = []
    for slide in split_slides(cells):
        parts = [md.render(c) if kind == "markdown" else
                 f'<img class="output" alt="{html.escape(c[1])}" src="data:image/png;base64,{c[0]}"/>'
                 for kind, c in slide]
        slides.append("\n".join(parts))
    return title, slides


def deck_html(title: str, slides: list[str], vendor: str = "vendor") -> str:
    """A reveal.js page with ``slides`` (HTML), reading reveal.js and MathJax from ``vendor``."""
    # a slide taller than the screen scrolls (overflow-y: auto); tabindex makes that region
    # reachable by keyboard (axe: scrollable-region-focusable)
    sections = "\n".join(f'<section tabindex="0">\n{s}\n</section>' for s in slides)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"/>
<title>{html.escape(title)}: slides</title>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<link rel="stylesheet" href="{vendor}/reveal/reveal.css"/>
<link rel="stylesheet" href="{vendor}/reveal/theme/white.css"/>
<style>
.reveal .slides section {{ text-align: left; font-size: 0.5em; height: 100%; overflow-y: auto; }}
.reveal .slides section h1, .reveal .slides section h2, .reveal .slides section h3 {{ text-transform: none; }}
.reveal img {{ max-height: 55vh; }}
.reveal blockquote {{ width: 95%; background: #f4f6fa; box-shadow: none; font-style: normal; }}
.reveal figcaption {{ font-size: 0.7em; }}
</style>
<script>
window.MathJax = {{ tex: {{ inlineMath: [["\\\\(", "\\\\)"]], displayMath: [["\\\\[", "\\\\]"]],
                           processEnvironments: true }},
                   startup: {{ typeset: false }} }};
</script>
<script src="{vendor}/mathjax/tex-chtml.js"></script>
</head><body>
<div class="reveal"><div class="slides">
{sections}
</div></div>
<script src="{vendor}/reveal/reveal.js"></script>
<script>
Reveal.initialize({{ hash: true, center: false, width: 1280, height: 800 }})
  .then(() => MathJax.startup.promise)
  .then(() => MathJax.typesetPromise())
  .then(() => {{ document.body.dataset.typeset = "done"; }});
</script>
</body></html>
"""


def build_slides(root: Path | str = ".", out: Path | str | None = None) -> list[Path]:
    """One deck per executed chapter of the book at ``root`` into ``out`` (``_build/slides``)."""
    from .notebooks import book_chapters

    root = Path(root).resolve()
    out = Path(out) if out is not None else root / "_build" / "slides"
    executed = root / "_build" / "jupyter_execute"
    if not executed.is_dir():
        raise FileNotFoundError(f"no executed chapters under {executed}; build the book first (make book)")
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a folder; give a folder for the decks (it is kept as it is).")
    chapters = book_chapters(root)   # checked before anything is written
    for ch in chapters:
        nb_path = executed / f"{ch.docname}.ipynb"
        if not nb_path.is_file():
            raise FileNotFoundError(f"{ch.docname} was not executed by the book build ({nb_path} is missing)")
    out.mkdir(parents=True, exist_ok=True)
    vendor = out / "vendor"
    for name, src in (("reveal", vendor_reveal()), ("mathjax", _mathjax_dir())):
        if not (vendor / name).is_dir():
            shutil.copytree(src, vendor / name)
    decks = []
    for ch in chapters:
        nb_path = executed / f"{ch.docname}.ipynb"
        glue_path = nb_path.with_suffix(".glue.json")
        glue = json.loads(glue_path.read_text()) if glue_path.is_file() else {}
        title, slides = chapter_slides(nb_path, glue)
        target = out / f"{Path(ch.docname).name}.slides.html"
        target.write_text(deck_html(title, slides), encoding="utf-8")
        decks.append(target)
    return decks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m companion.book.slides",
                                 description="Build one reveal.js deck per chapter (offline).")
    ap.add_argument("--root", default=".", help="repository root (holds _toc.yml)")
    ap.add_argument("--out", default=None, help="output folder (default <root>/_build/slides)")
    ap.add_argument("--vendor-only", action="store_true", help="only fetch and check reveal.js (set-up)")
    args = ap.parse_args(argv)
    if args.out is not None and not args.out.strip():   # "" would be the current folder
        ap.error("--out is empty; give the folder for the decks, or leave --out out (<root>/_build/slides)")
    import yaml

    try:
        if args.vendor_only:
            print(f"reveal.js {REVEAL_VERSION}: {vendor_reveal()}")
            return 0
        decks = build_slides(args.root, args.out)
    except (OSError, KeyError, RuntimeError, ValueError) as err:  # ValueError: CompanionError
        print(f"error: {' '.join(str(err).split()) or type(err).__name__}", file=sys.stderr)
        return 2
    except yaml.YAMLError as err:  # a malformed _toc.yml
        print(f"error: {Path(args.root) / '_toc.yml'} is not valid YAML ({' '.join(str(err).split())[:200]})",
              file=sys.stderr)
        return 2
    for d in decks:
        print(d)
    print(f"{len(decks)} deck(s) written", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
