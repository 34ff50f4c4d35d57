"""Inputs read from disk that are not what they claim, refused in one line naming the file:
YAML nested past reading or holding a value that is not what its form says (a Marian model's
configuration, anything through base.bounded_yaml), a dangling link given as a model, a
book-cache key or record that is not UTF-8 (never a raw RecursionError, ValueError or
UnicodeDecodeError)."""

import pytest
import yaml

import malformed as bad
from deadline import within
from one_line import one_line_error
from companion.base.bounded_yaml import TooDeep, load_bounded


def test_a_date_of_month_13_is_a_yaml_error_not_a_value_error():
    with pytest.raises(yaml.YAMLError, match="month"):
        load_bounded("released: 2026-13-01\n")
    assert str(load_bounded("released: 2026-12-01\n")["released"]) == "2026-12-01"


def test_yaml_nested_five_thousand_deep_is_refused_as_too_large():
    with pytest.raises(TooDeep, match="nested deeper"):
        load_bounded("[" * 5000 + "]" * 5000)
    with pytest.raises(TooDeep, match="nested deeper"):
        load_bounded("".join(f"{' ' * (2 * i)}k{i}:\n" for i in range(3000)) + " " * 6000 + "v: 1\n")


@pytest.mark.parametrize("yml, why", [
    (b"type: transformer\nreleased: 2026-13-01\n\0", "not YAML"),
    (b"[" * 5000 + b"]" * 5000 + b"\0", "nested deeper than can be read"),
])
def test_a_marian_configuration_with_a_month_13_date_or_5000_levels_is_refused_naming_the_file(tmp_path, yml, why):
    from test_refusals_formats import _marian_file, _marian_items

    from companion.adapters.marian_bin import MarianSource
    from companion.base.errors import CompanionError

    items = [("special:model.yml", 0x101, (len(yml),), yml)] + _marian_items()[1:]
    path = _marian_file(tmp_path / "model.intgemm.alphas.bin", items)
    with pytest.raises(CompanionError, match=why) as err:
        MarianSource(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_a_dangling_link_is_named_as_such_not_as_a_missing_path_or_hub_id(tmp_path):
    from companion.adapters.reader import open_source
    from companion.base.errors import CompanionError

    link = tmp_path / "model"
    link.symlink_to(tmp_path / "gone")
    with pytest.raises(CompanionError, match="is a link to .*gone, which does not exist"):
        open_source(link)


def test_a_book_cache_key_or_record_that_is_not_utf8_is_handled_naming_the_file(tmp_path):
    from companion.book.site import book_cache

    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / book_cache._KEY_FILE).write_bytes(b"\xff\xfe not utf-8")
    assert book_cache.prepare(cache) is False                 # a torn key: emptied, a fresh key written
    assert (cache / book_cache._KEY_FILE).read_text(encoding="utf-8").startswith("{")
    executed = tmp_path / "executed"
    executed.mkdir()
    (executed / "chapter.ipynb").write_text("{}")
    (executed / "chapter.json").write_bytes(b"\xff\xfe")
    with pytest.raises(ValueError, match=r"chapter\.json cannot be read"):
        book_cache.seed(executed, cache)


# ---------------------------------------------------------------- YAML bombs


def test_a_marian_configuration_alias_bomb_is_refused_before_it_is_built():
    from companion.adapters.marian_bin import _bounded_yaml

    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    with within(20), pytest.raises(OverflowError):
        _bounded_yaml("\n".join(lines))
    assert _bounded_yaml("type: transformer\ndim-emb: 8\n") == {"type": "transformer", "dim-emb": 8}



# ---------------------------------------------------------------- dangling links


def test_a_dangling_shard_link_is_named_as_a_link_not_a_missing_entry(tmp_path, capsys):
    _, shards = bad.sharded_llama(tmp_path, layers=3)
    shards[1].unlink()
    shards[1].symlink_to(tmp_path / "blobs" / "gone")
    line = one_line_error(["score", str(tmp_path), "--quiet"], capsys, "is a link to", "does not exist")
    assert shards[1].name in line


def test_a_dangling_config_link_is_not_called_missing(tmp_path, capsys):
    bad.tiny_llama(tmp_path, layers=1)
    (tmp_path / "config.json").unlink()
    (tmp_path / "config.json").symlink_to(tmp_path / "blobs" / "gone")
    one_line_error(["score", str(tmp_path), "--quiet"], capsys, "config.json is a link to", "does not exist")
