"""The one table formatter (companion.book.tables): no index column, no NaN, paper names for
keys, numbers rounded to what they mean; installed in a kernel by the book's defaults."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from bs4 import BeautifulSoup

from companion.book import tables


def _cells(html: str) -> tuple[list[str], list[list[str]]]:
    soup = BeautifulSoup(html, "html.parser")
    heads = [th.get_text() for th in soup.find("thead").find_all("th")]
    rows = [[td.get_text() for td in tr.find_all(["td", "th"])] for tr in soup.find("tbody").find_all("tr")]
    return heads, rows


def test_every_claim_has_a_paper_name():
    from companion.judge import claims

    keys = {fn.__name__ for fn in claims.VERDICTS}
    assert keys == set(tables.CLAIM_NAMES), keys ^ set(tables.CLAIM_NAMES)


def test_a_default_index_is_dropped_and_nan_reads_as_a_dash():
    df = pd.DataFrame({"claim": ["training_symmetry", "table_1"], "estimate": [0.034, np.nan]})
    heads, rows = _cells(tables.readable(df))
    assert heads == ["claim", "estimate"]                     # no index header
    assert [len(r) for r in rows] == [2, 2]                   # no index cell
    assert rows == [["Fig. 3a", "0.034"], ["Table 1", tables.MISSING]]
    assert "nan" not in tables.readable(df).lower()
    assert "dataframe" not in tables.readable(df)


def test_a_meaningful_index_becomes_columns():
    df = pd.DataFrame({"mode": ["encoder", "decoder"], "init": ["standard", "symmetric"],
                       "symmetry": [0.01, 0.2]}).set_index(["mode", "init"])
    heads, rows = _cells(tables.readable(df))
    assert heads == ["mode", "init", "symmetry"]
    assert rows[1][:2] == ["decoder", "symmetric"]
    pivot = pd.DataFrame({"seed": [0, 0, 1], "mode": ["e", "d", "e"], "v": [0.5, 0.25, 1.0]}).pivot(
        index="seed", columns="mode", values="v")
    heads, rows = _cells(tables.readable(pivot))
    assert heads == ["seed", "d", "e"]
    assert rows == [["0", "0.25", "0.5"], ["1", tables.MISSING, "1.0"]]


def test_row_numbers_are_dropped_even_after_a_concat():
    df = pd.concat([pd.DataFrame({"seed": [0, 1]}), pd.DataFrame({"seed": [0, 1]})])
    assert list(df.index) == [0, 1, 0, 1]
    heads, rows = _cells(tables.readable(df))
    assert heads == ["seed"] and rows == [["0"], ["1"], ["0"], ["1"]]


def test_a_row_number_level_of_a_grouped_index_is_dropped():
    df = pd.concat({"cpu": pd.DataFrame({"n": [3, 3]})}, names=["size"])   # index (size, 0..1)
    assert df.index.names == ["size", None]
    heads, rows = _cells(tables.readable(df))
    assert heads == ["size", "n"] and rows == [["cpu", "3"], ["cpu", "3"]]


def test_a_hidden_index_stays_hidden_in_a_styler():
    df = pd.DataFrame({"a": [1, 2]}, index=pd.Index(["x", "y"], name="row"))
    assert _cells(tables.readable(df.style.hide(axis="index")))[0] == ["a"]
    assert _cells(tables.readable(df.style))[0] == ["row", "a"]


def test_numbers_are_rounded_to_what_they_mean():
    # the learning rate 1e-3 that `.round(2)` turned into 0.0 on What survives
    assert tables.cell_text(1e-3, tables.column_formats([1e-3])) == "0.001"
    rates = [1e-3, 5e-5, 1e-3]   # set values, as written (0.00100 would claim three digits)
    assert [tables.cell_text(v, tables.column_formats(rates)) for v in rates] == ["0.001", "0.00005", "0.001"]
    # an unrounded column: three significant digits of its largest value, two of each small one
    col = [0.0134, 0.000126, 0.00461]
    d = tables.column_formats(col)
    assert [tables.cell_text(v, d) for v in col] == ["0.0134", "0.00013", "0.0046"]
    # below 10, three decimals: 5.247 and 5.251 do not both read 5.25
    col = [5.247138, 3.760214, 5.251377]
    assert [tables.cell_text(v, tables.column_formats(col)) for v in col] == ["5.247", "3.760", "5.251"]
    assert abs(float(tables.cell_text(0.000126, d)) - 0.000126) / 0.000126 < 0.05
    # values that differ are shown differing: two significant digits of the column's spread
    col = [5.492337, 5.547209, 5.470001]
    shown = [tables.cell_text(v, tables.column_formats(col)) for v in col]
    assert shown == ["5.492", "5.547", "5.470"] and len(set(shown)) == 3
    # a rounded column keeps the decimals the chapter gave it
    col = [5.9755, 5.973]
    assert [tables.cell_text(v, tables.column_formats(col)) for v in col] == ["5.9755", "5.9730"]
    # whole numbers, floats among them, read as integers with separators
    assert tables.column_formats([10000.0, 1953.0]) is None
    assert tables.cell_text(10000.0, None) == "10,000"
    assert tables.cell_text(np.int64(20480000)) == "20,480,000"
    assert tables.cell_text(math.inf) == "∞" and tables.cell_text(-math.inf) == "-∞"
    assert tables.cell_text(True) == "yes" and tables.cell_text(np.bool_(False)) == "no"
    assert tables.cell_text(None) == tables.MISSING and tables.cell_text(pd.NA) == tables.MISSING


def test_keys_read_as_names():
    assert tables.label("survey_encoder_decoder (symmetry)") == "Fig. 2, symmetry"
    assert tables.label("training_symmetry (cpu)") == "Fig. 3a (cpu)"
    assert tables.label("update_directionality") == "update directionality"
    assert tables.label("p_decides") == "deciding p"
    assert tables.label("mixv3-bert-mini-encoder-standard-s30") == "mixv3-bert-mini-encoder-standard-s30"
    assert tables.label("Fig. 3a: encoders") == "Fig. 3a: encoders"


def test_cells_are_text_not_markup():
    heads, rows = _cells(tables.readable(pd.DataFrame({"x": ["<b>bold</b>"]})))
    assert rows == [["<b>bold</b>"]]


def test_bad_input_is_refused_with_the_fix():
    with pytest.raises(TypeError, match="DataFrame or Styler"):
        tables.readable([1, 2])


def test_the_book_kernel_shows_every_table_through_the_formatter():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        assert tables.register(shell)
        df = pd.DataFrame({"claim": ["table_1"], "p": [np.nan]})
        bundle, _ = shell.display_formatter.format(df)
        assert bundle["text/html"] == tables.readable(df)
        bundle, _ = shell.display_formatter.format(df.style.hide(axis="index"))
        assert bundle["text/html"] == tables.readable(df)
    finally:
        InteractiveShell.clear_instance()
