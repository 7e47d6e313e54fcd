//! The ledger beyond one machine, measured side by side in one run:
//!
//! (a) Throughput: 32 concurrent stateless HTTP clients (plain HTTP/1.1 keep-alive, 2026-07-28
//!     `tools/call`, as a load generator sends them) making a mixed load — a thought, a
//!     memory, a deliberation step, in turn — for a fixed time, against
//!       1. one node on the embedded sled ledger,
//!       2. one node on PostgreSQL,
//!       3. three nodes on one PostgreSQL database (clients spread over them).
//!     Each run starts on a fresh ledger (a fresh database on one PostgreSQL server started
//!     from Debian's packages, `tests/postgres/server.rs`, fsync and synchronous_commit on);
//!     after it, `verify` must find the ledger intact with exactly the answered calls. Reported:
//!     calls/s and latency p50/p99, median (min–max) over RUNS runs.
//! (b) Migration: a ledger of EVENTS `sequentialthinking` events recorded through the real
//!     writer, `thinkledger migrate` to PostgreSQL and back to a new data directory, each
//!     timed; the copies verify, with the same head and every signed checkpoint (so the same
//!     Merkle root at each), and the checkpoint files of both directories are identical.
//!
//! (c) Start: a PostgreSQL node's start (spawn to first call answered, stdio) on a ledger of
//!     EVENTS events copied there, without a snapshot in the database (a full replay) and from
//!     the snapshot the previous start saved, RUNS times in turn.
//!
//! `cargo bench --bench postgres` (RUNS 3 × 10 s per configuration; EVENTS 100,000); under
//! `cargo test` a smoke run (1 × 1 s, 8 clients, 500 events). Overrides:
//! THINKLEDGER_BENCH_RUNS, THINKLEDGER_BENCH_MILLIS, THINKLEDGER_BENCH_CLIENTS,
//! THINKLEDGER_BENCH_EVENTS, THINKLEDGER_BENCH_PART (`load`, `migrate` or `start`),
//! THINKLEDGER_BENCH_SOURCE (part (c): a kept data directory, copied, instead of recording
//! EVENTS events; `tests/bench/thoughts_stdio.py` records one). Without PostgreSQL installed it says so and does nothing (under `CI=true` it fails).

mod common;
#[path = "../postgres/server.rs"]
mod pg_server;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::stdio::StdioClient;
use common::{HttpNode, Latency, across, rate, us};
use pg_server::PgServer;
use serde_json::{Value, json};

/// One `thinkledger serve --http 127.0.0.1:0 --stateless` node on `data_dir`, on `store` when
/// given (else its embedded ledger).
fn start_node(data_dir: &Path, store: Option<&str>) -> HttpNode {
    let mut args = Vec::new();
    if let Some(url) = store {
        args.extend(["--store", url]);
    }
    args.extend([
        "serve",
        "--http",
        "127.0.0.1:0",
        "--stateless",
        "--toolsets",
        "all",
    ]);
    HttpNode::start(data_dir, &args, &[])
}

/// Waits until `data_dir` holds the ledger's signing key, then copies it to `others`.
fn share_key(data_dir: &Path, others: &[&Path]) {
    let key = data_dir.join("signing.key");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !key.exists() {
        assert!(Instant::now() < deadline, "no signing key made");
        std::thread::sleep(Duration::from_millis(10));
    }
    for other in others {
        std::fs::create_dir_all(other).expect("data dir");
        std::fs::copy(&key, other.join("signing.key")).expect("copy the key");
    }
}

/// The call a client makes `i`-th: a thought, a memory, a deliberation step, in turn.
fn mixed_call(
    client: usize,
    i: u64,
    thinking: Option<&str>,
    deliberation: Option<&str>,
) -> (&'static str, Value) {
    match i % 3 {
        0 => {
            let number = (i / 3 % 50) as u32 + 1;
            let mut arguments = common::thought_args(number, 50);
            if let (Some(session), true) = (thinking, number > 1) {
                arguments["sessionId"] = json!(session);
            }
            ("sequentialthinking", arguments)
        }
        1 => (
            "store_memory",
            json!({"content": format!("Client {client} noted fact {i}: invoices are due in 30 days."),
                   "userId": format!("bench-{client}"), "sessionId": "bench", "primarySector": "semantic"}),
        ),
        _ => match deliberation {
            Some(sid) if i % 60 != 2 => (
                "add_thought_node",
                json!({"session_id": sid, "content": format!("Option {i}: ship behind a flag and measure.")}),
            ),
            _ => (
                "start_deliberation",
                json!({"goal": format!("Which rollout should client {client} choose?")}),
            ),
        },
    }
}

/// What one load run measured.
struct Run {
    per_s: f64,
    latency: Latency,
    /// CPU per answered call, in µs: the thinkledger nodes together, and PostgreSQL's processes.
    nodes_cpu_us: f64,
    postgres_cpu_us: f64,
    /// What the nodes logged of the head row at shutdown: mean wait and hold per batch (µs),
    /// and events per batch.
    head: Option<(f64, f64, f64)>,
}

/// CPU seconds used so far by every process named `postgres` (the server and its backends).
fn postgres_cpu() -> f64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "postgres")
        })
        .map(|pid| common::cpu_seconds(&pid))
        .sum()
}

/// The numeric value of `name=` in a log line.
fn logged(line: &str, name: &str) -> Option<f64> {
    let at = line.find(&format!("{name}="))? + name.len() + 1;
    line[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// The head-row figures the nodes in `dirs` logged, batch-weighted: (mean wait µs, mean hold
/// µs, events per batch).
fn head_row(dirs: &[PathBuf]) -> Option<(f64, f64, f64)> {
    let (mut batches, mut events, mut wait, mut hold) = (0.0, 0.0, 0.0, 0.0);
    for dir in dirs {
        let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
        let Some(line) = log.lines().rev().find(|l| l.contains("head row:")) else {
            continue;
        };
        let n = logged(line, "batches")?;
        batches += n;
        events += logged(line, "events")?;
        wait += n * logged(line, "mean_wait_us")?;
        hold += n * logged(line, "mean_hold_us")?;
    }
    (batches > 0.0).then(|| (wait / batches, hold / batches, events / batches))
}

/// `clients` clients spread over `urls`, each calling one call after another until `duration`
/// is up; returns the run's figures and the number of calls answered. `logs[i]` is the log of
/// the node at `urls[i]`, shown if it stops answering.
async fn load(urls: &[String], logs: &[PathBuf], clients: usize, duration: Duration) -> (Run, u64) {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(clients)
        .build()
        .expect("HTTP client");
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::new();
    for client in 0..clients {
        let node = client % urls.len();
        let (http, url, log) = (http.clone(), urls[node].clone(), logs[node].clone());
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            let (mut thinking, mut deliberation): (Option<String>, Option<String>) = (None, None);
            let mut i = 0u64;
            while Instant::now() < deadline {
                let (tool, arguments) =
                    mixed_call(client, i, thinking.as_deref(), deliberation.as_deref());
                let body =
                    common::stateless_call_body(client as u64 * 1_000_000 + i, tool, arguments);
                let start = Instant::now();
                let response = http
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .header("mcp-protocol-version", "2026-07-28")
                    .header("mcp-method", "tools/call")
                    .header("mcp-name", tool)
                    .body(body)
                    .send()
                    .await
                    .unwrap_or_else(|e| {
                        let log = std::fs::read_to_string(&log).unwrap_or_default();
                        panic!("POST tools/call to {url}: {e}\nthe node's log:\n{log}")
                    });
                let status = response.status();
                let text = response.text().await.expect("body");
                samples.push(start.elapsed());
                assert!(status.is_success(), "HTTP {status}: {text}");
                let answer = common::rpc_response(&text);
                let result = &answer["result"];
                assert!(
                    result.is_object() && result["isError"] != json!(true),
                    "{tool} failed: {answer}"
                );
                let content = &result["structuredContent"];
                match tool {
                    "sequentialthinking" => {
                        thinking = content["sessionId"].as_str().map(str::to_owned);
                    }
                    "start_deliberation" => {
                        deliberation = content["session_id"].as_str().map(str::to_owned);
                    }
                    _ => {}
                }
                i += 1;
            }
            samples
        }));
    }
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await.expect("client"));
    }
    let elapsed = started.elapsed();
    let calls = samples.len() as u64;
    (
        Run {
            per_s: calls as f64 / elapsed.as_secs_f64(),
            latency: Latency::of(&samples),
            nodes_cpu_us: 0.0,
            postgres_cpu_us: 0.0,
            head: None,
        },
        calls,
    )
}

/// `thinkledger verify --json` of the ledger in `data_dir` (on `store` when given): asserts it
/// intact, and returns its report.
fn verify_json(data_dir: &Path, store: Option<&str>) -> Value {
    let mut command = Command::new(common::server_binary());
    command.arg("--data-dir").arg(data_dir);
    if let Some(url) = store {
        command.args(["--store", url]);
    }
    let output = command
        .args(["verify", "--json"])
        .env("RUST_LOG", "warn")
        .output()
        .expect("run verify");
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("verify printed no JSON ({e}): {output:?}"));
    assert!(output.status.success(), "verify failed: {report}");
    assert_eq!(report["problems"], json!([]), "{report}");
    report
}

/// [`verify_json`], asserting `events` events.
fn assert_verified(data_dir: &Path, store: Option<&str>, events: u64) -> Value {
    let report = verify_json(data_dir, store);
    assert_eq!(report["events"], events, "{report}");
    report
}

/// One load run of a configuration on a fresh ledger: `nodes` servers (on `pg`'s database
/// `db` when given, else one on sled).
fn run_config(
    runtime: &tokio::runtime::Runtime,
    pg: Option<(&PgServer, &str)>,
    nodes: usize,
    clients: usize,
    duration: Duration,
) -> Run {
    let root = common::temp_data_dir();
    let dirs: Vec<PathBuf> = (0..nodes)
        .map(|n| root.path().join(format!("node{n}")))
        .collect();
    let url = pg.map(|(server, db)| server.url(db));
    let first = start_node(&dirs[0], url.as_deref());
    let others: Vec<&Path> = dirs[1..].iter().map(PathBuf::as_path).collect();
    share_key(&dirs[0], &others);
    let mut started = vec![first];
    for dir in &dirs[1..] {
        started.push(start_node(dir, url.as_deref()));
    }
    let urls: Vec<String> = started.iter().map(|n| n.url.clone()).collect();
    let pids: Vec<String> = started.iter().map(|n| n.child.id().to_string()).collect();
    let nodes_cpu = || pids.iter().map(|p| common::cpu_seconds(p)).sum::<f64>();
    let (nodes_before, pg_before) = (nodes_cpu(), postgres_cpu());
    let logs: Vec<PathBuf> = dirs.iter().map(|d| d.join("server.log")).collect();
    let (mut run, calls) = runtime.block_on(load(&urls, &logs, clients, duration));
    let per_call = |cpu: f64| cpu * 1e6 / calls.max(1) as f64;
    run.nodes_cpu_us = per_call(nodes_cpu() - nodes_before);
    run.postgres_cpu_us = per_call(postgres_cpu() - pg_before);
    for node in started {
        node.stop();
    }
    run.head = head_row(&dirs);
    assert_verified(&dirs[0], url.as_deref(), calls);
    run
}

fn part_load(pg: &PgServer, full: bool) {
    let runs = common::env_usize("RUNS", if full { 3 } else { 1 });
    let millis = common::env_usize("MILLIS", if full { 10_000 } else { 1_000 });
    let clients = common::env_usize("CLIENTS", if full { 32 } else { 8 });
    let duration = Duration::from_millis(millis as u64);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "(a) mixed load (thought, memory, deliberation step in turn), {clients} stateless HTTP \
         clients, {} s per run, {runs} run(s) per configuration, durable",
        duration.as_secs_f64()
    );
    let configs: [(&str, bool, usize); 3] = [
        ("sled, one node", false, 1),
        ("PostgreSQL, one node", true, 1),
        ("PostgreSQL, three nodes", true, 3),
    ];
    let mut rows = Vec::new();
    let mut db = 0;
    for (name, on_pg, nodes) in configs {
        let mut measured = Vec::new();
        for run in 1..=runs {
            db += 1;
            let name_of_db = format!("load{db}");
            let target = on_pg.then_some((pg, name_of_db.as_str()));
            let m = run_config(&runtime, target, nodes, clients, duration);
            let head = m.head.map_or(String::new(), |(wait, hold, per_batch)| {
                format!(
                    " | head row per batch: waited {} held {} ({per_batch:.1} events)",
                    us(wait),
                    us(hold)
                )
            });
            println!(
                "  {name} run {run}: {} p50 {} p99 {} | CPU/call nodes {} postgres {}{head}",
                rate(m.per_s),
                us(m.latency.p50),
                us(m.latency.p99),
                us(m.nodes_cpu_us),
                us(m.postgres_cpu_us),
            );
            measured.push(m);
        }
        rows.push((name, measured));
    }
    println!(
        "\n| configuration | calls/s | p50 | p99 | CPU/call: nodes | CPU/call: PostgreSQL |\n\
         |---|---|---|---|---|---|"
    );
    for (name, measured) in &rows {
        let per_s: Vec<f64> = measured.iter().map(|m| m.per_s).collect();
        let p50: Vec<f64> = measured.iter().map(|m| m.latency.p50).collect();
        let p99: Vec<f64> = measured.iter().map(|m| m.latency.p99).collect();
        let nodes: Vec<f64> = measured.iter().map(|m| m.nodes_cpu_us).collect();
        let postgres: Vec<f64> = measured.iter().map(|m| m.postgres_cpu_us).collect();
        println!(
            "| {name} | {} | {} | {} | {} | {} |",
            across(&per_s, rate),
            across(&p50, us),
            across(&p99, us),
            across(&nodes, us),
            across(&postgres, us)
        );
    }
    let median =
        |i: usize| common::median_spread(&rows[i].1.iter().map(|m| m.per_s).collect::<Vec<_>>()).0;
    println!(
        "\nPostgreSQL one node / sled one node: {:.2}; three nodes / one node on PostgreSQL: {:.2}",
        median(1) / median(0),
        median(2) / median(1)
    );
}

/// `thinkledger sessions` on the ledger in `data_dir` (or `store`): the time a one-shot command
/// takes to open the ledger (replaying every event into state) and answer.
fn open_and_list(data_dir: &Path, store: Option<&str>) -> Duration {
    let mut command = Command::new(common::server_binary());
    command.arg("--data-dir").arg(data_dir);
    if let Some(url) = store {
        command.args(["--store", url]);
    }
    let started = Instant::now();
    let output = command
        .args(["sessions", "--json"])
        .env("RUST_LOG", "warn")
        .output()
        .expect("run sessions");
    let took = started.elapsed();
    assert!(output.status.success(), "sessions failed: {output:?}");
    took
}

/// `thinkledger migrate --from FROM --to TO` with `data_dir` as the data directory; its time.
fn migrate(data_dir: &Path, from: &str, to: &str) -> Duration {
    let started = Instant::now();
    let output = Command::new(common::server_binary())
        .arg("--data-dir")
        .arg(data_dir)
        .args(["migrate", "--from", from, "--to", to])
        .env("RUST_LOG", "warn")
        .output()
        .expect("run migrate");
    let took = started.elapsed();
    assert!(output.status.success(), "migrate failed: {output:?}");
    took
}

fn part_migrate(pg: &PgServer, full: bool) {
    let events = common::env_usize("EVENTS", if full { 100_000 } else { 500 }) as u64;
    let root = common::temp_data_dir();
    let source = root.path().join("source");
    let back = root.path().join("back");
    let recorded = common::record_thoughts(&source, events);
    println!(
        "\n(b) migrate: a ledger of {events} events (recorded in {:.1} s) to PostgreSQL and back",
        recorded.as_secs_f64()
    );
    let url = pg.url("migrated");
    let there = migrate(&source, source.to_str().expect("utf-8"), &url);
    let home = migrate(&source, &url, back.to_str().expect("utf-8"));
    let a = assert_verified(&source, None, events);
    let b = assert_verified(&source, Some(&url), events);
    let c = assert_verified(&back, None, events);
    for (name, report) in [("PostgreSQL", &b), ("back on disk", &c)] {
        assert_eq!(report["headHash"], a["headHash"], "{name}: another head");
        assert_eq!(
            report["checkpointsVerified"], a["checkpointsVerified"],
            "{name}: other checkpoints"
        );
    }
    let checkpoints = |dir: &Path| {
        std::fs::read(thinkledger::server::ledger_dir(dir).join("checkpoints.jsonl"))
            .expect("checkpoints")
    };
    assert!(
        checkpoints(&source) == checkpoints(&back),
        "the checkpoints differ after the round trip"
    );
    println!(
        "| direction | time | events/s |\n|---|---|---|\n| sled → PostgreSQL | {:.1} s | {} |\n\
         | PostgreSQL → sled | {:.1} s | {} |",
        there.as_secs_f64(),
        rate(events as f64 / there.as_secs_f64()),
        home.as_secs_f64(),
        rate(events as f64 / home.as_secs_f64()),
    );
    println!(
        "both copies verify: head {}, {} signed checkpoints hold on each, checkpoint files identical",
        a["headHash"].as_str().unwrap_or("?"),
        a["checkpointsVerified"]
    );
    // What a one-shot command's start costs on each: it opens the ledger and answers.
    let sled: Vec<f64> = (0..3)
        .map(|_| open_and_list(&back, None).as_secs_f64())
        .collect();
    let postgres: Vec<f64> = (0..3)
        .map(|_| open_and_list(&source, Some(&url)).as_secs_f64())
        .collect();
    // On each the first open replays and leaves a snapshot of state the next ones load (on
    // PostgreSQL in the database); a one-shot command then checks the events under it.
    let runs = |v: &[f64]| {
        v.iter()
            .map(|t| format!("{t:.2} s"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "open {events} events and list sessions (`thinkledger sessions`, 3 runs in a row): \
         sled {}; PostgreSQL {} (on each the first replays, the others load its snapshot)",
        runs(&sled),
        runs(&postgres)
    );
}

/// A `thinkledger --store URL serve` (stdio) node started on the ledger at `url`: the time from
/// its spawn to the answer of its first call (a new session's first thought, which is event
/// `expected_seq`), and the `state rebuilt` line it logged.
fn first_call(data_dir: &Path, url: &str, expected_seq: u64) -> (Duration, String) {
    let log = data_dir.join("start.log");
    let mut command = Command::new(common::server_binary());
    command
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--store", url, "serve"]);
    let spawned = Instant::now();
    let mut client = StdioClient::spawn_command(command, &log);
    client.initialize();
    client.first_thought(expected_seq);
    let took = spawned.elapsed();
    let finished = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| client.finish()));
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    if let Err(panic) = finished {
        eprintln!("the node's log:\n{logged}");
        std::panic::resume_unwind(panic);
    }
    let rebuilt = logged
        .lines()
        .find(|l| l.contains("state rebuilt"))
        .map_or_else(String::new, |l| {
            l.split("state rebuilt")
                .nth(1)
                .unwrap_or("")
                .trim()
                .to_owned()
        });
    (took, rebuilt)
}

/// (c) A PostgreSQL node's start on a ledger of EVENTS events: spawn to first call answered,
/// without a snapshot in the database (the rows deleted first: a full replay, as every start
/// was before snapshots were kept there; it saves one as it stops) and then from the snapshot
/// the previous start saved, RUNS times in turn.
fn part_start(pg: &PgServer, full: bool) {
    let runs = common::env_usize("RUNS", if full { 3 } else { 1 });
    let root = common::temp_data_dir();
    let source = root.path().join("source");
    // A kept ledger (`tests/bench/thoughts_stdio.py` records one through a release server in
    // minutes) is copied, not recorded again.
    let (events, recorded) = match std::env::var_os("THINKLEDGER_BENCH_SOURCE") {
        Some(kept) => {
            let status = Command::new("cp")
                .arg("-r")
                .arg(&kept)
                .arg(&source)
                .status()
                .expect("run cp");
            assert!(status.success(), "copy {kept:?}");
            let report = verify_json(&source, None);
            let events = report["events"]
                .as_u64()
                .expect("events in verify's report");
            (events, Duration::ZERO)
        }
        None => {
            let events = common::env_usize("EVENTS", if full { 100_000 } else { 500 }) as u64;
            (events, common::record_thoughts(&source, events))
        }
    };
    let url = pg.url("start");
    let copied = migrate(&source, source.to_str().expect("utf-8"), &url);
    println!(
        "\n(c) a PostgreSQL node's start (spawn to first call answered) on {events} events \
         (recorded in {:.1} s, copied in {:.1} s), {runs} run(s) each",
        recorded.as_secs_f64(),
        copied.as_secs_f64()
    );
    let (mut replayed, mut loaded) = (Vec::new(), Vec::new());
    let mut seq = events;
    for run in 1..=runs {
        pg.psql("start", "DELETE FROM thinkledger_snapshots");
        seq += 1;
        let (without, how) = first_call(&source, &url, seq);
        println!(
            "  run {run} without a snapshot: {:.3} s ({how})",
            without.as_secs_f64()
        );
        seq += 1;
        let (with, how) = first_call(&source, &url, seq);
        println!(
            "  run {run} from the snapshot: {:.3} s ({how})",
            with.as_secs_f64()
        );
        replayed.push(without.as_secs_f64() * 1e3);
        loaded.push(with.as_secs_f64() * 1e3);
    }
    let ms = |v: f64| format!("{v:.0} ms");
    let size = pg.psql(
        "start",
        "SELECT coalesce(max(octet_length(bytes)), 0) FROM thinkledger_snapshots",
    );
    println!(
        "| {events} events | without a snapshot (full replay) | from the snapshot ({size} bytes) |\n\
         |---|---|---|\n| first call answered | {} | {} |",
        across(&replayed, ms),
        across(&loaded, ms)
    );
}

fn main() {
    let full = common::full_mode();
    let Some(pg) = PgServer::start() else { return };
    println!("{}", common::machine());
    println!("{}", common::load());
    let part = std::env::var("THINKLEDGER_BENCH_PART").unwrap_or_default();
    if part.is_empty() || part == "load" {
        part_load(&pg, full);
    }
    if part.is_empty() || part == "migrate" {
        part_migrate(&pg, full);
    }
    if part.is_empty() || part == "start" {
        part_start(&pg, full);
    }
}
