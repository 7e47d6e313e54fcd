// The TypeScript MCP SDK client (v2, the generation of the Python SDK 2.3) against the built
// thinkledger binary: versionNegotiation "auto" (2026-07-28 when the server answers
// server/discover) and "legacy" (initialize), over stdio and Streamable HTTP, with and without
// passing the sessionId handle back. Three thoughts, a revision and a branch form one session.
// Run by ../run.sh with THINKLEDGER_BIN set; node's own test runner.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const BIN = process.env.THINKLEDGER_BIN;
assert.ok(BIN, "THINKLEDGER_BIN must name the built thinkledger binary");

const STEPS = [
  { thought: "The cache misses on every cold start.", thoughtNumber: 1, totalThoughts: 3, nextThoughtNeeded: true },
  { thought: "Warm it from the last snapshot.", thoughtNumber: 2, totalThoughts: 3, nextThoughtNeeded: true },
  { thought: "Measure the start-up time with it.", thoughtNumber: 3, totalThoughts: 3, nextThoughtNeeded: true },
  { thought: "Warming needs a fresh snapshot: check its age first.", thoughtNumber: 4, totalThoughts: 5, nextThoughtNeeded: true, isRevision: true, revisesThought: 2 },
  { thought: "Or keep the cache in the database instead.", thoughtNumber: 5, totalThoughts: 5, nextThoughtNeeded: false, branchFromThought: 3, branchId: "db" },
];

function tempDir() {
  return mkdtempSync(join(tmpdir(), "thinkledger-ts-"));
}

/** `thinkledger serve --http 127.0.0.1:0 ...flags`; resolves with its URL, a stop function and
 * the tokens of `principals` (made first with `thinkledger token create`). */
async function httpServer(flags = [], principals = []) {
  const dir = tempDir();
  const tokens = {};
  for (const name of principals) {
    const made = spawnSync(BIN, ["--data-dir", join(dir, "ledger"), "token", "create", "--principal", name, "--json"], {
      encoding: "utf8",
    });
    assert.equal(made.status, 0, made.stderr);
    tokens[name] = JSON.parse(made.stdout).token;
  }
  const child = spawn(BIN, ["--data-dir", join(dir, "ledger"), "serve", "--http", "127.0.0.1:0", ...flags], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no address within 30 s: ${log}`)), 30_000);
    child.stderr.on("data", (chunk) => {
      log += chunk;
      const found = log.match(/http:\/\/127\.0\.0\.1:\d+\/mcp/);
      if (found) {
        clearTimeout(timer);
        resolve(found[0]);
      }
    });
    child.on("exit", (code) => reject(new Error(`server exited (${code}): ${log}`)));
  });
  const stop = async () => {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  return { url, stop, tokens };
}

async function think(client, passHandle) {
  const answers = [];
  let handle;
  for (const step of STEPS) {
    const args = passHandle && handle ? { ...step, sessionId: handle } : step;
    const result = await client.callTool({ name: "sequentialthinking", arguments: args });
    assert.ok(!result.isError, JSON.stringify(result.content));
    answers.push(result.structuredContent);
    handle = result.structuredContent.sessionId;
  }
  return answers;
}

function assertOneSession(answers) {
  assert.equal(new Set(answers.map((a) => a.sessionId)).size, 1, "the thoughts landed in several sessions");
  assert.deepEqual(answers.map((a) => a.thoughtHistoryLength), [1, 2, 3, 4, 5]);
  assert.deepEqual(answers.at(-1).branches, ["db"]);
}

// auto must reach the stateless 2026-07-28 revision; legacy a session-based one.
function assertEra(c, mode) {
  const version = c.getNegotiatedProtocolVersion();
  if (mode === "auto") assert.equal(version, "2026-07-28");
  else assert.ok(["2025-11-25", "2025-06-18", "2025-03-26"].includes(version), version);
}

function client(mode) {
  return new Client({ name: "thinkledger-sdk-test", version: "1.0.0" }, { versionNegotiation: { mode } });
}

for (const mode of ["auto", "legacy"]) {
  for (const passHandle of [false, true]) {
    const label = `${mode}, ${passHandle ? "handle passed" : "no handle"}`;

    test(`stdio: ${label}`, async () => {
      const dir = tempDir();
      const c = client(mode);
      try {
        await c.connect(new StdioClientTransport({ command: BIN, args: ["--data-dir", dir, "serve"], stderr: "ignore" }));
        assertEra(c, mode);
        assertOneSession(await think(c, passHandle));
      } finally {
        await c.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });

    for (const flags of [[], ["--stateless"]]) {
      test(`http${flags.length ? " --stateless" : ""}: ${label}`, async () => {
        const server = await httpServer(flags);
        const c = client(mode);
        try {
          const transport = new StreamableHTTPClientTransport(new URL(server.url));
          await c.connect(transport);
          assertEra(c, mode);
          assertOneSession(await think(c, passHandle));
          if (transport.sessionId) {
            await transport.terminateSession();
          }
        } finally {
          await c.close();
          await server.stop();
        }
      });
    }
  }
}

// Bearer tokens (`serve --auth`): each client is its token's principal, and one principal's
// session is unknown to another.
for (const mode of ["auto", "legacy"]) {
  test(`http --auth: ${mode}, bearer tokens keep principals apart`, async () => {
    const server = await httpServer(["--auth", "--toolsets", "all"], ["alice", "bob"]);
    const connect = async (token) => {
      const c = client(mode);
      const transport = new StreamableHTTPClientTransport(new URL(server.url), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      });
      await c.connect(transport);
      return c;
    };
    const alice = await connect(server.tokens.alice);
    const bob = await connect(server.tokens.bob);
    try {
      assertEra(alice, mode);
      const first = await alice.callTool({ name: "sequentialthinking", arguments: STEPS[0] });
      assert.ok(!first.isError, JSON.stringify(first.content));
      const stolen = await bob.callTool({
        name: "replay_reasoning_session",
        arguments: { session_id: first.structuredContent.sessionId },
      });
      assert.ok(stolen.isError);
      assert.match(stolen.content[0].text, /unknown_session/);
      const refused = await fetch(server.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
      });
      assert.equal(refused.status, 401);
      assert.match(refused.headers.get("www-authenticate"), /^Bearer realm="thinkledger"/);
    } finally {
      await alice.close();
      await bob.close();
      await server.stop();
    }
  });
}

// A client that passes no options: the default tools/list fits in 32 KB, list_toolsets names
// every other tool, and enabling `deliberation` puts consensus_answer in the list — announced by
// notifications/tools/list_changed in both eras (the SDK refreshes the list itself).
for (const mode of ["auto", "legacy"]) {
  test(`stdio: ${mode}, enabling deliberation at run time`, async () => {
    const dir = tempDir();
    let announced;
    const refreshed = new Promise((resolve) => (announced = resolve));
    const c = new Client(
      { name: "thinkledger-sdk-test", version: "1.0.0" },
      { versionNegotiation: { mode }, listChanged: { tools: { debounceMs: 0, onChanged: (_e, tools) => announced(tools) } } },
    );
    try {
      await c.connect(new StdioClientTransport({ command: BIN, args: ["--data-dir", dir, "serve"], stderr: "ignore" }));
      assertEra(c, mode);
      const listed = await c.listTools();
      const names = listed.tools.map((t) => t.name);
      assert.ok(names.includes("list_toolsets") && !names.includes("consensus_answer"), names.join());
      const bytes = Buffer.byteLength(JSON.stringify(listed));
      assert.ok(bytes <= 32 * 1024, `default tools/list is ${bytes} bytes`);

      const sets = (await c.callTool({ name: "list_toolsets", arguments: {} })).structuredContent.toolsets;
      const deliberation = sets.find((s) => s.name === "deliberation");
      assert.ok(deliberation.tools.includes("consensus_answer") && deliberation.enabled === false);

      const refused = await c.callTool({ name: "consensus_answer", arguments: {} });
      assert.ok(refused.isError && JSON.stringify(refused.content).includes("enable_toolset"));

      const enabled = await c.callTool({ name: "enable_toolset", arguments: { toolset: "deliberation" } });
      assert.ok(!enabled.isError && enabled.structuredContent.changed === true);
      // legacy: an unsolicited notification; auto: on the SDK's subscriptions/listen stream.
      const tools = await Promise.race([refreshed, new Promise((_, reject) => setTimeout(() => reject(new Error("no tools/list_changed")), 10_000))]);
      assert.ok(tools.map((t) => t.name).includes("consensus_answer"));
      const after = (await c.listTools()).tools.map((t) => t.name);
      assert.ok(after.includes("consensus_answer"), after.join());
    } finally {
      await c.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
