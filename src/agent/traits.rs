//! The engine's seams (the sagitta `reasoning-engine` traits): what it asks of a model, of
//! tools, of whoever watches the stream and the events, of an intent analyzer, of persistence
//! and of metrics; and the plain types that cross them.
//!
//! Owns: the contract only. Must not know any implementation (the provider, the ledger, MCP):
//! those live beside it (`provider`, `ledger_tools`, `intent`, `recorder`, `mcp`).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::ReasoningError;
use super::state::{ReasoningState, RunStatus};
use crate::model::ChatOutcome;

/// A future the engine can hold across `dyn` seams.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Who speaks a message of the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmRole {
    /// Instructions.
    System,
    /// The person (and the engine's nudges).
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmToolCall {
    /// The call's id, which its result answers.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the model wrote them (a JSON text, possibly malformed).
    pub arguments: String,
}

/// One message of the conversation the engine sends the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmMessage {
    /// Who speaks.
    pub role: LlmRole,
    /// The text ("" for an assistant turn that only calls tools).
    pub content: String,
    /// The tools the assistant called in this turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<LlmToolCall>,
    /// For a tool's result: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl LlmMessage {
    fn text(role: LlmRole, content: &str) -> Self {
        Self {
            role,
            content: content.to_owned(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// Instructions.
    pub fn system(content: &str) -> Self {
        Self::text(LlmRole::System, content)
    }

    /// A person's message.
    pub fn user(content: &str) -> Self {
        Self::text(LlmRole::User, content)
    }

    /// The model's turn: its text and the tools it called.
    pub fn assistant(content: &str, tool_calls: Vec<LlmToolCall>) -> Self {
        Self {
            tool_calls,
            ..Self::text(LlmRole::Assistant, content)
        }
    }

    /// A tool's result for the call `id`.
    pub fn tool_result(id: &str, content: &str) -> Self {
        Self {
            tool_call_id: Some(id.to_owned()),
            ..Self::text(LlmRole::Tool, content)
        }
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Its name, as the model calls it.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// A JSON Schema of its arguments (an object).
    pub parameters: Value,
}

/// Token counts of one model call, as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

/// A piece of the model's answer as it arrives.
#[derive(Debug, Clone, PartialEq)]
pub enum LlmStreamChunk {
    /// Text, in order.
    Text(String),
    /// A complete tool call.
    ToolCall(LlmToolCall),
    /// The answer is complete.
    Finished {
        /// Why generation stopped (`stop`, `length`, `tool_calls`), when the provider said.
        finish_reason: Option<String>,
    },
}

/// The model's whole answer to one call.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmResponse {
    /// The text ("" when it only called tools).
    pub text: String,
    /// The tools it called, in order.
    pub tool_calls: Vec<LlmToolCall>,
    /// Why generation stopped, when the provider said.
    pub finish_reason: Option<String>,
    /// Token counts, when the provider reported them (`None` is not zero: a token budget
    /// cannot count what was not reported, and the run's totals say how many calls were not).
    pub usage: Option<LlmUsage>,
    /// The model that answered, as the provider reported it.
    pub model: Option<String>,
    /// thinkledger's record of the call (the exact request and response bytes), when the answer
    /// came from its provider client: what a ledger records and a re-execution decides from.
    pub exchange: Option<Box<ChatOutcome>>,
}

/// A model: the engine's only way to one (`generate` for a whole answer, `stream` for one that
/// is handed out as it arrives).
pub trait LlmClient: Send + Sync {
    /// One answer to `messages`, offered `tools`.
    fn generate<'a>(
        &'a self,
        messages: &'a [LlmMessage],
        tools: &'a [ToolDefinition],
    ) -> BoxFuture<'a, Result<LlmResponse, ReasoningError>>;

    /// One answer, each piece handed to `handler` as it arrives, then the whole. The default
    /// takes the whole answer first and hands it out in one piece each (for clients that
    /// cannot stream).
    fn stream<'a>(
        &'a self,
        messages: &'a [LlmMessage],
        tools: &'a [ToolDefinition],
        handler: &'a dyn StreamHandler,
    ) -> BoxFuture<'a, Result<LlmResponse, ReasoningError>> {
        Box::pin(async move {
            let response = self.generate(messages, tools).await?;
            if !response.text.is_empty() {
                handler.handle_chunk(&LlmStreamChunk::Text(response.text.clone()));
            }
            for call in &response.tool_calls {
                handler.handle_chunk(&LlmStreamChunk::ToolCall(call.clone()));
            }
            handler.handle_chunk(&LlmStreamChunk::Finished {
                finish_reason: response.finish_reason.clone(),
            });
            Ok(response)
        })
    }
}

/// Whether a tool did what it was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// It answered.
    Succeeded,
    /// It refused or failed; the output says why.
    Failed,
}

/// Where a tool call was recorded, when the executor records calls (thinkledger's own tools:
/// each call is its own ledger event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolRecord {
    /// The event's sequence number.
    pub seq: u64,
    /// The event's hash.
    pub event_hash: String,
}

/// What a tool answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutcome {
    /// Whether it succeeded. A failure is reported as one, to the model and in the run.
    pub status: ToolStatus,
    /// What the model is shown: the result, or the failure with its reason.
    pub output: String,
    /// A short machine-readable reason of a failure (`invalid_arguments`, `timed_out`, …),
    /// which the breaker compares: two failures "fail the same way" when their codes match.
    pub error_code: Option<String>,
    /// Where the call was recorded, if the executor records calls.
    pub record: Option<ToolRecord>,
}

impl ToolOutcome {
    /// A successful answer.
    pub fn succeeded(output: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Succeeded,
            output: output.into(),
            error_code: None,
            record: None,
        }
    }

    /// A failure with its code and what the model is told.
    pub fn failed(code: impl Into<String>, output: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Failed,
            output: output.into(),
            error_code: Some(code.into()),
            record: None,
        }
    }

    /// Where the call was recorded.
    #[must_use]
    pub fn recorded_as(mut self, record: ToolRecord) -> Self {
        self.record = Some(record);
        self
    }
}

/// Runs the tools the model may call.
pub trait ToolExecutor: Send + Sync {
    /// The tools offered to the model.
    fn definitions(&self) -> Vec<ToolDefinition>;

    /// Runs `name` with `arguments`. `Ok` with a failed outcome is the tool's own refusal or
    /// failure (not retried: it would fail the same way); `Err` is a failure to reach it
    /// (retried by the orchestrator).
    fn execute<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Result<ToolOutcome, ReasoningError>>;
}

/// Takes the model's answer as it arrives (a terminal, a UI).
pub trait StreamHandler: Send + Sync {
    /// One piece of the answer.
    fn handle_chunk(&self, chunk: &LlmStreamChunk);
}

/// A stream handler that drops everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoStream;

impl StreamHandler for NoStream {
    fn handle_chunk(&self, _chunk: &LlmStreamChunk) {}
}

/// What a text-only answer means for the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetectedIntent {
    /// The task is answered.
    ProvidesFinalAnswer,
    /// The model says what it will do but calls no tool: nudge it.
    ProvidesPlanWithoutExplicitAction,
    /// The model asks the person something.
    AsksClarifyingQuestion,
    /// Small talk; nothing more to do.
    GeneralConversation,
    /// No prototype is close enough to say.
    Ambiguous,
}

impl DetectedIntent {
    /// The intent's name as the ledger records it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ProvidesFinalAnswer => "provides_final_answer",
            Self::ProvidesPlanWithoutExplicitAction => "provides_plan_without_explicit_action",
            Self::AsksClarifyingQuestion => "asks_clarifying_question",
            Self::GeneralConversation => "general_conversation",
            Self::Ambiguous => "ambiguous",
        }
    }
}

/// An intent and how sure the analyzer is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IntentAnalysis {
    pub intent: DetectedIntent,
    /// The analyzer's score of that intent (a cosine similarity for the embedding analyzer).
    pub score: f32,
    /// What the score was measured against (the nearest prototype phrase), when there is one.
    pub matched: Option<String>,
    /// How the intent was found (`embedding:<model>`, …).
    pub method: String,
}

/// Reads what a text-only answer means.
pub trait IntentAnalyzer: Send + Sync {
    /// The intent of `text`.
    fn analyze_intent(&self, text: &str) -> Result<IntentAnalysis, ReasoningError>;
}

/// One step of a run, as the engine reports it. Borrowed: an emitter copies what it keeps.
#[derive(Debug)]
pub enum ReasoningEvent<'a> {
    /// The run starts with this conversation, offering these tools.
    RunStarted {
        history: &'a [LlmMessage],
        tools: &'a [ToolDefinition],
    },
    /// The model is asked.
    ModelRequested {
        iteration: u32,
        messages: &'a [LlmMessage],
    },
    /// The model answered `messages` (the whole request), offered `tools`.
    ModelResponded {
        iteration: u32,
        messages: &'a [LlmMessage],
        tools: &'a [ToolDefinition],
        response: &'a LlmResponse,
    },
    /// The model could not be asked or did not answer.
    ModelFailed { iteration: u32, error: &'a str },
    /// A tool call is about to run.
    ToolRequested {
        iteration: u32,
        call: &'a LlmToolCall,
    },
    /// A tool call ended (after `attempts` tries, in `elapsed`); `tripped` when this failure
    /// tripped the breaker (how many identical failures in a row).
    ToolReturned {
        iteration: u32,
        call: &'a LlmToolCall,
        outcome: &'a ToolOutcome,
        attempts: u32,
        elapsed: Duration,
        tripped: Option<u32>,
    },
    /// A tool failed the same way `failures` times in a row: it is not called again.
    BreakerTripped {
        iteration: u32,
        tool: &'a str,
        error_code: &'a str,
        failures: u32,
    },
    /// A text-only answer was read as `analysis`.
    IntentDetected {
        iteration: u32,
        analysis: &'a IntentAnalysis,
    },
    /// The engine asked the model to act on its plan.
    Nudged { iteration: u32, message: &'a str },
    /// The run ended.
    RunEnded {
        status: RunStatus,
        iterations: u32,
        answer: Option<&'a str>,
        reason: &'a str,
    },
}

/// Hears every step. An error stops the run: a step that cannot be recorded is not taken
/// further (nothing may happen that the record does not show).
pub trait EventEmitter: Send + Sync {
    /// One step.
    fn emit<'a>(
        &'a self,
        event: &'a ReasoningEvent<'a>,
    ) -> BoxFuture<'a, Result<(), ReasoningError>>;
}

/// An emitter that records nothing (a library user who keeps no record).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoEvents;

impl EventEmitter for NoEvents {
    fn emit<'a>(
        &'a self,
        _event: &'a ReasoningEvent<'a>,
    ) -> BoxFuture<'a, Result<(), ReasoningError>> {
        Box::pin(async { Ok(()) })
    }
}

/// Keeps a run's state so a run cut short can go on.
pub trait StatePersistence: Send + Sync {
    /// Confirms `state` is kept (an implementation that records every step as it happens
    /// checks the record holds all of them).
    fn save_state<'a>(
        &'a self,
        state: &'a ReasoningState,
    ) -> BoxFuture<'a, Result<(), ReasoningError>>;

    /// The state of the run `run_id`, as far as it got; `None` when there is no such run.
    fn load_state<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<ReasoningState>, ReasoningError>>;
}

/// Operational measurements (durations and counts), never invented: only what the engine
/// timed or counted.
pub trait MetricsCollector: Send + Sync {
    /// How long something named `name` took.
    fn record_duration(&self, name: &str, elapsed: Duration);
    /// One more of `name`.
    fn increment(&self, name: &str);
}

/// A collector that keeps nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoMetrics;

impl MetricsCollector for NoMetrics {
    fn record_duration(&self, _name: &str, _elapsed: Duration) {}
    fn increment(&self, _name: &str) {}
}
