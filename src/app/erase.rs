//! Erasure: the operator's `erase` command (CLI only, never an MCP tool) decides which stored
//! texts to remove — every text of a session, or named commitments — and records why.
//!
//! The decision reads the log (which commitments a session's events reference, which are
//! already erased) and yields one `TextsErased` fact; the ledger removes the bytes once that
//! event is durable. Nothing here touches disk.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::call::{ArgsShape, Decide, ToolSpec, parse};
use super::{App, Command, Decided, Outcome, Rejection};
use crate::app::ErrorCode;
use crate::events::{Fact, SessionId};
use crate::ledger::hash::parse_hex32;
use crate::ledger::verify::text_refs;
use crate::ledger::{LogView, TextState};

/// The name of the `erase` tool: its spec, its catalog entry and every reference use this.
pub const ERASE_TOOL: &str = "erase";

/// Commands only the operator may run (through the CLI), never offered over MCP.
pub(crate) const ADMIN_SPECS: &[ToolSpec] = &[ToolSpec {
    name: ERASE_TOOL,
    args: ArgsShape::of::<EraseArgs>,
    decide: Decide::WithLog(decide_erase),
}];

const USAGE: &str =
    "give --session ID, --commitment HEX (repeatable) or --user-id USER, and --reason";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EraseArgs {
    session_id: Option<String>,
    #[serde(default)]
    commitments: Vec<String>,
    /// Every memory stored for this user id (all their versions' texts).
    user_id: Option<String>,
    reason: String,
}

/// A refused erasure, as a decision returns it: recorded in no session.
type Refused = (Rejection, Option<SessionId>);

/// The erasure refused with `code`, saying why and what to do.
fn reject(code: ErrorCode, message: String, suggestion: &str) -> Refused {
    (Rejection::new(code, message, suggestion), None)
}

/// What the operator chose to erase, checked: a reason given, and exactly one of a session
/// (its id valid), named commitments or a user's memories. The session, when one was chosen.
fn selection(args: &EraseArgs) -> Result<Option<SessionId>, Refused> {
    if args.reason.trim().is_empty() {
        return Err(reject(
            ErrorCode::ReasonRequired,
            "an erasure must say why".into(),
            "pass --reason, e.g. --reason \"GDPR request 2026-114\"",
        ));
    }
    let session = match &args.session_id {
        None => None,
        Some(raw) => match SessionId::parse(raw) {
            Some(id) => Some(id),
            None => {
                return Err(reject(
                    ErrorCode::InvalidSessionId,
                    format!("\"{raw}\" is not a session id"),
                    "`thinkledger sessions` lists them",
                ));
            }
        },
    };
    let selectors = usize::from(session.is_some())
        + usize::from(!args.commitments.is_empty())
        + usize::from(args.user_id.is_some());
    if selectors != 1 {
        return Err(reject(
            ErrorCode::InvalidArguments,
            "erase a session, named commitments or a user's memories: exactly one of the three"
                .into(),
            "give --session ID, --commitment HEX (repeatable) or --user-id USER",
        ));
    }
    Ok(session)
}

/// Every text the session's events reference, added to `wanted`.
fn session_texts(
    log: &dyn LogView,
    id: &SessionId,
    wanted: &mut BTreeSet<String>,
) -> Result<(), Refused> {
    let seqs = log.session_seqs(id).map_err(|e| internal(&e))?;
    if seqs.is_empty() {
        return Err(reject(
            ErrorCode::UnknownSession,
            format!("no session {id} in this ledger"),
            "`thinkledger sessions` lists them",
        ));
    }
    for seq in seqs {
        let bytes = log.event_bytes(seq).map_err(|e| internal(&e))?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| internal(&e))?;
        wanted.extend(text_refs(&value));
    }
    Ok(())
}

/// The wanted texts split by what the log holds of them: those still stored (to erase), and
/// how many are already erased. A named commitment with no stored text is refused; a session's
/// or a user's missing text is passed over.
fn still_stored(
    log: &dyn LogView,
    wanted: BTreeSet<String>,
    named: bool,
) -> Result<(Vec<String>, usize), Refused> {
    let mut erase = Vec::new();
    let mut already = 0usize;
    for c in wanted {
        let Some(key) = parse_hex32(&c) else { continue };
        match log.text(&key).map_err(|e| internal(&e))? {
            TextState::Present(_) => erase.push(c),
            TextState::Erased { .. } => already += 1,
            TextState::Missing if !named => {}
            TextState::Missing => {
                return Err(reject(
                    ErrorCode::UnknownCommitment,
                    format!("no stored text has commitment {c}"),
                    "check the commitment; `thinkledger verify` lists texts that are missing",
                ));
            }
        }
    }
    Ok((erase, already))
}

/// `erase`: the texts of a session, named commitments or a user's memories (with the memories
/// themselves), those still stored erased by one `TextsErased` fact that says why.
fn decide_erase(
    app: &App,
    _command: &Command,
    log: &dyn LogView,
    args: &Value,
    _recorded: &Value,
) -> Outcome {
    let args: EraseArgs = parse(args, USAGE).map_err(|r| (r, None))?;
    let session = selection(&args)?;
    let mut wanted: BTreeSet<String> = BTreeSet::new();
    // A user's memories: every version's texts, and the memories themselves (as a hard
    // `delete_memory` of each would), soft-deleted ones included.
    let mut memory_facts = Vec::new();
    if let Some(user) = &args.user_id {
        let Some((commitments, facts)) = app.user_memories_erasure(user) else {
            return Err(reject(
                ErrorCode::NothingToErase,
                format!("no memories are stored for userId \"{user}\""),
                "check the userId: it is the one store_memory was called with",
            ));
        };
        wanted.extend(commitments);
        memory_facts = facts;
    }
    if let Some(id) = &session {
        session_texts(log, id, &mut wanted)?;
    }
    for c in &args.commitments {
        if parse_hex32(c).is_none() || c.chars().any(|ch| ch.is_ascii_uppercase()) {
            return Err(reject(
                ErrorCode::InvalidCommitment,
                format!("\"{c}\" is not a text commitment (64 lowercase hex digits)"),
                "copy the textCommitment value from an event or an export",
            ));
        }
        wanted.insert(c.clone());
    }
    let named = session.is_none() && args.user_id.is_none();
    let (erase, already) = still_stored(log, wanted, named)?;
    if erase.is_empty() && memory_facts.is_empty() {
        return Err(reject(
            ErrorCode::NothingToErase,
            format!("nothing left to erase ({already} text(s) already erased)"),
            "nothing to do: the texts are already gone",
        ));
    }
    let body = json!({
        "status": "erased",
        "erased": erase.len(),
        "alreadyErased": already,
        "commitments": erase,
        "sessionId": session,
        "userId": args.user_id,
        "memories": memory_facts.len(),
        "reason": args.reason,
    });
    let mut facts = memory_facts;
    facts.push(Fact::TextsErased {
        commitments: erase,
        reason: args.reason,
        session_id: session.clone(),
    });
    Ok(Decided::new(session, facts, body))
}

/// A log that could not be read, refused as such.
fn internal(e: &dyn std::fmt::Display) -> Refused {
    (
        Rejection::new(
            ErrorCode::LogUnreadable,
            format!("the log could not be read: {e}"),
            "run `thinkledger verify`",
        ),
        None,
    )
}
