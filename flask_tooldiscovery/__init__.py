"""flask-tooldiscovery: serve plain Python functions as tools to AI agents from a Flask app."""

from .auth import AuthError
from .dialects import register_dialect
from .extension import ToolDiscovery
from .invoke import Failure, Outcome
from .registry import ProviderError, RegistrationError
from .signature import SignatureError
from .tool import Tool, ToolContext, ToolError

__all__ = [
    "AuthError",
    "Failure",
    "Outcome",
    "ProviderError",
    "RegistrationError",
    "SignatureError",
    "Tool",
    "ToolContext",
    "ToolDiscovery",
    "ToolError",
    "register_dialect",
]

__version__ = "0.1.0"
