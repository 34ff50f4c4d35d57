"""What the book concludes, written down so that a refactor can be shown to change none of it.

A snapshot holds the verdict of every claim (status, measured, family note), the training
readings at looks, and every value the executed chapters glued (from myst-nb's ``*.glue.json``
stores beside the executed notebooks).  Two snapshots are compared value by value::

    python -m companion.book.checks.outcome_snapshot write before.json [--build _build]
    ... move code ...
    python -m companion.book.checks.outcome_snapshot write after.json
    python -m companion.book.checks.outcome_snapshot compare before.json after.json

``compare`` exits 1 and names each difference; glued figures are compared by kind only
(their bytes carry dates and renderer versions).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["verdict_records", "glued_values", "snapshot", "differences", "main"]


def verdict_records() -> dict:
    """``{claim key: {status, measured, family}}`` for every claim, and the readings at looks."""
    from ...judge.claims import all_verdicts
    from ...judge.training_claims import training_verdicts

    table = all_verdicts()
    out = {}
    for row in table.to_dict("records"):
        out[row["key"]] = {k: ("" if row.get(k) is None or row.get(k) != row.get(k) else str(row.get(k)))
                           for k in ("status", "measured", "family")}
    looks = training_verdicts()
    for row in looks.to_dict("records"):
        out[f"looks:{row.get('key', row.get('claim'))}"] = {k: str(v) for k, v in row.items()}
    return out


def _glue_value(entry) -> str:
    """One glued output as comparable text: its plain text as the page shows it
    (:func:`companion.book.site.executions.text`: a text glued quoted and the same text glued
    bare read alike), or the kind of a figure."""
    from ..site.executions import text as shown

    data = entry.get("data", entry) if isinstance(entry, dict) else {}
    if not isinstance(data, dict):
        return repr(data)
    for kind in ("image/png", "image/svg+xml", "image/jpeg"):
        if kind in data:
            return f"<{kind}>"
    if "text/plain" in data:
        text = data["text/plain"]
        return shown("".join(text) if isinstance(text, list) else str(text))
    return "<" + ",".join(sorted(data)) + ">"


def glued_values(build: str | Path = "_build") -> dict:
    """``{"chapter:name": text}`` from every glue store of an executed build.  Two stores of one
    chapter's name (two builds under one folder) are each kept, keyed by their path under
    ``build`` (``student/jupyter_execute/intro:name``), never one over the other.  A build folder
    that is missing or holds no store is refused in one line: a snapshot of no glued value would
    compare equal to any other."""
    build = Path(build)
    stores = sorted(build.rglob("*.glue.json")) if build.is_dir() else []
    if not stores:
        raise SystemExit(f"no glue store (*.glue.json) under {build}: build the book first (make book), pass "
                         "the executed build with --build, or snapshot the verdicts alone with --no-glue.")
    stems = [s.name.removesuffix(".glue.json") for s in stores]
    out = {}
    for store, stem in zip(stores, stems):
        chapter = stem if stems.count(stem) == 1 else store.relative_to(build).as_posix().removesuffix(".glue.json")
        try:
            content = json.loads(store.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise SystemExit(f"cannot read the glue store {store}: {err}; build the book again (make book).")
        for name, entry in (content.items() if isinstance(content, dict) else []):
            out[f"{chapter}:{name}"] = _glue_value(entry)
    return out


def snapshot(build: str | Path | None = "_build") -> dict:
    """Verdicts and (unless ``build`` is None) the glued values of the executed build ``build``."""
    return {"verdicts": verdict_records(), "glued": glued_values(build) if build is not None else {}}


def differences(before: dict, after: dict) -> list[str]:
    """Every key whose value differs, or which only one snapshot has, as one line each."""
    lines = []
    for part in ("verdicts", "glued"):
        a, b = before.get(part, {}), after.get(part, {})
        for key in sorted(set(a) | set(b)):
            if key not in b:
                lines.append(f"{part} {key}: only before")
            elif key not in a:
                lines.append(f"{part} {key}: only after")
            elif a[key] != b[key]:
                lines.append(f"{part} {key}: {a[key]!r} -> {b[key]!r}")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m companion.book.checks.outcome_snapshot", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="write a snapshot of the verdicts and the glued values")
    w.add_argument("out")
    w.add_argument("--build", default="_build", help="an executed build holding *.glue.json (default _build)")
    w.add_argument("--no-glue", action="store_true", help="verdicts only")
    c = sub.add_parser("compare", help="name every difference between two snapshots (exit 1 if any)")
    c.add_argument("before")
    c.add_argument("after")
    args = p.parse_args(argv)
    if args.cmd == "write":
        snap = snapshot(None if args.no_glue else args.build)
        from ...base.outputs import write_text_atomic

        write_text_atomic(json.dumps(snap, indent=1, sort_keys=True), args.out, what="snapshot")
        print(f"{len(snap['verdicts'])} verdict rows and {len(snap['glued'])} glued values -> {args.out}")
        return 0
    snaps = []
    for f in (args.before, args.after):
        try:
            if not Path(f).is_file():   # a FIFO would block the read for ever
                raise ValueError("not a file (missing, a folder, a FIFO or a device)")
            snap = json.loads(Path(f).read_text(encoding="utf-8"))
            if not isinstance(snap, dict) or not all(isinstance(snap.get(p, {}), dict) for p in ("verdicts", "glued")):
                raise ValueError("not a snapshot (a mapping of 'verdicts' and 'glued' mappings)")
        except (OSError, ValueError) as err:
            print(f"cannot read the snapshot {f}: {' '.join(str(err).split())}; write it with 'write'.", file=sys.stderr)
            return 2
        snaps.append(snap)
    diff = differences(*snaps)
    for line in diff:
        print(line)
    print(f"{len(diff)} differences")
    return 1 if diff else 0


if __name__ == "__main__":
    raise SystemExit(main())
