//! The committed fixture ledger (`tests/fixtures/ledger/`): a data directory written by an
//! earlier build, with every tool called (accepted and refused), sessions concluded and begun,
//! memories stored, updated and deleted, a text erased and a deliberation taken to consensus.
//! This build must verify it, replay and re-execute every one of its sessions with no
//! divergence, and show it exactly as the committed snapshots say (`snapshots/fixture_ledger__*`):
//! any change to how a stored event is decoded, replayed, re-executed or shown fails here.
//!
//! The fixture is copied into a temp dir first (owner-only, as it was written): opening a
//! ledger writes to its directory.
//! Only what the test run itself adds is masked in the snapshots (the temp dir's path); every
//! recorded time, id and hash is the fixture's own. `write_the_fixture_ledger_when_asked`
//! writes the fixture again, and only when asked (see the fixture's README).

mod write;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::*;

/// The committed data directory.
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ledger/data");

/// The parts of a data directory that are derived (rebuilt from the log when missing) or held
/// only while a process runs, and so not committed: the memory index, the projections'
/// snapshot and the owner's lock file.
pub const DERIVED: &[&str] = &[
    "memory-index",
    "owner.lock",
    "ledger/projections.snapshot",
    "ledger/projections.snapshot.tmp",
];

/// The log file, whose trailing zeros (written ahead of the next frame) the fixture leaves out.
pub const LOG_FILE: &str = "ledger/log.dat";

/// `THINKLEDGER_WRITE_FIXTURE_LEDGER=1 cargo test --test it fixture_ledger::write_the_fixture_ledger_when_asked`
/// writes `tests/fixtures/ledger/data/` again from the build under test; without the variable
/// it does nothing.
#[tokio::test]
async fn write_the_fixture_ledger_when_asked() {
    if std::env::var_os("THINKLEDGER_WRITE_FIXTURE_LEDGER").is_none() {
        return;
    }
    write::write_fixture(Path::new(FIXTURE)).await;
}

/// Compares `text` with the committed snapshot `fixture_ledger__NAME`.
fn check(name: &str, text: &str) {
    insta::with_settings!({ snapshot_path => "../../snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(format!("fixture_ledger__{name}"), text);
    });
}

/// A transcript of CLI runs: each command, its exit code and what it printed, with the temp
/// dir's path masked.
struct Transcript {
    data: PathBuf,
    text: String,
}

impl Transcript {
    fn new(data: &Path) -> Self {
        Self {
            data: data.to_path_buf(),
            text: String::new(),
        }
    }

    /// Runs `thinkledger ARGS...` on the copy, adds it to the transcript and returns it.
    async fn run(&mut self, args: &[&str]) -> CliRun {
        let run = cli(&self.data, args).await;
        let shown: Vec<String> = args.iter().map(|a| self.mask(a)).collect();
        self.text.push_str(&format!(
            "$ thinkledger {}\n[exit {}]\n{}",
            shown.join(" "),
            run.status.code().map_or("signal".into(), |c| c.to_string()),
            self.mask(&run.stdout)
        ));
        if !run.stdout.ends_with('\n') {
            self.text.push('\n');
        }
        self.text.push('\n');
        run
    }

    fn mask(&self, text: &str) -> String {
        let root = self.data.parent().expect("the temp dir");
        text.replace(&root.display().to_string(), "$TMP")
    }
}

/// Makes the copy's directories 0700 and files 0600, as the build that wrote them left them:
/// git keeps no modes but the executable bit, and a signing key others may read is refused.
fn owner_only(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    };
    mode(dir, 0o700);
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            owner_only(&path);
        } else {
            mode(&path, 0o600);
        }
    }
}

/// Every session of the fixture, in the order of its first event.
fn sessions_in_log_order(data: &Path) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    for event in stored_events(data) {
        if let Some(id) = event["sessionId"].as_str()
            && seen.insert(id.to_owned())
        {
            order.push(id.to_owned());
        }
    }
    order
}

#[tokio::test]
async fn the_fixture_ledger_verifies_replays_and_re_executes_as_it_was_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    copy_dir(Path::new(FIXTURE), &data);
    owner_only(&data);
    let events = stored_events(&data).len();
    let sessions = sessions_in_log_order(&data);
    assert_eq!(
        (events, sessions.len()),
        (87, 5),
        "the fixture: {sessions:?}"
    );

    let (report, code) = verify_json(&data).await;
    assert_eq!(code, Some(0), "the fixture verifies: {report:#}");
    assert_eq!(report["problems"], serde_json::json!([]), "{report:#}");
    assert_eq!(report["events"], events, "{report:#}");
    let key = check_the_ledger_as_the_cli_shows_it(&data).await;
    for (n, session) in sessions.iter().enumerate() {
        check_replay_and_re_execution(&data, n + 1, session).await;
    }
    check_an_audit_export_of_every_event(&data, events, &key).await;
    check_the_resources(&data, &sessions).await;
}

/// `verify`, `key`, `sessions`, and `export` and `diff` of the thinking sessions; returns the
/// ledger's public key.
async fn check_the_ledger_as_the_cli_shows_it(data: &Path) -> String {
    let mut ledger = Transcript::new(data);
    ledger.run(&["verify"]).await;
    ledger.run(&["verify", "--json"]).await;
    let key = ledger.run(&["key"]).await.stdout.trim().to_owned();
    ledger.run(&["sessions"]).await;
    ledger.run(&["sessions", "--json"]).await;
    let thinking: Vec<String> = sessions_json(data).await["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .filter_map(|s| s["sessionId"].as_str().map(str::to_owned))
        .collect();
    assert!(thinking.len() >= 2, "two thinking sessions: {thinking:?}");
    for session in &thinking {
        for format in ["markdown", "json"] {
            ledger.run(&["export", session, "--format", format]).await;
        }
    }
    let (a, b) = (&thinking[0], &thinking[1]);
    ledger.run(&["diff", a, b]).await;
    ledger.run(&["diff", a, b, "--json"]).await;
    check("ledger", &ledger.text);
    key
}

/// The `n`th session's timeline, and its re-execution (text and JSON) with no divergence.
async fn check_replay_and_re_execution(data: &Path, n: usize, session: &str) {
    let mut replay = Transcript::new(data);
    let run = replay.run(&["replay", session]).await;
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    let run = replay.run(&["replay", session, "--reexecute"]).await;
    assert_eq!(run.status.code(), Some(0), "{session} diverged: {run:?}");
    let run = replay
        .run(&["replay", session, "--reexecute", "--json"])
        .await;
    assert_eq!(run.status.code(), Some(0), "{session} diverged: {run:?}");
    let doc: Value = serde_json::from_str(&run.stdout).expect("replay --json prints JSON");
    assert_eq!(doc["reexecution"]["diverged"], 0, "{doc:#}");
    check(&format!("replay_{n:02}"), &replay.text);
}

/// An audit export of every event passes `verify-export` under the ledger's key; its report
/// less the export's own time.
async fn check_an_audit_export_of_every_event(data: &Path, events: usize, key: &str) {
    let root = data.parent().expect("the temp dir");
    let file = root.join("all.audit.json");
    let file = file.to_str().expect("UTF-8 path");
    let last = events.to_string();
    let run = cli(
        data,
        &["audit", "--from-seq", "1", "--to-seq", &last, "-o", file],
    )
    .await;
    assert!(run.status.success(), "audit: {run:?}");
    let run = cli(data, &["verify-export", file, "--pubkey", key, "--json"]).await;
    assert_eq!(run.status.code(), Some(0), "verify-export: {run:?}");
    let mut report: Value = serde_json::from_str(&run.stdout).expect("verify-export --json");
    assert_eq!(report["passed"], true, "{report:#}");
    report["summary"]["generatedAt"] = Value::from("(when the test ran)");
    check(
        "audit",
        &serde_json::to_string_pretty(&report).expect("JSON"),
    );
}

/// What a client reads over MCP from the served fixture: the `ledger://` resources, and the
/// `reasoning://` ones of each session that holds a deliberation.
async fn check_the_resources(data: &Path, sessions: &[String]) {
    let server = StdioServer::start(data, &[]).await;
    let mut shown = String::new();
    for uri in [
        "ledger://sessions",
        "ledger://memories/u-1",
        "ledger://memories/u-2",
    ] {
        shown.push_str(&resource(&server, uri).await);
    }
    for session in sessions {
        shown.push_str(&resource(&server, &format!("ledger://session/{session}")).await);
        let deliberation = format!("reasoning://session/{session}/deliberation");
        if try_read(&server, &deliberation).await.is_err() {
            continue;
        }
        shown.push_str(&resource(&server, &deliberation).await);
        for part in ["assumptions", "checkpoints"] {
            shown.push_str(
                &resource(&server, &format!("reasoning://session/{session}/{part}")).await,
            );
        }
        let phases = read_json(
            &server,
            &format!("reasoning://session/{session}/skeleton-phases"),
        )
        .await;
        shown.push_str(
            &resource(
                &server,
                &format!("reasoning://session/{session}/skeleton-phases"),
            )
            .await,
        );
        let ids = phase_ids(&phases);
        for id in ids {
            shown.push_str(
                &resource(
                    &server,
                    &format!("reasoning://session/{session}/skeleton-phase/{id}"),
                )
                .await,
            );
        }
    }
    shown.push_str(&resource(&server, "reasoning://telemetry/summary").await);
    server.stop().await;
    check("resources", &shown);
}

/// Every `phase_id` named anywhere in a skeleton-phases document, once each, in order.
fn phase_ids(doc: &Value) -> Vec<String> {
    let mut ids = Vec::new();
    let mut stack = vec![doc];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(id)) = map.get("phase_id")
                    && !ids.contains(id)
                {
                    ids.push(id.clone());
                }
                stack.extend(map.values().rev());
            }
            Value::Array(items) => stack.extend(items.iter().rev()),
            _ => {}
        }
    }
    ids
}

/// One resource as the snapshot shows it: its URI, then its JSON, pretty-printed.
async fn resource(client: &Client, uri: &str) -> String {
    format!("# {uri}\n{:#}\n\n", read_json(client, uri).await)
}
