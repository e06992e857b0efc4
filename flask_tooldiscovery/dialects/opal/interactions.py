"""Opal's interactions: ``POST <prefix>/interactions/execute`` with ``{"name", "parameters",
"auth", "auth_credentials"}`` runs a handler registered with ``@discovery.interaction``, one the
platform's UI calls (a card's button) and the model never sees: it is in no discovery document.
It goes through the same pipeline as a tool call (identity, limits, approvals, signals) and is
answered as one (:func:`~.requests.answer`). Wire facts: the SDK's ``execute_interaction``
(``service.py``, 0.2.3.dev0): 400 without ``name``, 404 for an unknown one."""

from __future__ import annotations

from flask import Response

from ...errors import BadRequest, NotFound
from ...serving.pipeline import Pipeline
from .requests import answer, arguments_of, body_object, context_of


def execute(pipe: Pipeline) -> Response:
    """The view of ``POST <prefix>/interactions/execute``."""
    body = body_object(pipe.body(required=True), "parameters")
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise BadRequest("'name' must name an interaction.")
    handler = pipe.core.registry.interactions.get(name)
    if handler is None:
        raise NotFound(f"Interaction not found: {name}")
    parameters = arguments_of({"parameters": body.get("parameters")}, "parameters")
    return answer(pipe.invoke(handler, parameters, context_of(pipe, body, interaction=name), coerce=True))


__all__ = ["execute"]
