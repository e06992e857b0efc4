"""Dialect ``tdp``: the Vrooli Tool Discovery Protocol 1.0 manifest (JSON and protojson) and its
execute endpoint."""

from .dialect import DIALECT

__all__ = ["DIALECT"]
