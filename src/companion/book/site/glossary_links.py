"""Every page links the glossary where a reader first meets one of its words.

Run by the book's Sphinx extension on each page once references are resolved: for every term
of the book's glossary (the ``glossary`` directive of ``book/glossary``), its first use in the
page's running text becomes a link to the term's entry.  The status words ("holds",
"refuted", ...) are also ordinary English ("the identity holds"), so they are linked only
where the book states a status, in bold ("**holds**", a glued status in bold); the other terms
("Holm", "gate", "smallest effect of interest", ...) at their first use in any paragraph,
list item or table cell.  Titles, code, mathematics and text that already is a link are never
touched, and a page with an explicit ``{term}`` link to a word keeps that one.
"""

from __future__ import annotations

import re

from docutils import nodes

__all__ = ["STATUS_TERMS", "SKIP_TERMS", "link_first_uses", "setup"]

#: glossary terms that are status words: linked only where they stand in bold
STATUS_TERMS = frozenset({"holds", "holds with a correction", "holds, size open", "negligible", "premise fails",
                          "inconclusive", "inconclusive (after Holm)", "refuted", "not testable here"})

#: terms too common as plain English to link in running text
SKIP_TERMS = frozenset({"look"})

#: code, mathematics and other text kept as written (every FixedTextElement: a literal or doctest
#: block, a math block, raw output, a comment), titles, links and their targets
_NO_LINK_INSIDE = (nodes.reference, nodes.literal, nodes.FixedTextElement, nodes.math, nodes.option_string,
                   nodes.title, nodes.raw, nodes.term, nodes.rubric, nodes.caption, nodes.target,
                   nodes.comment, nodes.subtitle)
#: controls of other extensions whose text a link must not sit in (a click would follow the link
#: instead of opening the tab or the dropdown), named by node type or by CSS class
_CONTROL_TYPES = frozenset({"sd_tab_label", "desc_signature"})
_CONTROL_CLASSES = frozenset({"sd-summary-title", "sd-tab-label"})


def _terms(env) -> dict:
    """``{term: (docname, anchor)}`` of the glossary terms the build knows."""
    std = env.get_domain("std")
    out = {}
    for (objtype, name), (docname, anchor) in std.objects.items():
        if objtype == "term":
            out[name] = (docname, anchor)
    return out


def _pattern(term: str) -> re.Pattern:
    body = re.escape(term).replace(r"\ ", r"\s+")
    plural = "" if term in STATUS_TERMS or not term[-1].isalpha() else "s?"
    flags = 0 if term[0].isupper() else re.I
    return re.compile(rf"(?<![\w-])({body}{plural})(?![\w-])", flags)


def _inside(node, types) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, types) or type(parent).__name__ in _CONTROL_TYPES or (
                isinstance(parent, nodes.Element) and _CONTROL_CLASSES & set(parent.get("classes", []))):
            return True
        parent = parent.parent
    return False


def _in_bold(node) -> bool:
    """The text is the whole of a bold run (possibly inside a glued inline span)."""
    parent = node.parent
    for _ in range(3):
        if parent is None:
            return False
        if isinstance(parent, nodes.strong):
            return parent.astext().strip() == node.astext().strip()
        parent = parent.parent
    return False


def link_first_uses(doctree, terms: dict, refuri) -> list[str]:
    """Link the first use of each term in ``doctree``; ``refuri(docname, anchor)`` gives the
    link's address.  Returns the terms linked, in order."""
    linked: list[str] = []
    # terms the page already links explicitly keep their own link (under the term's words, or
    # under others: {term}`gates <gate>` links the entry's anchor)
    refs = list(doctree.findall(nodes.reference))
    done = {t for t, (_, anchor) in terms.items()
            if any(t.lower() == r.astext().strip().lower() or str(r.get("refuri", "")).endswith("#" + anchor)
                   for r in refs)}
    ordered = sorted(terms, key=len, reverse=True)
    work = list(doctree.findall(nodes.Text))
    while work:
        text = work.pop(0)
        if text.parent is None or _inside(text, _NO_LINK_INSIDE):
            continue
        source = str(text)
        for term in ordered:
            if term in done or term in SKIP_TERMS:
                continue
            if term in STATUS_TERMS:
                if not (_in_bold(text) and source.strip() == term):
                    continue
                m = re.search(re.escape(term), source)
            else:
                m = _pattern(term).search(source)
            if not m:
                continue
            docname, anchor = terms[term]
            ref = nodes.reference("", "", internal=True, refuri=refuri(docname, anchor),
                                  classes=["companion-term"], reftitle=f"glossary: {term}")
            ref += nodes.Text(m.group(0))
            head, tail = nodes.Text(source[:m.start()]), nodes.Text(source[m.end():])
            text.parent.replace(text, [p for p in (head, ref, tail) if not (isinstance(p, nodes.Text) and not str(p))])
            done.add(term)
            linked.append(term)
            work[:0] = [t for t in (head, tail) if str(t)]      # other terms may sit in either part
            break
    return linked


def _on_doctree_resolved(app, doctree, docname) -> None:
    if app.builder.format != "html":
        return
    terms = {t: where for t, where in _terms(app.env).items() if where[0] != docname}
    if not terms:
        return

    def refuri(target, anchor):
        return app.builder.get_relative_uri(docname, target) + "#" + anchor

    link_first_uses(doctree, terms, refuri)


def setup(app) -> None:
    app.connect("doctree-resolved", _on_doctree_resolved)
