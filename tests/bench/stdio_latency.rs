//! Per-call round-trip latency of durable `sequentialthinking` calls over stdio.
//!
//! Spawns the built `thinkledger` binary on a fresh data dir, speaks newline-delimited JSON-RPC
//! to it with a minimal client (serde_json only, so the numbers are the server's), performs the
//! MCP handshake, warms up, then sends `CALLS` calls one at a time, each answered only after its
//! event is fsynced. Repeats the whole measurement `RUNS` times (a fresh process and ledger
//! each) and reports the median of each statistic with its min–max across runs. After each run
//! the ledger is verified: intact, with exactly warm-up + calls events.
//!
//! Side by side: with `THINKLEDGER_BENCH_REFERENCE` set to the reference server's entry script
//! (`node_modules/@modelcontextprotocol/server-sequential-thinking/dist/index.js` after
//! `npm install @modelcontextprotocol/server-sequential-thinking`), each run is followed by a
//! run of the reference server (`node SCRIPT`, thought logging off, memory only) with the same
//! client and the same calls, and the summary sets the two side by side.
//!
//! Relayed beside direct: each run also starts two servers on one fresh data directory — the
//! first owns the ledger and serves its client directly, the second relays its client's lines
//! to the first over the directory's socket (docs/scaling.md, "One ledger, many
//! processes") — and alternates calls between the two clients, so the relay's overhead is the
//! difference of two p50s taken under the same load.
//!
//! `cargo bench --bench stdio_latency` (full run); under `cargo test` it does a smoke run.
//! Overrides: THINKLEDGER_BENCH_RUNS, THINKLEDGER_BENCH_CALLS, THINKLEDGER_BENCH_WARMUP.

mod common;

use std::time::{Duration, Instant};

use common::stdio::StdioClient;
use common::{Latency, across, rate, us};

struct Run {
    all: Latency,
    first_tenth_p50: f64,
    last_tenth_p50: f64,
    calls_per_s: f64,
    /// CPU time per timed call, in µs: the server process's and this client's.
    server_cpu_us: f64,
    client_cpu_us: f64,
    verify: Duration,
    event_bytes: f64,
}

fn run_once(warmup: usize, calls: usize) -> Run {
    let dir = common::temp_data_dir();
    let mut client = StdioClient::spawn(dir.path());
    client.initialize();
    let total = u32::try_from(warmup + calls).expect("call count fits u32");
    let mut seq = 0u64;
    for i in 0..warmup {
        seq += 1;
        client.think(u32::try_from(i + 1).unwrap_or(u32::MAX), total, seq);
    }
    let mut samples = Vec::with_capacity(calls);
    let pid = client.child.id().to_string();
    let (server_cpu, client_cpu) = (common::cpu_seconds(&pid), common::cpu_seconds("self"));
    let started = Instant::now();
    for i in 0..calls {
        seq += 1;
        samples.push(client.think(
            u32::try_from(warmup + i + 1).unwrap_or(u32::MAX),
            total,
            seq,
        ));
    }
    let elapsed = started.elapsed();
    let server_cpu_us = (common::cpu_seconds(&pid) - server_cpu) * 1e6 / calls as f64;
    let client_cpu_us = (common::cpu_seconds("self") - client_cpu) * 1e6 / calls as f64;
    client.finish();
    let ledger = thinkledger::server::ledger_dir(dir.path());
    let verified = common::verify_ledger(&ledger, seq, seq * common::TEXT_REFS_PER_THOUGHT);
    let tenth = (calls / 10).max(1);
    Run {
        all: Latency::of(&samples),
        first_tenth_p50: Latency::of(&samples[..tenth]).p50,
        last_tenth_p50: Latency::of(&samples[calls - tenth..]).p50,
        calls_per_s: calls as f64 / elapsed.as_secs_f64(),
        server_cpu_us,
        client_cpu_us,
        verify: verified.took,
        event_bytes: verified.mean_event_bytes,
    }
}

/// One run of a direct and a relayed client on one ledger, calls alternating between them:
/// (direct, relayed) latencies.
fn relayed_once(warmup: usize, calls: usize) -> (Latency, Latency) {
    let dir = common::temp_data_dir();
    let mut direct = StdioClient::spawn_logged(dir.path(), &dir.path().join("owner.log"));
    direct.initialize();
    let mut relayed = StdioClient::spawn_logged(dir.path(), &dir.path().join("relay.log"));
    relayed.initialize();
    let total = u32::try_from(warmup + calls).expect("call count fits u32");
    let mut seq = 0u64;
    let (mut d, mut r) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    for i in 0..warmup + calls {
        let number = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let took_direct = direct.think(number, total, seq + 1);
        let took_relayed = relayed.think(number, total, seq + 2);
        seq += 2;
        if i >= warmup {
            d.push(took_direct);
            r.push(took_relayed);
        }
    }
    // The relay leaves first: the owner stays while any relay is connected.
    relayed.finish();
    direct.finish();
    let ledger = thinkledger::server::ledger_dir(dir.path());
    // A relayed call also keeps its answer as a text (the idempotency key its relay gave it,
    // so that a retry after losing the owner is answered from the log).
    let relayed_calls = seq / 2;
    common::verify_ledger(
        &ledger,
        seq,
        seq * common::TEXT_REFS_PER_THOUGHT + relayed_calls,
    );
    (Latency::of(&d), Latency::of(&r))
}

/// The disk floor: `SledStore::append_batch` + `sync` of one event-sized record at a time, with
/// no MCP, no decision and no hashing: what a durable call cannot go below on this disk.
fn store_floor(ops: usize) -> Latency {
    use thinkledger::events::SessionId;
    use thinkledger::ledger::{Batch, LedgerMeta, SledStore, StagedEvent, Store, TextRecord};
    let dir = common::temp_data_dir();
    let mut store = SledStore::open(&dir.path().join("ledger")).expect("open sled");
    let meta = LedgerMeta {
        ledger_id: "floor".into(),
        created_at: "now".into(),
        format: "thinkledger/1".into(),
    };
    store.init_meta(&meta).expect("init meta");
    let session = SessionId::random();
    let mut samples = Vec::with_capacity(ops);
    for seq in 1..=ops as u64 {
        // About the size of a recorded sequentialthinking event and its thought.
        let batch = Batch {
            events: vec![StagedEvent {
                seq,
                bytes: vec![b'x'; 1200],
                session: Some(session.clone()),
            }],
            texts: vec![(
                [seq as u8; 32],
                TextRecord {
                    salt: [7; 32],
                    text: "t".repeat(150),
                },
            )],
        };
        let start = Instant::now();
        store.append_batch(&batch).expect("append");
        store.sync().expect("sync");
        samples.push(start.elapsed());
    }
    Latency::of(&samples)
}

/// The least any durable call can take here: append 300 bytes to one file and `fdatasync` it,
/// `ops` times (what one sync of one log file would cost per call).
fn fdatasync_floor(ops: usize) -> Latency {
    use std::io::Write;
    let dir = common::temp_data_dir();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.path().join("floor.log"))
        .expect("open the floor file");
    let mut samples = Vec::with_capacity(ops);
    for _ in 0..ops {
        let start = Instant::now();
        file.write_all(&[b'x'; 300]).expect("append");
        file.sync_data().expect("fdatasync");
        samples.push(start.elapsed());
    }
    Latency::of(&samples)
}

/// One run of the reference server: the same client, warm-up and calls as [`run_once`].
fn reference_once(script: &std::ffi::OsStr, warmup: usize, calls: usize) -> (Latency, f64, f64) {
    let dir = common::temp_data_dir();
    let mut command = std::process::Command::new("node");
    command.arg(script).env("DISABLE_THOUGHT_LOGGING", "true");
    let mut client = StdioClient::spawn_command(command, &dir.path().join("reference.log"));
    client.initialize();
    let total = u32::try_from(warmup + calls).expect("call count fits u32");
    for i in 0..warmup {
        client.timed_thought(u32::try_from(i + 1).unwrap_or(u32::MAX), total);
    }
    let pid = client.child.id().to_string();
    let cpu = common::cpu_seconds(&pid);
    let started = Instant::now();
    let samples: Vec<Duration> = (0..calls)
        .map(|i| {
            let number = u32::try_from(warmup + i + 1).unwrap_or(u32::MAX);
            client.timed_thought(number, total).0
        })
        .collect();
    let per_s = calls as f64 / started.elapsed().as_secs_f64();
    let cpu_us = (common::cpu_seconds(&pid) - cpu) * 1e6 / calls as f64;
    client.finish();
    (Latency::of(&samples), per_s, cpu_us)
}

fn main() {
    let full = common::full_mode();
    let runs = common::env_usize("RUNS", if full { 5 } else { 1 }).max(1);
    let calls = common::env_usize("CALLS", if full { 2000 } else { 20 }).max(1);
    let warmup = common::env_usize("WARMUP", if full { 200 } else { 5 });
    let probe = common::temp_data_dir();
    println!(
        "stdio_latency: {}",
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
        "  {runs} runs × ({warmup} warm-up + {calls} timed) sequential durable calls, one session per run"
    );
    drop(probe);
    let wall = Instant::now();
    let floor = store_floor(calls);
    println!(
        "  disk floor (SledStore append_batch + sync of one 1.2 KB event + 150 B text, {calls} times): p50 {} p90 {} p99 {} max {}",
        us(floor.p50),
        us(floor.p90),
        us(floor.p99),
        us(floor.max)
    );
    let one_sync = fdatasync_floor(calls);
    println!(
        "  one-sync floor (append 300 B to one file + fdatasync, {calls} times): p50 {} p90 {} p99 {} max {}",
        us(one_sync.p50),
        us(one_sync.p90),
        us(one_sync.p99),
        us(one_sync.max)
    );
    let reference = std::env::var_os("THINKLEDGER_BENCH_REFERENCE");
    let mut references = Vec::new();
    let mut relays = Vec::new();
    let mut results = Vec::with_capacity(runs);
    for run in 1..=runs {
        if let Some(script) = &reference {
            let (r, per_s, cpu) = reference_once(script, warmup, calls);
            println!(
                "  reference run {run}: p50 {} p90 {} p99 {} max {} mean {} | {} | CPU/call server {}",
                us(r.p50),
                us(r.p90),
                us(r.p99),
                us(r.max),
                us(r.mean),
                rate(per_s),
                us(cpu),
            );
            references.push((r, per_s, cpu));
        }
        let r = run_once(warmup, calls);
        println!(
            "  run {run}: p50 {} p90 {} p99 {} max {} mean {} | {} | p50 first/last tenth {}/{} | \
             CPU/call server {} client {} | verified in {:.0} ms ({:.0} B/event)",
            us(r.all.p50),
            us(r.all.p90),
            us(r.all.p99),
            us(r.all.max),
            us(r.all.mean),
            rate(r.calls_per_s),
            us(r.first_tenth_p50),
            us(r.last_tenth_p50),
            us(r.server_cpu_us),
            us(r.client_cpu_us),
            r.verify.as_secs_f64() * 1e3,
            r.event_bytes,
        );
        results.push(r);
        let (direct, relayed) = relayed_once(warmup, calls);
        println!(
            "  run {run}, direct and relayed clients on one ledger, alternating: p50 {} vs {} \
             (relay adds {}), p99 {} vs {}",
            us(direct.p50),
            us(relayed.p50),
            us(relayed.p50 - direct.p50),
            us(direct.p99),
            us(relayed.p99),
        );
        relays.push((direct, relayed));
    }
    let col = |f: fn(&Run) -> f64| results.iter().map(f).collect::<Vec<_>>();
    println!("summary over {runs} run(s): median (min–max across runs)");
    println!("  p50      {}", across(&col(|r| r.all.p50), us));
    println!("  p90      {}", across(&col(|r| r.all.p90), us));
    println!("  p99      {}", across(&col(|r| r.all.p99), us));
    println!("  max      {}", across(&col(|r| r.all.max), us));
    println!("  mean     {}", across(&col(|r| r.all.mean), us));
    println!("  calls/s  {}", across(&col(|r| r.calls_per_s), rate));
    println!(
        "  server CPU per call {}",
        across(&col(|r| r.server_cpu_us), us)
    );
    println!(
        "  p50 of the first tenth {} vs the last tenth {}",
        across(&col(|r| r.first_tenth_p50), us),
        across(&col(|r| r.last_tenth_p50), us)
    );
    let relay_col = |f: fn(&(Latency, Latency)) -> f64| relays.iter().map(f).collect::<Vec<_>>();
    println!("direct and relayed clients on one ledger, calls alternating: median (min–max)");
    println!("  direct p50   {}", across(&relay_col(|r| r.0.p50), us));
    println!("  relayed p50  {}", across(&relay_col(|r| r.1.p50), us));
    println!(
        "  relay's p50 overhead {}",
        across(&relay_col(|r| r.1.p50 - r.0.p50), us)
    );
    println!("  direct p99   {}", across(&relay_col(|r| r.0.p99), us));
    println!("  relayed p99  {}", across(&relay_col(|r| r.1.p99), us));
    if !references.is_empty() {
        let rcol =
            |f: fn(&(Latency, f64, f64)) -> f64| references.iter().map(f).collect::<Vec<_>>();
        let ratio = |ours: f64, theirs: f64| format!("{:.2}×", ours / theirs);
        let (p50, rp50) = (
            common::median_spread(&col(|r| r.all.p50)).0,
            common::median_spread(&rcol(|r| r.0.p50)).0,
        );
        let (p99, rp99) = (
            common::median_spread(&col(|r| r.all.p99)).0,
            common::median_spread(&rcol(|r| r.0.p99)).0,
        );
        println!("reference server, same client and calls, runs interleaved: median (min–max)");
        println!("  p50      {}", across(&rcol(|r| r.0.p50), us));
        println!("  p99      {}", across(&rcol(|r| r.0.p99), us));
        println!("  max      {}", across(&rcol(|r| r.0.max), us));
        println!("  calls/s  {}", across(&rcol(|r| r.1), rate));
        println!("  server CPU per call {}", across(&rcol(|r| r.2), us));
        println!(
            "thinkledger / reference: p50 {}, p99 {}",
            ratio(p50, rp50),
            ratio(p99, rp99)
        );
    }
    println!(
        "  every run's ledger verified intact with the expected event count; wall time {:.1} s; {} at end",
        wall.elapsed().as_secs_f64(),
        common::load()
    );
}
