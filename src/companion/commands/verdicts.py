"""``companion verdicts``: every claim's status as the book states it, from the terminal.

    companion verdicts                     # each claim of the paper and its status
    companion verdicts --claim table_1     # one claim: what was measured, the check, its power
    companion verdicts --training          # the training claims at their looks, under the rules in force
    companion verdicts --training --rules data/rules_history/verdict_rules_v3.yaml   # ... under another rules file
    companion verdicts --csv FILE.csv      # ... the table printed, as CSV

The statuses are the ones every page of the book gives (:func:`companion.judge.claims.all_verdicts`,
Holm carried in; :func:`companion.judge.training_claims.training_verdicts` for the confirmatory reading),
computed from the package's data on this machine: the first call takes a few minutes (every
check and test is re-run at this run size); set ``COMPANION_VERDICT_CACHE`` to a folder to
keep the table between calls, as the book's build does.
"""

from __future__ import annotations

import sys

from ..base.paths import home_path

#: the training table's columns, as printed by ``--training`` and written by ``--training --csv``
TRAINING_COLUMNS = ("key", "family", "look", "seeds in", "status", "gate", "effect", "d", "claim")
#: the status table's columns, as printed and written (the status every page gives)
STATUS_COLUMNS = ("key", "status", "claim")


def register(subparsers) -> None:
    p = subparsers.add_parser("verdicts", help="every claim's status as the book states it (--training: the "
                                               "training claims at their looks)",
                              description="Every claim's status as the book's pages give it, computed from the "
                              "package's data on this machine (no network): the first call takes a few minutes; "
                              "COMPANION_VERDICT_CACHE=FOLDER keeps the table between calls.")
    p.add_argument("--claim", metavar="KEY", help="one claim in full, by its key (the first column)")
    p.add_argument("--training", action="store_true", help="the training claims read at their looks: family, "
                                                           "look, seeds in, effect and interval, status")
    p.add_argument("--rules", metavar="FILE", help="with --training: judge under this sequential rules file "
                                                   "(default: the one in force, data/verdict_rules.yaml)")
    p.add_argument("--csv", metavar="FILE.csv", help="write the table printed to this CSV file")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..base.errors import CompanionError
    from ..base.outputs import check_table_output, write_csv_atomic
    from . import shown

    if args.csv is not None and args.csv.strip() == "":
        raise CompanionError("--csv is empty; give a file name such as verdicts.csv, or leave --csv out.")
    # --csv=~/v.csv: the shell leaves a ~ after '=' as it is, which named a folder '~' here
    args.csv, args.rules = home_path(args.csv), home_path(args.rules)
    if args.claim is not None and (args.csv or args.training):
        raise CompanionError(f"{'--csv writes' if args.csv else '--training prints'} a table; --claim prints one "
                             "claim (with its reading at its look where it is a training claim). Use one of them.")
    if args.rules is not None and args.claim is not None:
        raise CompanionError("--claim reads one claim under the rules in force; --rules reads the training table "
                             "under another rules file: drop --rules, or use --training --rules FILE without --claim.")
    if args.rules is not None and not args.training:
        raise CompanionError("--rules names the rules file the training claims are read under; add --training.")
    rules = None
    if args.rules is not None:
        from ..rules.rulebook import load_rules

        rules = load_rules(args.rules)   # checked whole before anything is read
    if args.csv:
        check_table_output(args.csv, "--csv file")   # before minutes of computing
    if args.claim is not None:
        print(_one_claim(args.claim))
        return 0
    table = _training_table(rules) if args.training else _status_table()
    print(_as_text(table) if len(table) else "no claim to show: " + (
        "no training claim has been read at a look yet." if args.training else "the package judged none."))
    if not args.training:
        print("\n" + _training_line())
    if args.csv:
        out = write_csv_atomic(table, args.csv)
        print(f"wrote {len(table)} rows to {shown(out)}", file=sys.stderr)
    return 0


def _say_computing() -> None:
    from ..judge import claims

    if claims._ready_table("all_verdicts") is None:
        print("computing every verdict (a few minutes on a CPU; COMPANION_VERDICT_CACHE=FOLDER keeps them)...",
              file=sys.stderr, flush=True)


def _status_table():
    from ..judge import claims

    _say_computing()
    return claims.all_verdicts().loc[:, list(STATUS_COLUMNS)]


def _training_table(rules=None):
    from ..judge import training_claims

    return training_claims.training_verdicts(rules).reindex(columns=list(TRAINING_COLUMNS))


def _training_line() -> str:
    """The confirmatory reading in one sentence, as What survives gives it."""
    from ..judge import training_claims
    from ..judge.sentences import training_summary

    t = training_claims.training_verdicts()
    said = training_summary((r["claim"].split(":")[0], r["status"], r["seeds in"], r["look"]) for _, r in t.iterrows())
    return ("Training claims at their looks (runs made after their rules; `companion verdicts --training`): "
            + (f"{said}." if said else "none read yet."))


def _as_text(table) -> str:
    """A plain table: each column as wide as its widest cell, the last one left ragged."""
    cols = list(table.columns)
    cells = [[_cell(c) for c in cols]] + [[_cell(v) for v in row] for row in table.itertuples(index=False)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cols) - 1)]
    return "\n".join("  ".join([c.ljust(w) for c, w in zip(r[:-1], widths)] + [r[-1]]).rstrip() for r in cells)


def _cell(v) -> str:
    """A printed cell: a number to 5 significant digits (0.005360000000000031 is 0.00536; the
    CSV keeps every digit), anything else as its text, a character that is not printable (a
    newline, an escape sequence) written as its escape so the cell stays one cell of one line."""
    from . import shown

    if isinstance(v, float) and not isinstance(v, bool):
        return f"{v:.5g}"
    return shown(v)


def _one_claim(key: str) -> str:
    from ..base.errors import CompanionError
    from ..judge import claims, training_claims
    from . import shown

    from ..rules.rulebook import load_rules

    keys = [f.__name__ for f in claims.VERDICTS]
    at_looks = load_rules()["claims"]   # the claims read at looks (a body of its own, e.g. chars_*, only there)
    if key not in keys and key not in at_looks:
        from difflib import get_close_matches

        every = keys + [k for k in at_looks if k not in keys]
        near = get_close_matches(key, every, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise CompanionError(f"unknown claim {key!r}{hint}; the keys are: {', '.join(every)}.")
    if key in keys:
        if key not in claims.MATH_CHECKS:
            _say_computing()
        v = claims.verdict(key)
        lines = [f"{v.claim}", f"  status:   {v.status}", f"  measured: {v.measured}"]
        for label, value in (("size", v.size), ("check", v.check), ("power", v.power), ("family", v.family)):
            if isinstance(value, str) and value.strip():
                lines.append(f"  {label + ':':<9} {value}")
        if v.rules:
            lines.append(f"  read by:  {v.rules} (earlier versions' readings: the book's page rules_history.html)")
        lines.append(f"  chapter:  {v.chapter} (the book's page {v.chapter}.html)")
    else:   # a claim read only at its looks: its reading there is its status
        lines = [str(at_looks[key].get("claim", key)),
                 "  read only at its looks (`companion verdicts --training` lists it with the others)"]
    t = training_claims.training_verdicts() if key in at_looks else None   # 15 s: only for a training claim
    if t is not None and key in set(t.get("key", ())):
        r = t.set_index("key").loc[key]
        lines += ["  at its looks, on runs made after its rules:",
                  f"    {r['look']}, {r['seeds in']} seeds in: {r['status']}",
                  f"    effect {r['effect']} (smallest effect of interest d = {float(r['d']):.4g})"]
        for label in ("why", "power (planned)", "secondary"):
            value = r.get(label)
            if isinstance(value, str) and value.strip():
                lines.append(f"    {label}: {value}")
        missing = _as_list(r.get("missing"))
        if missing:
            lines.append(f"    runs still missing for the next look ({len(missing)}): {', '.join(missing)}")
            lines.append(f"    they are made by: {r['command']}")
    return "\n".join(shown(line) for line in lines)   # a newline or escape in a rules file's text stays text


def _as_list(value) -> list[str]:
    """The runs still missing as a list, whatever container the table holds them in."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, (list, tuple, set)) or hasattr(value, "tolist"):
        return [str(v) for v in (value.tolist() if hasattr(value, "tolist") else value)]
    return []
