"""No script under data/runs/ or bench/ removes a folder it did not make (issue 74, family 1).

device_v3.sh and device_blind_matrix.sh began with ``rm -rf "${WORK:-...}"``: on clusters
$WORK is the user's whole work file system.  Now every removal goes through
data/runs/workdir.sh: ``fresh_workdir`` clears only a folder holding the marker the script
wrote when it made it, ``remove_project_cache`` only a folder under .devrun/cache.

* a scan: no other ``rm -r`` of anything variable in any script there, and no rmtree in bench/;
* fuzz: random folders without the marker (hidden files, spaces, links out, nested folders)
  survive ``fresh_workdir`` byte for byte, with one line on stderr; with the marker they are
  cleared, and what their links point to survives;
* end to end: both device scripts, run to their work folder against a folder without the
  marker (also as $WORK, the cluster's variable), leave it as it was.
"""

from __future__ import annotations

import ast
import os
import random
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELPER = ROOT / "data" / "runs" / "workdir.sh"
MARK = ".companion-workdir"

# rm with a recursive flag (-r, -R, -rf, -fr, --recursive) and anything variable after it
RM_VARIABLE = re.compile(r"\brm\s+(?:-\w*[rR]\w*|--recursive)\b[^;&|#\n]*[$`]")
FIND_DELETE = re.compile(r"\bfind\b[^;&|#\n]*\$[^;&|#\n]*-delete\b")


def _scripts() -> list[Path]:
    return sorted(p for d in ("data/runs", "bench") for p in (ROOT / d).rglob("*.sh"))


def _removals(text: str) -> list[str]:
    hits = []
    for i, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0] if line.lstrip().startswith("#") else line
        if RM_VARIABLE.search(code) or FIND_DELETE.search(code):
            hits.append(f"{i}: {line.strip()}")
    return hits


def test_no_script_removes_a_variable_folder_except_through_the_guard():
    found = {p.relative_to(ROOT).as_posix(): _removals(p.read_text()) for p in _scripts() if p != HELPER}
    found = {k: v for k, v in found.items() if v}
    assert not found, f"rm -r of a variable outside data/runs/workdir.sh's guard: {found}"
    assert len(_removals(HELPER.read_text())) == 2        # the two guarded removals, and only them


def test_the_scan_finds_the_old_pattern():
    assert _removals('rm -rf "$WORK"; mkdir -p "$WORK"\n')
    assert _removals('rm -fr "${WORK:-/tmp/x}"\n') and _removals("rm -r -f $D\n")
    assert _removals('rm --recursive "$(dirname "$m")"\n') and _removals('find "$W" -type f -delete\n')
    assert not _removals('rm -f "$JOBS"\n') and not _removals("rm -rf build/literal\n")


def test_bench_python_never_removes_a_folder():
    calls = []
    for p in sorted((ROOT / "bench").rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                if name in ("rmtree", "rmdir", "removedirs"):
                    calls.append(f"{p.name}:{node.lineno}")
    assert not calls, calls


def test_every_script_that_clears_a_work_folder_sources_the_guard():
    for p in _scripts():
        text = p.read_text()
        if "fresh_workdir" in text or "remove_project_cache" in text:
            if p != HELPER:
                assert "source data/runs/workdir.sh" in text, p.name


def _fresh(folder: Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", f'source "{HELPER}"; fresh_workdir "$1"', "device_test.sh", str(folder)],
                          capture_output=True, text=True, timeout=30, cwd=cwd)


def _tree(root: Path) -> dict:
    """Every entry under ``root`` (not following links): kind and contents or link target."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            rel = p.relative_to(root).as_posix()
            mode = os.lstat(p).st_mode
            out[rel] = (("link", os.readlink(p)) if stat.S_ISLNK(mode) else ("dir", None) if stat.S_ISDIR(mode)
                        else ("file", p.read_bytes()) if stat.S_ISREG(mode) else ("other", stat.S_IFMT(mode)))
    return out


NAMES = ["a", "b c", ".hidden", "-rf", "*", "$WORK", "data", ".companion-workdirx", "é", "x\ty"]


def _random_tree(rng: random.Random, root: Path, outside: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for _ in range(rng.randint(0, 6)):
        name = rng.choice(NAMES) + str(rng.randint(0, 99))
        kind = rng.choice(["file", "file", "dir", "link", "fifo"])
        p = root / name
        if p.exists() or p.is_symlink():
            continue
        if kind == "file":
            p.write_bytes(rng.randbytes(rng.randint(0, 64)))
        elif kind == "dir":
            _random_tree(rng, p, outside) if rng.random() < 0.5 else p.mkdir()
        elif kind == "link":
            p.symlink_to(outside)
        elif hasattr(os, "mkfifo"):
            os.mkfifo(p)


FUZZ_CASES = 60


def test_fuzz_a_folder_without_the_marker_survives_and_one_with_it_is_cleared(tmp_path):
    rng = random.Random(74)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("the user's work")
    refused = cleared = 0
    for i in range(FUZZ_CASES):
        folder = tmp_path / f"case{i}"
        _random_tree(rng, folder, outside)
        marked = rng.random() < 0.4
        if marked:
            (folder / MARK).write_text("made by device_test.sh\n")
        before = _tree(folder)
        done = _fresh(folder)
        if marked:
            assert done.returncode == 0, done.stderr
            assert _tree(folder) == {MARK: ("file", b"made by device_test.sh; its next run clears this folder\n")}
            cleared += 1
        else:
            assert done.returncode != 0 and _tree(folder) == before, (i, done.stderr)
            lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
            assert len(lines) == 1 and "not made by this script" in lines[0] and "WORK" in lines[0], lines
            refused += 1
        assert (outside / "precious.txt").read_text() == "the user's work"
    assert refused >= 20 and cleared >= 10          # both sides of the guard were exercised


@pytest.mark.parametrize("how", ["link", "file", "empty-name", "root", "fake-marker-link"])
def test_a_link_a_file_or_a_dangerous_name_is_refused(tmp_path, how):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / MARK).write_text("a marker behind a link does not count\n")
    (outside / "precious.txt").write_text("keep")
    target = {"link": tmp_path / "work", "file": tmp_path / "work", "empty-name": "", "root": "/",
              "fake-marker-link": tmp_path / "work"}[how]
    if how == "link":
        (tmp_path / "work").symlink_to(outside)
    elif how == "file":
        (tmp_path / "work").write_text("a file")
    elif how == "fake-marker-link":
        (tmp_path / "work").mkdir()
        (tmp_path / "work" / "data.txt").write_text("keep")
        (tmp_path / "work" / MARK).symlink_to(outside / MARK)
    done = _fresh(target)
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert (outside / "precious.txt").read_text() == "keep"
    if how == "file":
        assert (tmp_path / "work").read_text() == "a file"
    if how == "fake-marker-link":
        assert (tmp_path / "work" / "data.txt").read_text() == "keep"


def test_a_new_folder_is_made_with_the_marker(tmp_path):
    done = _fresh(tmp_path / "new" / "work")
    assert done.returncode == 0 and (tmp_path / "new" / "work" / MARK).is_file()


def test_remove_project_cache_removes_only_under_the_project_cache(tmp_path):
    proj = tmp_path / "proj"
    (proj / ".devrun" / "cache" / "tokens" / "abc").mkdir(parents=True)
    (proj / ".devrun" / "cache" / "tokens" / "abc" / "meta.json").write_text("{}")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep")
    (proj / ".devrun" / "cache" / "tokens" / "link").symlink_to(outside)

    def rm(arg):
        return subprocess.run(["bash", "-c", f'source "{HELPER}"; remove_project_cache "$1"', "x.sh", arg],
                              capture_output=True, text=True, timeout=30, cwd=proj)

    assert rm(".devrun/cache/tokens/abc").returncode == 0
    assert not (proj / ".devrun" / "cache" / "tokens" / "abc").exists()
    rm(".devrun/cache/tokens/link")                     # a link: not followed, nothing removed
    assert (outside / "precious.txt").read_text() == "keep"
    refused = rm(str(outside))
    assert refused.returncode != 0 and "not under the project's cache" in refused.stderr
    assert (outside / "precious.txt").read_text() == "keep"
    assert rm(".devrun/cache").returncode != 0 and (proj / ".devrun" / "cache").is_dir()


def _device_script(name: str, tmp_path: Path, **env) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("WORK", "V3_WORK", "BLIND_WORK", "DRY")}
    base.update(OUT=str(tmp_path / "o"), RUNS=str(tmp_path / "runs"), IN_PROGRESS=str(tmp_path / "none.txt"),
                PY="/bin/false", DEVICE="cpu", N_JOBS="1", STEPS="20", EVERY="10", DEADLINE="5",
                ALONE_STEPS="0", PATH=os.environ.get("PATH", "/usr/bin:/bin"), **env)
    return subprocess.run(["bash", str(ROOT / "data" / "runs" / name)], env=base, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("script, var", [("device_v3.sh", "V3_WORK"), ("device_blind_matrix.sh", "BLIND_WORK")])
def test_the_device_scripts_leave_a_folder_they_did_not_make(tmp_path, script, var):
    (tmp_path / "runs").mkdir()
    user_work = tmp_path / "users-work-file-system"
    _random_tree(random.Random(1), user_work, tmp_path)
    (user_work / "thesis.tex").write_text("years of work")
    before = _tree(user_work)
    # the cluster's $WORK is never the script's folder
    done = _device_script(script, tmp_path, WORK=str(user_work), **{var: str(tmp_path / "own")})
    assert _tree(user_work) == before, done.stderr[-2000:]
    assert (tmp_path / "own" / MARK).is_file()
    (tmp_path / "own" / "left-by-last-run").write_text("x")
    # its own folder, named explicitly but not made by it: refused in one line, left as it was
    done = _device_script(script, tmp_path, **{var: str(user_work)})
    assert done.returncode == 1 and _tree(user_work) == before
    assert done.stderr.strip().count("\n") == 0 and "not made by this script" in done.stderr, done.stderr
    # a folder it made is cleared for the next run
    _device_script(script, tmp_path, **{var: str(tmp_path / "own")})
    assert not (tmp_path / "own" / "left-by-last-run").exists() and (tmp_path / "own" / MARK).is_file()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
