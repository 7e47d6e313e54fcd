//! The reviewer's page on a long session: one session of THOUGHTS `sequentialthinking` thoughts
//! (recorded through the real writer, `server::open`), then the served binary
//! (`thinkledger serve --http 127.0.0.1:0`, the page mounted for the local owner) asked for
//! the session's first page, its last page and the page holding a seq in the middle, REPEATS
//! times each over one keep-alive connection. The report gives each page's size and its time
//! to last byte (p50, p90, max). Issue 43's budget: under 200 ms and under 1 MB at 100,000.
//!
//! `THINKLEDGER_BENCH_SERVER=path` serves the same ledger with another build (the previous
//! main, for the baseline in the same run). `cargo bench --bench review_page` (full run: 100,000
//! thoughts); under `cargo test` a smoke run. Overrides: THINKLEDGER_BENCH_THOUGHTS,
//! THINKLEDGER_BENCH_REPEATS.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{HttpNode, Latency, env_usize, full_mode, machine, temp_data_dir};
use serde_json::json;
use thinkledger::app::{AppConfig, Command as AppCommand};
use thinkledger::effects::{Effects, SystemEffects};
use thinkledger::events::{Actor, OutcomeStatus, SessionId};
use thinkledger::server;

/// Callers recording the one session's thoughts at once (group commit batches them).
const CALLERS: usize = 32;

fn actor() -> Actor {
    Actor {
        principal: "local".into(),
        transport: "stdio".into(),
        client_name: Some("thinkledger-bench".into()),
        client_version: None,
        role: Default::default(),
        user_ids: Vec::new(),
    }
}

/// Records `thoughts` thoughts in one session of `data_dir`; returns the session.
fn record(data_dir: &std::path::Path, thoughts: u64) -> SessionId {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let session = SessionId::random();
    runtime.block_on(async {
        let ledger = server::open(data_dir, AppConfig::default()).expect("open the ledger");
        let total = u32::try_from(thoughts).expect("fits");
        // The first thought starts the session; the rest follow at once.
        let first = AppCommand::tool_call(
            "sequentialthinking",
            thought(1, total),
            actor(),
            session.clone(),
            SystemEffects.prepare(),
        );
        let done = ledger.submit(first).await.expect("submit");
        assert_eq!(done.status, OutcomeStatus::Ok, "{}", done.body);
        let next = Arc::new(AtomicU64::new(2));
        let mut tasks = Vec::new();
        for _ in 0..CALLERS {
            let (ledger, next, session) = (ledger.clone(), next.clone(), session.clone());
            tasks.push(tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n > thoughts {
                        break;
                    }
                    let command = AppCommand::tool_call(
                        "sequentialthinking",
                        thought(u32::try_from(n).expect("fits"), total),
                        actor(),
                        session.clone(),
                        SystemEffects.prepare(),
                    );
                    let done = ledger.submit(command).await.expect("submit");
                    assert_eq!(done.status, OutcomeStatus::Ok, "{}", done.body);
                }
            }));
        }
        for task in tasks {
            task.await.expect("caller");
        }
        ledger.shutdown().await;
    });
    session
}

fn thought(number: u32, total: u32) -> serde_json::Value {
    json!({
        "thought": format!("Step {number}: check the replica lag against the SOC2 control before the cut-over, and note what the runbook says about it"),
        "thoughtNumber": number,
        "totalThoughts": total,
        "nextThoughtNeeded": number < total,
    })
}

fn main() {
    let full = full_mode();
    let thoughts = env_usize("THOUGHTS", if full { 100_000 } else { 300 }) as u64;
    let repeats = env_usize("REPEATS", if full { 21 } else { 3 });
    println!("review_page: {thoughts} thoughts in one session, {repeats} requests per page");
    println!("{}", machine());
    let dir = temp_data_dir();
    let started = Instant::now();
    let session = record(dir.path(), thoughts);
    println!("recorded in {:.1} s", started.elapsed().as_secs_f64());
    // sled lets go of its lock a moment after the store is dropped.
    std::thread::sleep(Duration::from_millis(500));

    let node = HttpNode::start(dir.path(), &["serve", "--http", "127.0.0.1:0"], &[]);
    let base = node.url.trim_end_matches("/mcp").to_owned();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = reqwest::Client::new();
    // The server logs its address before its ledger is open: wait for it to be ready, so the
    // first request measures the page, not the opening.
    let ready = Instant::now();
    runtime.block_on(async {
        loop {
            let answer = client.get(format!("{base}/readyz")).send().await;
            if answer.is_ok_and(|r| r.status().is_success()) || ready.elapsed().as_secs() > 120 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    println!("ready after {:.2} s", ready.elapsed().as_secs_f64());
    let last_page = thoughts.div_ceil(100);
    let pages = [
        ("first page", format!("{base}/review/session/{session}")),
        (
            "last page",
            format!("{base}/review/session/{session}?page={last_page}"),
        ),
        (
            "page of a middle seq",
            format!("{base}/review/session/{session}?seq={}", thoughts / 2),
        ),
    ];
    let baseline = std::env::var_os("THINKLEDGER_BENCH_SERVER").is_some();
    for (name, url) in &pages {
        let mut samples = Vec::new();
        let mut bytes = 0;
        let mut cold = None;
        for _ in 0..repeats {
            let at = Instant::now();
            let body = runtime.block_on(async {
                let response = client.get(url).send().await.expect("GET");
                assert_eq!(response.status().as_u16(), 200, "{url}");
                response.bytes().await.expect("body")
            });
            let took = at.elapsed();
            // The first request of a page reads from a cold cache: reported apart.
            if cold.is_none() {
                cold = Some(took);
            } else {
                samples.push(took);
            }
            bytes = body.len();
        }
        if samples.is_empty() {
            samples.extend(cold);
        }
        let l = Latency::of(&samples);
        println!(
            "{name:<22} {:>9} bytes  first {:>7.1} ms, then p50 {:>7.1} ms  p90 {:>7.1} ms  max {:>7.1} ms  (n={})",
            bytes,
            cold.unwrap_or_default().as_secs_f64() * 1e3,
            l.p50 / 1e3,
            l.p90 / 1e3,
            l.max / 1e3,
            l.n
        );
        if full && !baseline {
            assert!(bytes < 1_000_000, "{name}: {bytes} bytes");
        }
    }
    node.stop();
}
