//! Replay tests: sessions recorded through the real writer on sled in a temp dir, then read back
//! through a [`LogView`] over the store and re-executed.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::timeline::{render_text as timeline_text, timeline};
use super::*;
use crate::app::{App, AppConfig, Query};
use crate::effects::Effects as _;
use crate::events::{Actor, ErrorRecord, OutcomeStatus, TextLookup};
use crate::ledger::checkpoint::NoteSigner;
use crate::ledger::merkle::{Blake3Hasher, MerkleError, MerkleTree, NodeHash};
use crate::ledger::{
    Committed, Draft, LedgerHandle, LedgerMeta, SignedCheckpoint, SledStore, Store, WriterConfig,
    open_ledger,
};

/// A read-only view over a reopened store, with erasures simulated by commitment.
struct StoreView {
    store: SledStore,
    meta: LedgerMeta,
    tree: MerkleTree<Blake3Hasher>,
    erased: HashMap<String, u64>,
}

impl StoreView {
    fn open(dir: &std::path::Path) -> Self {
        let store = SledStore::reopen(dir);
        let meta = store.meta().unwrap().unwrap();
        let mut tree = MerkleTree::new(Blake3Hasher);
        // As the writer builds it: leaf data is each event's hash.
        for item in store.events_from(1) {
            let event: Event = serde_json::from_slice(&item.unwrap().1).unwrap();
            tree.push_leaf(&crate::ledger::hash::parse_hex32(&event.hash).unwrap());
        }
        Self {
            store,
            meta,
            tree,
            erased: HashMap::new(),
        }
    }
}

impl LogView for StoreView {
    fn meta(&self) -> &LedgerMeta {
        &self.meta
    }
    fn len(&self) -> u64 {
        self.store.last_seq().unwrap().unwrap_or(0)
    }
    fn event_bytes(&self, seq: u64) -> Result<Vec<u8>, LedgerError> {
        self.store
            .event_bytes(seq)?
            .ok_or_else(|| LedgerError::Corrupt(format!("no event {seq}")))
    }
    fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError> {
        self.store.session_seqs(session)
    }
    fn text(&self, commitment: &[u8; 32]) -> Result<TextState, LedgerError> {
        if let Some(&seq) = self.erased.get(&crate::ledger::hash::hex(commitment)) {
            return Ok(TextState::Erased { seq });
        }
        Ok(match self.store.text(commitment)? {
            Some(record) => TextState::Present(record),
            None => TextState::Missing,
        })
    }
    fn root_at(&self, size: u64) -> Result<NodeHash, MerkleError> {
        self.tree.root_at(size)
    }
    fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<NodeHash>, MerkleError> {
        self.tree.inclusion_proof(index, size)
    }
    fn consistency_proof(&self, old: u64, new: u64) -> Result<Vec<NodeHash>, MerkleError> {
        self.tree.consistency_proof(old, new)
    }
    fn latest_checkpoint(&self) -> Option<&SignedCheckpoint> {
        None
    }
    fn signer(&self) -> Option<&NoteSigner> {
        None
    }
}

/// Records calls as one MCP connection would.
struct Recorder {
    dir: tempfile::TempDir,
    ledger: LedgerHandle<App>,
    connection: SessionId,
}

impl Recorder {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = SledStore::open(dir.path()).unwrap();
        let ledger = open_ledger(
            store,
            App::new(AppConfig::default()),
            WriterConfig::default(),
        )
        .unwrap();
        Self {
            dir,
            ledger,
            connection: SessionId::random(),
        }
    }

    async fn call(&self, tool: &str, arguments: Value) -> Committed {
        let actor = Actor {
            principal: "local".into(),
            transport: "test".into(),
            client_name: Some("replay-test".into()),
            client_version: None,
            role: Default::default(),
            user_ids: Vec::new(),
        };
        let command = Command::tool_call(
            tool,
            arguments,
            actor,
            self.connection.clone(),
            crate::effects::SystemEffects.prepare(),
        );
        self.ledger.submit(command).await.unwrap()
    }

    async fn think(&self, n: u32, text: &str, extra: Value) -> Committed {
        let mut args = json!({"thought": text, "nextThoughtNeeded": true,
            "thoughtNumber": n, "totalThoughts": 4});
        if let (Value::Object(a), Value::Object(e)) = (&mut args, extra) {
            a.extend(e);
        }
        self.call("sequentialthinking", args).await
    }

    async fn view(self) -> (tempfile::TempDir, StoreView) {
        self.ledger.shutdown().await;
        let view = StoreView::open(self.dir.path());
        (self.dir, view)
    }
}

/// A session with branches, a revision, tags, reads, refused calls and a reset; returns the
/// recorder, the session id and the seq of thought 3.
async fn eventful_session() -> (Recorder, SessionId, u64) {
    let r = Recorder::new();
    // A refusal before the session exists is kept in it too: its caller's session.
    r.call("tag", json!({"thoughtNumber": 1, "add": ["x"]}))
        .await;
    r.think(
        1,
        "Is the cache the bottleneck?",
        json!({"tags": ["Question"]}),
    )
    .await;
    r.think(2, "Measure the hit ratio first", json!({})).await;
    let third = r
        .think(
            3,
            "Hit ratio is flat; not the cache",
            json!({"isRevision": true, "revisesThought": 2}),
        )
        .await;
    r.think(
        3,
        "Profile the serializer",
        json!({"branchFromThought": 2, "branchId": "alt"}),
    )
    .await;
    r.think(4, "Serializer allocates", json!({"branchId": "alt"}))
        .await;
    r.call(
        "tag",
        json!({"thoughtNumber": 1, "add": ["key"], "remove": ["question"]}),
    )
    .await;
    r.call("search", json!({"query": "serial", "tags": []}))
        .await;
    r.call("export", json!({"format": "json"})).await;
    r.call("visualize", json!({"format": "ascii", "showContent": true}))
        .await;
    // Refusals attributed to the session: unknown thought, empty thought (opaque arguments),
    // bad regex, unknown branch.
    r.think(5, "x", json!({"revisesThought": 99})).await;
    r.think(5, "   ", json!({})).await;
    r.call("search", json!({"query": "("})).await;
    r.call("export", json!({"branchId": "nope"})).await;
    r.think(
        5,
        "Pool the buffers",
        json!({"nextThoughtNeeded": false, "totalThoughts": "5"}),
    )
    .await;
    let id = r.connection.clone();
    r.call("reset", json!({"confirm": true})).await;
    r.call(
        "sequentialthinking",
        json!({"thought": "late", "thoughtNumber": 6, "totalThoughts": 6,
            "nextThoughtNeeded": false, "sessionId": id.to_string()}),
    )
    .await;
    (r, id, third.seq)
}

fn summary(report: &ReexecutionReport) -> (usize, usize, usize, usize) {
    (
        report.calls,
        report.matched,
        report.diverged,
        report.skipped,
    )
}

#[tokio::test]
async fn a_recorded_session_replays_with_zero_divergences() {
    let (r, id, _) = eventful_session().await;
    let (_dir, view) = r.view().await;
    let checks = reexecute(&view, &id, App::new(AppConfig::default())).unwrap();
    let report = ReexecutionReport::new(&id, &checks);
    assert_eq!(summary(&report), (17, 17, 0, 0), "{}", render_text(&report));
    // Every kind of call took part: refusals, opaque arguments, reads, the reset.
    let statuses: Vec<&str> = checks.iter().map(|c| c.tool.as_str()).collect();
    for tool in [
        "sequentialthinking",
        "tag",
        "search",
        "export",
        "visualize",
        "reset",
    ] {
        assert!(statuses.contains(&tool), "{tool} in {statuses:?}");
    }
    let events = session_events(&view, &id).unwrap();
    let opaque = events
        .iter()
        .filter(|e| e.call.arguments.get("raw").is_some())
        .count();
    assert_eq!(
        opaque, 1,
        "the empty thought was recorded as opaque arguments"
    );
}

/// The production application with one rule changed: thought 3's estimate is raised by one.
struct ChangedEstimate(App);

impl Decider for ChangedEstimate {
    type Command = Command;
    type Query = Query;
    type Answer = Value;
    type View = App;

    fn prepared_at(&self, command: &Command) -> chrono::DateTime<chrono::Utc> {
        self.0.prepared_at(command)
    }
    fn decide(&self, command: &Command, log: &dyn LogView) -> Draft {
        let mut draft = self.0.decide(command, log);
        if command.tool == "sequentialthinking" && draft.body["thoughtNumber"] == 3 {
            if let Some(n) = draft.body["totalThoughts"].as_u64() {
                draft.body["totalThoughts"] = json!(n + 1);
            }
            for fact in &mut draft.facts {
                if let Fact::ThoughtRecorded(t) = fact {
                    t.total_thoughts += 1;
                }
            }
        }
        draft
    }
    fn failed(&self, command: &Command, reason: &str) -> Draft {
        self.0.failed(command, reason)
    }
    fn apply(&mut self, event: &Event, texts: &TextLookup<'_>) {
        self.0.apply(event, texts);
    }
    fn view(&self) -> App {
        self.0.view()
    }
    fn answer(view: &App, query: Query) -> Value {
        App::answer(view, query)
    }
}

#[tokio::test]
async fn a_changed_rule_is_named_by_seq_tool_and_thought() {
    let (r, id, third) = eventful_session().await;
    let (_dir, view) = r.view().await;
    let checks = reexecute(&view, &id, ChangedEstimate(App::new(AppConfig::default()))).unwrap();
    let report = ReexecutionReport::new(&id, &checks);
    // Thought 3 was recorded twice (a revision and a branch thought): both diverge, nothing else.
    let diverged: Vec<(u64, &str, Option<u32>)> = report
        .divergences
        .iter()
        .map(|c| (c.seq, c.tool.as_str(), c.thought_number))
        .collect();
    assert_eq!(
        diverged,
        [
            (third, "sequentialthinking", Some(3)),
            (third + 1, "sequentialthinking", Some(3))
        ]
    );
    let Verdict::Diverged(d) = &report.divergences[0].verdict else {
        panic!("not a divergence")
    };
    assert_ne!(d.recorded_digest, d.rederived_digest);
    let paths: Vec<&str> = d.differences.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["facts[0].totalThoughts"]);
    assert_eq!(
        (&d.differences[0].recorded, &d.differences[0].rederived),
        (&json!(4), &json!(5))
    );
    assert_eq!(d.rederived_body["totalThoughts"], 5);
    let text = render_text(&report).replace(id.as_str(), "<session>");
    let text = regex::Regex::new("[0-9a-f]{12}…")
        .unwrap()
        .replace_all(&text, "<digest>…");
    insta::with_settings!({ snapshot_path => "../../../snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("replay__report_changed_rule", text);
    });
}

#[tokio::test]
async fn erased_texts_are_skipped_never_matched() {
    let (r, id, _) = eventful_session().await;
    let (_dir, mut view) = r.view().await;
    let events = session_events(&view, &id).unwrap();
    // Erase the text of "Profile the serializer" (the branch's first thought), which the later
    // search for "serial" found, "after" the whole log.
    let branch = events
        .iter()
        .find(|e| e.call.arguments.get("branchId") == Some(&json!("alt")))
        .unwrap();
    let commitment = branch.call.arguments["thought"]["textCommitment"]
        .as_str()
        .unwrap()
        .to_owned();
    view.erased.insert(commitment.clone(), view.len() + 1);
    let checks = reexecute(&view, &id, App::new(AppConfig::default())).unwrap();
    let skipped: Vec<(u64, &str, SkipReason)> = checks
        .iter()
        .filter_map(|c| match &c.verdict {
            Verdict::Skipped { reason, .. } => Some((c.seq, c.tool.as_str(), *reason)),
            _ => None,
        })
        .collect();
    let search = events
        .iter()
        .find(|e| e.call.tool == "search" && e.outcome.status == OutcomeStatus::Ok)
        .unwrap();
    let export = events
        .iter()
        .find(|e| e.call.tool == "export" && e.outcome.status == OutcomeStatus::Ok)
        .unwrap();
    let visualize = events.iter().find(|e| e.call.tool == "visualize").unwrap();
    assert_eq!(
        skipped,
        [
            (branch.seq, "sequentialthinking", SkipReason::TextErased),
            (search.seq, "search", SkipReason::TextUnavailable),
            (export.seq, "export", SkipReason::TextUnavailable),
            (visualize.seq, "visualize", SkipReason::TextUnavailable),
        ]
    );
    let report = ReexecutionReport::new(&id, &checks);
    assert_eq!(report.diverged, 0);
    assert_eq!(report.matched + report.skipped, report.calls);
}

#[tokio::test]
async fn calls_that_cannot_be_re_executed_say_why() {
    let (r, id, third) = eventful_session().await;
    let (_dir, view) = r.view().await;
    let original = read_event(&view, third).unwrap();
    let reason = |event: &Event| match rebuild(&view, event).unwrap() {
        Ok(_) => None,
        Err(skip) => Some(skip.reason),
    };
    assert_eq!(reason(&original), None);

    let mut e = original.clone();
    e.call.tool = "replay_reasoning_session".into();
    assert_eq!(reason(&e), Some(SkipReason::ReadsLog));

    let mut e = original.clone();
    e.outcome.status = OutcomeStatus::Failed;
    assert_eq!(reason(&e), Some(SkipReason::RecordedFailure));

    let mut e = original.clone();
    e.call.arguments = json!({"omitted": {"reason": "too_large", "bytes": 200000}});
    assert_eq!(reason(&e), Some(SkipReason::ArgumentsOmitted));

    let mut e = original.clone();
    e.call.arguments["thought"] = json!({"omitted": {"reason": "too_large", "bytes": 70000}});
    assert_eq!(reason(&e), Some(SkipReason::ArgumentsOmitted));

    let mut e = original.clone();
    e.call.arguments["thought"] = json!({"textCommitment": "ab".repeat(32)});
    assert_eq!(reason(&e), Some(SkipReason::TextMissing));

    // Opaque arguments whose text is not JSON: point `raw` at a thought's text.
    let first = session_events(&view, &id)
        .unwrap()
        .into_iter()
        .find(|e| e.call.arguments["thought"].is_object())
        .expect("a thought with a committed text");
    let mut e = original.clone();
    e.call.arguments = json!({"raw": first.call.arguments["thought"].clone()});
    assert_eq!(reason(&e), Some(SkipReason::RawUnparseable));

    let mut e = original;
    e.outcome.error = Some(ErrorRecord {
        code: "tool_disabled".into(),
        message: String::new(),
        suggestion: String::new(),
    });
    let command = rebuild(&view, &e).unwrap().unwrap();
    assert!(!command.tool_enabled);
    assert_eq!(command.connection_session, id);
    assert_eq!(command.arguments["revisesThought"], 2);
    assert_eq!(
        command.arguments["thought"],
        "Hit ratio is flat; not the cache"
    );
}

#[tokio::test]
async fn an_unknown_session_is_an_error() {
    let (r, _, _) = eventful_session().await;
    let (_dir, view) = r.view().await;
    let stranger = SessionId::random();
    assert!(matches!(
        reexecute(&view, &stranger, App::new(AppConfig::default())),
        Err(ReplayError::UnknownSession(_))
    ));
}

#[tokio::test]
async fn the_timeline_says_what_each_call_changed() {
    let (r, id, _) = eventful_session().await;
    let (_dir, view) = r.view().await;
    let replay = tools::replay_session(&view, &id, Some(&AppConfig::default())).unwrap();
    assert_eq!(replay.status, "closed");
    assert_eq!(replay.calls, 17);
    assert!(
        replay
            .timeline
            .iter()
            .all(|e| e.reexecution.as_deref() == Some("matched"))
    );
    let events = session_events(&view, &id).unwrap();
    assert_eq!(timeline(&events), {
        let mut plain = replay.timeline.clone();
        plain.iter_mut().for_each(|e| e.reexecution = None);
        plain
    });
    let stamps = regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z").unwrap();
    let text = timeline_text(&replay.timeline);
    let text = stamps.replace_all(&text, "<time>");
    insta::with_settings!({ snapshot_path => "../../../snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("replay__timeline", text);
    });
}

#[tokio::test]
async fn the_replay_tool_reexecutes_and_is_itself_skipped_when_replayed() {
    let (r, id, _) = eventful_session().await;
    let c = r
        .call(
            "replay_reasoning_session",
            json!({"session_id": id.to_string(), "reexecute": "true"}),
        )
        .await;
    assert_eq!(c.status, OutcomeStatus::Ok, "{}", c.body);
    assert_eq!(c.session_id.as_ref(), Some(&id));
    assert_eq!(c.body["calls"], 17);
    assert_eq!(c.body["reexecution"]["matched"], 17);
    assert_eq!(c.body["reexecution"]["diverged"], 0);
    assert_eq!(c.body["timeline"][0]["errorCode"], "unknown_thought");
    assert_eq!(
        c.body["timeline"][1]["changes"][0]["fact"],
        "SessionStarted"
    );
    let plain = r
        .call(
            "replay_reasoning_session",
            json!({"session_id": id.to_string()}),
        )
        .await;
    assert_eq!(plain.body["reexecution"], Value::Null);
    let unknown = r
        .call(
            "replay_reasoning_session",
            json!({"session_id": SessionId::random().to_string()}),
        )
        .await;
    assert_eq!(unknown.body["code"], "unknown_session");
    let (_dir, view) = r.view().await;
    let checks = reexecute(&view, &id, App::new(AppConfig::default())).unwrap();
    let report = ReexecutionReport::new(&id, &checks);
    assert_eq!(summary(&report), (20, 17, 0, 3), "{}", render_text(&report));
    assert!(report.skipped_calls.iter().all(|c| matches!(
        c.verdict,
        Verdict::Skipped {
            reason: SkipReason::ReadsLog,
            ..
        }
    )));
}

#[tokio::test]
async fn a_kept_response_body_shows_what_changed_in_it() {
    let r = Recorder::new();
    r.think(1, "one", json!({})).await;
    r.think(2, "two", json!({})).await;
    let actor = Actor {
        principal: "local".into(),
        transport: "test".into(),
        client_name: None,
        client_version: None,
        role: Default::default(),
        user_ids: Vec::new(),
    };
    let mut command = Command::tool_call(
        "sequentialthinking",
        json!({"thought": "three", "thoughtNumber": 3, "totalThoughts": 4,
            "nextThoughtNeeded": true}),
        actor,
        r.connection.clone(),
        crate::effects::SystemEffects.prepare(),
    );
    command.idempotency_key = Some("k-3".into());
    let third = r.ledger.submit(command).await.unwrap();
    let id = r.connection.clone();
    let (_dir, view) = r.view().await;
    assert!(
        reexecute(&view, &id, App::new(AppConfig::default()))
            .unwrap()
            .iter()
            .all(|c| c.verdict == Verdict::Matched)
    );
    let checks = reexecute(&view, &id, ChangedEstimate(App::new(AppConfig::default()))).unwrap();
    let report = ReexecutionReport::new(&id, &checks);
    assert_eq!(report.divergences.len(), 1);
    assert_eq!(report.divergences[0].seq, third.seq);
    let Verdict::Diverged(d) = &report.divergences[0].verdict else {
        panic!("not a divergence")
    };
    let paths: Vec<&str> = d.differences.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["facts[0].totalThoughts", "body.totalThoughts"]);
}

/// The caller's trace context is recorded as received and given back to the re-decided call:
/// re-execution matches, and a decider that lost it would diverge at `trace`.
#[tokio::test]
async fn a_recorded_trace_context_is_given_back_on_reexecution() {
    /// The application, but dropping the call's trace context from what it records.
    struct ForgetsTrace(App);
    impl Decider for ForgetsTrace {
        type Command = Command;
        type Query = Query;
        type Answer = Value;
        type View = App;
        fn prepared_at(&self, command: &Command) -> chrono::DateTime<chrono::Utc> {
            self.0.prepared_at(command)
        }
        fn decide(&self, command: &Command, log: &dyn LogView) -> Draft {
            Draft {
                trace: None,
                ..self.0.decide(command, log)
            }
        }
        fn failed(&self, command: &Command, reason: &str) -> Draft {
            self.0.failed(command, reason)
        }
        fn apply(&mut self, event: &Event, texts: &TextLookup<'_>) {
            self.0.apply(event, texts);
        }
        fn view(&self) -> App {
            self.0.view()
        }
        fn answer(view: &App, query: Query) -> Value {
            App::answer(view, query)
        }
    }

    let r = Recorder::new();
    r.think(1, "one", json!({})).await;
    let (trace, _) = crate::events::TraceContext::parse(
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        Some("congo=t61rcWkgMzE"),
    )
    .unwrap();
    let actor = Actor {
        principal: "local".into(),
        transport: "test".into(),
        client_name: None,
        client_version: None,
        role: Default::default(),
        user_ids: Vec::new(),
    };
    let mut command = Command::tool_call(
        "sequentialthinking",
        json!({"thought": "two", "thoughtNumber": 2, "totalThoughts": 2,
            "nextThoughtNeeded": false}),
        actor,
        r.connection.clone(),
        crate::effects::SystemEffects.prepare(),
    );
    command.trace = Some(trace.clone());
    let second = r.ledger.submit(command).await.unwrap();
    let id = r.connection.clone();
    let (_dir, view) = r.view().await;
    let stored: Event = serde_json::from_slice(&view.event_bytes(second.seq).unwrap()).unwrap();
    assert_eq!(stored.trace, Some(trace));
    let first: Event = serde_json::from_slice(&view.event_bytes(1).unwrap()).unwrap();
    assert_eq!(first.trace, None);
    let checks = reexecute(&view, &id, App::new(AppConfig::default())).unwrap();
    assert!(checks.iter().all(|c| c.verdict == Verdict::Matched));
    let checks = reexecute(&view, &id, ForgetsTrace(App::new(AppConfig::default()))).unwrap();
    let report = ReexecutionReport::new(&id, &checks);
    assert_eq!(report.divergences.len(), 1, "{}", render_text(&report));
    assert_eq!(report.divergences[0].seq, second.seq);
    let Verdict::Diverged(d) = &report.divergences[0].verdict else {
        panic!("not a divergence")
    };
    let paths: Vec<&str> = d.differences.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["trace"]);
}

/// Re-execution feeds the recorded effects back: a deliberation started in a session whose id
/// was drawn from the call's seed, texts committed with drawn salts, analysis stamped with the
/// decision time, and an audit export (stamped with it too, and skipped as a read of the log)
/// re-execute with no divergence.
#[tokio::test]
async fn drawn_session_ids_salts_and_an_audit_export_replay_with_no_divergence() {
    let r = Recorder::new();
    r.think(1, "Which storage engine?", json!({})).await;
    // The connection's session exists, so the deliberation starts in a new, drawn one.
    let started = r
        .call(
            "start_deliberation",
            json!({"goal": "Choose a storage engine for the audit log"}),
        )
        .await;
    assert_eq!(started.status, OutcomeStatus::Ok, "{:#}", started.body);
    let id = started.body["session_id"]
        .as_str()
        .and_then(SessionId::parse)
        .expect("a session id");
    assert_ne!(id, r.connection, "a drawn id, not the connection's");
    let node = r
        .call(
            "add_thought_node",
            json!({"content": "sled, with an fsync after flush", "parent_ids": ["node-1"],
                   "session_id": id.as_str()}),
        )
        .await;
    assert_eq!(node.status, OutcomeStatus::Ok, "{:#}", node.body);
    r.call("export_reasoning_audit", json!({"session_id": id.as_str()}))
        .await;
    let (_dir, view) = r.view().await;
    let events = session_events(&view, &id).unwrap();
    assert!(
        events
            .iter()
            .any(|e| e.call.arguments.to_string().contains("textCommitment")),
        "the session committed texts with drawn salts"
    );
    let checks = reexecute(&view, &id, App::new(AppConfig::default())).unwrap();
    let report = ReexecutionReport::new(&id, &checks);
    assert_eq!(summary(&report), (3, 2, 0, 1), "{}", render_text(&report));
    let export = checks
        .iter()
        .find(|c| c.tool == "export_reasoning_audit")
        .expect("the export is part of the session");
    assert!(
        matches!(
            &export.verdict,
            Verdict::Skipped {
                reason: SkipReason::ReadsLog,
                ..
            }
        ),
        "{:?}",
        export.verdict
    );
}

/// A caller's watch that cancels once it has heard `after` progress reports.
#[derive(Default)]
struct CancelAfter {
    after: usize,
    reports: std::sync::Mutex<Vec<(u64, Option<u64>)>>,
}

impl crate::app::call::CallWatch for CancelAfter {
    fn progress(&self, done: u64, total: Option<u64>, _message: &str) {
        self.reports.lock().unwrap().push((done, total));
    }

    fn cancelled(&self) -> bool {
        self.after > 0 && self.reports.lock().unwrap().len() >= self.after
    }
}

#[tokio::test]
async fn a_reexecution_reports_progress_and_stops_at_its_next_batch_once_cancelled() {
    let r = Recorder::new();
    for n in 1..=600 {
        r.think(n, "one more step", json!({"totalThoughts": 600}))
            .await;
    }
    let id = SessionId::parse(
        r.think(1, "the session's id", json!({"totalThoughts": 600}))
            .await
            .body["sessionId"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let (_dir, view) = r.view().await;
    let last = view.len();
    assert!(last > 512, "three batches of 256 events to fold");

    // Watched, never cancelled: increasing reports, the last one the whole log.
    let watch = std::sync::Arc::new(CancelAfter::default());
    let checks = reexecute_watched(
        &view,
        &id,
        App::new(AppConfig::default()),
        &Watch(Some(watch.clone())),
    )
    .unwrap();
    assert_eq!(checks.len(), 601);
    let reports = watch.reports.lock().unwrap().clone();
    assert_eq!(
        reports,
        vec![(255, Some(last)), (511, Some(last)), (last, Some(last))]
    );

    // Cancelled after the first report: stops at the next batch, saying how far it got.
    let watch = std::sync::Arc::new(CancelAfter {
        after: 1,
        ..CancelAfter::default()
    });
    let stopped = reexecute_watched(
        &view,
        &id,
        App::new(AppConfig::default()),
        &Watch(Some(watch.clone())),
    );
    assert!(
        matches!(stopped, Err(ReplayError::Cancelled { done: 511, total }) if total == last),
        "{stopped:?}"
    );
}
