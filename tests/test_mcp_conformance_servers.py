"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``, Node 22 from npm)
runs every scored server scenario of both requirement sets it ships (2026-07-28 and 2025-11-25, read
from its frozen requirements files) against ``tests/conformance/mcp_everything.py`` under gunicorn
with two workers sharing a real Redis, and the Skills extension's scenarios, which must pass.

``tests/conformance/mcp_expected_failures.txt`` lists what does not pass yet, one ``version scenario``
a line. The test fails when a scenario outside that list fails, and when a listed one passes: the
list can only shrink (take the line out in the change that makes it pass)."""

from __future__ import annotations

import json
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from .test_deploy import stop
from .test_mcp_tasks_servers import conformance  # noqa: F401  (Node 22 and the suite, from npm)
from .test_operating_server import redis_url, start  # noqa: F401  (redis_url: a redis-server of our own)

pytestmark = pytest.mark.slow

APP = "tests.conformance.mcp_everything:app"
BASELINE = Path(__file__).parent / "conformance" / "mcp_expected_failures.txt"
VERSIONS = ("2026-07-28", "2025-11-25")
#: Extension scenarios (not scored) that must pass all the same: the Skills extension's.
EXTENSION_SCENARIOS = ("sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory")
#: Scenarios run at once (each is its own client; the servers take them in any order).
AT_ONCE = 6


def scored(cli: Path, version: str) -> list[str]:
    """The server scenarios the suite's frozen requirement set for ``version`` scores."""
    text = (cli.parent.parent / "requirements" / f"{version}.yaml").read_text()
    section = re.search(r"^server:\n((?:  - .*\n)+)", text, re.M)
    assert section, f"no server section in the {version} requirements"
    return re.findall(r"^  - (\S+)$", section.group(1), re.M)


def expected_failures() -> set[tuple[str, str]]:
    lines = (line.split("#")[0].split() for line in BASELINE.read_text().splitlines())
    return {(words[0], words[1]) for words in lines if words}


def run_scenario(node: Path, cli: Path, url: str, version: str, scenario: str, out: Path) -> list[dict[str, Any]]:
    """The checks of one scenario, run as the suite's ``--requirements`` run would (at ``version``'s
    wire, whether or not the scenario names that version)."""
    folder = out / version / scenario
    run = subprocess.run([str(node), str(cli), "server", "--url", url, "--scenario", scenario,
                          "--spec-version", version, "--force", "-o", str(folder)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    found = sorted(folder.glob("*/checks.json"))
    if not found:
        return [{"id": scenario, "status": "FAILURE", "errorMessage": f"no checks written:\n{run.stdout[-2000:]}"}]
    checks: list[dict[str, Any]] = json.loads(found[-1].read_text())
    return checks


def test_every_scored_scenario_passes_or_is_an_expected_failure(conformance, redis_url, tmp_path) -> None:  # noqa: F811
    node, cli = conformance
    runs = [(version, scenario) for version in VERSIONS for scenario in scored(cli, version)]
    assert len(runs) == 37 + 30, runs  # the frozen sets: a new suite release is a deliberate change
    extensions = [(VERSIONS[0], scenario) for scenario in EXTENSION_SCENARIOS]
    baseline = expected_failures()
    assert baseline <= set(runs), f"the baseline names scenarios that are not scored: {baseline - set(runs)}"
    # keep-alive longer than Node's fetch keeps idle sockets (4 s): else gunicorn (2 s) may close one
    # just as the suite sends on it ("fetch failed")
    env = {"TOOLDISCOVERY_STATE_STORAGE_URI": redis_url + "/4", "GUNICORN_CMD_ARGS": "--keep-alive 10"}
    base, proc = start(APP, workers=2, threads=16, ready="/mcp", env=env)  # streams (GET, listen, calls) hold threads
    try:
        with ThreadPoolExecutor(AT_ONCE) as pool:
            checks = pool.map(lambda run: run_scenario(node, cli, f"{base}/mcp", *run, tmp_path), runs + extensions)
            found = dict(zip(runs + extensions, checks, strict=True))
    finally:
        stop(proc)
    failing = {run: [f"{c['id']}: {c.get('errorMessage')}" for c in checks if c["status"] == "FAILURE"]
               for run, checks in found.items()}
    failing = {run: why for run, why in failing.items() if why}
    figures = {v: f"{sum(1 for r in runs if r[0] == v and r not in failing)}/{sum(1 for r in runs if r[0] == v)}"
               for v in VERSIONS}
    assert {f"{v} {s}": failing[v, s] for v, s in extensions if (v, s) in failing} == {}
    assert all(any(c["status"] == "SUCCESS" for c in found[run]) for run in extensions[:2])  # not skipped
    print("conformance (passed/scored):", figures)
    unexpected = {f"{v} {s}": why for (v, s), why in failing.items() if (v, s) not in baseline}
    assert unexpected == {}, f"failing, not in {BASELINE.name}: {json.dumps(unexpected, indent=1)[:8000]}"
    now_passing = sorted(f"{v} {s}" for v, s in baseline - set(failing))
    assert now_passing == [], f"these pass now: take them out of {BASELINE.name}"
