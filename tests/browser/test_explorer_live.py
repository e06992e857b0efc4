"""The explorer page with long-running and interactive tools, in headless Chromium against a live
server in this process (the tools block on events the tests release): progress and log lines
while the tool runs, Stop cancelling the call, rich results (images, audio, files, links) and
calls a person must approve."""

from __future__ import annotations

import struct
import threading
import zlib
from collections.abc import Iterator

import pytest
from flask import Flask
from playwright.sync_api import expect

from flask_tooldiscovery import Audio, File, Image, ResourceLink, ToolContext, ToolDiscovery

from ..conftest import live_server
from .explorer import execute, open_tool

pytestmark = pytest.mark.browser

WAIT = 30  # seconds a tool waits for the test at most, so that a failing test never hangs


@pytest.fixture(autouse=True)
def _quick_timeouts(page) -> None:
    page.set_default_timeout(10_000)


def png(width: int, height: int) -> bytes:
    """A real PNG of ``width`` x ``height`` red pixels."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def wav() -> bytes:
    """A short silent WAV (8 kHz, 8 bit, mono)."""
    samples = b"\x80" * 800
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 8000, 1, 8)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(samples)) + samples
    return b"RIFF" + struct.pack("<I", len(body)) + body


SVG = (b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10" onload="window.pwned=1">'
       b'<rect width="10" height="10"/></svg>')


class Tools:
    """A fresh app whose tools the test steers with threading events."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.saw_cancel = threading.Event()
        self.ran: list[str] = []
        self.base = ""  # where the tools fixture serves the app
        d = ToolDiscovery()

        @d.tool
        def crunch(steps: int = 3, ctx: ToolContext = None) -> str:
            """Crunch in steps, reporting each."""
            for i in range(steps):
                ctx.report_progress(i + 1, steps, f"step {i + 1} of {steps}")
                ctx.log("info", f"finished step {i + 1}")
            ctx.log("warning", "<b>not bold</b>")
            self.gate.wait(WAIT)  # the test has seen the progress; now it lets the tool finish
            return "crunched"

        @d.tool
        def hang(ctx: ToolContext = None) -> str:
            """Wait until cancelled."""
            woke = threading.Event()
            ctx.on_cancel(woke.set)
            ctx.report_progress(1, 2, "hanging on")
            woke.wait(WAIT)
            if ctx.cancelled:
                self.saw_cancel.set()
            ctx.check_cancelled()
            return "not cancelled"

        @d.tool
        def picture() -> Image:
            """A 3x2 PNG."""
            return Image(png(3, 2), "image/png")

        @d.tool
        def drawing() -> Image:
            """An SVG that would run a script if shown inline."""
            return Image(SVG, "image/svg+xml")

        @d.tool
        def media() -> list:
            """Audio, a file and links."""
            return [Audio(wav(), "audio/wav"), File(b"hello, file", "text/plain", "hello.txt"),
                    ResourceLink("https://example.com/report", "The report"),
                    ResourceLink("javascript:window.pwned=1", "Not a link")]

        @d.tool(requires_approval=True)
        def wipe(target: str) -> str:
            """Wipe a target (a person must approve each call)."""
            self.ran.append(target)
            return f"wiped {target}"

        @d.tool(annotations={"destructiveHint": True})
        def purge(target: str) -> str:
            """Destructive, without the server's approval: the page asks first."""
            self.ran.append(target)
            return f"purged {target}"

        self.app = Flask("liveapp")
        self.app.config.update(TOOLDISCOVERY_DIALECTS=["explorer"], TOOLDISCOVERY_ALLOW_EXECUTE=True,
                               TOOLDISCOVERY_STREAM_KEEPALIVE=0.1, SECRET_KEY="test secret")
        d.init_app(self.app)


@pytest.fixture
def tools() -> Iterator[Tools]:
    """A fresh :class:`Tools` app served on a free port (``tools.base``) for the test."""
    fresh = Tools()
    with live_server(fresh.app) as base:
        fresh.base = base
        yield fresh


def run_tool(page, tools: Tools, name: str) -> None:
    """Open ``name``, press Execute and wait until the call is done."""
    open_tool(page, tools.base + "/explorer", name)
    execute(page)


def test_progress_and_log_lines_show_while_the_tool_runs(page, tools: Tools) -> None:
    open_tool(page, tools.base + "/explorer", "crunch")
    page.click("#td-execute")
    # The tool is blocked on the gate: all of this arrives before any result.
    expect(page.locator("#td-progress-text")).to_have_text("3 / 3 \u2014 step 3 of 3")
    expect(page.locator("#td-log li")).to_have_count(4)
    assert page.get_attribute("#td-progress", "max") == "3"
    assert page.evaluate("document.getElementById('td-progress').value") == 3
    lines = page.locator("#td-log li").all_inner_texts()
    assert lines[:3] == [f"[info] finished step {i}" for i in (1, 2, 3)]
    assert lines[3] == "[warning] <b>not bold</b>"  # text, never HTML
    assert page.locator("#td-log b").count() == 0
    assert page.is_visible("#td-stop") and page.is_hidden("#td-result-wrap")
    assert "Running" in page.inner_text("#td-status")
    assert not tools.gate.is_set()
    tools.gate.set()
    page.wait_for_selector("#td-status:has-text('Done')")
    assert page.inner_text("#td-result").strip() == "crunched"
    assert page.is_hidden("#td-stop") and page.is_visible("#td-live")
    assert page.locator("#td-history li:not(.muted)").count() == 1
    page.click("[data-tool='picture']")  # another tool: the last call's progress goes with it
    page.wait_for_selector("#td-name:has-text('picture')")
    assert page.is_hidden("#td-live")


def test_stop_cancels_the_call_on_the_server(page, tools: Tools) -> None:
    open_tool(page, tools.base + "/explorer", "hang")
    page.click("#td-execute")
    expect(page.locator("#td-progress-text")).to_have_text("1 / 2 \u2014 hanging on")
    page.click("#td-stop")
    page.wait_for_selector("#td-status:has-text('cancelled')")
    assert tools.saw_cancel.wait(WAIT), "the tool never saw the cancellation"
    assert page.is_hidden("#td-stop") and page.is_hidden("#td-result-wrap")
    assert page.is_enabled("#td-execute")


def test_image_result_renders_at_its_natural_size(page, tools: Tools) -> None:
    run_tool(page, tools, "picture")
    image = page.locator("#td-result img")
    expect(image).to_have_count(1)
    page.wait_for_function("document.querySelector('#td-result img').complete")
    size = page.evaluate("(function (i) { return [i.naturalWidth, i.naturalHeight]; })"
                         "(document.querySelector('#td-result img'))")
    assert size == [3, 2]
    assert image.get_attribute("src").startswith("data:image/png;base64,")


def test_svg_is_offered_as_a_download_never_shown_inline(page, tools: Tools, tmp_path) -> None:
    run_tool(page, tools, "drawing")
    assert page.locator("#td-result img, #td-result svg, #td-result object, #td-result iframe").count() == 0
    link = page.locator("#td-result a[download]")
    expect(link).to_have_count(1)
    assert link.get_attribute("download") == "image.svg"
    assert link.get_attribute("href").startswith("blob:")
    with page.expect_download() as info:
        link.click()
    saved = tmp_path / "image.svg"
    info.value.save_as(saved)
    assert saved.read_bytes() == SVG
    assert page.evaluate("window.pwned") is None


def test_audio_files_and_links(page, tools: Tools, tmp_path) -> None:
    run_tool(page, tools, "media")
    audio = page.locator("#td-result audio[controls]")
    expect(audio).to_have_count(1)
    assert audio.get_attribute("src").startswith("blob:")
    page.wait_for_function("document.querySelector('#td-result audio').readyState >= 1")  # it loads: CSP allows it
    assert page.evaluate("document.querySelector('#td-result audio').duration") == pytest.approx(0.1)
    download = page.locator("#td-result a[download]")
    expect(download).to_have_count(1)
    assert download.get_attribute("download") == "hello.txt"
    with page.expect_download() as info:
        download.click()
    info.value.save_as(tmp_path / "hello.txt")
    assert (tmp_path / "hello.txt").read_bytes() == b"hello, file"
    links = page.locator("#td-result a:not([download])")
    expect(links).to_have_count(1)
    assert links.get_attribute("href") == "https://example.com/report"
    assert links.inner_text() == "The report"
    assert "javascript:window.pwned=1" in page.inner_text("#td-result")  # shown as text only
    assert page.locator("#td-result [href^='javascript']").count() == 0


def test_approval_confirm_runs_only_after_yes(page, tools: Tools) -> None:
    open_tool(page, tools.base + "/explorer", "wipe")
    page.fill("[data-path='/target']", "<img src=x onerror=window.pwned=1>")
    page.click("#td-execute")
    page.wait_for_selector("#td-approve[open]")
    assert page.locator("#td-confirm[open]").count() == 0  # not destructive: no page-side confirm
    prompt = page.inner_text("#td-approve-text")
    assert "wipe" in prompt and "<img src=x onerror=window.pwned=1>" in prompt  # as text
    assert page.locator("#td-approve-text img").count() == 0
    page.click("#td-approve-cancel")
    page.wait_for_selector("#td-status:has-text('not run')")
    assert tools.ran == [] and page.is_hidden("#td-result-wrap")
    page.fill("[data-path='/target']", "disk")
    page.click("#td-execute")
    page.wait_for_selector("#td-approve[open]")
    assert "disk" in page.inner_text("#td-approve-text")
    assert tools.ran == []
    page.click("#td-approve-run")
    page.wait_for_selector("#td-status:has-text('Done')")
    assert tools.ran == ["disk"]
    assert page.inner_text("#td-result").strip() == "wiped disk"
    assert page.evaluate("window.pwned") is None


def test_destructive_tool_without_server_approval_keeps_the_pages_confirm(page, tools: Tools) -> None:
    open_tool(page, tools.base + "/explorer", "purge")
    page.fill("[data-path='/target']", "cache")
    page.click("#td-execute")
    page.wait_for_selector("#td-confirm[open]")
    page.click("#td-confirm-cancel")
    page.wait_for_selector("#td-status:has-text('Cancelled')")
    assert tools.ran == []
    page.click("#td-execute")
    page.wait_for_selector("#td-confirm[open]")
    page.click("#td-confirm-run")
    page.wait_for_selector("#td-status:has-text('Done')")
    assert tools.ran == ["cache"] and page.locator("#td-approve[open]").count() == 0


def test_a_reload_lists_the_running_task_and_then_shows_its_result(page, tools: Tools) -> None:
    """A live call is a task on the server: reloading the page leaves it running, the page lists
    it, follows it to its end and shows its result."""
    open_tool(page, tools.base + "/explorer", "crunch")
    page.click("#td-execute")
    expect(page.locator("#td-progress-text")).to_have_text("3 / 3 \u2014 step 3 of 3")
    expect(page.locator("#td-tasks li[data-state='working']")).to_have_count(1)
    page.reload()
    page.wait_for_selector("body[data-ready='true']")
    running = page.locator("#td-tasks li[data-state='working']")
    expect(running).to_have_count(1)
    expect(running.locator(".task-tool")).to_have_text("crunch")
    assert not tools.gate.is_set()  # the reload cancelled nothing: the tool still waits
    tools.gate.set()
    done = page.locator("#td-tasks li[data-state='completed']")
    expect(done).to_have_count(1)
    done.locator("button", has_text="Show result").click()
    expect(page.locator("#td-result")).to_have_text("crunched")
    expect(page.locator("#td-status")).to_contain_text("crunch: Done")


def test_stop_in_the_task_list_after_a_reload_cancels_the_call(page, tools: Tools) -> None:
    open_tool(page, tools.base + "/explorer", "hang")
    page.click("#td-execute")
    expect(page.locator("#td-progress-text")).to_have_text("1 / 2 \u2014 hanging on")
    page.reload()
    page.wait_for_selector("body[data-ready='true']")
    running = page.locator("#td-tasks li[data-state='working']")
    expect(running).to_have_count(1)
    assert not tools.saw_cancel.is_set()
    running.locator("button", has_text="Stop").click()
    assert tools.saw_cancel.wait(WAIT), "the tool never saw the cancellation"
    expect(page.locator("#td-tasks li[data-state='cancelled']")).to_have_count(1)
