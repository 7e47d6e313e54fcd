//! `ReasoningState` and `ReasoningStep`: what a run has done so far, and how it ended.
//!
//! Owns: the state's shape and its small bookkeeping (steps, token totals). Must not know where
//! it is kept (`StatePersistence`).

use serde::{Deserialize, Serialize};

use super::traits::{LlmMessage, LlmUsage};

/// How a run ended (or that it has not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still going (or cut short before it could end: a resumed run goes on from here).
    Running,
    /// The model gave a final answer.
    Completed,
    /// The iteration bound was reached before a final answer.
    MaxIterations,
    /// A token or time budget was spent before a final answer.
    BudgetExhausted,
    /// The model could not be asked or gave nothing usable.
    Failed,
    /// A tool failed the same way too many times in a row.
    StoppedByBreaker,
    /// The model asked a question, was ambiguous, or planned without acting after every nudge:
    /// the person must say more.
    NeedsInput,
}

impl RunStatus {
    /// The status as the ledger and `--json` write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Completed => "completed",
            Self::MaxIterations => "max_iterations",
            Self::BudgetExhausted => "budget_exhausted",
            Self::Failed => "failed",
            Self::StoppedByBreaker => "stopped_by_breaker",
            Self::NeedsInput => "needs_input",
        }
    }

    /// The status written as [`RunStatus::as_str`] writes it.
    pub fn parse(text: &str) -> Option<Self> {
        [
            Self::Running,
            Self::Completed,
            Self::MaxIterations,
            Self::BudgetExhausted,
            Self::Failed,
            Self::StoppedByBreaker,
            Self::NeedsInput,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// What one step was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum StepKind {
    /// The model was asked and answered.
    ModelCall { tool_calls: u32 },
    /// The model could not be asked or did not answer.
    ModelFailed,
    /// A tool ran.
    ToolCall { tool: String, succeeded: bool },
    /// A text-only answer's intent was read.
    IntentAnalysis { intent: String },
    /// The model was asked to act on its plan.
    Nudge,
}

/// One discrete step of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningStep {
    /// Its place in the run, from 1.
    pub index: u32,
    /// The model call it belongs to (0: before the first).
    pub iteration: u32,
    pub kind: StepKind,
}

/// Tokens a run used, summed over the calls that reported usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenTotals {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// Model calls whose provider reported no usage (their tokens are not in the sums).
    pub unreported_calls: u32,
}

impl TokenTotals {
    /// Adds one call's usage (or counts it as unreported).
    pub fn add(&mut self, usage: Option<LlmUsage>) {
        match usage {
            Some(u) => {
                self.prompt_tokens = self.prompt_tokens.saturating_add(u.prompt_tokens);
                self.completion_tokens = self.completion_tokens.saturating_add(u.completion_tokens);
                self.total_tokens = self.total_tokens.saturating_add(u.total_tokens);
            }
            None => self.unreported_calls = self.unreported_calls.saturating_add(1),
        }
    }
}

/// Everything about one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReasoningState {
    /// The run's id (a ledger session id for runs the ledger keeps).
    pub run_id: String,
    pub status: RunStatus,
    /// Model calls made.
    pub iterations: u32,
    /// Nudges sent.
    pub nudges: u32,
    /// The conversation as the model will see it next.
    pub history: Vec<LlmMessage>,
    pub steps: Vec<ReasoningStep>,
    /// The model's last text when the run ended on it (a final answer, or the question it
    /// asked).
    pub answer: Option<String>,
    /// Why the run ended, in words.
    pub reason: String,
    pub tokens: TokenTotals,
    /// Tool calls whose request was recorded but whose result was not (a run cut short while
    /// they ran), by call id: a resumed run reports them interrupted instead of running them
    /// again, since whether they took effect is unknown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interrupted_calls: Vec<String>,
}

impl ReasoningState {
    /// A run that starts from `history`.
    pub fn new(run_id: impl Into<String>, history: Vec<LlmMessage>) -> Self {
        Self {
            run_id: run_id.into(),
            status: RunStatus::Running,
            iterations: 0,
            nudges: 0,
            history,
            steps: Vec::new(),
            answer: None,
            reason: String::new(),
            tokens: TokenTotals::default(),
            interrupted_calls: Vec::new(),
        }
    }

    /// Adds a step of the current iteration.
    pub fn add_step(&mut self, kind: StepKind) {
        let index = u32::try_from(self.steps.len())
            .unwrap_or(u32::MAX)
            .saturating_add(1);
        self.steps.push(ReasoningStep {
            index,
            iteration: self.iterations,
            kind,
        });
    }

    /// Ends the run.
    pub fn finish(&mut self, status: RunStatus, reason: impl Into<String>, answer: Option<String>) {
        self.status = status;
        self.reason = reason.into();
        self.answer = answer;
    }

    /// Whether the run has ended.
    pub fn is_finished(&self) -> bool {
        self.status != RunStatus::Running
    }
}
