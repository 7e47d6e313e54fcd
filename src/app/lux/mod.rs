//! The model-backed family: Lux MCP's `confer`, `traced_reasoning`, `planner` and
//! `biased_reasoning`, with the seed's snake_case parameters and response fields, sessions
//! (`session_id`, `continuation_id`) as projections of the log (`projections::lux`).
//!
//! Every model call is an effect: each tool's [`Plan`](super::call::model::Plan) names the
//! calls it needs, prepare takes them, and the decision here is a pure function of state and
//! the recorded answers ([`super::call::model`]). What only a model can say (a reply, a thought,
//! a plan step, a bias analysis, a synthesis) comes from the model, named as such with the
//! model the provider reported; what can be measured (perplexity from log-probabilities,
//! similarity from vectors) is measured; what cannot be observed through an API (attention
//! entropy) is null with the reason. Without a provider every tool is refused, naming the
//! variables to set.
//!
//! Owns: the four tools' arguments, prompts, metrics and answers. Must not know any other
//! family.

mod biased;
mod confer;
mod planner;
mod traced;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::call::model::ModelTool;
use super::call::{ArgsShape, Call, Decide, Refusal, Target, ToolSpec, target};
use super::{App, Command, ErrorCode, Rejection};
use crate::events::{Fact, SessionId};
use crate::model::{ChatOutcome, ChatRequest, Message, ResponseFormat};
use crate::projections::lux::LuxSession;

pub use biased::{BiasedReasoningArgs, BiasedReasoningOutput};
pub use confer::{ConferArgs, ConferOutput};
pub use planner::{PlannerArgs, PlannerOutput};
pub use traced::{TracedReasoningArgs, TracedReasoningOutput};

/// The name of the `confer` tool: its spec, its catalog entry and every reference use this.
pub const CONFER_TOOL: &str = "confer";
/// The name of the `traced_reasoning` tool: its spec, its catalog entry and every reference use this.
pub const TRACED_REASONING_TOOL: &str = "traced_reasoning";
/// The name of the `planner` tool: its spec, its catalog entry and every reference use this.
pub const PLANNER_TOOL: &str = "planner";
/// The name of the `biased_reasoning` tool: its spec, its catalog entry and every reference use this.
pub const BIASED_REASONING_TOOL: &str = "biased_reasoning";

/// The tools of the `lux` toolset.
pub(crate) const SPECS: &[ToolSpec] = &[
    ToolSpec {
        name: CONFER_TOOL,
        args: ArgsShape::of::<ConferArgs>,
        decide: Decide::WithModel(ModelTool {
            plan: confer::plan,
            decide: confer::decide,
        }),
    },
    ToolSpec {
        name: TRACED_REASONING_TOOL,
        args: ArgsShape::of::<TracedReasoningArgs>,
        decide: Decide::WithModel(ModelTool {
            plan: traced::plan,
            decide: traced::decide,
        }),
    },
    ToolSpec {
        name: PLANNER_TOOL,
        args: ArgsShape::of::<PlannerArgs>,
        decide: Decide::WithModel(ModelTool {
            plan: planner::plan,
            decide: planner::decide,
        }),
    },
    ToolSpec {
        name: BIASED_REASONING_TOOL,
        args: ArgsShape::of::<BiasedReasoningArgs>,
        decide: Decide::WithModel(ModelTool {
            plan: biased::plan,
            decide: biased::decide,
        }),
    },
];

/// Token counts, as the seed's `TokenUsage`.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

/// Parses a tool's arguments; a failure names the problem and the expected shape.
fn parse<T: DeserializeOwned>(command: &Command, usage: &str) -> Result<T, Refusal> {
    let args = match &command.arguments {
        Value::Null => json!({}),
        other => other.clone(),
    };
    super::call::parse(&args, usage).map_err(|r| (r, None))
}

/// The session a call acts on (named, else the caller's current one) and its model-backed
/// work so far.
fn session<'a>(
    app: &'a App,
    command: &Command,
    requested: Option<&str>,
) -> Result<(Target<'a>, Option<&'a LuxSession>), Refusal> {
    let target = target(app, command, requested)?;
    let lux = match &target {
        Target::Existing(s) => app.lux().session(&s.id),
        Target::New(_) => None,
    };
    Ok((target, lux))
}

/// The session of a chain's call (traced thoughts, plan steps, biased-reasoning steps): the
/// named one; else, for the chain's first step, a new session (`None`: its id is drawn when the
/// call is decided), as Lux starts one per run; else the caller's current one.
fn chain_session<'a>(
    app: &'a App,
    command: &Command,
    requested: Option<&str>,
    first: bool,
) -> Result<(Option<Target<'a>>, Option<&'a LuxSession>), Refusal> {
    if requested.is_none() && first {
        return Ok((None, None));
    }
    let (target, lux) = session(app, command, requested)?;
    Ok((Some(target), lux))
}

/// The id of a call's session and the facts that start it when it is new
/// ([`Call::starting_session_id`]).
fn session_of(call: &Call<'_>, target: Option<Target<'_>>) -> (SessionId, Vec<Fact>) {
    match target {
        Some(t) => (t.id(), t.start_facts()),
        None => {
            let id = call.starting_session_id();
            (id.clone(), vec![Fact::SessionStarted { session_id: id }])
        }
    }
}

/// The model that answered, as the provider reported it (else the one asked for).
fn model_used(answer: &ChatOutcome) -> String {
    answer
        .exchange
        .model_reported
        .clone()
        .unwrap_or_else(|| answer.exchange.model_requested.clone())
}

fn usage_of(answer: &ChatOutcome) -> Option<TokenUsage> {
    answer.exchange.usage.map(|u| TokenUsage {
        prompt_tokens: u.prompt_tokens,
        completion_tokens: u.completion_tokens,
        total_tokens: u.total_tokens,
    })
}

/// A chat request of `messages` with the call's model and temperature.
fn request(messages: Vec<Message>, model: Option<&str>, temperature: Option<f64>) -> ChatRequest {
    let mut request = ChatRequest::new(messages);
    request.model = model.filter(|m| !m.trim().is_empty()).map(str::to_owned);
    request.temperature = temperature;
    request
}

/// A temperature in [0, 2], refused otherwise.
fn temperature(value: Option<f64>, default: Option<f64>) -> Result<Option<f64>, Refusal> {
    match value {
        Some(t) if !(0.0..=2.0).contains(&t) || !t.is_finite() => Err(invalid(
            format!("temperature {t} is out of range"),
            "pass a temperature between 0 and 2 (0 is the most deterministic)",
        )),
        Some(t) => Ok(Some(t)),
        None => Ok(default),
    }
}

fn invalid(message: impl Into<String>, suggestion: &str) -> Refusal {
    (
        Rejection::new(ErrorCode::InvalidArguments, message, suggestion),
        None,
    )
}

/// The answer a model gave in JSON for a JSON-schema response format, parsed; `Err` says why
/// it could not be read (cut at the token limit, not JSON of the schema).
fn json_answer<T: DeserializeOwned>(answer: &ChatOutcome) -> Result<T, String> {
    serde_json::from_str(answer.text().trim()).map_err(|e| {
        if answer.exchange.finish_reason.as_deref() == Some("length") {
            format!("the model's JSON was cut at the token limit ({e})")
        } else {
            format!("the model's answer is not the JSON asked for ({e})")
        }
    })
}

/// A JSON-schema response format with every property required and nothing else allowed.
fn schema_format(name: &str, properties: Value) -> ResponseFormat {
    let required: Vec<Value> = properties
        .as_object()
        .map(|p| p.keys().map(|k| Value::String(k.clone())).collect())
        .unwrap_or_default();
    ResponseFormat::json_schema(
        name,
        json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }),
    )
}

/// A short text field of a response format.
fn short_text() -> Value {
    json!({"type": "string", "maxLength": 240})
}

/// A short list of short texts.
fn short_list() -> Value {
    json!({"type": "array", "items": {"type": "string", "maxLength": 120}, "maxItems": 3})
}

/// `low`, `medium` or `high`.
fn level() -> Value {
    json!({"type": "string", "enum": ["low", "medium", "high"]})
}

/// What was measured and what was not: a metric that cannot be computed honestly is null here
/// with the reason.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct Unavailable {
    /// Metric name → why it is null.
    #[serde(flatten)]
    pub reasons: std::collections::BTreeMap<String, String>,
}

impl Unavailable {
    fn note(&mut self, metric: &str, reason: impl Into<String>) {
        self.reasons.insert(metric.to_owned(), reason.into());
    }
}

/// The provenance every answer carries: which model wrote what, which rules measured what.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LuxProvenance {
    /// `model` for what the model wrote; the rule set for what was measured.
    pub generated_by: String,
    /// The rule set and version of the measurements and step classification.
    pub rules: String,
}

fn provenance(model: &str) -> LuxProvenance {
    LuxProvenance {
        generated_by: format!("model {model} (OpenAI-compatible provider)"),
        rules: RULES.to_owned(),
    }
}

/// The rule set that measures, classifies and raises interventions (docs/lux.md).
const RULES: &str = "thinkledger.lux/1";

/// The steps a numbered, branching chain (traced thoughts, plan steps) shows on a line: the
/// main line, or a branch's — the main line up to its branch point, then the branch.
fn line<'a, T>(
    items: &'a [T],
    branch_of: impl Fn(&T) -> (Option<&str>, Option<u32>),
    number_of: impl Fn(&T) -> u32,
    branch_id: Option<&str>,
    branch_from: Option<u32>,
) -> Vec<&'a T> {
    let Some(branch) = branch_id else {
        return items.iter().filter(|i| branch_of(i).0.is_none()).collect();
    };
    let from = branch_from
        .or_else(|| {
            items
                .iter()
                .find(|i| branch_of(i).0 == Some(branch))
                .and_then(|i| branch_of(i).1)
        })
        .unwrap_or(u32::MAX);
    items
        .iter()
        .filter(|i| match branch_of(i).0 {
            None => number_of(i) <= from,
            Some(b) => b == branch,
        })
        .collect()
}

/// The distinct branch ids of a chain, in order of appearance.
fn branches<'a, T>(items: &'a [T], branch_of: impl Fn(&'a T) -> Option<&'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for id in items.iter().filter_map(branch_of) {
        if !out.iter().any(|b| b == id) {
            out.push(id.to_owned());
        }
    }
    out
}

/// Checks the numbering arguments shared by the traced and planning chains.
fn check_numbering(
    number: u32,
    total: u32,
    revises: Option<u32>,
    branch_from: Option<u32>,
    names: [&str; 4],
) -> Result<(), Refusal> {
    let [number_name, total_name, revises_name, from_name] = names;
    if number == 0 || total == 0 {
        return Err(invalid(
            format!("{number_name} and {total_name} start at 1"),
            "number the first step 1 and estimate the total (at least 1)",
        ));
    }
    if revises.is_some_and(|r| r == 0 || r >= number) {
        return Err(invalid(
            format!("{revises_name} must name an earlier step (1..{number})"),
            "revise a step that came before this one",
        ));
    }
    if branch_from.is_some_and(|b| b == 0 || b >= number) {
        return Err(invalid(
            format!("{from_name} must name an earlier step (1..{number})"),
            "branch from a step that came before this one",
        ));
    }
    Ok(())
}
