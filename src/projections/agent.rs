//! The reasoning engine's runs (`thinkledger agent`), folded from `events::agent` facts: per
//! session, the conversation as the model is sent it, how far the run got (iterations, nudges,
//! tool calls still open, the breaker's counts, tokens) and how it ended.
//!
//! A run cut short (a crash, a killed process) is exactly what its events say: a resumed run
//! goes on from this state. Texts are held with their commitment, so an erasure blanks them.
//! Holds no rules: statuses, intents and counts arrive decided.

use std::sync::Arc;

use imbl::HashMap;
use serde::{Deserialize, Serialize};

use crate::events::agent::{AgentRunEnded, AgentRunStarted, AgentTokens, AgentToolReturned};
use crate::events::{Event, Fact, SessionId, TextLookup, TextRef};

/// A text and its commitment; `None` once erased (or never stored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunText {
    pub commitment: String,
    pub text: Option<Arc<str>>,
}

impl RunText {
    fn of(text_ref: &TextRef, texts: &TextLookup<'_>) -> Self {
        Self {
            commitment: text_ref.commitment.clone(),
            text: texts(text_ref),
        }
    }

    fn erase_if(&mut self, commitments: &[String]) {
        if commitments.contains(&self.commitment) {
            self.text = None;
        }
    }
}

/// One part of a run's conversation, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Turn {
    /// The conversation the run started from: a JSON array of chat messages.
    Start { messages: RunText },
    /// The model's answer: one chat message, JSON.
    Answer { message: RunText },
    /// A tool call the engine made itself (the initial analysis), as an assistant turn.
    InitialCall {
        call_id: String,
        tool: String,
        arguments: RunText,
    },
    /// A tool's result, answering `call_id`.
    ToolResult { call_id: String, result: RunText },
    /// A nudge from the engine.
    Nudge { message: RunText },
}

impl Turn {
    fn erase(&mut self, commitments: &[String]) {
        match self {
            Turn::Start { messages } => messages.erase_if(commitments),
            Turn::Answer { message } | Turn::Nudge { message } => message.erase_if(commitments),
            Turn::InitialCall { arguments, .. } => arguments.erase_if(commitments),
            Turn::ToolResult { result, .. } => result.erase_if(commitments),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEnd {
    pub status: String,
    pub answer: Option<RunText>,
    pub reason: RunText,
}

/// A tool's current run of identical failures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureStreak {
    pub tool: String,
    pub error_code: String,
    pub failures: u32,
}

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRun {
    /// The tools offered, by name.
    pub tools: Vec<String>,
    pub max_iterations: u32,
    pub breaker_threshold: u32,
    pub conversation: Vec<Turn>,
    /// Model calls answered or failed.
    pub iterations: u32,
    pub nudges: u32,
    /// Tool calls requested and not yet returned: (call id, tool).
    pub open_calls: Vec<(String, String)>,
    /// Per tool, its failures in a row (cleared by a success).
    pub streaks: Vec<FailureStreak>,
    pub tokens: AgentTokens,
    /// Events of the run.
    pub steps: u32,
    /// Set once the run ended.
    pub end: Option<RunEnd>,
}

/// Every run, by session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentState {
    runs: HashMap<SessionId, Arc<AgentRun>>,
}

impl AgentState {
    /// The run of session `id`.
    pub fn run(&self, id: &SessionId) -> Option<&AgentRun> {
        self.runs.get(id).map(AsRef::as_ref)
    }

    /// Every run's session, in no order.
    pub fn sessions(&self) -> impl Iterator<Item = &SessionId> {
        self.runs.keys()
    }

    /// Folds one event. Cannot fail.
    pub fn apply(&mut self, event: &Event, texts: &TextLookup<'_>) {
        for fact in &event.facts {
            if let Fact::TextsErased { commitments, .. } = fact {
                let ids: Vec<SessionId> = self.runs.keys().cloned().collect();
                for id in ids {
                    if let Some(run) = self.runs.get_mut(&id) {
                        for turn in &mut Arc::make_mut(run).conversation {
                            turn.erase(commitments);
                        }
                    }
                }
                continue;
            }
            let Some(id) = &event.session_id else {
                continue;
            };
            if let Fact::AgentRunStarted(f) = fact {
                self.runs.insert(id.clone(), Arc::new(started(f, texts)));
                continue;
            }
            let Some(run) = self.runs.get_mut(id) else {
                continue;
            };
            let run = Arc::make_mut(run);
            match fact {
                Fact::AgentModelResponded(f) => {
                    run.iterations = f.iteration;
                    run.conversation.push(Turn::Answer {
                        message: RunText::of(&f.response, texts),
                    });
                    match f.usage {
                        Some(u) => {
                            run.tokens.prompt_tokens += u.prompt_tokens;
                            run.tokens.completion_tokens += u.completion_tokens;
                            run.tokens.total_tokens += u.total_tokens;
                        }
                        None => run.tokens.unreported_calls += 1,
                    }
                }
                Fact::AgentModelFailed(f) => run.iterations = f.iteration,
                Fact::AgentToolRequested(f) => {
                    if f.initial {
                        run.conversation.push(Turn::InitialCall {
                            call_id: f.call_id.clone(),
                            tool: f.tool.clone(),
                            arguments: RunText::of(&f.arguments, texts),
                        });
                    }
                    run.open_calls.push((f.call_id.clone(), f.tool.clone()));
                }
                Fact::AgentToolReturned(f) => returned(run, f, texts),
                Fact::AgentNudged(f) => {
                    run.nudges += 1;
                    run.conversation.push(Turn::Nudge {
                        message: RunText::of(&f.message, texts),
                    });
                }
                Fact::AgentRunEnded(f) => run.end = Some(ended(f, texts)),
                _ => {}
            }
            if matches!(
                fact,
                Fact::AgentModelRequested(_)
                    | Fact::AgentModelResponded(_)
                    | Fact::AgentModelFailed(_)
                    | Fact::AgentToolRequested(_)
                    | Fact::AgentToolReturned(_)
                    | Fact::AgentIntentDetected(_)
                    | Fact::AgentNudged(_)
                    | Fact::AgentRunEnded(_)
            ) {
                run.steps += 1;
            }
        }
    }
}

fn started(f: &AgentRunStarted, texts: &TextLookup<'_>) -> AgentRun {
    AgentRun {
        tools: f.tools.clone(),
        max_iterations: f.max_iterations,
        breaker_threshold: f.breaker_threshold,
        conversation: vec![Turn::Start {
            messages: RunText::of(&f.history, texts),
        }],
        iterations: 0,
        nudges: 0,
        open_calls: Vec::new(),
        streaks: Vec::new(),
        tokens: AgentTokens::default(),
        steps: 1,
        end: None,
    }
}

fn returned(run: &mut AgentRun, f: &AgentToolReturned, texts: &TextLookup<'_>) {
    run.open_calls.retain(|(id, _)| id != &f.call_id);
    run.conversation.push(Turn::ToolResult {
        call_id: f.call_id.clone(),
        result: RunText::of(&f.result, texts),
    });
    match &f.error_code {
        None => run.streaks.retain(|s| s.tool != f.tool),
        Some(code) => match run.streaks.iter_mut().find(|s| s.tool == f.tool) {
            Some(s) if &s.error_code == code => s.failures += 1,
            Some(s) => {
                s.error_code.clone_from(code);
                s.failures = 1;
            }
            None => run.streaks.push(FailureStreak {
                tool: f.tool.clone(),
                error_code: code.clone(),
                failures: 1,
            }),
        },
    }
}

fn ended(f: &AgentRunEnded, texts: &TextLookup<'_>) -> RunEnd {
    RunEnd {
        status: f.status.clone(),
        answer: f.answer.as_ref().map(|a| RunText::of(a, texts)),
        reason: RunText::of(&f.reason, texts),
    }
}
