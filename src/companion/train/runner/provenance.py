"""What a finished run folder holds: ``provenance.json`` (what made the run) and
``history.csv`` (its tidy history), written atomically and read back with checks."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import pandas as pd
import torch

from ...base.errors import CompanionError
from ..text.data import TokenData
from .config import TrainConfig

__all__ = ["provenance", "write_run", "read_run", "HISTORY_COLUMNS", "check_stamps", "stamp_problem", "strict_json",
           "whole_count", "provenance_count", "provenance_seconds"]


def provenance(cfg: TrainConfig, command: str, seconds: float, data: TokenData | None = None) -> dict:
    """What made a run: command, hardware, duration, versions, date, seed and configuration."""
    import transformers

    from ... import __version__
    from ...base.runtime import describe_device

    dev = torch.device(cfg.device) if cfg.device else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return {
        "command": command,
        "hardware": {"device": describe_device(dev), "machine": platform.machine(),
                     "processor": platform.processor() or platform.machine(),
                     "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads()},
        "duration_s": round(seconds, 1),
        "versions": {"companion": __version__, "torch": torch.__version__,
                     "transformers": transformers.__version__, "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seed": cfg.seed,
        "config": cfg.to_dict(),
        "model_size": _model_size(cfg),
        "data": data.summary() if data is not None else None,
    }


def _model_size(cfg: TrainConfig) -> dict:
    """The model the run trained: its named size with the run's overrides, or for a run started
    from a checkpoint (``init_from``) the checkpoint's own figures."""
    if cfg.init_from is None:
        return cfg.model_size.to_dict()
    from ..models.pretrained import checkpoint_size

    try:
        return checkpoint_size(cfg.init_from, cfg.model_size.seq_len)
    except (CompanionError, OSError) as err:   # moved away while the run trained: its history is still written
        return {**cfg.model_size.to_dict(), "unread": f"the configuration of {cfg.init_from} could not be read when "
                                                      f"the run finished ({str(err)[:80]}); only its shape is its own"}


def write_run(out_dir: str | Path, history: pd.DataFrame, meta: dict) -> Path:
    """Write ``provenance.json`` and then ``history.csv`` into ``out_dir``, each atomically.

    ``history.csv`` is what marks a run as finished (:func:`read_run`,
    :func:`companion.train.runner.runs.load_runs`), so it is renamed into place last: an
    interrupted run never leaves a folder that reads as a finished one.
    """
    from ...base.cache import atomic_path

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / "provenance.json") as tmp:
        tmp.write_text(json.dumps(meta, indent=2, default=str) + "\n")
    with atomic_path(out / "history.csv") as tmp:
        history.to_csv(tmp, index=False, float_format="%.6g")
    return out


_READ: dict = {}   # (run folder, sha256 of history.csv and of provenance.json) -> what read_run returned
_READ_MAX = 1024


def read_run(run_dir: str | Path) -> tuple[pd.DataFrame, dict]:
    """``(history, provenance)`` of a run written by :func:`write_run`.

    A run read before in this process, with both files byte for byte as they were, is handed
    back from memory (a copy): checking a history is most of the cost, and the studies read
    the same runs again and again (a rules file's yardsticks and pilots read 244 runs, 22 s).
    The files' digests are the key, so an edited file is read and checked again."""
    import copy
    import hashlib

    run = Path(run_dir)
    key = None
    try:
        if all((run / n).is_file() and not (run / n).is_symlink() for n in ("history.csv", "provenance.json")):
            key = (str(run.resolve()),) + tuple(hashlib.sha256((run / n).read_bytes()).hexdigest()
                                                for n in ("history.csv", "provenance.json"))
    except OSError:
        key = None
    if key is not None and key in _READ:
        history, provenance = _READ[key]
        return history.copy(), copy.deepcopy(provenance)
    history, provenance = _read_run(run)
    if key is not None:
        if len(_READ) >= _READ_MAX:
            _READ.pop(next(iter(_READ)))
        _READ[key] = (history.copy(), copy.deepcopy(provenance))
    return history, provenance


def _read_run(run: Path) -> tuple[pd.DataFrame, dict]:
    if not (run / "history.csv").exists():
        raise FileNotFoundError(f"{run} holds no history.csv; is it a run directory?")
    from ...base.paths import regular_file

    for name in ("history.csv", "provenance.json"):   # a FIFO would block, a device never end
        if (run / name).exists():
            try:
                regular_file(run / name, f"run {run.name}'s")
            except CompanionError as err:
                raise CompanionError(f"{err} Copy {name} again from the run's work folder, or move {run} away.") from None
    try:
        provenance = strict_json((run / "provenance.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CompanionError(f"run {run.name} has a history but no provenance.json, so its settings (corpus, "
                             "learning rate, device) cannot be checked; copy the provenance from its work "
                             f"folder, or move {run} away.") from None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise CompanionError(f"run {run.name}: its provenance.json cannot be read ({str(err).splitlines()[0][:120]}); "
                             f"copy it again from the run's work folder, or move {run} away.") from None
    if not isinstance(provenance, dict) or not isinstance(provenance.get("config"), dict):
        raise CompanionError(f"run {run.name}: its provenance.json holds no config object, so it was not written "
                             f"by `companion train`; make the run again, or move {run} away.")
    check_stamps(provenance, run.name, run)
    for section, field in (("config", "steps"), ("model_size", "num_hidden_layers")):
        part = provenance.get(section)
        value = part.get(field) if isinstance(part, dict) else None
        if value is not None and whole_count(value) is None:
            raise CompanionError(f"run {run.name}: its provenance.json's {section}.{field} is {str(value)[:30]!r}, not a "
                                 f"whole number, so its history cannot be checked against it; copy provenance.json "
                                 f"again from the run's work folder, or move {run} away.")
    return _check_history(_read_history(run), provenance, run), provenance


def strict_json(text: str):
    """``json.loads(text)``, refusing (``ValueError``) a key written twice in one object, which
    Python reads as its last copy, silently (a hand edit's ``"lr"`` beside the run's own)."""
    def pairs(items):
        keys = [k for k, _ in items]
        twice = next((k for k in keys if keys.count(k) > 1), None)
        if twice is not None:
            raise ValueError(f"the key {twice!r} is written twice in one object")
        return dict(items)

    return json.loads(text, object_pairs_hook=pairs)


def whole_count(value) -> int | None:
    """``value`` as a whole number >= 0 (``10000`` or ``10000.0``), or None when it is none (a
    bool, text, a fraction, a negative or non-finite number)."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value) if value >= 0 else None


def provenance_count(part: dict, key: str, run: Path) -> int:
    """``part[key]`` of a run's provenance as a whole number (0 where absent), refused in one line
    naming the run's file and the field where it is none (text, a fraction, a negative number)."""
    v = part.get(key, 0) if isinstance(part, dict) else 0
    n = whole_count(0 if v is None else v)
    if n is None:
        raise CompanionError(f"{run / 'provenance.json'} records {key} {str(v)[:30]!r}, not a whole number; copy "
                             "provenance.json again from the run's work folder, or move the run out of data/runs.")
    return n


def provenance_seconds(prov: dict, key: str, run: Path) -> float:
    """``prov[key]`` as seconds (NaN where absent), refused in one line where it is not a number."""
    v = prov.get(key)
    if v is None:
        return float("nan")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise CompanionError(f"{run / 'provenance.json'} records {key} {str(v)[:30]!r}, not a number of seconds; "
                             "copy provenance.json again from the run's work folder, or move the run out of data/runs.")
    return float(v)


def stamp_instant(text: str):
    """The instant a provenance time stamp names, as an aware datetime (``Z`` or ``z`` read as
    UTC); for a stamp :func:`stamp_problem` accepts."""
    import datetime as dt

    return dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))


def stamp_problem(value) -> str | None:
    """What is wrong with ``value`` as a provenance time stamp (``started``, ``date``), or
    None for a good one: an ISO 8601 date and time with its time zone, as
    ``2026-12-06T15:53:15Z`` (how :mod:`companion.train.runner.state` writes it).  A number, a
    bare date, a time without a zone (whose instant depends on where it is read) or an
    impossible time or offset (``+25:00``) is a problem: the blind checks compare it with
    the rules' commit to the second."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value!r} is a number, not a date and time written as text"
    if not isinstance(value, str):
        return f"{value!r} is not a date and time written as text"
    text = value.strip()
    if "T" not in text and " " not in text:
        if "t" in text[10:11]:   # 2026-12-06t15:53Z: its time is there, after a lower-case t
            return f"{value!r} writes a lower-case 't' between its date and time (write a capital 'T')"
        return f"{value!r} gives no time of day"
    try:
        when = stamp_instant(text)
    except ValueError:
        return f"{value!r} is not a date and time that exists (an impossible date, hour or time-zone offset)"
    if when.tzinfo is None or when.utcoffset() is None:
        return f"{value!r} names no time zone, so the instant it means depends on where it is read"
    return None


def check_stamps(provenance: dict, name: str, where) -> None:
    """Refuse (CompanionError naming run ``name``) a provenance whose ``started``, ``date`` or
    sittings' ``started`` is present but not a time stamp :func:`stamp_problem` accepts."""
    fields = [("started", provenance.get("started")), ("date", provenance.get("date"))]
    sittings = provenance.get("sittings")
    if sittings is not None and not (isinstance(sittings, list) and all(isinstance(s, dict) for s in sittings)):
        raise CompanionError(f"run {name}: its provenance.json's sittings is {type(sittings).__name__} "
                             f"{str(sittings)[:60]!r}, not a list of sittings (each {{from_step, started}}); copy "
                             f"provenance.json again from the run's work folder, or move {where} away.")
    if sittings:
        fields += [(f"sittings[{i}].started", s.get("started")) for i, s in enumerate(sittings)]
        for i, s in enumerate(sittings):   # read as the step a sitting began at (machines_of)
            if s.get("from_step") is not None and whole_count(s["from_step"]) is None:
                raise CompanionError(f"run {name}: its provenance.json's sittings[{i}].from_step "
                                     f"{str(s['from_step'])[:30]!r} is not a whole number of steps; copy "
                                     f"provenance.json again from the run's work folder, or move {where} away.")
    for field, value in fields:
        if value is None:
            continue
        why = stamp_problem(value)
        if why:
            raise CompanionError(f"run {name}: its provenance.json's {field} {why}; a run's times are UTC stamps "
                                 "such as 2026-12-06T15:53:15Z. Copy provenance.json again from the run's work "
                                 f"folder, or move {where} away.")
    import datetime as dt

    instant = stamp_instant

    # a stamp later than now came from a clock that ran ahead (or an edit): it would pass every
    # "started after the rules" check whatever the truth; a day's slack for clocks and zones
    latest = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)
    for field, value in fields:
        if value is not None and instant(value) > latest:
            raise CompanionError(f"run {name}: its provenance.json's {field} {value} is in the future, so the "
                                 "machine's clock was wrong or the file was edited; correct the stamp from the run's "
                                 f"log, or move {where} away.")
    started, finished = provenance.get("started"), provenance.get("date")
    if started is not None and finished is not None:
        if instant(finished) < instant(started):
            raise CompanionError(f"run {name}: its provenance.json's date {finished} (when it finished) is before it "
                                 f"started ({started}), so one of them is wrong; copy provenance.json again from the "
                                 f"run's work folder, or move {where} away.")
    for field, value in fields[2:]:   # each sitting lies within the run: the blind checks read `started`
        if value is None:
            continue
        if started is not None and instant(value) < instant(started):
            why = f"is before the run started ({started})"
        elif finished is not None and instant(value) > instant(finished):
            why = f"is after the run finished ({finished})"
        else:
            continue
        raise CompanionError(f"run {name}: its provenance.json's {field} {value} {why}, so the run's start is not "
                             f"what it records; copy provenance.json again from the run's work folder, or move "
                             f"{where} away.")


def _check_history(hist: pd.DataFrame, provenance: dict, run: Path) -> pd.DataFrame:
    """``hist``, refused in one line naming the run where a reader would take a wrong number
    from it: a row logged twice (step, quantity, layer and head), which a mean over rows
    would average; a row past the run's own horizon (its provenance's ``config.steps``),
    which would read as the horizon's value; a quantity logged for fewer layers or heads at
    some step than at the others (a cut-off or edited file), whose layer mean would be over
    the rest; a per-layer quantity whose layers are not the model's (:func:`_check_layer_set`)."""
    import numpy as np

    fix = f"copy history.csv again from the run's work folder, or move {run} away"
    for col in ("step", "layer", "head"):
        whole = hist[col].to_numpy(dtype=float)
        bad = ~np.isfinite(whole) | (whole != np.round(whole)) | ((whole < 0) if col == "step" else False)
        if bad.any():
            raise CompanionError(f"run {run.name}: its history.csv has a {col} that is not a whole number"
                                 f"{' >= 0' if col == 'step' else ''} (line {int(np.flatnonzero(bad)[0]) + 2}): {fix}.")
    if hist["quantity"].isna().any():
        raise CompanionError(f"run {run.name}: its history.csv has a row without a quantity (line "
                             f"{int(np.flatnonzero(hist['quantity'].isna())[0]) + 2}): {fix}.")
    odd = ~hist["quantity"].astype(str).str.fullmatch(r"[a-z][a-z0-9_]*")
    if odd.any():   # " eval_loss" or "Eval_loss" is no quantity a reader asks for: its row would go unread
        i = int(np.flatnonzero(odd)[0])
        raise CompanionError(f"run {run.name}: its history.csv names a quantity {str(hist['quantity'].iloc[i])[:40]!r} "
                             f"(line {i + 2}), which the trainer never writes (lower-case letters, digits and _): {fix}.")
    _check_ranges(hist, run, fix)
    key = ["step", "quantity", "layer", "head"]
    twice = hist.duplicated(key, keep=False)
    if twice.any():
        r = hist[twice].iloc[0]
        same = hist[twice & (hist["step"] == r["step"]) & (hist["quantity"] == r["quantity"])
                    & (hist["layer"] == r["layer"]) & (hist["head"] == r["head"])]
        where = f" of layer {int(r['layer'])}" if r["layer"] >= 0 else ""
        where += f", head {int(r['head'])}," if r["head"] >= 0 else ""
        raise CompanionError(
            f"run {run.name}: its history.csv logs {r['quantity']}{where} at step {int(r['step'])} {len(same)} times "
            f"(values {', '.join(f'{v:g}' for v in same['value'])}); a run logs each value once, and no copy is "
            f"taken over the others or averaged with them: {fix}.")
    # the symmetry score (Eq. 16) and the directionality score (Eq. 17) lie in [-1, 1]: a value
    # outside it or infinite is an edit, never the run's score (a NaN is a broken layer the
    # verdict engine names as a non-finite value of its seed, so it is read as it is)
    names = hist["quantity"].astype(str)
    score = (names.str.endswith("symmetry") | names.str.endswith("directionality")).to_numpy()
    values = hist["value"].to_numpy(dtype=float)
    off = score & (np.abs(values) > 1 + 1e-6)
    if off.any():
        i = int(np.flatnonzero(off)[0])
        raise CompanionError(f"run {run.name}: its history.csv gives {names.iloc[i]} the value {values[i]:g} (line "
                             f"{i + 2}), which no score between -1 and 1 can have: {fix}.")
    steps = whole_count(provenance["config"].get("steps"))
    if steps is not None and len(hist):
        past = hist[hist["step"] > steps]
        if len(past):
            r = past.iloc[0]
            raise CompanionError(
                f"run {run.name}: its history.csv logs {r['quantity']} at step {int(r['step'])}, past the run's "
                f"{steps} steps (its provenance's config.steps); a value logged past the horizon is not the "
                f"horizon's: {fix}.")
    counts = hist.groupby(["quantity", "step"], sort=False).size()
    whole = hist.drop_duplicates(["quantity", "layer", "head"]).groupby("quantity", sort=False).size()
    expected = whole.reindex(counts.index.get_level_values(0)).to_numpy()
    short = counts[counts.to_numpy() < expected]
    if len(short):
        quantity, step = short.index[0]
        raise CompanionError(
            f"run {run.name}: its history.csv logs {quantity} for {int(short.iloc[0])} of its "
            f"{int(whole[quantity])} layers and heads at step {int(step)}; the file is cut off or edited, and a "
            f"mean over the rows left would not be the run's value: {fix}.")
    _check_layer_set(hist, provenance, run, fix)
    return hist


def _check_layer_set(hist: pd.DataFrame, provenance: dict, run: Path, fix: str) -> None:
    """Refuse a per-layer quantity whose layers are not exactly the model's (its provenance's
    ``model_size.num_hidden_layers``): a layer missing at every step (a cut-off or edited file
    the per-step count cannot see) would leave a layer mean over fewer layers than the run
    has, and a layer the model does not have would be averaged in.  A provenance that names
    no layer count is not checked for its set of layers here (the readers of a body ask for it);
    a quantity logged per layer with a row for no layer (layer -1) is refused whatever it names."""
    per_layer = hist.loc[hist["layer"] >= 0, "quantity"].unique()
    mixed = hist[(hist["layer"] < 0) & hist["quantity"].isin(per_layer)]
    if len(mixed):   # a row for no layer beside the layers' rows: a layer mean would average it in
        r = mixed.iloc[0]
        raise CompanionError(
            f"run {run.name}: its history.csv logs {r['quantity']} for each layer and also for no layer (layer "
            f"{int(r['layer'])} at step {int(r['step'])}, line {int(mixed.index[0]) + 2}), which the trainer never "
            f"writes; a layer mean would average that row in with the layers': {fix}.")
    size = provenance.get("model_size")
    layers = whole_count(size.get("num_hidden_layers")) if isinstance(size, dict) else None
    if layers is None or layers < 1:
        return
    rows = hist[hist["layer"] >= 0]
    if rows.empty:
        return
    want = set(range(layers))
    # every layer over all of a quantity's rows, and again over its whole-form rows (head -1), which
    # a layer mean reads: heads' rows of a layer whose own row is lost made the set look whole
    whole = rows[rows["head"] < 0]
    for kind, part in (("", rows), ("whole-form (head -1) ", whole)):
        for quantity, got in part.groupby("quantity", sort=False)["layer"]:
            have = {int(v) for v in got.unique()}
            if have != want:
                missing, extra = sorted(want - have), sorted(have - want)
                what = (f"no {kind}row for layer{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))}"
                        if missing else f"rows for layer{'s' if len(extra) > 1 else ''} {', '.join(map(str, extra))}, "
                                        "which the model does not have")
                raise CompanionError(
                    f"run {run.name}: its history.csv logs {quantity} with {what}, but its provenance gives "
                    f"{layers} layers (model_size.num_hidden_layers); a layer mean over another set of layers "
                    f"is not the run's value: {fix}.")


#: what a logged value can be, by the end of its quantity's name: a loss (cross-entropy, Eq. 1's
#: objective) and a standard error are >= 0, a share is in [0, 1], a count of blocks is whole
#: and >= 0, a learning rate >= 0; a symmetry score (Def. 3.1), a directionality score (Def. 3.2)
#: and a cosine are in [-1, 1] (with 1e-6 for rounding: the trainer logs six decimals).  A NaN,
#: and a loss of +inf (an overflowed cross-entropy), are a diverged run's, read as they are.
_SCORE = 1.0 + 1e-6
_RANGES = (("loss", "a loss", 0.0, None, False), ("_se", "a standard error", 0.0, None, False),
           ("_share", "a share", 0.0, 1.0, False), ("_blocks", "a count of blocks", 0.0, None, True),
           ("lr", "a learning rate", 0.0, None, False),
           ("symmetry", "a symmetry score (Def. 3.1)", -_SCORE, _SCORE, False),
           ("directionality", "a directionality score (Def. 3.2)", -_SCORE, _SCORE, False),
           ("_cos_grad", "a cosine", -_SCORE, _SCORE, False))


def _check_ranges(hist: pd.DataFrame, run: Path, fix: str) -> None:
    """Refuse a value its quantity cannot have (:data:`_RANGES`), naming the run, quantity and line."""
    import numpy as np

    names = hist["quantity"].astype(str)
    values = hist["value"].to_numpy(dtype=float)
    for end, what, low, high, whole in _RANGES:
        mine = names.str.endswith(end).to_numpy() & ~np.isnan(values)
        with np.errstate(invalid="ignore"):
            off = mine & ((values < low) | ((values > high) if high is not None else False)
                          | ((values != np.round(values)) if whole else False))
        if off.any():
            i = int(np.flatnonzero(off)[0])
            kind = (f"in [{low:g}, {high:g}]" if high is not None else f"a {'whole number' if whole else 'number'} "
                    f">= {low:g}")
            raise CompanionError(f"run {run.name}: its history.csv gives {names.iloc[i]} the value {values[i]:g} "
                                 f"(line {i + 2}), but {what} is {kind}: {fix}.")


#: the columns of a run's history.csv, as :func:`write_run` writes them
HISTORY_COLUMNS = ("step", "quantity", "layer", "head", "value")


def _read_history(run: Path) -> pd.DataFrame:
    """A run's ``history.csv``, refused in one line naming the run when it is not a table of
    the five columns with whole steps and numeric values (a hand edit, a cut-off copy)."""
    import csv

    fix = f"copy it again from the run's work folder, or move {run} away"
    try:
        with open(run / "history.csv", "rb") as fh:
            header = fh.readline()
            fh.seek(0, 2)
            size = fh.tell()
            if size:
                fh.seek(size - 1)
                end = fh.read(1)
    except OSError as err:
        raise CompanionError(f"run {run.name}: its history.csv cannot be read ({err.strerror or err}); {fix}.") from None
    if size and end not in (b"\n", b"\r"):   # the trainer ends every line: the last one was cut off mid-row
        raise CompanionError(f"run {run.name}: its history.csv ends in the middle of a line (a copy cut off: its "
                             f"last value may be read short, 0.52 for 0.523); {fix}.")
    names = next(csv.reader((header.decode("utf-8-sig", errors="replace").splitlines() or [""])[:1]), [])
    twice = sorted({n.strip() for n in names if n.strip() in HISTORY_COLUMNS
                    and [m.strip() for m in names].count(n.strip()) > 1})
    if twice:   # read as value and value.1: the first copy would be taken, unsaid
        raise CompanionError(f"run {run.name}: its history.csv names the column {twice[0]!r} twice in its header, so "
                             f"which of them is the run's cannot be told; {fix}.")
    try:
        hist = pd.read_csv(run / "history.csv")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, csv.Error, ValueError) as err:
        raise CompanionError(f"run {run.name}: its history.csv is not a table this package wrote "
                             f"({str(err).strip().splitlines()[0][:100]}); copy it again from the run's work folder, "
                             f"or move {run} away.") from None
    missing = [c for c in HISTORY_COLUMNS if c not in hist.columns]
    if missing:
        raise CompanionError(f"run {run.name}: its history.csv lacks the columns {missing}; copy it again from the "
                             f"run's work folder, or move {run} away.")
    if hist.empty:   # its columns read as text: 'a step that is not a number (line ?)'
        raise CompanionError(f"run {run.name}: its history.csv holds its header but no row, so the run logged "
                             f"nothing; {fix}.")
    for col in ("step", "layer", "head", "value"):
        if not pd.api.types.is_numeric_dtype(hist[col]):
            bad = hist.index[pd.to_numeric(hist[col], errors="coerce").isna() & hist[col].notna()]
            line = int(bad[0]) + 2 if len(bad) else "?"
            raise CompanionError(f"run {run.name}: its history.csv has a {col} that is not a number (line {line}); "
                                 f"copy it again from the run's work folder, or move {run} away.")
    return hist
