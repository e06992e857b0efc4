"""flask-tooldiscovery: serve plain Python functions as tools to AI agents from a Flask app."""

from .catalog.prompts import EmbeddedResource, Message, Prompt
from .catalog.ui import UI, UIError
from .dialects import Dialect
from .errors import AuthError, CoreError, InsufficientScope, ToolDiscoveryError
from .extension import ToolDiscovery
from .schema.signature import SignatureError
from .settings import Settings, SettingsError
from .tools.envelope import Envelope
from .tools.function_tools import RegistrationError
from .tools.model import Identity, Tool, ToolContext, ToolError
from .tools.providers import ProviderError
from .tools.questions import Answer, CannotAsk, Question, Root, RootsRequest, Sampled, SamplingRequest
from .tools.results import Audio, Failure, File, Image, Outcome, ResourceLink

__all__ = [
    "UI",
    "Answer",
    "Audio",
    "AuthError",
    "CannotAsk",
    "CoreError",
    "Dialect",
    "EmbeddedResource",
    "Envelope",
    "Failure",
    "File",
    "Identity",
    "Image",
    "InsufficientScope",
    "Message",
    "Outcome",
    "Prompt",
    "ProviderError",
    "Question",
    "RegistrationError",
    "ResourceLink",
    "Root",
    "RootsRequest",
    "Sampled",
    "SamplingRequest",
    "Settings",
    "SettingsError",
    "SignatureError",
    "Tool",
    "ToolContext",
    "ToolDiscovery",
    "ToolDiscoveryError",
    "ToolError",
    "UIError",
]

__version__ = "0.1.0"
