//! `ReasoningConfig`: the loop's bounds (iterations, tokens, time), the tool orchestrator's
//! timeout, retries and breaker, and the nudge.
//!
//! Owns: numbers and their defaults. Must not know how they are enforced (the engine and the
//! orchestrator do that).

use std::time::Duration;

/// How a run is bounded and how tools are driven. `Default` gives the values the
/// `thinkledger agent` command starts from.
#[derive(Debug, Clone, PartialEq)]
pub struct ReasoningConfig {
    /// The most model calls of one run; the run ends `max_iterations` when they are spent.
    pub max_iterations: u32,
    /// A tool called once with the person's latest message before the first model call
    /// (the seed's `analyze_input`), its result added to the conversation; none by default.
    pub initial_analysis_tool: Option<String>,
    /// How long one attempt of a tool call may take.
    pub tool_timeout: Duration,
    /// Further attempts of a tool call that could not be made (a timeout, a transport error);
    /// never of a tool's own refusal, which would fail the same way again.
    pub tool_retries: u32,
    /// Failures of one tool in a row with the same error code that stop the run
    /// (`stopped_by_breaker`); at least 1.
    pub breaker_threshold: u32,
    /// Tokens the run may use, summed over the calls that reported usage; none by default.
    pub max_total_tokens: Option<u64>,
    /// How long the run may take, measured from its start; none by default.
    pub max_duration: Option<Duration>,
    /// Nudges the engine may send in one run before it stops waiting for an action.
    pub max_nudges: u32,
    /// What a nudge says.
    pub nudge_message: String,
}

impl Default for ReasoningConfig {
    fn default() -> Self {
        Self {
            max_iterations: 6,
            initial_analysis_tool: None,
            tool_timeout: Duration::from_secs(60),
            tool_retries: 1,
            breaker_threshold: 3,
            max_total_tokens: None,
            max_duration: None,
            max_nudges: 2,
            nudge_message: "You described a plan but did not act on it. Call the tool for the \
                            first step now, or give the final answer."
                .to_owned(),
        }
    }
}
