"""Every exception a user's code may catch, in one place. What "may catch" means: a tool, an app's
error handler, an identity hook, a custom dialect or a script calling ``discovery.call`` can meet
it. :class:`ToolDiscoveryError` is the base of every exception this package raises on purpose;
each keeps the built-in base it had (``SettingsError`` is still a ``ValueError``)::

    ToolDiscoveryError
      ToolError                     a tool's own failure, raised on purpose
      SettingsError, RegistrationError, SignatureError, SchemaSourceError, InvalidSchemaError,
      UnsupportedType, PlatformOptionError, UIError, ProviderError     registration, init_app
      CannotAsk > CannotAnswer, InvalidAnswer                          a tool asking its caller
      NoSuchPrompt, InvalidPromptArguments, NoSuchResource, UnknownArgument, ViewFailed
      AuthError > ScopeError        raised by identity hooks and verifiers
      CoreError                     a refused request: an HTTP status, a client-safe message
        BadRequest > MalformedBody, InvalidApproval > UnsealedState
        Unauthorized, Forbidden > InsufficientScope, NotFound > UnknownTool, MethodNotAllowed,
        PayloadTooLarge, UnsupportedMediaType, MisdirectedRequest, Unavailable,
        RetryLater > Busy, RateLimited;  ApprovalRequired (428, the sealed request to approve)
      StorageError                  the state storage could not decide (unreachable, or full)
        StoreFull, SpendError, OnceError, RendezvousError, StoreError

The modules that raise them import them from here. An exception raised and caught inside the
package is private to where it is raised (a leading underscore, never exported). Three live
elsewhere on purpose, and no user's code catches them: ``tools.questions.InputRequired`` (a
``BaseException``: the control-flow signal that ends a round of input requests, which a tool
lets pass), ``dialects.mcp.jsonrpc.RpcError`` (MCP's JSON-RPC error, answered by the MCP
dialect's dispatcher) and ``identity.authorization_server.grants.InvalidTargetError`` (an Authlib
``OAuth2Error``, answered by Authlib). ``tests/test_errors_module.py`` holds the package to this.

The pipeline raises the core errors; each dialect maps them to its own wire error shape in one function
(its ``error_response``), which is the only error code a dialect has. Messages are written for the
client; nothing secret goes into them. ``reason`` (when given) is for the log only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from werkzeug.exceptions import HTTPException


class ToolDiscoveryError(Exception):
    """The base of every exception this package defines: ``except ToolDiscoveryError`` catches
    whatever it raised on purpose (a wrong setting, a function it cannot describe, a refused
    request...) and the :class:`~flask_tooldiscovery.ToolError` a tool raises. Each subclass keeps
    the built-in base it had (``SettingsError`` is still a ``ValueError``...)."""


class AuthError(ToolDiscoveryError):
    """Credentials are missing or wrong. ``reason`` is for the log, never for the client."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ScopeError(AuthError):
    """A valid token that lacks a required scope: refused with 403, not 401. ``challenge`` is the
    ``WWW-Authenticate`` value (``error="insufficient_scope"``; ``None``: the authenticator's
    ``Authenticator.scope_challenge``), ``scopes`` the ones required."""

    def __init__(self, reason: str, *, challenge: str | None = None, scopes: Iterable[str]) -> None:
        super().__init__(reason)
        self.challenge = challenge
        self.scopes = tuple(scopes)


class CoreError(ToolDiscoveryError):
    """Base of the core's request errors: an HTTP status, a client-safe message, headers."""

    status = 500
    default_message = "Internal error."

    def __init__(
        self,
        message: str | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        reason: str | None = None,
        extra: Mapping[str, Any] | None = None,
        status: int | None = None,
    ) -> None:
        self.message = message or self.default_message
        super().__init__(self.message)
        self.headers: dict[str, str] = dict(headers or {})
        #: Why, for the log (never sent).
        self.reason = reason
        #: Keys a dialect adds to its error body (OXP's ``missing_requirements``...).
        self.extra: dict[str, Any] = dict(extra or {})
        if status is not None:
            self.status = status


class BadRequest(CoreError):
    """The request is malformed: not JSON, the wrong shape, a missing field."""

    status = 400
    default_message = "Bad request."


class Unauthorized(CoreError):
    """Credentials are missing or wrong; ``challenge`` is the ``WWW-Authenticate`` value."""

    status = 401
    default_message = "Unauthorized."

    def __init__(self, message: str | None = None, *, challenge: str, reason: str | None = None) -> None:
        super().__init__(message, headers={"WWW-Authenticate": challenge}, reason=reason)
        self.challenge = challenge


class Forbidden(CoreError):
    """The caller may not do this (origin not allowed, execution disabled)."""

    status = 403
    default_message = "Forbidden."


class InsufficientScope(Forbidden):
    """The caller is known but lacks a scope the call requires (RFC 6750 ``insufficient_scope``):
    ``scopes`` are the ones required, ``challenge`` the ``WWW-Authenticate`` value naming them.

    Raise it from an identity hook (``@discovery.identity``) to refuse a signed-in caller with
    ``403`` rather than ``401``, leaving ``challenge`` out: the identity layer writes
    ``Bearer error="insufficient_scope", scope="..."``, with ``resource_metadata="..."`` where MCP
    serves protected resource metadata (the scopes its tokens need are named too), in every
    dialect's error shape. ``reason`` goes to the log; the client reads the standard message::

        raise InsufficientScope(scopes=["reports:write"], reason=f"{user.id} is read-only")
    """

    default_message = "Forbidden: the access token lacks a required scope."

    def __init__(self, message: str | None = None, *, scopes: Iterable[str] = (), challenge: str | None = None,
                 reason: str | None = None) -> None:
        super().__init__(message, headers={"WWW-Authenticate": challenge} if challenge else None, reason=reason)
        self.challenge = challenge
        self.scopes = tuple(scopes)


class NotFound(CoreError):
    """No such tool (or route)."""

    status = 404
    default_message = "Not found."


class MethodNotAllowed(CoreError):
    """The route exists but not for this HTTP method; ``allow`` lists the methods it takes."""

    status = 405
    default_message = "Method not allowed."

    def __init__(self, allow: list[str], message: str | None = None) -> None:
        super().__init__(message, headers={"Allow": ", ".join(allow)})
        self.allow = list(allow)


class PayloadTooLarge(CoreError):
    """The request body is larger than ``TOOLDISCOVERY_MAX_CONTENT_LENGTH``."""

    status = 413
    default_message = "The request body is too large."


class UnsupportedMediaType(CoreError):
    """A route that runs a tool was sent something other than ``application/json``."""

    status = 415
    default_message = "The request body must be sent as Content-Type: application/json."


class MisdirectedRequest(CoreError):
    """The ``Host`` header names a host this server does not answer for (DNS rebinding)."""

    status = 421
    default_message = "Misdirected request: this host name is not served here."


class RetryLater(CoreError):
    """Refused for now, not for good: the call may be retried after ``retry_after`` seconds
    (whole seconds, rounded up; also sent as ``Retry-After``). Dialects map every subclass alike."""

    status = 503

    def __init__(self, message: str | None = None, *, retry_after: float = 1.0) -> None:
        seconds = max(1, int(-(-retry_after // 1)))  # whole seconds, rounded up
        super().__init__(message, headers={"Retry-After": str(seconds)})
        self.retry_after = seconds

    @property
    def retry_after_ms(self) -> int:
        """``retry_after`` in milliseconds, for wire formats that count in ms."""
        return self.retry_after * 1000


class Busy(RetryLater):
    """Every slot for tool calls in this worker is taken; try again after ``retry_after`` s."""

    status = 503
    default_message = "The server is busy running other tools; retry shortly."


class RateLimited(RetryLater):
    """The caller has used up its rate limit for this tool; ``limit`` says which (``5 per 1 minute``)."""

    status = 429
    default_message = "Too many calls of this tool; retry later."

    def __init__(self, message: str | None = None, *, retry_after: float = 1.0, limit: str = "") -> None:
        super().__init__(message, retry_after=retry_after)
        self.limit = limit


class Unavailable(CoreError):
    """The tool list cannot be produced right now (a tools provider failed)."""

    status = 503
    default_message = "The tool list is unavailable right now."


class MalformedBody(BadRequest):
    """The body is not JSON (or nests too deep, or holds a non-finite number).

    ``detail`` is the parser's own sentence; dialects word the message their own way.
    """

    def __init__(self, detail: str) -> None:
        super().__init__(f"Malformed JSON: {detail}")
        self.detail = detail


class ApprovalRequired(CoreError):
    """The tool needs a person's approval first; ``state`` is the sealed request to send back
    with it, ``prompt`` the question to put to the person."""

    status = 428
    default_message = "This tool needs approval before it runs."

    def __init__(self, tool: Any, state: str, prompt: str) -> None:  # a Tool (errors.py imports no layer)
        super().__init__(f"Tool {tool.name!r} needs approval before it runs.",
                         extra={"code": "approval_required", "approval_state": state, "prompt": prompt})
        self.tool = tool
        self.state = state
        self.prompt = prompt


class InvalidApproval(BadRequest):
    """The approval state sent back is tampered with, expired, or for another call."""

    default_message = "The approval is invalid or expired; call the tool again to ask anew."

    def __init__(self, reason: str) -> None:
        super().__init__(extra={"code": "invalid_approval"}, reason=reason)


class UnsealedState(InvalidApproval):
    """The state sent back was not sealed by this server for this use (tampered with, another key,
    or sealed for another purpose)."""


#: The HTTP status of each core error, for dialects whose shape keys off it.
STATUS_NAMES = {
    400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
    405: "Method Not Allowed", 413: "Payload Too Large", 415: "Unsupported Media Type",
    421: "Misdirected Request", 429: "Too Many Requests", 500: "Internal Server Error",
    503: "Service Unavailable",
}


class UnknownTool(NotFound):
    """No tool of that name (or id) is visible to the caller. ``name`` is as an error repeats it:
    its first 128 characters (the longest a tool's name is), so a made-up one is never echoed whole."""

    def __init__(self, name: str) -> None:
        shown = name if len(name) <= 128 else name[:128] + "..."
        super().__init__(f"Tool not found: {shown}")
        self.name = shown


def from_http(exc: HTTPException) -> CoreError:
    """The core error for an HTTP error werkzeug or Flask raised (a 404 of the router, a 413 of
    the body reader...), so that the dialect answers it in its own shape."""
    status = exc.code or 500
    message = exc.description or exc.name
    if status == 413:
        return PayloadTooLarge(message)
    if status == 405:
        return MethodNotAllowed(list(getattr(exc, "valid_methods", None) or []), message)
    core = _BY_STATUS.get(status, CoreError)(message)
    core.status = status
    return core


_BY_STATUS: dict[int, type[CoreError]] = {400: BadRequest, 403: Forbidden, 404: NotFound, 503: Unavailable}


# -- what a user's code may catch (raised by registration, init_app, tools, prompts...) --


class SettingsError(ToolDiscoveryError, ValueError):
    """A ``TOOLDISCOVERY_*`` value cannot be used; the message names the key."""


class ToolError(ToolDiscoveryError):
    """The error a tool raises on purpose.

    Its ``message`` is shown to the user or the model; ``developer_message`` is logged and sent
    only by dialects whose wire format has a field for it (OXP). ``not_found``: what the call
    names does not exist (an order, a pet), which each protocol answers as its own not-found (a
    404 where it has one). Any other exception a tool raises is reported with a generic message
    and its traceback goes to the app logger only.
    """

    def __init__(
        self,
        message: str,
        *,
        developer_message: str | None = None,
        can_retry: bool = False,
        retry_after_ms: int | None = None,
        additional_prompt_content: str | None = None,
        not_found: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = str(message)
        self.developer_message = developer_message
        self.can_retry = bool(can_retry)
        self.retry_after_ms = retry_after_ms
        self.additional_prompt_content = additional_prompt_content
        self.not_found = bool(not_found)


class RegistrationError(ToolDiscoveryError, ValueError):
    """A tool cannot be registered (bad option, duplicate name and version, bad schema)."""


class SignatureError(ToolDiscoveryError, TypeError):
    """A function cannot be offered as a tool; the message names the function and parameter."""


class ProviderError(ToolDiscoveryError, RuntimeError):
    """A tools provider raised or returned something that is not a list of tools."""


class UIError(ToolDiscoveryError):
    """A UI that cannot be served: a template missing at ``init_app``, or failing at read time."""


class CannotAsk(ToolDiscoveryError, RuntimeError):
    """The call cannot ask its caller (nobody can answer where it runs)."""


class CannotAnswer(CannotAsk):
    """The caller cannot answer this kind of request: it did not declare ``capability``."""

    def __init__(self, capability: str) -> None:
        super().__init__(f"This tool asks its caller for {capability}, which the caller did not declare it can do.")
        self.capability = capability


class InvalidAnswer(CannotAsk):
    """An answer the caller sent does not fit its request."""


class NoSuchPrompt(ToolDiscoveryError, LookupError):
    """No prompt of this name for this caller."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Unknown prompt: {name}")
        self.name = name


class InvalidPromptArguments(ToolDiscoveryError, ValueError):
    """The arguments do not fit the prompt (a required one missing, an unknown one, a bad value)."""


class NoSuchResource(ToolDiscoveryError, LookupError):
    """No resource answers this URI for this caller (or its function returned ``None``)."""

    def __init__(self, uri: str) -> None:
        super().__init__(uri)
        self.uri = uri


class UnknownArgument(ToolDiscoveryError, LookupError):
    """What is completed has no argument (or template variable) of that name."""


class SchemaSourceError(ToolDiscoveryError, TypeError):
    """``input_schema=`` was given something that is not a schema this library can read."""


class InvalidSchemaError(ToolDiscoveryError, ValueError):
    """A tool's input or output schema is not a valid JSON Schema."""


class UnsupportedType(ToolDiscoveryError):
    """An annotation has no JSON Schema form (describe_function says which parameter)."""


class PlatformOptionError(ToolDiscoveryError, ValueError):
    """An option's value cannot be used; the message says which and why."""


class ViewFailed(ToolDiscoveryError, RuntimeError):
    """The view answered 5xx (or not at all): logged, never sent."""


# -- the state storage could not decide (an unreachable Redis, a full store in process memory) --


class StorageError(ToolDiscoveryError, RuntimeError):
    """The state storage (``TOOLDISCOVERY_STATE_STORAGE_URI``: Redis, else process memory) could not
    decide: it is unreachable, or the store in process memory is full. A request that meets one is
    refused (each dialect's 503), never run on a guess; code that uses the package outside a request
    (a worker, a script calling ``discovery.call``) catches every kind below with this one class."""


class StoreFull(StorageError):
    """A store in process memory holds as many live keys as it may: it refuses a new one rather
    than forget one still live."""


class SpendError(StorageError):
    """Whether a single-use key (a sealed approval, a signed request's nonce) was spent cannot be
    decided: the storage is unreachable, or full."""


class OnceError(StorageError):
    """Whether a run-once key is taken cannot be decided: the storage is unreachable, or full."""


class RendezvousError(StorageError):
    """The storage was unreachable while a call waited for its caller's answer."""


class StoreError(StorageError):
    """The authorization server's records cannot be read or written: the storage is unreachable
    (or, in process, full). Its views answer 503 and its verifier refuses the token."""


__all__ = [
    "STATUS_NAMES",
    "ApprovalRequired",
    "AuthError",
    "BadRequest",
    "Busy",
    "CannotAnswer",
    "CannotAsk",
    "CoreError",
    "Forbidden",
    "InsufficientScope",
    "InvalidAnswer",
    "InvalidApproval",
    "InvalidPromptArguments",
    "InvalidSchemaError",
    "MalformedBody",
    "MethodNotAllowed",
    "MisdirectedRequest",
    "NoSuchPrompt",
    "NoSuchResource",
    "NotFound",
    "OnceError",
    "PayloadTooLarge",
    "PlatformOptionError",
    "ProviderError",
    "RateLimited",
    "RegistrationError",
    "RendezvousError",
    "RetryLater",
    "SchemaSourceError",
    "ScopeError",
    "SettingsError",
    "SignatureError",
    "SpendError",
    "StorageError",
    "StoreError",
    "StoreFull",
    "ToolDiscoveryError",
    "ToolError",
    "UIError",
    "Unauthorized",
    "Unavailable",
    "UnknownArgument",
    "UnknownTool",
    "UnsealedState",
    "UnsupportedMediaType",
    "UnsupportedType",
    "ViewFailed",
    "from_http",
]
