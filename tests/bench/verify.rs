//! Throughput of `verify` on a ledger of realistic `sequentialthinking` events: the whole
//! check `thinkledger verify` makes (chain, canonical bytes, every event hash, every text
//! reference against its stored text, erasures, the ledger's own signed checkpoints against the
//! Merkle tree rebuilt from the log).
//!
//! The ledger is built once through the real writer (`common::record_thoughts`: 64 concurrent
//! callers, sessions of 50 thoughts, durable), then verified RUNS times, each on a freshly
//! opened store; the report gives events/s as the median with min–max, and the bytes per event
//! the ledger takes on disk. Beside them, what reading `log.dat` whole costs: from the disk
//! itself (`dd iflag=direct`, past the page cache) and from the page cache.
//!
//! `cargo bench --bench verify` (full run: 100,000 events, 5 runs); under `cargo test` a smoke
//! run of 2,000 events and one run. Overrides: `VERIFY_BENCH_EVENTS` (events in the ledger),
//! `THINKLEDGER_BENCH_RUNS`, and `VERIFY_BENCH_DIR`: a data dir to keep the ledger in and reuse
//! on the next run (built there if it holds no ledger yet), so two builds of the code can be
//! compared on the very same ledger.

mod common;

use std::path::PathBuf;
use std::time::Instant;

use common::{across, rate, record_thoughts};
use thinkledger::ledger::notary::{CHECKPOINTS_FILE, read_checkpoints};
use thinkledger::ledger::{SledStore, Store, keyfile, verify_with_checkpoints};
use thinkledger::server;

fn main() {
    let full = common::full_mode();
    let events: u64 = std::env::var("VERIFY_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 100_000 } else { 2_000 });
    let runs = common::env_usize("RUNS", if full { 5 } else { 1 }).max(1);
    let temp = common::temp_data_dir();
    let data_dir: PathBuf = std::env::var_os("VERIFY_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| temp.path().to_path_buf());
    println!(
        "verify: {}",
        if full {
            "full run"
        } else {
            "smoke run (cargo test); use cargo bench for numbers"
        }
    );
    println!(
        "  machine:  {}; {} at start",
        common::machine(),
        common::load()
    );
    println!("  data dir: {}", common::describe_dir(&data_dir));

    let ledger_dir = server::ledger_dir(&data_dir);
    if ledger_dir.exists() {
        println!("  reusing the ledger already in the data dir");
    } else {
        let took = record_thoughts(&data_dir, events);
        println!(
            "  build:    {events} events recorded durably in {:.1} s ({})",
            took.as_secs_f64(),
            rate(events as f64 / took.as_secs_f64())
        );
    }

    let mut rates = Vec::new();
    let mut secs = Vec::new();
    let mut found = 0;
    let mut texts = 0;
    for _ in 0..runs {
        let store = SledStore::open(&ledger_dir).expect("open store");
        let meta = store.meta().expect("meta").expect("a ledger");
        let verifier = keyfile::load_or_create(&server::key_path(&data_dir), &meta.ledger_id)
            .expect("key")
            .verifier();
        let checkpoints =
            read_checkpoints(&ledger_dir.join(CHECKPOINTS_FILE)).expect("checkpoints");
        let started = Instant::now();
        let report =
            verify_with_checkpoints(&store, &checkpoints, &[], Some(&verifier)).expect("verify");
        let took = started.elapsed().as_secs_f64();
        assert!(
            report.is_intact(),
            "{:?}",
            &report.problems[..report.problems.len().min(5)]
        );
        assert!(
            report.checkpoints_verified >= 1,
            "no checkpoint was checked"
        );
        assert_eq!(
            report.texts_verified,
            report.events * common::TEXT_REFS_PER_THOUGHT
        );
        found = report.events;
        texts = report.texts_verified;
        rates.push(report.events as f64 / took);
        secs.push(took);
    }
    let on_disk = common::disk_bytes(&ledger_dir);
    let log_file = std::fs::metadata(ledger_dir.join("log.dat")).map_or(0, |m| m.len());
    println!(
        "  ledger:   {found} events, {texts} text references, {:.0} bytes per event on disk \
         ({:.0} in log.dat, the rest sled's index and the snapshot)",
        on_disk as f64 / found.max(1) as f64,
        log_file as f64 / found.max(1) as f64
    );
    println!(
        "  verify:   {} events/s, {} s per run ({runs} runs, median (min–max))",
        across(&rates, |v| format!("{v:.0}")),
        across(&secs, |s| format!("{s:.2}"))
    );
    let log = ledger_dir.join("log.dat");
    let disk: Vec<f64> = (0..runs).filter_map(|_| direct_read_secs(&log)).collect();
    let cached: Vec<f64> = (0..runs).map(|_| cached_read_secs(&log)).collect();
    // As rates, so that median (min–max) reads low to high.
    let megabytes =
        |secs: &[f64]| -> Vec<f64> { secs.iter().map(|s| log_file as f64 / s / 1e6).collect() };
    let events_per_s =
        |secs: &[f64]| -> Vec<f64> { secs.iter().map(|s| found as f64 / s).collect() };
    let whole = |v: f64| format!("{v:.0}");
    if disk.is_empty() {
        println!("  disk:     unavailable (dd with iflag=direct did not run on this filesystem)");
    } else {
        println!(
            "  disk:     log.dat read sequentially past the page cache (dd iflag=direct bs=1M): \
             {} MB/s, as events {} events/s",
            across(&megabytes(&disk), whole),
            across(&events_per_s(&disk), whole)
        );
    }
    println!(
        "  cache:    log.dat read sequentially from the page cache (1 MiB reads): {} MB/s, \
         as events {} events/s",
        across(&megabytes(&cached), whole),
        across(&events_per_s(&cached), whole)
    );
}

/// Seconds `dd` takes to read `file` whole with `O_DIRECT` (the disk's own sequential read
/// rate, whatever the page cache holds); `None` where the filesystem refuses direct reads.
fn direct_read_secs(file: &std::path::Path) -> Option<f64> {
    let started = Instant::now();
    let status = std::process::Command::new("dd")
        .arg(format!("if={}", file.display()))
        .args(["of=/dev/null", "bs=1M", "iflag=direct", "status=none"])
        .status()
        .ok()?;
    status.success().then(|| started.elapsed().as_secs_f64())
}

/// Seconds a plain sequential read of `file` in 1 MiB pieces takes (after the verify runs the
/// file is in the page cache: what verify's own reading could reach at best).
fn cached_read_secs(file: &std::path::Path) -> f64 {
    use std::io::Read;
    let mut buffer = vec![0u8; 1 << 20];
    let mut reader = std::fs::File::open(file).expect("open log.dat");
    let started = Instant::now();
    while reader.read(&mut buffer).expect("read log.dat") > 0 {}
    started.elapsed().as_secs_f64()
}
