//! Given/when/then tests of the decisions, through the real writer on an in-memory store.

use serde_json::{Value, json};

use super::{App, AppConfig, Command};
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
        };
        let command = Command {
            tool: tool.into(),
            arguments,
            actor,
            connection_session: self.connection.clone(),
            tool_enabled: tool != "disabled-probe",
            toolsets: Vec::new(),
            admin: false,
            idempotency_key: None,
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
                json!(s.state().session(&id).map_or(0, |s| s.thoughts.len()))
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
        .query(Box::new(|s| json!(s.state().sessions().count())))
        .await
        .unwrap();
    assert_eq!(sessions, 0);
    let c = g.think(1, json!({})).await;
    assert_eq!(c.body["sessionId"], g.connection.as_str());
}
