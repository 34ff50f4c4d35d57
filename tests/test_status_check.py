"""The check that every surface states one status per claim finds the contradictions a reader
met (an answer box, a table, a figure's caption) and leaves labelled per-test outcomes alone."""

import pytest

from companion.base.errors import CompanionError
from companion.book.checks import status_check as sc

CLAIMS = {"cor_s1_13": "Cor. S1.13: equal spreads", "thm_s1_12": "Thm. 2.3 / S1.12: high-norm columns",
          "table_1": "Table 1: a symmetric start speeds training up", "training_symmetry": "Fig. 3a: symmetry",
          "training_directionality": "Fig. 3b: directionality", "remark_s1_15": "Remark S1.15 / Eq. S119: 25%",
          "update_structure": "Thms. 2.3/2.4 in training: the updates",
          "survey_encoder_decoder": "Sec. 3: encoders vs decoders"}
TABLE = {"cor_s1_13": "inconclusive (after Holm)", "thm_s1_12": "premise fails", "table_1": "inconclusive (after Holm)",
         "training_symmetry": "holds", "training_directionality": "inconclusive (after Holm)",
         "remark_s1_15": "holds with a correction", "update_structure": "holds",
         "survey_encoder_decoder": "inconclusive", "survey_encoder_decoder (symmetry)": "holds",
         "survey_encoder_decoder (directionality)": "inconclusive"}
NAMES = sc.aliases(CLAIMS)


def test_names_come_from_the_claim_texts_with_both_numberings():
    assert NAMES["Thm. 2.3"] == NAMES["Thm. S1.12"] == NAMES["Thm. 2.3 / S1.12"] == "thm_s1_12"
    assert NAMES["Remark S1.15"] == "remark_s1_15" and "Eq. S119" not in NAMES
    assert NAMES["Thms. 2.3/2.4 in training"] == "update_structure" and "Thms. 2.3" not in NAMES
    assert NAMES["Fig. 2, symmetry"] == "survey_encoder_decoder (symmetry)"


def test_two_claims_sharing_a_name_are_refused():
    with pytest.raises(CompanionError, match="used by two claims"):
        sc.aliases({"a": "Fig. 3a: one", "b": "Fig. 3a: another"})


def test_the_answer_box_that_contradicted_what_survives_is_found():
    box = "What this chapter answers: Cor. S1.13: refuted; Thm. S1.12: premise fails."
    found = sc.disagreements(sc.stated_statuses(box, NAMES, "objectives_to_structure"), TABLE)
    assert len(found) == 1 and "Cor. S1.13 is stated as 'refuted'" in found[0]
    assert "'inconclusive (after Holm)'" in found[0]


def test_a_longer_status_is_never_read_as_its_prefix():
    s = sc.stated_statuses("Fig. 3a: holds, size open. Table 1: inconclusive (after Holm).", NAMES)
    assert [(x.key, x.status) for x in s] == [("training_symmetry", "holds, size open"),
                                              ("table_1", "inconclusive (after Holm)")]


def test_a_clause_between_name_and_colon_is_read_but_a_labelled_test_outcome_is_not():
    text = ("Verdict for Thm. S1.14 at this size: holds. Verdict for Cor. S1.13 at this size: refuted. "
            "Fig. 3b (test alone: holds, size open) and Table 1 under rules v1: not testable here. "
            "Fig. 3a. The next sentence: refuted.")
    s = sc.stated_statuses(text, NAMES)
    # a version label is no exemption: 'under rules v1' states a second status for Table 1
    assert [(x.key, x.status) for x in s] == [("cor_s1_13", "refuted"), ("table_1", "not testable here")]


def test_a_version_label_exempts_nothing_outside_the_history_appendix():
    """Two status words for one claim on a page fail the check, whatever version the second is
    labelled with; the history appendix is the one page left out, by name."""
    text = "Table 1: inconclusive. Earlier, Table 1 under rules v3: refuted."
    found = sc.disagreements(sc.stated_statuses(text, NAMES, "site: book/fig3_decided.html"), {"table_1": "inconclusive"})
    assert len(found) == 1 and "stated as 'refuted'" in found[0]
    assert sc.HISTORY_PAGES == ("rules_history",)


def test_status_columns_of_tables_are_compared_and_outcome_columns_are_not():
    html = """<table><tr><th>Claim</th><th>Status</th><th>Evidence</th></tr>
    <tr><td>Sec. 4.2, Table 1 (speed-up)</td><td><strong>refuted</strong></td><td>x</td></tr>
    <tr><td>Sec. 4.1, Fig. 3a (symmetry)</td><td><strong>holds</strong></td><td>x</td></tr>
    <tr><td>Fig. 2, symmetry: encoders</td><td>holds</td><td>x</td></tr></table>
    <table><tr><th>claim</th><th>outcome</th></tr><tr><td>Table 1</td><td>refuted</td></tr></table>"""
    stated = sc.table_statuses(html, NAMES, "what_survives")
    assert [(x.key, x.status) for x in stated] == [("table_1", "refuted"), ("training_symmetry", "holds"),
                                                    ("survey_encoder_decoder (symmetry)", "holds")]
    found = sc.disagreements(stated, TABLE)
    assert len(found) == 1 and "Table 1 is stated as 'refuted'" in found[0]


def test_a_status_cell_holding_no_status_word_fails_and_an_unknown_claim_is_named():
    html = "<table><tr><th>Claim</th><th>Status</th></tr><tr><td>Fig. 3b</td><td>see below</td></tr></table>"
    found = sc.disagreements(sc.table_statuses(html, NAMES), TABLE)
    assert len(found) == 1 and "'see below'" in found[0]
    assert "no status table holds 'x'" in sc.disagreements([sc.Stated("x", "X", "holds", "p", "")], TABLE)[0]


def test_visible_text_leaves_scripts_and_navigation_out():
    html = "<head><title>t</title></head><nav>Fig. 3a: refuted</nav><p>Fig. 3a: <b>holds</b></p><script>Table 1: refuted</script>"
    text = sc.html_text(html)
    assert [(x.key, x.status) for x in sc.stated_statuses(text, NAMES)] == [("training_symmetry", "holds")]


def test_a_pipe_table_in_a_notebooks_text_is_read_as_a_table():
    text = ("Some text.\n\n| Claim | **Status** | Note |\n|---|:---:|---|\n"
            "| Table 1 | **refuted** | a \\| b |\n| Fig. 3a | holds | x |\n\nAfter the table: Fig. 3b.")
    stated = sc.markdown_table_statuses(text, NAMES, "nb")
    assert [(x.key, x.status) for x in stated] == [("table_1", "refuted"), ("training_symmetry", "holds")]
    assert "a | b" in stated[0].context   # an escaped bar stays inside its cell
    # a table without a Status column, and a line of bars with no rule under it, state nothing
    assert sc.markdown_table_statuses("| Claim | outcome |\n|---|---|\n| Table 1 | refuted |", NAMES) == []
    assert sc.markdown_table_statuses("| Claim | Status |\n| Table 1 | refuted |", NAMES) == []


def test_a_notebook_is_read_in_its_text_and_in_its_code_cells_outputs():
    """A status shown in a code cell's output (a DataFrame's HTML, printed text) is a status the
    reader of the notebook sees, as much as one in its text."""
    table = ("<table><thead><tr><th>claim</th><th>Status</th></tr></thead>"
             "<tbody><tr><td>Table 1</td><td>refuted</td></tr></tbody></table>")
    cells = [
        {"cell_type": "markdown", "source": ["Fig. 3a: **holds**.\n"]},
        {"cell_type": "code", "source": "what", "outputs": [
            {"output_type": "execute_result", "data": {"text/html": [table], "text/plain": ["claim Status"]}}]},
        {"cell_type": "code", "source": "print()", "outputs": [
            {"output_type": "stream", "name": "stdout", "text": "Cor. S1.13: refuted\n"}]},
        {"cell_type": "code", "source": "x", "outputs": []},
    ]
    stated = sc.notebook_statuses(cells, NAMES, "notebook: book/x.ipynb")
    assert [(x.key, x.status) for x in stated] == [("training_symmetry", "holds"), ("table_1", "refuted"),
                                                    ("cor_s1_13", "refuted")]
    assert stated[1].where == "notebook: book/x.ipynb (cell 1)"
    found = sc.disagreements(stated, TABLE)
    assert [f.split(" is stated")[0] for f in found] == ["notebook: book/x.ipynb (cell 1): Table 1",
                                                         "notebook: book/x.ipynb (cell 2): Cor. S1.13"]
