//! Given/when/then tests of the decisions, through the real writer on an in-memory store.

use serde_json::{Value, json};

use super::{App, AppConfig, Command};
use crate::effects::{Effects, SystemEffects};
use crate::events::{Actor, OutcomeStatus, SessionId};
use crate::ledger::{
    Committed, LedgerHandle, MemStore, SledStore, Store, WriterConfig, open_ledger,
};

struct Given {
    ledger: LedgerHandle<App>,
    connection: SessionId,
}

fn given(max_text_bytes: usize) -> Given {
    let ledger = open_ledger(
        MemStore::default(),
        App::new(AppConfig {
            max_text_bytes,
            ..AppConfig::default()
        }),
        WriterConfig::default(),
    )
    .unwrap();
    Given {
        ledger,
        connection: SessionId::random(),
    }
}

impl Given {
    async fn call(&self, tool: &str, arguments: Value) -> Committed {
        let actor = Actor {
            principal: "local".into(),
            transport: "test".into(),
            client_name: None,
            client_version: None,
            role: Default::default(),
            user_ids: Vec::new(),
        };
        let command = Command {
            tool: tool.into(),
            arguments,
            actor,
            connection_session: self.connection.clone(),
            refused_in: Some(self.connection.clone()),
            tool_enabled: tool != "disabled-probe",
            toolsets: Vec::new(),
            admin: false,
            idempotency_key: None,
            trace: None,
            prepared: SystemEffects.prepare(),
            watch: Default::default(),
            precomputed: Default::default(),
        };
        self.ledger.submit(command).await.unwrap()
    }

    async fn think(&self, n: u32, extra: Value) -> Committed {
        let mut args = json!({"thought": format!("thought {n}"), "nextThoughtNeeded": true,
            "thoughtNumber": n, "totalThoughts": 3});
        if let (Value::Object(a), Value::Object(e)) = (&mut args, extra) {
            a.extend(e);
        }
        self.call("sequentialthinking", args).await
    }

    async fn thoughts(&self) -> usize {
        let id = self.connection.clone();
        self.ledger
            .query(Box::new(move |s| {
                json!(s.state().head(&id).map_or(0, |s| s.thought_count))
            }))
            .await
            .unwrap()
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(usize::MAX)
    }
}

fn assert_rejected(c: &Committed, code: &str) {
    assert_eq!(c.status, OutcomeStatus::Rejected, "{}", c.body);
    assert_eq!(c.body["code"], code, "{}", c.body);
    assert!(!c.body["suggestion"].as_str().unwrap_or_default().is_empty());
}

#[tokio::test]
async fn a_thought_number_above_the_estimate_raises_it_as_the_reference_server_does() {
    let g = given(1024);
    let c = g.think(5, json!({"totalThoughts": 3})).await;
    assert_eq!(c.body["totalThoughts"], 5);
    assert_eq!(c.body["thoughtHistoryLength"], 1);
    assert_eq!(c.body["branches"], json!([]));
}

#[tokio::test]
async fn branches_are_listed_once_in_the_order_opened() {
    let g = given(1024);
    g.think(1, json!({})).await;
    g.think(2, json!({"branchFromThought": 1, "branchId": "b"}))
        .await;
    g.think(3, json!({"branchFromThought": 1, "branchId": "a"}))
        .await;
    let c = g
        .think(4, json!({"branchFromThought": 1, "branchId": "b"}))
        .await;
    assert_eq!(c.body["branches"], json!(["b", "a"]));
    assert_eq!(c.body["thoughtHistoryLength"], 4);
}

#[tokio::test]
async fn strings_for_numbers_and_booleans_are_accepted() {
    let g = given(1024);
    let c = g
        .call(
            "sequentialthinking",
            json!({"thought": "x", "nextThoughtNeeded": "false",
            "thoughtNumber": "1", "totalThoughts": "2", "isRevision": "false"}),
        )
        .await;
    assert_eq!(c.status, OutcomeStatus::Ok, "{}", c.body);
    assert_eq!(c.body["nextThoughtNeeded"], false);
}

#[tokio::test]
async fn a_rejected_call_is_recorded_and_changes_nothing() {
    let g = given(1024);
    g.think(1, json!({})).await;
    for (args, code) in [
        (
            json!({"thought": "x", "thoughtNumber": 2, "totalThoughts": 2}),
            "invalid_arguments",
        ),
        (
            json!({"thought": "x", "nextThoughtNeeded": true, "thoughtNumber": 0, "totalThoughts": 2}),
            "invalid_arguments",
        ),
        (
            json!({"thought": "  ", "nextThoughtNeeded": true, "thoughtNumber": 2, "totalThoughts": 2}),
            "invalid_arguments",
        ),
        (
            json!({"thought": "x", "nextThoughtNeeded": true, "thoughtNumber": 2, "totalThoughts": 2, "revisesThought": 7}),
            "unknown_thought",
        ),
        (
            json!({"thought": "x", "nextThoughtNeeded": true, "thoughtNumber": 2, "totalThoughts": 2, "sessionId": SessionId::random().as_str()}),
            "unknown_session",
        ),
        (
            json!({"thought": "x", "nextThoughtNeeded": true, "thoughtNumber": 2, "totalThoughts": 2, "tags": ["a\u{7}"]}),
            "invalid_tag",
        ),
    ] {
        let c = g.call("sequentialthinking", args).await;
        assert_rejected(&c, code);
    }
    assert_eq!(g.thoughts().await, 1);
    let c = g.think(2, json!({})).await;
    assert_eq!(c.body["thoughtHistoryLength"], 2);
    assert_eq!(c.seq, 8, "every call, refused or not, took one seq");
}

#[tokio::test]
async fn oversized_text_is_refused_and_neither_stored_nor_recorded() {
    let g = given(16);
    let c = g
        .call(
            "sequentialthinking",
            json!({"thought": "x".repeat(17), "nextThoughtNeeded": true,
        "thoughtNumber": 1, "totalThoughts": 1}),
        )
        .await;
    assert_rejected(&c, "text_too_large");
    assert_eq!(g.thoughts().await, 0);
}

#[tokio::test]
async fn unknown_and_disabled_tools_are_refused() {
    let g = given(1024);
    assert_rejected(
        &g.call("think_harder", json!({"x": 1})).await,
        "unknown_tool",
    );
    assert_rejected(
        &g.call("search", Value::String("not an object".into()))
            .await,
        "invalid_arguments",
    );
    // Params the edge could not decode: rejected, recorded opaquely, nothing changed.
    let c = g
        .call(
            crate::app::UNDECODABLE_CALL,
            json!({"name": 5, "arguments": {"thought": "x"}}),
        )
        .await;
    assert_rejected(&c, "invalid_params");
    assert_eq!(g.thoughts().await, 0);
}

#[tokio::test]
async fn tags_are_normalized_and_tag_reports_only_real_changes() {
    let g = given(1024);
    g.think(1, json!({"tags": [" Hypothesis", "hypothesis", "KEY"]}))
        .await;
    let c = g.call("tag", json!({"thoughtNumber": 1, "add": ["key", "Decision"], "remove": ["hypothesis", "absent"]})).await;
    assert_eq!(c.body["tags"], json!(["key", "decision"]));
    assert_eq!(c.body["added"], json!(["decision"]));
    assert_eq!(c.body["removed"], json!(["hypothesis"]));
    assert_rejected(
        &g.call("tag", json!({"thoughtNumber": 9, "add": ["x"]}))
            .await,
        "unknown_thought",
    );
}

#[tokio::test]
async fn search_filters_by_regex_tags_branch_and_revision() {
    let g = given(1024);
    g.think(
        1,
        json!({"thought": "The API layer is slow", "tags": ["hypothesis"]}),
    )
    .await;
    g.think(
        2,
        json!({"thought": "Cache misses dominate", "tags": ["evidence", "key"]}),
    )
    .await;
    g.think(
        3,
        json!({"thought": "api: revised", "isRevision": true, "revisesThought": 1}),
    )
    .await;
    g.think(
        4,
        json!({"thought": "Try GraphQL", "branchFromThought": 2, "branchId": "alt"}),
    )
    .await;
    let numbers = |c: &Committed| -> Vec<u64> {
        c.body["matches"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["thoughtNumber"].as_u64())
            .collect()
    };
    assert_eq!(
        numbers(&g.call("search", json!({"query": "^api"})).await),
        [3]
    );
    assert_eq!(
        numbers(&g.call("search", json!({"query": "API"})).await),
        [1, 3],
        "case-insensitive"
    );
    assert_eq!(
        numbers(
            &g.call("search", json!({"query": "api", "includeRevisions": false}))
                .await
        ),
        [1]
    );
    assert_eq!(
        numbers(&g.call("search", json!({"tags": ["KEY", "evidence"]})).await),
        [2]
    );
    let c = g.call("search", json!({"branchId": "alt"})).await;
    assert_eq!(
        (numbers(&c), c.body["searchedThoughts"].as_u64()),
        (vec![4], Some(1))
    );
    assert_rejected(
        &g.call("search", json!({"query": "("})).await,
        "invalid_query",
    );
}

#[tokio::test]
async fn reset_needs_confirmation_and_closes_without_deleting() {
    let g = given(1024);
    g.think(1, json!({})).await;
    g.think(2, json!({"branchFromThought": 1, "branchId": "b"}))
        .await;
    assert_rejected(
        &g.call("reset", json!({"confirm": false})).await,
        "confirmation_required",
    );
    let c = g.call("reset", json!({"confirm": true})).await;
    assert_eq!(c.body["cleared"], json!({"thoughts": 2, "branches": 1}));
    let closed = g.connection.as_str().to_owned();
    assert_eq!(c.body["sessionId"], closed);
    assert_rejected(&g.think(3, json!({})).await, "session_closed");
    let c = g
        .call("export", json!({"sessionId": closed, "format": "json"}))
        .await;
    assert_eq!(
        c.body["thoughtCount"], 2,
        "a closed session stays exportable"
    );
}

#[tokio::test]
async fn free_text_never_appears_in_an_event() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let ledger = open_ledger(
        store,
        App::new(AppConfig::default()),
        WriterConfig::default(),
    )
    .unwrap();
    let g = Given {
        ledger,
        connection: SessionId::random(),
    };
    g.think(1, json!({"thought": "the secret plan"})).await;
    g.call("search", json!({"query": "secret"})).await;
    g.call(
        "sequentialthinking",
        json!({"thought": "secret but malformed"}),
    )
    .await;
    g.call("no_such_tool", json!({"note": "secret elsewhere"}))
        .await;
    g.ledger.shutdown().await;
    let store = SledStore::open(dir.path()).unwrap();
    let events: Vec<Vec<u8>> = store.events_from(1).map(|r| r.unwrap().1).collect();
    assert_eq!(events.len(), 4);
    for bytes in &events {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.contains("secret"), "plaintext in an event: {text}");
    }
    let report = crate::ledger::verify(&store).unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
}

#[tokio::test]
async fn reads_on_a_fresh_connection_start_no_session() {
    let g = given(1024);
    for tool in ["search", "export", "visualize"] {
        let c = g.call(tool, json!({})).await;
        assert_eq!(c.status, OutcomeStatus::Ok, "{}", c.body);
        assert_eq!(c.body["sessionId"], Value::Null, "{tool}");
        assert_eq!(c.session_id, None, "{tool}");
    }
    let sessions = g
        .ledger
        .query(Box::new(|s| json!(s.state().heads().count())))
        .await
        .unwrap();
    assert_eq!(sessions, 0);
    let c = g.think(1, json!({})).await;
    assert_eq!(c.body["sessionId"], g.connection.as_str());
}

/// Snapshots: a ledger opened from its snapshot has exactly the state a full replay gives; a
/// damaged snapshot only costs time; no snapshot outlives an erasure.
mod snapshots {
    use super::*;
    use crate::ledger::snapshot::FileSnapshots;

    fn actor() -> Actor {
        Actor {
            principal: "local".into(),
            transport: "test".into(),
            client_name: None,
            client_version: None,
            role: Default::default(),
            user_ids: Vec::new(),
        }
    }

    /// A `snapshot_every` no test ledger reaches: snapshots only at shutdown.
    const RARELY: u64 = 1 << 40;

    fn open(dir: &std::path::Path, snapshot_every: u64) -> LedgerHandle<App> {
        open_ledger(
            SledStore::reopen(dir),
            App::new(AppConfig::default()),
            WriterConfig {
                snapshot_every,
                ..WriterConfig::default()
            },
        )
        .unwrap()
    }

    async fn state(ledger: &LedgerHandle<App>) -> Value {
        ledger
            .query(Box::new(|app| {
                let mut state: Value =
                    serde_json::from_slice(&app.save_snapshot().unwrap()).unwrap();
                // A server's snapshot holds the sessions' heads only: their bodies, as read
                // back from the log, are compared too.
                let thinking = app.state();
                let bodies: Vec<_> = thinking
                    .heads()
                    .map(|head| thinking.body(head).unwrap())
                    .collect();
                state["bodies"] = json!(bodies);
                state
            }))
            .await
            .unwrap()
    }

    fn snapshot_file(dir: &std::path::Path) -> std::path::PathBuf {
        dir.join(FileSnapshots::FILE_NAME)
    }

    /// Calls of every family the decider folds: thoughts with a branch and a tag, a
    /// deliberation with nodes, an idempotent call, a refusal.
    /// Returns the deliberation's session id.
    async fn record_some(
        ledger: &LedgerHandle<App>,
        connection: &SessionId,
        secret: &str,
    ) -> String {
        let call = |tool: &str, arguments: Value, key: Option<&str>| {
            let mut command = Command::tool_call(
                tool,
                arguments,
                actor(),
                connection.clone(),
                SystemEffects.prepare(),
            );
            command.idempotency_key = key.map(str::to_owned);
            ledger.submit(command)
        };
        for n in 1..=3u32 {
            let mut args = json!({"thought": format!("{secret} {n}"), "nextThoughtNeeded": true,
                "thoughtNumber": n, "totalThoughts": 3});
            if n == 3 {
                args["branchFromThought"] = json!(1);
                args["branchId"] = json!("alt");
            }
            call("sequentialthinking", args, None).await.unwrap();
        }
        call("tag", json!({"thoughtNumber": 1, "tags": ["kept"]}), None)
            .await
            .unwrap();
        let started = call(
            "start_deliberation",
            json!({"goal": "choose a cache", "mode": "Explore"}),
            Some("key-1"),
        )
        .await
        .unwrap();
        assert_eq!(started.status, OutcomeStatus::Ok, "{}", started.body);
        let session = started.body["session_id"].clone();
        call(
            "add_thought_node",
            json!({"session_id": session, "content": format!("{secret}: an LRU in front of sled")}),
            None,
        )
        .await
        .unwrap();
        call("no_such_tool", json!({}), None).await.unwrap();
        session.as_str().unwrap().to_owned()
    }

    #[tokio::test]
    async fn a_ledger_opened_from_its_snapshot_has_the_state_a_full_replay_gives() {
        let dir = tempfile::tempdir().unwrap();
        let connection = SessionId::random();
        // Taken while the ledger runs, once enough events passed and the writer is idle.
        let ledger = open(dir.path(), 1);
        record_some(&ledger, &connection, "thought").await;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !snapshot_file(dir.path()).exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "no snapshot while running"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        ledger.shutdown().await;

        let from_snapshot = open(dir.path(), RARELY);
        assert!(
            from_snapshot.opened_from_snapshot() > 0,
            "the state came from the snapshot, not a replay"
        );
        let restored = state(&from_snapshot).await;
        // A call decided on the restored state, then everything once more.
        let c = from_snapshot
            .submit(Command::tool_call(
                "search",
                json!({"query": "thought"}),
                actor(),
                connection.clone(),
                SystemEffects.prepare(),
            ))
            .await
            .unwrap();
        assert_eq!(c.body["totalMatches"], 3, "{}", c.body);
        let after_call = state(&from_snapshot).await;
        from_snapshot.shutdown().await;

        std::fs::remove_file(snapshot_file(dir.path())).unwrap();
        let replayed = open(dir.path(), 0);
        assert_eq!(replayed.opened_from_snapshot(), 0);
        assert_eq!(state(&replayed).await, after_call);
        replayed.shutdown().await;
        assert_ne!(
            restored, after_call,
            "the call after the restore changed state"
        );
        assert!(
            !snapshot_file(dir.path()).exists(),
            "snapshot_every 0 saves none"
        );
    }

    #[tokio::test]
    async fn a_damaged_or_foreign_snapshot_is_ignored_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = open(dir.path(), RARELY);
        record_some(&ledger, &SessionId::random(), "thought").await;
        let expected = state(&ledger).await;
        ledger.shutdown().await;
        let good = std::fs::read(snapshot_file(dir.path())).unwrap();

        let mut flipped = good.clone();
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0x20;
        let other = tempfile::tempdir().unwrap();
        let foreign = open(other.path(), RARELY);
        record_some(&foreign, &SessionId::random(), "thought").await;
        foreign.shutdown().await;
        let foreign = std::fs::read(snapshot_file(other.path())).unwrap();

        for damaged in [
            flipped,
            good[..good.len() / 3].to_vec(),
            foreign,
            Vec::new(),
        ] {
            std::fs::write(snapshot_file(dir.path()), &damaged).unwrap();
            let ledger = open(dir.path(), RARELY);
            assert_eq!(
                ledger.opened_from_snapshot(),
                0,
                "a bad snapshot is not used"
            );
            assert_eq!(state(&ledger).await, expected);
            ledger.shutdown().await;
            // Shutdown replaced it with a good one.
            assert_eq!(
                std::fs::read(snapshot_file(dir.path())).unwrap().len(),
                good.len()
            );
        }
        let ledger = open(dir.path(), RARELY);
        assert!(ledger.opened_from_snapshot() > 0, "the replacement is used");
        assert_eq!(state(&ledger).await, expected);
        ledger.shutdown().await;
    }

    #[tokio::test]
    async fn a_snapshot_older_than_an_erasure_is_removed_before_anyone_is_served() {
        let dir = tempfile::tempdir().unwrap();
        let secret = "the patient in room 4471";
        let ledger = open(dir.path(), RARELY);
        let connection = SessionId::random();
        let deliberation = record_some(&ledger, &connection, secret).await;
        ledger.shutdown().await;
        let before = std::fs::read(snapshot_file(dir.path())).unwrap();
        // The deliberation's node text (a server's snapshot holds no thought texts: those are
        // read back from the log).
        assert!(holds(&before, secret), "the snapshot holds the texts");

        let ledger = open(dir.path(), RARELY);
        for session in [connection.as_str(), deliberation.as_str()] {
            let mut erase = Command::tool_call(
                "erase",
                json!({"sessionId": session, "reason": "subject request"}),
                actor(),
                SessionId::random(),
                SystemEffects.prepare(),
            );
            erase.admin = true;
            let erased = ledger.submit(erase).await.unwrap();
            assert_eq!(erased.status, OutcomeStatus::Ok, "{}", erased.body);
        }
        // Answered: no snapshot on disk holds the text any more.
        assert!(!snapshot_file(dir.path()).exists());
        ledger.shutdown().await;
        let after = std::fs::read(snapshot_file(dir.path())).unwrap();
        assert!(
            !holds(&after, secret),
            "the new snapshot has no erased text"
        );

        // A crash between the erasure and the snapshot's removal leaves the old one: the next
        // open removes it and shows the texts erased.
        std::fs::write(snapshot_file(dir.path()), &before).unwrap();
        let ledger = open(dir.path(), RARELY);
        assert!(!snapshot_file(dir.path()).exists());
        let text = ledger
            .query(Box::new(move |app| {
                json!(
                    app.state().session(&connection).unwrap().unwrap().thoughts[0]
                        .text
                        .is_none()
                )
            }))
            .await
            .unwrap();
        assert_eq!(text, json!(true));
        ledger.shutdown().await;
        assert!(!holds(
            &std::fs::read(snapshot_file(dir.path())).unwrap(),
            secret
        ));
    }

    #[tokio::test]
    async fn a_log_changed_under_its_snapshot_is_caught_behind_and_calls_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = open(dir.path(), 1);
        record_some(&ledger, &SessionId::random(), "thought").await;
        ledger.shutdown().await;
        let mut store = SledStore::reopen(dir.path());
        let mut event: Value =
            serde_json::from_slice(&store.event_bytes(2).unwrap().unwrap()).unwrap();
        event["recordedAt"] = json!("2020-01-01T00:00:00.000000Z");
        store
            .tamper_event_bytes(2, &serde_json::to_vec(&event).unwrap())
            .unwrap();
        drop(store);

        // Checked before the first call (a short log, or a one-shot command): refused to open.
        let refused = open_ledger(
            SledStore::reopen(dir.path()),
            App::new(AppConfig::default()),
            WriterConfig::default(),
        );
        let Err(e) = refused else {
            panic!("a ledger whose log changed under its snapshot must not open")
        };
        assert!(e.to_string().contains("event 2"), "{e}");

        // Checked behind: the server opens from the snapshot at once, then stops taking calls.
        let path = dir.path().to_path_buf();
        let ledger = crate::ledger::start_ledger(
            move || Ok((SledStore::reopen(&path), None)),
            App::new(AppConfig::default()),
            WriterConfig {
                check_at_open_max: 0,
                ..WriterConfig::default()
            },
        )
        .unwrap();
        let mut refused = None;
        for _ in 0..200 {
            let command = Command::tool_call(
                "search",
                json!({}),
                actor(),
                SessionId::random(),
                SystemEffects.prepare(),
            );
            match ledger.submit(command).await {
                Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
                Err(e) => {
                    refused = Some(e);
                    break;
                }
            }
        }
        let refused = refused.expect("calls are refused once the check fails");
        assert!(refused.to_string().contains("event 2"), "{refused}");
        ledger.shutdown().await;
    }

    /// A server checks the log under its snapshot behind, between calls, then lets go of what
    /// that check read (`Store::release_reads`: sled is opened again); calls before, during
    /// and after it are answered, and the ledger holds all of them.
    #[tokio::test]
    async fn a_server_checks_its_log_behind_then_lets_go_of_the_reads_and_keeps_answering() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = open(dir.path(), RARELY);
        record_some(&ledger, &SessionId::random(), "thought").await;
        ledger.shutdown().await;
        let recorded = SledStore::reopen(dir.path()).last_seq().unwrap().unwrap();

        let path = dir.path().to_path_buf();
        let ledger = crate::ledger::start_ledger(
            move || Ok((SledStore::reopen_for_serving(&path), None)),
            App::new(AppConfig::default()),
            WriterConfig {
                check_at_open_max: 0,
                snapshot_every: RARELY,
                ..WriterConfig::default()
            },
        )
        .unwrap();
        ledger.opened().await.unwrap();
        assert!(
            ledger.opened_from_snapshot() > 0,
            "opened from the snapshot"
        );
        let connection = SessionId::random();
        for n in 1..=20u32 {
            let command = Command::tool_call(
                "sequentialthinking",
                json!({"thought": format!("after {n}"), "nextThoughtNeeded": true,
                    "thoughtNumber": n, "totalThoughts": 20}),
                actor(),
                connection.clone(),
                SystemEffects.prepare(),
            );
            let done = ledger.submit(command).await.unwrap();
            assert_eq!(done.status, OutcomeStatus::Ok, "{}", done.body);
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        ledger.shutdown().await;
        let store = SledStore::reopen(dir.path());
        assert_eq!(store.last_seq().unwrap(), Some(recorded + 20));
        let report = crate::ledger::verify(&store).unwrap();
        assert!(report.is_intact(), "{:?}", report.problems);
    }

    /// Each event's hash and bytes, made from one serialization (`sealed_event`), are those of
    /// the plain formula: the hash of the JCS bytes without `hash`, then the JCS bytes with it.
    #[tokio::test]
    async fn sealed_events_are_the_plain_formulas_bytes_and_hash() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = open(dir.path(), RARELY);
        record_some(
            &ledger,
            &SessionId::random(),
            "thought \u{1F600} \"quoted\"",
        )
        .await;
        ledger.shutdown().await;
        let store = SledStore::reopen(dir.path());
        let mut checked = 0;
        for item in store.events_from(1) {
            let (_, stored) = item.unwrap();
            let mut event: crate::events::Event = serde_json::from_slice(&stored).unwrap();
            event.hash = String::new();
            let (hash, bytes) = crate::ledger::hash::sealed_event(&event).unwrap();
            let plain_hash = crate::ledger::hash::event_hash(&event).unwrap();
            event.hash = plain_hash.clone();
            let plain_bytes =
                crate::ledger::canonical::canonical_bytes(&serde_json::to_value(&event).unwrap())
                    .unwrap();
            assert_eq!(hash, plain_hash);
            assert_eq!(bytes, plain_bytes);
            assert_eq!(bytes, stored);
            checked += 1;
        }
        assert!(checked >= 5, "{checked}");
    }

    fn holds(hay: &[u8], needle: &str) -> bool {
        hay.windows(needle.len()).any(|w| w == needle.as_bytes())
    }
}

/// Memory calls (`app::memory`) re-execute with zero divergences: the recorded vectors are
/// given back and the ids, scores and reinforcements derived again.
#[tokio::test]
async fn memory_calls_reexecute_with_zero_divergences() {
    let h = super::memory::tests::Harness::new();
    let a = h
        .store(
            "u",
            "The deploy key rotates every ninety days",
            "procedural",
        )
        .await;
    h.store(
        "u",
        "Rotating keys by hand caused an outage last spring",
        "episodic",
    )
    .await;
    h.store("u", "Key rotation should be automated", "reflective")
        .await;
    h.call(
        "store_memory",
        json!({"content": "", "userId": "u", "sessionId": "s",
                                  "primarySector": "semantic"}),
    )
    .await;
    h.ok(
        "retrieve_memories",
        json!({"userId": "u", "text": "key rotation", "limit": 2}),
    )
    .await;
    h.ok(
        "search_memories",
        json!({"userId": "u", "text": "\"deploy key\" OR outage"}),
    )
    .await;
    h.ok(
        "update_memory",
        json!({"memoryId": a, "userId": "u",
                                 "content": "The deploy key rotates every thirty days"}),
    )
    .await;
    h.ok(
        "delete_memory",
        json!({"memoryId": a, "userId": "u", "soft": true}),
    )
    .await;
    h.ok(
        "retrieve_memories",
        json!({"userId": "u", "text": "key", "minStrength": 0}),
    )
    .await;
    let session = h.connection.clone();
    let checks = h
        .ledger
        .inspect(move |view| {
            super::replay::reexecute(view, &session, App::new(AppConfig::default()))
                .expect("replay")
        })
        .await
        .expect("inspect");
    // The refused store is kept in its caller's session too: all 9 calls.
    assert_eq!(checks.len(), 9);
    for check in &checks {
        assert!(
            matches!(check.verdict, super::replay::Verdict::Matched),
            "seq {} {}: {:?}",
            check.seq,
            check.tool,
            check.verdict
        );
    }
}
