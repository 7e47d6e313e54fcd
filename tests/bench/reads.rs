//! Read latency while writers append: how long a resource read (`ledger://sessions/{id}`, one
//! session's document, answered through `LedgerHandle::query`) takes on an idle ledger and
//! while W writers append durable `sequentialthinking` calls as fast as group commit lets them.
//!
//! Each run records a ledger of PRELOAD thoughts (sessions of 50, through the real server's
//! `server::open`: sled, texts file, signing key), reopens it, then measures three phases of
//! MILLIS each:
//! - idle: R readers, each reading a random preloaded session's document, pausing 1 ms between
//!   reads; nothing else runs;
//! - loaded: the same readers while W writer tasks each submit thoughts back to back;
//! - writes only: the W writers alone (what the readers cost the writers).
//!
//! The report gives read p50/p99 per phase and the writers' throughput, as the median of RUNS
//! runs with min–max across them. After every run the ledger is verified: intact, with exactly
//! the preloaded plus the acknowledged number of events.
//!
//! The bench uses only `server::open`, `LedgerHandle::{submit, query}` and the projections'
//! read API, so the same file builds against older commits for a baseline.
//!
//! `cargo bench --bench reads` (full run); under `cargo test` it does a smoke run.
//! Overrides: THINKLEDGER_BENCH_RUNS, THINKLEDGER_BENCH_MILLIS (per phase and run),
//! THINKLEDGER_BENCH_PRELOAD (events), THINKLEDGER_BENCH_WRITERS, THINKLEDGER_BENCH_READERS.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{Latency, across, rate, us};
use serde_json::{Value, json};
use thinkledger::app::{App, Command as AppCommand};
use thinkledger::effects::{Effects, SystemEffects};
use thinkledger::events::{Actor, OutcomeStatus, SessionId};
use thinkledger::ledger::LedgerHandle;
use thinkledger::server;
use thinkledger::tools::session_document;

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

/// What one phase of one run measured.
struct Phase {
    /// `None` when there were no readers.
    reads: Option<Latency>,
    /// Writes acknowledged per second (0 when idle).
    writes_per_s: f64,
    writes: u64,
}

/// R readers for `duration`, each reading a random session's document every millisecond;
/// with W writers appending meanwhile when `writers > 0`.
async fn phase(
    ledger: &LedgerHandle<App>,
    sessions: &Arc<Vec<String>>,
    readers: usize,
    writers: usize,
    duration: Duration,
) -> Phase {
    let started = Instant::now();
    let deadline = started + duration;
    let written = Arc::new(AtomicU64::new(0));
    let mut writing = Vec::with_capacity(writers);
    for _ in 0..writers {
        let (ledger, written) = (ledger.clone(), written.clone());
        writing.push(tokio::spawn(async move {
            let mut session = SessionId::random();
            let mut number = 0u32;
            while Instant::now() < deadline {
                if number == common::CHAIN {
                    session = SessionId::random();
                    number = 0;
                }
                number += 1;
                let command = AppCommand::tool_call(
                    "sequentialthinking",
                    common::thought_args(number, common::CHAIN),
                    actor(),
                    session.clone(),
                    SystemEffects.prepare(),
                );
                let done = ledger.submit(command).await.expect("submit");
                assert_eq!(done.status, OutcomeStatus::Ok, "{}", done.body);
                written.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let mut reading = Vec::with_capacity(readers);
    for r in 0..readers {
        let (ledger, sessions) = (ledger.clone(), sessions.clone());
        reading.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            // A cheap deterministic spread over the sessions (xorshift).
            let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (r as u64 + 1);
            while Instant::now() < deadline {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let id = SessionId::parse(&sessions[(x % sessions.len() as u64) as usize])
                    .expect("a session id");
                let start = Instant::now();
                let doc = ledger
                    .query(Box::new(move |app: &App| {
                        app.state()
                            .session(&id)
                            .expect("the session reads back from the log")
                            .map_or(Value::Null, |s| session_document(&s))
                    }))
                    .await
                    .expect("query");
                samples.push(start.elapsed());
                assert!(doc.is_object(), "the session was not found");
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            samples
        }));
    }
    let mut samples = Vec::new();
    for task in reading {
        samples.extend(task.await.expect("reader"));
    }
    for task in writing {
        task.await.expect("writer");
    }
    let elapsed = started.elapsed();
    let writes = written.load(Ordering::Relaxed);
    Phase {
        reads: (!samples.is_empty()).then(|| Latency::of(&samples)),
        writes_per_s: writes as f64 / elapsed.as_secs_f64(),
        writes,
    }
}

/// One run on a fresh ledger: idle, loaded, writes only.
fn run_once(preload: u64, readers: usize, writers: usize, duration: Duration) -> [Phase; 3] {
    let dir = common::temp_data_dir();
    let data_dir = dir.path().join("data");
    std::fs::create_dir_all(&data_dir).expect("create data dir");
    common::record_thoughts(&data_dir, preload);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let phases = runtime.block_on(async {
        let ledger = common::open_ledger_settled(&data_dir);
        let ids = ledger
            .query(Box::new(|app: &App| {
                json!(
                    app.state()
                        .heads()
                        .map(|s| s.id.to_string())
                        .collect::<Vec<_>>()
                )
            }))
            .await
            .expect("list sessions");
        let sessions: Arc<Vec<String>> =
            Arc::new(serde_json::from_value(ids).expect("session ids"));
        assert!(!sessions.is_empty(), "nothing preloaded");
        let idle = phase(&ledger, &sessions, readers, 0, duration).await;
        let loaded = phase(&ledger, &sessions, readers, writers, duration).await;
        let writing = phase(&ledger, &sessions, 0, writers, duration).await;
        ledger.shutdown().await;
        [idle, loaded, writing]
    });
    let events = preload + phases.iter().map(|p| p.writes).sum::<u64>();
    common::verify_ledger(
        &server::ledger_dir(&data_dir),
        events,
        events * common::TEXT_REFS_PER_THOUGHT,
    );
    phases
}

fn main() {
    let full = common::full_mode();
    let runs = common::env_usize("RUNS", if full { 3 } else { 1 }).max(1);
    let millis = common::env_usize("MILLIS", if full { 3000 } else { 150 });
    let preload = common::env_usize("PRELOAD", if full { 20_000 } else { 100 }) as u64;
    let writers = common::env_usize("WRITERS", if full { 64 } else { 4 });
    let readers = common::env_usize("READERS", 4).max(1);
    let duration = Duration::from_millis(millis as u64);
    println!(
        "reads: {runs} run(s); {preload} preloaded events; {readers} readers (one read per ms \
         each); {writers} writers when loaded; {millis} ms per phase"
    );
    println!(
        "  machine: {}; {} at start",
        common::machine(),
        common::load()
    );
    let names = ["idle", "loaded", "writes only"];
    let mut all: [Vec<Phase>; 3] = Default::default();
    for run in 0..runs {
        let phases = run_once(preload, readers, writers, duration);
        let line: Vec<String> = names
            .iter()
            .zip(&phases)
            .map(|(name, p)| match &p.reads {
                Some(r) => format!(
                    "{name} p50 {} p99 {} ({} reads, {})",
                    us(r.p50),
                    us(r.p99),
                    r.n,
                    rate(p.writes_per_s)
                ),
                None => format!("{name} {}", rate(p.writes_per_s)),
            })
            .collect();
        println!("  run {}: {}", run + 1, line.join(" | "));
        for (kept, p) in all.iter_mut().zip(phases) {
            kept.push(p);
        }
    }
    println!("| | read p50 | read p99 | writes |");
    println!("|---|---|---|---|");
    for (name, phases) in names.iter().zip(&all) {
        let reads = |f: fn(&Latency) -> f64| -> String {
            let values: Vec<f64> = phases
                .iter()
                .filter_map(|p| p.reads.as_ref().map(f))
                .collect();
            if values.is_empty() {
                "—".into()
            } else {
                across(&values, us)
            }
        };
        let writes: Vec<f64> = phases.iter().map(|p| p.writes_per_s).collect();
        println!(
            "| {name} | {} | {} | {} |",
            reads(|r| r.p50),
            reads(|r| r.p99),
            across(&writes, rate),
        );
    }
}
