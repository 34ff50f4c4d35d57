"""The accessibility audit of the reader checks: axe-core in the page, serious and critical
violations fail.

axe-core comes from the npm registry at set-up (:func:`companion.book.site.vendor.vendor_axe`:
pinned, checked against the registry's sha512) and is injected into each page the browser
check opens, so the audit needs no network.  :func:`run_axe` runs it on the open page with
the WCAG 2.0/2.1 A and AA rules; :func:`failing_violations` keeps the violations whose
impact is serious or critical and :func:`describe` names the page, the rule and each
offending element (its CSS selector and HTML).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FAILING_IMPACTS", "AXE_OPTIONS", "axe_source", "run_axe", "failing_violations", "describe"]

FAILING_IMPACTS = ("serious", "critical")
#: the rules run: WCAG 2.0 and 2.1, levels A and AA; only violations are reported
AXE_OPTIONS = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
               "resultTypes": ["violations"]}


def axe_source(path: Path | str | None = None) -> str:
    """The text of ``axe.min.js`` (fetched and checked on first use)."""
    from ..site.vendor import vendor_axe

    return Path(path or vendor_axe()).read_text(encoding="utf-8")


def run_axe(driver, source: str, context: str | None = None, options: dict | None = None) -> dict:
    """axe-core's result for the page open in ``driver`` (selenium), ``context`` a CSS selector
    (``None``: the whole document)."""
    driver.execute_script(source + "\n;window.__companionAxe = axe;")
    result = driver.execute_async_script(
        """
        const [context, options, done] = arguments;
        window.__companionAxe.run(context ? document.querySelector(context) || document : document, options)
          .then(r => done({violations: r.violations, url: r.url}),
                e => done({error: String(e)}));
        """, context, options or AXE_OPTIONS)
    if not isinstance(result, dict) or "error" in result:
        raise RuntimeError(f"axe-core did not run: {result}")
    return result


def failing_violations(result: dict, impacts=FAILING_IMPACTS) -> list[dict]:
    """The violations of an axe result whose impact is one of ``impacts``, each with only the
    nodes of that impact (a rule's nodes can differ in impact).  ``impacts`` may be one impact
    (``"critical"``), matched whole, never as a part of another word."""
    impacts = (impacts,) if isinstance(impacts, str) else tuple(impacts)
    out = []
    for v in result.get("violations") or []:
        nodes = [n for n in v.get("nodes") or [] if (n.get("impact") or v.get("impact")) in impacts]
        if nodes:
            out.append({**v, "nodes": nodes})
    return out


def _one_line(text, limit: int | None = None) -> str:
    """``text`` on one line (a page's HTML spans lines; each element is one line of the report)."""
    text = " ".join(str(text if text is not None else "").split())
    return text[:limit] if limit else text


def describe(page: str, violations: list[dict], max_nodes: int = 5) -> str:
    """One paragraph per violation: the page, the rule, its impact and the elements, each
    element on one line."""
    lines = []
    for v in violations:
        lines.append(f"{page}: {_one_line(v.get('id', '(no rule id)'))} ({v.get('impact')}): "
                     f"{_one_line(v.get('help', ''))} [{_one_line(v.get('helpUrl', ''))}]")
        nodes = v.get("nodes") or []
        for n in nodes[:max_nodes]:
            target = " ".join(_one_line(t) for t in n.get("target") or [])
            lines.append(f"    element {target}: {_one_line(n.get('html'), 200)}")
        if len(nodes) > max_nodes:
            lines.append(f"    ... and {len(nodes) - max_nodes} more elements")
    return "\n".join(lines)
