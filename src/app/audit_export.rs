//! The `export_reasoning_audit` tool (audit family): a session's offline-verifiable audit export,
//! built from the log itself while the call is decided.
//!
//! Owns the tool's arguments and how build failures become rejections. The document, its proofs
//! and its signature are the `audit` module's; this file knows nothing of MCP.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::call::{ArgsShape, Decide, ToolSpec, parse, readable_session};
use super::{App, Command, Decided, Outcome, Rejection};
use crate::app::ErrorCode;
use crate::audit::{AuditError, ExportOptions, Selection, build_export_with};
use crate::events::SessionId;
use crate::ledger::LogView;

/// The name of the `export_reasoning_audit` tool: its spec, its catalog entry and every reference use this.
pub const EXPORT_REASONING_AUDIT_TOOL: &str = "export_reasoning_audit";

/// The tool of this family.
pub(crate) const SPECS: &[ToolSpec] = &[ToolSpec {
    name: EXPORT_REASONING_AUDIT_TOOL,
    args: ArgsShape::of::<crate::app::AuditExportArgs>,
    decide: Decide::WithLog(decide_audit_export),
}];

/// Arguments of `export_reasoning_audit`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AuditExportArgs {
    /// The session to export (a session id as returned in `sessionId`).
    pub session_id: String,
    /// A signed checkpoint you kept earlier (its note text, exactly as received): the export
    /// then also proves the log still extends it.
    #[serde(default)]
    #[schemars(with = "String")]
    pub since_checkpoint: Option<String>,
}

const USAGE: &str = "required: session_id (a session id); optional: since_checkpoint (a signed \
                     checkpoint note of this ledger)";

/// Decides `export_reasoning_audit`: the export of the session as the log stood when the call
/// was decided, proven against the latest signed checkpoint.
pub(crate) fn decide_audit_export(
    app: &App,
    command: &Command,
    log: &dyn LogView,
    args: &Value,
    _recorded: &Value,
) -> Outcome {
    let args: AuditExportArgs = parse(args, USAGE).map_err(|r| (r, None))?;
    let session = SessionId::parse(&args.session_id).ok_or_else(|| {
        (
            Rejection::new(
                ErrorCode::UnknownSession,
                format!("\"{}\" is not a session id", args.session_id),
                "session ids are lowercase UUIDs as returned in `sessionId`; read \
                 ledger://sessions to list them",
            ),
            None,
        )
    })?;
    // Another principal's session is answered exactly as a session with no events.
    let hidden =
        app.state.head(&session).is_some() && readable_session(app, command, &session).is_none();
    let selection = Selection::Session {
        session_id: session.clone(),
    };
    // Stamped with the decision time (the event's `recordedAt`), never the clock: the export
    // is part of the response, whose digest the event holds.
    // About twenty reports, whatever the session's size.
    let report = |done: u64, total: u64| {
        if done == total || done.is_multiple_of((total / 20).max(1)) {
            command.watch.progress(
                done,
                Some(total),
                &format!("exported {done} of {total} events"),
            );
        }
    };
    let options = ExportOptions {
        since_checkpoint: args.since_checkpoint.as_deref(),
        generated_at: App::decided_at(command, log),
        progress: Some(&report),
        cancelled: Some(&|| command.watch.cancelled()),
        timestamps: &[],
    };
    let built = if hidden {
        Err(AuditError::EmptySession {
            session: session.to_string(),
        })
    } else {
        build_export_with(log, &selection, &options)
    };
    let recorded_in = crate::app::call::reader_session(app, command, &session);
    match built {
        Ok(export) => Ok(Decided::new(Some(recorded_in), Vec::new(), export)),
        Err(AuditError::Cancelled { done, total }) => Err((
            crate::app::call::watch::cancelled(
                EXPORT_REASONING_AUDIT_TOOL,
                &format!("exporting {done} of {total} events"),
            ),
            Some(recorded_in),
        )),
        Err(e) => {
            let code = audit_error_code(&e);
            let suggestion = match code {
                // Over MCP the CLI cannot reach a ledger the server holds.
                ErrorCode::NoCheckpoint => "the server signs a checkpoint before every export; if \
                                    this persists its signing key is unusable: check the \
                                    server's log and run `thinkledger verify`"
                    .to_owned(),
                _ => e.suggestion(),
            };
            let no_such_session = code == ErrorCode::EmptySession;
            Err((
                Rejection::new(code, e.to_string(), suggestion),
                (!no_such_session).then_some(recorded_in),
            ))
        }
    }
}

/// The refusal code of an export that could not be built (the same string as
/// [`AuditError::code`], which the CLI reports).
fn audit_error_code(error: &AuditError) -> ErrorCode {
    match error {
        AuditError::NoCheckpoint { .. } => ErrorCode::NoCheckpoint,
        AuditError::EmptySession { .. } => ErrorCode::EmptySession,
        AuditError::InvalidRange { .. } => ErrorCode::InvalidRange,
        AuditError::NoSigningKey => ErrorCode::NoSigningKey,
        AuditError::ForeignCheckpoint(_) => ErrorCode::ForeignCheckpoint,
        AuditError::Rollback { .. } => ErrorCode::Rollback,
        AuditError::Fork { .. } => ErrorCode::Fork,
        AuditError::TextMissing { .. } => ErrorCode::TextMissing,
        AuditError::Cancelled { .. } => ErrorCode::CallCancelled,
        AuditError::Ledger(_) | AuditError::Merkle(_) | AuditError::Checkpoint(_) => {
            ErrorCode::LedgerCorrupt
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{AuditError, audit_error_code};

    #[test]
    fn an_export_refusal_carries_the_code_the_cli_reports() {
        let errors = [
            AuditError::NoCheckpoint {
                needed: 3,
                latest: None,
            },
            AuditError::EmptySession {
                session: "s".into(),
            },
            AuditError::InvalidRange {
                from: 2,
                to: 1,
                len: 1,
            },
            AuditError::NoSigningKey,
            AuditError::ForeignCheckpoint("x".into()),
            AuditError::Rollback {
                old_size: 2,
                new_size: 1,
            },
            AuditError::Fork { size: 1 },
            AuditError::TextMissing {
                seq: 1,
                commitment: "c".into(),
            },
        ];
        for error in &errors {
            assert_eq!(audit_error_code(error).as_str(), error.code());
        }
    }
}
