"""Runs that join the wrong body, and dates that move: a registration stamp spelled another ISO
way or not yet committed, a landed-runs table that counts a run's lead from another anchor than
the blind check, a folder that names a body's seed its run did not train, the odd run of two
named the wrong way round, a run resumed from a checkpoint that recorded no start, a pattern
reaching outside the runs folder, a reading that does not see a run landed since, a score row
for no layer averaged in or a layer's own row lost, a mean over fewer seeds than its row counts,
a start read from a run's end.  The runs are small synthetic ones of the English-mix v3 body,
each made as its registration says and then changed in one way; the rules' histories are small
git repositories made in tmp_path."""

from __future__ import annotations

import datetime as dt
import json
import re
import os
import subprocess

import pandas as pd
import pytest

from companion.train.runner.runs import first_start, load_runs
from companion.train.studies import landed_runs as lr
from companion.train.studies import registered_bodies as rb
from companion.train.studies import registration as reg
from test_hostile_round15_runs import COLUMNS, STEPS, D, E, _name, _prov, _refused, _rows, _write, body, rules  # noqa: F401  (fixtures)

UTC = dt.timezone.utc


def _read(root, body, commit=None):
    return rb.body_runs_at_looks(body, body["registered"]["fixed"], commit, root=root)


def _git(repo, *args, date=None):
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@x", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout


def _repo(tmp_path, text, date="2026-12-06T10:00:00Z"):
    """A git repository holding ``rules.yaml`` = ``text``, committed at ``date``."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "root", date="2026-12-06T09:00:00Z")
    (repo / "rules.yaml").write_text(text)
    _git(repo, "add", "rules.yaml")
    _git(repo, "commit", "-q", "-m", "rules", date=date)
    return repo


def _registered(path, fixed):
    return {"pattern": "mixv3-bert-mini-*", "label": "probe", "registered": {"file": str(path), "fixed": fixed}}


STAMP = dt.datetime(2026, 12, 6, 9, 59, tzinfo=UTC)


# ------------------------------------------------------------------ the rules' commit


@pytest.mark.parametrize("spelled", ["2026-12-06T09:59:00Z", "2026-12-06 09:59:00+00:00", "2026-12-06T09:59:00+00:00",
                                     "2026-12-06T10:59:00+01:00"])
def test_a_registration_stamp_spelled_any_iso_way_is_found_in_its_file_and_dated_by_its_commit(tmp_path, spelled):
    """YAML reads each of these as the one instant; the file's text spells it its own way, and
    the commit that brought it in is at 10:00 whatever the spelling."""
    import yaml

    repo = _repo(tmp_path, f"framework:\n  fixed: {spelled}\n")
    fixed = yaml.safe_load((repo / "rules.yaml").read_text())["framework"]["fixed"]
    fixed = fixed if fixed.tzinfo else fixed.replace(tzinfo=UTC)   # PyYAML hands a UTC stamp back naive
    assert fixed == STAMP
    assert reg._rules_commit(_registered(repo / "rules.yaml", fixed)) == dt.datetime(2026, 12, 6, 10, tzinfo=UTC)


def test_a_registration_stamp_moved_in_the_working_copy_and_not_committed_is_refused(tmp_path):
    """The rules were committed at 10:00 with 09:59; the working copy now says 08:00, which no
    commit holds.  Read as 'no git history', the anchor fell to 08:00, and a run started at 09:00,
    before the rules were committed, was admitted as blind."""
    repo = _repo(tmp_path, "fixed: 2026-12-06T09:59:00+00:00\n")
    (repo / "rules.yaml").write_text("fixed: 2026-12-06T08:00:00+00:00\n")
    moved = dt.datetime(2026, 12, 6, 8, tzinfo=UTC)
    _refused(lambda: reg._rules_commit(_registered(repo / "rules.yaml", moved)), "rules.yaml",
             "2026-12-06T08:00:00", "no commit", "commit")


def test_a_registration_in_a_rules_file_never_committed_is_refused(tmp_path):
    repo = _repo(tmp_path, "other: 1\n")
    (repo / "new_rules.yaml").write_text("fixed: 2026-12-06T09:59:00+00:00\n")
    _refused(lambda: reg._rules_commit(_registered(repo / "new_rules.yaml", STAMP)), "new_rules.yaml", "commit")


def test_a_registration_outside_any_git_history_is_anchored_at_its_stamp(tmp_path):
    """A copy without git history (a release archive) has no commit to read: the stamp decides."""
    path = tmp_path / "rules.yaml"
    path.write_text("fixed: 2026-12-06T09:59:00+00:00\n")
    assert not (tmp_path / ".git").exists()
    assert reg._rules_commit(_registered(path, STAMP)) is None


def test_a_stamp_committed_then_edited_elsewhere_in_the_file_keeps_its_first_commit(tmp_path):
    repo = _repo(tmp_path, "fixed: 2026-12-06T09:59:00+00:00\nnote: a\n")
    (repo / "rules.yaml").write_text("fixed: 2026-12-06T09:59:00+00:00\nnote: b\n")
    _git(repo, "commit", "-q", "-am", "note", date="2026-12-06T12:00:00Z")
    assert reg._rules_commit(_registered(repo / "rules.yaml", STAMP)) == dt.datetime(2026, 12, 6, 10, tzinfo=UTC)


# ------------------------------------------------------------------ the landed-runs table


def test_the_runs_table_counts_a_runs_lead_from_the_later_of_stamp_and_commit_as_the_blind_check_does(
        tmp_path, body, rules, monkeypatch):
    """A commit whose author time is an hour before the stamp it holds moves nothing earlier
    (started_before_rule); the table counted from it, showing a run the check refuses as 0.5 h
    after the rules."""
    stamp = body["registered"]["fixed"]
    stamp = stamp if isinstance(stamp, dt.datetime) else dt.datetime.fromisoformat(str(stamp))
    early = stamp - dt.timedelta(hours=1)
    started = (stamp - dt.timedelta(minutes=30)).isoformat()
    monkeypatch.setattr(lr, "_rules_commit", lambda body=None: early)
    _write(tmp_path, body, E, 30, started=started)
    _write(tmp_path, body, D, 30, sym=0.0, started=started)
    _refused(lambda: _read(tmp_path, body, early), "before the rules")
    t = lr.runs_table(rules, root=tmp_path)
    assert t["after rules (h)"].tolist() == pytest.approx([-0.5, -0.5])


def test_the_summary_shows_no_lead_for_an_arm_one_of_whose_runs_records_no_start(tmp_path, body, rules, monkeypatch):
    """The smallest lead over runs with a start hid the run without one: the page read the arm
    as started after its rules (> 0), which no run without a start can show."""
    monkeypatch.setattr(lr, "_rules_commit", lambda body=None: None)
    _write(tmp_path, body, E, 30)
    p = _prov(body, E, 31)
    del p["started"]
    _write(tmp_path, body, E, 31, prov=p)
    t = lr.runs_table(rules, root=tmp_path)
    assert t["after rules (h)"].notna().tolist() == [True, False]
    s = lr.runs_summary(t)
    assert len(s) == 1 and pd.isna(s["first start after rules (h)"].iloc[0])


def test_the_runs_table_gives_no_passes_where_the_provenance_gives_no_block_length(tmp_path, body, rules, monkeypatch):
    monkeypatch.setattr(lr, "_rules_commit", lambda body=None: None)
    p = _prov(body, E, 30)
    del p["data"]["seq_len"]
    _write(tmp_path, body, E, 30, prov=p)
    _write(tmp_path, body, D, 30, sym=0.0)
    t = lr.runs_table(rules, root=tmp_path).set_index("run")
    assert pd.isna(t.loc[_name(body, E, 30), "passes"])
    assert t.loc[_name(body, D, 30), "passes"] == pytest.approx(STEPS * 16 * 128 / 1000)


def test_the_runs_table_reads_a_provenance_whose_hardware_is_written_as_text(tmp_path, body, rules, monkeypatch):
    """Older provenances write the device as the hardware itself (the run catalogue reads it so)."""
    monkeypatch.setattr(lr, "_rules_commit", lambda body=None: None)
    p = _prov(body, E, 30)
    p["hardware"] = "cpu (1 threads)"
    _write(tmp_path, body, E, 30, prov=p)
    assert lr.runs_table(rules, root=tmp_path)["device"].tolist() == ["CPU"]


def test_the_pairs_started_apart_are_the_hours_between_their_utc_instants(tmp_path, body, rules, monkeypatch):
    monkeypatch.setattr(lr, "_rules_commit", lambda body=None: None)
    _write(tmp_path, body, E, 30, started="2026-12-01T23:30:00-02:00")   # 2026-12-02T01:30Z
    _write(tmp_path, body, D, 30, sym=0.0, started="2026-12-02T00:00:00Z")
    full = {"bodies": rules["bodies"], "claims": {"training_symmetry": {
        "claim": "Fig. 3a: x", "body": "english-mix-v3", "candidate": E, "comparator": D}}}
    pm = lr.pair_machines(lr.runs_table(full, root=tmp_path), full)
    assert pm["started apart (h)"].tolist() == pytest.approx([1.5])


# ------------------------------------------------------------------ runs joining the wrong body


def test_a_folder_named_for_a_body_seed_whose_run_trained_another_seed_is_refused_not_passed_over(tmp_path, body):
    """Seed 31's encoder folder holds a run of seed 99 (no seed of the body): it was dropped
    unsaid, seed 31 then read as missing though its folder is there, and the missing runs named
    none for it."""
    _write(tmp_path, body, E, 30)
    _write(tmp_path, body, D, 30, sym=0.0)
    _write(tmp_path, body, D, 31, sym=0.0)
    p = _prov(body, E, 99)
    _write(tmp_path, body, E, 31, prov=p)
    _refused(lambda: _read(tmp_path, body), _name(body, E, 31), "seed 99")


def test_a_run_of_another_seed_in_a_folder_no_body_seed_names_is_left_out(tmp_path, body):
    _write(tmp_path, body, E, 30)
    _write(tmp_path, body, D, 30, sym=0.0)
    _write(tmp_path, body, E, 99, sym=0.9)   # seed 99 is no seed of the body: not read, not refused
    runs = _read(tmp_path, body)
    assert sorted(runs["seed"].unique()) == [30]


def test_of_two_runs_one_made_otherwise_the_one_off_its_registration_is_named(tmp_path, body):
    """Two runs differ in warm-up: the comparison between them cannot tell which is the odd one,
    so it named the run that is as registered; the registration can."""
    _write(tmp_path, body, E, 30)
    _write(tmp_path, body, D, 30, sym=0.0, warmup=200)
    msg = _refused(lambda: _read(tmp_path, body), _name(body, D, 30), "warmup")
    assert _name(body, E, 30) not in msg


def test_a_run_whose_hardware_is_text_is_read_as_that_device_by_the_body(tmp_path, body):
    _write(tmp_path, body, E, 30)
    p = _prov(body, D, 30)
    p["hardware"] = "cpu (1 threads)"
    _write(tmp_path, body, D, 30, sym=0.0, prov=p)
    runs = _read(tmp_path, body)
    assert set(runs["device"]) == {"CPU"}


def test_a_run_started_before_the_commit_but_after_the_stamp_is_refused_naming_the_commit(tmp_path, body):
    stamp = body["registered"]["fixed"]
    stamp = stamp if isinstance(stamp, dt.datetime) else dt.datetime.fromisoformat(str(stamp))
    commit = stamp + dt.timedelta(minutes=10)
    _write(tmp_path, body, E, 30, started=(stamp + dt.timedelta(minutes=5)).isoformat())
    _write(tmp_path, body, D, 30, sym=0.0, started=(stamp + dt.timedelta(minutes=20)).isoformat())
    _refused(lambda: _read(tmp_path, body, commit), _name(body, E, 30), "before the rules")
    (tmp_path / _name(body, E, 30) / "provenance.json").write_text(
        json.dumps(_prov(body, E, 30, started=(stamp + dt.timedelta(minutes=11)).isoformat())))
    assert len(_read(tmp_path, body, commit)["run"].unique()) == 2


# ------------------------------------------------------------------ read correctly: layers, horizon, later runs


def test_a_score_row_for_no_layer_beside_the_layers_is_refused_not_averaged_in(tmp_path, body):
    """The trainer logs symmetry per layer (0 to 3) only; a row at layer -1 (a summary added to
    the file) was averaged with the four: (4 x 0.5 + 0.9) / 5 = 0.58 read as the run's 0.5."""
    rows = _rows(0.5) + [(s, "symmetry", -1, -1, 0.9) for s in (STEPS // 2, STEPS)]
    _write(tmp_path, body, E, 30, rows=rows)
    _write(tmp_path, body, D, 30, sym=0.0)
    _refused(lambda: _read(tmp_path, body), _name(body, E, 30), "symmetry", "layer")


def test_a_reading_sees_a_run_landed_after_the_first_reading(tmp_path, body, monkeypatch):
    """The body's runs were cached by the rules' stamp alone: a seed landed while the process ran
    was not read until it restarted."""
    import companion.train.runner.runs as runs_module
    import companion.train.studies.evidence as ev
    from companion.rules import rulebook

    monkeypatch.setattr(runs_module, "runs_root", lambda: tmp_path)
    monkeypatch.setattr(ev, "_unigram_reference", lambda *a, **k: 8.0)
    monkeypatch.setattr(rb, "_rules_commit", lambda body=None: None)   # the stamps decide: no git log here
    rules = {"bodies": {"english-mix-v3": body}}
    monkeypatch.setattr(rulebook, "load_rules", lambda *a, **k: rules)   # the reading loads the rules again
    real = body
    _write(tmp_path, real, E, 30, sym=0.5)
    _write(tmp_path, real, D, 30, sym=0.0)
    rb._cached_runs.cache_clear()
    first = rb.arm_levels(rules)
    assert first.set_index("arm").loc[E, "seeds"] == 1
    _write(tmp_path, real, E, 31, sym=0.3)
    _write(tmp_path, real, D, 31, sym=0.0)
    again = rb.arm_levels(rules).set_index("arm")
    assert again.loc[E, "seeds"] == 2 and again.loc[E, "symmetry"] == pytest.approx((0.5 + 0.3) / 2)
    rb._cached_runs.cache_clear()


def test_a_look_gated_on_runs_from_another_folder_reads_their_provenance_there(tmp_path, body, monkeypatch):
    """Runs read from a folder of one's own (root=...) are gated with their own provenance, not
    with whatever run of that name the package's data/runs holds (or lacks: 'provenance.json is
    missing', naming a file in data/runs)."""
    import companion.train.runner.runs as runs_module
    import companion.train.studies.evidence as ev

    empty, mine = tmp_path / "empty", tmp_path / "mine"
    empty.mkdir()
    monkeypatch.setattr(runs_module, "runs_root", lambda: empty)
    seen = []
    monkeypatch.setattr(ev, "_unigram_reference", lambda *a, **k: seen.append(a) or 8.0)
    for seed, e in zip(range(30, 33), (0.5, 0.52, 0.48)):
        _write(mine, body, E, seed, sym=e)
        _write(mine, body, D, seed, sym=0.0)
    runs = rb.body_runs_at_looks(body, body["registered"]["fixed"], None, root=mine)
    from types import SimpleNamespace

    from companion.rules import sequential

    # the horizon part's interval is not what this reads (its first computation takes seconds)
    monkeypatch.setattr(sequential, "look_estimate",
                        lambda v, nominal: SimpleNamespace(problem=None, mean=0.5, low=0.4, high=0.6))
    rule = {"candidate": E, "comparator": D, "quantity": "symmetry", "body": "english-mix-v3", "body_rule": body}
    gate = {"context_floor_nats": 0.6931, "memorisation_nats": 0.10, "guard_blocks": 320, "horizon_fraction": 0.5}
    got = rb.gate_at_look(runs, rule, {"framework": {"gate": gate}}, [30, 31, 32], 0.01)
    assert got["parts"][0]["unigram reference"] == 8.0 and got["passes"], got["why"]
    # the reference was asked for the registered corpus and block length, read from the runs' own folder
    assert seen[0][:2] == (body["corpus"], 128)


# ------------------------------------------------------------------ a body's first start


def test_the_first_start_of_a_body_counts_a_run_dated_by_its_end_less_its_duration(tmp_path):
    """A run made before runs recorded 'started' began at its end less its duration (as a
    run's start is read everywhere else); left out, the body's first start moved a day later,
    and an edit of its rules in between was not listed as made after a run began."""
    for name, prov in (("a-s1", {"started": "2026-12-03T00:00:00Z"}),
                       ("a-s2", {"date": "2026-12-03T12:00:00Z", "duration_s": 86400.0})):
        d = tmp_path / name
        d.mkdir()
        (d / "provenance.json").write_text(json.dumps(prov))
        (d / "history.csv").write_text(",".join(COLUMNS) + "\n")
    assert first_start({"pattern": "a-*"}, tmp_path) == dt.datetime(2026, 12, 2, 12, tzinfo=UTC)


def test_a_run_whose_first_recorded_sitting_begins_past_step_0_is_refused_as_of_unknown_start(tmp_path, body):
    """A checkpoint made before runs recorded their start, resumed after the rules: the trainer
    stamps 'started' at the resume, and the first sitting begins at step 2,500; steps 0 to 2,500
    were made at a time no file records, perhaps before the rules, and the run read as blind."""
    _write(tmp_path, body, E, 30)
    p = _prov(body, D, 30)
    p["sittings"] = [{"from_step": 2500, "started": p["started"], "cpu_model": "Xeon"}]
    _write(tmp_path, body, D, 30, sym=0.0, prov=p)
    _refused(lambda: _read(tmp_path, body), _name(body, D, 30), "step 2500", "start")
    # a run resumed within its own sittings, the first from step 0, is a run of the body
    (tmp_path / _name(body, D, 30) / "provenance.json").unlink()
    (tmp_path / _name(body, D, 30) / "history.csv").unlink()
    (tmp_path / _name(body, D, 30)).rmdir()
    p = _prov(body, D, 30)
    p["date"] = "2026-12-02T00:00:00Z"
    p["sittings"] = [{"from_step": 0, "started": p["started"], "cpu_model": "Xeon"},
                     {"from_step": 2500, "started": "2026-12-01T06:00:00Z", "cpu_model": "Xeon"}]
    _write(tmp_path, body, D, 30, sym=0.0, prov=p)
    assert sorted(_read(tmp_path, body)["run"].unique()) == [_name(body, D, 30), _name(body, E, 30)]


def test_the_progress_of_a_second_body_counts_a_run_cut_off_before_its_horizon_as_not_finished(tmp_path, monkeypatch):
    """A history whose last evaluation is at 5,000 of the body's 10,000 steps is a run still to
    finish (its script resumes it); counted as finished, the page said a seed had both arms."""
    import companion.train.runner.runs as runs_module
    from companion.train.studies import blind

    monkeypatch.setattr(runs_module, "runs_root", lambda: tmp_path)
    rules = {"bodies": {"second": {"pattern": "mixblind-bert-mini-*", "seeds": [20], "steps": STEPS}}}
    for arm, last in (("encoder-standard", STEPS), ("decoder-standard", STEPS // 2)):
        d = tmp_path / f"mixblind-bert-mini-{arm}-s20"
        d.mkdir()
        pd.DataFrame([(s, "eval_loss", -1, -1, 4.0) for s in range(2500, last + 1, 2500)],
                     columns=COLUMNS).to_csv(d / "history.csv", index=False)
    t = blind.body_progress("second", rules).set_index("run")
    assert t.loc["mixblind-bert-mini-encoder-standard-s20", "finished"]
    assert not t.loc["mixblind-bert-mini-decoder-standard-s20", "finished"]
    assert t.loc["mixblind-bert-mini-decoder-standard-s20", "last step"] == STEPS // 2
    assert "none yet" in blind.progress_text(t)


@pytest.mark.parametrize("pattern", ["../elsewhere/mixv3-bert-mini-*", "**/mixv3-bert-mini-*"])
def test_a_run_pattern_with_a_folder_part_is_refused_not_read_outside_the_runs_folder(tmp_path, body, pattern):
    """A body's pattern names run folders directly under the runs folder; '../elsewhere/...'
    read runs from beside it, '**/' from every folder below, as if they had landed."""
    root, elsewhere = tmp_path / "runs", tmp_path / "elsewhere"
    root.mkdir()
    _write(elsewhere, body, E, 30)
    _write(root / "archive", body, E, 31)
    _refused(lambda: load_runs(root=root, pattern=pattern), re.escape(repr(pattern)), "folder")
    _refused(lambda: first_start({"pattern": pattern}, root), re.escape(repr(pattern)), "folder")
    _write(root, body, E, 32)   # a plain pattern reads the run landed there, and only it
    assert load_runs(root=root, pattern="mixv3-bert-mini-*")["seed"].unique().tolist() == [32]


def test_a_history_missing_one_layers_whole_form_row_beside_its_heads_rows_is_refused_not_averaged_over_three(
        tmp_path, body):
    """The trainer logs each layer's whole form (head -1) and each of its heads; a file without
    layer 3's whole-form rows still holds layer 3 (its heads' rows), so the layer set looked
    whole, and the layer mean was read over layers 0 to 2: 0.4 for the run's 0.475."""
    rows = []
    for r in _rows(0.4):
        if r[1] == "symmetry" and r[2] == 3:
            continue   # layer 3's whole-form row lost at every step
        rows.append(r)
        if r[1] in ("symmetry", "directionality") and r[2] >= 0:
            rows += [(r[0], r[1], r[2], h, r[4]) for h in range(4)]
    rows += [(s, "symmetry", 3, h, 0.7) for s in (STEPS // 2, STEPS) for h in range(4)]
    _write(tmp_path, body, E, 30, rows=rows)
    _write(tmp_path, body, D, 30, sym=0.0)
    _refused(lambda: _read(tmp_path, body), _name(body, E, 30), "symmetry", "layer 3")


def test_an_arms_level_with_a_seed_lacking_the_guard_sample_is_no_number_not_the_other_seeds_mean(tmp_path, body, monkeypatch):
    """The English-mix body reads the unseen sample; a run without its held-out sample is one
    of the body, and the arm's 'held-out minus seen' was the mean over the other seed while the
    row said two seeds."""
    import companion.train.runner.runs as runs_module
    from companion.rules import rulebook

    monkeypatch.setattr(runs_module, "runs_root", lambda: tmp_path)
    monkeypatch.setattr(rb, "_rules_commit", lambda body=None: None)   # the stamps decide: no git log here
    rules = {"bodies": {"english-mix-v3": body}}
    monkeypatch.setattr(rulebook, "load_rules", lambda *a, **k: rules)   # the reading loads the rules again
    real = body
    _write(tmp_path, real, E, 30)
    _write(tmp_path, real, E, 31, rows=[r for r in _rows(0.5) if r[1] not in ("guard_heldout_loss", "guard_heldout_blocks")])
    for seed in (30, 31):
        _write(tmp_path, real, D, seed, sym=0.0)
    rb._cached_runs.cache_clear()
    got = rb.arm_levels(rules).set_index("arm")
    rb._cached_runs.cache_clear()
    assert got.loc[E, "seeds"] == 2
    assert got.loc[E, "unseen minus seen (nats)"] == pytest.approx(4.02 - 4.0)
    assert pd.isna(got.loc[E, "held-out minus seen (nats)"])
    assert got.loc[D, "held-out minus seen (nats)"] == pytest.approx(4.03 - 4.0)
