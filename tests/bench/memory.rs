//! Memory at scale: N synthetic memories of one owner, zero configuration (the built-in
//! potion-base-2M embedder, the index on disk), through the real writer as the server runs it
//! (`server::start`: sled, texts file, signing key, the memory index under the data dir).
//!
//! Phases, each call a durable event:
//! - store: CALLERS concurrent callers submit `store_memory` back to back (pipelined; each
//!   embeds its content on the caller's side first, as the MCP layer does): stores per second;
//! - retrieve: one caller, QUERIES `retrieve_memories` with text (hybrid similarity, composite
//!   score, one-hop expansion), end to end (embedding, queue, decision, durable write): p50/p95;
//! - search: one caller, QUERIES `search_memories` (full text, boolean syntax): p50/p95;
//! - RSS of the process (the server is in process) after the queries;
//! - restart: the ledger is shut down and started again: time until it is open (snapshot
//!   loaded) and the first retrieval (which rebuilds the index from the loaded memories); RSS
//!   then, and 3 s and 10 s later;
//! - restart in a new process, as a user restarts a server: the built binary (`serve
//!   --toolsets memory`, stdio) on the same data dir: time to `initialize`, to the first and
//!   second retrieval, and the process's RSS then and once the open's check of the log is done.
//!
//! The memories are sentences made from fixed vocabularies by a seeded generator, so every
//! run stores the same texts. After the run the ledger is verified (intact, every event there).
//!
//! `cargo bench --bench memory` (full run: 100,000 memories); under `cargo test` a smoke run.
//! Overrides: THINKLEDGER_BENCH_MEMORIES, THINKLEDGER_BENCH_QUERIES, THINKLEDGER_BENCH_CALLERS.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::stdio::StdioClient;
use common::{percentile, us};
use serde_json::{Value, json};
use thinkledger::app::{App, AppConfig, Command as AppCommand};
use thinkledger::effects::{Effects, SystemEffects};
use thinkledger::events::{Actor, OutcomeStatus, SessionId};
use thinkledger::ledger::{Admitted, LedgerHandle};
use thinkledger::server;

const OWNER: &str = "bench-user";

const PEOPLE: &[&str] = &[
    "Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Jun", "Kofi",
    "Lena", "Mateo", "Nadia", "Omar", "Priya",
];
const VERBS: &[&str] = &[
    "prefers",
    "asked about",
    "fixed",
    "reviewed",
    "scheduled",
    "cancelled",
    "recommended",
    "complained about",
    "deployed",
    "documented",
    "tested",
    "migrated",
];
const THINGS: &[&str] = &[
    "the billing service",
    "dark mode",
    "the onboarding flow",
    "the search index",
    "the quarterly report",
    "the mobile app",
    "the vendor contract",
    "the database backup",
    "the hiring plan",
    "the travel budget",
    "the API gateway",
    "the design review",
    "the kitchen renovation",
    "the marathon training",
    "the garden irrigation",
    "the tax filing",
];
const WHEN: &[&str] = &[
    "on Monday",
    "yesterday",
    "last week",
    "this morning",
    "in March",
    "after lunch",
    "before the release",
    "during the offsite",
];
const WHY: &[&str] = &[
    "because latency doubled",
    "to cut costs",
    "after a customer escalation",
    "since the team was short-staffed",
    "to meet the audit deadline",
    "for the demo",
    "because the old one kept failing",
    "to try a new approach",
];
const SECTORS: &[&str] = &[
    "episodic",
    "semantic",
    "procedural",
    "emotional",
    "reflective",
];

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }
}

/// The i-th memory's content and sector.
fn memory(i: u64) -> (String, &'static str) {
    let mut r = Rng(i.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ 0x5eed);
    let text = format!(
        "{} {} {} {} {} (note {i}).",
        r.pick(PEOPLE),
        r.pick(VERBS),
        r.pick(THINGS),
        r.pick(WHEN),
        r.pick(WHY)
    );
    (text, r.pick(SECTORS))
}

/// The i-th query.
fn query(i: u64) -> String {
    let mut r = Rng(i ^ 0xfeed_beef);
    format!("{} {} {}", r.pick(PEOPLE), r.pick(VERBS), r.pick(THINGS))
}

/// The i-th full-text query (boolean syntax).
fn search(i: u64) -> String {
    let mut r = Rng(i ^ 0x0bad_cafe);
    let thing = r.pick(THINGS).trim_start_matches("the ");
    format!("\"{thing}\" AND {}", r.pick(PEOPLE))
}

fn actor() -> Actor {
    Actor {
        principal: "local".into(),
        transport: "bench".into(),
        client_name: Some("thinkledger-bench".into()),
        client_version: None,
        role: Default::default(),
        user_ids: Vec::new(),
    }
}

/// Submits one call as the MCP layer does (the embedded argument embedded first) and waits
/// for it to be durable.
async fn call(ledger: &LedgerHandle<App>, tool: &str, arguments: Value) -> Value {
    let field = match tool {
        "store_memory" => Some("content"),
        "retrieve_memories" => Some("text"),
        _ => None,
    };
    let text = field.and_then(|f| arguments.get(f)).and_then(Value::as_str);
    let prepared = SystemEffects.prepare_embedding(text);
    let mut command =
        AppCommand::tool_call(tool, arguments, actor(), SessionId::random(), prepared);
    let view = ledger
        .view_after(Admitted::default())
        .await
        .expect("a view of state");
    view.precompute(&mut command);
    let done = ledger.submit(command).await.expect("recorded");
    assert_eq!(done.status, OutcomeStatus::Ok, "{tool}: {}", done.body);
    done.body
}

/// A `/proc/PID/status` figure in MB (`VmRSS`, `RssAnon`, `RssFile`) of process `pid`
/// (`self` for this one).
fn process_status_mb(pid: &str, name: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// RSS with its parts: heap and other anonymous memory, and mapped files (the index's
/// segments, sled's files).
fn rss_parts() -> String {
    process_rss_parts("self")
}

fn process_rss_parts(pid: &str) -> String {
    format!(
        "{:.0} MB (anonymous {:.0}, files {:.0})",
        process_status_mb(pid, "VmRSS"),
        process_status_mb(pid, "RssAnon"),
        process_status_mb(pid, "RssFile")
    )
}

/// When RSS is read again after a restart (seconds to wait, then the label): 3 s and 10 s after
/// it in a full run, not at all in a smoke run.
fn settle_waits(full: bool) -> &'static [(u64, &'static str)] {
    if full {
        &[(3, "3 s"), (7, "10 s")]
    } else {
        &[]
    }
}

/// A restart as a user makes one: the built server in a process of its own on `data_dir`
/// (stdio, `--toolsets memory`), timed to `initialize` and to its first two retrievals, with
/// its RSS then and 3 s and 10 s later (by then the open's check of the log under the
/// snapshot has run between calls). Returns the number of events it added.
fn restart_in_new_process(data_dir: &std::path::Path, full: bool) -> u64 {
    let mut command = std::process::Command::new(common::server_binary());
    command
        .arg("--data-dir")
        .arg(data_dir)
        .args(["serve", "--toolsets", "memory"]);
    let started = Instant::now();
    let mut client = StdioClient::spawn_command(command, &data_dir.join("server.log"));
    client.initialize();
    let initialized = started.elapsed();
    let first = Instant::now();
    let result = client.call_tool(
        "retrieve_memories",
        json!({"userId": OWNER, "text": query(2)}),
    );
    assert_eq!(result["isError"], json!(false), "{result}");
    let first = first.elapsed();
    let again = Instant::now();
    client.call_tool(
        "retrieve_memories",
        json!({"userId": OWNER, "text": query(3)}),
    );
    let again = again.elapsed();
    let pid = client.child.id().to_string();
    println!(
        "  restart, new process: initialize {}, first retrieval {} after it, the next {}; RSS {}",
        us(initialized.as_secs_f64() * 1e6),
        us(first.as_secs_f64() * 1e6),
        us(again.as_secs_f64() * 1e6),
        process_rss_parts(&pid)
    );
    for (wait, label) in settle_waits(full) {
        std::thread::sleep(Duration::from_secs(*wait));
        println!(
            "  restart, new process, {label} later: RSS {}",
            process_rss_parts(&pid)
        );
    }
    client.finish();
    2
}

fn p50_p95(samples: &[Duration]) -> (f64, f64) {
    let mut v: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    v.sort_by(f64::total_cmp);
    (percentile(&v, 50.0), percentile(&v, 95.0))
}

async fn timed_queries(
    ledger: &LedgerHandle<App>,
    n: u64,
    make: impl Fn(u64) -> (&'static str, Value),
) -> (Vec<Duration>, u64) {
    let mut samples = Vec::with_capacity(n as usize);
    let mut returned = 0;
    for i in 0..n {
        let (tool, args) = make(i);
        let started = Instant::now();
        let body = call(ledger, tool, args).await;
        samples.push(started.elapsed());
        returned += body["data"]["memories"].as_array().map_or(0, Vec::len) as u64;
    }
    (samples, returned)
}

fn main() {
    let full = common::full_mode();
    let memories = common::env_usize("MEMORIES", if full { 100_000 } else { 300 }) as u64;
    let queries = common::env_usize("QUERIES", if full { 300 } else { 20 }) as u64;
    let callers = common::env_usize("CALLERS", 64) as u64;
    println!(
        "memory: {memories} memories of one owner, {callers} pipelined callers; {queries} \
         retrievals and {queries} searches, one at a time"
    );
    println!(
        "  machine: {}; {} at start",
        common::machine(),
        common::load()
    );
    let dir = common::temp_data_dir();
    println!("  data dir: {}", common::describe_dir(dir.path()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let ledger = server::start(dir.path(), AppConfig::default()).expect("start");
        ledger.opened().await.expect("open");

        let next = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..callers {
            let ledger = ledger.clone();
            let next = next.clone();
            tasks.push(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= memories {
                        break;
                    }
                    let (content, sector) = memory(i);
                    call(
                        &ledger,
                        "store_memory",
                        json!({"content": content, "userId": OWNER, "sessionId": "bench",
                               "primarySector": sector}),
                    )
                    .await;
                }
            }));
        }
        for task in tasks {
            task.await.expect("caller");
        }
        let stored_in = started.elapsed();
        println!(
            "  store: {memories} in {:.1} s = {:.0} stores/s (pipelined, durable)",
            stored_in.as_secs_f64(),
            memories as f64 / stored_in.as_secs_f64()
        );
        println!("  RSS after the stores: {}", rss_parts());

        let (retrieve, returned) = timed_queries(&ledger, queries, |i| {
            (
                "retrieve_memories",
                json!({"userId": OWNER, "text": query(i), "limit": 10}),
            )
        })
        .await;
        let (r50, r95) = p50_p95(&retrieve);
        println!(
            "  retrieve_memories: p50 {} p95 {} ({returned} memories returned in all)",
            us(r50),
            us(r95)
        );
        let (searched, found) = timed_queries(&ledger, queries, |i| {
            (
                "search_memories",
                json!({"userId": OWNER, "text": search(i), "limit": 10}),
            )
        })
        .await;
        let (s50, s95) = p50_p95(&searched);
        println!(
            "  search_memories: p50 {} p95 {} ({found} memories returned in all)",
            us(s50),
            us(s95)
        );
        println!("  RSS after the queries: {}", rss_parts());
        ledger.shutdown().await;
        drop(ledger);

        let reopened = Instant::now();
        let ledger = server::start(dir.path(), AppConfig::default()).expect("restart");
        let answering = reopened.elapsed();
        ledger.opened().await.expect("reopen");
        println!(
            "  RSS once open (before the index is rebuilt): {}",
            rss_parts()
        );
        let open = reopened.elapsed();
        let first = Instant::now();
        call(
            &ledger,
            "retrieve_memories",
            json!({"userId": OWNER, "text": query(0)}),
        )
        .await;
        let first = first.elapsed();
        let again = Instant::now();
        call(
            &ledger,
            "retrieve_memories",
            json!({"userId": OWNER, "text": query(1)}),
        )
        .await;
        println!(
            "  restart: start returned in {}, open (snapshot loaded) in {}, first retrieval \
             (index rebuilt) {}, the next {}; RSS {}",
            us(answering.as_secs_f64() * 1e6),
            us(open.as_secs_f64() * 1e6),
            us(first.as_secs_f64() * 1e6),
            us(again.elapsed().as_secs_f64() * 1e6),
            rss_parts()
        );
        // What the restarted server holds once the allocator has handed back what the load
        // and the rebuild freed (jemalloc purges dirty pages after 1 s, .cargo/config.toml).
        for (wait, label) in settle_waits(full) {
            tokio::time::sleep(Duration::from_secs(*wait)).await;
            println!("  RSS after restart, {label} later: {}", rss_parts());
        }
        ledger.shutdown().await;
    });
    drop(runtime);
    let restarted = restart_in_new_process(dir.path(), full);
    let expected = memories + 2 * queries + 2 + restarted;
    let verified = common::verify_ledger_events(&server::ledger_dir(dir.path()), expected);
    println!(
        "  verified: {} events intact in {:.1} s",
        verified.events,
        verified.took.as_secs_f64()
    );
}
