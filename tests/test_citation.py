"""CITATION.cff is valid Citation File Format 1.2.0; the book's version and BibTeX."""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

import jsonschema
import pytest
import yaml

from companion import __version__

from companion.book.site import citation
ROOT = Path(__file__).resolve().parents[1]
# The schema of CFF 1.2.0, vendored from the cffconvert 2.0.0 wheel on PyPI
# (cffconvert/schemas/1.2.0/schema.json; $id https://citation-file-format.github.io/1.2.0/schema.json)
SCHEMA = ROOT / "tests" / "data" / "citation-cff-1.2.0.schema.json"
SCHEMA_SHA256 = "0b8d22140da702d766df318dcff3a91af2f39521298dcf36d76315fd99cc169b"


def _validator():
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


def test_the_vendored_schema_is_the_published_one():
    import hashlib

    assert hashlib.sha256(SCHEMA.read_bytes()).hexdigest() == SCHEMA_SHA256
    assert json.loads(SCHEMA.read_text())["$id"] == "https://citation-file-format.github.io/1.2.0/schema.json"


def test_citation_cff_is_valid_against_the_schema():
    data = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    errors = sorted(_validator().iter_errors(data), key=str)
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


@pytest.mark.parametrize("break_it", [
    lambda d: d.pop("authors"),
    lambda d: d.update({"cff-version": "1.1.0"}),
    lambda d: d.update({"date-released": "27 November 2026"}),
    lambda d: d["preferred-citation"].update({"type": "not-a-type"}),
    lambda d: d.update({"unknown-key": 1}),
])
def test_the_schema_check_catches_a_broken_citation_file(break_it):
    data = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    break_it(data)
    assert list(_validator().iter_errors(data))


def test_a_citation_file_that_does_not_parse_is_an_error(tmp_path):
    (tmp_path / "CITATION.cff").write_text("title: [unclosed\n")
    with pytest.raises(ValueError, match="CITATION.cff"):
        citation.load_citation(tmp_path)


def test_versions_agree_across_citation_zenodo_and_the_package():
    cff = citation.load_citation(ROOT)
    zenodo = json.loads((ROOT / ".zenodo.json").read_text(encoding="utf-8"))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    # CITATION.cff and .zenodo.json describe the last release; the package is that release or
    # a development build of a later one (never an older or an unmarked one)
    from packaging.version import Version as V

    assert cff["version"] == zenodo["version"]
    assert project["version"] == __version__
    assert V(__version__) == V(cff["version"]) or (V(__version__).is_devrelease and V(__version__) > V(cff["version"]))
    # the release's date is the same in the three places that state it
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.search(r"^## \[" + re.escape(cff["version"]) + r"\] - (\d{4}-\d{2}-\d{2})", changelog, re.M)
    assert released, f"CHANGELOG.md has no entry for {cff['version']}"
    assert str(cff["date-released"]) == zenodo["publication_date"] == released.group(1)
    if V(__version__).is_devrelease:
        assert "## [Unreleased]" in changelog
    assert cff["title"] == zenodo["title"]
    assert zenodo["upload_type"] == "software" and zenodo["creators"]
    assert cff["license"] == zenodo["license"] == project["license"]
    # the paper is the preferred citation, as in book/references.bib
    bib = citation.paper_bibtex()
    assert cff["preferred-citation"]["title"] in bib.replace("{Transformer}", "Transformer")
    assert [a["family-names"] for a in cff["preferred-citation"]["authors"]] == \
        re.findall(r"(\w+), ", re.search(r"author\s*=\s*\{(.*)\}", bib).group(1))


def test_book_bibtex_carries_the_version_and_the_commit():
    v = citation.Version("9.8.7", "abcdef1")
    bib = citation.book_bibtex(v, ROOT)
    assert bib.startswith("@software{")
    assert "version = {9.8.7}" in bib and "commit abcdef1" in bib
    assert bib.count("{") == bib.count("}")
    assert citation.load_citation(ROOT)["title"] in bib


def test_the_paper_bibtex_is_the_entry_of_references_bib():
    bib = citation.paper_bibtex()
    assert bib.startswith("@inproceedings{saponati2025structures,") and bib.endswith("}")
    assert "Proceedings of the 42nd International Conference on Machine Learning" in bib
    with pytest.raises(KeyError):
        citation.bib_entry("no-such-key")


def test_version_from_git_and_its_fallback_without_git(tmp_path, monkeypatch):
    v = citation.book_version(ROOT)
    assert v.package == __version__
    rules = str(yaml.safe_load((ROOT / "data" / "verdict_rules.yaml").read_text())["version"])   # the file in force states no revision
    assert v.rules == rules
    if (ROOT / ".git").exists():
        assert v.commit and re.fullmatch(r"[0-9a-f]{7,}", v.commit)
        assert v.label.startswith(f"{__version__} (") and f"commit {v.commit})" in v.label
    # no git on PATH: COMPANION_COMMIT, else "unknown commit"
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("COMPANION_COMMIT", raising=False)
    none = citation.book_version(tmp_path)
    assert none.commit is None and none.label.endswith("unknown commit)")
    monkeypatch.setenv("COMPANION_COMMIT", "1234567890abcdef")
    assert citation.book_version(tmp_path).commit == "1234567"
    monkeypatch.setenv("COMPANION_COMMIT", "not a hash")
    assert citation.book_version(tmp_path).commit is None
    os.environ.get("PATH")  # restored by monkeypatch


def test_a_label_names_release_state_and_the_rules_that_decided_the_verdicts():
    assert citation.Version("0.2.0.dev0", "abc1234", "2.2").label == \
        "0.2.0.dev0 (unreleased; verdict rules v2.2; commit abc1234)"
    assert citation.Version("0.1.0", "abc1234", "1").label == "0.1.0 (verdict rules v1; commit abc1234)"
    assert citation.Version("0.3.0rc1", None).label == "0.3.0rc1 (unreleased; unknown commit)"
    # two builds judged by different rules never share a label
    assert citation.Version("0.2.0", "a" * 7, "2.1").label != citation.Version("0.2.0", "a" * 7, "2.2").label
    assert citation.Version("0.2.0", "a" * 7, "4").label == "0.2.0 (verdict rules v4; commit aaaaaaa)"


def test_the_book_names_the_one_rules_file_in_force():
    """The footer's label names the version the rules file in force states (read from the file,
    not typed), and no other rules."""
    import yaml

    from companion.rules.rulebook import RULES_PATH

    want = str(yaml.safe_load(RULES_PATH.read_text())["version"])
    assert citation.book_version().rules == want
    label = citation.book_version().label
    assert f"verdict rules v{want};" in label and label.count("rules v") == 1


def test_a_rules_revision_that_is_not_a_number_is_refused_naming_the_file(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "verdict_rules.yaml").write_text('version: 2\nrevision: "two"\n')
    with pytest.raises(ValueError, match="verdict_rules.yaml: revision 'two'"):
        citation.rules_revision(tmp_path)
    assert citation.rules_revision(tmp_path / "nowhere") is None


def test_the_paper_entry_names_where_to_read_it():
    bib = citation.paper_bibtex()
    assert re.search(r"url\s*=\s*\{https://arxiv.org/abs/2502\.10927\}", bib)
    assert "10.48550/arXiv.2502.10927" in bib
    cff = citation.load_citation(ROOT)
    assert cff["preferred-citation"]["doi"] == "10.48550/arXiv.2502.10927"
