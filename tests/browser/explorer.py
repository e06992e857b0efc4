"""What the browser tests do on the explorer page, again and again: open it (at a fragment), open
one tool and wait until the page shows it, run the tool and wait for the status it ends with."""

from __future__ import annotations

from typing import Any

READY = "body[data-ready='true']"


def open_explorer(page: Any, url: str, fragment: str = "", ready: str = READY) -> None:
    """Go to the explorer at ``url`` (its mount, e.g. ``http://127.0.0.1:PORT/explorer``) and wait
    until its script says it is ready."""
    page.goto(f"{url}/{fragment}")
    page.wait_for_selector(ready)


def open_tool(page: Any, url: str, name: str) -> None:
    """Open the explorer at ``url`` on the tool ``name`` (a deep link) and wait until it is shown."""
    open_explorer(page, url, f"#tool={name}")
    page.wait_for_selector(f"#td-name:has-text('{name}')")


def execute(page: Any, status: str = "Done") -> None:
    """Press Execute and wait until the status line says ``status``."""
    page.click("#td-execute")
    page.wait_for_selector(f"#td-status:has-text('{status}')")
