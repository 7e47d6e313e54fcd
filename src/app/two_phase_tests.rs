//! Calls in two phases, proven through the real writer on an in-memory store: the same calls
//! prepared with the same effects (a fixed clock and seed) decide into byte-identical events;
//! a call prepared without randomness is refused, recorded and changes nothing; the decision
//! time is the prepared one (the audit export's `generatedAt` included); the tool time limit,
//! measured by the writer, refuses a slow decision and changes nothing.

use chrono::{DateTime, TimeZone, Utc};
use serde_json::{Value, json};

use super::{App, AppConfig, Command, Query};
use crate::effects::{Effects, FixedEffects};
use crate::events::{Actor, OutcomeStatus, SessionId};
use crate::ledger::checkpoint::NoteSigner;
use crate::ledger::hash::parse_hex32;
use crate::ledger::keyfile::key_name;
use crate::ledger::notary::Notary;
use crate::ledger::{
    Committed, DecideTime, FORMAT, LedgerHandle, LedgerMeta, MemStore, Store, TextState,
    WriterConfig, format_timestamp, open_ledger,
};

fn at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 25, 9, 30, 0)
        .single()
        .expect("a valid time")
}

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

/// A ledger on a store whose metadata is fixed (so two runs carry the same `ledgerId`).
/// Every decision is taken to last `DECIDE_TIME` (the writer's one measurement, recorded as
/// `decideMicros`), so the events can be byte-identical.
const DECIDE_TIME: DecideTime = DecideTime::Fixed(std::time::Duration::from_micros(250));

/// The ledger id of every test ledger here.
const LEDGER_ID: &str = "0b6f3e5a-5d1e-4c55-9a43-1f1c2d3e4f50";

fn ledger(config: AppConfig, writer: WriterConfig) -> LedgerHandle<App> {
    let mut store = MemStore::default();
    store
        .init_meta(&LedgerMeta {
            ledger_id: LEDGER_ID.into(),
            created_at: format_timestamp(at()),
            format: FORMAT.into(),
        })
        .expect("meta");
    open_ledger(store, App::new(config), writer).expect("open")
}

struct Caller<'a> {
    ledger: &'a LedgerHandle<App>,
    effects: &'a dyn Effects,
    connection: SessionId,
}

impl Caller<'_> {
    async fn call(&self, tool: &str, arguments: Value, key: Option<&str>) -> Committed {
        let mut command = Command::tool_call(
            tool,
            arguments,
            actor(),
            self.connection.clone(),
            self.effects.prepare(),
        );
        command.idempotency_key = key.map(str::to_owned);
        self.ledger.submit(command).await.expect("recorded")
    }

    async fn ok(&self, tool: &str, arguments: Value) -> Value {
        let c = self.call(tool, arguments, None).await;
        assert_eq!(c.status, OutcomeStatus::Ok, "{tool}: {:#}", c.body);
        c.body
    }
}

fn thought(n: u32, text: &str) -> Value {
    json!({"thought": text, "thoughtNumber": n, "totalThoughts": 3, "nextThoughtNeeded": true})
}

/// Every stored event's canonical bytes, and every text it refers to (salt and text).
async fn log_of(ledger: &LedgerHandle<App>) -> (Vec<Vec<u8>>, Vec<([u8; 32], String)>) {
    ledger
        .inspect(|view| {
            let mut events = Vec::new();
            let mut texts = Vec::new();
            for seq in 1..=view.len() {
                let bytes = view.event_bytes(seq).expect("event");
                let event: Value = serde_json::from_slice(&bytes).expect("json");
                for commitment in commitments(&event) {
                    if let Ok(TextState::Present(record)) = view.text(&commitment)
                        && !texts.contains(&(record.salt, record.text.clone()))
                    {
                        texts.push((record.salt, record.text));
                    }
                }
                events.push(bytes);
            }
            (events, texts)
        })
        .await
        .expect("inspect")
}

fn commitments(value: &Value) -> Vec<[u8; 32]> {
    match value {
        Value::Object(map) => map
            .iter()
            .flat_map(|(k, v)| match (k.as_str(), v) {
                ("textCommitment", Value::String(c)) => parse_hex32(c).into_iter().collect(),
                _ => commitments(v),
            })
            .collect(),
        Value::Array(items) => items.iter().flat_map(commitments).collect(),
        _ => Vec::new(),
    }
}

/// One run of a session touching every effect a decision uses: salts (thought, opaque
/// arguments, kept response body, derived texts), a drawn session id (a deliberation started
/// while the connection's session exists), and the decision time (analysis metadata).
async fn run(seed: [u8; 32]) -> (Vec<Vec<u8>>, Vec<([u8; 32], String)>) {
    let ledger = ledger(
        AppConfig::default(),
        WriterConfig {
            decide_time: DECIDE_TIME,
            ..WriterConfig::default()
        },
    );
    let effects = FixedEffects::new(at(), seed);
    let caller = Caller {
        ledger: &ledger,
        effects: &effects,
        connection: SessionId::from_random_bytes([1; 16]),
    };
    caller
        .ok("sequentialthinking", thought(1, "Which storage engine?"))
        .await;
    let started = caller
        .ok(
            "start_deliberation",
            json!({"goal": "Choose a storage engine for the audit log"}),
        )
        .await;
    let id = started["session_id"]
        .as_str()
        .expect("a session")
        .to_owned();
    caller
        .ok(
            "add_thought_node",
            json!({"content": "sled, with an fsync after flush", "parent_ids": ["node-1"],
                   "session_id": id}),
        )
        .await;
    caller.call("no_such_tool", json!({"x": "y"}), None).await;
    caller
        .call("search", json!({"query": "engine"}), Some("search-1"))
        .await;
    let log = log_of(&ledger).await;
    ledger.shutdown().await;
    log
}

#[tokio::test]
async fn the_same_calls_with_the_same_effects_decide_into_byte_identical_events() {
    let (events, texts) = run([7; 32]).await;
    assert_eq!(events.len(), 5);
    assert_eq!(run([7; 32]).await, (events.clone(), texts.clone()));
    // Every effect really came from the prepared call: the time from the fixed clock…
    for bytes in &events {
        let event: Value = serde_json::from_slice(bytes).expect("json");
        assert_eq!(event["recordedAt"], format_timestamp(at()));
    }
    // …the salts (one per committed text: thought, goal, node, raw arguments, query, kept
    // body) and the new session's id from the seed.
    assert!(texts.len() >= 6, "{} texts", texts.len());
    let (other_events, other_texts) = run([8; 32]).await;
    assert_ne!(other_texts[0].0, texts[0].0, "another seed, other salts");
    let session_of = |bytes: &Vec<u8>| {
        serde_json::from_slice::<Value>(bytes).expect("json")["sessionId"].clone()
    };
    assert_ne!(
        session_of(&other_events[1]),
        session_of(&events[1]),
        "another seed, another drawn session id"
    );
    assert_eq!(session_of(&other_events[0]), session_of(&events[0]));
}

#[tokio::test]
async fn a_call_without_randomness_is_refused_recorded_and_changes_nothing() {
    let ledger = ledger(AppConfig::default(), WriterConfig::default());
    let (working, failing) = (
        FixedEffects::new(at(), [7; 32]),
        FixedEffects::without_randomness(at()),
    );
    let connection = SessionId::from_random_bytes([2; 16]);
    let caller = |effects| Caller {
        ledger: &ledger,
        effects,
        connection: connection.clone(),
    };
    let thoughts = || -> Query {
        Box::new(|app: &App| json!(app.state().heads().map(|s| s.thought_count).sum::<usize>()))
    };
    caller(&working)
        .ok("sequentialthinking", thought(1, "first"))
        .await;
    let refused = caller(&failing)
        .call(
            "sequentialthinking",
            thought(2, "a secret second"),
            Some("k-1"),
        )
        .await;
    assert_eq!(refused.status, OutcomeStatus::Rejected);
    assert_eq!(refused.body["code"], "randomness_unavailable");
    assert!(
        refused.body["error"]
            .as_str()
            .is_some_and(|e| e.contains("nothing changed"))
    );
    assert!(
        refused.body["suggestion"]
            .as_str()
            .is_some_and(|s| s.contains("retry"))
    );
    assert_eq!(refused.seq, 2, "the refusal is recorded");
    let (events, texts) = log_of(&ledger).await;
    let event: Value = serde_json::from_slice(&events[1]).expect("json");
    assert_eq!(
        event["call"]["arguments"],
        json!({"omitted": {"reason": "randomness_unavailable"}}),
        "nothing committed without a fresh salt, nothing in clear"
    );
    assert!(event["call"].get("idempotencyKey").is_none());
    assert!(event["sessionId"].is_null());
    assert!(!String::from_utf8_lossy(&events[1]).contains("secret"));
    assert_eq!(texts.len(), 1, "only the first call's text is stored");
    assert_eq!(ledger.query(thoughts()).await.expect("query"), json!(1));
    // The retry, with randomness and the same key, is decided as the second thought.
    let retried = caller(&working)
        .call(
            "sequentialthinking",
            thought(2, "a secret second"),
            Some("k-1"),
        )
        .await;
    assert_eq!(retried.status, OutcomeStatus::Ok, "{:#}", retried.body);
    assert_eq!(ledger.query(thoughts()).await.expect("query"), json!(2));
}

#[tokio::test]
async fn the_audit_export_is_stamped_with_the_decision_time_not_the_clock() {
    let dir = tempfile::tempdir().expect("dir");
    let signer = NoteSigner::generate(&key_name(LEDGER_ID)).expect("key");
    let ledger = ledger(
        AppConfig::default(),
        WriterConfig {
            notary: Some(Notary::open(dir.path(), signer).expect("notary")),
            ..WriterConfig::default()
        },
    );
    let effects = FixedEffects::new(at(), [7; 32]);
    let connection = SessionId::from_random_bytes([3; 16]);
    let caller = Caller {
        ledger: &ledger,
        effects: &effects,
        connection: connection.clone(),
    };
    caller.ok("sequentialthinking", thought(1, "x")).await;
    ledger.checkpoint().await.expect("checkpoint");
    let export = caller
        .ok(
            "export_reasoning_audit",
            json!({"session_id": connection.as_str()}),
        )
        .await;
    assert_eq!(export["generatedAt"], format_timestamp(at()));
    ledger.shutdown().await;
}

#[tokio::test]
async fn a_decision_over_the_time_limit_measured_by_the_writer_is_refused_and_changes_nothing() {
    let ledger = ledger(
        AppConfig {
            tool_time_limit: std::time::Duration::from_millis(5),
            ..AppConfig::default()
        },
        WriterConfig {
            decide_time: DecideTime::Fixed(std::time::Duration::from_millis(6)),
            ..WriterConfig::default()
        },
    );
    let effects = FixedEffects::new(at(), [7; 32]);
    let caller = Caller {
        ledger: &ledger,
        effects: &effects,
        connection: SessionId::from_random_bytes([4; 16]),
    };
    // Tools not decided in context have no limit.
    caller.ok("sequentialthinking", thought(1, "x")).await;
    let slow = caller
        .call("start_deliberation", json!({"goal": "Choose"}), None)
        .await;
    assert_eq!(slow.status, OutcomeStatus::Rejected);
    assert_eq!(slow.body["code"], "time_limit_exceeded", "{:#}", slow.body);
    let deliberations = ledger
        .query(Box::new(|app: &App| {
            json!(app.deliberations().all().count())
        }))
        .await
        .expect("query");
    assert_eq!(deliberations, json!(0));
}
