"""The readers of the rules files and of the runs, fuzzed: every mutation of a real rules file
(a key removed, a value of another kind or out of range) and of a real run (its provenance or
its history.csv edited or cut off) is read or refused in one line naming the problem, never a
raw exception from further down.  Seeds are fixed, so a failure here is reproducible."""

from __future__ import annotations

import copy
import json
import random
import shutil
from pathlib import Path

import pytest
import yaml

from companion.base.errors import CompanionError

ROOT = Path(__file__).resolve().parents[1]
ODD = [None, "", "x", -1, 0, 1e309, float("nan"), [], {}, [1, "a"], {"a": 1}, True, "2026-13-01", 10**12, -0.5, 2.5]


def _paths(d, pre=()):
    if isinstance(d, dict):
        for k, v in d.items():
            yield pre + (k,)
            yield from _paths(v, pre + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            yield pre + (i,)
            yield from _paths(v, pre + (i,))


def _mutate(doc, rng):
    d = copy.deepcopy(doc)
    where = rng.choice(list(_paths(d)))
    parent = d
    for k in where[:-1]:
        parent = parent[k]
    if rng.random() < 0.3 and isinstance(parent, dict):
        del parent[where[-1]]
    else:
        parent[where[-1]] = rng.choice(ODD)
    return d, where


def _read_or_refuse(read, what):
    try:
        read()
    except CompanionError as err:
        assert "\n" not in str(err).strip(), f"{what}: a refusal of several lines: {err}"
    except Exception as err:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{what}: {type(err).__name__}: {str(err)[:200]}")


@pytest.mark.parametrize("name, seed", [("verdict_rules.yaml", 1), ("rules_history/verdict_rules_v3.yaml", 2),
                                        ("rules_history/verdict_rules_v2.yaml", 3)])
def test_a_mutated_rules_file_is_read_or_refused_in_one_line(tmp_path, name, seed):
    from companion.rules.rulebook import load_rules

    load = load_rules if name == "verdict_rules.yaml" else (lambda f: load_rules(f, check_design=False))
    doc = yaml.safe_load((ROOT / "data" / name).read_text(encoding="utf-8"))
    rng = random.Random(seed)
    for i in range(100 if name == "verdict_rules.yaml" else 40):
        mutated, where = _mutate(doc, rng)
        f = tmp_path / f"{i}.yaml"
        f.write_text(yaml.safe_dump(mutated, allow_unicode=True), encoding="utf-8")
        _read_or_refuse(lambda: load(f), f"{name} with {where} changed")


def test_a_mutated_run_is_read_or_refused_in_one_line(tmp_path, monkeypatch):
    import companion.train.runner.runs as runs_module
    from companion.train.studies.evidence import body_runs

    runs = [f"mixblind-bert-mini-encoder-standard-s{s}" for s in (20, 21, 22)]
    body = {"label": "fuzzed", "pattern": "mixblind-bert-mini-*", "seeds": [20, 21, 22], "steps": 10000, "lr": 0.001}
    for r in runs:
        shutil.copytree(ROOT / "data" / "runs" / r, tmp_path / r)
    monkeypatch.setattr(runs_module, "runs_root", lambda: tmp_path)
    prov = {r: (tmp_path / r / "provenance.json").read_text() for r in runs}
    hist = {r: (tmp_path / r / "history.csv").read_text() for r in runs}
    rng = random.Random(3)
    for _ in range(40):
        for r in runs:
            (tmp_path / r / "provenance.json").write_text(prov[r])
            (tmp_path / r / "history.csv").write_text(hist[r])
        r = rng.choice(runs)
        if rng.random() < 0.6:
            p, where = _mutate(json.loads(prov[r]), rng)
            (tmp_path / r / "provenance.json").write_text(json.dumps(p))
            what = f"{r} provenance with {where} changed"
        else:
            lines = hist[r].splitlines()
            j = rng.randrange(len(lines))
            cells = lines[j].split(",")
            cells[rng.randrange(len(cells))] = rng.choice(["", "x", "nan", "1e309", "a,b"])
            lines[j] = ",".join(cells)
            if rng.random() < 0.2:
                lines = lines[:rng.randrange(len(lines))]
            (tmp_path / r / "history.csv").write_text("\n".join(lines) + "\n")
            what = f"{r} history.csv with line {j + 1} changed"
        _read_or_refuse(lambda: body_runs(body), what)
