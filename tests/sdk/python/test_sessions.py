"""The newest Python MCP SDK against the built thinkledger binary, as a new user runs it.

Every revision a current client speaks: `mode="auto"` (2026-07-28 over `server/discover`,
stateless, no session header) and `mode="legacy"` (the initialize handshake and, over HTTP, an
`Mcp-Session-Id`), over stdio and Streamable HTTP. Three thoughts, a revision and a branch must
form one session — without a handle (the caller's current session) and with the `sessionId`
handle passed back — and two principals must never meet in one session.

Run by tests/sdk/run.sh with THINKLEDGER_BIN set to the binary under test.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

BIN = os.environ.get("THINKLEDGER_BIN", "")

pytestmark = pytest.mark.timeout(120)

# The reference server's five steps: three thoughts, a revision of thought 2, a branch "db"
# from thought 3.
STEPS = [
    {"thought": "The cache misses on every cold start.", "thoughtNumber": 1, "totalThoughts": 3, "nextThoughtNeeded": True},
    {"thought": "Warm it from the last snapshot.", "thoughtNumber": 2, "totalThoughts": 3, "nextThoughtNeeded": True},
    {"thought": "Measure the start-up time with it.", "thoughtNumber": 3, "totalThoughts": 3, "nextThoughtNeeded": True},
    {
        "thought": "Warming needs the snapshot to be fresh: check its age first.",
        "thoughtNumber": 4,
        "totalThoughts": 5,
        "nextThoughtNeeded": True,
        "isRevision": True,
        "revisesThought": 2,
    },
    {
        "thought": "Or keep the cache in the database instead.",
        "thoughtNumber": 5,
        "totalThoughts": 5,
        "nextThoughtNeeded": False,
        "branchFromThought": 3,
        "branchId": "db",
    },
]


def require_binary() -> str:
    if not BIN or not Path(BIN).is_file():
        pytest.fail("THINKLEDGER_BIN must name the built thinkledger binary")
    return BIN


@contextmanager
def http_server(*flags: str, principals: tuple[str, ...] = ()):
    """`thinkledger serve --http 127.0.0.1:0 FLAGS` on a fresh data dir; yields its /mcp URL, or
    with `principals` (`thinkledger token create` for each first) the URL and their tokens."""
    binary = require_binary()
    with tempfile.TemporaryDirectory() as data:
        tokens = {}
        for name in principals:
            made = subprocess.run(
                [binary, "--data-dir", str(Path(data) / "ledger"), "token", "create", "--principal", name, "--json"],
                check=True,
                capture_output=True,
                text=True,
            )
            tokens[name] = json.loads(made.stdout)["token"]
        log_path = Path(data) / "server.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [binary, "--data-dir", str(Path(data) / "ledger"), "serve", "--http", "127.0.0.1:0", *flags],
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        try:
            url = None
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and url is None:
                found = re.search(r"http://127\.0\.0\.1:\d+/mcp", log_path.read_text(errors="replace"))
                if found:
                    url = found.group(0)
                elif proc.poll() is not None:
                    pytest.fail(f"server exited: {log_path.read_text(errors='replace')}")
                else:
                    time.sleep(0.05)
            if url is None:
                pytest.fail("server logged no address within 30 s")
            yield (url, tokens) if principals else url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def stdio_params(data: str) -> StdioServerParameters:
    return StdioServerParameters(command=require_binary(), args=["--data-dir", data, "serve"])


def bearer_target(url: str, token: str):
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return streamable_http_client(url, http_client=client)


def http_target(url: str, principal: str | None = None):
    if principal is None:
        return url
    client = httpx2.AsyncClient(headers={"X-Forwarded-User": principal}, timeout=30)
    return streamable_http_client(url, http_client=client)


async def think(client: Client, pass_handle: bool) -> list[dict]:
    """Runs the five steps; with `pass_handle`, every call after the first passes sessionId."""
    answers: list[dict] = []
    handle = None
    for step in STEPS:
        args = dict(step)
        if pass_handle and handle is not None:
            args["sessionId"] = handle
        result = await client.call_tool("sequentialthinking", args)
        assert not result.is_error, f"{step['thoughtNumber']}: {result.content}"
        body = result.structured_content
        assert body is not None
        answers.append(body)
        handle = body["sessionId"]
    return answers


def assert_era(client: Client, mode: str) -> None:
    """auto must reach the stateless 2026-07-28 revision; legacy a session-based one."""
    if mode == "auto":
        assert client.protocol_version == "2026-07-28", client.protocol_version
    else:
        assert client.protocol_version in ("2025-11-25", "2025-06-18", "2025-03-26"), client.protocol_version


def assert_one_session(answers: list[dict]) -> None:
    sessions = {a["sessionId"] for a in answers}
    assert len(sessions) == 1, f"the five thoughts landed in {len(sessions)} sessions"
    assert [a["thoughtHistoryLength"] for a in answers] == [1, 2, 3, 4, 5]
    assert answers[-1]["branches"] == ["db"]
    assert answers[-1]["nextThoughtNeeded"] is False


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("pass_handle", [False, True], ids=["no-handle", "handle"])
def test_stdio_session(mode: str, pass_handle: bool) -> None:
    async def run() -> None:
        with tempfile.TemporaryDirectory() as data:
            async with Client(stdio_params(data), mode=mode) as client:
                assert_era(client, mode)
                assert_one_session(await think(client, pass_handle))

    asyncio.run(run())


@pytest.mark.parametrize("flags", [(), ("--stateless",)], ids=["sessions", "stateless"])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("pass_handle", [False, True], ids=["no-handle", "handle"])
def test_http_session(flags: tuple[str, ...], mode: str, pass_handle: bool, caplog) -> None:
    async def run(url: str) -> None:
        async with Client(url, mode=mode) as client:
            assert_era(client, mode)
            assert_one_session(await think(client, pass_handle))

    caplog.set_level(logging.WARNING)
    with http_server(*flags) as url:
        asyncio.run(run(url))
    # Ending an HTTP session (DELETE) must not make the SDK complain.
    complaints = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not complaints, complaints


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_two_principals_never_share_a_session(mode: str) -> None:
    async def run(url: str) -> None:
        async with Client(http_target(url, "alice"), mode=mode) as alice:
            async with Client(http_target(url, "bob"), mode=mode) as bob:
                first = (await alice.call_tool("sequentialthinking", STEPS[0])).structured_content
                other = (await bob.call_tool("sequentialthinking", STEPS[0])).structured_content
                assert first["sessionId"] != other["sessionId"]
                second = (await alice.call_tool("sequentialthinking", STEPS[1])).structured_content
                assert second["sessionId"] == first["sessionId"]
                assert second["thoughtHistoryLength"] == 2
                # Bob naming Alice's session gets the answer a missing session gets.
                stolen = await bob.call_tool("sequentialthinking", {**STEPS[1], "sessionId": first["sessionId"]})
                assert stolen.is_error
                assert "unknown_session" in stolen.content[0].text
                # And cannot read it either.
                peek = await bob.call_tool("search", {"query": "cache", "sessionId": first["sessionId"]})
                assert peek.is_error
                assert "unknown_session" in peek.content[0].text

    with http_server("--principal-header", "X-Forwarded-User") as url:
        asyncio.run(run(url))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_bearer_tokens_name_the_principal_and_keep_principals_apart(mode: str) -> None:
    async def run(url: str, tokens: dict[str, str]) -> None:
        async with Client(bearer_target(url, tokens["alice"]), mode=mode) as alice:
            async with Client(bearer_target(url, tokens["bob"]), mode=mode) as bob:
                first = (await alice.call_tool("sequentialthinking", STEPS[0])).structured_content
                other = (await bob.call_tool("sequentialthinking", STEPS[0])).structured_content
                assert first["sessionId"] != other["sessionId"]
                stolen = await bob.call_tool("replay_reasoning_session", {"session_id": first["sessionId"]})
                assert stolen.is_error
                assert "unknown_session" in stolen.content[0].text
                own = await alice.call_tool("replay_reasoning_session", {"session_id": first["sessionId"]})
                assert not own.is_error

    with http_server("--auth", "--toolsets", "all", principals=("alice", "bob")) as (url, tokens):
        asyncio.run(run(url, tokens))
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        answer = httpx2.post(url, json=body, headers={"Accept": "application/json, text/event-stream"})
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"].startswith('Bearer realm="thinkledger"')


def test_a_request_without_the_principal_header_is_refused() -> None:
    with http_server("--principal-header", "X-Forwarded-User") as url:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        answer = httpx2.post(url, json=body, headers={"Accept": "application/json, text/event-stream"})
        assert answer.status_code == 401
        assert answer.json()["error"]["code"] == -32001


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_client_with_no_options_enables_deliberation_at_run_time(mode: str) -> None:
    """The default tools/list fits in 32 KB; list_toolsets names every other tool; enabling
    `deliberation` puts consensus_answer in the list, announced (in the session era) by
    notifications/tools/list_changed."""

    async def run() -> None:
        changed = asyncio.Event()

        async def on_message(message) -> None:
            if type(message).__name__ == "ToolListChangedNotification" or getattr(
                getattr(message, "root", None), "method", None
            ) == "notifications/tools/list_changed":
                changed.set()

        with tempfile.TemporaryDirectory() as data:
            async with Client(stdio_params(data), mode=mode, message_handler=on_message) as client:
                assert_era(client, mode)
                listed = await client.list_tools()
                names = [t.name for t in listed.tools]
                assert "consensus_answer" not in names and "list_toolsets" in names
                size = len(listed.model_dump_json(by_alias=True, exclude_none=True))
                assert size <= 32 * 1024, f"default tools/list is {size} bytes"

                sets = (await client.call_tool("list_toolsets", {})).structured_content["toolsets"]
                deliberation = next(s for s in sets if s["name"] == "deliberation")
                assert "consensus_answer" in deliberation["tools"] and deliberation["enabled"] is False

                refused = await client.call_tool("consensus_answer", {})
                assert refused.is_error and "enable_toolset" in str(refused.content)

                enabled = await client.call_tool("enable_toolset", {"toolset": "deliberation"})
                assert not enabled.is_error and enabled.structured_content["changed"] is True
                if mode == "legacy":
                    await asyncio.wait_for(changed.wait(), 10)
                names = [t.name for t in (await client.list_tools()).tools]
                assert "consensus_answer" in names

    asyncio.run(run())


@pytest.mark.parametrize("flags", [(), ("--stateless",)], ids=["sessions", "stateless"])
def test_two_conversations_without_handles_are_two_sessions(flags: tuple[str, ...]) -> None:
    """The default client (auto: 2026-07-28, no connection): each conversation's first thought
    starts a session of its own, and its later thoughts continue it."""

    async def run(url: str) -> None:
        seen = []
        for _ in range(2):
            async with Client(url, mode="auto") as client:
                assert_era(client, "auto")
                answers = await think(client, pass_handle=False)
                assert_one_session(answers)
                seen.append(answers[0]["sessionId"])
        assert seen[0] != seen[1], "the second conversation joined the first's session"

    with http_server(*flags) as url:
        asyncio.run(run(url))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_three_clients_share_one_data_directory(mode: str) -> None:
    """Three stdio clients on one data directory, as three MCP hosts start them: each in a
    session of its own, all in one ledger that verifies."""

    async def run(data: str) -> None:
        async with Client(stdio_params(data), mode=mode) as a:
            async with Client(stdio_params(data), mode=mode) as b:
                async with Client(stdio_params(data), mode=mode) as c:
                    results = await asyncio.gather(*(think(x, False) for x in (a, b, c)))
        for answers in results:
            assert_one_session(answers)
        assert len({answers[0]["sessionId"] for answers in results}) == 3

    with tempfile.TemporaryDirectory() as data:
        asyncio.run(run(data))
        verified = subprocess.run(
            [require_binary(), "--data-dir", data, "verify"], capture_output=True, text=True
        )
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert "intact: 15 events" in verified.stdout, verified.stdout
