"""Dialect ``opal``: Optimizely Opal's discovery document and its tool calls, with asynchronous
(``long_running``) calls, rollbacks, interactions and UI resources."""

from .dialect import DIALECT

__all__ = ["DIALECT"]
