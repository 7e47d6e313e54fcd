//! The reasoning engine (the sagitta `reasoning-engine` design): an LLM ⇄ tools loop, bounded
//! and honest, with its seams as traits.
//!
//! [`ReasoningEngine::process`] takes a conversation and loops: it asks the model
//! ([`LlmClient`]), hands the answer to a [`StreamHandler`] as it arrives, runs the tools the
//! model calls through a [`ToolOrchestrator`] (timeouts, retries, and a breaker that stops a
//! tool failing the same way [`ReasoningConfig::breaker_threshold`] times), reads the intent of
//! an answer without tool calls ([`IntentAnalyzer`]), nudges a plan without action, and stops on
//! a final answer, a clarifying question, ambiguity, the iteration bound, a token or time
//! budget or the breaker. The [`ReasoningState`] it returns says how ([`RunStatus`]); a failed
//! tool is reported as failed, to the model and in the state. Every step goes to an
//! [`EventEmitter`] before the loop goes on.
//!
//! The core (`traits`, `config`, `state`, `error`, `orchestration`, `engine`, `metrics`) knows
//! no provider, ledger or protocol. Beside it sit the implementations thinkledger ships: the
//! model provider as an [`LlmClient`], thinkledger's own tools called through the ledger and
//! external MCP servers as [`ToolExecutor`]s, prototype phrases over the local embedder as an
//! [`IntentAnalyzer`], and the ledger as [`EventEmitter`] and [`StatePersistence`].
//!
//! Owns: the loop and those adapters. Must not know the transports (`server`) or the CLI.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use thinkledger::agent::{
//!     BoxFuture, DetectedIntent, IntentAnalysis, IntentAnalyzer, LlmClient, LlmMessage,
//!     LlmResponse, ReasoningConfig, ReasoningEngine, ReasoningError, RunStatus,
//!     ToolDefinition, ToolExecutor, ToolOutcome,
//! };
//!
//! /// A model behind some API of yours.
//! struct MyModel;
//! impl LlmClient for MyModel {
//!     fn generate<'a>(
//!         &'a self,
//!         _messages: &'a [LlmMessage],
//!         _tools: &'a [ToolDefinition],
//!     ) -> BoxFuture<'a, Result<LlmResponse, ReasoningError>> {
//!         Box::pin(async { Err(ReasoningError::Llm("connect me to a model".into())) })
//!     }
//! }
//!
//! /// Reads every answer as final.
//! struct Final;
//! impl IntentAnalyzer for Final {
//!     fn analyze_intent(&self, _text: &str) -> Result<IntentAnalysis, ReasoningError> {
//!         Ok(IntentAnalysis {
//!             intent: DetectedIntent::ProvidesFinalAnswer,
//!             score: 1.0,
//!             matched: None,
//!             method: "always_final".into(),
//!         })
//!     }
//! }
//!
//! /// One tool.
//! struct Clock;
//! impl ToolExecutor for Clock {
//!     fn definitions(&self) -> Vec<ToolDefinition> {
//!         vec![ToolDefinition {
//!             name: "now".into(),
//!             description: "The time".into(),
//!             parameters: serde_json::json!({"type": "object"}),
//!         }]
//!     }
//!     fn execute<'a>(
//!         &'a self,
//!         _name: &'a str,
//!         _arguments: &'a serde_json::Value,
//!     ) -> BoxFuture<'a, Result<ToolOutcome, ReasoningError>> {
//!         Box::pin(async { Ok(ToolOutcome::succeeded("12:00")) })
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let config = ReasoningConfig { max_iterations: 4, ..ReasoningConfig::default() };
//! let engine = ReasoningEngine::new(config, MyModel, Final, Arc::new(Clock));
//! let state = engine
//!     .process("run-1", vec![LlmMessage::user("What time is it?")])
//!     .await?;
//! // The model above cannot be reached: the run says so instead of pretending.
//! assert_eq!(state.status, RunStatus::Failed);
//! assert_eq!(state.iterations, 1);
//! # Ok::<(), ReasoningError>(())
//! # }).unwrap();
//! ```

mod config;
mod engine;
mod error;
mod intent;
mod ledger_tools;
mod mcp;
mod metrics;
mod orchestration;
mod provider;
mod recorder;
mod state;
mod traits;

pub use config::ReasoningConfig;
pub use engine::{ReasoningEngine, elapsed_ms};
pub use error::ReasoningError;
pub use intent::EmbeddingIntentAnalyzer;
pub use ledger_tools::LedgerTools;
pub use mcp::{McpConfig, McpServerConfig, McpTools, ToolSet};
pub use metrics::InMemoryMetrics;
pub use orchestration::{ToolOrchestrator, ToolRun};
pub use provider::{ModelLlm, ModelSettings, chat_request, response_of, wire_messages, wire_tools};
pub use recorder::{LedgerRecorder, state_of};
pub use state::{ReasoningState, ReasoningStep, RunStatus, StepKind, TokenTotals};
pub use traits::{
    BoxFuture, DetectedIntent, EventEmitter, IntentAnalysis, IntentAnalyzer, LlmClient, LlmMessage,
    LlmResponse, LlmRole, LlmStreamChunk, LlmToolCall, LlmUsage, MetricsCollector, NoEvents,
    NoMetrics, NoStream, ReasoningEvent, StatePersistence, StreamHandler, ToolDefinition,
    ToolExecutor, ToolOutcome, ToolRecord, ToolStatus,
};
