//! `LedgerRecorder`: the ledger as the engine's [`EventEmitter`] and [`StatePersistence`]. Each
//! step of a run is one of the operator's commands (`app::agent`) in the run's session, durable
//! before the loop goes on; a model answer goes to the writer with its exact exchange as the
//! call's model effect (taken before the writer: the decision checks it answers the run's
//! recorded conversation and decides from it). A run's state is read back from its events
//! (`projections::agent`), so a run cut short resumes from what was recorded.

use std::sync::Arc;

use serde_json::{Value, json};

use super::engine::elapsed_ms;
use super::error::ReasoningError;
use super::provider::{ModelSettings, wire_messages, wire_tools};
use super::state::{ReasoningState, RunStatus, StepKind};
use super::traits::{
    BoxFuture, EventEmitter, LlmMessage, ReasoningEvent, StatePersistence, ToolStatus,
};
use crate::app::{
    AGENT_END_TOOL, AGENT_INTENT_TOOL, AGENT_MODEL_FAILED_TOOL, AGENT_MODEL_TOOL, AGENT_NUDGE_TOOL,
    AGENT_START_TOOL, AGENT_TOOL_REQUESTED_TOOL, AGENT_TOOL_RETURNED_TOOL, App, Command,
};
use crate::effects::Effects;
use crate::events::{Actor, OutcomeStatus, SessionId};
use crate::ledger::LedgerHandle;
use crate::model::{Message, Role};
use crate::projections::agent::{AgentRun, Turn};

/// Records a run's steps in the ledger, and reads a run back.
pub struct LedgerRecorder {
    ledger: LedgerHandle<App>,
    effects: Arc<dyn Effects>,
    actor: Actor,
    session: SessionId,
    settings: ModelSettings,
    max_iterations: u32,
    breaker_threshold: u32,
}

impl LedgerRecorder {
    /// Records the run of `session` as `actor` (an operator's command: `transport` is `cli`),
    /// each command prepared with `effects`; model calls are recorded with `settings`, the
    /// sampling the model was asked with.
    pub fn new(
        ledger: LedgerHandle<App>,
        effects: Arc<dyn Effects>,
        actor: Actor,
        session: SessionId,
        settings: ModelSettings,
        bounds: (u32, u32),
    ) -> Self {
        Self {
            ledger,
            effects,
            actor,
            session,
            settings,
            max_iterations: bounds.0,
            breaker_threshold: bounds.1,
        }
    }

    /// The run's session.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    fn command(&self, tool: &str, arguments: Value) -> Command {
        let mut command = Command::tool_call(
            tool,
            arguments,
            self.actor.clone(),
            self.session.clone(),
            self.effects.prepare(),
        );
        command.admin = true;
        command
    }

    async fn submit(&self, command: Command) -> Result<(), ReasoningError> {
        let tool = command.tool.clone();
        let committed = self
            .ledger
            .submit(command)
            .await
            .map_err(|e| ReasoningError::Record(format!("{tool}: {e}")))?;
        if committed.status == OutcomeStatus::Ok {
            return Ok(());
        }
        let (code, message) = committed
            .error
            .map(|e| (e.code, e.message))
            .unwrap_or_default();
        Err(ReasoningError::Record(format!(
            "{tool} was refused ({code}: {message}) as event {}",
            committed.seq
        )))
    }

    fn step(&self, tool: &str, mut arguments: Value) -> Command {
        arguments["sessionId"] = json!(self.session);
        self.command(tool, arguments)
    }

    async fn record(&self, event: &ReasoningEvent<'_>) -> Result<(), ReasoningError> {
        let command = match event {
            ReasoningEvent::RunStarted { history, tools } => self.command(
                AGENT_START_TOOL,
                json!({
                    "history": serde_json::to_string(&wire_messages(history)).unwrap_or_default(),
                    "tools": tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
                    "maxIterations": self.max_iterations,
                    "breakerThreshold": self.breaker_threshold,
                }),
            ),
            // Recorded with its answer (the exchange holds the request); a request that never
            // came back leaves no event, and a resumed run asks again.
            ReasoningEvent::ModelRequested { .. } => return Ok(()),
            ReasoningEvent::ModelResponded {
                iteration,
                tools,
                response,
                ..
            } => {
                let Some(outcome) = &response.exchange else {
                    return Err(ReasoningError::Record(
                        "a model answer without the provider's exchange cannot be recorded"
                            .to_owned(),
                    ));
                };
                let mut command = self.step(
                    AGENT_MODEL_TOOL,
                    json!({
                        "iteration": iteration,
                        "tools": serde_json::to_value(wire_tools(tools)).unwrap_or_default(),
                        "model": self.settings.model,
                        "temperature": self.settings.temperature,
                        "maxTokens": self.settings.max_tokens,
                    }),
                );
                command.prepared.model.answers.push((**outcome).clone());
                command
            }
            ReasoningEvent::ModelFailed { iteration, error } => self.step(
                AGENT_MODEL_FAILED_TOOL,
                json!({ "iteration": iteration, "error": error }),
            ),
            ReasoningEvent::ToolRequested { iteration, call } => self.step(
                AGENT_TOOL_REQUESTED_TOOL,
                json!({
                    "iteration": iteration,
                    "callId": call.id,
                    "tool": call.name,
                    "arguments": call.arguments,
                    "initial": *iteration == 0,
                }),
            ),
            ReasoningEvent::ToolReturned {
                iteration,
                call,
                outcome,
                attempts,
                elapsed,
                tripped,
            } => {
                let shown = match outcome.status {
                    ToolStatus::Succeeded => outcome.output.clone(),
                    ToolStatus::Failed => format!("Error: {}", outcome.output),
                };
                self.step(
                    AGENT_TOOL_RETURNED_TOOL,
                    json!({
                        "iteration": iteration,
                        "callId": call.id,
                        "tool": call.name,
                        "status": match outcome.status {
                            ToolStatus::Succeeded => "succeeded",
                            ToolStatus::Failed => "failed",
                        },
                        "errorCode": outcome.error_code,
                        "result": shown,
                        "attempts": attempts,
                        "elapsedMs": elapsed_ms(*elapsed),
                        "toolSeq": outcome.record.as_ref().map(|r| r.seq),
                        "tripped": tripped,
                    }),
                )
            }
            // Recorded with the failure that tripped it (the ToolReturned just before): the
            // breaker's fact sits in the same event when the engine says it tripped.
            ReasoningEvent::BreakerTripped { .. } => return Ok(()),
            ReasoningEvent::IntentDetected {
                iteration,
                analysis,
            } => self.step(
                AGENT_INTENT_TOOL,
                json!({
                    "iteration": iteration,
                    "intent": analysis.intent.as_str(),
                    "score": f64::from(analysis.score),
                    "matched": analysis.matched,
                    "method": analysis.method,
                }),
            ),
            ReasoningEvent::Nudged { iteration, message } => self.step(
                AGENT_NUDGE_TOOL,
                json!({ "iteration": iteration, "message": message }),
            ),
            ReasoningEvent::RunEnded {
                status,
                answer,
                reason,
                ..
            } => self.step(
                AGENT_END_TOOL,
                json!({ "status": status.as_str(), "answer": answer, "reason": reason }),
            ),
        };
        self.submit(command).await
    }
}

impl EventEmitter for LedgerRecorder {
    fn emit<'a>(
        &'a self,
        event: &'a ReasoningEvent<'a>,
    ) -> BoxFuture<'a, Result<(), ReasoningError>> {
        Box::pin(self.record(event))
    }
}

/// The engine's conversation from the ledger's wire messages.
fn engine_messages(messages: Vec<Message>) -> Vec<LlmMessage> {
    use super::traits::{LlmRole, LlmToolCall};
    messages
        .into_iter()
        .map(|m| LlmMessage {
            role: match m.role {
                Role::System => LlmRole::System,
                Role::User => LlmRole::User,
                Role::Assistant => LlmRole::Assistant,
                Role::Tool => LlmRole::Tool,
            },
            content: m.content.unwrap_or_default(),
            tool_calls: m
                .tool_calls
                .into_iter()
                .map(|c| LlmToolCall {
                    id: c.id,
                    name: c.function.name,
                    arguments: c.function.arguments,
                })
                .collect(),
            tool_call_id: m.tool_call_id,
        })
        .collect()
}

/// A run's state as its events left it.
pub fn state_of(session: &SessionId, run: &AgentRun) -> Result<ReasoningState, ReasoningError> {
    let messages =
        crate::app::agent::conversation_messages(run).map_err(ReasoningError::Persistence)?;
    let mut state = ReasoningState::new(session.as_str(), engine_messages(messages));
    state.iterations = run.iterations;
    state.nudges = run.nudges;
    state.tokens.prompt_tokens = run.tokens.prompt_tokens;
    state.tokens.completion_tokens = run.tokens.completion_tokens;
    state.tokens.total_tokens = run.tokens.total_tokens;
    state.tokens.unreported_calls = run.tokens.unreported_calls;
    state.interrupted_calls = run.open_calls.iter().map(|(id, _)| id.clone()).collect();
    for turn in &run.conversation {
        match turn {
            Turn::Answer { .. } => state.add_step(StepKind::ModelCall { tool_calls: 0 }),
            Turn::Nudge { .. } => state.add_step(StepKind::Nudge),
            _ => {}
        }
    }
    if let Some(end) = &run.end {
        let status = RunStatus::parse(&end.status).unwrap_or(RunStatus::Failed);
        state.finish(
            status,
            end.reason.text.as_deref().unwrap_or("[erased]"),
            end.answer
                .as_ref()
                .map(|a| a.text.as_deref().unwrap_or("[erased]").to_owned()),
        );
    }
    Ok(state)
}

impl LedgerRecorder {
    /// The recorded run of this recorder's session.
    pub async fn run(&self) -> Result<Option<AgentRun>, ReasoningError> {
        let session = self.session.clone();
        let answer = self
            .ledger
            .query(Box::new(move |app: &App| {
                app.agent()
                    .run(&session)
                    .and_then(|r| serde_json::to_value(r).ok())
                    .unwrap_or(Value::Null)
            }))
            .await
            .map_err(|e| ReasoningError::Persistence(e.to_string()))?;
        if answer.is_null() {
            return Ok(None);
        }
        serde_json::from_value(answer)
            .map(Some)
            .map_err(|e| ReasoningError::Persistence(e.to_string()))
    }
}

impl StatePersistence for LedgerRecorder {
    /// Every step is recorded as it happens; saving checks the ledger holds the run's end.
    fn save_state<'a>(
        &'a self,
        state: &'a ReasoningState,
    ) -> BoxFuture<'a, Result<(), ReasoningError>> {
        Box::pin(async move {
            let run = self.run().await?.ok_or_else(|| {
                ReasoningError::Persistence(format!("the ledger holds no run {}", state.run_id))
            })?;
            match &run.end {
                Some(end)
                    if end.status == state.status.as_str()
                        && run.iterations == state.iterations =>
                {
                    Ok(())
                }
                _ => Err(ReasoningError::Persistence(format!(
                    "the ledger's record of run {} does not match its state ({} after {} model call(s))",
                    state.run_id,
                    state.status.as_str(),
                    state.iterations
                ))),
            }
        })
    }

    fn load_state<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<ReasoningState>, ReasoningError>> {
        Box::pin(async move {
            if run_id != self.session.as_str() {
                return Err(ReasoningError::Persistence(format!(
                    "this recorder keeps run {}, not {run_id}",
                    self.session
                )));
            }
            match self.run().await? {
                Some(run) => state_of(&self.session, &run).map(Some),
                None => Ok(None),
            }
        })
    }
}
