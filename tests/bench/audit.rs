//! Audit-side costs on a large ledger: verification throughput, reopening (replay + Merkle tree
//! rebuild + checkpoint check), proof generation, and the audit export of a session and of a
//! seq range with its offline verification.
//!
//! The ledger is built once through the real writer (`server::open`, the same path the server
//! uses: sled store, text file, signing key, checkpoints), with 64 concurrent callers each
//! recording `sequentialthinking` thoughts in sessions of 50; its shutdown signs the final
//! checkpoint. Then each measurement runs RUNS times and the report gives the median with
//! min–max.
//!
//! Exports are built on the writer thread through `LedgerHandle::inspect` (as `thinkledger audit`
//! does), serialized in RFC 8785 form and checked by `verify_export` from the bytes alone, with
//! the public key pinned: one session (50 thoughts) of the large ledger, and the seq range of
//! the whole ledger (every event, with its proof, text and salt, in one document). Peak memory
//! (VmHWM) is reported after each part.
//!
//! `cargo bench --bench audit` (full run: 1,000,000 events); under `cargo test` a smoke run of
//! 2,000. Overrides: THINKLEDGER_BENCH_EVENTS, THINKLEDGER_BENCH_RUNS,
//! THINKLEDGER_BENCH_PROOFS (proofs timed per run), THINKLEDGER_BENCH_RANGE (events in the
//! range export, default all; 0 skips it).

mod common;

use std::time::Instant;

use common::{CALLERS, CHAIN, across, rate, record_thoughts};
use thinkledger::app::AppConfig;
use thinkledger::audit::{ExportOptions, Selection, verify_export, write_export};
use thinkledger::events::SessionId;
use thinkledger::ledger::notary::{CHECKPOINTS_FILE, read_checkpoints};
use thinkledger::ledger::{SledStore, format_timestamp, keyfile, verify_with_checkpoints};
use thinkledger::server;

fn main() {
    let full = common::full_mode();
    let events = common::env_usize("EVENTS", if full { 1_000_000 } else { 2_000 }) as u64;
    let runs = common::env_usize("RUNS", if full { 5 } else { 1 }).max(1);
    let proofs = common::env_usize("PROOFS", if full { 10_000 } else { 200 }) as u64;
    let range = common::env_usize("RANGE", events as usize) as u64;
    let dir = common::temp_data_dir();
    println!(
        "audit: {}",
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
    println!("  data dir: {}", common::describe_dir(dir.path()));
    println!("  {events} events, {runs} runs per measurement, {proofs} proofs per run");

    let took = record_thoughts(dir.path(), events);
    println!(
        "  build:    {} events recorded durably in {:.1} s ({}, {CALLERS} callers)",
        events,
        took.as_secs_f64(),
        rate(events as f64 / took.as_secs_f64())
    );

    // Verification: the whole ledger, chain, texts and checkpoints.
    let ledger_dir = server::ledger_dir(dir.path());
    let mut verify_rates = Vec::new();
    let mut verify_secs = Vec::new();
    for _ in 0..runs {
        let store = SledStore::open(&ledger_dir).expect("open store");
        let meta = thinkledger::ledger::Store::meta(&store)
            .expect("meta")
            .expect("a ledger");
        let verifier = keyfile::load_or_create(&server::key_path(dir.path()), &meta.ledger_id)
            .expect("key")
            .verifier();
        let checkpoints =
            read_checkpoints(&ledger_dir.join(CHECKPOINTS_FILE)).expect("checkpoints");
        let started = Instant::now();
        let report =
            verify_with_checkpoints(&store, &checkpoints, &[], Some(&verifier)).expect("verify");
        let secs = started.elapsed().as_secs_f64();
        assert!(
            report.is_intact(),
            "{:?}",
            &report.problems[..report.problems.len().min(5)]
        );
        assert_eq!(report.events, events);
        assert!(report.checkpoints_verified >= 1);
        verify_rates.push(events as f64 / secs);
        verify_secs.push(secs);
    }
    println!(
        "  verify:   {} events/s ({} s for the whole ledger, texts and checkpoints included)",
        across(&verify_rates, |v| format!("{v:.0}")),
        across(&verify_secs, |s| format!("{s:.2}"))
    );

    // Reopening: replay into the application, rebuild the tree, check the checkpoints.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut open_secs = Vec::new();
    let mut inclusion_us = Vec::new();
    let mut consistency_us = Vec::new();
    for run in 0..runs {
        let started = Instant::now();
        let ledger = common::open_ledger_settled(dir.path());
        open_secs.push(started.elapsed().as_secs_f64());
        let (inclusion, consistency) = runtime
            .block_on(ledger.inspect(move |view| {
                let n = view.len();
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ run as u64;
                let mut step = || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                let started = Instant::now();
                for _ in 0..proofs {
                    let index = step() % n;
                    let proof = view.inclusion_proof(index, n).expect("inclusion proof");
                    std::hint::black_box(proof);
                }
                let inclusion = started.elapsed().as_secs_f64() * 1e6 / proofs as f64;
                let started = Instant::now();
                for _ in 0..proofs {
                    let old = 1 + step() % n;
                    let proof = view.consistency_proof(old, n).expect("consistency proof");
                    std::hint::black_box(proof);
                }
                let consistency = started.elapsed().as_secs_f64() * 1e6 / proofs as f64;
                (inclusion, consistency)
            }))
            .expect("inspect");
        inclusion_us.push(inclusion);
        consistency_us.push(consistency);
        runtime.block_on(ledger.shutdown());
    }
    println!(
        "  reopen:   {} s (replay every event, rebuild the Merkle tree, check checkpoints)",
        across(&open_secs, |s| format!("{s:.2}"))
    );
    println!(
        "  proofs:   inclusion {} µs, consistency {} µs (tree of {events})",
        across(&inclusion_us, |v| format!("{v:.1}")),
        across(&consistency_us, |v| format!("{v:.1}"))
    );

    println!("  memory:   peak {} so far", peak_rss());

    // Audit exports, built and then verified offline with the key pinned.
    let ledger = server::open(dir.path(), AppConfig::default()).expect("reopen");
    let vkey = keyfile::load_or_create(
        &server::key_path(dir.path()),
        &ledger.meta().expect("open").ledger_id,
    )
    .expect("key")
    .verifier()
    .to_vkey();
    let session = runtime
        .block_on(ledger.query(Box::new(|app: &thinkledger::app::App| {
            serde_json::json!(app.state().heads().next().map(|s| s.id.as_str().to_owned()))
        })))
        .expect("query")
        .as_str()
        .expect("a session")
        .to_owned();
    let session = SessionId::parse(&session).expect("session id");
    let mut selections = vec![(
        "session",
        Selection::Session {
            session_id: session,
        },
    )];
    if range > 0 {
        selections.push((
            "range",
            Selection::Range {
                from_seq: 1,
                to_seq: range.min(events),
            },
        ));
    }
    let export_dir = tempfile::tempdir().expect("tempdir");
    for (name, selection) in selections {
        let runs = if name == "range" && full {
            runs.min(3)
        } else {
            runs
        };
        let (mut build_s, mut verify_s, mut bytes_len) = (Vec::new(), Vec::new(), 0);
        for _ in 0..runs {
            let selection = selection.clone();
            let started = Instant::now();
            // Written to a file as it is built, as `thinkledger audit -o FILE` does, then read
            // back whole, as `thinkledger verify-export` does.
            let file = export_dir.path().join(format!("{name}.json"));
            let sink = std::fs::File::create(&file).expect("export file");
            runtime
                .block_on(ledger.inspect(move |view| {
                    let options = ExportOptions {
                        since_checkpoint: None,
                        generated_at: format_timestamp(chrono::Utc::now()),
                        progress: None,
                        cancelled: None,
                        timestamps: &[],
                    };
                    write_export(view, &selection, &options, &mut &sink).expect("export")
                }))
                .expect("inspect");
            build_s.push(started.elapsed().as_secs_f64());
            let started = Instant::now();
            let bytes = std::fs::read(&file).expect("read export");
            bytes_len = bytes.len();
            let report = verify_export(&bytes, Some(&vkey), None);
            verify_s.push(started.elapsed().as_secs_f64());
            assert!(
                report.passed,
                "{:?}",
                &report.problems[..report.problems.len().min(5)]
            );
            drop(bytes);
        }
        let exported = if name == "range" {
            range.min(events)
        } else {
            u64::from(CHAIN)
        };
        println!(
            "  export {name:<7} {exported} events, {:.1} MB: build {} s, verify-export {} s ({} events/s); peak memory {}",
            bytes_len as f64 / 1e6,
            across(&build_s, |v| format!("{v:.2}")),
            across(&verify_s, |v| format!("{v:.2}")),
            across(
                &verify_s
                    .iter()
                    .map(|s| exported as f64 / s)
                    .collect::<Vec<_>>(),
                |v| format!("{v:.0}")
            ),
            peak_rss()
        );
    }
    runtime.block_on(ledger.shutdown());
}

/// The process's peak resident memory (VmHWM), from /proc.
fn peak_rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l.trim_start_matches("VmHWM:").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}
