"""Modules that moved into the layered subpackages keep working under their old names, as
the same module objects, with a DeprecationWarning that names the new place."""

from __future__ import annotations

import importlib
import sys

import pytest

import companion


@pytest.mark.parametrize("old, new", sorted(companion.MOVED.items()))
def test_an_old_module_name_gives_the_module_at_its_new_place_and_says_so(old, new):
    sys.modules.pop(f"companion.{old}", None)
    with pytest.warns(DeprecationWarning, match=rf"companion.{old} moved to companion.{new}; .*goes in release 0\.4\.0"):
        moved = importlib.import_module(f"companion.{old}")
    assert moved is importlib.import_module(f"companion.{new}")


def test_every_moved_name_is_a_module_that_exists_and_no_name_shadows_a_package():
    import pkgutil
    from pathlib import Path

    here = Path(companion.__file__).parent
    top = {m.name for m in pkgutil.iter_modules([str(here)])}
    assert not set(companion.MOVED) & top              # an old name never hides a module or package of today
    for new in companion.MOVED.values():
        assert (here / (new.replace(".", "/") + ".py")).is_file(), new


def test_a_name_that_never_existed_is_still_not_found():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("companion.no_such_module")


def test_importing_an_old_name_leaves_the_modules_own_spec_in_place():
    """The import machinery writes the alias's spec onto the module it is given; a module
    reached once by its old name must still say where it lives (importlib, reload, tools)."""
    import importlib.util
    import warnings

    sys.modules.pop("companion.train.evidence", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        moved = importlib.import_module("companion.train.evidence")
    assert moved.__spec__.name == "companion.train.studies.evidence"
    assert moved.__spec__.origin and moved.__spec__.origin.endswith("studies/evidence.py")
    assert importlib.util.find_spec("companion.train.studies.evidence").origin == moved.__spec__.origin
    importlib.reload(moved)


def test_the_statistics_old_names_under_the_rules_reader_warn_and_are_the_same_objects():
    from companion.rules import statistics, verdicts

    with pytest.warns(DeprecationWarning, match=r"companion.rules.verdicts.paired_t moved to companion.rules.statistics.*"
                                                r"goes in release 0\.4\.0"):
        old = verdicts.paired_t
    assert old is statistics.paired_t
    with pytest.raises(AttributeError):
        verdicts.no_such_name


@pytest.mark.parametrize("name", ["directional_power", "threshold_power", "equivalence_power", "detectable_effect"])
def test_the_power_solvers_old_names_under_the_rules_reader_lead_to_their_new_module(name):
    from companion.rules import power, verdicts

    with pytest.warns(DeprecationWarning, match=rf"companion.rules.verdicts.{name} moved to companion.rules.power.{name}"):
        old = getattr(verdicts, name)
    assert old is getattr(power, name)


# ------------------------------------------ modules split by concern (issue 75) keep their names

SPLIT = {"companion.train.runner.loop": "companion.train.runner.",
         "companion.survey.scoring": "companion.survey.",
         "companion.judge.sentences": "companion.judge.",
         "companion.zoo.registry": "companion.zoo.",
         "companion.rules.rulebook": "companion.rules."}


def _imported_names(module: str) -> set[str]:
    """The names the book, the docs, the package and the tests import from ``module`` or name
    as ``module.NAME``."""
    import re
    from pathlib import Path

    root = Path(companion.__file__).resolve().parents[2]
    pattern = re.compile(rf"from {re.escape(module)} import (\([^)]*\)|[^\n]*)")
    relative = re.compile(rf"from \.+(?:\w+\.)*{re.escape(module.rsplit('.', 1)[1])} import (\([^)]*\)|[^\n]*)")
    dotted = re.compile(rf"\b{re.escape(module)}\.(\w+)")
    names = set()
    texts = [*root.glob("book/**/*.md"), *root.glob("docs/**/*.md"), *root.glob("src/**/*.py"), *root.glob("tests/*.py"),
             *root.glob("bench/*.py"), *(root / n for n in ("README.md", "CONTRIBUTING.md", "ARCHITECTURE.md"))]
    for path in texts:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        names |= set(dotted.findall(text))
        for m in [*pattern.finditer(text), *(relative.finditer(text) if path.suffix == ".py" else [])]:
            listed = re.sub(r"#[^\n]*", "", m.group(1)).strip("()")
            names |= {n.split(" as ")[0].strip() for n in listed.split(",")}
    return {n for n in names if n.isidentifier()}


@pytest.mark.parametrize("module", sorted(SPLIT))
def test_a_split_module_still_offers_every_name_imported_from_it(module):
    """Every name the book, the package or the tests import from a split module is in its
    ``__all__`` and is the object defined in the package where it lives now."""
    mod = importlib.import_module(module)
    imported = _imported_names(module)
    assert imported, module   # the scan finds the book's imports
    assert not imported - set(mod.__all__), f"{module} no longer documents {sorted(imported - set(mod.__all__))}"
    for name in mod.__all__:
        obj = getattr(mod, name)
        home = getattr(obj, "__module__", None)
        if home is not None and callable(obj):
            assert home.startswith(SPLIT[module]), (name, home)
            assert getattr(importlib.import_module(home), name) is obj
