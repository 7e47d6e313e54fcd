//! Append throughput under concurrency: how well the single writer's group commit turns many
//! concurrent durable calls into few fsyncs.
//!
//! (a) In process: a ledger opened with `open_ledger` on a sled store in a temp dir (wrapped to
//!     count syncs and batch sizes), C tokio tasks each submitting `sequentialthinking`
//!     commands for a fixed time, each task its own session (a new one every 50 thoughts).
//! (b) Over HTTP: the built binary serving Streamable HTTP on 127.0.0.1:0, driven by C
//!     concurrent MCP sessions (rmcp's Streamable HTTP client), each making calls one after
//!     another for a fixed time (a `reset` every 50 thoughts starts the client's next chain).
//! (c) Stateless HTTP: the built binary serving `--stateless`, driven by C concurrent plain
//!     HTTP/1.1 clients (reqwest, keep-alive) each POSTing 2026-07-28 `tools/call` requests
//!     (`_meta` with the protocol version, no session header) one after another, as a load
//!     generator would. Each client names its own session handle after its first answer.
//!
//! C = 1, 4, 16, 64. Each configuration runs RUNS times on a fresh ledger; the report gives
//! the median with min–max across runs. After every run the ledger is verified: intact, with
//! exactly the acknowledged number of events.
//!
//! `cargo bench --bench group_commit` (full run); under `cargo test` it does a smoke run.
//! Overrides: THINKLEDGER_BENCH_RUNS, THINKLEDGER_BENCH_MILLIS (per level and run),
//! THINKLEDGER_BENCH_PART (`inproc`, `http` or `stateless` to run one part only), THINKLEDGER_BENCH_LEVELS
//! (e.g. `1,64`), THINKLEDGER_BENCH_CHAIN (thoughts per session, default 50).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{HttpNode, Latency, across, rate, us};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use thinkledger::app::{App, AppConfig, Command as AppCommand};
use thinkledger::effects::{Effects, SystemEffects};
use thinkledger::events::{Actor, Event, OutcomeStatus, SessionId, TextLookup};
use thinkledger::ledger::{
    Batch, Decider, Draft, LedgerError, LedgerMeta, LogView, SledStore, Store, TextRecord,
    WriterConfig, open_ledger,
};

/// Thoughts per session before a client starts a new one.
const CHAIN: u32 = 50;

// ---------------------------------------------------------------------------------------------
// (a) in process

#[derive(Default)]
struct Counters {
    syncs: AtomicU64,
    batches: AtomicU64,
    events: AtomicU64,
    largest_batch: AtomicU64,
    /// Time spent in `append_batch` (sled transaction) and in `sync` (flush + fdatasync).
    stage_nanos: AtomicU64,
    sync_nanos: AtomicU64,
    /// Time spent in the application's `decide` and `apply` (on the writer thread).
    decide_nanos: AtomicU64,
    apply_nanos: AtomicU64,
}

/// The application, timed: the writer calls it once per command and once per event.
struct TimedApp {
    inner: App,
    counters: Arc<Counters>,
}

impl Decider for TimedApp {
    type Command = <App as Decider>::Command;
    type Query = <App as Decider>::Query;
    type Answer = <App as Decider>::Answer;
    type View = <App as Decider>::View;

    fn prepared_at(&self, command: &Self::Command) -> chrono::DateTime<chrono::Utc> {
        self.inner.prepared_at(command)
    }
    fn over_time(
        &self,
        command: &Self::Command,
        log: &dyn LogView,
        elapsed: Duration,
        draft: Draft,
    ) -> Draft {
        self.inner.over_time(command, log, elapsed, draft)
    }
    fn decide(&self, command: &Self::Command, log: &dyn LogView) -> Draft {
        let start = Instant::now();
        let draft = self.inner.decide(command, log);
        self.counters
            .decide_nanos
            .fetch_add(nanos(start.elapsed()), Ordering::Relaxed);
        draft
    }
    fn failed(&self, command: &Self::Command, reason: &str) -> Draft {
        self.inner.failed(command, reason)
    }
    fn apply(&mut self, event: &Event, texts: &TextLookup<'_>) {
        let start = Instant::now();
        self.inner.apply(event, texts);
        self.counters
            .apply_nanos
            .fetch_add(nanos(start.elapsed()), Ordering::Relaxed);
    }
    fn derive(&mut self) {
        self.inner.derive();
    }
    fn close(&mut self) {
        self.inner.close();
    }
    fn view(&self) -> Self::View {
        self.inner.view()
    }
    fn answer(view: &Self::View, query: Self::Query) -> Self::Answer {
        App::answer(view, query)
    }
}

/// A [`SledStore`] that counts what the writer asks of it.
struct CountingStore {
    inner: SledStore,
    counters: Arc<Counters>,
}

impl Store for CountingStore {
    fn meta(&self) -> Result<Option<LedgerMeta>, LedgerError> {
        self.inner.meta()
    }
    fn init_meta(&mut self, meta: &LedgerMeta) -> Result<(), LedgerError> {
        self.inner.init_meta(meta)
    }
    fn append_batch(&mut self, batch: &Batch) -> Result<(), LedgerError> {
        let n = batch.events.len() as u64;
        self.counters.batches.fetch_add(1, Ordering::Relaxed);
        self.counters.events.fetch_add(n, Ordering::Relaxed);
        self.counters.largest_batch.fetch_max(n, Ordering::Relaxed);
        let start = Instant::now();
        let result = self.inner.append_batch(batch);
        self.counters
            .stage_nanos
            .fetch_add(nanos(start.elapsed()), Ordering::Relaxed);
        result
    }
    fn sync(&mut self) -> Result<(), LedgerError> {
        self.counters.syncs.fetch_add(1, Ordering::Relaxed);
        let start = Instant::now();
        let result = self.inner.sync();
        self.counters
            .sync_nanos
            .fetch_add(nanos(start.elapsed()), Ordering::Relaxed);
        result
    }
    fn last_seq(&self) -> Result<Option<u64>, LedgerError> {
        self.inner.last_seq()
    }
    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>, LedgerError> {
        self.inner.event_bytes(seq)
    }
    fn events_from(
        &self,
        from: u64,
    ) -> Box<dyn Iterator<Item = Result<(u64, Vec<u8>), LedgerError>> + '_> {
        self.inner.events_from(from)
    }
    fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError> {
        self.inner.session_seqs(session)
    }
    fn text(&self, commitment: &[u8; 32]) -> Result<Option<TextRecord>, LedgerError> {
        self.inner.text(commitment)
    }

    fn texts_in_file_order(&self) -> Result<thinkledger::ledger::store::TextIter<'_>, LedgerError> {
        self.inner.texts_in_file_order()
    }
    fn erase_texts(&mut self, commitments: &[[u8; 32]]) -> Result<(), LedgerError> {
        self.inner.erase_texts(commitments)
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Thoughts per session before a client starts a new one (THINKLEDGER_BENCH_CHAIN).
fn chain() -> u32 {
    u32::try_from(common::env_usize("CHAIN", CHAIN as usize))
        .unwrap_or(CHAIN)
        .max(1)
}

struct Measured {
    per_s: f64,
    latency: Latency,
    /// CPU time per call, in µs, of this process (in-process: everything; HTTP: the clients)
    /// and of the server process (HTTP only).
    own_cpu_us: f64,
    server_cpu_us: Option<f64>,
    /// Where the writer's time went (in-process only).
    breakdown: Option<Breakdown>,
}

/// What the counting wrappers saw on the writer thread during one in-process run.
#[derive(Debug, Clone, Copy)]
struct Breakdown {
    /// Events per sync (group commit factor).
    events_per_sync: f64,
    largest_batch: u64,
    /// Mean µs per batch in `append_batch` (the sled transaction) and in `sync` (flush +
    /// fdatasync).
    stage_us: f64,
    sync_us: f64,
    /// Mean µs per event in the application's `decide` and `apply`.
    decide_us: f64,
    apply_us: f64,
    /// Share of the run's wall time the writer spent in those four (the rest is hashing,
    /// canonical JSON, channel hand-offs and waiting for work).
    busy: f64,
}

impl Breakdown {
    fn of(c: &Counters, elapsed: Duration) -> Self {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64;
        let events = load(&c.events).max(1.0);
        let batches = load(&c.batches).max(1.0);
        let syncs = load(&c.syncs).max(1.0);
        let total = load(&c.stage_nanos)
            + load(&c.sync_nanos)
            + load(&c.decide_nanos)
            + load(&c.apply_nanos);
        Self {
            events_per_sync: events / syncs,
            largest_batch: c.largest_batch.load(Ordering::Relaxed),
            stage_us: load(&c.stage_nanos) / 1e3 / batches,
            sync_us: load(&c.sync_nanos) / 1e3 / syncs,
            decide_us: load(&c.decide_nanos) / 1e3 / events,
            apply_us: load(&c.apply_nanos) / 1e3 / events,
            busy: total / 1e9 / elapsed.as_secs_f64(),
        }
    }
}

fn bench_actor() -> Actor {
    Actor {
        principal: "local".into(),
        transport: "bench".into(),
        client_name: Some("thinkledger-bench".into()),
        client_version: None,
        role: Default::default(),
        user_ids: Vec::new(),
    }
}

async fn inproc_once(concurrency: usize, duration: Duration) -> Measured {
    let dir = common::temp_data_dir();
    let ledger_dir = dir.path().join("ledger");
    let counters = Arc::new(Counters::default());
    let store = CountingStore {
        inner: SledStore::open(&ledger_dir).expect("open sled"),
        counters: counters.clone(),
    };
    let app = TimedApp {
        inner: App::new(AppConfig::default()),
        counters: counters.clone(),
    };
    let ledger = open_ledger(store, app, WriterConfig::default()).expect("open ledger");
    let cpu = common::cpu_seconds("self");
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let ledger = ledger.clone();
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            let chain = chain();
            let mut session = SessionId::random();
            let mut number = 0u32;
            while Instant::now() < deadline {
                if number == chain {
                    session = SessionId::random();
                    number = 0;
                }
                number += 1;
                let command = AppCommand {
                    tool: "sequentialthinking".into(),
                    arguments: common::thought_args(number, chain),
                    actor: bench_actor(),
                    connection_session: session.clone(),
                    refused_in: Some(session.clone()),
                    tool_enabled: true,
                    toolsets: Vec::new(),
                    admin: false,
                    idempotency_key: None,
                    trace: None,
                    prepared: SystemEffects.prepare(),
                    watch: Default::default(),
                    precomputed: Default::default(),
                };
                let start = Instant::now();
                let committed = ledger.submit(command).await.expect("submit");
                samples.push(start.elapsed());
                assert_eq!(
                    committed.status,
                    OutcomeStatus::Ok,
                    "call rejected: {:?}",
                    committed.error
                );
            }
            samples
        }));
    }
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await.expect("task"));
    }
    let elapsed = started.elapsed();
    let own_cpu_us = (common::cpu_seconds("self") - cpu) * 1e6 / samples.len().max(1) as f64;
    let breakdown = Breakdown::of(&counters, elapsed);
    ledger.shutdown().await;
    drop(ledger);
    let events = counters.events.load(Ordering::Relaxed);
    assert_eq!(
        events,
        samples.len() as u64,
        "events staged != calls acknowledged"
    );
    let verify_dir = ledger_dir.clone();
    tokio::task::spawn_blocking(move || {
        common::verify_ledger(&verify_dir, events, events * common::TEXT_REFS_PER_THOUGHT)
    })
    .await
    .expect("verify");
    Measured {
        per_s: samples.len() as f64 / elapsed.as_secs_f64(),
        latency: Latency::of(&samples),
        own_cpu_us,
        server_cpu_us: None,
        breakdown: Some(breakdown),
    }
}

// ---------------------------------------------------------------------------------------------
// (b) over HTTP

fn call_params(tool: &'static str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(map) = arguments else {
        unreachable!("arguments are an object")
    };
    CallToolRequestParams::new(tool).with_arguments(map)
}

async fn http_once(concurrency: usize, duration: Duration) -> Measured {
    let dir = common::temp_data_dir();
    let server = HttpNode::start(dir.path(), &["serve", "--http", "127.0.0.1:0"], &[]);
    // Connect every client first, so the timed part holds nothing but calls.
    let mut clients = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let transport = StreamableHttpClientTransport::from_uri(server.url.clone());
        clients.push(().serve(transport).await.expect("MCP initialize over HTTP"));
    }
    let pid = server.child.id().to_string();
    let (server_cpu, own_cpu) = (common::cpu_seconds(&pid), common::cpu_seconds("self"));
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::with_capacity(concurrency);
    for client in clients {
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            let chain = chain();
            let mut resets = 0u64;
            let mut number = 0u32;
            while Instant::now() < deadline {
                let (params, tool) = if number == chain {
                    number = 0;
                    resets += 1;
                    (call_params("reset", json!({"confirm": true})), "reset")
                } else {
                    number += 1;
                    (
                        call_params("sequentialthinking", common::thought_args(number, chain)),
                        "sequentialthinking",
                    )
                };
                let start = Instant::now();
                let result = client
                    .call_tool(params)
                    .await
                    .expect("tools/call over HTTP");
                samples.push(start.elapsed());
                assert_ne!(
                    result.is_error,
                    Some(true),
                    "{tool} failed: {:?}",
                    result.content
                );
            }
            client.cancel().await.expect("close MCP session");
            (samples, resets)
        }));
    }
    let mut samples = Vec::new();
    let mut resets = 0u64;
    for task in tasks {
        let (s, r) = task.await.expect("client task");
        samples.extend(s);
        resets += r;
    }
    let elapsed = started.elapsed();
    let per_call = |cpu: f64| cpu * 1e6 / samples.len().max(1) as f64;
    let server_cpu_us = per_call(common::cpu_seconds(&pid) - server_cpu);
    let own_cpu_us = per_call(common::cpu_seconds("self") - own_cpu);
    server.stop();
    let calls = samples.len() as u64;
    // Every call is one event; only the sequentialthinking ones carry a text.
    let ledger_dir = thinkledger::server::ledger_dir(dir.path());
    tokio::task::spawn_blocking(move || {
        common::verify_ledger(
            &ledger_dir,
            calls,
            (calls - resets) * common::TEXT_REFS_PER_THOUGHT,
        )
    })
    .await
    .expect("verify");
    Measured {
        per_s: calls as f64 / elapsed.as_secs_f64(),
        latency: Latency::of(&samples),
        own_cpu_us,
        server_cpu_us: Some(server_cpu_us),
        breakdown: None,
    }
}

// ---------------------------------------------------------------------------------------------
// (c) stateless HTTP

/// One 2026-07-28 `tools/call` of `sequentialthinking` as a plain HTTP body.
fn stateless_body(id: u64, number: u32, session: Option<&str>) -> String {
    let mut arguments = common::thought_args(number, chain());
    if let Some(session) = session {
        arguments["sessionId"] = json!(session);
    }
    common::stateless_call_body(id, "sequentialthinking", arguments)
}

async fn stateless_once(concurrency: usize, duration: Duration) -> Measured {
    let dir = common::temp_data_dir();
    let server = HttpNode::start(
        dir.path(),
        &["serve", "--http", "127.0.0.1:0", "--stateless"],
        &[],
    );
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .expect("HTTP client");
    let url = server.url.clone();
    let pid = server.child.id().to_string();
    let (server_cpu, own_cpu) = (common::cpu_seconds(&pid), common::cpu_seconds("self"));
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::with_capacity(concurrency);
    for client in 0..concurrency {
        let (http, url) = (http.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut session: Option<String> = None;
            let mut number = 0u32;
            let mut id = client as u64 * 1_000_000;
            while Instant::now() < deadline {
                number = number % chain() + 1;
                id += 1;
                let body = stateless_body(id, number, session.as_deref());
                let start = Instant::now();
                let response = http
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .header("mcp-protocol-version", "2026-07-28")
                    .header("mcp-method", "tools/call")
                    .header("mcp-name", "sequentialthinking")
                    .body(body)
                    .send()
                    .await
                    .expect("POST tools/call");
                let status = response.status();
                let text = response.text().await.expect("response body");
                samples.push(start.elapsed());
                assert!(status.is_success(), "HTTP {status}: {text}");
                let answer = common::rpc_response(&text);
                let result = &answer["result"];
                assert!(
                    result.is_object() && result["isError"] != json!(true),
                    "call failed: {answer}"
                );
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
    let elapsed = started.elapsed();
    let per_call = |cpu: f64| cpu * 1e6 / samples.len().max(1) as f64;
    let server_cpu_us = per_call(common::cpu_seconds(&pid) - server_cpu);
    let own_cpu_us = per_call(common::cpu_seconds("self") - own_cpu);
    server.stop();
    let calls = samples.len() as u64;
    let ledger_dir = thinkledger::server::ledger_dir(dir.path());
    tokio::task::spawn_blocking(move || {
        common::verify_ledger(&ledger_dir, calls, calls * common::TEXT_REFS_PER_THOUGHT)
    })
    .await
    .expect("verify");
    Measured {
        per_s: calls as f64 / elapsed.as_secs_f64(),
        latency: Latency::of(&samples),
        own_cpu_us,
        server_cpu_us: Some(server_cpu_us),
        breakdown: None,
    }
}

// ---------------------------------------------------------------------------------------------

struct Level {
    concurrency: usize,
    runs: Vec<Measured>,
}

fn report(title: &str, unit: &str, levels: &[Level]) {
    println!("{title}: median (min–max across runs)");
    for level in levels {
        let col = |f: fn(&Measured) -> f64| level.runs.iter().map(f).collect::<Vec<_>>();
        let mut line = format!(
            "  C={:<3} {unit} {:<24} p50 {:<26} p99 {:<26} CPU/call {}",
            level.concurrency,
            across(&col(|m| m.per_s), rate),
            across(&col(|m| m.latency.p50), us),
            across(&col(|m| m.latency.p99), us),
            across(&col(|m| m.own_cpu_us), us),
        );
        if level.runs.iter().all(|m| m.server_cpu_us.is_some()) {
            line += &format!(
                " (client), {} (server)",
                across(&col(|m| m.server_cpu_us.unwrap_or(0.0)), us)
            );
        }
        let breakdowns: Vec<Breakdown> = level.runs.iter().filter_map(|m| m.breakdown).collect();
        if breakdowns.len() == level.runs.len() {
            let col = |f: fn(&Breakdown) -> f64| breakdowns.iter().map(f).collect::<Vec<_>>();
            let largest = breakdowns
                .iter()
                .map(|b| b.largest_batch)
                .max()
                .unwrap_or(0);
            line += &format!(
                "\n        writer: events/fsync {} (largest batch {largest}); per batch: stage {}, sync {}; \
                 per event: decide {}, apply {}; busy {}",
                across(&col(|b| b.events_per_sync), |v| format!("{v:.1}")),
                across(&col(|b| b.stage_us), us),
                across(&col(|b| b.sync_us), us),
                across(&col(|b| b.decide_us), |v| format!("{v:.1} µs")),
                across(&col(|b| b.apply_us), |v| format!("{v:.1} µs")),
                across(&col(|b| b.busy * 100.0), |v| format!("{v:.0}%")),
            );
        }
        println!("{line}");
    }
}

fn main() {
    let full = common::full_mode();
    let runs = common::env_usize("RUNS", if full { 5 } else { 1 }).max(1);
    let millis = common::env_usize("MILLIS", if full { 1500 } else { 100 }) as u64;
    let part = std::env::var("THINKLEDGER_BENCH_PART").unwrap_or_default();
    let levels: Vec<usize> = match std::env::var("THINKLEDGER_BENCH_LEVELS") {
        Ok(list) => list
            .split(',')
            .filter_map(|c| c.trim().parse().ok())
            .filter(|&c| c > 0)
            .collect(),
        Err(_) if full => vec![1, 4, 16, 64],
        Err(_) => vec![1, 4],
    };
    let duration = Duration::from_millis(millis);
    let probe = common::temp_data_dir();
    println!(
        "group_commit: {}",
        if full {
            "full run"
        } else {
            "smoke run (cargo test); use cargo bench for numbers"
        }
    );
    println!("  server:   {}", common::server_binary().to_string_lossy());
    println!(
        "  machine:  {}; {} at start",
        common::machine(),
        common::load()
    );
    println!("  data dir: {}", common::describe_dir(probe.path()));
    println!(
        "  {runs} runs per level, {millis} ms of calls per run, a fresh ledger per run, C = {levels:?}, \
         {} thoughts per session",
        chain()
    );
    drop(probe);
    let wall = Instant::now();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");

    if part.is_empty() || part == "inproc" {
        let mut results = Vec::new();
        for &c in &levels {
            let mut level = Level {
                concurrency: c,
                runs: Vec::new(),
            };
            for run in 1..=runs {
                let m = runtime.block_on(inproc_once(c, duration));
                let b = m.breakdown.expect("in-process runs have a breakdown");
                println!(
                    "  in-process C={c} run {run}: {} p50 {} p99 {} CPU/call {} | events/fsync {:.1}, stage {} + sync {} \
                     per batch, decide {:.1} µs + apply {:.1} µs per event, writer busy {:.0}%",
                    rate(m.per_s),
                    us(m.latency.p50),
                    us(m.latency.p99),
                    us(m.own_cpu_us),
                    b.events_per_sync,
                    us(b.stage_us),
                    us(b.sync_us),
                    b.decide_us,
                    b.apply_us,
                    b.busy * 100.0,
                );
                level.runs.push(m);
            }
            results.push(level);
        }
        report(
            "(a) in-process appends (LedgerHandle::submit, durable)",
            "appends",
            &results,
        );
    }

    if part.is_empty() || part == "http" {
        let mut results = Vec::new();
        for &c in &levels {
            let mut level = Level {
                concurrency: c,
                runs: Vec::new(),
            };
            for run in 1..=runs {
                let m = runtime.block_on(http_once(c, duration));
                println!(
                    "  http C={c} run {run}: {} p50 {} p99 {} | CPU/call client {} server {}",
                    rate(m.per_s),
                    us(m.latency.p50),
                    us(m.latency.p99),
                    us(m.own_cpu_us),
                    us(m.server_cpu_us.unwrap_or(0.0)),
                );
                level.runs.push(m);
            }
            results.push(level);
        }
        report(
            "(b) Streamable HTTP calls (rmcp client, one MCP session per client, durable)",
            "calls",
            &results,
        );
    }
    if part.is_empty() || part == "stateless" {
        let mut results = Vec::new();
        for &c in &levels {
            let mut level = Level {
                concurrency: c,
                runs: Vec::new(),
            };
            for run in 1..=runs {
                let m = runtime.block_on(stateless_once(c, duration));
                println!(
                    "  stateless C={c} run {run}: {} p50 {} p99 {} | CPU/call client {} server {}",
                    rate(m.per_s),
                    us(m.latency.p50),
                    us(m.latency.p99),
                    us(m.own_cpu_us),
                    us(m.server_cpu_us.unwrap_or(0.0)),
                );
                level.runs.push(m);
            }
            results.push(level);
        }
        report(
            "(c) stateless Streamable HTTP calls (plain HTTP/1.1 keep-alive clients, 2026-07-28, durable)",
            "calls",
            &results,
        );
    }
    println!(
        "every run's ledger verified intact with the acknowledged event count; wall time {:.1} s; {} at end",
        wall.elapsed().as_secs_f64(),
        common::load()
    );
}
