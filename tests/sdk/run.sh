#!/usr/bin/env bash
# Runs the newest official MCP SDK clients against a built thinkledger binary: the Python SDK
# (pytest, python/) and the TypeScript SDK v2 client (node's test runner, typescript/), each over
# stdio and Streamable HTTP, in the 2026-07-28 era and the session-based one.
#
# Usage: tests/sdk/run.sh [BINARY]   (default: target/release/thinkledger)
# Installs what it needs on first use: a virtualenv in python/.venv from python/requirements.txt
# (PyPI) and typescript/node_modules with npm ci (both git-ignored). Needs python3 >= 3.10 and
# Node >= 20 with npm.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
say() { printf '[sdk] %s\n' "$*" >&2; }

bin=${1:-$root/target/release/thinkledger}
[[ -x "$bin" ]] || { say "no server binary at $bin"; exit 1; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
export THINKLEDGER_BIN=$bin
# The HTTP tests find the server's address in its info log line.
export RUST_LOG=${RUST_LOG:-info,rmcp=warn}

venv="$here/python/.venv"
stamp="$venv/.installed"
if [[ ! -f "$stamp" || "$here/python/requirements.txt" -nt "$stamp" ]]; then
  say "installing the Python SDK into python/.venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/python/requirements.txt"
  touch "$stamp"
fi
lock="$here/typescript/node_modules/.package-lock.json"
if [[ ! -f "$lock" || "$here/typescript/package-lock.json" -nt "$lock" ]]; then
  say "installing the TypeScript SDK with npm ci"
  (cd "$here/typescript" && npm ci --no-audit --no-fund --loglevel=error)
fi

status=0
say "Python SDK $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"
(cd "$here/python" && "$venv/bin/python" -m pytest -q -p no:cacheprovider .) || status=1
say "TypeScript SDK $(node -p "require('$here/typescript/node_modules/@modelcontextprotocol/client/package.json').version" 2>/dev/null || echo '?') on node $(node --version)"
(cd "$here/typescript" && node --test --test-reporter=spec sessions.test.mjs) || status=1
exit "$status"
