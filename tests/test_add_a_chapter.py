"""Adding a chapter takes three places (CONTRIBUTING.md, "Add a chapter"): its file, its line in
_toc.yml and its entry in data/chapters.yaml.  Tried in a temporary copy of the repository:
a one-cell chapter with one glued number, one registered assert and one exercise whose answer
is checked, added in those three places only (the copy differs from the repository in exactly
those three files), passes the tests that enumerate the book's chapters, its checks and its
exercises; without the registry entry it is refused by name."""

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

I = np.eye(3)
glue_number("trial_trace", float(np.trace(I)))
assert np.trace(I) == I.shape[0]
```

## Exercises

:::{exercise}
:label: ex-trial-1

How many numbers fix a 4 x 4 skew-symmetric matrix? Set `skew_dim` to that count.

```python
from companion.book.teaching.exercises import check

skew_dim = ...

check("ex-trial-1", skew_dim)
```
:::

:::{dropdown} Hint
The diagonal of a skew-symmetric matrix is zero, and each entry above it fixes the one below it.
:::

:::{solution} ex-trial-1
:class: dropdown

```python
skew_dim = 4 * 3 // 2
```
:::
"""
#: the chapter's entry: its lecture, its budget, its exercise with the data of its check, its assert's claim
ENTRY = """trial:
  lecture: What survives
  reading: optional
  budget: {cost: host_bound, reason: "one NumPy cell on the host, no training", cpu_s: 5}
  exercises:
    ex-trial-1:
      difficulty: 1
      importance: optional
      minutes: 5
      check:
        answer: skew_dim
        asks: "the number of entries that fix a 4 x 4 skew-symmetric matrix (an int)"
        given: value
        reads: whole
        what: entries
        range: [0, 100]
        cases: [{args: [], want: skew_dimension, of: [4]}]
        compare: equal
        hint: "{got} entries do not fix it: the diagonal is zero and an entry above it fixes the one below."
        wrong:
        - {why: every entry, code: "skew_dim = 16"}
        - {why: the diagonal counted too, code: "skew_dim = 10"}
  checks:
  - {reference: closed-form, claim: "the trace of the identity is its size",
     check: "assert np.trace(I) == I.shape[0]"}
"""
#: the tests that read every chapter of _toc.yml and run in seconds (test_chapter_times runs
#: chapters in subprocesses and takes a minute; it passed on this trial by hand)
TESTS = ["tests/test_chapters_registry.py", "tests/test_colab_budget.py", "tests/test_course_plan.py",
         "tests/test_chapter_structure.py", "tests/test_checks_registry.py", "tests/test_exercise_labels.py",
         "tests/test_exercise_data.py", "tests/test_exercises.py"]
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
                          timeout=600)


def _changed(root: Path) -> list[str]:
    """The files of the copy (links left out) that the repository lacks or holds otherwise."""
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_symlink() or any(q.is_symlink() for q in p.parents) or not p.is_file():
            continue
        if not (ROOT / rel).is_file() or (ROOT / rel).read_bytes() != p.read_bytes():
            out.append(rel.as_posix())
    return out


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
    # the three places, and nothing else
    assert _changed(tmp_path) == ["_toc.yml", "book/trial.md", "data/chapters.yaml"]
    # every test of those files but the other chapters' own exercises (each solved again, the
    # same as in this checkout's run): the book-wide tests and every item of the trial
    done = _run(tmp_path, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "-k", "trial or not ex-", *TESTS)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "failed" not in done.stdout
    # the new exercise and the new check were picked up, and tried
    listed = _run(tmp_path, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
                  "tests/test_exercises.py", "tests/test_checks_registry.py")
    assert "ex-trial-1" in listed.stdout and "book/trial:the trace of the identity" in listed.stdout, listed.stdout[-2000:]
