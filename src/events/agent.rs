//! Facts of the reasoning engine's runs (`thinkledger agent`): a run started, the model asked
//! and answered, a tool requested and returned, a breaker tripped, an answer's intent read, a
//! nudge sent, the run ended.
//!
//! Pure data. Every text a person or a model wrote (the conversation, answers, tool arguments
//! and results, error messages that may echo them) is a [`TextRef`] (erasable); names, numbers,
//! statuses and codes are inline. The model calls themselves (request digest, usage, latency,
//! the exact bytes) are the call's recorded effects (`call.effects.modelCalls`).

use serde::{Deserialize, Serialize};

use super::{TextRef, TokenUsage};

/// A run began: the conversation it starts from and what bounds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRunStarted {
    /// The conversation (a JSON array of chat messages, as the model is sent them).
    pub history: TextRef,
    /// The tools offered to the model, by name.
    pub tools: Vec<String>,
    /// The most model calls the run may make.
    pub max_iterations: u32,
    /// Identical failures in a row that stop a tool.
    pub breaker_threshold: u32,
}

/// The model was asked (the conversation is the run's, as its facts build it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentModelRequested {
    /// The model call's number in the run, from 1.
    pub iteration: u32,
    /// How many messages it was sent.
    pub messages: u32,
}

/// The model answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentModelResponded {
    pub iteration: u32,
    /// The answer as a chat message (text and tool calls), JSON.
    pub response: TextRef,
    /// The model that answered, as the provider reported it.
    pub model: String,
    /// The tools it called, by name, in order.
    pub tool_calls: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Token counts, when the provider reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
}

/// The model could not be asked or did not answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentModelFailed {
    pub iteration: u32,
    /// What went wrong (may quote the provider, so erasable).
    pub error: TextRef,
}

/// A tool call is about to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentToolRequested {
    pub iteration: u32,
    /// The call's id, which its result answers.
    pub call_id: String,
    pub tool: String,
    /// The arguments as the model wrote them.
    pub arguments: TextRef,
    /// True for the run's initial analysis (asked by the engine, not the model).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub initial: bool,
}

/// A tool call ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentToolReturned {
    pub iteration: u32,
    pub call_id: String,
    pub tool: String,
    /// `succeeded` or `failed`.
    pub status: String,
    /// Why it failed, as a code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// What the model was shown.
    pub result: TextRef,
    /// Attempts made (0: the call could not be made).
    pub attempts: u32,
    /// Time spent, every attempt included, as measured by the engine.
    pub elapsed_ms: u64,
    /// The seq of the event that recorded the call itself, for thinkledger's own tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_seq: Option<u64>,
}

/// A tool failed the same way too many times in a row; it is not called again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentBreakerTripped {
    pub iteration: u32,
    pub tool: String,
    pub error_code: String,
    pub failures: u32,
}

/// An answer without tool calls was read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentIntentDetected {
    pub iteration: u32,
    /// `provides_final_answer`, `provides_plan_without_explicit_action`,
    /// `asks_clarifying_question`, `general_conversation` or `ambiguous`.
    pub intent: String,
    /// The analyzer's score (a cosine for the embedding analyzer).
    pub score: f64,
    /// The prototype phrase it was nearest to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched: Option<String>,
    /// How it was read (`embedding:<model>`).
    pub method: String,
}

/// The model was asked to act on its plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentNudged {
    pub iteration: u32,
    pub message: TextRef,
}

/// Tokens a run used (over the calls that reported usage).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentTokens {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// Model calls that reported no usage (not in the sums).
    pub unreported_calls: u32,
}

/// The run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRunEnded {
    /// `completed`, `max_iterations`, `budget_exhausted`, `failed`, `stopped_by_breaker` or
    /// `needs_input`.
    pub status: String,
    pub iterations: u32,
    /// The model's last text when the run ended on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<TextRef>,
    /// Why it ended, in words (may quote a provider's error, so erasable).
    pub reason: TextRef,
    pub tokens: AgentTokens,
}
