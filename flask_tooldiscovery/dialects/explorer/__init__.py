"""Dialect ``explorer``: a JSON API shaped like MCP's and the embedded explorer page a developer
tries tools, prompts and tool UIs on, with live (streamed) calls."""

from .dialect import DIALECT

__all__ = ["DIALECT"]
