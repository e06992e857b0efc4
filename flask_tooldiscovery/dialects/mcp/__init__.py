"""Dialect ``mcp``: the Model Context Protocol over streamable HTTP: tools, prompts, resources,
completion, skills, apps, tasks, subscriptions, input requests, and MCP as an OAuth 2.1 resource
server."""

from .dialect import DIALECT

__all__ = ["DIALECT"]
