#!/usr/bin/env node
// `thinkledger` for npm and npx: starts the native thinkledger binary shipped in this
// platform's package (an optional dependency, such as @thinkledger/linux-x64, which npm installs
// only where its `os`, `cpu` and `libc` match), the pattern esbuild and biome use. Nothing is
// downloaded after install. The binary gets this process's arguments, stdin, stdout and stderr
// as they are (stdout is the MCP protocol in stdio mode), the signals this process is sent, and
// its exit status is passed back.
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");

// `${process.platform}-${process.arch}` → the package holding that platform's binary.
const PACKAGES = {
  "linux-x64": "@thinkledger/linux-x64",
  "linux-arm64": "@thinkledger/linux-arm64",
  "darwin-x64": "@thinkledger/darwin-x64",
  "darwin-arm64": "@thinkledger/darwin-arm64",
};

function binaryPath() {
  const platform = `${process.platform}-${process.arch}`;
  const name = PACKAGES[platform];
  if (!name) {
    fail(
      `no thinkledger build for ${platform} on npm; build it from source with a Rust ` +
        "toolchain instead (README, \"From source\")",
    );
  }
  let manifest;
  try {
    manifest = require.resolve(`${name}/package.json`);
  } catch {
    fail(
      `the package ${name}, which holds thinkledger's binary for ${platform}, is not installed. ` +
        "npm leaves optional dependencies out when run with --no-optional or --omit=optional, " +
        "and on a libc the package was not built for (it needs glibc); reinstall thinkledger " +
        "without those options, or build it from source (README, \"From source\")",
    );
  }
  return path.join(path.dirname(manifest), "bin", "thinkledger");
}

function fail(message) {
  process.stderr.write(`thinkledger: ${message}\n`);
  process.exit(1);
}

const child = spawn(binaryPath(), process.argv.slice(2), { stdio: "inherit" });
const forwarded = ["SIGINT", "SIGTERM", "SIGHUP"];
for (const signal of forwarded) {
  process.on(signal, () => child.kill(signal));
}
child.on("error", (error) => fail(`cannot start ${error.path || "the binary"}: ${error.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, so the caller sees what the binary saw.
    for (const s of forwarded) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
