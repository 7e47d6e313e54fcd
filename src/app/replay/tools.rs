//! The `audit` family's review tools: `replay_reasoning_session` (timeline, optionally with
//! re-execution) and `diff_sessions`, their arguments, their responses and their decisions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::timeline::{TimelineEntry, render_text as timeline_text, timeline};
use super::{
    ReexecutionReport, ReplayError, reexecute_watched, render_text as report_text, session_events,
};
use crate::app::ErrorCode;
use crate::app::call::{
    ArgsShape, Decide, ToolSpec, Watch, parse, readable_session, reader_session, watch,
};
use crate::app::{App, AppConfig, Command, Decided, Outcome, Rejection, lenient};
use crate::events::{Fact, SessionId};
use crate::export::diff::{SessionDiff, diff, render_text};
use crate::ledger::LogView;

/// The name of the `replay_reasoning_session` tool: its spec, its catalog entry and every reference use this.
pub const REPLAY_REASONING_SESSION_TOOL: &str = "replay_reasoning_session";
/// The name of the `diff_sessions` tool: its spec, its catalog entry and every reference use this.
pub const DIFF_SESSIONS_TOOL: &str = "diff_sessions";

/// The tools of the replay family.
pub(crate) const SPECS: &[ToolSpec] = &[
    ToolSpec {
        name: REPLAY_REASONING_SESSION_TOOL,
        args: ArgsShape::of::<ReplayArgs>,
        decide: Decide::WithLog(decide_replay),
    },
    ToolSpec {
        name: DIFF_SESSIONS_TOOL,
        args: ArgsShape::of::<DiffSessionsArgs>,
        decide: Decide::Pure(decide_diff),
    },
];

/// Arguments of `replay_reasoning_session`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ReplayArgs {
    /// Session handle (`sessionId` of an earlier response); omit to replay your current session.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
    /// Also decide every recorded call again with today's rules and compare the answers with
    /// the recorded digests (default false).
    #[serde(default, deserialize_with = "lenient::bool_optional")]
    #[schemars(with = "bool")]
    pub reexecute: Option<bool>,
}

/// Response of `replay_reasoning_session`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplayOutput {
    pub session_id: String,
    /// `active`, or `closed` once a reset closed it.
    pub status: String,
    /// When its first call was recorded.
    pub started_at: String,
    /// When its latest call was recorded.
    pub last_recorded_at: String,
    /// Calls recorded against the session, refused ones included.
    pub calls: usize,
    /// One entry per call, in log order.
    pub timeline: Vec<TimelineEntry>,
    /// With `reexecute`: what deciding every call again showed.
    pub reexecution: Option<ReexecutionReport>,
}

/// The replay of `session` from `log`; with `reexecute_in`, every call is decided again by an
/// application built with that configuration.
pub fn replay_session(
    log: &dyn LogView,
    session: &SessionId,
    reexecute_in: Option<&AppConfig>,
) -> Result<ReplayOutput, ReplayError> {
    replay_session_watched(log, session, reexecute_in, &Watch::default())
}

/// [`replay_session`], its re-execution reporting to `watch` and stopping when the caller
/// cancels.
pub fn replay_session_watched(
    log: &dyn LogView,
    session: &SessionId,
    reexecute_in: Option<&AppConfig>,
    watch: &Watch,
) -> Result<ReplayOutput, ReplayError> {
    let events = session_events(log, session)?;
    let mut entries = timeline(&events);
    let reexecution = match reexecute_in {
        None => None,
        Some(config) => {
            let checks = reexecute_watched(log, session, App::new(config.clone()), watch)?;
            for (entry, check) in entries.iter_mut().zip(&checks) {
                if entry.seq == check.seq {
                    entry.reexecution = Some(check.verdict.name().to_owned());
                }
            }
            Some(ReexecutionReport::new(session, &checks))
        }
    };
    let closed = events
        .iter()
        .flat_map(|e| &e.facts)
        .any(|f| matches!(f, Fact::SessionClosed { .. }));
    let first = events.first().map(|e| e.recorded_at.clone());
    let last = events.last().map(|e| e.recorded_at.clone());
    Ok(ReplayOutput {
        session_id: session.to_string(),
        status: if closed { "closed" } else { "active" }.to_owned(),
        started_at: first.unwrap_or_default(),
        last_recorded_at: last.unwrap_or_default(),
        calls: events.len(),
        timeline: entries,
        reexecution,
    })
}

/// A replay as text: a header line, the timeline, then the re-execution report if any.
#[must_use]
pub fn render_replay_text(output: &ReplayOutput) -> String {
    let mut out = format!(
        "session {} ({}): {} calls, {} .. {}\n",
        output.session_id, output.status, output.calls, output.started_at, output.last_recorded_at
    );
    out.push_str(&timeline_text(&output.timeline));
    if let Some(report) = &output.reexecution {
        out.push_str(&report_text(report));
    }
    out
}

const REPLAY_USAGE: &str = "all optional: session_id (a session id), reexecute (boolean)";

/// Decides `replay_reasoning_session`: reads the log, so its answer reflects the log as it
/// stood when the call was decided.
pub(crate) fn decide_replay(
    app: &App,
    command: &Command,
    log: &dyn LogView,
    args: &Value,
    _recorded: &Value,
) -> Outcome {
    let args: ReplayArgs = parse(args, REPLAY_USAGE).map_err(|r| (r, None))?;
    let session = match args.session_id.as_deref() {
        None => command.connection_session.clone(),
        Some(raw) => SessionId::parse(raw).ok_or_else(|| {
            (
                Rejection::new(
                    ErrorCode::UnknownSession,
                    format!("\"{raw}\" is not a session id"),
                    "session ids are lowercase UUIDs as returned in `sessionId`; read \
                     ledger://sessions to list them",
                ),
                None,
            )
        })?,
    };
    // Another principal's session is answered exactly as a missing one.
    let hidden =
        app.state.head(&session).is_some() && readable_session(app, command, &session).is_none();
    let config = args.reexecute.unwrap_or(false).then_some(&app.config);
    let replayed = if hidden {
        Err(ReplayError::UnknownSession(session.clone()))
    } else {
        replay_session_watched(log, &session, config, &command.watch)
    };
    let recorded_in = reader_session(app, command, &session);
    match replayed {
        Ok(output) => Ok(Decided::new(Some(recorded_in), Vec::new(), output)),
        Err(ReplayError::Cancelled { done, total }) => Err((
            watch::cancelled(
                REPLAY_REASONING_SESSION_TOOL,
                &format!("re-executing {done} of {total} events"),
            ),
            Some(recorded_in),
        )),
        Err(ReplayError::UnknownSession(id)) => Err((
            Rejection::new(
                ErrorCode::UnknownSession,
                format!("there is no session {id} in this ledger"),
                "pass session_id of a session listed in ledger://sessions; a connection's own \
                 session exists once its first thought is recorded",
            ),
            None,
        )),
        Err(e) => Err((
            Rejection::new(
                ErrorCode::ReplayFailed,
                format!("the log could not be replayed: {e}"),
                "run `thinkledger verify` to check the ledger",
            ),
            Some(recorded_in),
        )),
    }
}

/// Arguments of `diff_sessions`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct DiffSessionsArgs {
    /// The session compared from (its lines are `-`).
    pub session_a: String,
    /// The session compared to (its lines are `+`).
    pub session_b: String,
}

/// Response of `diff_sessions`: the aligned diff, and the same as text.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiffSessionsOutput {
    #[serde(flatten)]
    pub diff: SessionDiff,
    /// The diff in the manner of a unified diff.
    pub text: String,
}

const DIFF_USAGE: &str = "required: session_a, session_b (session ids)";

/// Decides `diff_sessions`: a read of two sessions as they stand.
pub(crate) fn decide_diff(
    app: &App,
    command: &Command,
    args: &Value,
    _recorded: &Value,
) -> Outcome {
    let args: DiffSessionsArgs = parse(args, DIFF_USAGE).map_err(|r| (r, None))?;
    let find = |raw: &str| {
        SessionId::parse(raw)
            .and_then(|id| readable_session(app, command, &id))
            .ok_or_else(|| {
                (
                    Rejection::new(
                        ErrorCode::UnknownSession,
                        format!("there is no session \"{raw}\" in this ledger"),
                        "pass two session ids as returned in `sessionId`; read ledger://sessions \
                         to list them",
                    ),
                    None,
                )
            })
    };
    let (a, b) = (find(&args.session_a)?, find(&args.session_b)?);
    let (a, b) = (a.body()?, b.body()?);
    let diff = diff(&a, &b);
    let text = render_text(&diff);
    Ok(Decided::new(
        None,
        Vec::new(),
        DiffSessionsOutput { diff, text },
    ))
}
