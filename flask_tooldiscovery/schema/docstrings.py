"""Docstrings read for tools: the description, each parameter's text and the returns text, in
the Google, NumPy, Sphinx (ReST) or Epydoc style (``docstring_parser`` detects which)."""

from __future__ import annotations

import inspect
import re

import docstring_parser
import docstring_parser.google
import docstring_parser.rest

#: A line that may open a section in the ReST (``:``), Epydoc (``@``) or NumPy (a ``---``
#: underline, a ``.. deprecated::`` directive) styles.
_OTHER_STYLES = re.compile(r"^(?:[:@]|-|\.\.)", re.MULTILINE)
_GOOGLE = docstring_parser.google.GoogleParser()


def _parse_doc(text: str) -> docstring_parser.Docstring:
    """``docstring_parser.parse(text)`` (style auto-detected), without running the four parsers
    when the answer is known: auto-detection keeps the parse with the most sections, the first of
    ReST, Google, NumPy, Epydoc on a tie, and a text with no line that can open a ReST, Epydoc or
    NumPy section gives those three no section at all."""
    if _OTHER_STYLES.search(text):
        return docstring_parser.parse(text)
    if ":" not in text:  # no Google section title either ("Args:"): no style finds a section
        return docstring_parser.rest.parse(text)
    try:
        google = _GOOGLE.parse(text)  # what docstring_parser.google.parse does, without a new parser
    except docstring_parser.ParseError:
        return docstring_parser.parse(text)
    return google if google.meta else docstring_parser.rest.parse(text)


def docstring_params(doc: str | None) -> dict[str, str]:
    if not doc:
        return {}
    parsed = _parse_doc(inspect.cleandoc(doc))
    return {p.arg_name: p.description for p in parsed.params if p.description}


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str], str | None]:
    """(description, parameter descriptions, returns description) from a Google, NumPy or
    Sphinx style docstring."""
    if not doc:
        return "", {}, None
    parsed = _parse_doc(inspect.cleandoc(doc))
    text = "\n\n".join(p for p in (parsed.short_description, parsed.long_description) if p)
    params: dict[str, str] = {}
    for p in parsed.params:
        if p.description:
            # NumPy/Google allow "name (type)"; docstring_parser already splits the type off.
            params[p.arg_name.split(" ")[0].lstrip("*")] = " ".join(p.description.split())
    returns = parsed.returns.description if parsed.returns and parsed.returns.description else None
    return text.strip(), params, returns
