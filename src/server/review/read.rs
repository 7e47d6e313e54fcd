//! What the pages read: which sessions a viewer may see, and what the log says of them (the
//! timeline with each call's principal, why a text was erased, which tools a session used, the
//! audit export, the checkpoint status).
//!
//! State comes from the latest published view (no wait behind the writer); reads of the log
//! run as `LedgerHandle::inspect` jobs between the writer's batches and stay proportional to
//! one session's events (or the candidate sessions' when filtering by tool). The export is a
//! call of `export_reasoning_audit` as the viewer, recorded in the ledger. Must not know: HTML.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::{Value, json};

use super::Review;
use crate::app::App;
use crate::app::call::access;
use crate::app::memory::history::MemoryHistory;
use crate::app::replay::timeline::{TimelineEntry, timeline};
use crate::app::{EXPORT_REASONING_AUDIT_TOOL, ErrorCode};
use crate::events::{Actor, Event, Fact, SessionId};
use crate::ledger::checkpoint::open_note;
use crate::ledger::{Admitted, LedgerError, LedgerHandle, LogView, TextState};
use crate::projections::SessionHead;
use crate::tools::{
    Call, EnabledToolsets, Principal, Reporter, SessionSlot, ThinkServer, Toolsets,
};

/// The transport the page's own calls record.
pub(super) const REVIEW_TRANSPORT: &str = "review";

/// The viewer as the actor of a call (what the ledger records of who asked).
pub(super) fn actor_of(viewer: &Principal) -> Actor {
    Actor {
        principal: viewer.name.clone(),
        transport: REVIEW_TRANSPORT.to_owned(),
        client_name: Some("thinkledger-review".to_owned()),
        client_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        role: viewer.role,
        user_ids: viewer.user_ids.clone(),
    }
}

/// Whether the viewer may see `session`: the tools' own rule (`app::call::access::may_read`):
/// its own sessions, and every session for an auditor.
pub(super) fn may_see(viewer: &Principal, session: &SessionHead) -> bool {
    access::may_read(&actor_of(viewer), &session.principal)
}

/// The latest published state.
pub(super) async fn state(ledger: &LedgerHandle<App>) -> Result<Arc<App>, LedgerError> {
    ledger.view_after(Admitted::default()).await
}

/// One timeline entry with the principal whose call it was.
pub(super) struct Row {
    pub entry: TimelineEntry,
    pub principal: String,
}

/// One erasure of a text.
#[derive(Clone)]
pub(super) struct Erasure {
    pub seq: u64,
    pub reason: Option<String>,
}

/// Why each of the `erased` commitments was erased, as the erasure recorded it.
pub(super) async fn erasure_reasons(
    ledger: &LedgerHandle<App>,
    erased: Vec<String>,
) -> Result<HashMap<String, Erasure>, String> {
    if erased.is_empty() {
        return Ok(HashMap::new());
    }
    ledger
        .inspect(move |log| erasures(log, &erased))
        .await
        .map_err(|e| e.to_string())
}

/// The erasure of each commitment in `commitments` that the log marks erased.
fn erasures(log: &dyn LogView, commitments: &[String]) -> HashMap<String, Erasure> {
    let mut out = HashMap::new();
    let mut events: HashMap<u64, Option<Event>> = HashMap::new();
    for commitment in commitments {
        let Some(bytes) = hex32(commitment) else {
            continue;
        };
        let Ok(TextState::Erased { seq }) = log.text(&bytes) else {
            continue;
        };
        let event = events.entry(seq).or_insert_with(|| {
            log.event_bytes(seq)
                .ok()
                .and_then(|b| serde_json::from_slice::<Event>(&b).ok())
        });
        let reason = event.as_ref().and_then(|e| {
            e.facts.iter().find_map(|f| match f {
                Fact::TextsErased {
                    commitments,
                    reason,
                    ..
                } if commitments.contains(commitment) => Some(reason.clone()),
                _ => None,
            })
        });
        out.insert(commitment.clone(), Erasure { seq, reason });
    }
    out
}

/// 64 hex digits as 32 bytes.
fn hex32(text: &str) -> Option<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        let digits = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(digits, 16).ok()?;
    }
    Some(out)
}

/// Calls shown on one page of a session (a window of its events, so a page of a session of
/// any length reads and renders about as much).
pub(super) const CALLS_PER_PAGE: usize = 100;

/// One page of a session's recorded calls, with every text they reference resolved.
pub(super) struct CallWindow {
    /// Events recorded against the session.
    pub total: usize,
    /// The page shown (0-based; past the last page, the last).
    pub page: usize,
    pub calls: Vec<RecordedCall>,
    /// Each referenced text by commitment: its text, or why it cannot be shown.
    pub texts: HashMap<String, Shown>,
}

impl CallWindow {
    pub(super) fn pages(&self) -> usize {
        self.total.div_ceil(CALLS_PER_PAGE).max(1)
    }
}

/// One recorded call: its timeline row and the event as stored.
pub(super) struct RecordedCall {
    pub row: Row,
    pub event: Event,
    /// The event's stored JSON (arguments and facts as recorded, texts as commitments).
    pub stored: Value,
}

/// A referenced text as the page can show it.
pub(super) enum Shown {
    Text(String),
    Erased(Erasure),
    /// Neither stored nor erased (`thinkledger verify` reports it).
    Missing,
}

/// Page `page` of `session`'s recorded calls, in the order they were recorded.
/// With `at`, the page holding the call recorded at that seq (when it is the session's).
pub(super) async fn call_window(
    ledger: &LedgerHandle<App>,
    session: SessionId,
    page: usize,
    at: Option<u64>,
) -> Result<CallWindow, String> {
    ledger
        .inspect(move |log| {
            let seqs = log.session_seqs(&session).map_err(|e| e.to_string())?;
            let total = seqs.len();
            let pages = total.div_ceil(CALLS_PER_PAGE).max(1);
            let page = match at.map(|seq| seqs.binary_search(&seq)) {
                Some(Ok(position)) => position / CALLS_PER_PAGE,
                _ => page.min(pages - 1),
            };
            let start = page * CALLS_PER_PAGE;
            let window = &seqs[start.min(total)..(start + CALLS_PER_PAGE).min(total)];
            let mut events = Vec::with_capacity(window.len());
            let mut stored = Vec::with_capacity(window.len());
            for &seq in window {
                let bytes = log.event_bytes(seq).map_err(|e| e.to_string())?;
                let value: Value =
                    serde_json::from_slice(&bytes).map_err(|e| format!("event {seq}: {e}"))?;
                let event: Event = serde_json::from_value(value.clone())
                    .map_err(|e| format!("event {seq}: {e}"))?;
                events.push(event);
                stored.push(value);
            }
            let commitments: BTreeSet<String> = stored
                .iter()
                .flat_map(crate::ledger::verify::text_refs)
                .collect();
            let mut texts = HashMap::new();
            let mut erased = Vec::new();
            for c in commitments {
                let shown = match hex32(&c).map(|key| log.text(&key)) {
                    Some(Ok(TextState::Present(record))) => Shown::Text(record.text),
                    Some(Ok(TextState::Erased { .. })) => {
                        erased.push(c);
                        continue;
                    }
                    Some(Err(e)) => return Err(e.to_string()),
                    _ => Shown::Missing,
                };
                texts.insert(c, shown);
            }
            for (c, erasure) in erasures(log, &erased) {
                texts.insert(c, Shown::Erased(erasure));
            }
            let rows = timeline(&events);
            let calls = rows
                .into_iter()
                .zip(events)
                .zip(stored)
                .map(|((entry, event), stored)| RecordedCall {
                    row: Row {
                        entry,
                        principal: event.actor.principal.clone(),
                    },
                    event,
                    stored,
                })
                .collect();
            Ok(CallWindow {
                total,
                page,
                calls,
                texts,
            })
        })
        .await
        .map_err(|e| e.to_string())?
}

/// Most hits a search lists.
pub(super) const MOST_HITS: usize = 200;

/// A text of a session the viewer may see that holds the searched words.
pub(super) struct Hit {
    pub session: SessionId,
    pub principal: String,
    pub seq: u64,
    pub tool: String,
    /// Where in the event the text is (`arguments.thought`, `facts[1].reply`, …).
    pub field: String,
    pub text: String,
}

/// What a search found.
pub(super) struct Found {
    pub hits: Vec<Hit>,
    /// Events read (every event of the log, newest first, until enough hits).
    pub events_read: u64,
    /// More hits exist than listed.
    pub truncated: bool,
}

/// Every text of the sessions `visible` (by id, with their owner) holding each of `words`
/// (case-insensitive), newest first. Erased texts are gone and never match.
pub(super) async fn search(
    ledger: &LedgerHandle<App>,
    visible: HashMap<SessionId, String>,
    words: Vec<String>,
) -> Result<Found, String> {
    let start = Found {
        hits: Vec::new(),
        events_read: 0,
        truncated: false,
    };
    let (events_read, found) = scan_newest(ledger, start, move |found, seq, value, log| {
        let Some(session) = value
            .get("sessionId")
            .and_then(Value::as_str)
            .and_then(SessionId::parse)
        else {
            return Ok(true);
        };
        let Some(principal) = visible.get(&session) else {
            return Ok(true);
        };
        let tool = value
            .pointer("/call/tool")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut seen = BTreeSet::new();
        for (field, commitment) in located_text_refs(value) {
            if !seen.insert(commitment.clone()) {
                continue;
            }
            let Some(Some(text)) = hex32(&commitment).map(|k| log.text(&k)).transpose()? else {
                continue;
            };
            let lower = text.to_lowercase();
            if !words.iter().all(|w| lower.contains(w.as_str())) {
                continue;
            }
            if found.hits.len() == MOST_HITS {
                found.truncated = true;
                return Ok(false);
            }
            found.hits.push(Hit {
                session: session.clone(),
                principal: principal.clone(),
                seq,
                tool: tool.to_owned(),
                field,
                text,
            });
        }
        Ok(true)
    })
    .await?;
    Ok(Found {
        events_read,
        ..found
    })
}

/// Most refused calls the refusals page lists.
pub(super) const MOST_REFUSALS: usize = 500;

/// A call that did not succeed, as the refusals page lists it.
pub(super) struct Refused {
    pub seq: u64,
    pub recorded_at: String,
    pub principal: String,
    pub tool: String,
    pub code: String,
    pub message: String,
    pub session: Option<SessionId>,
}

/// The latest calls that were refused, failed or cancelled, newest first, and how many events
/// were read to find them.
pub(super) async fn refusals(ledger: &LedgerHandle<App>) -> Result<(Vec<Refused>, u64), String> {
    let (read, out) = scan_newest(ledger, Vec::new(), |out, seq, value, _| {
        let Ok(event) = serde_json::from_value::<Event>(value.clone()) else {
            return Ok(true);
        };
        if let Some(error) = &event.outcome.error {
            out.push(Refused {
                seq,
                recorded_at: event.recorded_at.clone(),
                principal: event.actor.principal.clone(),
                tool: event.call.tool.clone(),
                code: error.code.clone(),
                message: error.message.clone(),
                session: event.session_id.clone(),
            });
        }
        Ok(out.len() < MOST_REFUSALS)
    })
    .await?;
    Ok((out, read))
}

/// What the memories page reads: the owners the viewer may read (with their changes counted),
/// and, for one owner, every change to their memories, oldest first; and how many events were
/// read. Reads the whole log (newest first) beside the writer.
pub(super) async fn memory_history(
    ledger: &LedgerHandle<App>,
    may_read: impl Fn(&str) -> bool + Send + 'static,
    owner: Option<String>,
) -> Result<(MemoryHistory, u64), String> {
    let (events_read, mut history) = scan_newest(
        ledger,
        MemoryHistory::of(owner),
        move |h, seq, value, log| {
            h.visit(seq, value, &may_read, &mut |c| {
                hex32(c)
                    .map(|k| log.text(&k))
                    .transpose()
                    .map(Option::flatten)
            })?;
            Ok(true)
        },
    )
    .await?;
    history.changes.reverse();
    Ok((history, events_read))
}

/// Reads the log's events newest first, handing each (seq, stored JSON, the log) to `visit`
/// until it answers false; returns how many were read. Reads beside the writer when the store
/// allows (a sled ledger: the writer is not held up), else between its batches.
async fn scan_newest<S, F>(
    ledger: &LedgerHandle<App>,
    state: S,
    visit: F,
) -> Result<(u64, S), String>
where
    S: Send + 'static,
    F: FnMut(&mut S, u64, &Value, &dyn SearchLog) -> Result<bool, String> + Send + 'static,
{
    fn scan<S, F>(log: &dyn SearchLog, mut state: S, mut visit: F) -> Result<(u64, S), String>
    where
        F: FnMut(&mut S, u64, &Value, &dyn SearchLog) -> Result<bool, String>,
    {
        let mut read = 0;
        let mut seq = log.len();
        while seq > 0 {
            read += 1;
            if let Some(bytes) = log.event(seq)? {
                let value: Value =
                    serde_json::from_slice(&bytes).map_err(|e| format!("event {seq}: {e}"))?;
                if !visit(&mut state, seq, &value, log)? {
                    break;
                }
            }
            seq -= 1;
        }
        Ok((read, state))
    }
    if let Some(store) = ledger.read_only().await.map_err(|e| e.to_string())? {
        return tokio::task::spawn_blocking(move || scan(&StoreSearch(store), state, visit))
            .await
            .map_err(|e| e.to_string())?;
    }
    ledger
        .inspect(move |log| scan(&ViewSearch(log), state, visit))
        .await
        .map_err(|e| e.to_string())?
}

/// What a search reads: the log's length, its events and their texts (`None`: erased or lost).
trait SearchLog {
    fn len(&self) -> u64;
    fn event(&self, seq: u64) -> Result<Option<Vec<u8>>, String>;
    fn text(&self, commitment: &[u8; 32]) -> Result<Option<String>, String>;
}

struct StoreSearch(Box<dyn crate::ledger::Store>);

impl SearchLog for StoreSearch {
    fn len(&self) -> u64 {
        self.0.last_seq().ok().flatten().unwrap_or(0)
    }
    fn event(&self, seq: u64) -> Result<Option<Vec<u8>>, String> {
        self.0.event_bytes(seq).map_err(|e| e.to_string())
    }
    fn text(&self, commitment: &[u8; 32]) -> Result<Option<String>, String> {
        Ok(self
            .0
            .text(commitment)
            .map_err(|e| e.to_string())?
            .map(|r| r.text))
    }
}

struct ViewSearch<'a>(&'a dyn LogView);

impl SearchLog for ViewSearch<'_> {
    fn len(&self) -> u64 {
        self.0.len()
    }
    fn event(&self, seq: u64) -> Result<Option<Vec<u8>>, String> {
        self.0.event_bytes(seq).map(Some).map_err(|e| e.to_string())
    }
    fn text(&self, commitment: &[u8; 32]) -> Result<Option<String>, String> {
        match self.0.text(commitment).map_err(|e| e.to_string())? {
            TextState::Present(record) => Ok(Some(record.text)),
            _ => Ok(None),
        }
    }
}

/// Every text reference in a stored event with where it sits (`arguments.thought`,
/// `facts[1].reply`), in document order; embedding vectors (stored as texts) left out.
fn located_text_refs(event: &Value) -> Vec<(String, String)> {
    fn walk(value: &Value, path: &str, out: &mut Vec<(String, String)>) {
        match value {
            Value::Object(map) => {
                if map.len() == 1
                    && let Some(Value::String(c)) = map.get("textCommitment")
                {
                    if !path.ends_with(".vector") {
                        out.push((path.to_owned(), c.clone()));
                    }
                    return;
                }
                for (k, v) in map {
                    let next = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    walk(v, &next, out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(v, &format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Some(arguments) = event.pointer("/call/arguments") {
        walk(arguments, "arguments", &mut out);
    }
    if let Some(facts) = event.get("facts") {
        walk(facts, "facts", &mut out);
    }
    out
}

/// The tools each of `sessions` was called with, from its recorded events.
pub(super) async fn tools_used(
    ledger: &LedgerHandle<App>,
    sessions: Vec<SessionId>,
) -> Result<HashMap<SessionId, BTreeSet<String>>, LedgerError> {
    ledger
        .inspect(move |log| {
            let mut out = HashMap::new();
            for session in sessions {
                let mut tools = BTreeSet::new();
                for seq in log.session_seqs(&session).unwrap_or_default() {
                    let tool = log
                        .event_bytes(seq)
                        .ok()
                        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                        .and_then(|v| v.pointer("/call/tool")?.as_str().map(str::to_owned));
                    tools.extend(tool);
                }
                out.insert(session, tools);
            }
            out
        })
        .await
}

/// How an export request ended.
pub(super) enum Exported {
    /// The export file, byte for byte the tool's text block.
    File(String),
    /// The tool answered as for a session that does not exist (or is not the viewer's).
    NoSuchSession,
    Failed(String),
}

/// The audit export of `session`, asked of `export_reasoning_audit` as the viewer, so it is
/// decided by the tools' own isolation and recorded like a client's export (transport
/// `review`): every event of the session with its inclusion proof to a checkpoint signed just
/// before, signed by the ledger key, in RFC 8785 form (what `thinkledger verify-export` checks).
pub(super) async fn audit_export(
    review: &Review,
    viewer: &Principal,
    session: &SessionId,
    since_checkpoint: Option<String>,
) -> Exported {
    let server = ThinkServer::new(
        review.ledger.clone(),
        review.catalog.clone(),
        REVIEW_TRANSPORT,
    )
    .with_quotas(review.quotas.clone());
    let call = Call {
        tool: EXPORT_REASONING_AUDIT_TOOL.to_owned(),
        arguments: match since_checkpoint {
            None => json!({ "session_id": session.as_str() }),
            Some(kept) => json!({ "session_id": session.as_str(), "since_checkpoint": kept }),
        },
        actor: actor_of(viewer),
        slot: SessionSlot::fresh(),
        toolsets: EnabledToolsets::new(Toolsets::all()),
        idempotency_key: None,
        reporter: Reporter::silent(),
        origin: Default::default(),
    };
    let result = server.call(call, None).await;
    let text: String = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    if result.is_error != Some(true) {
        return Exported::File(text);
    }
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    // The tool answers another principal's session as one without events.
    let missing = [ErrorCode::UnknownSession, ErrorCode::EmptySession];
    match body.get("code").and_then(Value::as_str) {
        Some(code) if missing.iter().any(|m| m.as_str() == code) => Exported::NoSuchSession,
        _ => Exported::Failed(
            body.get("error")
                .and_then(Value::as_str)
                .unwrap_or("the export was refused")
                .to_owned(),
        ),
    }
}

/// What the page can say of the chain while the server runs.
pub(super) struct ChainStatus {
    pub ledger_id: String,
    /// Events in the log, and the last one's hash.
    pub head: Option<(u64, String)>,
    pub checkpoint: Option<CheckpointStatus>,
}

/// The latest signed checkpoint and what was checked of it just now.
pub(super) struct CheckpointStatus {
    pub size: u64,
    pub root_hex: String,
    pub signed_at: String,
    pub note: String,
    /// The live Merkle tree's root over the first `size` events equals the signed root.
    pub root_matches_log: Result<bool, String>,
    /// The note's signature opens under this ledger's own key.
    pub signature_valid: Result<bool, String>,
}

/// The head of the log and its latest checkpoint, checked against the live tree and the
/// ledger's key (a few hashes: cheap at any log length). Not a full verification.
pub(super) async fn chain_status(ledger: &LedgerHandle<App>) -> Result<ChainStatus, LedgerError> {
    ledger
        .inspect(|log| {
            let len = log.len();
            let head = (len > 0).then(|| {
                let hash = log
                    .event_bytes(len)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                    .and_then(|v| v.get("hash")?.as_str().map(str::to_owned))
                    .unwrap_or_default();
                (len, hash)
            });
            let checkpoint = log.latest_checkpoint().map(|signed| {
                let size = signed.checkpoint.size();
                let root = signed.checkpoint.root();
                let root_matches_log = if size > len {
                    Ok(false)
                } else {
                    log.root_at(size)
                        .map(|live| live == *root)
                        .map_err(|e| e.to_string())
                };
                let signature_valid = match log.signer() {
                    Some(signer) => Ok(open_note(&signed.note, &[signer.verifier()]).is_ok()),
                    None => Err("this ledger has no signing key loaded".to_owned()),
                };
                CheckpointStatus {
                    size,
                    root_hex: crate::ledger::hash::hex(root),
                    signed_at: signed.signed_at.clone(),
                    note: signed.note.clone(),
                    root_matches_log,
                    signature_valid,
                }
            });
            ChainStatus {
                ledger_id: log.meta().ledger_id.clone(),
                head,
                checkpoint,
            }
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commitments_decode_only_when_they_are_64_hex_digits() {
        let hex = "00ff".repeat(16);
        let bytes = hex32(&hex).unwrap();
        assert_eq!(bytes[0], 0);
        assert_eq!(bytes[1], 255);
        assert!(hex32("00ff").is_none());
        assert!(hex32(&"zz".repeat(32)).is_none());
    }

    #[test]
    fn a_member_sees_its_own_sessions_and_an_auditor_all() {
        let mut session = SessionHead::unstarted(
            SessionId::parse("5e55a000-0000-4000-8000-000000000001").unwrap(),
        );
        session.principal = "alice".into();
        let alice = Principal::member("alice");
        let bob = Principal::member("bob");
        let auditor = Principal {
            role: crate::tools::Role::Auditor,
            ..Principal::member("carol")
        };
        assert!(may_see(&alice, &session));
        assert!(!may_see(&bob, &session));
        assert!(may_see(&auditor, &session));
        session.principal = "bob".into();
        assert!(may_see(&bob, &session));
    }
}
