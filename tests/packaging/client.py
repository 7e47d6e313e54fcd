"""Drives an installed thinkledger through a three-thought `sequentialthinking` session with the
official Python MCP SDK, as an MCP host would: it starts the server command it is given (for
example `thinkledger --data-dir DIR serve`, or `npx thinkledger --data-dir DIR serve`) over stdio,
found on this process's PATH, in this process's working directory.

Usage: python client.py COMMAND [ARG...]     (run by tests/packaging/run.sh)

Exits 0 when the three thoughts land in one session in order, non-zero with the reason otherwise.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters

THOUGHTS = [
    "Installed from a package, without a Rust toolchain.",
    "Started by the MCP host as any other server.",
    "Every thought recorded in the ledger, checked by verify next.",
]


async def session(command: str, args: list[str]) -> None:
    server = StdioServerParameters(command=command, args=args, cwd=os.getcwd())
    async with Client(server) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "sequentialthinking" in names, sorted(names)
        answers = []
        for number, thought in enumerate(THOUGHTS, start=1):
            result = await client.call_tool(
                "sequentialthinking",
                {
                    "thought": thought,
                    "thoughtNumber": number,
                    "totalThoughts": len(THOUGHTS),
                    "nextThoughtNeeded": number < len(THOUGHTS),
                },
            )
            assert not result.is_error, f"thought {number}: {result.content}"
            answers.append(result.structured_content)
    sessions = {a["sessionId"] for a in answers}
    assert len(sessions) == 1, f"three thoughts in {len(sessions)} sessions"
    assert [a["thoughtHistoryLength"] for a in answers] == [1, 2, 3], answers
    assert answers[-1]["nextThoughtNeeded"] is False, answers[-1]
    print(f"session {answers[0]['sessionId']}: 3 thoughts, last seq {answers[-1]['seq']}")


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    asyncio.run(asyncio.wait_for(session(sys.argv[1], sys.argv[2:]), timeout=120))


if __name__ == "__main__":
    main()
