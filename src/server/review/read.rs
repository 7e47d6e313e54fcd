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
use crate::app::replay::session_events;
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

/// What the session page reads from the log.
pub(super) struct SessionLog {
    pub rows: Vec<Row>,
    /// Why each erased text (by commitment) was erased, as the erasure recorded it.
    pub erasures: HashMap<String, Erasure>,
}

/// One erasure of a text.
#[derive(Clone)]
pub(super) struct Erasure {
    pub seq: u64,
    pub reason: Option<String>,
}

/// The timeline of `session` (the one `replay_reasoning_session` computes) with each call's
/// principal, and the erasures of the `erased` commitments.
pub(super) async fn session_log(
    ledger: &LedgerHandle<App>,
    session: SessionId,
    erased: Vec<String>,
) -> Result<SessionLog, String> {
    ledger
        .inspect(move |log| {
            let events = session_events(log, &session).map_err(|e| e.to_string())?;
            let rows = timeline(&events)
                .into_iter()
                .zip(&events)
                .map(|(entry, event)| Row {
                    entry,
                    principal: event.actor.principal.clone(),
                })
                .collect();
            Ok(SessionLog {
                rows,
                erasures: erasures(log, &erased),
            })
        })
        .await
        .map_err(|e| e.to_string())?
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
) -> Exported {
    let server = ThinkServer::new(
        review.ledger.clone(),
        review.catalog.clone(),
        REVIEW_TRANSPORT,
    )
    .with_quotas(review.quotas.clone());
    let call = Call {
        tool: EXPORT_REASONING_AUDIT_TOOL.to_owned(),
        arguments: json!({ "session_id": session.as_str() }),
        actor: actor_of(viewer),
        slot: SessionSlot::fresh(),
        toolsets: EnabledToolsets::new(Toolsets::all()),
        idempotency_key: None,
        reporter: Reporter::silent(),
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
