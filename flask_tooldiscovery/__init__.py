"""flask-tooldiscovery: serve plain Python functions as tools to AI agents from a Flask app."""

from .auth import AuthError
from .dialects import Dialect
from .errors import CoreError
from .extension import ToolDiscovery
from .invoke import Failure, Outcome
from .registry import ProviderError, RegistrationError
from .results import Audio, File, Image, ResourceLink
from .settings import Settings, SettingsError
from .signature import SignatureError
from .tool import Tool, ToolContext, ToolError

__all__ = [
    "Audio",
    "AuthError",
    "CoreError",
    "Dialect",
    "Failure",
    "File",
    "Image",
    "Outcome",
    "ProviderError",
    "RegistrationError",
    "ResourceLink",
    "Settings",
    "SettingsError",
    "SignatureError",
    "Tool",
    "ToolContext",
    "ToolDiscovery",
    "ToolError",
]

__version__ = "0.1.0"
