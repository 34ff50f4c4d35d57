"""The package's layers (.importlinter, ARCHITECTURE.md) hold, the check that says so can
fail, and every module is used by the book, the CLI or a test."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "companion"
LINT = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed (pip install -e '.[test]')")


def lint(package_parent: Path, cwd: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` with the repository's contract, on the package found in ``package_parent``."""
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run([str(LINT), "--config", str(ROOT / ".importlinter"), "--no-cache"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def copy_package(tmp_path: Path) -> Path:
    dest = tmp_path / "src" / "companion"
    shutil.copytree(SRC, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_the_package_keeps_its_layers_and_has_no_circle():
    out = lint(ROOT / "src", ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Contracts: 3 kept, 0 broken." in out.stdout


def test_no_import_is_excused_from_the_contracts():
    assert "ignore_imports" not in (ROOT / ".importlinter").read_text(encoding="utf-8")


def test_training_is_split_by_concern_with_only_its_command_at_the_top():
    train = SRC / "train"
    assert sorted(p.stem for p in train.glob("*.py")) == ["__init__", "cli"]
    assert sorted(p.name for p in train.iterdir() if (p / "__init__.py").is_file()) == [
        "models", "runner", "studies", "text"]


def test_the_corpus_layer_importing_a_study_breaks_the_training_contract(tmp_path):
    pkg = copy_package(tmp_path)
    tokens = pkg / "train" / "text" / "tokens.py"
    tokens.write_text(tokens.read_text() + "\nfrom ..studies import evidence  # deliberately wrong: text -> studies\n")
    out = lint(tmp_path / "src", tmp_path)
    assert out.returncode != 0
    assert "Training's subpackages, by concern, each import only those below it BROKEN" in out.stdout
    assert "companion.train.text.tokens -> companion.train.studies.evidence" in out.stdout


def test_a_circle_inside_a_training_subpackage_breaks_the_contract(tmp_path):
    pkg = copy_package(tmp_path)
    corpora = pkg / "train" / "text" / "corpora.py"   # english_mix builds on corpora: the old circle back
    corpora.write_text(corpora.read_text() + "\nfrom . import english_mix  # deliberately wrong: a circle\n")
    out = lint(tmp_path / "src", tmp_path)
    assert out.returncode != 0
    assert re.search(r"No circle of imports.*BROKEN", out.stdout.replace("\n", " "))


def test_an_import_from_a_higher_layer_breaks_the_contract(tmp_path):
    pkg = copy_package(tmp_path)
    scores = pkg / "core" / "scores.py"
    scores.write_text(scores.read_text() + "\nfrom ..book.editions import notebooks  # deliberately wrong: core -> book\n")
    out = lint(tmp_path / "src", tmp_path)
    assert out.returncode != 0
    assert "Each layer imports only the layers below it BROKEN" in out.stdout
    assert "companion.core.scores -> companion.book.editions.notebooks" in out.stdout


def test_a_circle_between_two_modules_of_a_layer_breaks_the_contract(tmp_path):
    pkg = copy_package(tmp_path)
    solutions = pkg / "book" / "editions" / "solutions.py"  # student and notebooks both import it
    solutions.write_text(solutions.read_text() + "\nfrom . import notebooks  # deliberately wrong: a circle\n")
    out = lint(tmp_path / "src", tmp_path)
    assert out.returncode != 0
    assert re.search(r"No circle of imports.*BROKEN", out.stdout.replace("\n", " "))
    assert "companion.book" in out.stdout


def test_a_module_outside_every_layer_breaks_the_contract(tmp_path):
    pkg = copy_package(tmp_path)
    (pkg / "stray.py").write_text('"""A module in no layer."""\n')
    out = lint(tmp_path / "src", tmp_path)
    assert out.returncode != 0
    assert "companion.stray" in out.stdout + out.stderr


def _modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] != "__init__" and "__pycache__" not in parts:
            found[".".join(parts)] = path
    return found


def test_every_module_is_used_by_the_book_the_cli_or_a_test():
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("companion", cache_dir=None)
    texts = []
    for pattern in ["tests/**/*.py", "book/**/*.md", "Makefile", ".ci/*", "_config.yml", "pyproject.toml",
                    "conftest.py", "data/runs/*.sh"]:
        texts += [p.read_text(encoding="utf-8") for p in ROOT.glob(pattern) if p.is_file()]
    text = "\n".join(texts)
    unused = []
    for name in sorted(_modules()):
        parent, _, leaf = name.rpartition(".")
        if parent == "companion.commands":  # the CLI loads every module of commands (companion.cli)
            continue
        if leaf == "__main__":   # run by `python -m companion` (tests/test_hostile_round17_cli.py)
            continue
        imported = graph.find_modules_that_directly_import(name) - {name}
        named = re.search(rf"\b{re.escape(name)}\b", text) or re.search(
            rf"from {re.escape(parent)} import [^\n]*\b{leaf}\b", text)
        if not imported and not named:
            unused.append(name)
    assert not unused, f"modules nothing uses (remove them, or use them): {unused}"


def test_the_cli_loads_every_command_module():
    from companion import commands

    names = {p.stem for p in Path(commands.__file__).parent.glob("*.py") if p.stem != "__init__"}
    cli = (SRC / "cli.py").read_text(encoding="utf-8")
    assert "pkgutil.iter_modules" in cli or "iter_modules" in cli, "companion.cli no longer discovers commands"
    out = subprocess.run([sys.executable, "-m", "companion.cli", "--help"], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    for name in names:
        assert name in out.stdout, f"command module {name} is not offered by `companion --help`"
