//! How the server behaves as its ledger grows: for ledgers of 10,000 and 100,000 events (and
//! 1,000,000 on request), the time a freshly started `thinkledger serve` (stdio, release
//! build) takes to answer `initialize`, to answer its first tool call, its resident memory
//! after that call, how long it logged the ledger's opening took, then `verify`'s events/s and
//! the bytes each event takes on disk.
//!
//! Each ledger is built once through the real writer (`common::record_thoughts`: 64 callers,
//! sessions of 50 `sequentialthinking` thoughts, durable), then the server is started RUNS
//! times on it; every start adds the one event of its first call. Times are measured from the
//! spawn of the process to the response line read, with the minimal client of
//! `common::stdio`; figures are the median with min–max across starts.
//!
//! `cargo bench --bench scale` (10,000 and 100,000 events, 3 starts each); under `cargo test`
//! a smoke run of 500 events and one start. Overrides: `SCALE_BENCH_EVENTS` (comma-separated
//! ledger sizes, e.g. `10000,100000,1000000`), `THINKLEDGER_BENCH_RUNS`, and
//! `SCALE_BENCH_DIR`: a directory to keep the ledgers in (one data dir per size) and reuse.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::stdio::StdioClient;
use common::{across, rate, record_thoughts};
use thinkledger::ledger::Store;
use thinkledger::server;

/// What one start of the server showed.
struct Start {
    initialize: Duration,
    first_call: Duration,
    /// First calls refused with `ledger_opening` before one was answered.
    refused: u32,
    rss_mb: f64,
    peak_rss_mb: f64,
    /// The opening time the server logged (`ledger open … took_ms=`).
    open_logged: Option<Duration>,
}

/// A `VmRSS`-style field of `/proc/PID/status`, in MB.
fn status_mb(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// The `took_ms` of the server's "ledger open" log line.
fn logged_open(log: &Path) -> Option<Duration> {
    let text = std::fs::read_to_string(log).ok()?;
    let line = text
        .lines()
        .find(|l| l.contains("ledger open") && l.contains("took_ms="))?;
    let ms: String = line
        .split("took_ms=")
        .nth(1)?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    ms.parse().ok().map(Duration::from_millis)
}

fn start_once(data_dir: &Path, expected_seq: u64) -> Start {
    let spawned = Instant::now();
    let mut client = StdioClient::spawn(data_dir);
    client.initialize();
    let initialize = spawned.elapsed();
    let refused = client.first_thought(expected_seq);
    let first_call = spawned.elapsed();
    let pid = client.child.id();
    let (rss_mb, peak_rss_mb) = (status_mb(pid, "VmRSS:"), status_mb(pid, "VmHWM:"));
    client.finish();
    Start {
        initialize,
        first_call,
        refused,
        rss_mb,
        peak_rss_mb,
        open_logged: logged_open(&data_dir.join("server.log")),
    }
}

fn main() {
    let full = common::full_mode();
    let sizes: Vec<u64> = std::env::var("SCALE_BENCH_EVENTS")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| {
            if full {
                vec![10_000, 100_000]
            } else {
                vec![500]
            }
        });
    let runs = common::env_usize("RUNS", if full { 3 } else { 1 }).max(1);
    let temp = common::temp_data_dir();
    let root: PathBuf = std::env::var_os("SCALE_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| temp.path().to_path_buf());
    println!(
        "scale: {}",
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
    println!("  data dir: {}", common::describe_dir(&root));
    for size in sizes {
        let data_dir = root.join(size.to_string());
        let ledger_dir = server::ledger_dir(&data_dir);
        if ledger_dir.exists() {
            println!("\n  {size} events: reusing the ledger already built");
        } else {
            std::fs::create_dir_all(&data_dir).expect("create data dir");
            let took = record_thoughts(&data_dir, size);
            println!(
                "\n  {size} events: built in {:.1} s ({})",
                took.as_secs_f64(),
                rate(size as f64 / took.as_secs_f64())
            );
        }
        let before = common::open_settled(&ledger_dir)
            .last_seq()
            .expect("read the log")
            .unwrap_or(0);
        let mut starts = Vec::new();
        for run in 0..runs {
            starts.push(start_once(&data_dir, before + run as u64 + 1));
        }
        let events = before + runs as u64;
        let verified =
            common::verify_ledger(&ledger_dir, events, events * common::TEXT_REFS_PER_THOUGHT);
        let ms = |f: fn(&Start) -> Duration| -> Vec<f64> {
            starts.iter().map(|s| f(s).as_secs_f64() * 1e3).collect()
        };
        let mb = |f: fn(&Start) -> f64| -> Vec<f64> { starts.iter().map(f).collect() };
        let logged: Vec<f64> = starts
            .iter()
            .filter_map(|s| s.open_logged)
            .map(|d| d.as_secs_f64() * 1e3)
            .collect();
        let fmt_ms = |v: f64| format!("{v:.0} ms");
        println!(
            "    initialize answered:   {}",
            across(&ms(|s| s.initialize), fmt_ms)
        );
        println!(
            "    first call answered:   {} ({} refused as still opening first)",
            across(&ms(|s| s.first_call), fmt_ms),
            starts.iter().map(|s| s.refused).sum::<u32>()
        );
        println!(
            "    ledger open (logged):  {}",
            if logged.is_empty() {
                "not logged".to_owned()
            } else {
                across(&logged, fmt_ms)
            }
        );
        println!(
            "    RSS after first call:  {}; peak {}",
            across(&mb(|s| s.rss_mb), |v| format!("{v:.0} MB")),
            across(&mb(|s| s.peak_rss_mb), |v| format!("{v:.0} MB"))
        );
        println!(
            "    verify:                {} ({:.2} s)",
            rate(events as f64 / verified.took.as_secs_f64()),
            verified.took.as_secs_f64()
        );
        println!(
            "    on disk:               {:.0} bytes per event ({:.0} bytes of event JSON)",
            common::disk_bytes(&ledger_dir) as f64 / events as f64,
            verified.mean_event_bytes
        );
    }
}
