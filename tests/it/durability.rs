//! Durability and integrity of the ledger across process deaths: restart and resume, tamper
//! detection by `verify` and at start-up, and SIGKILL in the middle of a stream of concurrent
//! calls without losing a single acknowledged one.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hasher};
use std::path::Path;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};
use thinkledger::ledger::Store;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::common::*;

#[tokio::test]
async fn a_restarted_server_resumes_a_session_by_its_id_and_the_ledger_stays_intact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &[]).await;
    let s = &server;
    let first = think(
        s,
        1,
        4,
        "Frame the problem",
        json!({ "tags": ["question"] }),
    )
    .await;
    let session = first["sessionId"].as_str().expect("sessionId").to_owned();
    think(
        s,
        2,
        4,
        "A first hypothesis",
        json!({ "tags": ["hypothesis"] }),
    )
    .await;
    think(
        s,
        3,
        4,
        "Try another route",
        json!({ "branchFromThought": 2, "branchId": "route-b" }),
    )
    .await;
    think(
        s,
        4,
        4,
        "Route b holds up",
        json!({ "branchId": "route-b" }),
    )
    .await;
    think(
        s,
        5,
        5,
        "The hypothesis was too broad",
        json!({ "isRevision": true, "revisesThought": 2 }),
    )
    .await;
    let tagged = ok(&call(s, "tag", json!({ "thoughtNumber": 4, "add": ["evidence"] })).await);
    let before = read_json(s, &format!("ledger://session/{session}")).await;
    let last_before = tagged["seq"].as_u64().expect("seq");
    server.kill().await;

    // A new process (data dir from THINKLEDGER_DATA_DIR this time) replays the same state.
    let server = StdioServer::start_with_env_data_dir(dir.path()).await;
    let s = &server;
    assert_eq!(
        read_json(s, &format!("ledger://session/{session}")).await,
        before,
        "state survives a SIGKILL"
    );
    let resumed = think(
        s,
        6,
        6,
        "Back after the restart",
        json!({ "sessionId": session, "branchId": "route-b" }),
    )
    .await;
    assert_eq!(resumed["sessionId"], session.as_str());
    assert_eq!(resumed["thoughtHistoryLength"], 6);
    assert_eq!(resumed["branches"], json!(["route-b"]));
    assert_eq!(
        resumed["seq"],
        last_before + 1,
        "the log continues where it stopped"
    );
    let revised = think(s, 7, 7, "Revisit the frame", json!({ "sessionId": session, "isRevision": true, "revisesThought": 1, "nextThoughtNeeded": false })).await;
    assert_eq!(revised["thoughtHistoryLength"], 7);
    let found = ok(&call(
        s,
        "search",
        json!({ "sessionId": session, "tags": ["evidence"] }),
    )
    .await);
    assert_eq!(
        found["matches"][0]["thought"], "Route b holds up",
        "tags survive the restart"
    );
    let fresh = think(s, 1, 1, "A new connection without an id", json!({})).await;
    assert_ne!(
        fresh["sessionId"],
        session.as_str(),
        "a new connection does not silently join an old session"
    );
    let last = fresh["seq"].as_u64().expect("seq");
    let head = fresh["eventHash"].as_str().expect("eventHash").to_owned();
    server.stop().await;

    let run = cli(dir.path(), &["verify"]).await;
    assert!(run.status.success(), "verify: {run:?}");
    assert!(
        run.stdout.contains(&format!("intact: {last} events")) && run.stdout.contains(&head),
        "{}",
        run.stdout
    );
    let report = assert_intact(dir.path(), last).await;
    assert_eq!(
        report["headHash"],
        head.as_str(),
        "the head is the last acknowledged event"
    );
    let sessions = sessions_json(dir.path()).await;
    assert_eq!(sessions["sessions"][0]["sessionId"], session.as_str());
    assert_eq!(sessions["sessions"][0]["thoughts"], 7);
    let exported: Value =
        serde_json::from_str(&export_cli(dir.path(), &session, "json").await).expect("JSON");
    assert_eq!(
        exported["branches"][0]["thoughts"][2]["thought"],
        "Back after the restart"
    );
}

/// Changes one stored event of a fresh four-call ledger with `alter`; returns the data dir.
async fn ledger_with_one_altered_event(seq: u64, alter: fn(&str) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &[]).await;
    for n in 1..=3 {
        think(&server, n, 3, &format!("thought {n}"), json!({})).await;
    }
    ok(&call(&server, "search", json!({ "query": "thought" })).await);
    server.stop().await;
    assert_intact(dir.path(), 4).await;

    let mut store = super::common::open_ledger_store(dir.path());
    let original =
        String::from_utf8(store.event_bytes(seq).expect("read").expect("stored")).expect("UTF-8");
    let altered = alter(&original);
    assert_ne!(altered, original, "the alteration changes the event");
    assert_eq!(altered.len(), original.len(), "one character flipped");
    let value: Value =
        serde_json::from_str(&altered).expect("the altered event is still valid JSON");
    assert_eq!(value["seq"], seq);
    store
        .tamper_event_bytes(seq, altered.as_bytes())
        .expect("tamper");
    drop(store);
    dir
}

/// Flips the last digit of `recordedAt`: same shape, same canonical form, different content.
fn flip_recorded_at(event: &str) -> String {
    let start = event.find("\"recordedAt\":\"").expect("recordedAt") + "\"recordedAt\":\"".len();
    let z = start + event[start..].find('Z').expect("timestamp ends with Z");
    let digit = &event[z - 1..z];
    let flipped = if digit == "0" { "1" } else { "0" };
    format!("{}{flipped}{}", &event[..z - 1], &event[z..])
}

/// Changes the recorded thought's number in its `ThoughtRecorded` fact (3 becomes 7).
fn flip_fact_number(event: &str) -> String {
    let facts = event.find("\"facts\":").expect("facts");
    let at = facts
        + event[facts..]
            .find("\"thoughtNumber\":3")
            .expect("thoughtNumber in the fact");
    let digit = at + "\"thoughtNumber\":".len();
    format!("{}7{}", &event[..digit], &event[digit + 1..])
}

#[tokio::test]
async fn verify_names_exactly_the_tampered_event_and_the_server_refuses_every_call() {
    for (seq, alter) in [
        (2, flip_recorded_at as fn(&str) -> String),
        (3, flip_fact_number),
    ] {
        let dir = ledger_with_one_altered_event(seq, alter).await;
        check_tamper_is_caught(dir.path(), seq).await;
    }
}

async fn check_tamper_is_caught(dir: &Path, seq: u64) {
    let run = cli(dir, &["verify"]).await;
    assert_eq!(
        run.status.code(),
        Some(2),
        "verify exits 2 on a tampered ledger: {run:?}"
    );
    let problems: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("seq "))
        .collect();
    assert_eq!(
        problems.len(),
        1,
        "exactly one problem, at seq {seq}:\n{}",
        run.stdout
    );
    assert!(
        problems[0]
            .trim_start()
            .starts_with(&format!("seq {seq}: hash_mismatch")),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("FAILED"), "{}", run.stdout);

    let (report, code) = verify_json(dir).await;
    assert_eq!(code, Some(2));
    assert_eq!(report["events"], 4);
    let problems = report["problems"].as_array().expect("problems");
    assert_eq!(
        problems.len(),
        1,
        "only the altered event is reported: {report}"
    );
    assert_eq!(
        pick(&problems[0], &["seq", "code"]),
        json!({ "seq": seq, "code": "hash_mismatch" }),
        "{report}"
    );

    // The CLI readers refuse a corrupt ledger.
    let run = cli(dir, &["sessions"]).await;
    assert!(
        !run.status.success(),
        "sessions must refuse a corrupt ledger: {run:?}"
    );
    assert!(
        run.stderr.contains("corrupt")
            && run.stderr.contains(&format!("event {seq}"))
            && run.stderr.contains("thinkledger verify"),
        "sessions says what and how to investigate: {}",
        run.stderr
    );

    // A server answers `initialize` before its ledger is open, so it does not refuse to start:
    // every call is refused instead, saying why, and nothing is recorded.
    let refused = |result: CallToolResult, transport: &str| {
        assert_eq!(result.is_error, Some(true), "{transport}: {result:?}");
        let body: Value = serde_json::from_str(text_of(&result)).expect("a JSON error body");
        assert_eq!(body["status"], "failed", "{transport}: {body}");
        assert_eq!(body["code"], "ledger_unavailable", "{transport}: {body}");
        let error = body["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("could not be opened")
                && error.contains(&format!("event {seq}"))
                && error.contains("thinkledger verify"),
            "{transport}: {body}"
        );
    };
    let server = StdioServer::start(dir, &[]).await;
    assert!(within("tools/list", server.list_all_tools()).await.is_ok());
    refused(
        call(&server, "sequentialthinking", thought_args(1)).await,
        "stdio",
    );
    server.stop_expecting_failure().await;

    let server = HttpServer::start(dir, &[]).await;
    let client = server.connect().await;
    refused(
        call(&client, "sequentialthinking", thought_args(1)).await,
        "http",
    );
    // The server logs why before it refuses, but its stderr reaches the test through a pipe
    // read by a task of its own: wait for the line (bounded).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !server.stderr().contains("the ledger could not be opened") {
        assert!(std::time::Instant::now() < deadline, "{}", server.stderr());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill().await;
    let (report, _) = verify_json(dir).await;
    assert_eq!(report["events"], 4, "nothing was recorded: {report}");
}

/// Arguments of a first thought.
fn thought_args(n: u32) -> Value {
    json!({"thought": format!("thought {n}"), "thoughtNumber": n, "totalThoughts": 3, "nextThoughtNeeded": true})
}

const ROUNDS: u32 = 25;
const WRITERS: usize = 4;

/// One acknowledged call.
#[derive(Debug, Clone)]
struct Ack {
    round: u32,
    writer: usize,
    seq: u64,
    session: String,
    number: u32,
    text: String,
}

/// After how many acknowledgements round `round` is killed: 5 to 44, different every run.
fn kill_point(round: u32) -> usize {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(round);
    5 + usize::try_from(hasher.finish() % 40).expect("small")
}

/// Where one writer starts in a round.
struct Start {
    writer: usize,
    round: u32,
    /// The session to continue (that of the writer's last acknowledged call).
    session: Option<String>,
    number: u32,
}

/// Records thoughts in one session as fast as the server answers, reporting each acknowledged
/// call, until the server is killed.
async fn write_until_killed(
    client: Client,
    start: Start,
    acks: mpsc::UnboundedSender<Ack>,
    killed: CancellationToken,
) {
    let Start {
        writer,
        round,
        mut session,
        mut number,
    } = start;
    loop {
        let text = format!("writer {writer} round {round} thought {number}");
        let mut args = json!({ "thought": text, "thoughtNumber": number, "totalThoughts": number, "nextThoughtNeeded": true });
        if let Some(id) = &session {
            args["sessionId"] = json!(id);
        }
        let Value::Object(args) = args else {
            unreachable!("built as an object")
        };
        let params = CallToolRequestParams::new("sequentialthinking").with_arguments(args);
        let answer = tokio::select! {
            answer = client.call_tool(params) => answer,
            () = killed.cancelled() => return,
        };
        let Ok(result) = answer else {
            return; // the connection broke: this call was not acknowledged
        };
        let body = ok(&result);
        let ack = Ack {
            round,
            writer,
            seq: body["seq"].as_u64().expect("seq"),
            session: body["sessionId"].as_str().expect("sessionId").to_owned(),
            number,
            text,
        };
        session = Some(ack.session.clone());
        if acks.send(ack).is_err() {
            return;
        }
        number += 1;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_mid_stream_never_loses_an_acknowledged_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut acks: Vec<Ack> = Vec::new();
    let mut sessions: Vec<Option<String>> = vec![None; WRITERS];
    let mut next_number = [1u32; WRITERS];
    let mut kill_points = Vec::new();
    for round in 0..ROUNDS {
        let server = HttpServer::start(dir.path(), &[]).await;
        let (tx, mut rx) = mpsc::unbounded_channel();
        let killed = CancellationToken::new();
        let mut writers = JoinSet::new();
        for writer in 0..WRITERS {
            let client = server.connect().await;
            let start = Start {
                writer,
                round,
                session: sessions[writer].clone(),
                number: next_number[writer],
            };
            writers.spawn(write_until_killed(
                client,
                start,
                tx.clone(),
                killed.clone(),
            ));
        }
        drop(tx);
        let kill_after = kill_point(round);
        kill_points.push(kill_after);
        let mut this_round = Vec::new();
        while this_round.len() < kill_after {
            let ack = within("acknowledgements before the kill", rx.recv()).await;
            this_round.push(ack.unwrap_or_else(|| {
                panic!(
                    "writers stopped before the kill; stderr:\n{}",
                    server.stderr()
                )
            }));
        }
        server.kill().await;
        killed.cancel();
        // Answers the client already holds may still come through; calls still waiting are
        // abandoned (rmcp's HTTP client does not fail them promptly when the server dies), and
        // the channel closes when every writer has stopped.
        while let Some(ack) = within("writers to notice the kill", rx.recv()).await {
            this_round.push(ack);
        }
        while let Some(joined) = writers.join_next().await {
            joined.expect("writer task");
        }
        for ack in &this_round {
            sessions[ack.writer] = Some(ack.session.clone());
            next_number[ack.writer] = next_number[ack.writer].max(ack.number + 1);
        }
        let earlier = acks.iter().map(|a| a.seq).max().unwrap_or(0);
        let first = this_round
            .iter()
            .map(|a| a.seq)
            .min()
            .expect("acks this round");
        assert!(
            first > earlier,
            "round {round} reused seq {first} at or below {earlier}: an acknowledged event was lost"
        );
        acks.extend(this_round);
    }
    let seqs: BTreeSet<u64> = acks.iter().map(|a| a.seq).collect();
    assert_eq!(seqs.len(), acks.len(), "every acknowledged seq is distinct");

    // Every acknowledged thought is in the ledger, with its number and text, at its seq.
    let server = StdioServer::start(dir.path(), &[]).await;
    let by_session: BTreeMap<&str, Vec<&Ack>> =
        acks.iter().fold(BTreeMap::new(), |mut map, ack| {
            map.entry(ack.session.as_str()).or_default().push(ack);
            map
        });
    let mut stored_thoughts = 0;
    for (session, session_acks) in &by_session {
        let doc = read_json(&server, &format!("ledger://session/{session}")).await;
        let thoughts = doc["chain"]["thoughts"].as_array().expect("thoughts");
        stored_thoughts += thoughts.len();
        let stored: BTreeMap<u64, (u64, &str)> = thoughts
            .iter()
            .map(|t| {
                let seq = t["seq"].as_u64().expect("seq");
                (
                    seq,
                    (
                        t["thoughtNumber"].as_u64().expect("number"),
                        t["thought"].as_str().expect("text"),
                    ),
                )
            })
            .collect();
        for ack in session_acks {
            let (number, text) = stored.get(&ack.seq).unwrap_or_else(|| {
                panic!("acknowledged call lost: {ack:?} (kill points {kill_points:?})")
            });
            assert_eq!(
                (*number, *text),
                (u64::from(ack.number), ack.text.as_str()),
                "{ack:?}"
            );
        }
        let writers: BTreeSet<usize> = session_acks.iter().map(|a| a.writer).collect();
        assert_eq!(writers.len(), 1, "one writer per session");
    }
    assert!(stored_thoughts >= acks.len());
    let listed = read_json(&server, "ledger://sessions").await;
    let all_thoughts: u64 = listed["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| s["thoughts"].as_u64().expect("count"))
        .sum();
    let rounds: BTreeSet<u32> = acks.iter().map(|a| a.round).collect();
    assert_eq!(
        rounds.len(),
        usize::try_from(ROUNDS).expect("small"),
        "every round acknowledged calls"
    );
    server.stop().await;

    let (report, code) = verify_json(dir.path()).await;
    assert_eq!(
        report["problems"],
        json!([]),
        "ledger intact after {ROUNDS} SIGKILLs: {report}"
    );
    assert_eq!(code, Some(0));
    let events = report["events"].as_u64().expect("events");
    eprintln!(
        "{} acknowledged of {events} recorded calls over {ROUNDS} SIGKILLs at {kill_points:?} acks",
        acks.len()
    );
    let last_acked = *seqs.last().expect("acks");
    assert!(
        events >= last_acked,
        "verify sees {events} events but seq {last_acked} was acknowledged"
    );
    assert_eq!(
        all_thoughts, events,
        "every event is a recorded thought (acknowledged or not)"
    );
}

/// Crashes at the two moments of a batch's write that a SIGKILL rarely hits, in rounds under
/// concurrent writers (the crash drills of debug builds): right after its frame is durable in
/// the log file and before the index has seen it (`THINKLEDGER_DRILL_CRASH_BETWEEN_WRITES`),
/// and halfway through writing the frame (`THINKLEDGER_DRILL_TORN_WRITE`). No acknowledged
/// call is lost; the next open indexes the durable frame and cuts the torn one off; the ledger
/// verifies and goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_between_the_two_writes_of_a_batch_loses_no_acknowledged_call() {
    const DRILL_ROUNDS: u32 = 4;
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("ledger").join("log.dat");
    let mut acks: Vec<Ack> = Vec::new();
    let mut sessions: Vec<Option<String>> = vec![None; WRITERS];
    let mut next_number = [1u32; WRITERS];
    for round in 0..DRILL_ROUNDS {
        // The round's crash comes at its 3rd to 24th batch, in turn between the two writes
        // and in the middle of the first.
        let at = (3 + round * 7).to_string();
        let torn_write = round % 2 == 1;
        let drill = if torn_write {
            "THINKLEDGER_DRILL_TORN_WRITE"
        } else {
            "THINKLEDGER_DRILL_CRASH_BETWEEN_WRITES"
        };
        let mut server =
            HttpServer::start_with_env(dir.path(), &["--toolsets", "all"], &[(drill, &at)]).await;
        let (tx, mut rx) = mpsc::unbounded_channel();
        let stopped = CancellationToken::new();
        let mut writers = JoinSet::new();
        // Every client connects before any writes: the drill may crash the server within the
        // first few batches.
        let mut clients = Vec::new();
        for _ in 0..WRITERS {
            clients.push(server.connect().await);
        }
        for (writer, client) in clients.into_iter().enumerate() {
            let start = Start {
                writer,
                round,
                session: sessions[writer].clone(),
                number: next_number[writer],
            };
            writers.spawn(write_until_killed(
                client,
                start,
                tx.clone(),
                stopped.clone(),
            ));
        }
        drop(tx);
        let status = server.exited().await;
        assert!(!status.success(), "the drill aborted the server: {status}");
        assert!(
            server.stderr().contains("crash drill: aborting"),
            "{}",
            server.stderr()
        );
        stopped.cancel();
        let mut this_round = Vec::new();
        while let Some(ack) = within("writers to notice the crash", rx.recv()).await {
            this_round.push(ack);
        }
        while let Some(joined) = writers.join_next().await {
            joined.expect("writer task");
        }
        for ack in &this_round {
            sessions[ack.writer] = Some(ack.session.clone());
            next_number[ack.writer] = next_number[ack.writer].max(ack.number + 1);
        }
        acks.extend(this_round);

        let before = std::fs::metadata(&log).expect("log.dat").len();
        let (report, code) = verify_json(dir.path()).await;
        assert_eq!(report["problems"], json!([]), "round {round}: {report}");
        assert_eq!(code, Some(0));
        let after = std::fs::metadata(&log).expect("log.dat").len();
        if torn_write {
            assert!(
                after < before,
                "round {round}: the torn frame is cut off ({before} -> {after} bytes)"
            );
        } else {
            // The crashed batch is durable: indexed at this open, answered to nobody.
            assert_eq!(after, before, "round {round}: the durable frame is kept");
            let last_acked = acks.iter().map(|a| a.seq).max().unwrap_or(0);
            assert!(
                report["events"].as_u64().expect("events") > last_acked,
                "round {round}: the crashed batch's events are in the log: {report}"
            );
        }
    }
    assert!(
        !acks.is_empty(),
        "calls were acknowledged before the crashes"
    );

    // Every acknowledged thought is in the ledger at its seq, and the ledger goes on.
    let server = StdioServer::start(dir.path(), &[]).await;
    for ack in &acks {
        let doc = read_json(&server, &format!("ledger://session/{}", ack.session)).await;
        let found = doc["chain"]["thoughts"]
            .as_array()
            .expect("thoughts")
            .iter()
            .any(|t| {
                t["seq"] == ack.seq
                    && t["thoughtNumber"] == ack.number
                    && t["thought"] == ack.text.as_str()
            });
        assert!(found, "acknowledged call lost: {ack:?}");
    }
    let after = ok(&call(&server, "sequentialthinking", thought_args(1)).await);
    let last_acked = acks.iter().map(|a| a.seq).max().expect("acks");
    assert!(after["seq"].as_u64().expect("seq") > last_acked, "{after}");
    server.stop().await;
    let (report, code) = verify_json(dir.path()).await;
    assert_eq!(report["problems"], json!([]), "{report}");
    assert_eq!(code, Some(0));
}

/// The ledger's signing key is made with the ledger, kept private, and stays the same across
/// restarts: `thinkledger key` prints the same C2SP verifier key every time.
#[tokio::test]
async fn the_signing_key_is_made_once_private_and_printed_as_a_verifier_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = StdioServer::start(dir.path(), &[]).await;
    think(&server, 1, 1, "a thought", json!({})).await;
    server.stop().await;
    let key_file = dir.path().join("signing.key");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_file)
            .expect("key file")
            .permissions()
            .mode();
        assert_eq!(
            mode & 0o777,
            0o600,
            "the key file is readable by its owner only"
        );
    }
    let first = cli(dir.path(), &["key"]).await;
    assert!(first.status.success(), "{first:?}");
    let second = cli(dir.path(), &["key"]).await;
    assert_eq!(first.stdout, second.stdout, "the key is made once");
    let vkey = first.stdout.trim_end();
    let verifier = thinkledger::ledger::checkpoint::NoteVerifier::from_vkey(vkey)
        .unwrap_or_else(|e| panic!("`key` printed no verifier key ({e}): {vkey}"));
    let (report, _) = verify_json(dir.path()).await;
    let ledger_id = report["ledgerId"].as_str().expect("ledger id");
    assert_eq!(
        verifier.name(),
        format!("thinkledger/{ledger_id}"),
        "the key is this ledger's"
    );
    let secret = std::fs::read_to_string(&key_file).expect("key file");
    assert!(
        secret.starts_with("PRIVATE+KEY+thinkledger/"),
        "the file holds the signer key"
    );
    assert!(
        !first.stdout.contains("PRIVATE"),
        "`key` never prints the secret"
    );
}

/// Every path under `dir` that others may read, write or enter, with its mode.
#[cfg(unix)]
fn open_to_others(dir: &Path) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path).expect("stat");
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 && !meta.file_type().is_symlink() {
            found.push(format!("{} {mode:o}", path.display()));
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path).expect("read dir") {
                stack.push(entry.expect("entry").path());
            }
        }
    }
    found
}

#[cfg(unix)]
#[tokio::test]
async fn nothing_in_the_data_directory_is_readable_by_other_users() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("data");
    let server = StdioServer::start(&dir, &[]).await;
    think(&server, 1, 1, "a private thought", json!({})).await;
    ok(&call(
        &server,
        "store_memory",
        json!({"content": "a private memory", "userId": "u1", "sessionId": "s1", "primarySector": "semantic"}),
    )
    .await);
    server.stop().await;
    let loose = open_to_others(&dir);
    assert!(loose.is_empty(), "readable by others: {loose:#?}");
    // A ledger made before files were private is tightened when it is next opened.
    let ledger = dir.join("ledger");
    std::fs::set_permissions(&ledger, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::set_permissions(
        ledger.join("log.dat"),
        std::fs::Permissions::from_mode(0o644),
    )
    .expect("chmod");
    let server = StdioServer::start(&dir, &[]).await;
    think(&server, 2, 2, "another", json!({})).await;
    server.stop().await;
    let loose = open_to_others(&dir);
    assert!(
        loose.is_empty(),
        "readable by others after reopening: {loose:#?}"
    );
}

#[tokio::test]
async fn verify_takes_the_public_key_where_the_data_directory_has_no_signing_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &[]).await;
    think(&server, 1, 1, "checked elsewhere", json!({})).await;
    server.stop().await;
    let key = cli(dir.path(), &["key"]).await.stdout.trim().to_owned();
    // A reviewer's copy: the ledger without the signing key.
    std::fs::remove_file(dir.path().join("signing.key")).expect("remove the key");
    let unchecked = cli(dir.path(), &["verify"]).await;
    assert_eq!(unchecked.status.code(), Some(2), "{unchecked:?}");
    assert!(
        unchecked.stdout.contains("--pubkey"),
        "{}",
        unchecked.stdout
    );
    let run = cli(dir.path(), &["verify", "--pubkey", &key]).await;
    assert!(run.status.success(), "{run:?}");
    assert!(run.stdout.contains("intact: 1 events"), "{}", run.stdout);
    // Another ledger's key does not pass for this one's.
    let other = tempfile::tempdir().expect("tempdir");
    let other_key = cli(other.path(), &["key"]).await.stdout.trim().to_owned();
    let wrong = cli(dir.path(), &["verify", "--pubkey", &other_key]).await;
    assert_eq!(wrong.status.code(), Some(2), "{wrong:?}");
    let garbage = cli(dir.path(), &["verify", "--pubkey", "not a key"]).await;
    assert!(!garbage.status.success());
    assert!(
        garbage.stderr.contains("is not a verifier key"),
        "{}",
        garbage.stderr
    );
}

#[tokio::test]
async fn readyz_says_whether_the_ledger_takes_calls_and_why_not() {
    let probe = |url: String| async move {
        let response = reqwest::get(url).await.expect("GET");
        (
            response.status().as_u16(),
            response.text().await.unwrap_or_default(),
        )
    };
    let healthy = tempfile::tempdir().expect("tempdir");
    let server = HttpServer::start(healthy.path(), &[]).await;
    let base = server.url.trim_end_matches("/mcp").to_owned();
    assert_eq!(probe(format!("{base}/healthz")).await.0, 200);
    // Ready once the ledger is open (it opens behind the first answers).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (status, body) = probe(format!("{base}/readyz")).await;
        if status == 200 {
            assert_eq!(body.trim(), "ready");
            break;
        }
        assert_eq!(status, 503, "{body}");
        assert!(std::time::Instant::now() < deadline, "never ready: {body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill().await;

    let damaged = ledger_with_one_altered_event(2, flip_recorded_at).await;
    let server = HttpServer::start(damaged.path(), &[]).await;
    let base = server.url.trim_end_matches("/mcp").to_owned();
    assert_eq!(
        probe(format!("{base}/healthz")).await.0,
        200,
        "the process answers"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let body = loop {
        let (status, body) = probe(format!("{base}/readyz")).await;
        assert_eq!(status, 503, "a damaged ledger is never ready: {body}");
        if body.contains("could not be opened") {
            break body;
        }
        assert!(std::time::Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(body.contains("event 2"), "{body}");
    server.kill().await;
}
