"""What changed in a rules file after the runs it judges began, read from its git history.

:func:`judging_parts` keeps, of a parsed rules file, what decides a body's claims (not the
words that explain them); :func:`changes_after_first_run` compares those parts commit by commit
after a body's first run; :func:`text_edits_after` lists every edit of the file's whole text,
comments included.  Both follow the file through a move (``git log --follow``).
"""

from __future__ import annotations

from pathlib import Path

from ..base.errors import CompanionError

__all__ = ["judging_parts", "changes_after_first_run", "text_edits_after"]


def _default_path():
    from ..base.paths import DATA_DIR

    return DATA_DIR / "verdict_rules.yaml"   # the file in force (companion.rules.rulebook.RULES_PATH)


def judging_parts(rules: dict, body: str) -> dict:
    """Everything in a parsed rules file (version 3 or later) that judges ``body``: the framework (looks,
    spending, gate, family, design targets), the body, the claims judged on it and their
    yardsticks.  Text that explains (derivations, what had been seen) is left out: it may be
    reworded; what decides may not."""
    def strip(d):
        # where a file lives (registered.file, a committed table's path) is not what decides: the
        # stamp and the table's numbers are (the loader checks those against the rules)
        if isinstance(d, dict):
            return {k: strip(v) for k, v in d.items() if k not in ("derivation", "seen_before", "label", "file", "table")}
        if isinstance(d, list):
            return [strip(v) for v in d]
        return d.isoformat() if hasattr(d, "isoformat") else d

    claims = {k: r for k, r in (rules.get("claims") or {}).items() if isinstance(r, dict) and r.get("body") == body}
    sticks = {r.get("sesoi") for r in claims.values()}
    framework = dict(rules.get("framework") or {})
    fams = framework.get("families")
    if isinstance(fams, dict):   # another family's members do not judge this body: only its own family counts
        framework["families"] = {n: f for n, f in fams.items()
                                 if isinstance(f, dict) and set(f.get("members") or []) & set(claims)}
        framework.pop("family", None)   # version 4: derived by the loader from the families
    return strip({"framework": framework, "body": (rules.get("bodies") or {}).get(body),
                  "claims": claims, "yardsticks": {k: v for k, v in (rules.get("yardsticks") or {}).items()
                                                   if k in sticks}})


def changes_after_first_run(body: str, first_run_started, path: str | Path | None = None) -> list[str]:
    """Every commit of the rules file after ``first_run_started`` (a body's earliest run) whose
    judging parts for ``body`` differ from those of the last commit before it, each as
    ``'<commit> <date>: <part> changed'``; empty when nothing that decides changed.  Walks every
    commit of the file (``git log --follow``), not the first that holds a stamp.  Raises a
    CompanionError outside a git checkout."""
    import subprocess

    import yaml

    from .verdicts import _as_datetime

    path = Path(path) if path is not None else _default_path()
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=path.parent, capture_output=True, text=True)
    if top.returncode != 0:
        raise CompanionError(f"{path} is not in a git checkout; its history cannot be checked.")
    rel = path.resolve().relative_to(Path(top.stdout.strip()).resolve())
    # --follow keeps the history through a move (version 4 was committed as
    # data/verdict_rules_v4.yaml); each commit is read at the path the file had then.  git ignores
    # --reverse with --follow: read newest first, then turn it round
    log = subprocess.run(["git", "log", "--follow", "--name-only", "--format=@@%H %cI", "--", str(rel)],
                         cwd=top.stdout.strip(), capture_output=True, text=True, errors="surrogateescape",
                         check=True).stdout.splitlines()
    commits, where = [], {}
    for ln in log:
        if ln.startswith("@@"):
            commit, date = ln[2:].split()
            commits.append((commit, _as_datetime(date)))
            where[commit] = str(rel)
        elif ln.strip() and commits:
            where[commits[-1][0]] = ln.strip()
    commits.reverse()
    start = _as_datetime(first_run_started)

    def parts(commit):
        from ..base.bounded_yaml import load_bounded
        from .verdicts import MAX_RULE_NODES

        raw = subprocess.run(["git", "show", f"{commit}:{where[commit]}"], cwd=top.stdout.strip(),
                             capture_output=True).stdout
        # read as the loader reads a rules file: text that is not UTF-8 (the loader refuses it),
        # aliases expanding past its bound (copying them took minutes) and a key written twice
        # (the second copy silently won) are no rules, and a commit holding such a file counts as
        # a change
        try:
            rules = load_bounded(raw.decode("utf-8"), MAX_RULE_NODES) or {}
        except (yaml.YAMLError, OverflowError, UnicodeDecodeError):
            return {"unreadable": commit}
        return judging_parts(rules, body) if isinstance(rules, dict) else {"unreadable": commit}

    cut = _first_after(commits, start)
    before = commits[:cut]
    if not before:
        return [f"no commit of {rel} precedes the body's first run ({start.isoformat()})"]
    ref = parts(before[-1][0])
    out = []
    for c, t in commits[cut:]:
        now = parts(c)
        for part in sorted(set(ref) | set(now)):
            if ref.get(part) != now.get(part):
                out.append(f"{c[:10]} {t.isoformat()}: {part} changed after the body's first run")
    return out


def text_edits_after(when, path: str | Path | None = None) -> list[dict]:
    """Every commit of a rules file after ``when`` (e.g. the first judged run's start) that
    changed its text at all, comments included: ``{"commit", "date", "lines added", "lines
    removed", "subject"}`` in history order (``git log --follow``, so a rename is followed).
    What decides is compared by :func:`changes_after_first_run`; this lists every edit, so that
    a rule spelled out in a comment after the runs began is shown too.  Raises a
    CompanionError outside a git checkout."""
    import subprocess

    from .verdicts import _as_datetime

    path = Path(path) if path is not None else _default_path()
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=path.parent, capture_output=True, text=True)
    if top.returncode != 0:
        raise CompanionError(f"{path} is not in a git checkout; its history cannot be checked.")
    root = top.stdout.strip()
    rel = path.resolve().relative_to(Path(root).resolve())
    # git ignores --reverse together with --follow: read newest first, then turn it round
    # a subject or a path that is not UTF-8 is shown with its odd bytes replaced, never a traceback
    log = subprocess.run(["git", "log", "--follow", "--numstat", "--format=@@%H %cI %s", "--", str(rel)],
                         cwd=root, capture_output=True, text=True, errors="replace", check=True).stdout.splitlines()
    blocks, cur = [], []
    for line in log:
        if line.startswith("@@") and cur:
            blocks.append(cur)
            cur = []
        cur.append(line)
    if cur:
        blocks.append(cur)
    log = [line for block in reversed(blocks) for line in block]
    start = _as_datetime(when)
    cut = _first_after([(None, _as_datetime(ln[2:].split(" ", 2)[1])) for ln in log if ln.startswith("@@")], start)
    out, first = [], True
    for line in log:
        if line.startswith("@@"):
            commit, date, *subject = line[2:].split(" ", 2)
            out.append({"commit": commit[:10], "date": _as_datetime(date), "lines added": 0, "lines removed": 0,
                        "subject": subject[0] if subject else "", "first": first})
            first = False
        elif line.strip() and out:
            added, removed, *_ = line.split("\t")
            out[-1]["lines added"] += int(added) if added.isdigit() else 0
            out[-1]["lines removed"] += int(removed) if removed.isdigit() else 0
    return [dict((k, v) for k, v in e.items() if k != "first") for i, e in enumerate(out)
            if i >= cut and not e["first"] and (e["lines added"] or e["lines removed"])]


def _first_after(commits, start) -> int:
    """The index, in history order, of the first commit dated after ``start``: it and every
    commit after it in history count as made after ``start``, whatever their own dates say (a
    commit's date can be set back, and one dated before the first run but made after a change
    would otherwise stand as the reference and hide the change)."""
    return next((i for i, (_, t) in enumerate(commits) if t > start), len(commits))
