"""constraints.txt pins what `make env` installs, so upstream releases cannot turn CI red."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python >= 3.11")

ROOT = Path(__file__).resolve().parents[1]


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement string (PEP 503)."""
    name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1)
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            spec = line.split(";", 1)[0].strip()
            assert "==" in spec, f"constraints.txt: {line!r} is not an exact pin"
            name, version = spec.split("==", 1)
            pins[_name(name)] = version
    return pins


def test_every_dependency_that_make_env_installs_is_pinned():
    project = _project()
    wanted = list(project["dependencies"])
    for extra in ("book", "test"):  # what `make env` installs: .[book,test]
        wanted += project["optional-dependencies"][extra]
    pins = _pins()
    missing = sorted({_name(r) for r in wanted} - {"torch"} - set(pins))
    assert not missing, f"not in constraints.txt: {missing}; run `make lock` after installing them"


def test_torch_and_the_weight_packages_are_left_to_their_own_pins():
    """torch comes from TORCH_SPEC and the weights from the Makefile's exact pins: a second
    pin in constraints.txt could contradict them."""
    pins = _pins()
    makefile = (ROOT / "Makefile").read_text()
    weights = {_name(m) for m in re.findall(r"([A-Za-z0-9][A-Za-z0-9._-]*)==", makefile)}
    assert "torch" not in pins
    assert not weights & set(pins), weights & set(pins)


def test_exact_pins_in_pyproject_agree_with_the_constraints():
    project = _project()
    pins = _pins()
    for extra, reqs in project["optional-dependencies"].items():
        for r in reqs:
            m = re.match(r"\s*([A-Za-z0-9._-]+)\s*==\s*([^\s;,]+)", r)
            if m and _name(m.group(1)) in pins:
                assert pins[_name(m.group(1))] == m.group(2), (extra, r, pins[_name(m.group(1))])
