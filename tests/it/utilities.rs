//! MCP's utilities for long work through the built binary: log messages filtered by the level
//! the client chose (`logging/setLevel`, and a 2026-07-28 request's `_meta` logLevel), progress
//! notifications in order and before the result, and a cancelled model-backed call that stops
//! its model request and is in the log as cancelled — over stdio and over HTTP.
//!
//! Order on the wire is checked with clients that read the raw stream (newline-delimited
//! JSON-RPC over stdio, a 2026-07-28 response's SSE frames over HTTP): rmcp's client hands
//! notifications to its handler on tasks of their own, which can reorder them.

// rmcp marks MCP logging deprecated (SEP-2577); the session-era revisions still have it.
#![allow(deprecated)]

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ClientHandler;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, LoggingLevel, LoggingMessageNotificationParam,
    SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RoleClient, ServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::TcpListener;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{Notify, mpsc};

use super::common::{
    BIN, HttpServer, StdioServer, assert_intact, call, stored_events, think, within,
};
use super::model::{llm_or_skip, read_request};

// ---------------------------------------------------------------------------------------------
// A raw stdio client: every line the server writes, in order.

struct RawStdio {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl RawStdio {
    async fn start(data_dir: &Path, env: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(BIN);
        cmd.arg("--data-dir")
            .arg(data_dir)
            .args(["serve", "--toolsets", "all"])
            .env_remove("THINKLEDGER_DATA_DIR")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        for (name, value) in env {
            cmd.env(name, value);
        }
        let mut child = cmd.spawn().expect("spawn thinkledger");
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut client = Self {
            child,
            stdin,
            lines,
            next_id: 0,
        };
        let init = client
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw-utilities-test", "version": "1"}
                }),
            )
            .await;
        let (_, answer) = client.response(init).await;
        assert!(
            answer["result"]["capabilities"]["logging"].is_object(),
            "the server declares logging: {answer}"
        );
        client
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        client
    }

    async fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        let mut line = message.to_string();
        line.push('\n');
        stdin.write_all(line.as_bytes()).await.expect("write");
        stdin.flush().await.expect("flush");
    }

    /// Sends a request; returns its id.
    async fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// Every message up to the response to `id`, and that response.
    async fn response(&mut self, id: u64) -> (Vec<Value>, Value) {
        self.until(|m| m["id"] == json!(id) && m.get("method").is_none())
            .await
    }

    /// Every message up to the first that `wanted` accepts, and that one.
    async fn until(&mut self, wanted: impl Fn(&Value) -> bool) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let line = within("a line from the server", self.lines.next_line())
                .await
                .expect("read stdout")
                .expect("the server closed stdout");
            let message: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if wanted(&message) {
                return (before, message);
            }
            before.push(message);
        }
    }

    async fn call(&mut self, tool: &str, arguments: Value, meta: Value) -> (Vec<Value>, Value) {
        let id = self
            .request(
                "tools/call",
                json!({"name": tool, "arguments": arguments, "_meta": meta}),
            )
            .await;
        self.response(id).await
    }

    async fn stop(mut self) {
        drop(self.stdin.take());
        let status = within("the server to exit", self.child.wait())
            .await
            .expect("wait");
        assert!(status.success(), "the server exits cleanly: {status}");
    }
}

fn thought(n: u32, total: u32) -> Value {
    json!({
        "thought": format!("step {n} of a plan nobody else may read"),
        "thoughtNumber": n,
        "totalThoughts": total,
        "nextThoughtNeeded": n < total,
    })
}

fn notifications<'a>(messages: &'a [Value], method: &str) -> Vec<&'a Value> {
    messages.iter().filter(|m| m["method"] == method).collect()
}

// ---------------------------------------------------------------------------------------------
// Logging.

/// A client handler that keeps every log message it is sent.
#[derive(Clone, Default)]
struct Logs {
    seen: Arc<Mutex<Vec<Value>>>,
    arrived: Arc<Notify>,
}

impl ClientHandler for Logs {
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let value = serde_json::to_value(&params).expect("log params");
        self.seen.lock().unwrap().push(value);
        self.arrived.notify_waiters();
    }
}

impl Logs {
    fn snapshot(&self) -> Vec<Value> {
        self.seen.lock().unwrap().clone()
    }

    /// Waits for a message whose data has `event`; returns it.
    async fn wait_for(&self, event: &str, seq: Option<u64>) -> Value {
        within(&format!("a log message {event}"), async {
            loop {
                let notified = self.arrived.notified();
                if let Some(found) = self.snapshot().into_iter().find(|m| {
                    m["data"]["event"] == event && seq.is_none_or(|s| m["data"]["seq"] == s)
                }) {
                    return found;
                }
                notified.await;
            }
        })
        .await
    }
}

async fn set_level(client: &rmcp::service::RunningService<RoleClient, Logs>, level: LoggingLevel) {
    within(
        "logging/setLevel",
        client.set_level(SetLevelRequestParams::new(level)),
    )
    .await
    .expect("logging/setLevel is accepted");
}

async fn refused_seq(client: &rmcp::service::RunningService<RoleClient, Logs>) -> u64 {
    let result = within(
        "a refused call",
        client.call_tool(
            CallToolRequestParams::new("sequentialthinking")
                .with_arguments(rmcp::object!({"thought": "a secret plan", "thoughtNumber": 0})),
        ),
    )
    .await
    .expect("tools/call");
    assert_eq!(result.is_error, Some(true), "the call is refused");
    let body: Value =
        serde_json::from_str(result.content[0].as_text().expect("text").text.as_str())
            .expect("JSON body");
    body["seq"].as_u64().expect("a refused call is recorded")
}

#[tokio::test]
async fn log_messages_follow_the_level_the_client_set_and_never_carry_its_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = HttpServer::start(dir.path(), &[]).await;
    let logs = Logs::default();
    let transport = StreamableHttpClientTransport::from_uri(server.url.clone());
    let client = within("HTTP handshake", logs.clone().serve(transport))
        .await
        .expect("connect");

    // No level set yet: nothing is sent.
    let silent = refused_seq(&client).await;

    set_level(&client, LoggingLevel::Warning).await;
    let heard = refused_seq(&client).await;
    let message = logs.wait_for("call_refused", Some(heard)).await;
    assert_eq!(message["level"], "warning", "{message}");
    assert_eq!(message["logger"], "thinkledger.call", "{message}");
    assert_eq!(message["data"]["tool"], "sequentialthinking", "{message}");
    assert_eq!(message["data"]["code"], "invalid_arguments", "{message}");

    set_level(&client, LoggingLevel::Error).await;
    let filtered = refused_seq(&client).await;
    set_level(&client, LoggingLevel::Debug).await;
    let last = refused_seq(&client).await;
    logs.wait_for("call_refused", Some(last)).await;
    // A round trip after the last message: anything sent before it has been handled.
    within(
        "ping",
        client
            .peer()
            .send_request(ClientRequest::PingRequest(Default::default())),
    )
    .await
    .expect("ping");

    let seqs: Vec<u64> = logs
        .snapshot()
        .iter()
        .filter_map(|m| m["data"]["seq"].as_u64())
        .collect();
    assert_eq!(seqs, vec![heard, last], "below the level nothing is sent");
    assert!(!seqs.contains(&silent) && !seqs.contains(&filtered));
    for message in logs.snapshot() {
        assert!(
            !message.to_string().contains("secret"),
            "no caller text in a log message: {message}"
        );
    }
    client.cancel().await.expect("close");
    server.kill().await;
}

#[tokio::test]
async fn a_2026_request_hears_logs_on_its_own_stream_only_when_it_names_a_level() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = HttpServer::start(dir.path(), &["--stateless"]).await;
    let http = reqwest::Client::new();
    let call = |id: u64, tool: &str, arguments: Value, extra: Value| {
        let mut meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        if let Value::Object(extra) = extra {
            meta.as_object_mut().expect("meta").extend(extra);
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": meta,
        }});
        http.post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool)
            .body(body.to_string())
            .send()
    };
    let refused = json!({"thought": "a secret plan", "thoughtNumber": 0});
    let post = |id: u64, level: Option<&str>| {
        let extra = level.map_or(
            json!({}),
            |l| json!({"io.modelcontextprotocol/logLevel": l}),
        );
        call(id, "sequentialthinking", refused.clone(), extra)
    };
    let frames = |text: String| -> Vec<Value> {
        text.lines()
            .filter_map(|l| l.trim().strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    };

    let with = within("a call naming a level", post(1, Some("info")))
        .await
        .expect("POST");
    let with = frames(within("its stream", with.text()).await.expect("body"));
    let last = with.last().expect("frames");
    assert_eq!(last["id"], 1, "the result comes last: {with:?}");
    let refusals: Vec<&Value> = notifications(&with, "notifications/message")
        .into_iter()
        .filter(|m| m["params"]["data"]["event"] == "call_refused")
        .collect();
    assert_eq!(refusals.len(), 1, "{with:?}");
    assert_eq!(refusals[0]["params"]["data"]["code"], "invalid_arguments");

    let without = within("a call naming none", post(2, None))
        .await
        .expect("POST");
    let body = within("its body", without.text()).await.expect("body");
    assert!(
        !body.contains("notifications/message"),
        "no log message without a level: {body}"
    );

    // Progress of a re-execution comes on the request's own stream, before its result.
    let answer = within(
        "a thought",
        call(3, "sequentialthinking", thought(1, 1), json!({})),
    )
    .await
    .expect("POST");
    let answer = frames(within("its stream", answer.text()).await.expect("body"));
    let session = answer.last().expect("result")["result"]["structuredContent"]["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_owned();
    let replay = within(
        "a replay",
        call(
            4,
            "replay_reasoning_session",
            json!({"session_id": session, "reexecute": true}),
            json!({"progressToken": "r"}),
        ),
    )
    .await
    .expect("POST");
    let replay = frames(within("its stream", replay.text()).await.expect("body"));
    let progress = notifications(&replay, "notifications/progress");
    assert!(!progress.is_empty(), "{replay:?}");
    assert_eq!(
        replay.last().expect("result")["id"],
        4,
        "the result comes last: {replay:?}"
    );
    let done = &progress.last().expect("progress")["params"];
    assert_eq!(done["progress"], done["total"], "{done}");
    server.kill().await;
}

// ---------------------------------------------------------------------------------------------
// Progress.

#[tokio::test]
async fn long_calls_report_progress_in_order_before_their_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut client = RawStdio::start(dir.path(), &[]).await;
    // A session of 600 thoughts: re-executing it folds 600 events, reported every 256.
    let total = 600;
    for n in 1..=total {
        let (_, answer) = client
            .call("sequentialthinking", thought(n, total), json!({}))
            .await;
        assert!(answer["result"]["isError"] != true, "{answer}");
    }
    let (_, answer) = client
        .call("sequentialthinking", thought(1, 1), json!({}))
        .await;
    let session = answer["result"]["structuredContent"]["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_owned();

    let (before, answer) = client
        .call(
            "replay_reasoning_session",
            json!({"session_id": session, "reexecute": true}),
            json!({"progressToken": "replay-1"}),
        )
        .await;
    assert!(answer["result"]["isError"] != true, "{answer}");
    let report = &answer["result"]["structuredContent"]["reexecution"];
    assert_eq!(report["diverged"], 0, "{report}");
    let progress = notifications(&before, "notifications/progress");
    assert!(
        progress.len() >= 2,
        "progress before the result: {before:?}"
    );
    let mut last = -1.0;
    for p in &progress {
        let params = &p["params"];
        assert_eq!(params["progressToken"], "replay-1");
        let value = params["progress"].as_f64().expect("progress");
        assert!(value > last, "progress increases: {progress:?}");
        last = value;
        assert_eq!(params["total"], json!(f64::from(total + 1)), "{params}");
        assert!(
            params["message"]
                .as_str()
                .unwrap_or("")
                .contains("re-executed"),
            "{params}"
        );
    }

    // The audit export of the same session reports as it goes, too.
    let (before, answer) = client
        .call(
            "export_reasoning_audit",
            json!({"session_id": session}),
            json!({"progressToken": 7}),
        )
        .await;
    assert!(answer["result"]["isError"] != true, "{answer}");
    let progress = notifications(&before, "notifications/progress");
    assert!(!progress.is_empty(), "{before:?}");
    let final_params = &progress.last().expect("progress")["params"];
    assert_eq!(
        final_params["progress"], final_params["total"],
        "{final_params}"
    );

    // Without a token, no progress.
    let (before, _) = client
        .call(
            "replay_reasoning_session",
            json!({"session_id": session, "reexecute": true}),
            json!({}),
        )
        .await;
    assert!(
        notifications(&before, "notifications/progress").is_empty(),
        "{before:?}"
    );
    client.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Cancellation.

/// A slow model provider: a TCP server on 127.0.0.1 that holds each request `hold` before
/// forwarding it to the real local model, and says when a request arrived and when its client
/// closed the connection while it was held.
pub(crate) struct SlowProvider {
    pub(crate) base: String,
    arrived: Arc<Notify>,
    closed: mpsc::UnboundedReceiver<()>,
    /// How many requests it has received.
    pub(crate) requests: Arc<std::sync::atomic::AtomicU32>,
}

pub(crate) async fn slow_provider(upstream: String, hold: Duration) -> SlowProvider {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let arrived = Arc::new(Notify::new());
    let (closed_tx, closed) = mpsc::unbounded_channel();
    let notify = arrived.clone();
    let requests = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counter = requests.clone();
    tokio::spawn(async move {
        let http = reqwest::Client::builder().no_proxy().build().expect("http");
        while let Ok((mut socket, _)) = listener.accept().await {
            let (notify, closed_tx, http, upstream, counter) = (
                notify.clone(),
                closed_tx.clone(),
                http.clone(),
                upstream.clone(),
                counter.clone(),
            );
            tokio::spawn(async move {
                let Ok((path, body)) = read_request(&mut socket).await else {
                    return;
                };
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                notify.notify_one();
                let mut probe = [0u8; 1];
                tokio::select! {
                    read = socket.read(&mut probe) => {
                        if matches!(read, Ok(0) | Err(_)) {
                            let _ = closed_tx.send(());
                        }
                    }
                    () = tokio::time::sleep(hold) => {
                        let Ok(answer) = http
                            .post(format!("{upstream}{}", path.trim_start_matches("/v1")))
                            .header("content-type", "application/json")
                            .body(body)
                            .send()
                            .await
                        else {
                            return;
                        };
                        let status = answer.status().as_u16();
                        let bytes = answer.bytes().await.unwrap_or_default();
                        let head = format!(
                            "HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\n\
                             Content-Length: {}\r\nConnection: close\r\n\r\n",
                            bytes.len()
                        );
                        let _ = socket.write_all(head.as_bytes()).await;
                        let _ = socket.write_all(&bytes).await;
                    }
                }
            });
        }
    });
    SlowProvider {
        base,
        arrived,
        closed,
        requests,
    }
}

pub(crate) fn provider_env(base: &str) -> Vec<(&'static str, String)> {
    vec![
        ("THINKLEDGER_MODEL_PROVIDER_URL", base.to_owned()),
        ("THINKLEDGER_MODEL", "smollm2-test".to_owned()),
        ("THINKLEDGER_MODEL_MAX_TOKENS", "32".to_owned()),
    ]
}

/// The stored event refused as cancelled: exactly one, and nothing else changed.
fn assert_cancelled_in_log(data_dir: &Path, tool: &str) -> Value {
    let cancelled: Vec<Value> = stored_events(data_dir)
        .into_iter()
        .filter(|e| e["outcome"]["error"]["code"] == "call_cancelled")
        .collect();
    assert_eq!(cancelled.len(), 1, "one cancelled call: {cancelled:?}");
    let event = cancelled[0].clone();
    assert_eq!(event["call"]["tool"], tool, "{event}");
    assert_eq!(event["outcome"]["status"], "rejected", "{event}");
    let message = event["outcome"]["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("while model call 1 was pending (0 answer(s) taken)"),
        "says how far it got: {event}"
    );
    event
}

#[tokio::test]
async fn a_cancelled_model_call_stops_its_request_and_is_recorded_as_cancelled_over_stdio() {
    let Some(upstream) = llm_or_skip("a_cancelled_model_call…stdio") else {
        return;
    };
    let mut provider = slow_provider(upstream, Duration::from_secs(60)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let env = provider_env(&provider.base);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut client = RawStdio::start(dir.path(), &env).await;
    let level = client
        .request("logging/setLevel", json!({"level": "notice"}))
        .await;
    let (_, answer) = client.response(level).await;
    assert_eq!(answer["result"], json!({}), "{answer}");

    let id = client
        .request(
            "tools/call",
            json!({"name": "confer", "arguments": {"message": "a secret question"},
                   "_meta": {"progressToken": "c"}}),
        )
        .await;
    within("the model request to arrive", provider.arrived.notified()).await;
    client
        .send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": id, "reason": "the user gave up"}}),
        )
        .await;
    within("the model request to be aborted", provider.closed.recv())
        .await
        .expect("closed");
    // The client hears that the call was stopped; no result is sent for a cancelled request
    // (MCP: the server SHOULD NOT answer it), and certainly no success.
    let (before, log) = client
        .until(|m| m["params"]["data"]["event"] == "call_cancelled")
        .await;
    assert_eq!(log["params"]["data"]["tool"], "confer", "{log}");
    assert!(
        !before.iter().any(|m| m["id"] == json!(id)),
        "no answer to the cancelled call: {before:?}"
    );
    // The next request is answered, and the cancelled one still is not.
    let (before, _) = client
        .call("sequentialthinking", thought(1, 1), json!({}))
        .await;
    assert!(
        !before.iter().any(|m| m["id"] == json!(id)),
        "no answer to the cancelled call: {before:?}"
    );
    client.stop().await;

    let event = assert_cancelled_in_log(dir.path(), "confer");
    assert!(!event.to_string().contains("secret"), "{event}");
    assert_intact(
        dir.path(),
        u64::try_from(stored_events(dir.path()).len()).unwrap(),
    )
    .await;
}

#[tokio::test]
async fn a_cancelled_model_call_stops_its_request_and_is_recorded_as_cancelled_over_http() {
    let Some(upstream) = llm_or_skip("a_cancelled_model_call…http") else {
        return;
    };
    let mut provider = slow_provider(upstream, Duration::from_secs(60)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let env = provider_env(&provider.base);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = HttpServer::start_with_env(dir.path(), &["--toolsets", "all"], &env).await;
    let logs = Logs::default();
    let transport = StreamableHttpClientTransport::from_uri(server.url.clone());
    let client = within("HTTP handshake", logs.clone().serve(transport))
        .await
        .expect("connect");
    set_level(&client, LoggingLevel::Notice).await;

    let request = ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
        CallToolRequestParams::new("confer")
            .with_arguments(rmcp::object!({"message": "a secret question"})),
    ));
    let handle = within(
        "send the call",
        client
            .peer()
            .send_cancellable_request(request, PeerRequestOptions::no_options()),
    )
    .await
    .expect("sent");
    within("the model request to arrive", provider.arrived.notified()).await;
    within("cancel", handle.cancel(Some("the user gave up".to_owned())))
        .await
        .expect("cancelled");
    within("the model request to be aborted", provider.closed.recv())
        .await
        .expect("closed");
    logs.wait_for("call_cancelled", None).await;
    client.cancel().await.expect("close");
    server.kill().await;

    assert_cancelled_in_log(dir.path(), "confer");
    assert_intact(
        dir.path(),
        u64::try_from(stored_events(dir.path()).len()).unwrap(),
    )
    .await;
}

#[tokio::test]
async fn json_logs_give_one_line_per_call_without_the_callers_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start_with_env(
        dir.path(),
        &[],
        &[("THINKLEDGER_LOG_FORMAT", "json"), ("RUST_LOG", "info")],
    )
    .await;
    think(&server, 1, 1, "a private secret", json!({})).await;
    let refused = call(&server, "sequentialthinking", json!({"thoughtNumber": 0})).await;
    assert_eq!(refused.is_error, Some(true));
    let stderr = {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let text = server.stderr();
            if text.matches("\"message\":\"call\"").count() >= 2
                || std::time::Instant::now() > deadline
            {
                break text;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    server.stop().await;
    let calls: Vec<Value> = stderr
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .filter(|v| v["message"] == "call")
        .collect();
    assert_eq!(calls.len(), 2, "{stderr}");
    assert_eq!(calls[0]["seq"], 1);
    assert_eq!(calls[0]["tool"], "sequentialthinking");
    assert_eq!(calls[0]["outcome"], "ok");
    assert_eq!(calls[0]["principal"], "local");
    assert!(calls[0]["latency_us"].is_u64());
    assert_eq!(calls[1]["outcome"], "rejected");
    assert!(
        !stderr.contains("a private secret"),
        "no caller text in the logs"
    );
}
