//! Shared test harness: the built `thinkledger` binary as an MCP server over stdio or Streamable
//! HTTP, driven by rmcp's client; the CLI (`verify`, `sessions`, `export`); and read-back of the
//! stored events once no server holds the ledger.
//!
//! Every helper panics with a message saying what was expected, so a failing test reads as a
//! sentence. Nothing here sleeps to synchronize: servers are ready when their handshake (stdio)
//! or their address line on stderr (HTTP) says so, and stopped when their process is reaped.

use std::ops::Deref;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, MetaObject, ReadResourceRequestParams,
    RequestMetaObject, ResourceContents,
};
use rmcp::service::{RoleClient, RunningService, ServiceError, ServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use thinkledger::ledger::{SledStore, Store};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr, Command};
use tokio::sync::oneshot;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_thinkledger");

/// Upper bound for anything a test waits on; a hang fails instead of blocking the suite.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// An rmcp client with the default (no-op) client handler.
pub type Client = RunningService<RoleClient, ()>;

/// Awaits `future`, failing the test with `what` if it takes longer than [`PATIENCE`].
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {PATIENCE:?}: {what}"))
}

/// A `thinkledger` command on `data_dir`, quiet unless asked, colourless, never outliving the test.
fn command(data_dir: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("--data-dir")
        .arg(data_dir)
        .env_remove("THINKLEDGER_DATA_DIR")
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// Collects a child's stderr lines; reports the first line containing `marker`, if asked.
fn collect_stderr(
    stderr: ChildStderr,
    marker: Option<(&'static str, oneshot::Sender<String>)>,
) -> Arc<Mutex<String>> {
    let log = Arc::new(Mutex::new(String::new()));
    let sink = log.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        let mut marker = marker;
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some((needle, _)) = &marker
                && line.contains(needle)
                && let Some((_, tx)) = marker.take()
            {
                let _ = tx.send(line.clone());
            }
            if let Ok(mut log) = sink.lock() {
                log.push_str(&line);
                log.push('\n');
            }
        }
    });
    log
}

fn snapshot(log: &Arc<Mutex<String>>) -> String {
    log.lock().map(|s| s.clone()).unwrap_or_default()
}

/// Serve arguments that offer every tool family (`--toolsets all`) unless they choose: most
/// tests exercise tools beyond the default sets, which a client would enable first.
pub fn with_every_family<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut out = args.to_vec();
    if !args.contains(&"--toolsets") {
        out.extend(["--toolsets", "all"]);
    }
    out
}

/// `thinkledger serve` over stdio with a connected, initialized client.
pub struct StdioServer {
    client: Client,
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Deref for StdioServer {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

impl StdioServer {
    /// Starts `thinkledger --data-dir DIR serve ARGS...` and completes the MCP handshake.
    /// Every family is offered ([`with_every_family`]) unless ARGS choose.
    pub async fn start(data_dir: &Path, args: &[&str]) -> Self {
        let mut cmd = command(data_dir);
        cmd.arg("serve").args(with_every_family(args));
        Self::spawn(cmd).await
    }

    /// Like [`StdioServer::start`], with extra environment variables for the server.
    pub async fn start_with_env(data_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut cmd = command(data_dir);
        cmd.arg("serve").args(with_every_family(args));
        for (name, value) in env {
            cmd.env(name, value);
        }
        Self::spawn(cmd).await
    }

    /// Like [`StdioServer::start`], with the data directory given only through
    /// `THINKLEDGER_DATA_DIR`.
    pub async fn start_with_env_data_dir(data_dir: &Path) -> Self {
        let mut cmd = Command::new(BIN);
        cmd.env("THINKLEDGER_DATA_DIR", data_dir)
            .env("NO_COLOR", "1")
            .env("RUST_LOG", "info")
            .arg("serve")
            .kill_on_drop(true);
        Self::spawn(cmd).await
    }

    async fn spawn(mut cmd: Command) -> Self {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn thinkledger");
        let stdout = child.stdout.take().expect("child stdout");
        let stdin = child.stdin.take().expect("child stdin");
        let stderr = collect_stderr(child.stderr.take().expect("child stderr"), None);
        let client = match within("stdio handshake", ().serve((stdout, stdin))).await {
            Ok(client) => client,
            Err(e) => panic!(
                "MCP handshake over stdio failed: {e}\nserver stderr:\n{}",
                snapshot(&stderr)
            ),
        };
        Self {
            client,
            child,
            stderr,
        }
    }

    /// Closes the client's side (stdin EOF), as an MCP host does, and waits for a clean exit.
    pub async fn stop(self) {
        let (status, stderr) = self.close().await;
        assert!(
            status.success(),
            "server exited with {status} after stdin closed; stderr:\n{stderr}"
        );
    }

    /// Like [`StdioServer::stop`], for a server that must exit with a failure; its stderr.
    pub async fn stop_expecting_failure(self) -> String {
        let (status, stderr) = self.close().await;
        assert!(
            !status.success(),
            "server exited with {status}, expected a failure; stderr:\n{stderr}"
        );
        stderr
    }

    async fn close(self) -> (std::process::ExitStatus, String) {
        let Self {
            client,
            mut child,
            stderr,
        } = self;
        let _ = within("client shutdown", client.cancel()).await;
        let status = within("server exit after stdin closed", child.wait())
            .await
            .expect("wait for server");
        (status, snapshot(&stderr))
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("the server is running")
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        snapshot(&self.stderr)
    }

    /// SIGKILLs the server (no chance to sync or clean up) and reaps it.
    pub async fn kill(self) {
        let Self {
            client, mut child, ..
        } = self;
        within("SIGKILL the server", child.kill())
            .await
            .expect("kill server");
        drop(client);
    }
}

/// `thinkledger serve --http 127.0.0.1:0`: its MCP endpoint, killed (SIGKILL) when dropped.
pub struct HttpServer {
    /// `http://127.0.0.1:PORT/mcp`, as the server logged it.
    pub url: String,
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl HttpServer {
    /// Starts the server with `extra` serve arguments and waits for the line naming its address.
    /// Every family is offered ([`with_every_family`]) unless `extra` chooses.
    pub async fn start(data_dir: &Path, extra: &[&str]) -> Self {
        Self::start_as_given(data_dir, &with_every_family(extra)).await
    }

    /// Like [`HttpServer::start`], but `extra` alone: what a client that passes no options sees.
    pub async fn start_as_given(data_dir: &Path, extra: &[&str]) -> Self {
        Self::start_with_env(data_dir, extra, &[]).await
    }

    /// Like [`HttpServer::start_as_given`], with extra environment variables for the server.
    pub async fn start_with_env(data_dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let mut cmd = command(data_dir);
        cmd.args(["serve", "--http", "127.0.0.1:0"]).args(extra);
        for (name, value) in env {
            cmd.env(name, value);
        }
        let mut child = cmd.spawn().expect("spawn thinkledger --http");
        let (tx, rx) = oneshot::channel();
        let stderr = collect_stderr(
            child.stderr.take().expect("child stderr"),
            // The line that names the MCP endpoint (other lines may name other URLs: an
            // OTLP collector's).
            Some(("serving MCP over Streamable HTTP at http://127.0.0.1:", tx)),
        );
        let line = match within("the HTTP server to log its address", rx).await {
            Ok(line) => line,
            Err(_) => {
                let status = within("the failed HTTP server to exit", child.wait()).await;
                panic!(
                    "HTTP server stopped before logging its address ({status:?}); stderr:\n{}",
                    snapshot(&stderr)
                );
            }
        };
        Self {
            url: mcp_url(&line),
            child,
            stderr,
        }
    }

    /// The `host:port` the server listens on.
    pub fn authority(&self) -> &str {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
    }

    /// A new MCP client (its own MCP session) over Streamable HTTP.
    pub async fn connect(&self) -> Client {
        let transport = StreamableHttpClientTransport::from_uri(self.url.clone());
        match within("HTTP handshake", ().serve(transport)).await {
            Ok(client) => client,
            Err(e) => panic!(
                "MCP handshake over HTTP failed: {e}\nserver stderr:\n{}",
                self.stderr()
            ),
        }
    }

    /// A new MCP client whose requests carry `X-Forwarded-User: principal`, as an
    /// authenticating proxy sets it (for a server started with `--principal-header`).
    pub async fn connect_as(&self, principal: &str) -> Client {
        let mut headers = std::collections::HashMap::new();
        headers.insert(
            http::HeaderName::from_static("x-forwarded-user"),
            http::HeaderValue::from_str(principal).expect("principal header value"),
        );
        let config =
            StreamableHttpClientTransportConfig::with_uri(self.url.clone()).custom_headers(headers);
        let transport = StreamableHttpClientTransport::from_config(config);
        match within("HTTP handshake", ().serve(transport)).await {
            Ok(client) => client,
            Err(e) => panic!(
                "MCP handshake over HTTP failed: {e}\nserver stderr:\n{}",
                self.stderr()
            ),
        }
    }

    /// A new MCP client whose requests carry `Authorization: Bearer token` (for a server
    /// started with `--auth`).
    pub async fn connect_with_token(&self, token: &str) -> Client {
        let config = StreamableHttpClientTransportConfig::with_uri(self.url.clone())
            .auth_header(token.to_owned());
        let transport = StreamableHttpClientTransport::from_config(config);
        match within("HTTP handshake", ().serve(transport)).await {
            Ok(client) => client,
            Err(e) => panic!(
                "MCP handshake over HTTP failed: {e}\nserver stderr:\n{}",
                self.stderr()
            ),
        }
    }

    pub fn stderr(&self) -> String {
        snapshot(&self.stderr)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("the server is running")
    }

    /// Stops the server as a service manager does (SIGTERM) and waits for a clean exit: it
    /// finishes what it holds and closes its ledger.
    pub async fn terminate(mut self) {
        let status = std::process::Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("kill -TERM");
        assert!(status.success(), "kill -TERM failed");
        let status = self.exited().await;
        assert!(
            status.success(),
            "the server exited with {status} after SIGTERM; stderr:\n{}",
            self.stderr()
        );
    }

    /// SIGKILLs the server and reaps it, so its ledger lock is released.
    pub async fn kill(mut self) {
        within("SIGKILL the HTTP server", self.child.kill())
            .await
            .expect("kill server");
    }

    /// Waits for the server to exit on its own (a crash drill); returns how it ended.
    pub async fn exited(&mut self) -> ExitStatus {
        within("the HTTP server to exit", self.child.wait())
            .await
            .expect("wait for the server")
    }
}

/// The `http://127.0.0.1:PORT/mcp` URL inside a log line.
fn mcp_url(line: &str) -> String {
    let start = line
        .find("http://127.0.0.1:")
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    let rest = &line[start + "http://127.0.0.1:".len()..];
    let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let port: u16 = port
        .parse()
        .unwrap_or_else(|_| panic!("no port in {line:?}"));
    assert!(
        port != 0,
        "the server logged port 0 instead of the bound port: {line:?}"
    );
    format!("http://127.0.0.1:{port}/mcp")
}

/// Calls `tool` with `arguments` (a JSON object).
/// Calls `tool` with `_meta.idempotencyKey` set to `key`.
pub async fn call_with_key(
    client: &Client,
    tool: &str,
    arguments: Value,
    key: &str,
) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    let mut meta = serde_json::Map::new();
    meta.insert("idempotencyKey".into(), json!(key));
    let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    params.meta = Some(RequestMetaObject(MetaObject(meta)));
    within("tools/call with a key", client.call_tool(params))
        .await
        .expect("tools/call")
}

pub async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    try_call(client, tool, arguments)
        .await
        .unwrap_or_else(|e| panic!("tools/call {tool} failed at the protocol level: {e}"))
}

/// Calls `tool`, returning protocol and transport errors instead of failing.
pub async fn try_call(
    client: &Client,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be a JSON object")
    };
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    within(&format!("tools/call {tool}"), client.call_tool(params)).await
}

/// The text of a result's single text block.
pub fn text_of(result: &CallToolResult) -> &str {
    assert_eq!(
        result.content.len(),
        1,
        "expected exactly one content block: {result:?}"
    );
    &result.content[0]
        .as_text()
        .unwrap_or_else(|| panic!("first block is not text: {result:?}"))
        .text
}

/// Checks the ledger receipt every answered call carries and returns its seq.
pub fn receipt(body: &Value) -> u64 {
    let hash = body["eventHash"]
        .as_str()
        .unwrap_or_else(|| panic!("no eventHash in {body}"));
    assert!(is_hex64(hash), "eventHash is not 64 hex digits: {hash}");
    let seq = body["seq"]
        .as_u64()
        .unwrap_or_else(|| panic!("no seq in {body}"));
    assert!(seq >= 1, "seq starts at 1: {body}");
    seq
}

pub fn is_hex64(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The structured content of a successful call (checked to carry its receipt).
pub fn ok(result: &CallToolResult) -> Value {
    assert_ne!(
        result.is_error,
        Some(true),
        "expected success, got error: {}",
        result_text(result)
    );
    let body = result
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("no structuredContent: {result:?}"));
    receipt(&body);
    body
}

fn result_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The JSON error body of a rejected call, checked to be complete: status, code, error,
/// suggestion and the receipt of the event that recorded the rejection.
pub fn rejected(result: &CallToolResult) -> Value {
    assert_eq!(
        result.is_error,
        Some(true),
        "expected a rejection, got: {result:?}"
    );
    assert!(
        result.structured_content.is_none(),
        "a rejection carries no structured content: {result:?}"
    );
    let body: Value = serde_json::from_str(text_of(result)).expect("rejection text is JSON");
    assert_eq!(body["status"], "rejected", "{body}");
    for member in ["code", "error", "suggestion"] {
        let value = body[member]
            .as_str()
            .unwrap_or_else(|| panic!("rejection without {member}: {body}"));
        assert!(!value.trim().is_empty(), "empty {member}: {body}");
    }
    receipt(&body);
    body
}

/// Calls `tool` expecting a rejection with `code`; returns the rejection body.
pub async fn expect_rejected(client: &Client, tool: &str, arguments: Value, code: &str) -> Value {
    let body = rejected(&call(client, tool, arguments.clone()).await);
    assert_eq!(
        body["code"], code,
        "{tool} {arguments} was rejected with the wrong code: {body}"
    );
    body
}

/// Records one thought with the reference parameters plus `extra` members.
pub async fn think(client: &Client, number: u32, total: u32, thought: &str, extra: Value) -> Value {
    let mut args = json!({
        "thought": thought,
        "thoughtNumber": number,
        "totalThoughts": total,
        "nextThoughtNeeded": true,
    });
    if let (Value::Object(args), Value::Object(extra)) = (&mut args, extra) {
        args.extend(extra);
    }
    ok(&call(client, "sequentialthinking", args).await)
}

/// Reads a resource and parses its single text content as JSON.
pub async fn read_json(client: &Client, uri: &str) -> Value {
    let result = try_read(client, uri)
        .await
        .unwrap_or_else(|e| panic!("resources/read {uri} failed: {e}"));
    assert_eq!(result.len(), 1, "one content item for {uri}");
    match &result[0] {
        ResourceContents::TextResourceContents {
            uri: got,
            mime_type,
            text,
            ..
        } => {
            assert_eq!(got, uri);
            assert_eq!(mime_type.as_deref(), Some("application/json"), "{uri}");
            serde_json::from_str(text).expect("resource text is JSON")
        }
        other => panic!("{uri} is not text: {other:?}"),
    }
}

pub async fn try_read(client: &Client, uri: &str) -> Result<Vec<ResourceContents>, ServiceError> {
    within(
        &format!("resources/read {uri}"),
        client.read_resource(ReadResourceRequestParams::new(uri)),
    )
    .await
    .map(|r| r.contents)
}

/// What a CLI run printed and how it ended.
#[derive(Debug)]
pub struct CliRun {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `thinkledger --data-dir DIR ARGS...` to completion, once (see [`cli`]).
pub async fn cli_once(data_dir: &Path, args: &[&str]) -> CliRun {
    let mut cmd = command(data_dir);
    cmd.args(args).env("RUST_LOG", "warn");
    let output = within(&format!("thinkledger {args:?}"), cmd.output())
        .await
        .expect("run thinkledger");
    CliRun {
        status: output.status,
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

/// Runs `thinkledger --data-dir DIR ARGS...` to completion. A command may open the ledger
/// just after this test process (e.g. [`stored_events`]) or a stopped server let go of it:
/// sled releases its lock from a background thread a moment after the store is dropped, so
/// an offline command's refusal naming the lock is retried for up to 5 s. Tests of that
/// refusal use [`cli_once`].
pub async fn cli(data_dir: &Path, args: &[&str]) -> CliRun {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let run = cli_once(data_dir, args).await;
        let locked = !run.status.success() && run.stderr.contains("holds it");
        if !locked || std::time::Instant::now() >= deadline {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `thinkledger verify --json`: the report and the exit code.
pub async fn verify_json(data_dir: &Path) -> (Value, Option<i32>) {
    let run = cli(data_dir, &["verify", "--json"]).await;
    let report = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("verify --json printed no JSON ({e}): {run:?}"));
    (report, run.status.code())
}

/// Asserts `verify --json` finds the ledger intact with exactly `events` events; returns the
/// report.
pub async fn assert_intact(data_dir: &Path, events: u64) -> Value {
    let (report, code) = verify_json(data_dir).await;
    assert_eq!(
        report["problems"],
        json!([]),
        "verify found problems: {report}"
    );
    assert_eq!(
        code,
        Some(0),
        "verify exits 0 on an intact ledger: {report}"
    );
    assert_eq!(report["events"], events, "event count: {report}");
    report
}

/// `thinkledger sessions --json`.
pub async fn sessions_json(data_dir: &Path) -> Value {
    let run = cli(data_dir, &["sessions", "--json"]).await;
    assert!(run.status.success(), "sessions --json failed: {run:?}");
    serde_json::from_str(&run.stdout).expect("sessions --json prints JSON")
}

/// `thinkledger export SESSION --format FORMAT`: its stdout.
pub async fn export_cli(data_dir: &Path, session: &str, format: &str) -> String {
    let run = cli(data_dir, &["export", session, "--format", format]).await;
    assert!(run.status.success(), "export failed: {run:?}");
    run.stdout
}

/// The ledger of `data_dir`, opened once no process holds it: sled's threads let go of the
/// file lock a moment after the last handle is dropped (a reader just before, in this
/// process), so a `Locked` ledger is tried again for up to 10 s.
pub fn open_ledger_store(data_dir: &Path) -> SledStore {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match SledStore::open(&data_dir.join("ledger")) {
            Err(thinkledger::ledger::LedgerError::Locked { .. })
                if std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            other => return other.expect("open the ledger (is a server still running?)"),
        }
    }
}

/// Every stored event, parsed, in seq order. Only when no server holds the ledger.
pub fn stored_events(data_dir: &Path) -> Vec<Value> {
    let store = open_ledger_store(data_dir);
    store
        .events_from(1)
        .map(|item| {
            let (seq, bytes) = item.expect("read event");
            let event: Value = serde_json::from_slice(&bytes).expect("stored event is JSON");
            assert_eq!(event["seq"], seq, "event stored under its seq");
            event
        })
        .collect()
}

/// The members `names` of `value`, as an object: for comparing several members at once.
pub fn pick(value: &Value, names: &[&str]) -> Value {
    Value::Object(
        names
            .iter()
            .map(|n| ((*n).to_owned(), value[*n].clone()))
            .collect(),
    )
}

/// Copies the directory tree `from` to `to` (a backup an operator might restore).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Every byte of every file under `dir`.
pub fn all_bytes(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(all_bytes(&path));
        } else {
            out.extend(std::fs::read(&path).expect("read file"));
        }
    }
    out
}

pub fn holds(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}
