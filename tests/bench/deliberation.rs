//! What the deliberation tools cost as the graph grows: a deliberation of N nodes is built on a
//! real sled ledger in a temp dir (in process, through `LedgerHandle`), then each tool whose
//! work grows with the graph is called and timed — both the writer's decision time (recorded in
//! the event as `outcome.decideMicros`) and the whole durable call (decide + fsync + answer).
//!
//! N = 200 (the balanced budget), 1,000 (deep) and 5,000 (the ceiling). Nodes spread over 20
//! branches (N/40 when more, so no chain passes the depth budget), each with 12 words drawn from a 2,000-word vocabulary, so novelty scoring compares
//! real word sets. Each configuration runs RUNS times on a fresh ledger; the report gives the
//! median with min–max across runs, and the ledger is verified intact after each run.
//!
//! `cargo bench --bench deliberation` (full run); under `cargo test` a smoke run with N = 40.
//! Overrides: THINKLEDGER_BENCH_RUNS, THINKLEDGER_BENCH_NODES (e.g. `200,1000`).

mod common;

use std::time::{Duration, Instant};

use common::{across, full_mode, load, machine, temp_data_dir, us};
use serde_json::{Value, json};
use thinkledger::app::{App, AppConfig, Command};
use thinkledger::effects::Effects as _;
use thinkledger::events::{Actor, OutcomeStatus, SessionId};
use thinkledger::ledger::{LedgerHandle, SledStore, WriterConfig, open_ledger};

fn actor() -> Actor {
    Actor {
        principal: "local".into(),
        transport: "bench".into(),
        client_name: None,
        client_version: None,
        role: Default::default(),
        user_ids: Vec::new(),
    }
}

/// A deterministic pseudo-random word stream (xorshift), so every run builds the same graph.
struct Words(u64);

impl Words {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn sentence(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| format!("w{}", self.next() % 2_000))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

struct Timed {
    decide: Duration,
    call: Duration,
}

async fn call(
    ledger: &LedgerHandle<App>,
    session: &SessionId,
    tool: &str,
    args: Value,
) -> (Value, Timed) {
    let command = Command::tool_call(
        tool,
        args,
        actor(),
        session.clone(),
        thinkledger::effects::SystemEffects.prepare(),
    );
    let started = Instant::now();
    let committed = ledger.submit(command).await.expect("recorded");
    let call = started.elapsed();
    assert_eq!(
        committed.status,
        OutcomeStatus::Ok,
        "{tool}: {:#}",
        committed.body
    );
    // One call at a time: the latest event the telemetry folded is this call's.
    let decide = ledger
        .query(Box::new(|app: &App| {
            json!(app.telemetry().last_decide_micros)
        }))
        .await
        .expect("query")
        .as_u64()
        .unwrap_or(0);
    (
        committed.body,
        Timed {
            decide: Duration::from_micros(decide),
            call,
        },
    )
}

const TOOLS: &[&str] = &[
    "add_thought_node",
    "score_thoughts",
    "prune_thoughts",
    "verify_thoughts",
    "evaluate_reasoning_quality",
    "run_reasoning_checkpoint",
    "consensus_answer",
];

/// One run: builds N nodes, then times each tool once (add_thought_node: the median over the
/// build). Returns decide and call times per tool, in microseconds.
fn run(n: usize) -> Vec<(f64, f64)> {
    let dir = temp_data_dir();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let store = SledStore::open(dir.path()).expect("store");
    let ledger = open_ledger(
        store,
        App::new(AppConfig::default()),
        WriterConfig::default(),
    )
    .expect("ledger");
    let session = SessionId::random();
    let out = runtime.block_on(async {
        let mut words = Words(0x9e37_79b9_7f4a_7c15);
        call(
            &ledger,
            &session,
            "start_deliberation",
            json!({ "goal": "Which storage engine fits the audit log?", "mode": "Explore",
                    "budgets": { "max_nodes": 5000, "max_depth": 64 } }),
        )
        .await;
        let mut adds = Vec::with_capacity(n);
        // Chains of at most 40 nodes: deep enough to matter, within the depth budget.
        let branches = (n / 40).max(20);
        let mut last_on_branch: Vec<Option<String>> = vec![None; branches];
        for i in 0..n.saturating_sub(1) {
            let b = i % branches;
            let mut args = json!({ "content": words.sentence(12), "branch_id": format!("b{b}") });
            if let Some(parent) = &last_on_branch[b] {
                args["parent_ids"] = json!([parent]);
            }
            let (body, t) = call(&ledger, &session, "add_thought_node", args).await;
            last_on_branch[b] = body["node"]["node_id"].as_str().map(str::to_owned);
            adds.push(t);
        }
        let mut results = Vec::new();
        adds.sort_by_key(|t| t.decide);
        let mid = &adds[adds.len() / 2];
        results.push((mid.decide.as_secs_f64() * 1e6, mid.call.as_secs_f64() * 1e6));
        let claims: Vec<Value> = (0..10)
            .map(|i| json!({ "text": format!("claim {i}: {}", words.sentence(8)), "criticality": "high", "node_ids": ["node-2"] }))
            .collect();
        let evidence: Vec<Value> = (0..20)
            .map(|i| json!({ "source": format!("source {i}"), "tier": "primary",
                             "independence_group": format!("g{}", i % 2), "supports_claims": [format!("claim-{}", i / 2 + 1)] }))
            .collect();
        for (tool, args) in [
            ("score_thoughts", json!({})),
            ("prune_thoughts", json!({ "beam_width": 10 })),
            ("verify_thoughts", json!({ "claims": claims, "evidence": evidence })),
            ("evaluate_reasoning_quality", json!({})),
            ("run_reasoning_checkpoint", json!({})),
            ("consensus_answer", json!({ "answer": "Use the append-only segment file." })),
        ] {
            let (_, t) = call(&ledger, &session, tool, args).await;
            results.push((t.decide.as_secs_f64() * 1e6, t.call.as_secs_f64() * 1e6));
        }
        ledger.shutdown().await;
        results
    });
    let store = SledStore::open(dir.path()).expect("reopen");
    let report = thinkledger::ledger::verify(&store).expect("verify");
    assert!(
        report.is_intact(),
        "the bench ledger verifies: {:?}",
        report.problems
    );
    assert_eq!(report.events, n as u64 + 6, "one event per call");
    out
}

fn main() {
    let full = full_mode();
    let runs = common::env_usize("RUNS", if full { 5 } else { 1 });
    let sizes: Vec<usize> = std::env::var("THINKLEDGER_BENCH_NODES")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| {
            if full {
                vec![200, 1_000, 5_000]
            } else {
                vec![40]
            }
        });
    println!(
        "deliberation tools on a growing graph — {}; {}",
        machine(),
        load()
    );
    println!(
        "decision time on the writer (outcome.decideMicros) | whole durable call; median of {runs} run(s) (min–max)"
    );
    for n in sizes {
        let samples: Vec<Vec<(f64, f64)>> = (0..runs).map(|_| run(n)).collect();
        println!("\nN = {n} nodes");
        for (i, tool) in TOOLS.iter().enumerate() {
            let decide: Vec<f64> = samples.iter().map(|s| s[i].0).collect();
            let whole: Vec<f64> = samples.iter().map(|s| s[i].1).collect();
            let label = if i == 0 {
                format!("{tool} (median of the build)")
            } else {
                (*tool).to_owned()
            };
            println!(
                "  {label:<42} decide {:<28} call {}",
                across(&decide, us),
                across(&whole, us)
            );
        }
    }
}
