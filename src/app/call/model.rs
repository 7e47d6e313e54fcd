//! Tools whose decisions need a model's answers ([`super::Decide::WithModel`]): the model calls
//! are effects, taken on the caller's side before the decision, and the decision is a pure
//! function of what came back.
//!
//! A model tool declares a [`Plan`]: a pure function of state and command (with the answers the
//! command already carries) that names the next model call the tool needs, or none when it has
//! them all. *Prepare* (the tools layer) runs the plan against the latest published state,
//! sends each call to the provider and adds its answer to the command, until the plan asks for
//! nothing more. *Decide* ([`check`]) runs the same plan again on the writer's state: every
//! recorded answer must answer exactly the request the plan asks for now. When a call of the
//! same session was decided in between, the prompt the decision would send is not the one the
//! model answered, and the call is refused (`model_answer_stale`) rather than decided on a
//! stale answer: the expected-version check of event stores, on the prompt itself. Re-execution
//! gives the recorded answers back, so the same check holds and nothing is called again.
//!
//! Owns: the plan contract, the check, and how a model call is recorded (one erasable text of
//! the exact exchange, public facts beside it). Must not know any family.

use serde_json::json;

use super::super::{App, Command, Rejection, TextPolicy};
use super::{Call, Outcome, Refusal};
use crate::app::ErrorCode;
use crate::effects::ModelFailure;
use crate::events::{RecordedModelCall, TokenUsage};
use crate::ledger::NewText;
use crate::model::{ChatOutcome, ChatRequest, Endpoint};

/// The next effect a model tool needs before it can be decided.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelStep {
    /// A chat completion of this request.
    Chat(ChatRequest),
    /// Chat completions of these requests, sent at once (their answers are recorded in this
    /// order); the batch fails when they have not all answered within `timeout_ms`.
    Concurrent {
        requests: Vec<ChatRequest>,
        timeout_ms: u64,
    },
    /// The vector of this text from the process's embedder (after every chat answer; at most
    /// one per call).
    Embed(String),
}

/// The next step of a call, from state and the effects the command already carries; `Ok(None)`
/// when the call has every answer it needs. A refusal here (bad arguments, unknown session) is
/// the call's refusal: prepare stops and the decision refuses the same way.
pub type Plan = fn(&App, &Command) -> Result<Option<ModelStep>, Refusal>;

/// A tool decided with model answers.
#[derive(Clone, Copy)]
pub struct ModelTool {
    pub plan: Plan,
    /// Decides the call once [`check`] has found its answers current.
    pub decide: fn(&mut Call<'_>) -> Outcome,
}

/// The answers of a call are the ones its plan asks for on this state, in order, and complete.
pub(crate) fn check(app: &App, command: &Command, plan: Plan) -> Result<(), Refusal> {
    let taken = &command.prepared.model;
    let answers = &taken.answers;
    let mut k = 0;
    while k < answers.len() {
        let mut partial = command.clone();
        partial.prepared.model.answers.truncate(k);
        partial.prepared.model.failure = None;
        partial.prepared.embedding = None;
        match plan(app, &partial)? {
            Some(ModelStep::Chat(request))
                if request.was_sent_as(&answers[k].exchange.request_bytes.0) =>
            {
                k += 1;
            }
            Some(ModelStep::Concurrent { requests, .. })
                if requests.iter().enumerate().all(|(i, r)| {
                    answers
                        .get(k + i)
                        .is_some_and(|a| r.was_sent_as(&a.exchange.request_bytes.0))
                }) =>
            {
                k += requests.len();
            }
            _ => return Err((stale(command, k + 1), None)),
        }
    }
    if let Some(failure) = &taken.failure {
        // Refuse with the plan's own refusal first (a bad argument is the caller's to fix, a
        // missing provider only after that).
        let mut partial = command.clone();
        partial.prepared.model.failure = None;
        plan(app, &partial)?;
        // Told of the failure, a plan may refuse in its tool's own words (`?`); a tool whose
        // plan asks for nothing more once told no provider is configured decides without a
        // model (it says so in its answer).
        let told = plan(app, command)?;
        if matches!(failure, ModelFailure::NotConfigured(_)) && told.is_none() {
            return Ok(());
        }
        return Err((refusal(command, failure), None));
    }
    match plan(app, command)? {
        None => Ok(()),
        Some(ModelStep::Embed(_)) if matches!(command.prepared.embedding, Some(Err(_))) => {
            let reason = match &command.prepared.embedding {
                Some(Err(reason)) => reason.as_str(),
                _ => "",
            };
            Err((
                Rejection::new(
                    ErrorCode::EmbeddingUnavailable,
                    format!("the answer could not be embedded: {reason}"),
                    "retry the call; the embedder is local and needs no configuration",
                ),
                None,
            ))
        }
        Some(_) => Err((stale(command, answers.len() + 1), None)),
    }
}

/// The refusal of a call whose `step`-th model answer does not answer the request the decision
/// would send now.
fn stale(command: &Command, step: usize) -> Rejection {
    Rejection::new(
        ErrorCode::ModelAnswerStale,
        format!(
            "{}: model answer {step} was asked with a prompt built from an earlier state of this \
             session, which another call changed meanwhile; nothing was recorded as decided",
            command.tool
        ),
        "send the same call again: it will be asked with the session as it is now",
    )
}

/// The refusal of a call whose provider could not be asked or did not answer.
fn refusal(command: &Command, failure: &ModelFailure) -> Rejection {
    match failure {
        ModelFailure::NotConfigured(message) => Rejection::new(
            ErrorCode::ModelNotConfigured,
            format!("{} needs a model: {message}", command.tool),
            "set THINKLEDGER_MODEL_PROVIDER_URL (and THINKLEDGER_MODEL) in the server's \
             environment and restart it; model-backed tools are off until then",
        ),
        ModelFailure::Failed(message) => Rejection::new(
            ErrorCode::ModelCallFailed,
            format!("{}: the model call failed: {message}", command.tool),
            "retry later; if it keeps failing, check that the model server is running and \
             reachable from the thinkledger server",
        ),
        ModelFailure::Cancelled(progress) => super::watch::cancelled(&command.tool, progress),
    }
}

/// One model answer as the event records it: the public facts, and the exact exchange as an
/// erasable text (added to `texts`).
pub(crate) fn record(
    policy: &TextPolicy<'_>,
    answer: &ChatOutcome,
    texts: &mut Vec<NewText>,
) -> RecordedModelCall {
    let exchange = &answer.exchange;
    let text = serde_json::to_string(exchange).unwrap_or_else(|_| json!(null).to_string());
    let (text_ref, new) = policy.commit(&text);
    texts.push(new);
    RecordedModelCall {
        provider: serde_json::to_value(exchange.provider)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        endpoint: match exchange.endpoint {
            Endpoint::ChatCompletions => "chat_completions",
            Endpoint::ChatCompletionsStream => "chat_completions_stream",
            Endpoint::Embeddings => "embeddings",
        }
        .to_owned(),
        model_requested: exchange.model_requested.clone(),
        model_reported: exchange.model_reported.clone(),
        request_digest: exchange.request_digest.clone(),
        finish_reason: exchange.finish_reason.clone(),
        usage: exchange.usage.map(|u| TokenUsage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            total_tokens: u.total_tokens,
        }),
        status: exchange.status,
        attempts: exchange.attempts,
        latency_ms: exchange.latency_ms,
        started_after_ms: exchange.started_after_ms,
        exchange: text_ref,
    }
}

impl Call<'_> {
    /// The model answers the call carries, in the order its plan asked for them (checked
    /// current by [`check`] before the tool's decision runs).
    pub fn model_answers(&self) -> &[ChatOutcome] {
        &self.command.prepared.model.answers
    }
}
