//! One ledger, any number of processes (docs/scaling.md, "One ledger, many processes"):
//! every MCP client's `thinkledger serve` on one data directory serves its client, in a session
//! of its own; the process that owns the ledger can die (SIGKILL) without a client noticing
//! more than a pause, or an answered call being lost or recorded twice; the commands run
//! through the serving process with the output they give offline.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{
    BIN, HttpServer, StdioServer, assert_intact, call, cli, cli_once, ok, sessions_json,
    stored_events, think, try_call,
};

/// One client's answered thoughts: (thought number, session, seq, thoughtHistoryLength, how
/// long the call took).
type Answers = Vec<(u32, String, u64, u64, Duration)>;

/// Makes `total` thoughts on `server`, paced like a model (`pace` between calls), until one
/// fails at the transport (its process died).
async fn paced_thoughts(
    server: Arc<StdioServer>,
    total: u32,
    pace: Duration,
    progress: Arc<AtomicUsize>,
) -> Answers {
    let mut answers = Vec::new();
    for n in 1..=total {
        let args = json!({
            "thought": format!("thought {n}"),
            "thoughtNumber": n,
            "totalThoughts": total,
            "nextThoughtNeeded": n < total,
        });
        let started = Instant::now();
        let Ok(result) = try_call(&server, "sequentialthinking", args).await else {
            break;
        };
        let took = started.elapsed();
        let body = ok(&result);
        answers.push((
            n,
            body["sessionId"].as_str().expect("sessionId").to_owned(),
            body["seq"].as_u64().expect("seq"),
            body["thoughtHistoryLength"].as_u64().expect("history"),
            took,
        ));
        progress.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(pace).await;
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_clients_on_one_directory_keep_their_own_sessions_through_a_killed_owner() {
    const THOUGHTS: u32 = 150;
    let dir = tempfile::tempdir().expect("tempdir");
    // The first process owns the ledger; the two after it relay to it.
    let mut servers = Vec::new();
    for _ in 0..3 {
        servers.push(Arc::new(StdioServer::start(dir.path(), &[]).await));
    }
    let owner_pid = servers[0].pid();
    let owners_progress = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for (k, server) in servers.iter().enumerate() {
        let progress = if k == 0 {
            owners_progress.clone()
        } else {
            Arc::new(AtomicUsize::new(0))
        };
        tasks.push(tokio::spawn(paced_thoughts(
            server.clone(),
            THOUGHTS,
            Duration::from_millis(10),
            progress,
        )));
    }
    // A third of the way through the owner's client, SIGKILL the process that writes.
    crate::common::within("a third of the owner's client's thoughts", async {
        while owners_progress.load(Ordering::SeqCst) < THOUGHTS as usize / 3 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    let status = std::process::Command::new("kill")
        .args(["-9", &owner_pid.to_string()])
        .status()
        .expect("kill -9");
    assert!(status.success());
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.expect("client task"));
    }
    assert!(
        !answers[0].is_empty() && answers[0].len() < THOUGHTS as usize,
        "the owner's client was cut off part way: {} answers",
        answers[0].len()
    );
    let mut all_seqs = HashSet::new();
    let mut sessions = HashSet::new();
    for (k, client) in answers.iter().enumerate() {
        if k > 0 {
            assert_eq!(
                client.len(),
                THOUGHTS as usize,
                "client {k}, whose own process lives, answered every call"
            );
            let longest = client.iter().map(|a| a.4).max().expect("answers");
            assert!(
                longest <= Duration::from_secs(2),
                "client {k}'s longest pause was {longest:?}; relay log:\n{}",
                servers[k].stderr()
            );
        }
        let session = &client[0].1;
        assert!(
            client.iter().all(|a| &a.1 == session),
            "client {k} stayed in one session"
        );
        assert!(
            sessions.insert(session.clone()),
            "no two clients share a session"
        );
        for (i, a) in client.iter().enumerate() {
            assert_eq!(
                a.3,
                i as u64 + 1,
                "client {k}: thoughtHistoryLength counts one each"
            );
            assert!(all_seqs.insert(a.2), "seq {} answered twice", a.2);
        }
    }
    // The relays leave; the promoted owner closes the ledger after them.
    let servers: Vec<StdioServer> = servers
        .into_iter()
        .map(|s| Arc::try_unwrap(s).ok().expect("one owner of each server"))
        .collect();
    let mut servers = servers.into_iter();
    let killed = servers.next().expect("the first server");
    for server in servers {
        server.stop().await;
    }
    killed.kill().await;
    // Every answered call is in the log exactly once, each in its client's session; the
    // killed owner's client may have had one call recorded and not answered.
    let answered: usize = answers.iter().map(Vec::len).sum();
    let listed = sessions_json(dir.path()).await;
    let mut thoughts = BTreeMap::new();
    for s in listed["sessions"].as_array().expect("sessions") {
        thoughts.insert(
            s["sessionId"].as_str().expect("id").to_owned(),
            s["thoughts"].as_u64().expect("thoughts"),
        );
    }
    for (k, client) in answers.iter().enumerate() {
        let recorded = thoughts[&client[0].1];
        let expected = client.len() as u64;
        assert!(
            recorded == expected || (k == 0 && recorded == expected + 1),
            "client {k}: {recorded} thoughts recorded for {expected} answered"
        );
    }
    let events: u64 = thoughts.values().sum();
    assert!(events == answered as u64 || events == answered as u64 + 1);
    assert_intact(dir.path(), events).await;
}

#[tokio::test]
async fn the_commands_run_through_the_serving_process_with_their_offline_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = StdioServer::start(dir.path(), &[]).await;
    let second = StdioServer::start(dir.path(), &[]).await;
    let mut ids = Vec::new();
    for server in [&first, &second] {
        let mut id = String::new();
        for n in 1..=3 {
            id = think(server, n, 3, &format!("thought {n}"), json!({})).await["sessionId"]
                .as_str()
                .expect("sessionId")
                .to_owned();
        }
        ids.push(id);
    }
    let (a, b) = (ids[0].as_str(), ids[1].as_str());
    let commands: Vec<Vec<&str>> = vec![
        vec!["sessions"],
        vec!["sessions", "--json"],
        vec!["key"],
        vec!["export", a],
        vec!["export", a, "--format", "json"],
        vec!["replay", a],
        vec!["replay", "--reexecute", "--json", b],
        vec!["diff", a, b],
    ];
    let mut served = Vec::new();
    for args in &commands {
        let run = cli_once(dir.path(), args).await;
        assert!(run.status.success(), "{args:?} while serving: {run:?}");
        served.push(run.stdout);
    }
    let verified = cli_once(dir.path(), &["verify"]).await;
    assert!(
        verified.status.success(),
        "verify while serving: {verified:?}"
    );
    assert!(
        verified.stdout.contains("intact: 6 events"),
        "{}",
        verified.stdout
    );
    let checkpoint = cli_once(dir.path(), &["checkpoint"]).await;
    assert!(checkpoint.status.success(), "{checkpoint:?}");
    assert!(checkpoint.stdout.contains("\n6\n"), "{}", checkpoint.stdout);
    let export = dir.path().join("a.audit.json");
    let export = export.to_str().expect("utf-8 path");
    let audit = cli_once(dir.path(), &["audit", a, "-o", export]).await;
    assert!(audit.status.success(), "{audit:?}");
    let key = served[2].trim();
    let checked = cli_once(dir.path(), &["verify-export", export, "--pubkey", key]).await;
    assert!(checked.status.success(), "{checked:?}");
    // A relative output path is the caller's, not the serving process's.
    let relative = tokio::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["audit", b, "-o", "b.audit.json"])
        .current_dir(dir.path())
        .env("RUST_LOG", "warn")
        .output()
        .await
        .expect("audit with a relative path");
    assert!(relative.status.success(), "{relative:?}");
    assert!(dir.path().join("b.audit.json").exists());
    // Bad input is answered as offline: the same message, the same exit code.
    let refused = cli_once(dir.path(), &["export", "not-a-session"]).await;
    assert!(!refused.status.success());
    assert!(
        refused.stderr.contains("is not a session id"),
        "{}",
        refused.stderr
    );
    // The relay leaves first: the owner stays while any relay is connected.
    second.stop().await;
    first.stop().await;
    for (args, during) in commands.iter().zip(&served) {
        let offline = cli(dir.path(), args).await;
        assert!(offline.status.success(), "{args:?} offline: {offline:?}");
        // The timeline and replay read the same log; the listing too.
        assert_eq!(
            &offline.stdout, during,
            "{args:?}: served and offline differ"
        );
    }
    // Erasure through a serving process; the chain still verifies.
    let server = StdioServer::start(dir.path(), &[]).await;
    let erased = cli_once(
        dir.path(),
        &["erase", "--session", a, "--reason", "asked to"],
    )
    .await;
    assert!(erased.status.success(), "{erased:?}");
    assert!(erased.stdout.starts_with("erased "), "{}", erased.stdout);
    let verified = cli_once(dir.path(), &["verify"]).await;
    assert!(verified.status.success(), "{verified:?}");
    server.stop().await;
    assert_intact(dir.path(), 7).await;
}

#[tokio::test]
async fn a_relay_of_another_build_is_told_both_versions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let owner = StdioServer::start(dir.path(), &[]).await;
    think(&owner, 1, 1, "owned", json!({})).await;
    let out = tokio::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(dir.path())
        .arg("serve")
        .env(
            "THINKLEDGER_TEST_BUILD",
            "thinkledger 0.0.1 (relay protocol 0)",
        )
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut child = out;
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().expect("stdin");
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}});
        stdin
            .write_all(format!("{init}\n").as_bytes())
            .await
            .expect("write");
    }
    let output = crate::common::within("the refused relay to exit", child.wait_with_output())
        .await
        .expect("output");
    assert!(!output.status.success());
    let answer: Value =
        serde_json::from_slice(output.stdout.split(|b| *b == b'\n').next().expect("a line"))
            .expect("JSON");
    let message = answer["error"]["message"].as_str().expect("an error");
    for needle in [
        "thinkledger 0.0.1 (relay protocol 0)",
        &thinkledger::server::owner::build(),
    ] {
        assert!(message.contains(needle), "names {needle}: {message}");
    }
    assert_eq!(answer["id"], 1);
    owner.stop().await;
}

#[tokio::test]
async fn a_call_whose_client_quits_at_once_is_still_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let owner = StdioServer::start(dir.path(), &[]).await;
    let mut child = tokio::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(dir.path())
        .arg("serve")
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().expect("stdin");
        let lines = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "sequentialthinking", "arguments": {"thought": "left behind",
                "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": false}}}),
        ];
        for line in lines {
            stdin
                .write_all(format!("{line}\n").as_bytes())
                .await
                .expect("write");
        }
        // stdin closes here, the call's answer not yet read.
    }
    let status = crate::common::within("the relay to exit", child.wait())
        .await
        .expect("wait");
    assert!(status.success());
    owner.stop().await;
    let listed = sessions_json(dir.path()).await;
    assert_eq!(listed["sessions"].as_array().map(Vec::len), Some(1));
    assert_intact(dir.path(), 1).await;
}

#[tokio::test]
async fn a_socket_left_by_a_killed_owner_is_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = StdioServer::start(dir.path(), &[]).await;
    think(&first, 1, 2, "before", json!({})).await;
    first.kill().await;
    assert!(
        dir.path().join("owner.sock").exists(),
        "the killed owner left its socket"
    );
    let next = StdioServer::start(dir.path(), &[]).await;
    think(&next, 1, 1, "after", json!({})).await;
    let relay = StdioServer::start(dir.path(), &[]).await;
    think(&relay, 1, 1, "relayed", json!({})).await;
    relay.stop().await;
    next.stop().await;
    assert_intact(dir.path(), 3).await;
}

#[tokio::test]
async fn an_http_server_refuses_a_directory_another_process_serves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let owner = StdioServer::start(dir.path(), &[]).await;
    let run = cli_once(dir.path(), &["serve", "--http", "127.0.0.1:0"]).await;
    assert!(!run.status.success());
    assert!(
        run.stderr
            .contains("another thinkledger process serves the data directory"),
        "{}",
        run.stderr
    );
    owner.stop().await;
}

#[tokio::test]
async fn without_a_connection_a_first_thought_starts_a_session_of_its_own() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = HttpServer::start(dir.path(), &["--stateless"]).await;
    let mut sessions = Vec::new();
    for conversation in 0..2 {
        let client = server.connect().await;
        let mut ids = HashSet::new();
        for n in 1..=5 {
            let body = think(
                &client,
                n,
                5,
                &format!("conversation {conversation}, {n}"),
                json!({}),
            )
            .await;
            assert_eq!(body["thoughtHistoryLength"], u64::from(n));
            ids.insert(body["sessionId"].as_str().expect("id").to_owned());
        }
        assert_eq!(ids.len(), 1, "one conversation, one session");
        sessions.extend(ids);
        let _ = client.cancel().await;
    }
    assert_ne!(sessions[0], sessions[1], "two conversations, two sessions");
    // A revision of thought 1 is no new conversation.
    let client = server.connect().await;
    let body = think(
        &client,
        1,
        5,
        "revised",
        json!({"isRevision": true, "revisesThought": 1}),
    )
    .await;
    assert_eq!(body["sessionId"], sessions[1].as_str());
    server.kill().await;
}

#[tokio::test]
async fn a_peer_of_another_user_is_refused_by_its_credentials() {
    // Only root can start a process of another user; the socket is opened to everyone so that
    // its mode does not refuse first and the owner's credential check is what answers.
    if rustix::process::getuid().as_raw() != 0 || which("setpriv").is_none() {
        eprintln!("skipped: needs root and setpriv(1) to run a peer as another user");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let owner = StdioServer::start(dir.path(), &[]).await;
    think(&owner, 1, 1, "mine", json!({})).await;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let socket = dir.path().join("owner.sock");
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    std::fs::set_permissions(
        dir.path().join("owner.lock"),
        std::fs::Permissions::from_mode(0o666),
    )
    .expect("chmod");
    let mut child = tokio::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
        .arg("--data-dir")
        .arg(dir.path())
        .args(["sessions"])
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn as nobody");
    let output = crate::common::within("the other user's command", async {
        let status = child.wait().await;
        let mut stderr = String::new();
        use tokio::io::AsyncReadExt;
        if let Some(mut err) = child.stderr.take() {
            let _ = err.read_to_string(&mut stderr).await;
        }
        (status, stderr)
    })
    .await;
    assert!(!output.0.expect("status").success());
    assert!(
        output.1.contains("a process of user 65534 may not use it"),
        "{}",
        output.1
    );
    owner.stop().await;
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|path| path.is_file())
    })
}

#[tokio::test]
async fn a_first_thought_after_a_conclusion_and_a_reset_after_a_deliberation_do_what_they_say() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &[]).await;
    let first = think(&server, 1, 2, "start", json!({})).await;
    let concluded = think(&server, 2, 2, "done", json!({"nextThoughtNeeded": false})).await;
    assert_eq!(concluded["sessionId"], first["sessionId"]);
    // A new thought 1 without a handle after the conclusion is a new conversation.
    let next = think(&server, 1, 3, "a new problem", json!({})).await;
    assert_ne!(next["sessionId"], first["sessionId"], "{next}");
    assert_eq!(next["thoughtHistoryLength"], 1);
    // A deliberation started meanwhile is a workspace of its own: its calls continue it, and
    // `reset` still closes the thinking session.
    let deliberation = ok(&call(
        &server,
        "start_deliberation",
        json!({"goal": "Pick a cache eviction policy", "mode": "Test"}),
    )
    .await)["session_id"]
        .as_str()
        .expect("session_id")
        .to_owned();
    let expanded = ok(&call(&server, "expand_thoughts", json!({"count": 1})).await);
    assert_eq!(expanded["session_id"], deliberation.as_str(), "{expanded}");
    let reset = ok(&call(&server, "reset", json!({"confirm": true})).await);
    assert_eq!(reset["sessionId"], next["sessionId"], "{reset}");
    let after = think(&server, 1, 1, "after the reset", json!({})).await;
    assert_ne!(after["sessionId"], next["sessionId"]);
    let still = ok(&call(&server, "expand_thoughts", json!({"count": 1})).await);
    assert_eq!(
        still["session_id"],
        deliberation.as_str(),
        "the deliberation goes on"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_data_directory_that_cannot_be_made_is_named() {
    let root = tempfile::tempdir().expect("tempdir");
    let file = root.path().join("a-file");
    std::fs::write(&file, b"not a directory").expect("write");
    let dir = file.join("data");
    for args in [&["sessions"][..], &["serve"][..]] {
        let run = cli_once(&dir, args).await;
        assert!(!run.status.success(), "{args:?}: {run:?}");
        assert!(
            run.stderr.contains(&dir.display().to_string()),
            "{args:?} names the directory: {}",
            run.stderr
        );
    }
}

#[tokio::test]
async fn store_memory_is_recorded_in_the_session_its_session_id_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = StdioServer::start(dir.path(), &[]).await;
    let named =
        think(&first, 1, 1, "the session a memory belongs to", json!({})).await["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_owned();
    first.stop().await;
    // Another connection, whose current session is another one.
    let server = StdioServer::start(dir.path(), &[]).await;
    let here = think(&server, 1, 1, "this connection's own", json!({})).await["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_owned();
    let stored = |session: &str| {
        json!({"content": "the deploy key rotates monthly", "userId": "u1",
               "sessionId": session, "primarySector": "semantic"})
    };
    let into_named = ok(&call(&server, "store_memory", stored(&named)).await)["seq"].clone();
    let tagged = ok(&call(&server, "store_memory", stored("chat-7")).await)["seq"].clone();
    server.stop().await;
    let events = stored_events(dir.path());
    let session_of = |seq: &Value| {
        events
            .iter()
            .find(|e| &e["seq"] == seq)
            .map(|e| e["sessionId"].clone())
            .expect("the event")
    };
    assert_eq!(
        session_of(&into_named),
        json!(named),
        "a session id of the caller's"
    );
    assert_eq!(
        session_of(&tagged),
        json!(here),
        "a conversation tag: the current session"
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_relay_told_to_stop_leaves_while_its_client_still_holds_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let owner = StdioServer::start(dir.path(), &[]).await;
    let relay = StdioServer::start(dir.path(), &[]).await;
    think(&relay, 1, 2, "before the signal", json!({})).await;
    let status = std::process::Command::new("kill")
        .args(["-TERM", &relay.pid().to_string()])
        .status()
        .expect("kill -TERM");
    assert!(status.success());
    // The relay exits although its client never closed stdin; the owner serves on.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::path::Path::new(&format!("/proc/{}", relay.pid())).exists()
        && std::fs::read_to_string(format!("/proc/{}/stat", relay.pid()))
            .is_ok_and(|stat| !stat.contains(") Z "))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the relay did not stop: {}",
            relay.stderr()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    think(&owner, 1, 1, "the owner goes on", json!({})).await;
    relay.kill().await;
    owner.stop().await;
    assert_intact(dir.path(), 2).await;
}
