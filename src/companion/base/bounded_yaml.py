"""Safe YAML with a bound on its size once aliases are expanded ('billion laughs')."""

from __future__ import annotations

__all__ = ["MAX_NODES", "TooDeep", "load_bounded"]

#: the largest number of YAML nodes a document may hold once its aliases are expanded
MAX_NODES = 20_000


class TooDeep(OverflowError):
    """YAML nested deeper than Python's recursion can read (an ``OverflowError``, so a caller
    that only bounds size still refuses it; one that words the two apart catches this first)."""


def load_bounded(text: str, max_nodes: int = MAX_NODES):
    """``yaml.safe_load(text)``, refused with ``OverflowError`` before anything is built when
    aliases nested in aliases would expand it past ``max_nodes`` nodes (a few hundred bytes
    can name billions) or when it is nested deeper than Python's recursion allows; a key
    written twice in one mapping (``safe_load`` keeps the second silently) and a value
    whose form promises a type it cannot be (a date of month 13) is a ``yaml.YAMLError``."""
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise TooDeep("YAML nested deeper than Python can read") from None
        count, stack = 0, [node] if node is not None else []
        while stack:
            n = stack.pop()
            count += 1
            if count > max_nodes:
                raise OverflowError(f"more than {max_nodes:,} YAML nodes")
            if isinstance(n, yaml.SequenceNode):
                stack.extend(n.value)
            elif isinstance(n, yaml.MappingNode):
                seen, merges = set(), 0
                for k, v in n.value:
                    stack.extend((k, v))
                    if isinstance(k, yaml.ScalarNode) and k.tag == "tag:yaml.org,2002:merge":
                        merges += 1
                        if merges > 1:   # safe_load reads the first '<<' and drops the second, silently
                            raise yaml.constructor.ConstructorError(
                                None, None, f"the merge key '<<' is written twice in one mapping (line "
                                f"{k.start_mark.line + 1}); merge several mappings with one '<<: [*a, *b]'",
                                None)
                    elif isinstance(k, yaml.ScalarNode):
                        key = _key(loader, k)
                        if key in seen:   # safe_load keeps the second copy, silently
                            raise yaml.constructor.ConstructorError(
                                None, None, f"the key {k.value!r} is written twice in one mapping (line "
                                f"{k.start_mark.line + 1}); keep one, or the second copy would silently "
                                "replace the first", None)
                        seen.add(key)
        try:
            return loader.construct_document(node) if node is not None else None
        except RecursionError:
            raise TooDeep("YAML nested deeper than Python can read") from None
        except (ValueError, TypeError, OverflowError) as err:   # e.g. a date of month 13: not what it says
            raise yaml.YAMLError(f"a value that is not what its form says ({err})") from None
    finally:
        loader.dispose()


def _key(loader, node):
    """A mapping key as the mapping will hold it: two spellings of one value (``1.0`` and ``1.00``,
    ``yes`` and ``true``, ``0x1A`` and ``26``, ``~`` and ``null``) are one key, as in a dict."""
    import yaml

    if node.tag == "tag:yaml.org,2002:str":
        return node.value
    try:
        value = loader.construct_object(node)
        hash(value)
        return value
    except (yaml.YAMLError, ValueError, TypeError, OverflowError):   # refused (or built) as a value later
        return (node.tag, node.value)
