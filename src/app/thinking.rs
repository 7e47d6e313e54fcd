//! The thinking family: the sequential-thinking tool (the reference server's contract) and
//! `reset`, which closes the chain it builds. Facts are `events`' session and thought facts;
//! their fold is `projections::thinking`.
//!
//! Owns these two tools' rules. Must not know any other family: the session rules and argument
//! parsing every family shares are `call`'s, tag normalization is `tags`'.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::call::{ArgsShape, Decide, Target, ToolSpec, parse, target};
use super::tags::normalize_tags;
use super::{App, Command, Decided, Outcome, Rejection, lenient};
use crate::app::ErrorCode;
use crate::events::{Fact, TextRef, ThoughtRecorded};
use crate::projections::SessionStatus;

/// The name of the `sequentialthinking` tool: its spec, its catalog entry and every reference use this.
pub const SEQUENTIALTHINKING_TOOL: &str = "sequentialthinking";
/// The name of the `reset` tool: its spec, its catalog entry and every reference use this.
pub const RESET_TOOL: &str = "reset";

/// The tools of the thinking toolset.
pub(crate) const SPECS: &[ToolSpec] = &[ToolSpec {
    name: SEQUENTIALTHINKING_TOOL,
    args: ArgsShape::of::<SequentialThinkingArgs>,
    decide: Decide::Pure(decide_sequential),
}];

/// MAXential's `reset`, decided here with the chain it closes but offered in the `maxential`
/// toolset.
pub(crate) const RESET_SPECS: &[ToolSpec] = &[ToolSpec {
    name: RESET_TOOL,
    args: ArgsShape::of::<crate::app::thinking::ResetArgs>,
    decide: Decide::Pure(decide_reset),
}];

/// Whether a `sequentialthinking` call opens a conversation of its own, for a caller with no
/// connection to keep its current session (stateless HTTP, the 2026-07-28 revision without a
/// handle): thought 1 that is neither a revision nor a branch and names no session. Such a
/// call starts a new session; any other call without a handle continues the caller's current
/// one (README, "Sessions").
pub fn opens_a_conversation(arguments: &Value) -> bool {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Opening {
        #[serde(default, deserialize_with = "lenient::u32_optional")]
        thought_number: Option<u32>,
        #[serde(default, deserialize_with = "lenient::bool_optional")]
        is_revision: Option<bool>,
        #[serde(default, deserialize_with = "lenient::u32_optional")]
        branch_from_thought: Option<u32>,
        #[serde(default)]
        session_id: Option<Value>,
    }
    Opening::deserialize(arguments).is_ok_and(|o| {
        o.thought_number == Some(1)
            && o.is_revision != Some(true)
            && o.branch_from_thought.is_none()
            && o.session_id
                .as_ref()
                .is_none_or(|id| id.is_null() || id.as_str().is_some_and(|s| s.trim().is_empty()))
    })
}

/// Arguments of `sequentialthinking`: exactly the reference server's, plus `sessionId` and
/// `tags`. Numbers and booleans may be sent as strings.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SequentialThinkingArgs {
    /// Your current thinking step: an analysis, a question, a revision, a hypothesis or its check.
    #[schemars(extend("x-text" = true))]
    pub thought: String,
    /// True while more thinking is needed, even at what looked like the end.
    #[serde(deserialize_with = "lenient::bool_required")]
    #[schemars(with = "bool")]
    pub next_thought_needed: bool,
    /// Number of this thought in the sequence (1, 2, 3, …); may exceed the estimate.
    #[serde(deserialize_with = "lenient::u32_required")]
    #[schemars(with = "u32", range(min = 1))]
    pub thought_number: u32,
    /// Current estimate of the thoughts needed; raised automatically when thoughtNumber passes it.
    #[serde(deserialize_with = "lenient::u32_required")]
    #[schemars(with = "u32", range(min = 1))]
    pub total_thoughts: u32,
    /// Whether this thought reconsiders an earlier one.
    #[serde(default, deserialize_with = "lenient::bool_optional")]
    #[schemars(with = "bool")]
    pub is_revision: Option<bool>,
    /// The thought number being reconsidered, when isRevision is true.
    #[serde(default, deserialize_with = "lenient::u32_optional")]
    #[schemars(with = "u32", range(min = 1))]
    pub revises_thought: Option<u32>,
    /// The thought number this branch starts from.
    #[serde(default, deserialize_with = "lenient::u32_optional")]
    #[schemars(with = "u32", range(min = 1))]
    pub branch_from_thought: Option<u32>,
    /// Name of the branch this thought belongs to.
    #[serde(default)]
    #[schemars(with = "String")]
    pub branch_id: Option<String>,
    /// Set when the end was reached but more thoughts turned out to be needed.
    #[serde(default, deserialize_with = "lenient::bool_optional")]
    #[schemars(with = "bool")]
    pub needs_more_thoughts: Option<bool>,
    /// Session handle: pass back the `sessionId` of an earlier response to continue that
    /// session. Omit to continue your current session (started on first use).
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
    /// Tags for this thought (lowercased, trimmed, deduplicated), e.g. hypothesis, evidence,
    /// counter, decision, question, rejected, key.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub tags: Option<Vec<String>>,
}

/// Response of `sequentialthinking`: the reference server's fields plus `sessionId`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SequentialThinkingOutput {
    pub thought_number: u32,
    pub total_thoughts: u32,
    pub next_thought_needed: bool,
    /// Branch ids of the session, in the order they were opened.
    pub branches: Vec<String>,
    /// Thoughts recorded in the session so far.
    pub thought_history_length: usize,
    /// Handle of the session: pass it as `sessionId` to continue this session.
    pub session_id: String,
}

/// Arguments of `reset`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResetArgs {
    /// Must be true: a guard against clearing by accident.
    #[serde(deserialize_with = "lenient::bool_required")]
    #[schemars(with = "bool")]
    pub confirm: bool,
    /// Session handle (`sessionId` of an earlier response); omit to close your current session.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Response of `reset`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResetOutput {
    /// Always `reset`.
    pub status: String,
    pub cleared: Cleared,
    pub message: String,
    /// The session that was closed, if there was one.
    pub session_id: Option<String>,
}

/// Counts of what a reset took out of the active view (all of it stays in the ledger).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Cleared {
    pub thoughts: usize,
    pub branches: usize,
}

const SEQUENTIAL_USAGE: &str = "required: thought (string), nextThoughtNeeded (boolean), \
    thoughtNumber (integer ≥ 1), totalThoughts (integer ≥ 1); optional: isRevision, \
    revisesThought, branchFromThought, branchId, needsMoreThoughts, sessionId, tags";

fn decide_sequential(app: &App, command: &Command, args: &Value, recorded: &Value) -> Outcome {
    let args: SequentialThinkingArgs = parse(args, SEQUENTIAL_USAGE).map_err(|r| (r, None))?;
    let target = target(app, command, args.session_id.as_deref())?;
    let session_id = target.id();
    let attributed = |r: Rejection| (r, target.existing_id());
    let session = target.head();
    if let SessionStatus::Closed { seq, .. } = &session.status {
        return Err(attributed(Rejection::new(
            ErrorCode::SessionClosed,
            format!("session {session_id} was closed by a reset (event {seq})"),
            "omit sessionId to continue your current session, or start a new \
             chain; the closed session stays readable through export and ledger://session/{id}",
        )));
    }
    if args.thought.trim().is_empty() {
        return Err(attributed(Rejection::new(
            ErrorCode::InvalidArguments,
            "thought is empty",
            SEQUENTIAL_USAGE,
        )));
    }
    if args.thought_number == 0 || args.total_thoughts == 0 {
        return Err(attributed(Rejection::new(
            ErrorCode::InvalidArguments,
            "thoughtNumber and totalThoughts start at 1",
            SEQUENTIAL_USAGE,
        )));
    }
    for (name, number) in [
        ("revisesThought", args.revises_thought),
        ("branchFromThought", args.branch_from_thought),
    ] {
        if let Some(n) = number
            && !session.has_thought(n)
        {
            return Err(attributed(Rejection::new(
                ErrorCode::UnknownThought,
                format!("{name} is {n}, but this session has no thought {n}"),
                format!(
                    "refer to a thought already recorded (this session has {} thoughts); to \
                     continue an earlier session pass its sessionId",
                    session.thought_count
                ),
            )));
        }
    }
    let tags = normalize_tags(args.tags.as_deref().unwrap_or(&[])).map_err(attributed)?;
    let branch_id = args
        .branch_id
        .as_deref()
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .map(str::to_owned);
    if branch_id.as_ref().is_some_and(|b| b.chars().count() > 128) {
        return Err(attributed(Rejection::new(
            ErrorCode::InvalidArguments,
            "branchId is over 128 characters",
            "use a short branch name",
        )));
    }
    let total_thoughts = args.total_thoughts.max(args.thought_number);
    // The text is stored under the commitment made when the arguments were recorded.
    let text: TextRef = serde_json::from_value(recorded["thought"].clone()).map_err(|_| {
        attributed(Rejection::new(
            ErrorCode::InvalidArguments,
            "thought could not be recorded",
            SEQUENTIAL_USAGE,
        ))
    })?;
    let recorded = ThoughtRecorded {
        session_id: session_id.clone(),
        text,
        thought_number: args.thought_number,
        total_thoughts,
        next_thought_needed: args.next_thought_needed,
        is_revision: args.is_revision.unwrap_or(false),
        revises_thought: args.revises_thought,
        branch_from_thought: args.branch_from_thought,
        branch_id: branch_id.clone(),
        needs_more_thoughts: args.needs_more_thoughts.unwrap_or(false),
        tags,
    };
    let mut branches = session.branch_ids();
    if let (Some(b), Some(_)) = (&branch_id, args.branch_from_thought)
        && !branches.contains(b)
    {
        branches.push(b.clone());
    }
    let output = SequentialThinkingOutput {
        thought_number: args.thought_number,
        total_thoughts,
        next_thought_needed: args.next_thought_needed,
        branches,
        thought_history_length: session.thought_count + 1,
        session_id: session_id.to_string(),
    };
    let mut facts = target.start_facts();
    facts.push(Fact::ThoughtRecorded(recorded));
    Ok(Decided::new(Some(session_id), facts, output))
}

fn decide_reset(app: &App, command: &Command, args: &Value, _recorded: &Value) -> Outcome {
    let args: ResetArgs =
        parse(args, "required: confirm (true); optional: sessionId").map_err(|r| (r, None))?;
    if !args.confirm {
        return Err((
            Rejection::new(
                ErrorCode::ConfirmationRequired,
                "reset needs confirm: true",
                "call reset with {\"confirm\": true} to close the session; nothing is deleted \
                 from the ledger",
            ),
            None,
        ));
    }
    let target = target(app, command, args.session_id.as_deref())?;
    let Target::Existing(session) = target else {
        let output = ResetOutput {
            status: "reset".into(),
            cleared: Cleared {
                thoughts: 0,
                branches: 0,
            },
            message: "No session was active. Ready for a new thinking chain.".into(),
            session_id: None,
        };
        return Ok(Decided::new(None, Vec::new(), output));
    };
    if !session.is_active() {
        let output = ResetOutput {
            status: "reset".into(),
            cleared: Cleared {
                thoughts: 0,
                branches: 0,
            },
            message: "That session was already closed. Ready for a new thinking chain.".into(),
            session_id: Some(session.id.to_string()),
        };
        return Ok(Decided::new(Some(session.id.clone()), Vec::new(), output));
    }
    let output = ResetOutput {
        status: "reset".into(),
        cleared: Cleared {
            thoughts: session.thought_count,
            branches: session.branch_ids().len(),
        },
        message: "Session cleared. Ready for new thinking chain. The closed session stays in the \
                  ledger and can still be exported by its sessionId."
            .into(),
        session_id: Some(session.id.to_string()),
    };
    let facts = vec![Fact::SessionClosed {
        session_id: session.id.clone(),
        reason: "reset".into(),
    }];
    Ok(Decided::new(Some(session.id.clone()), facts, output))
}
