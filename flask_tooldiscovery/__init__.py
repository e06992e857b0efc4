"""flask-tooldiscovery: serve plain Python functions as tools to AI agents from a Flask app."""

from .auth import AuthError
from .dialects import Dialect
from .errors import CoreError
from .extension import ToolDiscovery
from .invoke import Failure, Outcome
from .registry import ProviderError, RegistrationError
from .settings import Settings, SettingsError
from .signature import SignatureError
from .tool import Tool, ToolContext, ToolError

__all__ = [
    "AuthError",
    "CoreError",
    "Dialect",
    "Failure",
    "Outcome",
    "ProviderError",
    "RegistrationError",
    "Settings",
    "SettingsError",
    "SignatureError",
    "Tool",
    "ToolContext",
    "ToolDiscovery",
    "ToolError",
]

__version__ = "0.1.0"
