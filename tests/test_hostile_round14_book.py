"""Hostile input (issue 74) to the pieces that put computed values into the book's pages.

The glue helpers (``companion.book.paste``), the reader's tables (``companion.book.tables``),
the figures' alt text and source data (``companion.book.figures.source_data`` and the Sphinx
extension that writes the CSV beside each image), the survey explorer
(``companion.book.explorer``), the kernels' start-up defaults (``companion.book.kernel``), the
accessibility report (``companion.book.checks.a11y``), the live-run plan and the chapter
registry (``companion.book.budgets``).

Each case states the right behaviour computed apart from the code under test: a glued value
as myst-nb pastes it (its ``text/plain`` read back by myst-nb's own ``format_plain_text``),
table cells read back with an HTML parser and compared with values written by hand or with
``Decimal``, norms at the ends of float64 against the same form at ordinary scale, and bad
input refused in one line that names it.  Nothing here starts a browser or builds the book.
"""

from __future__ import annotations

import base64
import gzip
import json
import math
import os
import shutil
import threading
import types
from decimal import Decimal
from fractions import Fraction
from html.parser import HTMLParser
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from explorer_page import shown_scores  # noqa: E402
from one_line import one_line  # noqa: E402


# ============================================================ helpers (independent of the code under test)
@pytest.fixture
def glued(monkeypatch):
    """What each glue helper hands myst-nb: ``{name: value}``."""
    import myst_nb

    seen: dict = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: seen.update({name: value}))
    return seen


def _pasted(value, spec: str = "") -> str:
    """What ``{glue:text}`name:spec``` writes for a glued value: myst-nb reads the value's
    ``text/plain`` (its ``repr``) back with its own formatter."""
    from myst_nb.core.variables import format_plain_text

    return format_plain_text(repr(value), spec)


class _Table(HTMLParser):
    """A table's header cells and body cells as a browser reads them."""

    def __init__(self):
        super().__init__()
        self.heads, self.rows, self._cell, self._in = [], [], None, None

    def handle_starttag(self, tag, attrs):
        if tag == "tr" and self._in == "tbody":
            self.rows.append([])
        if tag in ("thead", "tbody"):
            self._in = tag
        if tag in ("th", "td"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("th", "td") and self._cell is not None:
            (self.heads if self._in == "thead" else self.rows[-1]).append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def _read(obj) -> tuple[list[str], list[list[str]]]:
    from companion.book.tables import readable

    p = _Table()
    p.feed(readable(obj))
    return p.heads, p.rows


def _within(seconds, fn):
    """``fn()``'s result or the exception it raised; the test fails if it blocks."""
    out = {}

    def go():
        try:
            out["r"] = fn()
        except BaseException as err:  # noqa: BLE001
            out["e"] = err

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "blocked"
    return out


# ============================================================ (a) the glue helpers: what a sentence shows
@pytest.mark.parametrize("value", [True, np.bool_(False)], ids=["bool", "numpy-bool"])
def test_a_yes_no_glued_as_a_number_is_refused_naming_it(glued, value):
    # myst-nb would paste 'True' (or '1.00' through :.2f) into a sentence about a number
    from companion.book import paste

    with pytest.raises(TypeError) as err:
        paste.glue_number("converged", value)
    assert "'converged'" in one_line(err) and "glue_text" in str(err.value)
    assert glued == {}


@pytest.mark.parametrize("value, number", [(Decimal("1.25"), 1.25), (Fraction(1, 4), 0.25),
                                           (np.longdouble("1.5"), 1.5)], ids=["Decimal", "Fraction", "longdouble"])
def test_a_decimal_fraction_or_long_double_is_pasted_as_its_number(glued, value, number):
    # their repr (Decimal('1.25')) would be pasted as it is, and :.2f could not format it
    from companion.book import paste

    paste.glue_number("share", value)
    assert _pasted(glued["share"]) == repr(number)
    assert _pasted(glued["share"], ".2f") == f"{number:.2f}"


@pytest.mark.parametrize("make", [lambda: np.array(3.5), lambda: torch.tensor(3.5, dtype=torch.float64)],
                         ids=["0-d array", "torch scalar"])
def test_a_0d_array_or_a_torch_scalar_is_pasted_as_its_number(glued, make):
    # 'array(3.5)' and 'tensor(3.5000, dtype=torch.float64)' were pasted into the sentence
    from companion.book import paste

    paste.glue_number("loss", make())
    assert _pasted(glued["loss"]) == "3.5" and _pasted(glued["loss"], ".3f") == "3.500"


@pytest.mark.parametrize("value", [-0.0, np.float64(-0.0)], ids=["float", "numpy"])
def test_negative_zero_is_pasted_as_zero(glued, value):
    from companion.book import paste

    paste.glue_number("shift", value)
    assert _pasted(glued["shift"]) == "0.0" and _pasted(glued["shift"], ".2f") == "0.00"


def test_an_integer_no_number_format_can_write_is_refused_in_one_line(glued):
    # float(10**400) raised OverflowError from inside the helper
    from companion.book import paste

    with pytest.raises(ValueError) as err:
        paste.glue_number("count", 10**400)
    assert "'count'" in one_line(err) and "401 digits" in str(err.value)
    paste.glue_number("count", 10**300)    # one a float still holds is glued as the integer it is
    assert glued["count"] == 10**300 and type(glued["count"]) is int


def test_a_number_written_as_text_is_refused_naming_glue_text(glued):
    # '1_000' was glued as text and pasted as '1_000'
    from companion.book import paste

    with pytest.raises(TypeError) as err:
        paste.glue_number("tokens", "1_000")
    assert "'tokens'" in one_line(err) and "glue_text" in str(err.value)


def test_an_ordinary_numpy_number_is_pasted_exactly(glued):
    from companion.book import paste

    paste.glue_number("n", np.uint8(200))
    paste.glue_number("p", np.float32(0.1))
    assert _pasted(glued["n"]) == "200"
    assert glued["p"] == float(np.float32(0.1)) and _pasted(glued["p"], ".4f") == "0.1000"


@pytest.mark.parametrize("value", [None, pd.NA, pd.NaT, np.datetime64("NaT")], ids=["None", "NA", "NaT", "datetime64-NaT"])
def test_a_missing_value_glued_as_text_is_refused_naming_it(glued, value):
    # 'None', '<NA>' and 'NaT' were pasted into sentences as words
    from companion.book import paste

    with pytest.raises(ValueError) as err:
        paste.glue_text("end", value)
    assert "'end'" in one_line(err) and glued == {}


def test_a_list_holding_a_missing_value_glued_as_text_is_refused(glued):
    from companion.book import paste

    with pytest.raises(ValueError, match=r"glue_text\('seeds'\)"):
        paste.glue_text("seeds", [1, pd.NA, 3])    # str(): '[1, <NA>, 3]'


def test_words_that_only_look_like_a_missing_value_are_glued(glued):
    from companion.book import paste

    text = "None of the NATO seeds; a Natural reading; <NAME>; NaTive"
    paste.glue_text("words", text)
    assert _pasted(glued["words"]) == text


def test_markup_glued_as_text_reaches_myst_nb_as_that_text_without_quotes(glued):
    from companion.book import paste

    text = "</textarea><script>x()</script> {eval}`1` $$a$$ ``b`` :::{glue} y"
    paste.glue_text("raw", text)
    assert _pasted(glued["raw"]) == text and _pasted(glued["raw"], "s") == text


# ============================================================ (b) the reader's tables
@pytest.mark.parametrize("name", [None, float("nan"), pd.NaT], ids=["None", "NaN", "NaT"])
def test_a_column_named_by_a_missing_value_reads_empty_not_nan(name):
    heads, rows = _read(pd.DataFrame([[1, 2]], columns=pd.Index([name, "b"], dtype=object)))
    assert heads == ["", "b"] and rows == [["1", "2"]]


def test_an_index_named_by_a_missing_value_reads_empty_not_nan():
    heads, rows = _read(pd.DataFrame({"a": [1.5]}, index=pd.Index(["r"], name=float("nan"))))
    assert heads == ["", "a"] and rows == [["r", "1.5"]]


def test_the_columns_a_styler_hides_are_not_shown():
    df = pd.DataFrame({"a": [1, 2], "b": [3, 4], "secret": [5, 6]})
    assert _read(df.style.hide(subset=["secret"], axis="columns")) == (["a", "b"], [["1", "3"], ["2", "4"]])


def test_the_rows_a_styler_hides_are_not_shown():
    df = pd.DataFrame({"a": [1, 2], "b": [3, 4]})
    assert _read(df.style.hide(subset=[0], axis="index")) == (["a", "b"], [["2", "4"]])


def test_the_index_level_a_styler_hides_is_not_shown():
    df = pd.DataFrame({"v": [1, 2]}, index=pd.MultiIndex.from_tuples([("a", "x"), ("a", "y")], names=["g", "h"]))
    assert _read(df.style.hide(level="h", axis="index")) == (["g", "v"], [["a", "1"], ["a", "2"]])


def test_an_integer_beyond_float64_reads_in_scientific_notation():
    # column_formats took float() of it: OverflowError from inside readable()
    heads, rows = _read(pd.DataFrame({"count": [10**400, 7]}, dtype=object))
    assert rows == [["1e+400"], ["7"]]


@pytest.mark.parametrize("pair", [(2**62, 2**62 + 1), (10**20, 10**20 + 1)], ids=["2^62", "1e20"])
def test_two_huge_integers_float64_cannot_tell_apart_read_apart(pair):
    _, rows = _read(pd.DataFrame({"n": list(pair)}, dtype=object))
    shown = [r[0] for r in rows]
    assert len(set(shown)) == 2, shown
    assert [int(Decimal(s)) for s in shown] == list(pair)     # each reads exactly its value


def test_a_time_span_reads_with_its_sign_and_length():
    # pandas writes five seconds before as '-1 days +23:59:55'
    spans = pd.to_timedelta([-5, 90, 2 * 86400 + 3], unit="s")
    _, rows = _read(pd.DataFrame({"took": spans}))
    assert [r[0] for r in rows] == ["-0:00:05", "0:01:30", "2 days 0:00:03"]


def test_a_dict_cell_holding_a_nan_reads_a_dash():
    _, rows = _read(pd.DataFrame({"d": [{"low": float("nan"), "high": 0.5}]}))
    assert rows == [["low: —, high: 0.5"]]


def test_two_columns_whose_names_read_alike_keep_their_own_names():
    # 'p_decides' reads 'deciding p': two headers read the same
    heads, _ = _read(pd.DataFrame({"p_decides": [1], "deciding p": [2]}))
    assert heads == ["p_decides", "deciding p"]


def test_two_columns_of_one_name_are_both_shown_with_their_values():
    assert _read(pd.DataFrame([[1, 2.5]], columns=["a", "a"])) == (["a", "a"], [["1", "2.5"]])


def test_a_two_level_column_header_reads_as_its_levels_joined():
    df = pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("loss", "train_loss"), ("loss", "eval_loss")]))
    assert _read(df)[0] == ["loss, train loss", "loss, held-out loss"]


def test_a_column_of_mixed_types_reads_each_cell_as_itself():
    _, rows = _read(pd.DataFrame({"m": [1, "two", 3.25, None, True]}))
    assert [r[0] for r in rows] == ["1", "two", "3.25", "—", "yes"]


def test_negative_zero_in_a_table_reads_zero():
    _, rows = _read(pd.DataFrame({"z": [-0.0, 1.5]}))
    assert [r[0] for r in rows] == ["0", "1.5"]


def test_very_long_text_with_markup_is_kept_whole_and_escaped():
    from companion.book.tables import readable

    text = "<b>" + "x" * 20000 + "</b>"
    html = readable(pd.DataFrame({"t": [text]}))
    assert "<b>" not in html and _read(pd.DataFrame({"t": [text]}))[1] == [[text]]


def test_a_caption_that_is_no_text_is_written_as_its_text():
    from companion.book.tables import readable

    html = readable(pd.DataFrame({"a": [1]}), caption=2024)    # AttributeError before
    assert "<caption>2024</caption>" in html


def test_nullable_integers_and_yes_no_with_a_gap_read_a_dash_for_it():
    df = pd.DataFrame({"i": pd.array([1, None, 3000], dtype="Int64"), "b": [True, None, False]})
    assert _read(df)[1] == [["1", "yes"], ["—", "—"], ["3,000", "no"]]


# ============================================================ (c) figures: alt text and the CSV beside each image
class _Log:
    def __init__(self):
        self.warnings = []

    def warning(self, msg, **_):
        self.warnings.append(msg)

    def info(self, *_, **__):
        pass


@pytest.fixture
def figure_page(tmp_path, monkeypatch):
    """``write(images, docname)``: run the extension's figure step on a page of images; returns
    the warnings and the page's source-data links."""
    import sphinx.util.logging as slog
    from docutils import nodes
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    from companion.book import sphinxext

    log = _Log()
    monkeypatch.setattr(slog, "getLogger", lambda name: log)
    out = tmp_path / "site"
    out.mkdir()
    app = types.SimpleNamespace(builder=types.SimpleNamespace(format="html"), outdir=str(out))

    def write(images, docname="page"):
        log.warnings.clear()
        doc = new_document("page", get_default_settings(Parser))
        for kw in images:
            para = nodes.paragraph()
            image = nodes.image(**kw)
            image["companion_figure"] = True
            para += image
            doc += para
        sphinxext.write_figure_data(app, doc, docname)
        return list(log.warnings), [r["refuri"] for r in doc.findall(nodes.reference)]

    write.out = out
    return write


def _blob(text: str) -> str:
    return base64.b64encode(gzip.compress(text.encode("utf-8"))).decode("ascii")


def test_a_figure_whose_alt_text_is_only_spaces_is_warned_about(figure_page):
    warnings, _ = figure_page([{"uri": "_images/a.png", "alt": " \t ", "companion_csv": _blob("x\n1\n")}])
    assert any("a.png" in w and "no alt text" in w for w in warnings), warnings


@pytest.mark.parametrize("blob", ["not base64!!", base64.b64encode(b"plain text").decode(),
                                  base64.b64encode(gzip.compress(b"\xff\xfe")).decode()],
                         ids=["no base64", "no gzip", "no UTF-8"])
def test_source_data_that_is_no_csv_is_one_warning_naming_the_figure(figure_page, blob):
    warnings, links = figure_page([{"uri": "_images/b.png", "alt": "ok", "companion_csv": blob}])
    assert len(warnings) == 1 and "b.png" in warnings[0] and "\n" not in warnings[0], warnings
    assert links == [] and not (figure_page.out / "_images" / "b.csv").exists()


def test_the_csv_of_an_earlier_build_is_replaced_by_this_figure_s_data(figure_page):
    # an earlier build's file was kept as it was, and linked under a figure it does not describe
    (figure_page.out / "_images").mkdir()
    (figure_page.out / "_images" / "h.csv").write_text("x\nold\n")
    figure_page([{"uri": "_images/h.png", "alt": "ok", "companion_csv": _blob("x\n2.5\n")}])
    assert (figure_page.out / "_images" / "h.csv").read_text() == "x\n2.5\n"


def test_two_figures_whose_images_share_a_stem_each_link_their_own_data(figure_page):
    _, links = figure_page([{"uri": "_images/k.png", "alt": "ok", "companion_csv": _blob("x\n1\n")},
                            {"uri": "_images/k.svg", "alt": "ok", "companion_csv": _blob("y\n2\n")}], "sub/page")
    assert len(links) == 2 and links[0] != links[1], links
    texts = [(figure_page.out / "sub" / link).resolve().read_text() for link in links]
    assert texts == ["x\n1\n", "y\n2\n"]


@pytest.mark.parametrize("uri", ["../../e.png", "_images/f.png?x=../../../g", "..\\..\\w.png"])
def test_an_image_address_that_climbs_out_keeps_its_csv_in_the_image_folder(figure_page, uri):
    _, links = figure_page([{"uri": uri, "alt": "ok", "companion_csv": _blob("x\n1\n")}])
    written = [p for p in figure_page.out.parent.rglob("*.csv")]
    assert len(written) == 1 and written[0].parent == figure_page.out / "_images", written
    assert links == [f"_images/{written[0].name}"]


def test_a_link_where_the_csv_goes_is_never_written_through(figure_page, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    (figure_page.out / "_images").mkdir()
    (figure_page.out / "_images" / "v.csv").symlink_to(victim)
    figure_page([{"uri": "_images/v.png", "alt": "ok", "companion_csv": _blob("x\n1\n")}])
    assert victim.read_text() == "mine"


def test_source_data_that_inflates_past_the_bound_is_refused(monkeypatch):
    from companion.book.figures import source_data as sd

    monkeypatch.setattr(sd, "MAX_CSV_BYTES", 1000, raising=False)
    with pytest.raises(ValueError) as err:
        sd.decode_csv(_blob("0," * 5000))
    assert "1,000 bytes" in one_line(err)


def test_source_data_cut_short_is_refused_in_one_line():
    from companion.book.figures import source_data as sd

    raw = gzip.compress(b"x,y\n" + b"1,2\n" * 500)
    with pytest.raises(ValueError) as err:
        sd.decode_csv(base64.b64encode(raw[: len(raw) // 2]).decode())
    assert "source data" in one_line(err)


def test_the_csv_keeps_a_label_with_commas_quotes_a_newline_and_markup():
    from matplotlib.figure import Figure

    from companion.book.figures import source_data as sd

    label = 'a,"b"\nc =1+2 <script>'
    fig = Figure()
    fig.add_subplot().plot([0, 1], [0.25, -1e-300], label=label)
    back = sd.read_csv_text(sd.decode_csv(sd.encode_csv(sd.figure_data(fig))))
    assert back["series"].tolist() == [label, label] and back["y"].tolist() == [0.25, -1e-300]


def test_the_alt_text_reads_negative_zero_as_zero():
    from matplotlib.figure import Figure

    from companion.book.figures import source_data as sd

    fig = Figure()
    fig.add_subplot().plot([0, 1], [-0.0, -0.0], label="flat")
    assert "y 0." in sd.alt_text(fig) and "-0" not in sd.alt_text(fig)


@pytest.mark.parametrize("lo, hi", [(1000, 1001), (0.12345, 0.12349), (19723.0, 19725.0)])
def test_the_alt_text_never_reads_two_different_ends_as_one(lo, hi):
    # three significant digits wrote 'from 1e+03 to 1e+03'
    import re

    from matplotlib.figure import Figure

    from companion.book.figures import source_data as sd

    fig = Figure()
    fig.add_subplot().plot([lo, hi], [1, 2], label="s")
    m = re.search(r"x from (\S+) to (\S+?),", sd.alt_text(fig))
    assert m and m.group(1) != m.group(2), sd.alt_text(fig)
    assert float(m.group(1)) == pytest.approx(lo, rel=1e-4) and float(m.group(2)) == pytest.approx(hi, rel=1e-4)


# ============================================================ (d) the survey explorer
def _record(M, cells=4):
    from companion.book.explorer import form_summaries

    return form_summaries(M, cells=cells)[0]


def _page(rec, name="m"):
    from companion.book.explorer import explorer_html

    return explorer_html({name: {"encoder": [{"index": 0, "all": rec, "heads": [rec], "n_heads": 1, "d": rec["n"]}]}})


def _seeded(shape, seed=0):
    return torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


def test_a_model_name_holding_a_script_end_and_line_separators_stays_data():
    from companion.book.explorer import is_explorer_html

    name = "</script><script>alert(1)</script><!--\u2028\u2029&"
    page = _page(_record(_seeded((1, 8, 8))), name)
    assert page.count("</script>") == 1 and page.lower().count("<script") == 1
    assert "\u2028" not in page and "\u2029" not in page and "<!--" not in page
    data = json.loads(page[page.index("const DATA = ") + len("const DATA = "):page.index(";\n  const root")])
    assert list(data) == [name] and is_explorer_html(page)


@pytest.mark.parametrize("where", ["model", "stack"])
def test_a_model_named_so_that_the_page_would_lose_it_is_refused(where):
    # in the page's script, {"__proto__": ...} sets the object's prototype: the model vanished
    from companion.book.explorer import explorer_html

    rec = _record(_seeded((1, 8, 8)))
    layers = [{"index": 0, "all": rec, "heads": [rec], "n_heads": 1, "d": 8}]
    data = {"__proto__": {"encoder": layers}} if where == "model" else {"m": {"__proto__": layers}}
    with pytest.raises(ValueError) as err:
        explorer_html(data)
    assert "'__proto__'" in one_line(err)


@pytest.mark.parametrize("cells", [0, -3, 2.5, True], ids=["0", "negative", "fraction", "bool"])
def test_a_grid_that_is_no_whole_number_of_cells_is_refused_in_one_line(cells):
    # IndexError, RuntimeError or TypeError from inside torch before
    from companion.book.explorer import form_summaries

    with pytest.raises(ValueError) as err:
        form_summaries(_seeded((1, 8, 8)), cells=cells)
    assert repr(cells) in one_line(err) and "cells" in str(err.value)


def test_a_negative_cap_on_heads_is_refused_not_read_as_all_but_the_last():
    from companion.book.explorer import explorer_data

    Q, K = _seeded((3, 4, 8), 6), _seeded((3, 4, 8), 7)
    layer = types.SimpleNamespace(index=0, n_heads=3, d_model=8, component="encoder",
                                  head_factors=lambda how: (Q, K), form=lambda how: (Q.transpose(-1, -2) @ K).sum(0))
    live = {"m": types.SimpleNamespace(self_attention_layers=lambda: [layer])}
    assert len(explorer_data(live, cells=4, max_heads=2)["m"]["encoder"][0]["heads"]) == 2
    with pytest.raises(ValueError) as err:
        explorer_data(live, cells=4, max_heads=-1)    # Q[:-1]: every head but the last
    assert "max_heads" in one_line(err)


def test_a_form_of_zeros_has_no_score_and_its_page_carries_no_nan():
    rec = _record(torch.zeros(1, 8, 8, dtype=torch.float64))
    assert rec["symmetry"] is None and rec["directionality"] is None
    assert "NaN" not in _page(rec)


def test_the_explorer_refuses_a_nan_in_its_data_in_one_line():
    from companion.book.explorer import embed_json

    with pytest.raises(ValueError) as err:
        embed_json({"m": {"symmetry": float("nan")}})
    assert "NaN" in one_line(err)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_page_script_shows_a_dash_for_an_undefined_score(tmp_path):
    # the script wrote rec.symmetry.toFixed(3): 'symmetry NaN' for a form of zeros
    page = tmp_path / "page.html"
    page.write_text(_page(_record(torch.zeros(1, 8, 8, dtype=torch.float64))))
    shown = shown_scores(page, tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "NaN" not in shown.stdout and shown.stdout.startswith("symmetry —   directionality —"), shown.stdout


@pytest.mark.parametrize("scale", [1e300, 1e-300], ids=["1e300", "1e-300"])
def test_a_form_at_the_ends_of_float64_shows_the_norms_of_the_form_at_ordinary_scale(scale):
    # the row and column norms overflowed to NaN at 1e300 and underflowed to 0 at 1e-300
    M = _seeded((1, 16, 16), 3)
    plain, far = _record(M), _record(M * scale)
    assert np.allclose(np.array(far["rows"]) / scale, plain["rows"], rtol=1e-4)
    assert np.allclose(np.array(far["cols"]) / scale, plain["cols"], rtol=1e-4)
    assert far["scale"] / scale == pytest.approx(plain["scale"], rel=1e-9)


def test_factored_heads_at_the_ends_of_float64_show_the_norms_at_ordinary_scale():
    from companion.book.explorer import head_summaries

    Q, K = _seeded((2, 4, 16), 4), _seeded((2, 4, 16), 5)
    # Q^T K at 1e300: its norms are finite, the products on the way (Q K K^T Q, 1e600) are not
    plain, far = head_summaries(Q, K, cells=4), head_summaries(Q * 1e150, K * 1e150, cells=4)
    for a, b in zip(plain, far):
        assert np.allclose(np.array(b["rows"]) / 1e300, a["rows"], rtol=1e-4)
        assert np.allclose(np.array(b["cols"]) / 1e300, a["cols"], rtol=1e-4)
        assert b["scale"] / 1e300 == pytest.approx(a["scale"], rel=1e-9)


# ============================================================ (e) the kernels' start-up
def test_the_book_defaults_set_twice_are_the_defaults_set_once():
    from cycler import cycler
    from IPython.core.interactiveshell import InteractiveShell

    from companion.book.kernel import use_book_defaults
    from companion.book.tables import readable

    shell = InteractiveShell.instance()
    try:
        with pd.option_context("display.max_colwidth", 50), matplotlib.rc_context():
            use_book_defaults()
            use_book_defaults()
            assert pd.get_option("display.max_colwidth") is None
            okabe_ito = ["#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
            assert matplotlib.rcParams["axes.prop_cycle"] == cycler(color=okabe_ito)
            df = pd.DataFrame({"claim": ["table_1"], "p": [np.nan]})
            assert shell.display_formatter.format(df)[0]["text/html"] == readable(df)
    finally:
        InteractiveShell.clear_instance()


# ============================================================ (f) the accessibility report
def _violation(**node):
    return {"id": "image-alt", "impact": "critical", "help": "Images must have alternative text",
            "nodes": [{"impact": "critical", "target": ["img"], **node}]}


def test_one_impact_given_as_a_word_is_matched_whole_not_as_part_of_it():
    from companion.book.checks.a11y import failing_violations

    result = {"violations": [{"id": "x", "impact": "ritic", "nodes": [{"impact": "ritic"}]},
                             {"id": "y", "impact": "critical", "nodes": [{"impact": "critical"}]}]}
    assert [v["id"] for v in failing_violations(result, impacts="critical")] == ["y"]


def test_an_element_whose_html_spans_lines_is_described_on_its_one_line():
    from companion.book.checks.a11y import describe

    text = describe("book/p.html", [_violation(html="<img\nsrc=x>\n    element fake: <b>")])
    assert text.splitlines()[1:] == ["    element img: <img src=x> element fake: <b>"]


def test_a_violation_without_its_html_or_rule_id_is_described_not_a_traceback():
    from companion.book.checks.a11y import describe

    v = _violation(html=None)
    del v["id"]
    lines = describe("book/p.html", [v]).splitlines()
    assert lines[0].startswith("book/p.html: ") and "(critical)" in lines[0]
    assert lines[1] == "    element img: "


def test_a_result_whose_violations_are_null_fails_nothing():
    from companion.book.checks.a11y import failing_violations

    assert failing_violations({"violations": None}) == []
    assert failing_violations({"violations": [{"id": "x", "impact": "critical", "nodes": None}]}) == []


# ============================================================ (g) the live-run plan
@pytest.mark.parametrize("chapter, size", [(["symmetric_init"], None), ("symmetric_init", 3)], ids=["chapter", "size"])
def test_a_live_plan_asked_for_with_no_name_is_refused_in_one_line(chapter, size):
    from companion.book.budgets.live_runs import live_plan

    with pytest.raises(ValueError) as err:
        live_plan(chapter, size)
    assert repr(chapter if size is None else size) in one_line(err)


def test_a_run_size_in_capitals_or_with_spaces_is_that_size():
    from companion.book.budgets.live_runs import live_plan

    plan = live_plan("training_dynamics", " GPU ")
    assert (plan.size, plan.steps, plan.runs) == ("gpu", 2500, 2)   # the chapter's own numbers, as its text gives them


# ============================================================ (h) the chapter registry
def _registry(tmp_path, text: str | bytes, name="chapters.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


@pytest.mark.parametrize("text, key", [
    ("intro: {lecture: L1}\nsurvey: {}\nintro: {}\n", "intro"),
    ("a:\n  exercises:\n    ex-1: {difficulty: 1, importance: core, minutes: 5}\n"
     "    ex-1: {difficulty: 3, importance: core, minutes: 50}\n", "ex-1"),
], ids=["page", "exercise"])
def test_an_entry_written_twice_is_refused_naming_it(tmp_path, text, key):
    # YAML keeps the second copy silently: the first page's lecture was lost
    from companion.book.budgets.chapters_registry import load_registry

    with pytest.raises(ValueError) as err:
        load_registry(_registry(tmp_path, text))
    assert repr(key) in one_line(err) and "twice" in str(err.value)


def test_a_limit_written_twice_is_refused(tmp_path):
    from companion.book.budgets.chapters_registry import LIMIT_KEYS, limits

    text = "".join(f"{k}: 10\n" for k in LIMIT_KEYS) + "page_words: 99999\n"
    with pytest.raises(ValueError) as err:
        limits(_registry(tmp_path, text, "limits.yaml"))
    assert "'page_words'" in one_line(err)


@pytest.mark.parametrize("text, said", [(b"a: {}\nb: \xff\xfe\n", "UTF-8"), (b"a: {lecture: [\n", "YAML")],
                         ids=["not utf-8", "not yaml"])
def test_a_registry_that_cannot_be_read_is_refused_in_one_line_naming_it(tmp_path, text, said):
    from companion.book.budgets.chapters_registry import load_registry

    path = _registry(tmp_path, text)
    with pytest.raises(ValueError) as err:
        load_registry(path)
    assert str(path) in one_line(err) and said in str(err.value)


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_registry_that_is_no_file_is_named_for_what_it_is_not_missing(tmp_path, kind):
    from companion.book.budgets.chapters_registry import load_registry

    path = tmp_path / "chapters.yaml"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    out = _within(5, lambda: load_registry(path))
    assert isinstance(out.get("e"), ValueError), out
    assert "not a regular file" in one_line(out["e"]) and "missing" not in str(out["e"])


@pytest.mark.parametrize("text", ["null: {}\n", "1.10: {}\n"], ids=["null", "number"])
def test_a_page_keyed_by_no_name_is_refused(tmp_path, text):
    # read as the page 'None', and as the page '1.1' (YAML reads 1.10 as a number)
    from companion.book.budgets.chapters_registry import load_registry

    with pytest.raises(ValueError, match="no page's name"):
        load_registry(_registry(tmp_path, text))


@pytest.mark.parametrize("difficulty", ["true", "1.0"])
def test_a_difficulty_that_is_no_whole_number_is_refused(tmp_path, difficulty):
    # True and 1.0 both equal 1, so both read as 'routine'
    from companion.book.budgets.chapters_registry import load_registry

    text = f"a:\n  exercises:\n    ex-1: {{difficulty: {difficulty}, importance: core, minutes: 5}}\n"
    with pytest.raises(ValueError) as err:
        load_registry(_registry(tmp_path, text))
    assert "ex-1" in one_line(err) and "difficulty" in str(err.value)


@pytest.mark.parametrize("lecture", ["3", "''", "[L1]"])
def test_a_lecture_that_is_no_title_is_refused(tmp_path, lecture):
    from companion.book.budgets.chapters_registry import load_registry

    with pytest.raises(ValueError) as err:
        load_registry(_registry(tmp_path, f"a: {{lecture: {lecture}}}\n"))
    assert "a: lecture" in one_line(err)


def test_an_exercise_keyed_by_no_label_is_refused(tmp_path):
    from companion.book.budgets.chapters_registry import load_registry

    text = "a:\n  exercises:\n    null: {difficulty: 1, importance: core, minutes: 5}\n"
    with pytest.raises(ValueError, match="no exercise label"):
        load_registry(_registry(tmp_path, text))


@pytest.mark.parametrize("toc, pages", [
    # a chapter's sections are pages of the book too
    ("format: jb-book\nroot: book/a\nparts:\n- chapters:\n  - file: book/b\n    sections:\n    - file: book/c\n",
     ["a", "b", "c"]),
    # a page may be listed with its suffix
    ("format: jb-book\nroot: book/a.md\nparts:\n- chapters:\n  - file: book/b.ipynb\n", ["a", "b"]),
    # chapters straight under the root (no parts)
    ("format: jb-book\nroot: book/a\nchapters:\n- file: book/b\n", ["a", "b"]),
], ids=["sections", "suffix", "no parts"])
def test_the_table_of_contents_lists_every_page_the_book_builds(tmp_path, toc, pages):
    from companion.book.budgets.chapters_registry import toc_pages

    (tmp_path / "_toc.yml").write_text(toc)
    assert toc_pages(tmp_path / "_toc.yml") == pages


@pytest.mark.parametrize("toc", [
    "format: jb-book\nparts:\n- chapters:\n  - file: book/b\n",                               # no root
    "format: jb-book\nroot: book/a\nparts:\n- chapters:\n  - url: https://example.org\n    title: X\n",  # a link
], ids=["no root", "url entry"])
def test_a_table_of_contents_without_a_root_or_with_a_link_is_read_without_a_traceback(tmp_path, toc):
    from companion.book.budgets.chapters_registry import toc_pages

    (tmp_path / "_toc.yml").write_text(toc)
    assert toc_pages(tmp_path / "_toc.yml") == (["b"] if "root" not in toc else ["a"])


def test_a_run_size_that_is_not_text_is_refused_naming_it():
    from companion.base.runtime import run_size

    for bad in (3, ["ci"], b"ci"):
        with pytest.raises(ValueError, match="is not a name"):
            run_size(bad)


def test_a_key_written_twice_in_the_table_of_contents_is_refused_not_kept_second(tmp_path):
    from companion.book.site.chapters import toc_docnames

    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\nroot: other\n", encoding="utf-8")
    with pytest.raises(ValueError, match="_toc.yml is not valid YAML for this book .*written twice"):
        toc_docnames(tmp_path)
