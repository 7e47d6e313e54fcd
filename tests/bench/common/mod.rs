//! Helpers shared by the bench binaries: run mode, data directories on a real disk, latency
//! statistics, and the post-run ledger check.
#![allow(dead_code)] // each bench binary uses a different subset

pub mod stdio;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use thinkledger::app::{AppConfig, Command as AppCommand};
use thinkledger::effects::Effects as _;
use thinkledger::events::{Actor, OutcomeStatus, SessionId};
use thinkledger::ledger::{LedgerError, SledStore, Store, VerifyReport, verify};
use thinkledger::server;

/// True under `cargo bench` (cargo passes `--bench`); false under `cargo test --all-targets`,
/// which runs bench binaries without arguments: they then do a tiny smoke run.
pub fn full_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// The `thinkledger` binary a bench drives: this build's, or `THINKLEDGER_BENCH_SERVER` (another
/// build's, e.g. the previous commit's, to measure a baseline on the same machine in the same
/// session).
pub fn server_binary() -> std::ffi::OsString {
    std::env::var_os("THINKLEDGER_BENCH_SERVER")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_thinkledger").into())
}

/// An environment override for a bench parameter (`THINKLEDGER_BENCH_<NAME>`).
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(format!("THINKLEDGER_BENCH_{name}"))
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The mount point, filesystem type and device holding `path` (longest matching mount in
/// /proc/mounts).
pub fn filesystem_of(path: &Path) -> (String, String, String) {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let mut best: Option<(String, String, String)> = None;
    for line in mounts.lines() {
        let mut fields = line.split_whitespace();
        let (Some(dev), Some(mnt), Some(fs)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        if path.starts_with(mnt) && best.as_ref().is_none_or(|(m, _, _)| mnt.len() > m.len()) {
            best = Some((mnt.to_owned(), fs.to_owned(), dev.to_owned()));
        }
    }
    best.unwrap_or_else(|| ("?".into(), "unknown".into(), "?".into()))
}

/// A fresh temporary data directory on a real disk: the system temp dir unless it is a
/// memory filesystem, else cargo's per-target tmp dir under `target/`.
pub fn temp_data_dir() -> tempfile::TempDir {
    let tmp = std::env::temp_dir();
    let (_, fs, _) = filesystem_of(&tmp);
    let base: PathBuf = if matches!(fs.as_str(), "tmpfs" | "ramfs") {
        PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
    } else {
        tmp
    };
    tempfile::Builder::new()
        .prefix("thinkledger-bench-")
        .tempdir_in(base)
        .expect("create a temporary data dir")
}

/// One line describing where a data dir lives, for the bench output.
pub fn describe_dir(dir: &Path) -> String {
    let (mnt, fs, dev) = filesystem_of(dir);
    let base = dir.parent().unwrap_or(dir);
    format!("{} ({fs} on {dev}, mounted at {mnt})", base.display())
}

/// Arguments of one `sequentialthinking` call.
pub fn thought_args(number: u32, total: u32) -> Value {
    json!({
        "thought": format!(
            "Step {number}: weigh the evidence gathered so far, state the open question, and \
             decide what to check next before committing to an answer."
        ),
        "nextThoughtNeeded": number < total,
        "thoughtNumber": number,
        "totalThoughts": total,
    })
}

/// One 2026-07-28 `tools/call` as a plain HTTP body (a stateless request: protocol version,
/// client capabilities and client info in its `_meta`).
pub fn stateless_call_body(id: u64, tool: &str, arguments: Value) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "thinkledger-bench", "version": "0"},
            },
        },
    })
    .to_string()
}

/// The JSON-RPC response in an HTTP body, whether sent as JSON or as one SSE event.
pub fn rpc_response(body: &str) -> Value {
    let json = body
        .lines()
        .find_map(|line| line.strip_prefix("data:"))
        .unwrap_or(body)
        .trim();
    serde_json::from_str(json).unwrap_or_else(|e| panic!("not a JSON-RPC answer ({e}): {body}"))
}

/// Concurrent callers [`record_thoughts`] uses.
pub const CALLERS: u64 = 64;
/// Thoughts per session in [`record_thoughts`]: a new session starts after this many.
pub const CHAIN: u32 = 50;

fn bench_actor() -> Actor {
    Actor {
        principal: "local".into(),
        transport: "stdio".into(),
        client_name: Some("bench".into()),
        client_version: None,
        role: Default::default(),
        user_ids: Vec::new(),
    }
}

/// Records `events` `sequentialthinking` thoughts in `data_dir` through the real writer
/// (`server::open`, as the server does: sled store, text file, signing key, checkpoints), with
/// CALLERS concurrent callers in sessions of CHAIN thoughts; its shutdown signs the final
/// checkpoint. Returns the time the calls took.
pub fn record_thoughts(data_dir: &Path, events: u64) -> Duration {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let ledger = server::open(data_dir, AppConfig::default()).expect("open the ledger");
        let next = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..CALLERS {
            let ledger = ledger.clone();
            let next = next.clone();
            tasks.push(tokio::spawn(async move {
                let mut session = SessionId::random();
                let mut number = 0;
                while next.fetch_add(1, Ordering::Relaxed) < events {
                    number += 1;
                    if number > CHAIN {
                        session = SessionId::random();
                        number = 1;
                    }
                    let command = AppCommand::tool_call(
                        "sequentialthinking",
                        thought_args(number, CHAIN),
                        bench_actor(),
                        session.clone(),
                        thinkledger::effects::SystemEffects.prepare(),
                    );
                    let done = ledger.submit(command).await.expect("submit");
                    assert_eq!(done.status, OutcomeStatus::Ok, "{}", done.body);
                }
            }));
        }
        for task in tasks {
            task.await.expect("caller");
        }
        let took = started.elapsed();
        ledger.shutdown().await;
        wait_until_unlocked(data_dir);
        took
    })
}

/// A `thinkledger serve --http 127.0.0.1:0` process a bench drives, logging to
/// `server.log` in its data directory; killed if dropped while running.
pub struct HttpNode {
    pub child: std::process::Child,
    /// `http://127.0.0.1:PORT/mcp`, as the server logged it.
    pub url: String,
}

impl HttpNode {
    /// Spawns [`server_binary`] on `data_dir` (`--data-dir`, created if needed) with `args`
    /// after it (the command and its options) and `env`, and waits until it logs its address.
    pub fn start(data_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        std::fs::create_dir_all(data_dir).expect("data dir");
        let log_path = data_dir.join("server.log");
        let log = std::fs::File::create(&log_path).expect("create server log");
        let mut command = Command::new(server_binary());
        command.arg("--data-dir").arg(data_dir).args(args);
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn thinkledger");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            if let Some(at) = text.find("http://127.0.0.1:") {
                let rest = &text[at + "http://127.0.0.1:".len()..];
                let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
                if rest[port.len()..].starts_with("/mcp") {
                    return Self {
                        child,
                        url: format!("http://127.0.0.1:{port}/mcp"),
                    };
                }
            }
            if let Some(status) = child.try_wait().expect("wait") {
                panic!("server exited with {status} before listening:\n{text}");
            }
            assert!(
                Instant::now() < deadline,
                "server did not log its address:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGTERM, then wait (up to 20 s) for the graceful exit: the ledger syncs on the way out.
    pub fn stop(mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM failed");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                assert!(status.success(), "server exited with {status}");
                return;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("server did not stop after SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for HttpNode {
    /// A bench that panics mid-run must not leave its server running.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits (up to 60 s) until nothing in this process holds the ledger's file lock: sled's
/// threads let go of it a moment after the store is dropped, and a server started on the
/// ledger before that is refused as another process's.
fn wait_until_unlocked(data_dir: &Path) {
    use rustix::fs::{FlockOperation, flock};
    let deadline = Instant::now() + Duration::from_secs(60);
    // sled takes an exclusive `flock` on its file `db`; ours is let go of when `file` closes.
    loop {
        let Ok(file) = std::fs::File::open(data_dir.join("ledger").join("db")) else {
            return;
        };
        if flock(&file, FlockOperation::NonBlockingLockExclusive).is_ok()
            || Instant::now() > deadline
        {
            return;
        }
        drop(file);
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Text references each `sequentialthinking` event carries: its thought is committed once and
/// referred to twice (in the recorded arguments and in the `ThoughtRecorded` fact), and
/// `verify` counts every reference it checks.
pub const TEXT_REFS_PER_THOUGHT: u64 = 2;

/// Opens the sled store in `ledger_dir` (waiting for the previous owner to let go of its
/// lock) and verifies it: intact, exactly `events` events, and `texts` text references
/// checked against their stored text.
/// Returns what was checked.
pub fn verify_ledger(ledger_dir: &Path, events: u64, texts: u64) -> Verified {
    let store = open_settled(ledger_dir);
    let started = Instant::now();
    let report = verify(&store).expect("verification could not read the ledger");
    let took = started.elapsed();
    assert!(
        report.is_intact(),
        "ledger at {} FAILED verification: {:?}",
        ledger_dir.display(),
        &report.problems[..report.problems.len().min(10)]
    );
    assert_eq!(
        report.events, events,
        "ledger holds {} events, expected {events}",
        report.events
    );
    assert_eq!(
        report.texts_verified, texts,
        "ledger verified {} texts, expected {texts}",
        report.texts_verified
    );
    let bytes: usize = store
        .events_from(1)
        .map(|e| e.map_or(0, |(_, b)| b.len()))
        .sum();
    Verified {
        mean_event_bytes: bytes as f64 / report.events.max(1) as f64,
        report,
        took,
    }
}

/// Verifies the ledger in `ledger_dir`: intact, with exactly `events` events. Returns the
/// event count and the time `verify` took.
pub fn verify_ledger_events(ledger_dir: &Path, events: u64) -> EventsVerified {
    let store = open_settled(ledger_dir);
    let started = Instant::now();
    let report = verify(&store).expect("verification could not read the ledger");
    let took = started.elapsed();
    assert!(
        report.is_intact(),
        "ledger at {} FAILED verification: {:?}",
        ledger_dir.display(),
        &report.problems[..report.problems.len().min(10)]
    );
    assert_eq!(
        report.events, events,
        "ledger holds {} events",
        report.events
    );
    EventsVerified {
        events: report.events,
        took,
    }
}

/// What [`verify_ledger_events`] checked.
pub struct EventsVerified {
    pub events: u64,
    pub took: Duration,
}

/// Opens the sled store in `ledger_dir`, waiting (up to 20 s) for its previous owner (a
/// server just stopped) to let go of its lock.
pub fn open_settled(ledger_dir: &Path) -> SledStore {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match SledStore::open(ledger_dir) {
            Ok(store) => return store,
            Err(LedgerError::Locked { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("cannot open the ledger at {}: {e}", ledger_dir.display()),
        }
    }
}

/// `server::open` on `data_dir`, waiting (up to 20 s) for a store of it just dropped in this
/// process to let go of its lock (sled releases it from a thread of its own a moment later).
pub fn open_ledger_settled(
    data_dir: &Path,
) -> thinkledger::ledger::LedgerHandle<thinkledger::app::App> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match server::open(data_dir, AppConfig::default()) {
            Ok(ledger) => return ledger,
            Err(LedgerError::Locked { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("cannot open the ledger in {}: {e}", data_dir.display()),
        }
    }
}

/// What [`verify_ledger`] checked.
pub struct Verified {
    pub report: VerifyReport,
    /// Time `verify` took.
    pub took: Duration,
    /// Mean size of a stored event (its canonical JSON), in bytes.
    pub mean_event_bytes: f64,
}

/// Latency summary of one run, in microseconds.
#[derive(Debug, Clone, Copy)]
pub struct Latency {
    pub n: usize,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl Latency {
    pub fn of(samples: &[Duration]) -> Self {
        let mut us: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
        us.sort_by(f64::total_cmp);
        let n = us.len();
        assert!(n > 0, "no samples");
        Self {
            n,
            p50: percentile(&us, 50.0),
            p90: percentile(&us, 90.0),
            p99: percentile(&us, 99.0),
            max: us[n - 1],
            mean: us.iter().sum::<f64>() / n as f64,
        }
    }
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Median and (min, max) of values across runs.
pub fn median_spread(values: &[f64]) -> (f64, f64, f64) {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    (median, v[0], v[n - 1])
}

/// `median (min–max)` of one statistic across runs, formatted with `f`.
pub fn across(values: &[f64], f: impl Fn(f64) -> String) -> String {
    let (m, lo, hi) = median_spread(values);
    format!("{} ({}–{})", f(m), f(lo), f(hi))
}

/// Microseconds, shown as µs below 10 ms and as ms above.
pub fn us(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.1} ms", v / 1000.0)
    } else {
        format!("{v:.0} µs")
    }
}

/// A rate, rounded.
pub fn rate(v: f64) -> String {
    format!("{v:.0}/s")
}

/// CPU time (user + system) consumed so far by process `pid` (`"self"` for this one), in
/// seconds, from /proc/PID/stat (clock ticks of 1/100 s, the Linux default).
pub fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line: indexes 11 and 12 after the name.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// The 1-, 5- and 15-minute load averages: other work on the machine skews the figures.
pub fn load() -> String {
    let raw = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let fields: Vec<&str> = raw.split_whitespace().take(3).collect();
    format!("load average {}", fields.join(" "))
}

/// The machine, for the bench header.
pub fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem_kb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| {
                    l.split_whitespace()
                        .nth(1)
                        .and_then(|v| v.parse::<u64>().ok())
                })
        })
        .unwrap_or(0);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!(
        "{cpus} CPUs ({model}), {:.1} GiB RAM",
        mem_kb as f64 / 1024.0 / 1024.0
    )
}

/// Bytes of every file under `dir`.
pub fn disk_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|entry| {
            let path = entry.path();
            if path.is_dir() {
                disk_bytes(&path)
            } else {
                entry.metadata().map_or(0, |m| m.len())
            }
        })
        .sum()
}

/// The real local model, started once; it exits when its standard input closes.
pub struct LocalLlm {
    /// `http://127.0.0.1:PORT` (the OpenAI-compatible API is under `/v1`).
    pub base_url: String,
    _child: Child,
}

/// llama.cpp's server from PyPI `xllamacpp` serving `THINKLEDGER_TEST_LLM_GGUF` (with
/// `THINKLEDGER_TEST_PYTHON`), as the model tests start it; `None` when the variable is unset.
pub fn start_local_llm() -> Option<LocalLlm> {
    let gguf = std::env::var("THINKLEDGER_TEST_LLM_GGUF")
        .ok()
        .filter(|v| !v.trim().is_empty())?;
    let python = std::env::var("THINKLEDGER_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/llm/serve.py");
    let mut child = Command::new(&python)
        .args([script, &gguf, "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("THINKLEDGER_TEST_LLM_GGUF is set but {python} fails: {e}"));
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped stdout"))
        .read_line(&mut line)
        .expect("read the model server's first line");
    let port: u16 = line
        .trim()
        .strip_prefix("listening ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("the local model did not start: {line:?}"));
    Some(LocalLlm {
        base_url: format!("http://127.0.0.1:{port}"),
        _child: child,
    })
}
