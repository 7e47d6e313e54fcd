//! Dynamic toolsets over a real client: what a client that passes no options sees (within the
//! 32 KB budget), finding the other tools through `list_toolsets`, enabling `deliberation` at
//! run time with `notifications/tools/list_changed`, and a disabled set's tool refused, naming
//! its set, and recorded — over stdio, an HTTP session and stateless HTTP, and a 2026-07-28
//! `subscriptions/listen` stream told of its principal's change.

use std::sync::Arc;

use rmcp::ClientHandler;
use rmcp::model::ListToolsResult;
use rmcp::service::{NotificationContext, RoleClient, RunningService, ServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use tokio::process::Command;
use tokio::sync::Notify;

use super::names;
use crate::common::*;

/// The `tools/list` budget of a client that passes no options.
const BUDGET: usize = 32 * 1024;

/// The tools a client that passes no options is offered.
const DEFAULT_TOOLS: &[&str] = &[
    "sequentialthinking",
    "reset",
    "search",
    "tag",
    "export",
    "visualize",
    "list_toolsets",
    "enable_toolset",
    "disable_toolset",
];

/// A client that counts `notifications/tools/list_changed`.
#[derive(Clone, Default)]
struct ListWatcher(Arc<Notify>);

impl ClientHandler for ListWatcher {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0.notify_one();
    }
}

type WatchingClient = RunningService<RoleClient, ListWatcher>;

/// `thinkledger serve` with no options over stdio, with a client that watches the tool list.
async fn stdio_with_no_options(
    data_dir: &std::path::Path,
) -> (WatchingClient, ListWatcher, tokio::process::Child) {
    let mut child = Command::new(BIN)
        .arg("--data-dir")
        .arg(data_dir)
        .arg("serve")
        .env_remove("THINKLEDGER_DATA_DIR")
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn thinkledger serve");
    let stdout = child.stdout.take().expect("stdout");
    let stdin = child.stdin.take().expect("stdin");
    let watcher = ListWatcher::default();
    let client = within("stdio handshake", watcher.clone().serve((stdout, stdin)))
        .await
        .expect("handshake");
    (client, watcher, child)
}

/// Compact JSON bytes of the `tools/list` result.
fn list_bytes(tools: Vec<rmcp::model::Tool>) -> usize {
    serde_json::to_vec(&ListToolsResult::with_all_items(tools))
        .expect("serialize")
        .len()
}

async fn call_watching(client: &WatchingClient, tool: &str, arguments: Value) -> Value {
    let params = rmcp::model::CallToolRequestParams::new(tool.to_owned()).with_arguments(
        arguments
            .as_object()
            .cloned()
            .expect("arguments are an object"),
    );
    let result = within(tool, client.call_tool(params))
        .await
        .expect("tools/call answered");
    if result.is_error == Some(true) {
        return rejected(&result);
    }
    ok(&result)
}

#[tokio::test]
async fn a_client_with_no_options_sees_a_small_list_finds_every_tool_and_enables_deliberation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (client, watcher, mut child) = stdio_with_no_options(dir.path()).await;
    let info = client.peer_info().expect("initialized");
    let tools_capability = info.capabilities.tools.as_ref().expect("tools capability");
    assert_eq!(tools_capability.list_changed, Some(true));

    let tools = within("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    assert_eq!(names(&tools), DEFAULT_TOOLS);
    let entries: usize = tools
        .iter()
        .map(|t| serde_json::to_vec(t).expect("serialize").len())
        .sum();
    let bytes = list_bytes(tools);
    assert!(bytes <= BUDGET, "default tools/list is {bytes} bytes");

    // Every tool is reachable through list_toolsets.
    let listed = call_watching(&client, "list_toolsets", json!({})).await;
    let sets = listed["toolsets"].as_array().expect("toolsets");
    let every: Vec<&str> = sets
        .iter()
        .flat_map(|s| s["tools"].as_array().expect("tools").iter())
        .filter_map(Value::as_str)
        .collect();
    for tool in super::ALL_TOOLS {
        assert!(every.contains(tool), "{tool} is in no toolset: {listed}");
    }
    let deliberation = sets
        .iter()
        .find(|s| s["name"] == "deliberation")
        .expect("deliberation set");
    assert_eq!(deliberation["enabled"], false);
    assert!(deliberation["bytes"].as_u64().expect("bytes") > 0);
    assert_eq!(
        listed["enabledBytes"].as_u64(),
        Some(u64::try_from(entries).expect("bytes")),
        "enabledBytes is what the enabled tools' definitions weigh"
    );

    // A disabled set's tool is refused, naming its set, and recorded.
    let refused = call_watching(&client, "consensus_answer", json!({})).await;
    assert_eq!(refused["code"], "tool_disabled", "{refused}");
    let suggestion = refused["suggestion"].as_str().expect("suggestion");
    assert!(
        suggestion.contains("enable_toolset") && suggestion.contains("deliberation"),
        "{suggestion}"
    );

    // Enabling it changes this connection's list, announced by list_changed.
    let enabled = call_watching(
        &client,
        "enable_toolset",
        json!({"toolset": "deliberation"}),
    )
    .await;
    assert_eq!(enabled["changed"], true, "{enabled}");
    assert_eq!(enabled["toolset"]["enabled"], true);
    within("notifications/tools/list_changed", watcher.0.notified()).await;
    let tools = within("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    assert!(names(&tools).iter().any(|n| n == "consensus_answer"));
    let started = call_watching(&client, "start_deliberation", json!({"goal": "pick a db"})).await;
    assert!(started["session_id"].is_string(), "{started}");

    // Enabling again changes nothing; an unknown set and the meta set are refused clearly.
    let again = call_watching(
        &client,
        "enable_toolset",
        json!({"toolset": "deliberation"}),
    )
    .await;
    assert_eq!(again["changed"], false);
    let unknown = call_watching(&client, "enable_toolset", json!({"toolset": "nope"})).await;
    assert_eq!(unknown["code"], "unknown_toolset");
    let meta = call_watching(&client, "disable_toolset", json!({"toolset": "toolsets"})).await;
    assert_eq!(meta["code"], "toolset_required");

    // Disabling takes the tools out again.
    let disabled = call_watching(
        &client,
        "disable_toolset",
        json!({"toolset": "deliberation"}),
    )
    .await;
    assert_eq!(disabled["changed"], true);
    within("notifications/tools/list_changed", watcher.0.notified()).await;
    let tools = within("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    assert_eq!(names(&tools), DEFAULT_TOOLS);

    let _ = within("client shutdown", client.cancel()).await;
    let status = within("server exit", child.wait()).await.expect("wait");
    assert!(status.success(), "{status}");
    // Every call, the toolset ones included, appended one event.
    let events = stored_events(dir.path());
    let tools_called: Vec<&str> = events
        .iter()
        .filter_map(|e| e["call"]["tool"].as_str())
        .collect();
    assert_eq!(
        tools_called,
        [
            "list_toolsets",
            "consensus_answer",
            "enable_toolset",
            "start_deliberation",
            "enable_toolset",
            "enable_toolset",
            "disable_toolset",
            "disable_toolset",
        ]
    );
    assert_eq!(events[1]["outcome"]["error"]["code"], "tool_disabled");
    assert!(
        events[0]["sessionId"].is_null(),
        "toolset calls start no session"
    );
    assert_intact(dir.path(), 8).await;
}

#[tokio::test]
async fn http_sessions_enable_sets_each_for_itself_and_stateless_requests_per_principal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = HttpServer::start_as_given(dir.path(), &[]).await;
    let alice = server.connect().await;
    let bob = server.connect().await;
    ok(&call(&alice, "enable_toolset", json!({"toolset": "audit"})).await);
    assert!(
        listed_names(&alice)
            .await
            .contains(&"diff_sessions".to_owned())
    );
    assert_eq!(
        listed_names(&bob).await,
        DEFAULT_TOOLS,
        "bob's session is his own"
    );
    server.kill().await;

    // Stateless: no connection, so the choice is the principal's, for all its requests.
    let dir = tempfile::tempdir().expect("tempdir");
    let server = HttpServer::start_as_given(dir.path(), &["--stateless"]).await;
    let first = server.connect().await;
    ok(&call(&first, "enable_toolset", json!({"toolset": "deliberation"})).await);
    let second = ().serve(StreamableHttpClientTransport::from_uri(server.url.clone()));
    let second = within("HTTP handshake", second).await.expect("handshake");
    assert!(
        listed_names(&second)
            .await
            .contains(&"consensus_answer".to_owned())
    );
    ok(&call(
        &second,
        "disable_toolset",
        json!({"toolset": "deliberation"}),
    )
    .await);
    assert_eq!(listed_names(&first).await, DEFAULT_TOOLS);
    server.kill().await;
}

async fn listed_names(client: &Client) -> Vec<String> {
    names(
        &within("tools/list", client.list_all_tools())
            .await
            .expect("tools/list"),
    )
}

/// The `_meta` every 2026-07-28 request carries.
fn meta_2026() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "listen-test", "version": "1"}
    })
}

/// A raw 2026-07-28 request: its method (and tool name) also in the headers, as the revision
/// requires.
fn request_2026(
    http: &reqwest::Client,
    url: &str,
    method: &str,
    name: Option<&str>,
    id: u64,
    mut params: Value,
) -> reqwest::RequestBuilder {
    params["_meta"] = meta_2026();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    request.body(body.to_string())
}

/// Reads SSE `data:` lines from `response` until one holds `wanted`; every JSON message seen.
async fn frames_until(response: &mut reqwest::Response, wanted: &str) -> Vec<Value> {
    let mut frames = Vec::new();
    let mut buffer = String::new();
    while !frames
        .iter()
        .any(|f: &Value| f["method"] == wanted || f.to_string().contains(wanted))
    {
        let chunk = within(wanted, response.chunk())
            .await
            .expect("read the stream")
            .unwrap_or_else(|| panic!("the stream ended before {wanted}: {frames:?}"));
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find('\n') {
            let line: String = buffer.drain(..=end).collect();
            if let Some(data) = line.trim().strip_prefix("data:")
                && let Ok(frame) = serde_json::from_str::<Value>(data.trim())
            {
                frames.push(frame);
            }
        }
    }
    frames
}

#[tokio::test]
async fn a_stateless_listen_stream_hears_its_principals_toolset_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = HttpServer::start_as_given(dir.path(), &["--stateless"]).await;
    let http = reqwest::Client::new();
    let mut stream = within(
        "subscriptions/listen",
        request_2026(
            &http,
            &server.url,
            "subscriptions/listen",
            None,
            1,
            json!({"notifications": {"toolsListChanged": true}}),
        )
        .send(),
    )
    .await
    .expect("listen");
    assert_eq!(stream.status(), 200);
    let frames = frames_until(&mut stream, "notifications/subscriptions/acknowledged").await;
    assert_eq!(
        frames[0]["method"],
        "notifications/subscriptions/acknowledged"
    );

    let enabled = within(
        "enable_toolset",
        request_2026(
            &http,
            &server.url,
            "tools/call",
            Some("enable_toolset"),
            2,
            json!({"name": "enable_toolset", "arguments": {"toolset": "audit"}}),
        )
        .send(),
    )
    .await
    .expect("tools/call");
    let answer = within("answer", enabled.text()).await.expect("body");
    assert!(answer.contains("\"changed\":true"), "{answer}");

    let frames = frames_until(&mut stream, "notifications/tools/list_changed").await;
    let changed = frames
        .iter()
        .find(|f| f["method"] == "notifications/tools/list_changed")
        .expect("list_changed");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(1),
        "{changed}"
    );
    server.kill().await;
}
