//! The application: decides what each tool call means against current state.
//!
//! `decide(state, command) → facts + response body` is the only business logic in the server.
//! It runs on the ledger's writer thread (through [`crate::ledger::Decider`]), so decisions are
//! taken one at a time in log order and never race. A decision is pure: the effects a call
//! needs (the time, a random seed) were taken on the caller's side before it was sent
//! ([`crate::effects::Prepared`], in [`Command::prepared`]), and the decision reads them from
//! there and from the log, never from the clock, the random source or the environment. Every
//! call yields exactly one event: bad input becomes a `rejected` event with a clear error and a
//! suggestion, and changes no state.
//! This layer knows nothing of MCP or HTTP; it sees a tool name and a JSON arguments object.

pub mod agent;
mod audit_export;
mod bodies;
pub(crate) mod call;
mod decide;
pub(crate) use call::access;
pub mod cognition;
pub mod deliberation;
mod draws;
mod erase;
pub mod errors;
mod idempotency;
mod lenient;
pub mod lux;
mod maxential;
pub mod memory;
pub(crate) mod providers;
mod registry;
pub mod replay;
mod snapshot;
mod tags;
mod texts;
pub mod toolsets;

#[cfg(test)]
mod tests;
pub mod thinking;
#[cfg(test)]
mod two_phase_tests;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::effects::Prepared;
use crate::events::{
    Actor, Call, ErrorRecord, Event, Fact, OutcomeStatus, Provenance, SessionId, TextLookup,
    TraceContext,
};
use crate::index::memory::DerivedIndex;
use crate::ledger::{Decider, Draft, LogView, NewText};
use crate::projections::{
    AgentState, CognitionState, DeliberationState, LuxState, MemoryState, Telemetry, ThinkingState,
};

pub use agent::{
    AGENT_END_TOOL, AGENT_INTENT_TOOL, AGENT_MODEL_FAILED_TOOL, AGENT_MODEL_TOOL, AGENT_NUDGE_TOOL,
    AGENT_START_TOOL, AGENT_TOOL_REQUESTED_TOOL, AGENT_TOOL_RETURNED_TOOL,
};
pub use audit_export::AuditExportArgs;
pub use audit_export::EXPORT_REASONING_AUDIT_TOOL;
pub use cognition::{
    ANALYZE_REASONING_TOOL, ANALYZE_SYSTEMATICALLY_TOOL, ASSESS_CONFIDENCE_TOOL,
    DECOMPOSE_PROBLEM_TOOL, DETECT_BIAS_TOOL, DETECT_EMOTION_TOOL, THINK_PARALLEL_TOOL, THINK_TOOL,
};
pub use deliberation::{
    ADD_THOUGHT_NODE_TOOL, APPLY_ALGORITHM_TEMPLATE_TOOL, APPLY_REASONING_PATTERN_TOOL,
    CONSENSUS_ANSWER_TOOL, CONVERGE_REASONING_TOOL, EVALUATE_REASONING_QUALITY_TOOL,
    EXPAND_THOUGHTS_TOOL, PRUNE_THOUGHTS_TOOL, REASONING_AUTOPILOT_TOOL,
    REASONING_INTENT_ROUTER_TOOL, RECORD_ASSUMPTION_TOOL, REFINE_THOUGHTS_TOOL,
    RUN_REASONING_CHECKPOINT_TOOL, RUN_REASONKIT_PIPELINE_TOOL, RUN_SKELETON_ELABORATION_TOOL,
    RUN_THINKING_MODE_TOOL, SCORE_THOUGHTS_TOOL, SET_ASSUMPTION_STATUS_TOOL,
    SET_SCORING_RUBRIC_TOOL, START_DELIBERATION_TOOL, START_SKELETON_OF_THOUGHT_TOOL,
    VERIFY_THOUGHTS_TOOL,
};
pub use erase::ERASE_TOOL;
pub use errors::ErrorCode;
pub use lux::{BIASED_REASONING_TOOL, CONFER_TOOL, PLANNER_TOOL, TRACED_REASONING_TOOL};
pub use maxential::{EXPORT_TOOL, SEARCH_TOOL, TAG_TOOL, VISUALIZE_TOOL};
pub use maxential::{
    ExportArgs, ExportOutput, SearchArgs, SearchOutput, TagArgs, TagOutput, VisualizeArgs,
    VisualizeOutput,
};
pub use memory::{
    DELETE_MEMORY_TOOL, RETRIEVE_MEMORIES_TOOL, SEARCH_MEMORIES_TOOL, STORE_MEMORY_TOOL,
    UPDATE_MEMORY_TOOL,
};
#[cfg(test)]
pub(crate) use registry::auditor_may_call;
pub use registry::{TOOL_FAMILIES, recorded_arguments, toolset_of};
pub use replay::tools::{DIFF_SESSIONS_TOOL, REPLAY_REASONING_SESSION_TOOL};
pub use texts::TextPolicy;
pub use thinking::{RESET_TOOL, SEQUENTIALTHINKING_TOOL};
pub use toolsets::{DISABLE_TOOLSET_TOOL, ENABLE_TOOLSET_TOOL, LIST_TOOLSETS_TOOL};

/// Limits applied to every call.
#[derive(Debug, Clone)]
pub struct AppConfig {
    /// Largest accepted free-text field (a thought, a query), in bytes of UTF-8.
    pub max_text_bytes: usize,
    /// Longest a deliberation tool may spend deciding one call; a slower decision is refused
    /// (`time_limit_exceeded`) and changes nothing. Measured by the writer around the decision
    /// (the one measured effect there), never inside it: see [`Decider::over_time`].
    pub tool_time_limit: std::time::Duration,
}

impl Default for AppConfig {
    fn default() -> Self {
        Self {
            max_text_bytes: 64 * 1024,
            tool_time_limit: std::time::Duration::from_secs(5),
        }
    }
}

impl AppConfig {
    /// Largest accepted arguments object (its JSON), in bytes: room for one maximal text plus
    /// the other fields.
    pub fn max_arguments_bytes(&self) -> usize {
        self.max_text_bytes
            .saturating_mul(2)
            .saturating_add(16 * 1024)
    }
}

/// The tool name recorded for a `tools/call` whose params could not be decoded (no string
/// `name`, `arguments` not an object, a malformed `_meta`). It is no valid MCP tool name (those
/// have no `/`), so no tool can have it; such a call is rejected (`invalid_params`) with its raw
/// params recorded as one opaque committed text.
pub const UNDECODABLE_CALL: &str = "tools/call";

/// One `tools/call`, as the tools layer hands it over.
#[derive(Debug, Clone)]
pub struct Command {
    pub tool: String,
    /// The arguments object (`Value::Null` when the client sent none).
    pub arguments: Value,
    pub actor: Actor,
    /// The caller's current session, used when a call names none; started on first use (see `tools::current`).
    pub connection_session: SessionId,
    /// Where a refusal that concerns no session of its own is recorded: the caller's current
    /// session, so that a refused or cancelled call shows in its caller's timeline (never in
    /// the session it probed). `None`: nowhere (the operator's commands). Re-execution gives
    /// back what the event recorded.
    pub refused_in: Option<SessionId>,
    /// False when the tool exists but its family is not offered to the caller (`--toolsets`,
    /// `disable_toolset`).
    pub tool_enabled: bool,
    /// The toolsets offered to the caller, for the toolset tools' answers (empty where no MCP
    /// caller is behind the command: the CLI, re-execution).
    pub toolsets: Vec<toolsets::ToolsetStatus>,
    /// True for the operator's own commands from the CLI (`erase`), never for MCP calls.
    pub admin: bool,
    /// A client-chosen key (MCP `_meta.idempotencyKey`): a call whose key this principal
    /// already used is answered with the recorded outcome and appends nothing.
    pub idempotency_key: Option<String>,
    /// The W3C trace context the caller sent (MCP `_meta.traceparent`, or the HTTP header),
    /// already found well formed: an input recorded as received (the event's `trace`), never
    /// read by a decision. Re-execution gives back the recorded one.
    pub trace: Option<TraceContext>,
    /// The effects the call took before it was sent: its time and its seed (*prepare*).
    pub prepared: Prepared,
    /// The caller's view of the call while it is decided (progress, cancellation); never
    /// recorded.
    pub watch: call::Watch,
    /// Work done for the call off the writer, which its decision checks instead of redoing;
    /// never recorded.
    pub precomputed: call::Precomputed,
}

impl Command {
    /// An MCP tool call, with the effects it took (`Effects::prepare`).
    pub fn tool_call(
        tool: impl Into<String>,
        arguments: Value,
        actor: Actor,
        connection_session: SessionId,
        prepared: Prepared,
    ) -> Self {
        Self {
            tool: tool.into(),
            arguments,
            actor,
            refused_in: Some(connection_session.clone()),
            connection_session,
            tool_enabled: true,
            toolsets: Vec::new(),
            admin: false,
            idempotency_key: None,
            trace: None,
            prepared,
            watch: call::Watch::default(),
            precomputed: call::Precomputed::default(),
        }
    }
}

/// A read of durable state that records nothing (resources, CLI listings). It is answered off
/// the writer, from a published copy of the state (see [`App::view`]).
pub type Query = Box<dyn FnOnce(&App) -> Value + Send>;

/// The application state machine driven by the ledger writer.
///
/// Cloning it is cheap at any size, and that is what the writer publishes for queries after
/// every batch ([`Decider::view`]): the projections keep their large collections in persistent
/// maps with each session or deliberation behind an `Arc` copied on write, and the telemetry
/// (a few small maps) behind an `Arc` copied at most once per batch.
#[derive(Debug, Default, Clone)]
pub struct App {
    state: ThinkingState,
    deliberation: DeliberationState,
    memory: MemoryState,
    lux: LuxState,
    agent: AgentState,
    cognition: CognitionState,
    telemetry: std::sync::Arc<Telemetry>,
    idempotency: idempotency::IdempotencyIndex,
    config: AppConfig,
    /// The memory index, derived from `memory` and fed by the writer ([`Decider::derive`]);
    /// never part of the state or of a snapshot, shared by every view.
    memory_index: DerivedIndex,
}

impl App {
    pub fn new(config: AppConfig) -> Self {
        Self {
            state: ThinkingState::default(),
            deliberation: DeliberationState::default(),
            memory: MemoryState::default(),
            lux: LuxState::default(),
            agent: AgentState::default(),
            cognition: CognitionState::default(),
            telemetry: std::sync::Arc::default(),
            idempotency: idempotency::IdempotencyIndex::default(),
            config,
            memory_index: DerivedIndex::in_ram(),
        }
    }

    /// The name a call to `tool` is counted under in the process's metrics: the tool's own
    /// (one offered over MCP or an operator's command), else
    /// [`crate::metrics::UNKNOWN_TOOL_LABEL`].
    pub fn counted_tool(tool: &str) -> &'static str {
        registry::spec(tool)
            .or_else(|| registry::admin_spec(tool))
            .map_or(crate::metrics::UNKNOWN_TOOL_LABEL, |spec| spec.name)
    }

    /// The application with its memory index in `dir` (derived from the memory projection:
    /// reopened, or emptied and rebuilt from it, on first use) instead of in memory.
    #[must_use]
    pub fn with_memory_index_dir(mut self, dir: std::path::PathBuf) -> Self {
        self.memory_index = DerivedIndex::in_dir(dir);
        self
    }

    pub fn cognition(&self) -> &CognitionState {
        &self.cognition
    }

    pub fn lux(&self) -> &LuxState {
        &self.lux
    }

    /// The reasoning engine's runs.
    pub fn agent(&self) -> &AgentState {
        &self.agent
    }

    pub fn memories(&self) -> &MemoryState {
        &self.memory
    }

    /// The memory index, lent to decisions current with [`App::memories`].
    pub fn memory_index(&self) -> &DerivedIndex {
        &self.memory_index
    }

    pub fn state(&self) -> &ThinkingState {
        &self.state
    }

    pub fn deliberations(&self) -> &DeliberationState {
        &self.deliberation
    }

    pub fn telemetry(&self) -> &Telemetry {
        &self.telemetry
    }

    pub fn config(&self) -> &AppConfig {
        &self.config
    }
}

/// Why a call was refused: shown to the client and recorded in the event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub code: ErrorCode,
    pub message: String,
    pub suggestion: String,
    /// More members of the refusal body, e.g. the `blockers` a policy gate names.
    pub details: Option<Map<String, Value>>,
}

impl Rejection {
    pub fn new(code: ErrorCode, message: impl Into<String>, suggestion: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            suggestion: suggestion.into(),
            details: None,
        }
    }

    /// The refusal with more members in its body (they cannot replace the standard ones).
    pub fn with_details(mut self, details: Map<String, Value>) -> Self {
        self.details = Some(details);
        self
    }
}

/// A successful decision.
#[derive(Debug, Clone)]
pub struct Decided {
    pub session_id: Option<SessionId>,
    pub facts: Vec<Fact>,
    pub body: Value,
    /// Texts the decision derived itself (a redacted node content, a generated question), to
    /// be stored beside the event like the arguments' texts.
    pub texts: Vec<NewText>,
}

impl Decided {
    fn new(session_id: Option<SessionId>, facts: Vec<Fact>, body: impl Serialize) -> Self {
        // Bodies are plain structs of strings, numbers and vectors: serialization cannot fail.
        let body = serde_json::to_value(body).unwrap_or(Value::Null);
        Self {
            session_id,
            facts,
            body,
            texts: Vec::new(),
        }
    }

    fn with_texts(mut self, texts: Vec<NewText>) -> Self {
        self.texts = texts;
        self
    }
}

/// The body of every refused call.
pub fn rejection_body(rejection: &Rejection) -> Value {
    let mut body = json!({
        "status": "rejected",
        "code": rejection.code.as_str(),
        "error": rejection.message,
        "suggestion": rejection.suggestion,
    });
    if let (Some(details), Value::Object(map)) = (&rejection.details, &mut body) {
        for (key, value) in details {
            map.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
    body
}

impl Decider for App {
    type Command = Command;
    type Query = Query;
    type Answer = Value;
    type View = App;

    fn prepared_at(&self, command: &Command) -> chrono::DateTime<chrono::Utc> {
        command.prepared.at
    }

    fn decide(&self, command: &Command, log: &dyn LogView) -> Draft {
        self.decide_within(command, log, None)
    }

    fn over_time(
        &self,
        command: &Command,
        log: &dyn LogView,
        elapsed: std::time::Duration,
        draft: Draft,
    ) -> Draft {
        if elapsed <= self.config.tool_time_limit || !Self::time_limited(command) {
            return draft;
        }
        let session = draft.session_id.clone();
        self.decide_within(command, log, Some(session))
    }

    fn failed(&self, command: &Command, reason: &str) -> Draft {
        let mut texts = Vec::new();
        let recorded = match &command.prepared.seed {
            Ok(seed) => {
                let draws = draws::Draws::new(seed);
                self.policy(&draws)
                    .opaque(&command.arguments.to_string(), &mut texts)
            }
            Err(_) => json!({ "omitted": { "reason": RANDOMNESS_UNAVAILABLE } }),
        };
        let error = ErrorRecord {
            code: ErrorCode::InternalError.as_str().to_owned(),
            message: format!("thinkledger failed while deciding this call: {reason}"),
            suggestion: "this is a bug in thinkledger; the call changed nothing. Please report it \
                         with the seq below"
                .to_owned(),
        };
        let body = json!({
            "status": "failed",
            "code": error.code,
            "error": error.message,
            "suggestion": error.suggestion,
        });
        Draft {
            session_id: None,
            actor: command.actor.clone(),
            call: Call {
                tool: command.tool.clone(),
                arguments: recorded,
                idempotency_key: None,
                effects: None,
            },
            facts: Vec::new(),
            status: OutcomeStatus::Failed,
            error: Some(error),
            body,
            provenance: Provenance::rules("thinkledger.thinking"),
            texts,
            response_ref: None,
            replay_of: None,
            trace: command.trace.clone(),
        }
    }

    fn close(&mut self) {
        self.memory_index.close();
    }

    fn derive(&mut self) {
        self.memory_index.feed(&self.memory);
        self.memory.forget_changes();
    }

    fn counted_as(&self, command: &Command) -> &'static str {
        Self::counted_tool(&command.tool)
    }

    fn attach_log(&mut self, log: std::sync::Arc<dyn crate::ledger::SessionLog>) {
        self.state.load_bodies_from(bodies::from_log(log));
    }

    fn apply(&mut self, event: &Event, texts: &TextLookup<'_>) {
        self.state.apply(event, texts);
        self.deliberation.apply(event, texts);
        self.memory.apply(event, texts);
        self.lux.apply(event, texts);
        self.agent.apply(event, texts);
        self.cognition.apply(event, texts);
        std::sync::Arc::make_mut(&mut self.telemetry).apply(event);
        self.idempotency.apply(event);
    }

    fn view(&self) -> App {
        self.clone()
    }

    fn answer(view: &App, query: Query) -> Value {
        query(view)
    }

    fn state_version(&self) -> Option<&'static str> {
        Some(snapshot::STATE_VERSION)
    }

    fn save_view(view: &App) -> Result<Vec<u8>, String> {
        view.save_snapshot()
    }

    fn load_state(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.load_snapshot(bytes)
    }
}

pub(crate) type Outcome = Result<Decided, (Rejection, Option<SessionId>)>;

/// The refusal code (and omitted-arguments reason) of a call prepared without randomness.
pub const RANDOMNESS_UNAVAILABLE: &str = ErrorCode::RandomnessUnavailable.as_str();

impl App {
    /// The model plan of `command`'s tool, when it is a model-backed tool its caller may call:
    /// what *prepare* runs (against the latest published state) to take the model answers the
    /// decision will need.
    pub(crate) fn model_plan(command: &Command) -> Option<call::model::Plan> {
        let spec = registry::spec(&command.tool).filter(|_| command.tool_enabled)?;
        match spec.decide {
            call::Decide::WithModel(tool) => Some(tool.plan),
            _ => None,
        }
    }

    /// *Precompute*: work `command`'s decision can check instead of redoing, done on a
    /// published state before the command is sent to the writer ([`call::Precomputed`]).
    pub fn precompute(&self, command: &mut Command) {
        memory::precompute(self, command);
    }

    /// Whether `principal` already used idempotency `key`: a retry of a model-backed call then
    /// needs no model answers, because the recorded outcome will answer it.
    pub(crate) fn idempotency_key_used(&self, principal: &str, key: &str) -> bool {
        self.idempotency.contains(principal, key)
    }
}
