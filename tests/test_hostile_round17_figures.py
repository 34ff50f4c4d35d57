"""What a reader sees in the figures, tables, the explorer and the Colab time budget, checked
against an independent computation from the same input: two series that share a label, a
null summary holding more ranks than the palette has colours, a level a log axis cannot
draw, a long claim name cut twice alike, a time a hair over its budget, a half second, two
large values half a unit apart, a share a hair below one."""

import base64
import math
import re

import matplotlib
import numpy as np
import pandas as pd
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from companion.base.errors import CompanionError  # noqa: E402
from companion.base.phrasing import side_by_side  # noqa: E402
from companion.book.budgets import colab_budget as cb  # noqa: E402
from companion.book.budgets.chapter_times import COLUMNS, _cell  # noqa: E402
from companion.book.explorer import block_means, explorer_html, form_summaries  # noqa: E402
from companion.book.figures.measuring import null_bands, symmetry_random_limit  # noqa: E402
from companion.book.figures.source_data import alt_text, figure_data  # noqa: E402
from companion.book.figures.survey import bias_term_figure, per_head_scores, qk_heatmaps  # noqa: E402
from companion.book.figures.theory import context_ratio_per_type, objective_score_trajectories  # noqa: E402
from companion.book.figures.training import (loss_curves, loss_difference, scores_against_tokens,  # noqa: E402
                                             scores_over_training)
from companion.book.figures.verdicts import evidence_at_a_glance  # noqa: E402
from companion.book.tables import readable  # noqa: E402

H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _cells(html: str) -> list[str]:
    return [c for c in re.findall(r"<td[^>]*>(.*?)</td>", html)]


def _number(text: str) -> float:
    return float(text.replace(",", "").lstrip("~"))


# ------------------------------------------------------------------ the Colab time budget
def _estimate(seconds: float, ratio: float) -> pd.Series:
    times = pd.DataFrame([{"chapter": "ch", "size": "gpu", "device": H100, "cpu_cores": 16, "seconds": seconds,
                           "outcome": "finished", "note": "", "date": "2026-11-25"}], columns=COLUMNS)
    t = cb.colab_estimates(times, costs={"ch": "flops"}, ratios={"flops": ratio, "memory": 1.0, "host_bound": 8.0,
                                                                  "io": 1.0},
                           chapters=["ch"], since={}, live={})
    return t.iloc[0]


@pytest.mark.parametrize("t4", [1800.0002, 1799.9998])
def test_a_t4_estimate_a_hair_from_its_budget_reads_on_its_own_side_of_it(t4):
    row = _estimate(100.0, t4 / 100.0)
    shown = _number(row["t4"])
    assert (row["over_t4_budget"] == "yes") == (t4 > 1800)
    assert (shown > 1800) == (t4 > 1800) and (shown < 1800) == (t4 < 1800), row["t4"]


@pytest.mark.parametrize("s, mark", [(600.0001, 600.0), (599.9999, 600.0), (600.3, 600.0), (1234.5678, 1800.0),
                                     (1800.00000002, 1800.0)])
def test_seconds_beside_a_budget_read_on_the_side_side_by_side_reads_them(s, mark):
    text = cb._seconds(s, mark=mark)
    values, printed_mark = side_by_side([s], mark)
    # the shared rule (base.phrasing.side_by_side) and this one agree on the side of every value
    assert np.sign(_number(text) - mark) == np.sign(float(values[0]) - float(printed_mark)) == np.sign(s - mark)
    assert abs(_number(text) - s) <= 0.5   # and both are the value, to its whole seconds at least


@pytest.mark.parametrize("seconds", [0.5, 0.05, 0.3])
def test_a_measured_time_under_a_second_never_reads_zero_seconds(seconds):
    text = _cell({"outcome": "finished", "seconds": seconds, "note": ""})
    assert text.endswith(" s") and _number(text[:-2]) == float(f"{seconds:.1g}")


def test_whole_times_in_the_intro_table_read_as_before():
    assert [_cell({"outcome": "finished", "seconds": s, "note": ""}) for s in (0, 1.0, 45.2, 119.4, 130.0)] == \
        ["0 s", "1 s", "45 s", "119 s", "2 min"]


# -------------------------------------------------------------------------------- tables
def test_two_means_half_a_unit_apart_at_a_billion_read_apart():
    values = [1e9 + 0.5, 1e9, 2e9]
    cells = _cells(readable(pd.DataFrame({"tokens seen": values})))
    assert len(set(cells)) == 3
    assert all(abs(_number(c) - v) <= 0.005 for c, v in zip(cells, values))


def test_a_column_a_chapter_rounded_keeps_its_decimals():
    cells = _cells(readable(pd.DataFrame({"x": [0.25, 0.5, 1.75]})))
    assert cells == ["0.25", "0.50", "1.75"]


# ------------------------------------------------------------------------- source data
def test_two_lines_sharing_a_label_are_two_series_in_the_source_data_and_alt_text():
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [1, 2, 3], label="seed 0")
    ax.plot([0, 1, 2], [4, 5, 6], label="seed 0")
    data = figure_data(fig)
    sizes = data.groupby("series").size()
    assert sorted(sizes) == [3, 3]
    first = data[data["series"] == "seed 0"]
    assert list(first["y"]) == [1, 2, 3]
    assert "of 6 points" not in alt_text(fig, data) and alt_text(fig, data).count("of 3 points") == 2


def test_narrow_categorical_bars_keep_their_names_in_the_alt_text():
    fig, ax = plt.subplots()
    ax.bar(list("abcdefgh"), range(1, 9), width=0.3)
    assert "8 bars (a, b, c, d, e, f, g, h), heights from 1 to 8" in alt_text(fig)


# --------------------------------------------------------------------------- measuring
def _null_summary(rank_of):
    rows = []
    for d in (16, 32, 64, 128, 256, 512):
        for rank in (-1, rank_of(d)):
            for score in ("symmetry", "directionality"):
                rows.append({"d": d, "rank": rank, "score": score, "n": 100,
                             "mean": 1.0 / d if rank == -1 else 0.25, "std": 0.1,
                             "q0.025": -0.5, "q0.5": 0.0 if rank == -1 else 0.3, "q0.975": 0.5})
    return pd.DataFrame(rows)


def test_null_bands_draw_every_row_of_a_summary_whose_rank_grows_with_d():
    summary = _null_summary(lambda d: d // 4)   # the measuring chapter's null: ranks 4 to 128
    data = figure_data(null_bands(summary, "directionality"))
    lines = data[(data["element"] == "line") & data["series"].str.contains("median")]
    drawn = sorted(zip(lines["x"], lines["y"]))
    want = sorted(zip(summary.loc[summary.score == "directionality", "d"].astype(float),
                      summary.loc[summary.score == "directionality", "q0.5"].astype(float)))
    assert drawn == want


def test_null_bands_of_a_fixed_rank_keep_one_line_per_rank():
    summary = _null_summary(lambda d: 2)
    data = figure_data(null_bands(summary, "directionality"))
    lines = data[(data["element"] == "line") & data["series"].str.contains("median")]
    assert lines.groupby("series").size().to_dict() == {"i.i.d. entries (median, 95% band)": 6,
                                                         "Wq^T Wk, rank 2 (median, 95% band)": 6}


def test_the_random_limit_draws_only_the_iid_rows_of_a_summary_with_ranks():
    summary = _null_summary(lambda d: d // 4)
    data = figure_data(symmetry_random_limit(summary))
    marks = data[(data["element"] == "points")]
    iid = summary[(summary.score == "symmetry") & (summary["rank"] == -1)].sort_values("d")
    assert list(marks["x"]) == list(iid["d"].astype(float)) and list(marks["y"]) == list(iid["mean"])


# ---------------------------------------------------------------------------- training
def test_a_null_level_the_log_axis_cannot_draw_is_said_not_claimed():
    c = pd.Series([0.1, 0.2, 0.3], index=[10, 100, 1000])
    fig = scores_against_tokens({"x": {"encoder": c, "decoder": c}, "y": {"encoder": c, "decoder": c}},
                                "symmetry", bands={"x": -0.05, "y": 0.02})
    data = figure_data(fig)
    levels = data[data["series"].str.startswith("line")]
    assert len(levels) == 2 and levels["y"].to_numpy() == pytest.approx(0.02)   # the drawn level only
    notes = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert "x" in notes and "null level" in notes


def _runs(labels):
    rows = []
    for label in labels:
        for step in (0, 10):
            for layer in (0, 1):
                rows.append({"step": step, "quantity": "symmetry", "layer": layer, "head": -1,
                             "value": 0.01 * step + layer, "label": label, "seed": 0})
    return pd.DataFrame(rows)


def _no_model(t):
    return bias_term_figure(pd.DataFrame({"model": ["m", None], "layer": [0, 0], "share": [0.1, 0.2]}))


def _no_seed(t):
    return loss_difference(pd.DataFrame({"seed": [0, 0, np.nan, np.nan], "step": [0, 1, 0, 1],
                                         "difference": [0.1, 0.0, 0.2, 0.1]}))


def _no_objective(t):
    return objective_score_trajectories(pd.DataFrame({"objective": ["mlm", None], "step": [0, 0],
                                                      "symmetry": [0.1, 0.2], "directionality": [0.0, 0.1]}))


def _no_label(draw):
    return draw(_runs(["encoder / standard", np.nan]))


@pytest.mark.parametrize("draw, column", [
    (lambda t: _no_label(scores_over_training), "label"), (lambda t: _no_label(lambda r: loss_curves(r, "symmetry")), "label"),
    (_no_model, "model"), (_no_seed, "seed"), (_no_objective, "objective")])
def test_rows_a_figure_would_group_away_are_refused_naming_the_column(draw, column):
    # a run without a label, a model, a seed or an objective: groupby left it out without a word
    with pytest.raises(ValueError, match=f"no {column}") as err:
        draw(None)
    assert "\n" not in str(err.value)


# ------------------------------------------------------------------------------ survey
@pytest.mark.parametrize("max_dim", [-1, 0, 2.5, True])
def test_a_crop_that_is_no_positive_whole_number_is_refused_in_one_line(max_dim):
    forms = pd.DataFrame([{"panel": "p", "row": i, "col": j, "value": float(i - j)}
                          for i in range(3) for j in range(3)])
    with pytest.raises(ValueError, match="max_dim"):
        qk_heatmaps(forms, max_dim=max_dim)


def test_a_crop_of_the_whole_matrix_or_more_draws_every_entry():
    forms = pd.DataFrame([{"panel": "p", "row": i, "col": j, "value": float(3 * i + j)}
                          for i in range(3) for j in range(3)])
    for max_dim in (None, 3, 10):
        data = figure_data(qk_heatmaps(forms, max_dim=max_dim))
        image = data[data["element"] == "image"]
        assert sorted(image["value"]) == [float(v) for v in range(9)]


def test_bias_term_percentages_are_the_shares_times_a_hundred():
    layers = pd.DataFrame({"model": ["m"] * 3, "layer": [0, 1, 2], "share": [0.125, -0.05, 0.999]})
    data = figure_data(bias_term_figure(layers))
    line = data[data["element"] == "line"]
    assert list(line["x"]) == [0.0, 0.5, 1.0] and list(line["y"]) == pytest.approx([12.5, -5.0, 99.9])


# ------------------------------------------------------------------------------ theory
def _ratio_result(bagged, share):
    per_type = pd.DataFrame({"count": [10, 20], "ratio": [1.5, 0.8], "low": [1.2, 0.5], "high": [1.9, 1.1]})
    return {"per_type": per_type, "bagged": bagged, "share": share}


@pytest.mark.parametrize("bagged, share", [(0.996, 0.5004), (0.004, 0.4996)])
def test_a_share_a_hair_from_all_none_or_half_never_reads_as_it(bagged, share):
    fig = context_ratio_per_type({"prose": _ratio_result(bagged, share)})
    title = fig.axes[0].get_title()
    shown = [float(x) for x in re.findall(r"\d\.\d+", title)]
    for v, s in zip((bagged, share), shown):
        assert 0 < s < 1 and (s > 0.5) == (v > 0.5) and (s < 0.5) == (v < 0.5), title


# ---------------------------------------------------------------------------- verdicts
def _primary(claims, outcomes=None):
    k = len(claims)
    return pd.DataFrame({"claim": claims, "estimate": [1.0] * k, "low": [0.5] * k, "high": [1.5] * k,
                         "sesoi": [1.0] * k, "n": [3] * k, "gate": [True] * k,
                         "outcome": outcomes or ["holds"] * k})


def test_two_long_claim_names_differing_only_in_the_middle_stay_told_apart():
    claims = ["symmetry gap at the last look, " + w + ", encoder against decoder, bert-mini, all seeds"
              for w in ("width 64", "width 256")]
    fig = evidence_at_a_glance(_primary(claims))
    names = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len(set(names)) == 2


def test_a_missing_outcome_beside_a_misspelt_one_is_refused_in_one_line():
    with pytest.raises(CompanionError, match="unknown outcomes") as err:
        evidence_at_a_glance(_primary(["a", "b"], [np.nan, "Holds"]))
    assert "nan" in str(err.value) and "Holds" in str(err.value)


# ------------------------------------------------------------------------------ explorer
def test_the_explorer_heatmap_decodes_to_the_block_means_within_one_step():
    g = torch.Generator().manual_seed(7)
    M = torch.randn(30, 30, generator=g, dtype=torch.float64) * 1e-3
    rec = form_summaries(M[None], cells=7)[0]
    q = np.frombuffer(base64.b64decode(rec["heat"]), dtype=np.int8).astype(float)
    heat = (q * rec["scale"] / 127).reshape(rec["n"], rec["n"])
    which = [i * 7 // 30 for i in range(30)]   # block of index i: floor(i * cells / d)
    A = M.numpy()
    want = np.array([[A[np.ix_([i for i in range(30) if which[i] == r], [j for j in range(30) if which[j] == c])].mean()
                      for c in range(7)] for r in range(7)])
    assert np.max(np.abs(heat - want)) <= rec["scale"] / 127 / 2 + 1e-15
    assert np.allclose(block_means(M, 7).numpy(), want)


def test_the_explorer_row_norms_are_the_rms_of_the_rows_of_the_form():
    g = torch.Generator().manual_seed(8)
    M = torch.randn(12, 12, generator=g, dtype=torch.float64)
    rec = form_summaries(M[None], cells=4)[0]
    rows = np.linalg.norm(M.numpy(), axis=1)   # 12 <= 48 bins: one bin per row
    assert rec["rows"] == pytest.approx([float(f"{r:.5g}") for r in rows], rel=1e-12)


def test_a_form_holding_a_nan_is_refused_in_one_line_before_any_page_is_written():
    M = torch.randn(1, 8, 8, dtype=torch.float64)
    M[0, 2, 3] = float("nan")
    with pytest.raises(ValueError, match="NaN") as err:
        explorer_html({"m": {"encoder": [{"index": 0, "all": form_summaries(M)[0]}]}})
    assert "\n" not in str(err.value)


@pytest.mark.skipif(__import__("shutil").which("node") is None, reason="the page's script needs node to run")
@pytest.mark.parametrize("s", [0.00049, -0.0004])
def test_the_page_shows_a_score_as_its_value_to_three_decimals_never_minus_zero(tmp_path, s):
    from companion.core.scores import symmetry_score
    from explorer_page import shown_scores

    g = torch.Generator().manual_seed(0)
    A = torch.randn(16, 16, generator=g, dtype=torch.float64)
    S, N = (A + A.T) / 2, (A - A.T) / 2
    M = math.sqrt(1 + s) * S / S.norm() + math.sqrt(1 - s) * N / N.norm()   # symmetry score s by Def. 3.1
    score = float(symmetry_score(M))
    assert score == pytest.approx(s, abs=1e-12)
    rec = form_summaries(M[None], cells=4)[0]
    page = tmp_path / "page.html"
    page.write_text(explorer_html({"m": {"encoder": [{"index": 0, "all": rec, "heads": [], "n_heads": 1, "d": 16}]}}))
    shown = shown_scores(page, tmp_path)
    assert shown.returncode == 0, shown.stderr
    want = f"{score:.3f}".replace("-0.000", "0.000")
    assert shown.stdout.startswith(f"symmetry {want} "), (shown.stdout, want)


def test_the_whole_bias_table_draws_its_layers_not_its_heads_as_layers():
    rows = [{"model": "m", "layer": layer, "head": head, "share": 0.1 * layer + (0.5 if head >= 0 else 0.0)}
            for layer in range(3) for head in (-1, 0, 1)]
    fig = bias_term_figure(pd.DataFrame(rows))   # bias_term_table's rows: heads and whole layers
    data = figure_data(fig)
    line = data[data["element"] == "line"]
    assert list(line["y"]) == pytest.approx([0.0, 10.0, 20.0])   # 100 x the layers' shares
    assert set(line["series"]) == {"m (3 layers)"}


def test_a_model_with_two_stacks_gets_a_panel_per_stack_in_the_per_head_figure():
    rows = []
    for component, role, base in (("encoder", "encoder", 0.5), ("decoder", "causal", -0.5)):
        for layer in range(3):
            for head in (-1, 0, 1):
                rows.append({"key": "t5-small", "component": component, "role": role, "layer": layer, "head": head,
                             "pairing": "grouped", "symmetry": base + 0.1 * layer + 0.01 * head})
    fig = per_head_scores(pd.DataFrame(rows))
    data = figure_data(fig)
    whole = data[data["series"] == "whole layer"]
    by_panel = {p: list(g["y"]) for p, g in whole.groupby("panel")}
    # each stack's layer line holds its own three layers (head -1: base + 0.1 layer - 0.01)
    assert list(by_panel) == [1, 2]
    assert by_panel[1] == pytest.approx([0.49, 0.59, 0.69]) and by_panel[2] == pytest.approx([-0.51, -0.41, -0.31])
    assert [ax.get_title() for ax in fig.axes] == ["t5-small (encoder)", "t5-small (decoder)"]
