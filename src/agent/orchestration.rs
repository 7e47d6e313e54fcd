//! `ToolOrchestrator`: runs the tool calls the model asks for through a `ToolExecutor`, each
//! attempt within a timeout, retrying what could not be reached, and a breaker that stops a
//! tool failing the same way again and again (the seed's users saw one failing tool called 11–16
//! times, its failures reported as successes).
//!
//! Owns: attempts, timeouts, retries, the breaker's counts, and the failures it makes up itself
//! (an unknown tool, arguments that are not JSON, a timeout). Must not know the model or where
//! calls are recorded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::config::ReasoningConfig;
use super::traits::{LlmToolCall, ToolDefinition, ToolExecutor, ToolOutcome, ToolStatus};

/// One tool call as the orchestrator ran it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRun {
    /// What the tool (or the orchestrator, for a call it could not make) answered.
    pub outcome: ToolOutcome,
    /// Attempts made (0: the call was not made at all).
    pub attempts: u32,
    /// Time spent, all attempts included.
    pub elapsed: Duration,
    /// Set when this failure tripped the breaker: how many identical failures in a row.
    pub tripped: Option<u32>,
}

/// A tool's latest failures in a row: their code and how many.
#[derive(Debug, Clone, Default)]
struct Streak {
    code: String,
    count: u32,
}

/// Runs tool calls with timeouts, retries and a breaker.
pub struct ToolOrchestrator {
    executor: Arc<dyn ToolExecutor>,
    timeout: Duration,
    retries: u32,
    threshold: u32,
    /// Per tool, its current run of identical failures.
    streaks: Mutex<HashMap<String, Streak>>,
}

impl ToolOrchestrator {
    /// Drives `executor` with the timeout, retries and breaker threshold of `config`.
    pub fn new(executor: Arc<dyn ToolExecutor>, config: &ReasoningConfig) -> Self {
        Self {
            executor,
            timeout: config.tool_timeout,
            retries: config.tool_retries,
            threshold: config.breaker_threshold.max(1),
            streaks: Mutex::new(HashMap::new()),
        }
    }

    /// The tools offered to the model.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.executor.definitions()
    }

    /// Counts `failures` identical failures of `tool` in a row as already seen (a resumed run
    /// keeps its breaker's counts).
    pub fn remember_failures(&self, tool: &str, code: &str, failures: u32) {
        if let Ok(mut streaks) = self.streaks.lock() {
            streaks.insert(
                tool.to_owned(),
                Streak {
                    code: code.to_owned(),
                    count: failures,
                },
            );
        }
    }

    /// Runs one call. A tool the executor does not offer, or arguments that are not a JSON
    /// object, fail without a call; an attempt that times out or cannot reach the tool is tried
    /// again up to the configured retries; the tool's own refusal is final.
    pub async fn run(&self, call: &LlmToolCall) -> ToolRun {
        let started = Instant::now();
        let offered = self.definitions().iter().any(|d| d.name == call.name);
        let (outcome, attempts) = if offered {
            match parse_arguments(&call.arguments) {
                Ok(arguments) => self.attempt(call, &arguments).await,
                Err(outcome) => (outcome, 0),
            }
        } else {
            let names: Vec<String> = self.definitions().into_iter().map(|d| d.name).collect();
            (
                ToolOutcome::failed(
                    "unknown_tool",
                    format!(
                        "there is no tool named \"{}\"; the tools are: {}",
                        call.name,
                        names.join(", ")
                    ),
                ),
                0,
            )
        };
        let tripped = self.count(&call.name, &outcome);
        ToolRun {
            outcome,
            attempts,
            elapsed: started.elapsed(),
            tripped,
        }
    }

    async fn attempt(&self, call: &LlmToolCall, arguments: &Value) -> (ToolOutcome, u32) {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let result =
                tokio::time::timeout(self.timeout, self.executor.execute(&call.name, arguments))
                    .await;
            let failure = match result {
                Ok(Ok(outcome)) => return (outcome, attempts),
                Ok(Err(error)) => ToolOutcome::failed("unreachable", error.to_string()),
                Err(_) => ToolOutcome::failed(
                    "timed_out",
                    format!(
                        "{} did not answer within {} ms",
                        call.name,
                        self.timeout.as_millis()
                    ),
                ),
            };
            if attempts > self.retries {
                return (failure, attempts);
            }
        }
    }

    /// Counts a failure toward the breaker (a success or another code starts over); the number
    /// of identical failures in a row when it reaches the threshold.
    fn count(&self, tool: &str, outcome: &ToolOutcome) -> Option<u32> {
        let mut streaks = self.streaks.lock().ok()?;
        if outcome.status == ToolStatus::Succeeded {
            streaks.remove(tool);
            return None;
        }
        let code = outcome.error_code.clone().unwrap_or_default();
        let streak = streaks.entry(tool.to_owned()).or_default();
        if streak.code == code {
            streak.count = streak.count.saturating_add(1);
        } else {
            *streak = Streak { code, count: 1 };
        }
        (streak.count >= self.threshold).then_some(streak.count)
    }
}

/// The model's arguments as an object (empty text: no arguments), or the failure that says why
/// not.
fn parse_arguments(text: &str) -> Result<Value, ToolOutcome> {
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(ToolOutcome::failed(
            "invalid_arguments_json",
            "the arguments must be a JSON object",
        )),
        Err(e) => Err(ToolOutcome::failed(
            "invalid_arguments_json",
            format!("the arguments are not JSON ({e}); write them as a JSON object"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use serde_json::json;

    use super::*;
    use crate::agent::error::ReasoningError;
    use crate::agent::traits::BoxFuture;

    /// A tool whose k-th call answers `script[k]` (the last one again after the end): a
    /// success, a refusal with a code, an unreachable tool, or silence.
    struct Scripted {
        script: Vec<&'static str>,
        calls: AtomicU32,
    }

    impl Scripted {
        fn new(script: &[&'static str]) -> Arc<Self> {
            Arc::new(Self {
                script: script.to_vec(),
                calls: AtomicU32::new(0),
            })
        }
    }

    impl ToolExecutor for Scripted {
        fn definitions(&self) -> Vec<ToolDefinition> {
            vec![ToolDefinition {
                name: "probe".into(),
                description: "A probe".into(),
                parameters: json!({"type": "object"}),
            }]
        }

        fn execute<'a>(
            &'a self,
            _name: &'a str,
            _arguments: &'a Value,
        ) -> BoxFuture<'a, Result<ToolOutcome, ReasoningError>> {
            Box::pin(async move {
                let k = self.calls.fetch_add(1, Ordering::SeqCst) as usize;
                let step = self
                    .script
                    .get(k)
                    .or(self.script.last())
                    .copied()
                    .unwrap_or("ok");
                match step {
                    "ok" => Ok(ToolOutcome::succeeded("done")),
                    "unreachable" => Err(ReasoningError::Tool {
                        tool: "probe".into(),
                        message: "connection refused".into(),
                    }),
                    "silent" => {
                        tokio::time::sleep(Duration::from_secs(5)).await;
                        Ok(ToolOutcome::succeeded("too late"))
                    }
                    code => Ok(ToolOutcome::failed(code, format!("refused: {code}"))),
                }
            })
        }
    }

    fn call(name: &str, arguments: &str) -> LlmToolCall {
        LlmToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    fn orchestrator(tool: Arc<Scripted>, threshold: u32, retries: u32) -> ToolOrchestrator {
        let config = ReasoningConfig {
            breaker_threshold: threshold,
            tool_retries: retries,
            tool_timeout: Duration::from_millis(50),
            ..ReasoningConfig::default()
        };
        ToolOrchestrator::new(tool, &config)
    }

    #[tokio::test]
    async fn the_breaker_trips_on_the_nth_identical_failure_in_a_row_only() {
        let tool = Scripted::new(&[
            "down", "down", "other", "down", "ok", "down", "down", "down",
        ]);
        let o = orchestrator(tool, 3, 0);
        let mut tripped = Vec::new();
        for _ in 0..8 {
            tripped.push(o.run(&call("probe", "{}")).await.tripped);
        }
        // down, down, (another code starts over) other, down, (a success clears) ok, then three
        // downs in a row: the third trips.
        assert_eq!(tripped, [None, None, None, None, None, None, None, Some(3)]);
    }

    #[tokio::test]
    async fn what_could_not_be_reached_is_retried_and_a_refusal_is_not() {
        let tool = Scripted::new(&["unreachable", "ok"]);
        let run = orchestrator(tool.clone(), 3, 1)
            .run(&call("probe", "{}"))
            .await;
        assert_eq!(
            (run.outcome.status, run.attempts),
            (ToolStatus::Succeeded, 2)
        );

        let tool = Scripted::new(&["refused"]);
        let run = orchestrator(tool.clone(), 3, 2)
            .run(&call("probe", "{}"))
            .await;
        assert_eq!(
            run.attempts, 1,
            "a tool's own refusal would fail the same way again"
        );
        assert_eq!(run.outcome.error_code.as_deref(), Some("refused"));
    }

    #[tokio::test]
    async fn a_silent_tool_times_out_each_attempt_and_fails_as_timed_out() {
        let tool = Scripted::new(&["silent"]);
        let run = orchestrator(tool, 3, 1).run(&call("probe", "{}")).await;
        assert_eq!(run.outcome.status, ToolStatus::Failed);
        assert_eq!(run.outcome.error_code.as_deref(), Some("timed_out"));
        assert_eq!(run.attempts, 2);
        assert!(run.elapsed >= Duration::from_millis(100));
    }

    #[tokio::test]
    async fn an_unknown_tool_or_arguments_that_are_not_an_object_fail_without_a_call() {
        let tool = Scripted::new(&["ok"]);
        let o = orchestrator(tool.clone(), 3, 0);
        let unknown = o.run(&call("nope", "{}")).await;
        assert_eq!(unknown.outcome.error_code.as_deref(), Some("unknown_tool"));
        assert!(unknown.outcome.output.contains("probe"), "names the tools");
        for bad in ["{\"a\": ", "[1, 2]"] {
            let run = o.run(&call("probe", bad)).await;
            assert_eq!(
                run.outcome.error_code.as_deref(),
                Some("invalid_arguments_json")
            );
            assert_eq!(run.attempts, 0);
        }
        assert_eq!(tool.calls.load(Ordering::SeqCst), 0, "no call was made");
        let empty = o.run(&call("probe", "")).await;
        assert_eq!(
            empty.outcome.status,
            ToolStatus::Succeeded,
            "no arguments is {{}}"
        );
    }
}
