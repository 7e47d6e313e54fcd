//! A slow model stalls nobody else: CLIENTS stateless HTTP clients append durable
//! `sequentialthinking` calls back to back, first alone (idle), then while another client's
//! `confer` calls wait DELAY on a slow model endpoint, one after another for the whole phase,
//! then alone again (what the phase order and the grown ledger cost, apart from the model).
//! Each client thinks in sessions of CHAIN thoughts, closing each with `reset`.
//! The model calls are taken before their decision (calls in two phases), so the other clients'
//! p99 should stay within 2× of the idle p99.
//!
//! The slow endpoint is a loopback HTTP server that holds every request for DELAY, then answers
//! with the real local model's answer to those exact request bytes (llama.cpp's server from PyPI
//! `xllamacpp` serving SmolLM2-135M-Instruct, started as the model tests start it:
//! `THINKLEDGER_TEST_LLM_GGUF` and `THINKLEDGER_TEST_PYTHON`): the first time it forwards them
//! and records the answer, afterwards it replays that recording, so the model's own CPU work
//! (which the 2 cores would share with everything measured) happens once, in a warm-up call,
//! and what the loaded phase measures is the wait alone. Each `confer` call comes from a new
//! principal (`--principal-header`), so it asks the same question in a new session: the same
//! bytes. Nothing is invented. Without the model the bench says so and stops.
//!
//! The server is the release binary, `serve --http 127.0.0.1:0 --stateless`, with
//! `THINKLEDGER_MODEL_PROVIDER_URL` pointing at the slow endpoint. Each run reports the
//! thinking calls' p50/p99 per phase and how many `confer` calls overlapped the loaded phase;
//! the report gives the median of RUNS runs with min–max. After every run the ledger is
//! verified: intact, with every acknowledged call in it.
//!
//! `cargo bench --bench slow_model` (full run: 5 runs, 16 clients, 5 s delay, phases of 12 s);
//! under `cargo test` a smoke run. Overrides: THINKLEDGER_BENCH_RUNS, THINKLEDGER_BENCH_CLIENTS,
//! THINKLEDGER_BENCH_DELAY_MS, THINKLEDGER_BENCH_MILLIS (per phase).

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use common::{
    HttpNode, across, percentile, rpc_response, start_local_llm, stateless_call_body, us,
};
use serde_json::{Value, json};

/// Thoughts per session before a client starts a new one.
const CHAIN: u32 = 50;

/// The header the server takes each request's principal from: every thinking client is its own
/// principal, and every `confer` call a new one, so each asks in a new session the very same
/// question (whose real answer the slow endpoint recorded once).
const PRINCIPAL_HEADER: &str = "x-forwarded-user";

/// The real model's answers, by the exact request bytes they answered.
type Recorded = Arc<Mutex<HashMap<Vec<u8>, (StatusCode, Bytes)>>>;

/// The slow endpoint's state: where to forward, how long to hold each request, and the real
/// model's answers recorded so far.
#[derive(Clone)]
struct Slow {
    upstream: String,
    delay: Duration,
    http: reqwest::Client,
    recorded: Recorded,
}

/// Holds the request for the delay; then answers with the real model's answer to these exact
/// bytes, recorded the first time they were forwarded (so the model's own CPU work, which the
/// 2 cores would share with everyone, happens once, during the warm-up, and what is measured
/// is the wait alone).
async fn slow_forward(
    State(slow): State<Slow>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    tokio::time::sleep(slow.delay).await;
    let known = slow
        .recorded
        .lock()
        .ok()
        .and_then(|r| r.get(body.as_ref()).cloned());
    if let Some((status, bytes)) = known {
        return (status, [("content-type", "application/json")], bytes).into_response();
    }
    let mut request = slow
        .http
        .post(format!("{}{}", slow.upstream, uri.path()))
        .body(body.clone());
    if let Some(ct) = headers.get("content-type") {
        request = request.header("content-type", ct.clone());
    }
    match request.send().await {
        Ok(response) => {
            let status =
                StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
            let bytes = response.bytes().await.unwrap_or_default();
            if status.is_success()
                && let Ok(mut r) = slow.recorded.lock()
            {
                r.insert(body.to_vec(), (status, bytes.clone()));
            }
            (status, [("content-type", "application/json")], bytes).into_response()
        }
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

async fn start_slow_endpoint(upstream: &str, delay: Duration) -> String {
    let slow = Slow {
        upstream: upstream.to_owned(),
        delay,
        http: reqwest::Client::new(),
        recorded: Recorded::default(),
    };
    let app = Router::new()
        .fallback(axum::routing::post(slow_forward))
        .with_state(slow);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the slow endpoint");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}/v1")
}

/// The server under test, with the slow endpoint as its model provider.
fn start_server(data_dir: &Path, provider: &str) -> HttpNode {
    HttpNode::start(
        data_dir,
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--stateless",
            "--toolsets",
            "all",
            "--principal-header",
            PRINCIPAL_HEADER,
        ],
        &[
            ("THINKLEDGER_MODEL_PROVIDER_URL", provider),
            ("THINKLEDGER_MODEL", "smollm2"),
            ("THINKLEDGER_MODEL_MAX_TOKENS", "8"),
        ],
    )
}

/// One stateless call of `principal`; its answer's result (panics on a transport or protocol
/// failure).
async fn post(
    http: &reqwest::Client,
    url: &str,
    principal: &str,
    tool: &str,
    id: u64,
    arguments: Value,
) -> Value {
    let response = http
        .post(url)
        .header(PRINCIPAL_HEADER, principal)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(stateless_call_body(id, tool, arguments))
        .send()
        .await
        .expect("POST tools/call");
    let status = response.status();
    let text = response.text().await.expect("response body");
    assert!(status.is_success(), "HTTP {status}: {text}");
    rpc_response(&text)["result"].clone()
}

/// CLIENTS thinking clients for `duration`: every call's latency.
async fn thinkers(
    http: &reqwest::Client,
    url: &str,
    clients: usize,
    duration: Duration,
    calls: &Arc<AtomicU64>,
) -> Vec<Duration> {
    let deadline = Instant::now() + duration;
    let mut tasks = Vec::new();
    for client in 0..clients {
        let (http, url, calls) = (http.clone(), url.to_owned(), calls.clone());
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut session: Option<String> = None;
            let mut number = 0u32;
            let mut id = u64::try_from(client).unwrap_or(0) * 1_000_000;
            while Instant::now() < deadline {
                number = number % CHAIN + 1;
                if number == 1 && session.is_some() {
                    // Close the finished session; the next thought starts a new one.
                    id += 1;
                    let principal = format!("thinker-{client}");
                    let reset = json!({"confirm": true, "sessionId": session.take()});
                    let result = post(&http, &url, &principal, "reset", id, reset).await;
                    assert!(result["isError"] != json!(true), "reset failed: {result}");
                    calls.fetch_add(1, Ordering::Relaxed);
                }
                id += 1;
                let mut arguments = common::thought_args(number, CHAIN);
                if let Some(s) = &session {
                    arguments["sessionId"] = json!(s);
                }
                let start = Instant::now();
                let principal = format!("thinker-{client}");
                let result =
                    post(&http, &url, &principal, "sequentialthinking", id, arguments).await;
                samples.push(start.elapsed());
                assert!(result["isError"] != json!(true), "call failed: {result}");
                calls.fetch_add(1, Ordering::Relaxed);
                if session.is_none() {
                    session = result["structuredContent"]["sessionId"]
                        .as_str()
                        .map(str::to_owned);
                }
            }
            samples
        }));
    }
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await.expect("client task"));
    }
    samples
}

struct Run {
    idle_p50: f64,
    idle_p99: f64,
    after_p50: f64,
    after_p99: f64,
    slow_p50: f64,
    slow_p99: f64,
    /// `confer` calls that completed during the loaded phase, and their mean latency.
    model_calls: u64,
    model_mean_ms: f64,
}

fn p(samples: &[Duration], q: f64) -> f64 {
    let mut v: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    v.sort_by(f64::total_cmp);
    percentile(&v, q)
}

async fn run_once(provider: &str, clients: usize, phase: Duration) -> Run {
    let dir = common::temp_data_dir();
    let server = start_server(dir.path(), provider);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(clients + 1)
        .build()
        .expect("HTTP client");
    let calls = Arc::new(AtomicU64::new(0));
    // Warm-up: the real model answers the question once (the slow endpoint records it).
    let warm = post(
        &http,
        &server.url,
        "model-caller-warm-up",
        "confer",
        1,
        json!({"message": "Say hello.", "temperature": 0, "max_tokens": 8}),
    )
    .await;
    assert!(warm["isError"] != json!(true), "confer failed: {warm}");
    calls.fetch_add(1, Ordering::Relaxed);
    let idle = thinkers(&http, &server.url, clients, phase, &calls).await;

    let stop = Arc::new(AtomicBool::new(false));
    let model = {
        let (http, url, stop, calls) = (
            http.clone(),
            server.url.clone(),
            stop.clone(),
            calls.clone(),
        );
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut id = 9_000_000_000u64;
            while !stop.load(Ordering::Relaxed) {
                id += 1;
                let start = Instant::now();
                let result = post(
                    &http,
                    &url,
                    &format!("model-caller-{id}"),
                    "confer",
                    id,
                    json!({"message": "Say hello.", "temperature": 0, "max_tokens": 8}),
                )
                .await;
                latencies.push(start.elapsed());
                assert!(result["isError"] != json!(true), "confer failed: {result}");
                calls.fetch_add(1, Ordering::Relaxed);
            }
            latencies
        })
    };
    // Let the first model call reach the slow endpoint before the phase starts.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let slow = thinkers(&http, &server.url, clients, phase, &calls).await;
    stop.store(true, Ordering::Relaxed);
    let model = model.await.expect("model task");
    // Idle again: what the phase order and the grown ledger cost, apart from the model call.
    let after = thinkers(&http, &server.url, clients, phase, &calls).await;
    server.stop();
    let events = calls.load(Ordering::Relaxed);
    let ledger_dir = thinkledger::server::ledger_dir(dir.path());
    tokio::task::spawn_blocking(move || common::verify_ledger_events(&ledger_dir, events))
        .await
        .expect("verify");
    let n = u64::try_from(model.len()).unwrap_or(u64::MAX);
    Run {
        idle_p50: p(&idle, 50.0),
        idle_p99: p(&idle, 99.0),
        after_p50: p(&after, 50.0),
        after_p99: p(&after, 99.0),
        slow_p50: p(&slow, 50.0),
        slow_p99: p(&slow, 99.0),
        model_calls: n,
        model_mean_ms: model.iter().map(Duration::as_secs_f64).sum::<f64>() * 1e3
            / model.len().max(1) as f64,
    }
}

fn main() {
    let full = common::full_mode();
    let runs = common::env_usize("RUNS", if full { 5 } else { 1 });
    let clients = common::env_usize("CLIENTS", if full { 16 } else { 4 });
    let delay_ms = common::env_usize("DELAY_MS", if full { 5_000 } else { 1_000 });
    let millis = common::env_usize("MILLIS", if full { 12_000 } else { 1_500 });
    let Some(llm) = start_local_llm() else {
        println!(
            "slow_model: skipped: set THINKLEDGER_TEST_LLM_GGUF (and THINKLEDGER_TEST_PYTHON) to \
             run it against the real local model (.ci/run installs it)"
        );
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let delay = Duration::from_millis(u64::try_from(delay_ms).unwrap_or(5_000));
        let provider = start_slow_endpoint(&llm.base_url, delay).await;
        println!("{}", common::machine());
        println!(
            "slow_model: {clients} thinking clients (stateless HTTP, durable), phases of {millis} \
             ms, model endpoint delay {delay_ms} ms, {runs} run(s); load {}",
            common::load()
        );
        let phase = Duration::from_millis(u64::try_from(millis).unwrap_or(1_500));
        let mut all = Vec::new();
        for run in 1..=runs {
            let r = run_once(&provider, clients, phase).await;
            println!(
                "  run {run}: idle p50 {} p99 {} | with a slow model call p50 {} p99 {} ({} \
                 confer calls, mean {:.0} ms) | idle again p50 {} p99 {} | p99 ratio {:.2}",
                us(r.idle_p50),
                us(r.idle_p99),
                us(r.slow_p50),
                us(r.slow_p99),
                r.model_calls,
                r.model_mean_ms,
                us(r.after_p50),
                us(r.after_p99),
                r.slow_p99 / r.idle_p99
            );
            all.push(r);
        }
        let col = |f: fn(&Run) -> f64| all.iter().map(f).collect::<Vec<_>>();
        println!("median (min–max across runs):");
        println!("  idle p50 {}", across(&col(|r| r.idle_p50), us));
        println!("  idle p99 {}", across(&col(|r| r.idle_p99), us));
        println!(
            "  with a slow model call p50 {}",
            across(&col(|r| r.slow_p50), us)
        );
        println!(
            "  with a slow model call p99 {}",
            across(&col(|r| r.slow_p99), us)
        );
        println!("  idle again p50 {}", across(&col(|r| r.after_p50), us));
        println!("  idle again p99 {}", across(&col(|r| r.after_p99), us));
        println!(
            "  p99 ratio {}",
            across(&col(|r| r.slow_p99 / r.idle_p99), |v| format!("{v:.2}"))
        );
        assert!(
            all.iter().all(|r| r.model_calls >= 1),
            "a model call overlapped every loaded phase"
        );
    });
}
