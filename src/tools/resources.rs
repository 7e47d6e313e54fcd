//! Read-back resources: `ledger://sessions` lists sessions, `ledger://session/{id}` returns one
//! session with its whole chain. Reads record nothing and see only durable state.
//!
//! Also the one shape of every "resource not found" answer, for these and the `reasoning://`
//! resources: the JSON-RPC resource-not-found error (`-32002`; rmcp sends `-32602` to clients
//! of protocol 2026-07-28, as SEP-2164 asks) with `data: {"uri": …}` and a message that says
//! what to read instead.

use rmcp::ErrorData;
use rmcp::model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
use serde_json::{Value, json};

use crate::app::{App, access};
use crate::events::{Actor, SessionId};
use crate::export::{ExportOptions, json as export_json};
use crate::ledger::LedgerHandle;
use crate::projections::{Session, SessionHead, SessionStatus, ThinkingState};

const SESSIONS_URI: &str = "ledger://sessions";
const SESSION_PREFIX: &str = "ledger://session/";
const MEMORIES_PREFIX: &str = "ledger://memories/";

pub(super) fn list() -> Vec<Resource> {
    vec![
        Resource::new(SESSIONS_URI, "sessions")
            .with_title("Thinking sessions")
            .with_description(
                "Every session in the ledger, oldest first, with its status and counts.",
            )
            .with_mime_type("application/json"),
    ]
}

pub(super) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new("ledger://session/{id}", "session")
            .with_title("One thinking session")
            .with_description("A session's status and its whole thought chain, branches included.")
            .with_mime_type("application/json"),
        ResourceTemplate::new("ledger://memories/{userId}", "memory history")
            .with_title("A memory owner's history")
            .with_description(
                "Every version of each memory of userId, superseded ones included, with soft \
                 deletes and erasures.",
            )
            .with_mime_type("application/json"),
    ]
}

/// The resource-not-found error for `uri`, with `message` saying what to read instead.
pub(super) fn not_found(uri: &str, message: String) -> ErrorData {
    ErrorData::resource_not_found(message, Some(json!({ "uri": uri })))
}

/// The answer to a URI that names no resource of this server: the error lists every resource
/// and template there is, `ledger://` and `reasoning://`.
pub(super) fn unknown(uri: &str) -> ErrorData {
    let resources: Vec<String> = list()
        .into_iter()
        .chain(super::reasoning::list())
        .map(|r| r.uri.clone())
        .collect();
    let templates: Vec<String> = templates()
        .into_iter()
        .chain(super::reasoning::templates())
        .map(|t| t.uri_template.clone())
        .collect();
    not_found(
        uri,
        format!(
            "unknown resource {uri}; this server offers the resources {} and the templates {} \
             (resources/list and resources/templates/list describe each)",
            resources.join(", "),
            templates.join(", ")
        ),
    )
}

/// A session's summary line.
pub fn summary(session: &SessionHead) -> Value {
    let (status, closed_at) = match &session.status {
        SessionStatus::Active => ("active", None),
        SessionStatus::Closed { at, .. } => ("closed", Some(at.clone())),
    };
    json!({
        "sessionId": session.id.as_str(),
        "status": status,
        "startedAt": session.started_at,
        "closedAt": closed_at,
        "updatedAt": session.updated_at,
        "thoughts": session.thought_count,
        "branches": session.branch_ids(),
        "events": session.events,
        "firstSeq": session.started_seq,
        "lastSeq": session.last_seq,
    })
}

/// All sessions, as `thinkledger sessions` shows them.
pub fn sessions_document(state: &ThinkingState) -> Value {
    json!({ "sessions": state.heads().map(summary).collect::<Vec<_>>() })
}

/// The sessions `reader` may read, as `ledger://sessions` shows them: its own, or every one
/// for an auditor.
fn readable_sessions_document(state: &ThinkingState, reader: &Actor) -> Value {
    let sessions: Vec<Value> = state
        .heads()
        .filter(|s| access::may_read(reader, &s.principal))
        .map(summary)
        .collect();
    json!({ "sessions": sessions })
}

/// One session in full, as `ledger://session/{id}` shows it.
pub fn session_document(session: &Session) -> Value {
    let mut doc = summary(session);
    let chain = export_json::render(
        session,
        &ExportOptions {
            include_branches: true,
            branch_id: None,
        },
    );
    if let Value::Object(map) = &mut doc {
        map.insert("chain".into(), chain);
    }
    doc
}

/// Reads one `ledger://` resource as `reader`: another principal's session is as absent as a
/// missing one.
pub(super) async fn read(
    ledger: &LedgerHandle<App>,
    uri: &str,
    reader: Actor,
) -> Result<ReadResourceResult, ErrorData> {
    let unavailable =
        |e: crate::ledger::LedgerError| ErrorData::internal_error(e.to_string(), None);
    let document = if uri == SESSIONS_URI {
        super::arrival::query(
            ledger,
            Box::new(move |app: &App| readable_sessions_document(app.state(), &reader)),
        )
        .await
        .map_err(unavailable)?
    } else if let Some(raw) = uri.strip_prefix(SESSION_PREFIX) {
        let Some(id) = SessionId::parse(raw) else {
            return Err(not_found(
                uri,
                format!("\"{raw}\" is not a session id; read {SESSIONS_URI} for the list"),
            ));
        };
        let found = super::arrival::query(
            ledger,
            // The document (an object), null for no readable session, or why the session
            // could not be read back from the log (a string).
            Box::new(move |app: &App| {
                let state = app.state();
                match state
                    .head(&id)
                    .filter(|s| access::may_read(&reader, &s.principal))
                    .map(|head| state.body(head))
                {
                    None => Value::Null,
                    Some(Ok(session)) => session_document(&session),
                    Some(Err(e)) => Value::String(e.to_string()),
                }
            }),
        )
        .await
        .map_err(unavailable)?;
        if let Value::String(reason) = found {
            return Err(ErrorData::internal_error(reason, None));
        }
        if found.is_null() {
            return Err(not_found(
                uri,
                format!("no session {raw} in this ledger; read {SESSIONS_URI} for the list"),
            ));
        }
        found
    } else if let Some(user) = uri.strip_prefix(MEMORIES_PREFIX) {
        if user.is_empty() || !access::may_read_memories_of(&reader, user) {
            return Err(not_found(
                uri,
                format!(
                    "no memories of userId \"{user}\" that you may read; name a userId you \
                     act for"
                ),
            ));
        }
        memory_history(ledger, user.to_owned())
            .await
            .map_err(|e| ErrorData::internal_error(e, None))?
    } else {
        return Err(unknown(uri));
    };
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(super::pretty(&document), uri).with_mime_type("application/json"),
    ]))
}

/// `user`'s memory history read from the whole log: beside the writer when the store allows (a
/// sled ledger), else between its batches.
async fn memory_history(ledger: &LedgerHandle<App>, user: String) -> Result<Value, String> {
    use crate::app::memory::history::MemoryHistory;
    use crate::ledger::hash::parse_hex32;
    let everyone = |_: &str| true;
    if let Some(store) = ledger.read_only().await.map_err(|e| e.to_string())? {
        return tokio::task::spawn_blocking(move || {
            let mut history = MemoryHistory::of(Some(user));
            let last = store.last_seq().map_err(|e| e.to_string())?.unwrap_or(0);
            for seq in 1..=last {
                let Some(bytes) = store.event_bytes(seq).map_err(|e| e.to_string())? else {
                    continue;
                };
                let event: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
                history.visit(seq, &event, &everyone, &mut |c| {
                    Ok(match parse_hex32(c) {
                        Some(key) => store.text(&key).map_err(|e| e.to_string())?.map(|r| r.text),
                        None => None,
                    })
                })?;
            }
            Ok(history.document())
        })
        .await
        .map_err(|e| e.to_string())?;
    }
    ledger
        .inspect(move |log| {
            let mut history = MemoryHistory::of(Some(user));
            for seq in 1..=log.len() {
                let bytes = log.event_bytes(seq).map_err(|e| e.to_string())?;
                let event: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
                history.visit(seq, &event, &everyone, &mut |c| {
                    Ok(match parse_hex32(c).map(|k| log.text(&k)) {
                        Some(Ok(crate::ledger::TextState::Present(r))) => Some(r.text),
                        _ => None,
                    })
                })?;
            }
            Ok(history.document())
        })
        .await
        .map_err(|e| e.to_string())?
}
