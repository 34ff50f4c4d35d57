"""Adding a chapter takes three places (CONTRIBUTING.md, "Add a chapter"): its file, its line in
_toc.yml and its entry in data/chapters.yaml.  Tried in a temporary copy of the repository:
a one-cell chapter with one glued number and one label, added in those three places only,
passes the tests that enumerate the book's chapters; without the registry entry it is refused
by name."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from companion.book.site.chapters import JUPYTEXT_HEADER

ROOT = Path(__file__).resolve().parents[1]

TRIAL = JUPYTEXT_HEADER + """
# Trial

(trial-number)=
## One number

The trace of the 3 x 3 identity is {glue:text}`trial_trace:.0f`.

```{code-cell} ipython3
import numpy as np

from companion.book.paste import glue_number

glue_number("trial_trace", float(np.trace(np.eye(3))))
```
"""
ENTRY = 'trial: {budget: {cost: host_bound, reason: "one NumPy cell on the host, no training", cpu_s: 5}}\n'
#: the tests that read every chapter of _toc.yml and run in seconds (test_chapter_times runs
#: chapters in subprocesses and takes a minute; it passed on this trial by hand)
TESTS = ["tests/test_chapters_registry.py", "tests/test_colab_budget.py", "tests/test_course_plan.py",
         "tests/test_chapter_structure.py", "tests/test_checks_registry.py", "tests/test_exercise_labels.py"]
#: large folders the copy links to instead of copying (read, never written, by these tests)
LINKED = ("runs", "survey", "null", "corpora", "published")


def _copy(dst: Path) -> None:
    for name in ("_toc.yml", "_config.yml", "conftest.py", "pyproject.toml"):
        shutil.copy2(ROOT / name, dst / name)
    (dst / "bench").symlink_to(ROOT / "bench")   # the recorded benchmarks, read only
    ignore = shutil.ignore_patterns("__pycache__", "*.ipynb", "_ipython")
    for name in ("src", "book", "tests"):
        shutil.copytree(ROOT / name, dst / name, ignore=ignore)
    (dst / "data").mkdir()
    for p in (ROOT / "data").iterdir():
        target = dst / "data" / p.name
        if p.name in LINKED or not p.is_dir():
            (target.symlink_to(p) if p.name in LINKED else shutil.copy2(p, target))
        else:
            shutil.copytree(p, target, ignore=ignore)


def _run(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_a_one_cell_chapter_added_in_three_places_passes_the_chapter_tests(tmp_path):
    _copy(tmp_path)
    (tmp_path / "book" / "trial.md").write_text(TRIAL)
    toc = (tmp_path / "_toc.yml").read_text()
    last = "      - file: book/zoo_readers\n"
    assert toc.count(last) == 1, "the trial goes after the last appendix; update this test's anchor"
    (tmp_path / "_toc.yml").write_text(toc.replace(last, last + "      - file: book/trial\n"))

    # the copy's package reads the copy (not this checkout) and sees the new page without an entry
    probe = _run(tmp_path, "-c", "from companion.book.budgets import chapters_registry as r; "
                                 "print(r.REGISTRY_FILE); r.check_registry()")
    assert probe.returncode != 0 and str(tmp_path) in probe.stdout, probe.stdout + probe.stderr
    assert "no entry for ['trial'] of _toc.yml" in probe.stderr, probe.stderr[-2000:]

    with open(tmp_path / "data" / "chapters.yaml", "a") as f:
        f.write(ENTRY)
    done = _run(tmp_path, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *TESTS)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "failed" not in done.stdout
