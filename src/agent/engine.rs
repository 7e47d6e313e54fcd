//! `ReasoningEngine::process`: the seed's loop. Call the model with the conversation, hand its
//! text to the stream handler, run the tools it asks for through the orchestrator, read the
//! intent of an answer without tool calls, nudge a plan without action, and stop on a final
//! answer, a question, ambiguity, a spent bound or a tripped breaker, saying which.
//!
//! Every step is emitted before the loop goes on; an emitter's error stops the run (a step the
//! record does not hold is never followed by another). Owns: the loop and its decisions. Must
//! not know the provider, the ledger or MCP.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::config::ReasoningConfig;
use super::error::ReasoningError;
use super::orchestration::ToolOrchestrator;
use super::state::{ReasoningState, RunStatus, StepKind};
use super::traits::{
    DetectedIntent, EventEmitter, IntentAnalyzer, LlmClient, LlmMessage, LlmRole, LlmToolCall,
    MetricsCollector, NoEvents, NoMetrics, NoStream, ReasoningEvent, StatePersistence,
    StreamHandler, ToolDefinition, ToolExecutor, ToolOutcome, ToolStatus,
};

/// Drives one run at a time over a model, an intent analyzer and tools.
pub struct ReasoningEngine<LC: LlmClient + 'static, IA: IntentAnalyzer + 'static> {
    config: ReasoningConfig,
    llm: LC,
    intent: IA,
    tools: ToolOrchestrator,
    stream: Arc<dyn StreamHandler>,
    events: Arc<dyn EventEmitter>,
    persistence: Option<Arc<dyn StatePersistence>>,
    metrics: Arc<dyn MetricsCollector>,
}

/// Why the loop stops after a step, if it does.
type Stop = Option<(RunStatus, String, Option<String>)>;

impl<LC: LlmClient + 'static, IA: IntentAnalyzer + 'static> ReasoningEngine<LC, IA> {
    /// An engine over `llm`, `intent` and the tools of `executor`, bounded by `config`; it
    /// streams nowhere, records nothing and keeps no metrics until told otherwise.
    pub fn new(
        config: ReasoningConfig,
        llm: LC,
        intent: IA,
        executor: Arc<dyn ToolExecutor>,
    ) -> Self {
        let tools = ToolOrchestrator::new(executor, &config);
        Self {
            config,
            llm,
            intent,
            tools,
            stream: Arc::new(NoStream),
            events: Arc::new(NoEvents),
            persistence: None,
            metrics: Arc::new(NoMetrics),
        }
    }

    /// Hands the model's answers, as they arrive, to `stream`.
    #[must_use]
    pub fn with_stream(mut self, stream: Arc<dyn StreamHandler>) -> Self {
        self.stream = stream;
        self
    }

    /// Tells `events` of every step.
    #[must_use]
    pub fn with_events(mut self, events: Arc<dyn EventEmitter>) -> Self {
        self.events = events;
        self
    }

    /// Saves the final state through `persistence`.
    #[must_use]
    pub fn with_persistence(mut self, persistence: Arc<dyn StatePersistence>) -> Self {
        self.persistence = Some(persistence);
        self
    }

    /// Reports durations and counts to `metrics`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<dyn MetricsCollector>) -> Self {
        self.metrics = metrics;
        self
    }

    /// The model the engine asks.
    pub fn llm(&self) -> &LC {
        &self.llm
    }

    /// The orchestrator the engine runs tools through.
    pub fn tools(&self) -> &ToolOrchestrator {
        &self.tools
    }

    /// Runs the loop over `history` (the conversation so far, ending with the person's
    /// message) until it ends; the state says how. `Err` only when a step could not be
    /// recorded or the history cannot start a run.
    pub async fn process(
        &self,
        run_id: &str,
        history: Vec<LlmMessage>,
    ) -> Result<ReasoningState, ReasoningError> {
        let Some(task) = history
            .iter()
            .rev()
            .find(|m| m.role == LlmRole::User)
            .map(|m| m.content.clone())
        else {
            return Err(ReasoningError::InvalidInput(
                "the conversation has no message from the person".to_owned(),
            ));
        };
        if task.trim().is_empty() {
            return Err(ReasoningError::InvalidInput(
                "the person's message is empty".to_owned(),
            ));
        }
        let tools = self.tools.definitions();
        let mut state = ReasoningState::new(run_id, history);
        self.emit(&ReasoningEvent::RunStarted {
            history: &state.history,
            tools: &tools,
        })
        .await?;
        if let Some(name) = self.config.initial_analysis_tool.clone() {
            let call = LlmToolCall {
                id: "initial_analysis".to_owned(),
                name,
                arguments: serde_json::json!({ "input": task }).to_string(),
            };
            // Shown to the model as a call it made, answered by the tool's result.
            state
                .history
                .push(LlmMessage::assistant("", vec![call.clone()]));
            if let Some(stop) = self.run_tool(&mut state, &call).await? {
                return self.end(state, stop).await;
            }
        }
        self.drive(state, &tools).await
    }

    /// Goes on with a run cut short (its state as persistence kept it), from where it stopped.
    ///
    /// The model's last tool calls that have no result yet are finished first: a call whose
    /// request was recorded (`ReasoningState::interrupted_calls`) is reported failed
    /// (`interrupted`: it may or may not have taken effect, so it is not run twice), one never
    /// requested is run now.
    pub async fn resume(
        &self,
        mut state: ReasoningState,
    ) -> Result<ReasoningState, ReasoningError> {
        if state.is_finished() {
            return Ok(state);
        }
        for call in unanswered_calls(&state.history) {
            let stop = if state.interrupted_calls.contains(&call.id) {
                self.interrupted(&mut state, &call).await?
            } else {
                self.run_tool(&mut state, &call).await?
            };
            if let Some(stop) = stop {
                return self.end(state, stop).await;
            }
        }
        state.interrupted_calls.clear();
        let tools = self.tools.definitions();
        self.drive(state, &tools).await
    }

    /// Reports a tool call cut short with its run as failed, without running it again.
    async fn interrupted(
        &self,
        state: &mut ReasoningState,
        call: &LlmToolCall,
    ) -> Result<Stop, ReasoningError> {
        let outcome = ToolOutcome::failed(
            "interrupted",
            "the run was cut short while this call ran; whether it took effect is unknown, \
             so it was not run again",
        );
        self.emit(&ReasoningEvent::ToolReturned {
            iteration: state.iterations,
            call,
            outcome: &outcome,
            attempts: 0,
            elapsed: Duration::ZERO,
            tripped: None,
        })
        .await?;
        state.add_step(StepKind::ToolCall {
            tool: call.name.clone(),
            succeeded: false,
        });
        state.history.push(LlmMessage::tool_result(
            &call.id,
            &format!("Error: {}", outcome.output),
        ));
        Ok(None)
    }

    async fn drive(
        &self,
        mut state: ReasoningState,
        tools: &[ToolDefinition],
    ) -> Result<ReasoningState, ReasoningError> {
        let started = Instant::now();
        loop {
            if let Some(stop) = self.spent(&state, started) {
                return self.end(state, stop).await;
            }
            state.iterations += 1;
            let iteration = state.iterations;
            self.emit(&ReasoningEvent::ModelRequested {
                iteration,
                messages: &state.history,
            })
            .await?;
            let asked = Instant::now();
            let answer = match self.config.max_duration {
                Some(limit) => {
                    let left = limit.saturating_sub(started.elapsed());
                    tokio::time::timeout(
                        left,
                        self.llm.stream(&state.history, tools, &*self.stream),
                    )
                    .await
                    .unwrap_or_else(|_| {
                        Err(ReasoningError::Timeout {
                            what: "the model call".to_owned(),
                            after: left,
                        })
                    })
                }
                None => self.llm.stream(&state.history, tools, &*self.stream).await,
            };
            self.metrics.record_duration("model_call", asked.elapsed());
            let response = match answer {
                Ok(response) => response,
                Err(error) => {
                    let message = error.to_string();
                    self.metrics.increment("model_failures");
                    self.emit(&ReasoningEvent::ModelFailed {
                        iteration,
                        error: &message,
                    })
                    .await?;
                    state.add_step(StepKind::ModelFailed);
                    let status = if matches!(error, ReasoningError::Timeout { .. }) {
                        RunStatus::BudgetExhausted
                    } else {
                        RunStatus::Failed
                    };
                    return self.end(state, (status, message, None)).await;
                }
            };
            self.emit(&ReasoningEvent::ModelResponded {
                iteration,
                messages: &state.history,
                tools,
                response: &response,
            })
            .await?;
            state.tokens.add(response.usage);
            state.add_step(StepKind::ModelCall {
                tool_calls: u32::try_from(response.tool_calls.len()).unwrap_or(u32::MAX),
            });
            state.history.push(LlmMessage::assistant(
                &response.text,
                response.tool_calls.clone(),
            ));
            if !response.tool_calls.is_empty() {
                for call in &response.tool_calls {
                    if let Some(stop) = self.run_tool(&mut state, call).await? {
                        return self.end(state, stop).await;
                    }
                }
                continue;
            }
            if let Some(mut stop) = self.read_answer(&mut state, &response.text).await? {
                if stop.0 == RunStatus::Completed
                    && response.finish_reason.as_deref() == Some("length")
                {
                    // A final answer cut off at its token limit is no final answer.
                    stop.0 = RunStatus::BudgetExhausted;
                    stop.1 = "the model's final answer was cut off at its token limit \
                              (finish_reason \"length\"): raise --max-tokens and resume the run"
                        .to_owned();
                }
                return self.end(state, stop).await;
            }
        }
    }

    /// Why the run may not ask the model again, if it may not.
    fn spent(&self, state: &ReasoningState, started: Instant) -> Stop {
        if state.iterations >= self.config.max_iterations {
            return Some((
                RunStatus::MaxIterations,
                format!(
                    "{} model call(s) made, the most this run may make, without a final answer",
                    state.iterations
                ),
                None,
            ));
        }
        if let Some(limit) = self.config.max_total_tokens
            && state.tokens.total_tokens >= limit
        {
            return Some((
                RunStatus::BudgetExhausted,
                format!(
                    "{} tokens used of a budget of {limit} (calls without reported usage: {})",
                    state.tokens.total_tokens, state.tokens.unreported_calls
                ),
                None,
            ));
        }
        if let Some(limit) = self.config.max_duration
            && started.elapsed() >= limit
        {
            return Some((
                RunStatus::BudgetExhausted,
                format!("the run's time budget of {} ms is spent", limit.as_millis()),
                None,
            ));
        }
        None
    }

    /// Runs one tool call and adds its result to the conversation; a stop when the breaker
    /// tripped.
    async fn run_tool(
        &self,
        state: &mut ReasoningState,
        call: &LlmToolCall,
    ) -> Result<Stop, ReasoningError> {
        let iteration = state.iterations;
        self.emit(&ReasoningEvent::ToolRequested { iteration, call })
            .await?;
        let run = self.tools.run(call).await;
        self.metrics.record_duration("tool_call", run.elapsed);
        if run.outcome.status == ToolStatus::Failed {
            self.metrics.increment("tool_failures");
        }
        self.emit(&ReasoningEvent::ToolReturned {
            iteration,
            call,
            outcome: &run.outcome,
            attempts: run.attempts,
            elapsed: run.elapsed,
            tripped: run.tripped,
        })
        .await?;
        state.add_step(StepKind::ToolCall {
            tool: call.name.clone(),
            succeeded: run.outcome.status == ToolStatus::Succeeded,
        });
        let shown = match run.outcome.status {
            ToolStatus::Succeeded => run.outcome.output.clone(),
            ToolStatus::Failed => format!("Error: {}", run.outcome.output),
        };
        state
            .history
            .push(LlmMessage::tool_result(&call.id, &shown));
        let Some(failures) = run.tripped else {
            return Ok(None);
        };
        let code = run.outcome.error_code.clone().unwrap_or_default();
        self.metrics.increment("breaker_trips");
        self.emit(&ReasoningEvent::BreakerTripped {
            iteration,
            tool: &call.name,
            error_code: &code,
            failures,
        })
        .await?;
        Ok(Some((
            RunStatus::StoppedByBreaker,
            format!(
                "{} failed {failures} times in a row with {code}; it is not called again",
                call.name
            ),
            None,
        )))
    }

    /// Reads an answer without tool calls: nudges a plan, or says how the run ends.
    async fn read_answer(
        &self,
        state: &mut ReasoningState,
        text: &str,
    ) -> Result<Stop, ReasoningError> {
        let iteration = state.iterations;
        if text.trim().is_empty() {
            return Ok(Some((
                RunStatus::Failed,
                "the model answered with neither text nor a tool call".to_owned(),
                None,
            )));
        }
        let analysis = match self.intent.analyze_intent(text) {
            Ok(analysis) => analysis,
            Err(error) => {
                return Ok(Some((
                    RunStatus::NeedsInput,
                    format!("{error}; the answer is given as it is, unclassified"),
                    Some(text.to_owned()),
                )));
            }
        };
        self.emit(&ReasoningEvent::IntentDetected {
            iteration,
            analysis: &analysis,
        })
        .await?;
        state.add_step(StepKind::IntentAnalysis {
            intent: analysis.intent.as_str().to_owned(),
        });
        let answer = Some(text.to_owned());
        Ok(match analysis.intent {
            DetectedIntent::ProvidesFinalAnswer => Some((
                RunStatus::Completed,
                "the model gave a final answer".to_owned(),
                answer,
            )),
            DetectedIntent::GeneralConversation => Some((
                RunStatus::Completed,
                "the model answered conversationally; nothing more to do".to_owned(),
                answer,
            )),
            DetectedIntent::AsksClarifyingQuestion => Some((
                RunStatus::NeedsInput,
                "the model asked a question".to_owned(),
                answer,
            )),
            DetectedIntent::Ambiguous => Some((
                RunStatus::NeedsInput,
                "the answer's intent is ambiguous; the person must judge it".to_owned(),
                answer,
            )),
            DetectedIntent::ProvidesPlanWithoutExplicitAction => {
                if state.nudges >= self.config.max_nudges {
                    Some((
                        RunStatus::NeedsInput,
                        format!(
                            "the model planned without acting after {} nudge(s)",
                            state.nudges
                        ),
                        answer,
                    ))
                } else if state.iterations >= self.config.max_iterations {
                    None // the bound ends the run at the top of the loop
                } else {
                    let message = self.config.nudge_message.clone();
                    self.emit(&ReasoningEvent::Nudged {
                        iteration,
                        message: &message,
                    })
                    .await?;
                    state.nudges += 1;
                    state.add_step(StepKind::Nudge);
                    state.history.push(LlmMessage::user(&message));
                    None
                }
            }
        })
    }

    /// Ends the run: the end is emitted, the state saved.
    async fn end(
        &self,
        mut state: ReasoningState,
        (status, reason, answer): (RunStatus, String, Option<String>),
    ) -> Result<ReasoningState, ReasoningError> {
        state.finish(status, reason, answer);
        self.emit(&ReasoningEvent::RunEnded {
            status: state.status,
            iterations: state.iterations,
            answer: state.answer.as_deref(),
            reason: &state.reason,
        })
        .await?;
        self.metrics.increment(status.as_str());
        if let Some(persistence) = &self.persistence {
            persistence.save_state(&state).await?;
        }
        Ok(state)
    }

    async fn emit(&self, event: &ReasoningEvent<'_>) -> Result<(), ReasoningError> {
        self.events.emit(event).await
    }
}

/// The tool calls of the conversation's last assistant turn that no tool result answers yet.
fn unanswered_calls(history: &[LlmMessage]) -> Vec<LlmToolCall> {
    let Some(at) = history.iter().rposition(|m| m.role == LlmRole::Assistant) else {
        return Vec::new();
    };
    let answered: Vec<&str> = history[at + 1..]
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    history[at]
        .tool_calls
        .iter()
        .filter(|c| !answered.contains(&c.id.as_str()))
        .cloned()
        .collect()
}

/// How long ago `started` was, for reports.
pub fn elapsed_ms(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}
