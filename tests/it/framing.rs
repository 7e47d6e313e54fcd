//! The transport edge over raw JSON-RPC: every malformed line or body is answered at once, a
//! `tools/call` that does not decode is -32602 and recorded as rejected, pipelined calls of one
//! connection take effect in arrival order, HTTP errors carry JSON-RPC bodies, and a fuzz run of
//! hostile input leaves the process alive and the ledger with nothing but rejected calls; a
//! 2026-07-28 client over stdio hears of its tool list changing once, on its listen stream.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::common::*;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// `thinkledger serve` over stdio, spoken to in raw lines.
struct RawStdio {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl RawStdio {
    async fn start(data_dir: &Path) -> Self {
        let mut child = tokio::process::Command::new(BIN)
            .arg("--data-dir")
            .arg(data_dir)
            .arg("serve")
            .env_remove("THINKLEDGER_DATA_DIR")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn thinkledger serve");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Self {
            child,
            stdin,
            lines,
        }
    }

    /// Starts a server and completes the handshake.
    async fn initialized(data_dir: &Path) -> Self {
        let mut raw = Self::start(data_dir).await;
        raw.send(INITIALIZE).await;
        let answer = raw.next().await;
        assert_eq!(answer["id"], 0, "initialize answered: {answer}");
        raw.send(INITIALIZED).await;
        raw
    }

    async fn send(&mut self, line: &str) {
        self.send_bytes(line.as_bytes()).await;
    }

    async fn send_bytes(&mut self, line: &[u8]) {
        let mut bytes = line.to_vec();
        bytes.push(b'\n');
        within("write to stdin", self.stdin.write_all(&bytes))
            .await
            .expect("write stdin");
    }

    /// The next line the server writes, as JSON.
    async fn next(&mut self) -> Value {
        let line = within("an answer on stdout", self.lines.next_line())
            .await
            .expect("read stdout")
            .expect("the server closed stdout");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"))
    }

    /// Closes stdin and waits for the server to exit.
    async fn stop(mut self) {
        drop(self.stdin);
        let status = within("the server to exit", self.child.wait())
            .await
            .expect("wait");
        assert!(status.success(), "server exit: {status:?}");
        let rest = self.lines.next_line().await.ok().flatten();
        assert_eq!(rest, None, "nothing after the last answer");
    }
}

fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("an error answer: {answer}"))
}

#[tokio::test]
async fn stdio_malformed_lines_are_answered_at_once_without_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut raw = RawStdio::start(dir.path()).await;
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    for (line, code) in [
        (r#"{"jsonrpc":"2.0","id":1,"method":"#, -32700),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}"#,
            -32700,
        ),
        (deep.as_str(), -32700),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\ud800"}}"#,
            -32700,
        ),
        ("5", -32600),
        ("[]", -32600),
        (r#"{"id":1,"method":"ping"}"#, -32600),
        (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, -32600),
    ] {
        raw.send(line).await;
        let answer = raw.next().await;
        assert_eq!(error_code(&answer), code, "for {:.60}: {answer}", line);
        assert_eq!(answer["jsonrpc"], "2.0");
        let id = if line.starts_with("{\"id\"") {
            json!(1)
        } else {
            Value::Null
        };
        assert_eq!(answer["id"], id, "the id when it could be read: {answer}");
    }
    // Invalid UTF-8 too; and a notification, valid or not, is never answered: the next
    // answer is the ping's.
    raw.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}")
        .await;
    assert_eq!(error_code(&raw.next().await), -32700);
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/whatever","params":5}"#)
        .await;
    raw.send(INITIALIZE).await;
    assert_eq!(raw.next().await["id"], 0);
    raw.send(INITIALIZED).await;
    raw.send(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#)
        .await;
    assert_eq!(
        raw.next().await,
        json!({"jsonrpc": "2.0", "id": "p", "result": {}})
    );
    raw.stop().await;
    assert_intact(dir.path(), 0).await;
}

#[tokio::test]
async fn stdio_an_undecodable_tools_call_is_invalid_params_and_recorded_as_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut raw = RawStdio::initialized(dir.path()).await;
    raw.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":5,"arguments":{"secret":"s3cr3t"}}}"#).await;
    let answer = raw.next().await;
    assert_eq!(
        (answer["id"].clone(), error_code(&answer)),
        (json!(7), -32602),
        "{answer}"
    );
    assert_eq!(
        answer["error"]["data"]["code"], "invalid_params",
        "{answer}"
    );
    assert_eq!(answer["error"]["data"]["seq"], 1, "{answer}");
    // Only unknown methods are -32601; a known one with bad params is -32602.
    raw.send(r#"{"jsonrpc":"2.0","id":8,"method":"no/such/method"}"#)
        .await;
    assert_eq!(error_code(&raw.next().await), -32601);
    raw.send(r#"{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":5}}"#)
        .await;
    assert_eq!(error_code(&raw.next().await), -32602);
    raw.stop().await;

    let events = stored_events(dir.path());
    assert_eq!(events.len(), 1, "one event for the one tools/call");
    let event = &events[0];
    assert_eq!(event["call"]["tool"], "tools/call");
    assert_eq!(event["outcome"]["status"], "rejected");
    assert_eq!(event["outcome"]["error"]["code"], "invalid_params");
    assert_eq!(event["actor"]["clientName"], "raw", "{event}");
    assert!(
        event["call"]["arguments"]["raw"]["textCommitment"].is_string(),
        "the params are one opaque committed text: {event}"
    );
    assert!(!event.to_string().contains("s3cr3t"), "nothing in clear");
    assert_intact(dir.path(), 1).await;
}

#[tokio::test]
async fn stdio_pipelined_calls_take_effect_in_arrival_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut raw = RawStdio::initialized(dir.path()).await;
    let mut burst = String::new();
    for i in 1..=20u32 {
        let thought = json!({"jsonrpc": "2.0", "id": i * 2, "method": "tools/call", "params": {
            "name": "sequentialthinking",
            "arguments": {"thought": format!("marker{i:02}end"), "thoughtNumber": i,
                          "totalThoughts": 20, "nextThoughtNeeded": i < 20}}});
        let search = json!({"jsonrpc": "2.0", "id": i * 2 + 1, "method": "tools/call", "params": {
            "name": "search", "arguments": {"query": format!("marker{i:02}end")}}});
        burst.push_str(&format!("{thought}\n{search}\n"));
    }
    // Written in one go, before any answer is read.
    within("write the burst", raw.stdin.write_all(burst.as_bytes()))
        .await
        .expect("write");
    let mut answers = HashMap::new();
    while answers.len() < 40 {
        let answer = raw.next().await;
        answers.insert(answer["id"].as_u64().expect("numeric id"), answer);
    }
    for i in 1..=20u64 {
        let search = &answers[&(i * 2 + 1)]["result"]["structuredContent"];
        let numbers: Vec<u64> = search["matches"]
            .as_array()
            .unwrap_or_else(|| panic!("search {i} answered: {search}"))
            .iter()
            .filter_map(|m| m["thoughtNumber"].as_u64())
            .collect();
        assert_eq!(
            numbers,
            vec![i],
            "search {i} finds the thought it follows: {search}"
        );
        let thought_seq = answers[&(i * 2)]["result"]["structuredContent"]["seq"].as_u64();
        assert!(
            thought_seq < search["seq"].as_u64(),
            "the thought is recorded first"
        );
    }
    raw.stop().await;
    assert_intact(dir.path(), 40).await;
}

/// A POST to the MCP endpoint with the headers a Streamable HTTP client sends.
fn post(
    http: &reqwest::Client,
    url: &str,
    body: impl Into<reqwest::Body>,
) -> reqwest::RequestBuilder {
    http.post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body)
}

/// Status, content type and JSON body of an error answer.
async fn json_error(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let text = response.text().await.expect("body");
    assert!(
        content_type.starts_with("application/json"),
        "{status} {content_type}: {text}"
    );
    let body: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{status} {e}: {text}"));
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert!(body["error"]["code"].is_i64(), "{body}");
    (status, body)
}

/// Initializes an MCP session over HTTP; its id.
async fn http_session(http: &reqwest::Client, url: &str) -> String {
    let response = within("initialize", post(http, url, INITIALIZE).send())
        .await
        .expect("initialize");
    assert_eq!(response.status(), 200);
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    let _ = response.text().await;
    let done = post(http, url, INITIALIZED)
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("initialized");
    assert_eq!(done.status(), 202);
    session
}

#[tokio::test]
async fn http_errors_carry_json_rpc_bodies_and_ending_a_session_is_204() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = HttpServer::start(dir.path(), &[]).await;
    let url = server.url.clone();
    let http = reqwest::Client::new();

    let (status, body) =
        json_error(post(&http, &url, "{not json").send().await.expect("post")).await;
    assert_eq!(
        (status, body["error"]["code"].clone(), body["id"].clone()),
        (400, json!(-32700), Value::Null)
    );
    let (status, body) = json_error(post(&http, &url, "[]").send().await.expect("post")).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!(-32600))
    );

    let huge = vec![b' '; 4 * 1024 * 1024 + 1];
    let (status, body) = json_error(post(&http, &url, huge).send().await.expect("post")).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (413, json!(-32600))
    );

    let session = http_session(&http, &url).await;
    let call = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}"#;
    let (status, body) = json_error(
        post(&http, &url, call)
            .header("mcp-session-id", &session)
            .send()
            .await
            .expect("post"),
    )
    .await;
    assert_eq!(
        (status, body["id"].clone(), body["error"]["code"].clone()),
        (200, json!(3), json!(-32602))
    );
    assert_eq!(body["error"]["data"]["code"], "invalid_params");

    let ping = r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#;
    let unknown = post(&http, &url, ping)
        .header("mcp-session-id", "no-such-session")
        .send();
    let (status, body) = json_error(unknown.await.expect("post")).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (404, json!(-32001))
    );
    let (status, _) = json_error(http.put(&url).send().await.expect("put")).await;
    assert_eq!(status, 405);
    let wrong_accept = http
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "text/plain")
        .body(ping)
        .send();
    assert_eq!(json_error(wrong_accept.await.expect("post")).await.0, 406);
    let wrong_type = http
        .post(&url)
        .header("content-type", "text/plain")
        .header("accept", "application/json, text/event-stream")
        .body(ping)
        .send();
    assert_eq!(json_error(wrong_type.await.expect("post")).await.0, 415);

    let ended = http
        .delete(&url)
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("delete");
    assert_eq!(ended.status(), 204, "ending a session answers 204");
    server.kill().await;
    let events = stored_events(dir.path());
    assert_eq!(events.len(), 1, "only the undecodable call is recorded");
    assert_eq!(events[0]["outcome"]["status"], "rejected");
}

/// Hostile lines: random bytes, truncated or byte-mutated requests, deep nesting, surrogates,
/// wrong param types, huge numbers. None of them can be a call that changes state.
fn hostile() -> impl Strategy<Value = Vec<u8>> {
    let bases = vec![
        r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"nope_tool","arguments":{"a":1}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":12,"method":"tools/list","params":{}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":"r","method":"resources/read","params":{"uri":"ledger://sessions"}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":11}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":13,"method":"ping"}"#.to_owned(),
    ];
    let wrong_value = prop_oneof![
        Just(json!(5)),
        Just(json!(null)),
        Just(json!([])),
        Just(json!({"x": {}})),
        Just(json!(true)),
        (any::<i64>()).prop_map(|n| json!(n)),
        Just(json!(18_446_744_073_709_551_615u64)),
        Just(json!(1e300)),
    ];
    let base = proptest::sample::select(bases);
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64),
        (base.clone(), any::<proptest::sample::Index>())
            .prop_map(|(b, at)| b.as_bytes()[..at.index(b.len())].to_vec()),
        (base.clone(), any::<proptest::sample::Index>(), any::<u8>()).prop_map(|(b, at, byte)| {
            let mut bytes = b.into_bytes();
            let i = at.index(bytes.len());
            bytes[i] = byte;
            bytes
        }),
        (1usize..3000).prop_map(|n| format!("{}{}", "{\"a\":".repeat(n), "}".repeat(n)).into_bytes()),
        Just(br#"{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"x","arguments":{"t":"\udc00"}}}"#.to_vec()),
        (wrong_value.clone(), wrong_value.clone()).prop_map(|(name, args)| {
            json!({"jsonrpc": "2.0", "id": 15, "method": "tools/call",
                   "params": {"name": name, "arguments": args}}).to_string().into_bytes()
        }),
        wrong_value.clone().prop_map(|v| {
            json!({"jsonrpc": "2.0", "id": 16, "method": "tools/call", "params": {
                "name": "sequentialthinking",
                "arguments": {"thought": v, "thoughtNumber": 1e300, "totalThoughts": 1,
                              "nextThoughtNeeded": true}}}).to_string().into_bytes()
        }),
        wrong_value.prop_map(|v| json!({"jsonrpc": "2.0", "id": v, "method": "ping"}).to_string().into_bytes()),
        Just(b"1e400".to_vec()),
    ]
    .prop_map(|bytes| bytes.into_iter().map(|b| if b == b'\n' || b == b'\r' { b' ' } else { b }).collect())
}

/// Whether a well-behaved server owes an answer to `line` (independently of how it is built).
fn owes_answer(line: &[u8]) -> bool {
    let trimmed = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if trimmed.iter().all(u8::is_ascii_whitespace) {
        return false;
    }
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(trimmed) else {
        return true;
    };
    if message.get("jsonrpc") != Some(&json!("2.0")) {
        return true;
    }
    let notification =
        message.get("method").is_some_and(Value::is_string) && !message.contains_key("id");
    let valid_id = message
        .get("id")
        .is_some_and(|id| id.is_string() || id.is_i64() || id.is_u64());
    let response = !message.contains_key("method")
        && valid_id
        && (message.contains_key("result") != message.contains_key("error"));
    !(notification || response)
}

#[test]
fn fuzz_hostile_input_is_answered_and_changes_nothing() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let stdio_dir = tempfile::tempdir().expect("tempdir");
    let http_dir = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    let raw = runtime.block_on(RawStdio::initialized(stdio_dir.path()));
    let raw = tokio::sync::Mutex::new(raw);
    let server = runtime.block_on(HttpServer::start(http_dir.path(), &[]));
    let http = reqwest::Client::new();
    let session = runtime.block_on(http_session(&http, &server.url));
    let mut runner = TestRunner::new(Config {
        cases: 160,
        failure_persistence: None,
        ..Config::default()
    });
    let sentinel = std::cell::Cell::new(0u64);
    runner
        .run(&hostile(), |line| {
            sentinel.set(sentinel.get() + 1);
            let sentinel = sentinel.get();
            runtime.block_on(async {
                let mut raw = raw.lock().await;
                // Over stdio: the line, then a ping; read until the ping's answer and, if one is
                // owed, the line's.
                raw.send_bytes(&line).await;
                let ping = format!("sentinel-{sentinel}");
                raw.send(&json!({"jsonrpc": "2.0", "id": ping, "method": "ping"}).to_string())
                    .await;
                let mut owed = owes_answer(&line);
                let mut pinged = false;
                while owed || !pinged {
                    let answer = raw.next().await;
                    if answer["id"] == ping.as_str() {
                        pinged = true;
                    } else {
                        assert!(
                            owed,
                            "an answer nobody asked for: {answer} to {}",
                            String::from_utf8_lossy(&line)
                        );
                        assert!(
                            answer.get("result").is_some() || answer.get("error").is_some(),
                            "{answer}"
                        );
                        owed = false;
                    }
                }
                // Over HTTP, in the session: a status, and a JSON-RPC body unless accepted.
                let response = post(&http, &server.url, line.clone())
                    .header("mcp-session-id", &session)
                    .send()
                    .await
                    .expect("the HTTP server answers");
                let status = response.status().as_u16();
                let body = response.text().await.unwrap_or_default();
                assert!(status < 500, "{status} {body}");
                if status != 202 {
                    assert!(body.contains("\"jsonrpc\""), "{status}: {body}");
                }
            });
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the fuzz run took {:?}",
        started.elapsed()
    );
    let mut raw = raw.into_inner();
    runtime.block_on(async {
        raw.send(r#"{"jsonrpc":"2.0","id":"last","method":"tools/list"}"#)
            .await;
        assert_eq!(raw.next().await["id"], "last", "the stdio server is alive");
        raw.stop().await;
        server.kill().await;
    });
    for dir in [stdio_dir.path(), http_dir.path()] {
        let events = stored_events(dir);
        for event in &events {
            assert_eq!(
                event["outcome"]["status"], "rejected",
                "only rejected calls: {event}"
            );
            // Kept in the caller's session, which none of them started.
            assert_eq!(event["facts"], json!([]), "no session started: {event}");
        }
        let (report, code) = runtime.block_on(verify_json(dir));
        assert_eq!(
            (code, report["problems"].clone()),
            (Some(0), json!([])),
            "{report}"
        );
    }
}

#[tokio::test]
async fn http_calls_of_one_session_take_effect_in_arrival_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = HttpServer::start(dir.path(), &[]).await;
    let http = reqwest::Client::new();
    let session = http_session(&http, &server.url).await;
    let request = |id: u32, name: &str, arguments: Value| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": name, "arguments": arguments}});
        post(&http, &server.url, body.to_string())
            .header("mcp-session-id", &session)
            .send()
    };
    for i in 1..=10u32 {
        let text = format!("httpmark{i:02}end");
        // The thought's response headers come back before its handler runs (SSE): the search
        // is sent while the thought may still be on its way to the ledger.
        let thought = request(
            i * 2,
            "sequentialthinking",
            json!({"thought": text, "thoughtNumber": i, "totalThoughts": 10,
                   "nextThoughtNeeded": i < 10}),
        )
        .await
        .expect("thought");
        let search = request(i * 2 + 1, "search", json!({"query": text}))
            .await
            .expect("search");
        let (_, search) = (thought.text().await, search.text().await.expect("body"));
        let data = search
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .find(|data| data.starts_with('{'))
            .unwrap_or_else(|| panic!("an SSE answer: {search}"));
        let answer: Value = serde_json::from_str(data).expect("JSON-RPC answer");
        let matches = &answer["result"]["structuredContent"]["matches"];
        assert_eq!(
            matches.as_array().map(Vec::len),
            Some(1),
            "search {i} finds the thought sent before it: {answer}"
        );
    }
    server.kill().await;
}

/// A 2026-07-28 request line over stdio: `method` with `params` and the revision's `_meta`.
fn line_2026(id: u64, method: &str, mut params: Value) -> String {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"}
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

#[tokio::test]
async fn stdio_2026_a_toolset_change_is_told_once_on_the_listen_stream() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut raw = RawStdio::start(dir.path()).await;
    raw.send(&line_2026(
        1,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    ))
    .await;
    let ack = raw.next().await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    raw.send(&line_2026(
        2,
        "tools/call",
        json!({"name": "enable_toolset", "arguments": {"toolset": "audit"}}),
    ))
    .await;
    // Everything the server writes until the call is answered and one list_changed arrived,
    // then until a ping sent after both is answered: a second notice would be among them.
    let mut seen = Vec::new();
    let answered = |seen: &[Value], id: u64| seen.iter().any(|m| m["id"] == id);
    let told = |seen: &[Value]| {
        seen.iter()
            .filter(|m| m["method"] == "notifications/tools/list_changed")
            .count()
    };
    while !(answered(&seen, 2) && told(&seen) >= 1) {
        seen.push(raw.next().await);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    raw.send(&line_2026(3, "ping", json!({}))).await;
    while !answered(&seen, 3) {
        seen.push(raw.next().await);
    }
    let answer = seen.iter().find(|m| m["id"] == 2).expect("answered");
    assert_eq!(
        answer["result"]["structuredContent"]["changed"],
        json!(true),
        "{answer}"
    );
    assert_eq!(told(&seen), 1, "told once, on the listen stream: {seen:#?}");
    let notice = seen
        .iter()
        .find(|m| m["method"] == "notifications/tools/list_changed")
        .expect("told");
    assert_eq!(
        notice["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(1),
        "{notice}"
    );
    raw.stop().await;
}

#[tokio::test]
async fn an_oversized_message_is_answered_with_its_id_on_both_transports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let thought = "x".repeat(5 * 1024 * 1024);
    let call = |id: u32| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "sequentialthinking",
            "arguments": {"thought": thought, "thoughtNumber": 1, "totalThoughts": 1,
                          "nextThoughtNeeded": false}}})
        .to_string()
    };
    let mut raw = RawStdio::initialized(dir.path()).await;
    raw.send(&call(7)).await;
    let answer = raw.next().await;
    assert_eq!(
        (answer["id"].clone(), error_code(&answer)),
        (json!(7), -32600),
        "{}",
        answer.to_string().chars().take(300).collect::<String>()
    );
    raw.stop().await;

    let other = tempfile::tempdir().expect("tempdir");
    let server = HttpServer::start(other.path(), &[]).await;
    let http = reqwest::Client::new();
    let (status, body) = json_error(
        post(&http, &server.url, call(8))
            .send()
            .await
            .expect("post"),
    )
    .await;
    assert_eq!(
        (status, body["id"].clone(), body["error"]["code"].clone()),
        (413, json!(8), json!(-32600))
    );
    server.kill().await;
}
