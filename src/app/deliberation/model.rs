//! The workspace's `model_backed` provider: what `expand_thoughts`, `score_thoughts` and
//! `verify_thoughts` ask the configured model when a call names it, and what the model's answers
//! become. The model calls themselves are effects taken in prepare (the tools' plans, through
//! `app::call::model`); here are the pure parts: the deliberation a plan reads, the JSON answer
//! formats, model text scanned like caller text, and analysis metadata naming the model.
//!
//! Must not know MCP, the provider client or the other families.

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::app::call::{Call, Refusal, Target, target};
use crate::app::providers::MODEL_BACKED;
use crate::app::{App, Command, ErrorCode, Rejection};
use crate::events::deliberation::{AnalysisMetadata, ScannedText};
use crate::model::{ChatOutcome, ChatRequest, Message, ResponseFormat};
use crate::projections::Deliberation;

/// Whether a call's arguments ask for the model (`provider: "model_backed"`).
pub(crate) fn asks_model(arguments: &Value) -> bool {
    arguments.get("provider").and_then(Value::as_str) == Some(MODEL_BACKED)
}

/// A tool's arguments for its plan, or `None` when they do not parse (the decision refuses).
pub(crate) fn plan_args<T: DeserializeOwned>(command: &Command) -> Option<T> {
    let args = match &command.arguments {
        Value::Null => json!({}),
        other => other.clone(),
    };
    serde_json::from_value(args).ok()
}

/// The deliberation a plan reads: the named session's, else the caller's current one; `None`
/// when there is none (the decision refuses).
pub(crate) fn deliberation_of<'a>(
    app: &'a App,
    command: &Command,
    session_id: Option<&str>,
) -> Option<&'a Deliberation> {
    let Ok(Target::Existing(session)) = target(app, command, session_id) else {
        return None;
    };
    app.deliberations().get(&session.id)
}

/// A text of the deliberation, or a marker when it was erased.
pub(crate) fn text_or_erased<'a>(
    app: &'a App,
    text: &crate::projections::deliberation::Text,
) -> &'a str {
    app.deliberations().text(text).unwrap_or("[erased]")
}

/// A chat request for a workspace task: a system turn, the prompt, temperature 0 and a JSON
/// schema for the answer.
pub(crate) fn json_request(system: &str, prompt: &str, name: &str, schema: Value) -> ChatRequest {
    let mut request = ChatRequest::new(vec![Message::system(system), Message::user(prompt)]);
    request.temperature = Some(0.0);
    request.response_format = Some(ResponseFormat::json_schema(name, schema));
    request
}

/// The model that answered, as the provider reported it.
pub(crate) fn model_name(answer: &ChatOutcome) -> String {
    answer
        .exchange
        .model_reported
        .clone()
        .unwrap_or_else(|| answer.exchange.model_requested.clone())
}

/// The answer of a JSON-schema call, parsed, or the refusal saying why it cannot be used.
pub(crate) fn parse_answer<T: DeserializeOwned>(
    d: &Deliberation,
    answer: Option<&ChatOutcome>,
    what: &str,
) -> Result<T, Refusal> {
    let answer = answer.ok_or_else(|| {
        super::context::refuse(
            d,
            ErrorCode::ModelAnswerStale,
            format!("the model was not asked for {what}"),
            "send the same call again",
        )
    })?;
    serde_json::from_str(answer.text().trim()).map_err(|e| {
        let cut = answer.exchange.finish_reason.as_deref() == Some("length");
        (
            Rejection::new(
                ErrorCode::ModelAnswerUnusable,
                format!(
                    "the model's answer is not {what} as JSON{}: {e}",
                    if cut {
                        " (it was cut at the token limit)"
                    } else {
                        ""
                    }
                ),
                "retry, raise THINKLEDGER_MODEL_MAX_TOKENS if the answer was cut, or use the \
                 heuristic provider and supply the content yourself",
            ),
            Some(d.session_id.clone()),
        )
    })
}

impl Call<'_> {
    /// A text the model wrote, as stored: scanned for prompt injection like caller text (the
    /// shown text is the redacted one when something matched; the model's own text stays
    /// behind its commitment).
    pub fn model_text(&mut self, field: &str, text: &str) -> ScannedText {
        let original = self.derive_text(text);
        self.scanned_from(original, field, text)
    }

    /// Metadata of an output the model `model` produced.
    pub fn model_analysis(
        &self,
        mode: &str,
        method: &str,
        model: &str,
        source_node_ids: Vec<String>,
        limitations: &[&str],
    ) -> AnalysisMetadata {
        AnalysisMetadata {
            model: Some(model.to_owned()),
            ..self.analysis(mode, method, MODEL_BACKED, source_node_ids, limitations)
        }
    }
}

/// Unavailable: the refusal of a workspace call that asks the model for something it cannot be
/// asked for (candidates given too).
pub(crate) fn not_with_candidates(d: &Deliberation) -> Refusal {
    super::context::refuse(
        d,
        ErrorCode::InvalidArguments,
        "candidates and provider model_backed were both given",
        "pass your own candidates, or ask the model to write the children, not both",
    )
}
