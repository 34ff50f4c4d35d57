"""Reading run directories (``data/runs/<name>/``) into one tidy table."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path

import pandas as pd

from ...base.errors import CompanionError
from ...base.paths import DATA_DIR
from .provenance import read_run, stamp_instant

__all__ = ["load_runs", "runs_root", "label_of", "run_catalogue", "read_provenance", "first_start", "run_start"]


def runs_root() -> Path:
    """``data/runs`` of the source tree this package was imported from."""
    return DATA_DIR / "runs"


def label_of(config: dict) -> str:
    """A short label: ``encoder / symmetric`` (plus the penalty when one was used)."""
    label = f"{config['mode']} / {config['init']}"
    if config.get("penalty", "none") != "none" and config.get("penalty_coef", 0) > 0:
        label += f" + {config['penalty']} penalty x{config['penalty_coef']:g}"
    return label


def load_runs(names=None, root: str | Path | None = None, pattern: str = "*") -> pd.DataFrame:
    """Histories of the named runs (or all matching ``pattern``) with run metadata columns.

    Adds ``run``, ``mode``, ``init``, ``seed``, ``size``, ``penalty``, ``penalty_coef`` and
    ``label`` to every row.
    """
    root = Path(root) if root is not None else runs_root()
    if names is not None:   # read once: a generator of names was used up by the emptiness test
        names = [names] if isinstance(names, (str, Path)) else list(names)
    if names is None:
        _bare_pattern(pattern, root)
    if names is not None and not names:
        raise FileNotFoundError(f"no run names given (names is empty); name runs under {root}, or leave names out "
                                "to read every run matching the pattern.")
    dirs = [root / n for n in names] if names is not None else sorted(
        p for p in root.glob(pattern) if (p / "history.csv").exists())
    if not dirs:
        raise FileNotFoundError(f"no run directories under {root} (pattern {pattern!r}).")
    _check_distinct(dirs)
    frames = []
    for d in dirs:
        hist, meta = read_run(d)
        cfg = meta["config"]
        lacking = [k for k, kind in (("mode", str), ("init", str), ("seed", int), ("size", str))
                   if not isinstance(cfg.get(k), kind) or isinstance(cfg.get(k), bool)]
        if lacking:
            raise CompanionError(f"run {d.name}: its provenance.json's config lacks {lacking} (or gives them as the wrong kind), so the run cannot be "
                                 f"placed in a body; copy the provenance again from its work folder, or move {d} away.")
        coef = cfg.get("penalty_coef", 0.0)
        if not isinstance(cfg.get("penalty", "none"), str) or isinstance(coef, bool) \
                or not isinstance(coef, (int, float)) or not coef == coef:   # '0.5' failed its label, True read as 1
            raise CompanionError(f"run {d.name}: its provenance.json's config gives penalty {cfg.get('penalty')!r} with "
                                 f"penalty_coef {coef!r}, not a penalty name and a number; copy the provenance again "
                                 f"from its work folder, or move {d} away.")
        hist = hist.assign(run=d.name, mode=cfg["mode"], init=cfg["init"], seed=cfg["seed"],
                           size=cfg["size"], penalty=cfg.get("penalty", "none"),
                           penalty_coef=cfg.get("penalty_coef", 0.0), label=label_of(cfg))
        frames.append(hist)
    return pd.concat(frames, ignore_index=True)


def _bare_pattern(pattern, root) -> None:
    """Refuse (one line) a run pattern with a folder part: a pattern names run folders directly
    under the runs folder, and ``../x/*`` read runs beside it, ``**/x*`` runs in every folder
    below it (an archive of old runs), as if they had landed there."""
    if not isinstance(pattern, str) or not pattern or "/" in pattern or "\\" in pattern or pattern in (".", ".."):
        raise CompanionError(f"the run pattern {pattern!r} has a folder part (or is no pattern); a pattern names run "
                             f"folders directly under {root} (e.g. mixv3-bert-mini-*): drop the folder part, or read "
                             "the runs of another folder with root=.")


def _check_distinct(dirs) -> None:
    """Refuse (one line) a run folder whose name holds a control character (a newline would
    split every message naming it), and two run folders that read one file: a name given
    twice, a folder linked to another run, or a history.csv or provenance.json linked (or hard
    linked) to another run's, whose rows would be read as a second, independent run."""
    import os

    seen: dict = {}
    for i, d in enumerate(dirs):
        if not d.name.isprintable():
            raise CompanionError(f"a run folder under {d.parent} is named {d.name!r}, with a character that is not "
                                 "printable; no run this package makes is named so: rename it or move it away.")
        for name in ("history.csv", "provenance.json"):
            try:
                st = os.stat(d / name)
            except OSError:
                continue   # read_run names a missing or unreadable file
            j = seen.setdefault((st.st_dev, st.st_ino), i)
            if j == i:
                continue
            if os.path.abspath(dirs[j]) == os.path.abspath(d):
                raise CompanionError(f"the list of runs names {d.name} twice; a run is read once: give each name once.")
            raise CompanionError(f"runs {dirs[j].name} and {d.name} read one {name} (a link or a hard link), so one "
                                 f"run's rows would be read as two runs; copy {d.name} again from its work folder, "
                                 "or move it away.")


def _compact(numbers) -> str:
    """``0-4, 10-14``: sorted integers as ranges."""
    out, nums = [], sorted(set(numbers))
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ", ".join(out)


def _read_scripts(path: Path) -> pd.DataFrame:
    from ...base.errors import CompanionError

    try:
        scripts = pd.read_csv(path, keep_default_na=False, dtype=str)
    except FileNotFoundError:
        raise CompanionError(f"{path} is missing: the run catalogue needs its list of patterns "
                             "(pattern,script,plan,what); restore it from git.") from None
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise CompanionError(f"{path} cannot be read as a CSV ({' '.join(str(err).split())[:120]}); "
                             "restore it from git.") from None
    missing = [c for c in ("pattern", "script", "plan", "what") if c not in scripts.columns]
    if missing:
        raise CompanionError(f"{path} has no column {', '.join(missing)}; its header must be "
                             "pattern,script,plan,what.")
    return scripts


def first_start(bodies, root: str | Path | None = None):
    """When the earliest landed run of ``bodies`` began (:func:`run_start`: its provenance's
    ``started``, else its end less its duration; an aware datetime), or None where none has
    landed or none records a start.

    ``bodies``: registered bodies of a rules file (each with its folder ``pattern`` or its list
    ``patterns``), as a dict of them or one body.  A landed run is a folder with a ``history.csv``
    under ``root`` (default :func:`runs_root`)."""
    root = Path(root) if root is not None else runs_root()
    bodies = [bodies] if isinstance(bodies, dict) and ({"pattern", "patterns"} & set(bodies)) else list(
        dict(bodies).values())
    starts = []
    for body in bodies:
        for pattern in body.get("patterns") or [body["pattern"]]:
            _bare_pattern(pattern, root)
            for d in root.glob(pattern):
                if (d / "history.csv").is_file():
                    s = run_start(read_provenance(d))   # its stamps checked there
                    if s is not None:
                        starts.append(s)
    return min(starts) if starts else None


def run_start(prov: dict):
    """When a run began (an aware datetime): its provenance's ``started``, else (a run made
    before runs recorded it) its finishing ``date`` less its ``duration_s``; None where it
    records neither.  Its stamps are checked already (:func:`read_provenance`)."""
    import datetime as dt
    import math

    if prov.get("started"):
        return stamp_instant(prov["started"])
    took = prov.get("duration_s")
    if prov.get("date") and isinstance(took, (int, float)) and not isinstance(took, bool) \
            and math.isfinite(took) and took >= 0:
        return stamp_instant(prov["date"]) - dt.timedelta(seconds=float(took))
    return None


def read_provenance(d: Path) -> dict:
    """A finished run's ``provenance.json`` as a dict, refused in one line naming the file
    (CompanionError) when it is missing, unreadable, not a JSON object, its ``sittings`` are
    not a list of records, or a time stamp is not a UTC-aware date and time
    (:func:`companion.train.runner.provenance.check_stamps`)."""
    from ...base.errors import CompanionError

    path = Path(d) / "provenance.json"
    if path.exists():   # a FIFO would block, a device never end
        from ...base.paths import regular_file

        regular_file(path, "the run's provenance")
    try:
        from .provenance import strict_json

        prov = strict_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CompanionError(f"{path} is missing though the run has a history.csv: a finished run "
                             "records its provenance; restore the file or move the run out of the cache.") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        raise CompanionError(f"{path} is not a readable JSON record ({type(err).__name__}); restore the "
                             "file or move the run out of the cache.") from None
    if not isinstance(prov, dict):
        raise CompanionError(f"{path} holds no 'config' object; restore the file or move the run out of the cache.")
    sittings = prov.get("sittings")
    if sittings is not None and (not isinstance(sittings, list) or not all(isinstance(s, dict) for s in sittings)):
        raise CompanionError(f"{path} records 'sittings' that are not a list of records; restore the file or "
                             "move the run out of the cache.")
    from .provenance import check_stamps

    check_stamps(prov, Path(d).name, Path(d))
    return prov


def _catalogue_row(d: Path) -> dict:
    """The steps, seed, device, machines (the CPU models of its sittings, 'not recorded' for
    steps made before runs recorded them) and start date a finished run's ``provenance.json`` records,
    refused in one line naming the file when it is missing or not such a record."""
    from ...base.errors import CompanionError

    path = d / "provenance.json"
    prov = read_provenance(d)
    cfg = prov.get("config", {})
    if not isinstance(cfg, dict):
        raise CompanionError(f"{path} holds no 'config' object; restore the file or move the run out of the cache.")
    from .provenance import whole_count

    numbers = {}
    for key in ("steps", "seed"):   # 10000.0 is the whole number read_run takes it for
        v = cfg.get(key)
        if v is not None and whole_count(v) is None:
            raise CompanionError(f"{path} records {key} {v!r}, not a whole number; restore the file or "
                                 "move the run out of the cache.")
        numbers[key] = None if v is None else whole_count(v)
    hardware = prov.get("hardware", {})
    device = hardware.get("device", "?") if isinstance(hardware, dict) else hardware  # text: the device itself
    started = prov.get("started") or prov.get("date") or ""
    machines = {str(s.get("cpu_model") or "not recorded") for s in prov.get("sittings") or [{}]}
    return {**numbers, "device": str(device).split(" (")[0], "machines": machines, "started": _utc_day(started)}


def _utc_day(stamp) -> str:
    """The UTC date of a provenance stamp (checked by :func:`read_provenance`): its first ten
    characters were the local date of a stamp with an offset (23:30-05:00 is the next day in
    UTC, the day every other run's stamp is read in)."""
    import datetime as dt

    if not isinstance(stamp, str) or not stamp.strip():
        return ""
    when = stamp_instant(stamp)
    return when.astimezone(dt.timezone.utc).date().isoformat()


def run_catalogue(root: str | Path | None = None) -> pd.DataFrame:
    """Every cached run, counted by the script that made it: one row per line of
    ``<root>/scripts.csv`` (pattern, script, plan, what), a run counted under the first
    pattern its name matches, with the steps, seeds, devices, machines and start dates its
    ``provenance.json`` records.  Runs still in progress (no ``history.csv``) are not counted.

    Raises ``ValueError`` naming any finished run that no pattern matches, so a new family of
    runs cannot go undocumented.
    """
    root = Path(root) if root is not None else runs_root()
    scripts = _read_scripts(root / "scripts.csv")
    rows = {i: [] for i in scripts.index}
    unmatched = []
    finished = sorted(p for p in root.iterdir() if (p / "history.csv").is_file())
    _check_distinct(finished)   # a run folder linked to another would be counted twice
    for d in finished:
        hit = next((i for i, pat in scripts["pattern"].items() if fnmatch.fnmatchcase(d.name, pat)), None)
        if hit is None:
            unmatched.append(d.name)
            continue
        rows[hit].append(_catalogue_row(d))
    if unmatched:
        raise CompanionError(f"runs in {root} that no pattern of scripts.csv matches (add a line for them): "
                         f"{unmatched[:5]}{' ...' if len(unmatched) > 5 else ''}")
    table = []
    for i, r in scripts.iterrows():
        runs = pd.DataFrame(rows[i], columns=["steps", "seed", "device", "machines", "started"])
        dates = sorted(d for d in runs["started"] if d)
        table.append({"runs": r["pattern"], "what": r["what"], "script": r["script"], "plan": r["plan"],
                      "n": len(runs),
                      "steps": _compact(int(s) for s in runs["steps"].dropna()) if len(runs) else "",
                      "seeds": _compact(int(s) for s in runs["seed"].dropna()) if len(runs) else "",
                      "devices": ", ".join(sorted(set(runs["device"]))),
                      "machines": ", ".join(sorted(set().union(*runs["machines"]), key=lambda m: (m == "not recorded", m))),
                      "started": (dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}") if dates else ""})
    return pd.DataFrame(table)
