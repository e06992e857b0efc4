"""A small flask-smorest API (the shop's pets), written as any flask-smorest app is, and knowing
nothing of tools: ``example_app`` offers its views as tools with ``discovery.add_view``. Needs the
``example`` extra (``pip install -e ".[example]"``); without flask-smorest the example runs without it.

Writes need the shop key in ``X-Shop-Key`` when ``PETS_SHOP_KEY`` is set: the API's own check, which
tool calls meet too (the caller's headers are passed on).
"""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask import Flask, current_app, request
from flask.views import MethodView
from flask_smorest import Api, Blueprint, abort
from werkzeug.exceptions import HTTPException

SPECIES = ("cat", "dog", "bird", "rabbit")


class PetSchema(ma.Schema):
    id = ma.fields.Integer(dump_only=True, metadata={"description": "The pet's id."})
    name = ma.fields.String(required=True, validate=ma.validate.Length(min=1, max=40),
                            metadata={"description": "The pet's name (letters and spaces)."})
    species = ma.fields.String(required=True, validate=ma.validate.OneOf(SPECIES),
                               metadata={"description": "What kind of animal it is."})
    age = ma.fields.Integer(validate=ma.validate.Range(min=0, max=60), metadata={"description": "Age in years."})

    @ma.validates("name")
    def letters_only(self, value: str, **kwargs: Any) -> None:
        if not all(c.isalpha() or c == " " for c in value):
            raise ma.ValidationError("A pet's name holds letters and spaces only.")


class PetQuerySchema(ma.Schema):
    species = ma.fields.String(validate=ma.validate.OneOf(SPECIES),
                               metadata={"description": "Only pets of this species."})


blp = Blueprint("pets", __name__, url_prefix="/api/pets", description="The shop's pets.")


def _pets() -> dict[int, dict[str, Any]]:
    return current_app.extensions["example_pets"]  # type: ignore[no-any-return]


@blp.before_request
def shop_key() -> None:
    """Writes need the shop key when one is configured (the API's own auth)."""
    key = current_app.config.get("PETS_SHOP_KEY")
    if key and request.method not in ("GET", "HEAD", "OPTIONS") and request.headers.get("X-Shop-Key") != key:
        abort(401, message="This needs the shop key in X-Shop-Key.")


@blp.route("/")
class Pets(MethodView):
    @blp.arguments(PetQuerySchema, location="query")
    @blp.response(200, PetSchema(many=True))
    def get(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        """List the shop's pets, optionally of one species."""
        return [p for p in _pets().values() if args.get("species") in (None, p["species"])]

    @blp.arguments(PetSchema)
    @blp.response(201, PetSchema)
    def post(self, pet: dict[str, Any]) -> dict[str, Any]:
        """Add a pet to the shop."""
        pets = _pets()
        if any(p["name"].lower() == pet["name"].lower() for p in pets.values()):
            abort(409, message=f"A pet named {pet['name']} is already in the shop.")
        pet = {"id": max(pets, default=0) + 1, **pet}
        pets[pet["id"]] = pet
        return pet


@blp.route("/<int:pet_id>")
class PetById(MethodView):
    @blp.response(200, PetSchema)
    def get(self, pet_id: int) -> dict[str, Any]:
        """Get one pet.

        Args:
            pet_id: The pet's id.
        """
        pet = _pets().get(pet_id)
        if pet is None:
            abort(404, message=f"No pet has id {pet_id}.")
        return pet

    @blp.response(204)
    def delete(self, pet_id: int) -> None:
        """Remove a pet from the shop.

        Args:
            pet_id: The pet's id.
        """
        if _pets().pop(pet_id, None) is None:
            abort(404, message=f"No pet has id {pet_id}.")


class PetsApi(Api):
    """flask-smorest's ``Api``, whose JSON error answers keep the ``Allow`` header of a 405 (its
    handler, app-wide, drops the headers werkzeug's exception carries: every route of the app,
    the tool routes that leave other methods to Flask included, would answer 405 without it)."""

    def handle_http_exception(self, error: HTTPException) -> Any:
        payload, status, headers = super().handle_http_exception(error)
        allowed = getattr(error, "valid_methods", None)
        return payload, status, {"Allow": ", ".join(allowed), **headers} if allowed else headers


def register(app: Flask) -> None:
    """Mount the pets API on ``app`` (before ``discovery.init_app``, which finds its views)."""
    app.config.setdefault("API_TITLE", "Pets")
    app.config.setdefault("API_VERSION", "1.0.0")
    app.config.setdefault("OPENAPI_VERSION", "3.0.3")
    app.extensions["example_pets"] = {1: {"id": 1, "name": "Tom", "species": "cat", "age": 3},
                                      2: {"id": 2, "name": "Rex", "species": "dog", "age": 5}}
    PetsApi(app).register_blueprint(blp)


def offer(discovery: Any) -> None:
    """Offer the pets API's views as tools, without touching them."""
    def hints(title: str, method: str) -> dict[str, Any]:  # what the stores' reviews ask of every tool
        return {"title": title, "readOnlyHint": method == "GET", "destructiveHint": method == "DELETE",
                "idempotentHint": method != "POST", "openWorldHint": False}

    discovery.add_view("pets.Pets", method="GET", name="list_pets", tags=["pets"],
                       annotations=hints("List pets", "GET"),
                       examples=[{"description": "The cats", "input": {"species": "cat"}}])
    discovery.add_view("pets.Pets", method="POST", name="add_pet", tags=["pets"],
                       annotations=hints("Add a pet", "POST"))
    discovery.add_view("pets.PetById", method="GET", name="get_pet", tags=["pets"],
                       annotations=hints("Get a pet", "GET"))
    discovery.add_view("pets.PetById", method="DELETE", name="remove_pet", tags=["pets"], requires_approval=True,
                       annotations=hints("Remove a pet", "DELETE"))
