"""The authorization server's routes, at the app's root: metadata, authorize (the consent page),
token, register, revoke, and the signed-in user's grants (a page, or JSON).

Every refusal is the RFC's: ``{"error", "error_description"}`` with its status, or, once the
client and its redirect URI are known good, a redirect back to the client with ``error``,
``state`` and ``iss``. A redirect URI that is not the client's is never redirected to: the
person sees an error page (JSON to a client that asks for it). Each refusal is logged with its
reason at WARNING; no secret, token or code is ever logged.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from authlib.common.urls import add_params_to_uri
from authlib.oauth2.rfc6749.errors import OAuth2Error
from flask import Blueprint, Flask, Request, Response, jsonify, redirect, render_template, request
from werkzeug.wrappers import Response as BaseResponse

from ...errors import CoreError, StoreError
from ...observe.logs import log
from ...settings import Settings, SettingsError
from ..csrf import exempt_from_csrf
from . import metadata
from .cimd import Documents
from .consent import PARAMETERS, UserHook, can_tell_users, csrf_problem, csrf_token, login_url, signed_in
from .endpoints import Registration, Revocation
from .models import User
from .records import Records
from .server import Server
from .settings import OAuthServerSettings
from .storage import for_uri

#: The core's check of every request (its host allowed, its size): raises a CoreError.
HostCheck = Callable[[Request], object]
#: Headers of every page a person sees: never framed (clickjacking), never cached, no referrer.
PAGE_HEADERS = {"X-Frame-Options": "DENY", "Content-Security-Policy": "frame-ancestors 'none'",
                "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
#: Endpoints any website's script may call: they take no cookie.
OPEN_HEADERS = {"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Headers": "Authorization, Content-Type",
                "Access-Control-Allow-Methods": "GET, POST, OPTIONS"}


def cross_origin(view: Callable[..., Response]) -> Callable[..., Response]:
    """An endpoint any origin may call (token, revocation, registration): its preflight (OPTIONS)
    answered 204 and its answer carrying :data:`OPEN_HEADERS`."""

    @functools.wraps(view)
    def run(**kwargs: Any) -> Response:
        if request.method == "OPTIONS":
            return Response(status=204, headers=OPEN_HEADERS)
        response = view(**kwargs)
        response.headers.update(OPEN_HEADERS)
        return response

    return run


def oauth_error(error: str, description: str, status: int = 400, headers: dict[str, str] | None = None) -> Response:
    response = jsonify({"error": error, "error_description": description})
    response.status_code = status
    response.headers.update({"Cache-Control": "no-store", **(headers or {})})
    return response


def wants_html() -> bool:
    best = request.accept_mimetypes.best_match(["application/json", "text/html"])
    return best == "text/html" and request.accept_mimetypes[best] > request.accept_mimetypes["application/json"]


def error_page(error: str, description: str, status: int = 400) -> Response:
    """For a person (a browser asks for HTML) a page, for a client the JSON error; never a redirect."""
    if not wants_html():
        return oauth_error(error, description, status)
    response = Response(render_template("tooldiscovery/oauth_error.html", error=error, description=description),
                        status=status, mimetype="text/html")
    response.headers.update(PAGE_HEADERS)
    return response


def mount(app: Flask, settings: Settings, guard: HostCheck, user_hook: UserHook | None) -> Server:
    """Build the server and register its blueprint on ``app``."""
    options = OAuthServerSettings.of(settings)
    if not can_tell_users(app, user_hook):
        raise SettingsError("TOOLDISCOVERY_OAUTH_SERVER needs to know who is signed in: set up Flask-Login "
                            "(login_manager.init_app(app)) before init_app, or decorate a function with "
                            "@discovery.oauth_user")
    if not app.secret_key:
        raise SettingsError("TOOLDISCOVERY_OAUTH_SERVER needs the app's SECRET_KEY (sessions and the consent form)")
    store = for_uri(settings.state_storage_uri)
    records = Records(store, access_ttl=options.access_token_ttl, refresh_ttl=options.refresh_token_ttl)
    documents = Documents(store, max_bytes=options.cimd_max_bytes, timeout=options.cimd_timeout,
                          cache_ttl=options.cimd_cache_ttl, allow_loopback=options.cimd_allow_loopback,
                          supported_scopes=tuple(options.scopes))
    server = Server(options, records, documents)
    server.register_endpoint(Revocation)
    if options.registration:
        server.register_endpoint(Registration)
    app.register_blueprint(blueprint(server, settings, guard, user_hook))
    log.info("flask-tooldiscovery: OAuth authorization server on; codes, tokens and grants kept %s",
             "in the state store" if settings.state_storage_uri else "in this process only")
    return server


def blueprint(server: Server, settings: Settings, guard: HostCheck, user_hook: UserHook | None) -> Blueprint:
    options = server.options
    # its forms carry a token of their own; its other routes are called by OAuth clients, not forms
    bp = exempt_from_csrf(Blueprint("tooldiscovery_oauth", __name__, template_folder="../../templates"))

    @bp.before_request
    def check_host() -> Response | None:
        try:
            guard(request._get_current_object())  # type: ignore[attr-defined]
        except CoreError as exc:
            log.warning("flask-tooldiscovery: oauth: %s refused: %s", request.path, exc.reason or exc.message)
            return oauth_error("invalid_request", exc.message, exc.status)
        return None

    def guarded(view: Callable[..., BaseResponse]) -> Callable[..., BaseResponse]:
        """Storage down: 503; a value Authlib cannot carry in an error (quotes...): 400; logged."""

        @functools.wraps(view)
        def run(**kwargs: Any) -> BaseResponse:
            try:
                return view(**kwargs)
            except StoreError as exc:
                log.error("flask-tooldiscovery: oauth: %s failed: %s", request.path, exc)
                return oauth_error("temporarily_unavailable", "The server cannot decide this now; try again.", 503)
            except (ValueError, TypeError, KeyError) as exc:  # Authlib's, on values of the wrong type
                log.warning("flask-tooldiscovery: oauth: %s refused: malformed request, a parameter holds what an "
                            "OAuth error cannot carry (%s; not redirected)", request.path, type(exc).__name__)
                return error_page("invalid_request", "The request is malformed.")

        return run

    def answered(response: Response, what: str) -> Response:
        """Authlib's response, its refusal logged."""
        if response.status_code >= 400:
            body = response.get_json(silent=True) or {}
            log.warning("flask-tooldiscovery: oauth: %s refused (%s): %s: %s", what, response.status_code,
                        body.get("error"), body.get("error_description"))
        return response

    def with_iss(location: str) -> str:
        return str(add_params_to_uri(location, [("iss", server.issuer())]))

    def refused(error: OAuth2Error) -> BaseResponse:
        """An authorization request refused: back to the client when its redirect URI is known good,
        else an error page."""
        log.warning("flask-tooldiscovery: oauth: authorization request refused: %s: %s%s", error.error,
                    error.description, "" if error.redirect_uri else " (not redirected)")
        if error.redirect_uri:
            _, _, headers = error()
            response = redirect(with_iss(dict(headers)["Location"]), 302)
            response.headers["Cache-Control"] = "no-store"
            return response
        return error_page(error.error, error.description or error.error, error.status_code)

    @bp.route(metadata.WELL_KNOWN, methods=["GET", "OPTIONS"])
    def server_metadata() -> Response:
        response = jsonify(metadata.document(server.issuer(), options))
        response.headers.update(OPEN_HEADERS)
        return response

    @bp.route(metadata.AUTHORIZE, methods=["GET", "POST"])
    @guarded
    def authorize() -> BaseResponse:
        try:
            grant = server.get_consent_grant(end_user=None)
        except OAuth2Error as error:
            return refused(error)
        user = signed_in(user_hook)
        if request.method == "GET":
            if user is None:
                where = login_url(options.login_view, request.url)
                if where is None:
                    log.error("flask-tooldiscovery: oauth: nobody is signed in and no login view is known: set "
                              "TOOLDISCOVERY_OAUTH_LOGIN_VIEW or Flask-Login's login_manager.login_view")
                    return error_page("server_error", "Signing in is not set up on this server.", 500)
                return redirect(where, 302)
            return consent_page(grant, user)
        if user is None:
            log.warning("flask-tooldiscovery: oauth: consent posted with nobody signed in")
            return error_page("access_denied", "Your session ended: sign in and start again from the application.")
        if problem := csrf_problem(request.form.get("csrf_token"), request.form):
            log.warning("flask-tooldiscovery: oauth: consent refused: %s", problem)
            return error_page("invalid_request", "The consent form expired or did not come from this site: "
                              "start again from the application.", 403)
        allowed = request.form.get("decision") == "allow"
        log.info("flask-tooldiscovery: oauth: user %s %s client %s", user, "allowed" if allowed else "denied",
                 grant.client.get_client_id())
        response: BaseResponse = server.create_authorization_response(grant=grant,
                                                                  grant_user=User(user) if allowed else None)
        response.headers["Cache-Control"] = "no-store"
        return response

    def consent_page(grant: Any, user: str) -> Response:
        client = grant.client
        target = urlsplit(grant.redirect_uri)
        params = {k: request.args.get(k) for k in PARAMETERS if request.args.get(k) is not None}
        descriptions = options.scope_descriptions(settings.server_title)
        scopes = [(s, descriptions.get(s, s)) for s in (grant.request.scope or "").split()]
        page = render_template(
            "tooldiscovery/oauth_consent.html", client_name=client.name, client_id=client.get_client_id(),
            client_uri=client.client_uri, from_document=client.from_document,
            redirect_host=target.hostname or f"{target.scheme}:", redirect_uri=grant.redirect_uri, scopes=scopes,
            resource=grant.request.resource, params=params, csrf_token=csrf_token(params), user_id=user,
            title=settings.server_title, action=request.path)
        response = Response(page, mimetype="text/html")
        response.headers.update(PAGE_HEADERS)
        return response

    @bp.route(metadata.TOKEN, methods=["POST", "OPTIONS"])
    @guarded
    @cross_origin
    def token() -> Response:
        return answered(server.create_token_response(), "token request")

    @bp.route(metadata.REVOKE, methods=["POST", "OPTIONS"])
    @guarded
    @cross_origin
    def revoke() -> Response:
        return answered(server.create_endpoint_response("revocation"), "revocation")

    if options.registration:
        @bp.route(metadata.REGISTER, methods=["POST", "OPTIONS"])
        @guarded
        @cross_origin
        def register() -> Response:
            if not isinstance(request.get_json(silent=True), dict):
                log.warning("flask-tooldiscovery: oauth: registration refused: the body is not a JSON object")
                return oauth_error("invalid_client_metadata", "The body must be a JSON object of client metadata.")
            return answered(server.create_endpoint_response("client_registration"), "registration")

    @bp.route(metadata.GRANTS, methods=["GET"])
    @guarded
    def grants() -> BaseResponse:
        user = signed_in(user_hook)
        if user is None:
            if wants_html() and (where := login_url(options.login_view, request.url)):
                return redirect(where, 302)
            return oauth_error("login_required", "Sign in to see the applications you allowed.", 401)
        found = server.grants_of(user)
        token = csrf_token({})
        if wants_html():
            rows = [(g, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(g.granted_at))) for g in found]
            response = Response(render_template("tooldiscovery/oauth_grants.html", grants=rows, csrf_token=token,
                                                title=settings.server_title), mimetype="text/html")
            response.headers.update(PAGE_HEADERS)
            return response
        response = jsonify({"grants": [{"client_id": g.client_id, "client_name": g.client_name, "scope": g.scope,
                                        "resource": g.resource, "granted_at": int(g.granted_at)} for g in found],
                            "csrf_token": token})
        response.headers["Cache-Control"] = "no-store"
        return response

    @bp.route(metadata.GRANTS + "/<path:client_id>/revoke", methods=["POST"])
    @guarded
    def revoke_grant(client_id: str) -> BaseResponse:
        user = signed_in(user_hook)
        if user is None:
            return oauth_error("login_required", "Sign in to revoke an application's access.", 401)
        given = request.form.get("csrf_token") or request.headers.get("X-CSRF-Token")
        if problem := csrf_problem(given, {}):
            log.warning("flask-tooldiscovery: oauth: grant revocation refused: %s", problem)
            return oauth_error("invalid_request", "The form expired or did not come from this site.", 403)
        count = server.records.revoke_client(user, client_id)
        log.info("flask-tooldiscovery: oauth: user %s revoked %d grant(s) of client %s", user, count, client_id)
        if wants_html():
            return redirect(request.script_root + metadata.GRANTS, 303)
        return jsonify({"revoked": count})

    return bp


__all__ = ["mount"]
