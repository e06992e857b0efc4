"""An app whose tools return images, audio, files and links, and whose resources a client reads:
for tests/test_rich_results.py, in process and under gunicorn
(``tests.apps.rich_app:create_app(resources=True)``)."""

from __future__ import annotations

import struct
from typing import Any

from flask import Flask

from flask_tooldiscovery import Audio, File, Identity, Image, ResourceLink, ToolContext, ToolDiscovery

#: A real 1x1 PNG, and bytes that are not UTF-8 (so no text path can carry them unharmed).
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360f80f0000010100005e8e2a6e0000000049454e44ae426082")
WAV = b"RIFF" + struct.pack("<I", 36) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, 8000, 8000, 1, 8) \
    + b"data" + struct.pack("<I", 0)
PDF = b"%PDF-1.4\n\xe2\xe3\xcf\xd3\n%%EOF\n"
REPORTS = {"42": PDF, "7": PDF.replace(b"1.4", b"1.7")}


def build(**config: Any) -> tuple[ToolDiscovery, Flask]:
    """The tools and resources, on a fresh app with ``config`` (an identity hook with ``identity=True``:
    the ``X-User`` header names the caller, ``X-Scopes`` its scopes)."""
    use_identity = config.pop("identity", False)

    def identify(request: Any) -> Identity | None:
        user = request.headers.get("X-User")
        return Identity(subject=user, scopes=tuple(request.headers.get("X-Scopes", "").split())) if user else None

    discovery = ToolDiscovery(identity=identify if use_identity else None)

    @discovery.tool(result_mime_type="image/png")
    def chart() -> bytes:
        """Draw the chart (PNG bytes, declared with result_mime_type)."""
        return PNG

    @discovery.tool
    def snapshot() -> Image:
        """Take a snapshot."""
        return Image(PNG, "image/png")

    @discovery.tool
    def voice() -> Audio:
        """Say hello."""
        return Audio(WAV, "audio/wav")

    @discovery.tool
    def export(quarter: int = 3) -> File:
        """Export a quarter's report.

        Args:
            quarter: Which quarter.
        """
        return File(PDF, "application/pdf", name=f"q{quarter}.pdf")

    @discovery.tool
    def report_link(report_id: str) -> ResourceLink:
        """Link to a report the client reads later.

        Args:
            report_id: The report.
        """
        return ResourceLink(f"reports://{report_id}", f"Report {report_id}", mime_type="application/pdf")

    @discovery.tool
    def gallery() -> list[str | Image]:
        """A caption and two pictures."""
        return ["Two pictures:", Image(PNG, "image/png"), Image(PNG[:20], "image/png")]

    @discovery.tool
    def raw() -> bytes:
        """Bytes without a declared type."""
        return PDF

    @discovery.resource("reports://{report_id}", mime_type="application/pdf", description="A quarterly report.")
    def report(report_id: str, ctx: ToolContext) -> bytes | None:
        assert ctx.dialect == "mcp"
        return REPORTS.get(report_id)

    @discovery.resource("notes://readme", mime_type="text/markdown", title="Read me")
    def readme() -> str:
        return "# Hello\n"

    @discovery.resource("secret://{name}", scopes=["secrets:read"])
    def secret(name: str, ctx: ToolContext) -> str:
        return f"{name} for {ctx.user_id}"

    app = Flask("rich")
    app.config.update({"TOOLDISCOVERY_ALLOW_EXECUTE": True, "TOOLDISCOVERY_WARN_UNAUTHENTICATED": False, **config})
    discovery.init_app(app)
    return discovery, app


def create_app(resources: bool = False) -> Flask:
    return build(TOOLDISCOVERY_MCP_RESOURCES=resources)[1]
