//! `think` and `think_parallel`: reasoning in a mode, or in the four streams at once.
//!
//! With a model: `think` asks it once, in the mode's instructions, for a JSON answer
//! (conclusion, reasoning steps, insights); `think_parallel` (and `think` in `parallel` mode)
//! sends the four streams' requests at once (`ModelStep::Concurrent`) under the call's timeout.
//! The recorded timings (each call's send offset and latency) show whether they overlapped; the
//! seed's synchronisation points at 25/50/75 % of the timeout report which streams had answered
//! by then. Conflicts are streams whose stances differ; an insight's importance is how many
//! other streams share two of its content words. Without a model (none configured): the mode's
//! scaffold, and every field only a model can fill is null or empty, with the limitation named.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Envelope, ProblemContext, Provenance, answer, fail, non_empty, parse, round2};
use crate::app::call::model::ModelStep;
use crate::app::call::{Call, Refusal};
use crate::app::{App, Command, ErrorCode, Outcome};
use crate::effects::ModelFailure;
use crate::model::{ChatOutcome, ChatRequest, Message, ResponseFormat};

mod parallel;

use parallel::parallel;

/// The rule set and version of the scaffolds, stances and synchronisation.
pub const RULES: &str = "thinkledger.cognition.think/1";

const THINK_USAGE: &str = "pass {\"problem\": \"...\", \"mode\": \"analytical\"} (mode: analytical, \
     creative, critical, synthetic or parallel) and optionally context {background, constraints, \
     goals}";
const PARALLEL_USAGE: &str = "pass {\"problem\": \"...\"} and optionally timeout (1000-60000 ms, \
     default 30000) and context {background, constraints, goals}";

const STREAMS: [&str; 4] = ["analytical", "creative", "critical", "synthetic"];

/// The stances a stream may take on the problem.
const STANCES: [&str; 3] = ["support", "oppose", "mixed"];

/// Each mode's instructions and the scaffold of its steps.
fn mode(name: &str) -> Option<(&'static str, [&'static str; 4])> {
    Some(match name {
        "analytical" => (
            "Reason logically and with data: break the problem into parts and weigh evidence.",
            [
                "Restate the problem and what a good answer must achieve",
                "List the known facts, constraints and goals",
                "Break the problem into measurable parts and evaluate each",
                "Conclude what the evidence supports",
            ],
        ),
        "creative" => (
            "Reason creatively: propose unusual options and reframe the problem.",
            [
                "Reframe the problem from other angles",
                "Generate many options without judging them",
                "Combine and adapt the most promising options",
                "Pick the option worth trying first",
            ],
        ),
        "critical" => (
            "Reason critically and skeptically: find weaknesses, risks and hidden assumptions.",
            [
                "State the claims and assumptions involved",
                "Look for counter-evidence and failure modes",
                "Rate each risk's likelihood and impact",
                "Say what must hold for the plan to succeed",
            ],
        ),
        "synthetic" => (
            "Reason holistically: integrate the perspectives into one balanced recommendation.",
            [
                "Collect the relevant perspectives",
                "Find where they agree and conflict",
                "Resolve or weigh the conflicts",
                "Form one integrated recommendation",
            ],
        ),
        _ => return None,
    })
}

/// Arguments of `think` (the seed's).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ThinkArgs {
    /// Problem or question to reason about.
    #[schemars(extend("x-text" = true))]
    pub problem: String,
    /// analytical, creative, critical, synthetic or parallel (all four streams at once).
    #[schemars(extend("enum" = ["analytical", "creative", "critical", "synthetic", "parallel"]))]
    pub mode: String,
    #[serde(default)]
    pub context: Option<ProblemContext>,
}

/// Arguments of `think_parallel` (the seed's).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ThinkParallelArgs {
    /// Problem to analyze with parallel reasoning.
    #[schemars(extend("x-text" = true))]
    pub problem: String,
    /// Total timeout in ms (1000–60000, default 30000).
    #[serde(default)]
    #[schemars(range(min = 1000, max = 60000))]
    pub timeout: Option<f64>,
    #[serde(default)]
    pub context: Option<ProblemContext>,
}

/// `think`'s data (single stream).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ThinkData {
    /// The model's conclusion; null without a model.
    pub conclusion: Option<String>,
    /// The model's steps, or the mode's scaffold without a model.
    pub reasoning: Vec<String>,
    /// The model's insights; empty without a model.
    pub insights: Vec<String>,
    /// The model's own confidence (self-reported); null without a model.
    pub confidence: Option<f64>,
    /// `completed` (a model reasoned) or `scaffold` (no model: steps only).
    pub status: String,
    pub mode: String,
    pub provenance: Provenance,
}

/// An insight and the streams it came from.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Insight {
    pub content: String,
    pub sources: Vec<String>,
    /// 0.5 + 0.5 × (share of the other streams that share two content words with it).
    pub importance: f64,
    /// Its stream's confidence as the model reported it (not a measurement); null when the
    /// model gave none.
    pub confidence: Option<f64>,
}

/// A recommendation and the stream it came from.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Recommendation {
    pub description: String,
    pub sources: Vec<String>,
    pub priority: u32,
    /// Its stream's confidence as the model reported it (not a measurement); null when the
    /// model gave none.
    pub confidence: Option<f64>,
    /// Why, in the stream's words; null when the model gave none.
    pub rationale: Option<String>,
}

/// Two streams that disagree.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Conflict {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub description: String,
    /// 1.0 for support against oppose, 0.5 when one side is mixed.
    pub severity: f64,
    pub source_streams: Vec<String>,
}

/// One stream's model call, as recorded.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StreamTiming {
    pub stream: String,
    /// Milliseconds from the batch's start to this call's send.
    pub started_after_ms: Option<u64>,
    pub latency_ms: u64,
}

/// Which streams had answered at a synchronisation point.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncPoint {
    pub percent: u32,
    pub at_ms: u64,
    pub completed_streams: Vec<String>,
}

/// `think_parallel`'s data (and `think` in parallel mode).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParallelData {
    /// The synthetic stream's recommendation; null without a model.
    pub conclusion: Option<String>,
    pub insights: Vec<Insight>,
    pub recommendations: Vec<Recommendation>,
    pub conflicts: Vec<Conflict>,
    /// Share of streams holding the most common stance; null without a model.
    pub confidence: Option<f64>,
    /// Share of streams whose answer was readable JSON; null without a model.
    pub quality: Option<f64>,
    /// Each stream's scaffold (its questions), with or without a model.
    pub streams: Vec<StreamScaffold>,
    pub timings: Vec<StreamTiming>,
    /// Whether every stream was sent before the first one answered.
    pub overlapping: Option<bool>,
    pub synchronization: Vec<SyncPoint>,
    pub status: String,
    pub provenance: Provenance,
}

/// A stream's steps.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StreamScaffold {
    pub stream: String,
    pub steps: Vec<String>,
    /// The stream's stance as the model gave it (`support`, `oppose`, `mixed`); null without.
    pub stance: Option<String>,
}

pub type ThinkOutput = Envelope<Value>;
pub type ThinkParallelOutput = Envelope<ParallelData>;

fn invalid(message: impl Into<String>, usage: &str) -> Refusal {
    fail(ErrorCode::InvalidArguments, message, usage)
}

fn prompt(problem: &str, context: Option<&ProblemContext>) -> String {
    let mut text = format!("Problem: {problem}");
    if let Some(c) = context {
        if let Some(b) = c.background.as_deref().filter(|b| !b.trim().is_empty()) {
            text.push_str(&format!("\nBackground: {b}"));
        }
        if let Some(list) = c.constraints.as_ref().filter(|l| !l.is_empty()) {
            text.push_str(&format!("\nConstraints: {}", list.join("; ")));
        }
        if let Some(list) = c.goals.as_ref().filter(|l| !l.is_empty()) {
            text.push_str(&format!("\nGoals: {}", list.join("; ")));
        }
    }
    text
}

fn think_request(mode_name: &str, problem: &str, context: Option<&ProblemContext>) -> ChatRequest {
    let (instructions, _) = mode(mode_name).unwrap_or(("", [""; 4]));
    let mut request = ChatRequest::new(vec![
        Message::system(&format!(
            "{instructions} Answer in JSON with a conclusion, up to 3 reasoning steps, up to 3 \
             insights and your confidence from 0 to 1."
        )),
        Message::user(&prompt(problem, context)),
    ]);
    request.temperature = Some(0.0);
    request.max_tokens = Some(160);
    request.response_format = Some(ResponseFormat::json_schema(
        "reasoning",
        json!({
            "type": "object",
            "properties": {
                "conclusion": {"type": "string", "maxLength": 240},
                "reasoning": {"type": "array", "items": {"type": "string", "maxLength": 120}, "maxItems": 3},
                "insights": {"type": "array", "items": {"type": "string", "maxLength": 120}, "maxItems": 3},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            },
            "required": ["conclusion", "reasoning", "insights", "confidence"],
            "additionalProperties": false,
        }),
    ));
    request
}

fn stream_request(stream: &str, problem: &str, context: Option<&ProblemContext>) -> ChatRequest {
    let (instructions, _) = mode(stream).unwrap_or(("", [""; 4]));
    let mut request = ChatRequest::new(vec![
        Message::system(&format!(
            "{instructions} Answer in JSON: up to 2 insights, one recommendation with its \
             rationale, your stance on the proposal (support, oppose or mixed) and your \
             confidence from 0 to 1."
        )),
        Message::user(&prompt(problem, context)),
    ]);
    request.temperature = Some(0.0);
    // Short answers: four of them share the provider within the seed's 60-second limit.
    request.max_tokens = Some(128);
    request.response_format = Some(ResponseFormat::json_schema(
        "stream",
        json!({
            "type": "object",
            "properties": {
                "insights": {"type": "array", "items": {"type": "string", "maxLength": 60}, "maxItems": 2},
                "recommendation": {"type": "string", "maxLength": 80},
                "rationale": {"type": "string", "maxLength": 60},
                "stance": {"type": "string", "enum": ["support", "oppose", "mixed"]},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            },
            "required": ["insights", "recommendation", "rationale", "stance", "confidence"],
            "additionalProperties": false,
        }),
    ));
    request
}

pub(super) fn no_model(command: &Command) -> bool {
    matches!(
        command.prepared.model.failure,
        Some(ModelFailure::NotConfigured(_))
    )
}

/// A configured model that failed: refused in the seed's shape (`success: false`, its
/// `Timeout exceeded` error and suggestion), never answered with the scaffold.
pub(super) fn model_failed(command: &Command) -> Result<(), Refusal> {
    let Some(ModelFailure::Failed(message)) = &command.prepared.model.failure else {
        return Ok(());
    };
    let suggestion = if message.starts_with("Timeout exceeded") {
        "Reduce complexity or increase timeout (at most 60000 ms)"
    } else {
        "retry later; if it keeps failing, check that the model server is running and \
         reachable from the thinkledger server"
    };
    Err(fail(
        ErrorCode::ModelCallFailed,
        format!("{}: the model call failed: {message}", command.tool),
        suggestion,
    ))
}

fn think_args(command: &Command) -> Result<ThinkArgs, Refusal> {
    let args: ThinkArgs = parse(&command.arguments, THINK_USAGE)?;
    non_empty("problem", &args.problem, THINK_USAGE)?;
    if args.mode != "parallel" && mode(&args.mode).is_none() {
        // The caller's value is not echoed: a refusal's message is stored in clear.
        return Err(invalid("Invalid mode", THINK_USAGE));
    }
    Ok(args)
}

fn parallel_args(command: &Command) -> Result<(ThinkParallelArgs, u64), Refusal> {
    let args: ThinkParallelArgs = parse(&command.arguments, PARALLEL_USAGE)?;
    non_empty("problem", &args.problem, PARALLEL_USAGE)?;
    let timeout = match args.timeout {
        None => 30_000,
        Some(t) if (1000.0..=60_000.0).contains(&t) => {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked range
            let t = t.round() as u64;
            t
        }
        Some(t) => {
            return Err(invalid(
                format!("timeout {t} is out of range"),
                "pass timeout in milliseconds from 1000 to 60000 (default 30000)",
            ));
        }
    };
    Ok((args, timeout))
}

fn concurrent(problem: &str, context: Option<&ProblemContext>, timeout_ms: u64) -> ModelStep {
    ModelStep::Concurrent {
        requests: STREAMS
            .iter()
            .map(|s| stream_request(s, problem, context))
            .collect(),
        timeout_ms,
    }
}

pub(super) fn plan_think(_app: &App, command: &Command) -> Result<Option<ModelStep>, Refusal> {
    let args = think_args(command)?;
    model_failed(command)?;
    if !command.prepared.model.answers.is_empty() || no_model(command) {
        return Ok(None);
    }
    Ok(Some(if args.mode == "parallel" {
        concurrent(&args.problem, args.context.as_ref(), 30_000)
    } else {
        ModelStep::Chat(think_request(
            &args.mode,
            &args.problem,
            args.context.as_ref(),
        ))
    }))
}

pub(super) fn plan_parallel(_app: &App, command: &Command) -> Result<Option<ModelStep>, Refusal> {
    let (args, timeout) = parallel_args(command)?;
    model_failed(command)?;
    if !command.prepared.model.answers.is_empty() || no_model(command) {
        return Ok(None);
    }
    Ok(Some(concurrent(
        &args.problem,
        args.context.as_ref(),
        timeout,
    )))
}

pub(super) fn model_of(answer: &ChatOutcome) -> String {
    answer
        .exchange
        .model_reported
        .clone()
        .unwrap_or_else(|| answer.exchange.model_requested.clone())
}

const NO_MODEL: &str = "No model is configured: the conclusion, insights and confidence need \
     one and are null or empty; the steps are the mode's scaffold. Set \
     THINKLEDGER_MODEL_PROVIDER_URL (and THINKLEDGER_MODEL) to have a model reason";

#[derive(Deserialize)]
struct ThinkJson {
    conclusion: String,
    #[serde(default)]
    reasoning: Vec<String>,
    #[serde(default)]
    insights: Vec<String>,
    #[serde(default)]
    confidence: Option<f64>,
}

pub(super) fn decide_think(call: &mut Call<'_>) -> Outcome {
    let args = think_args(call.command)?;
    if args.mode == "parallel" {
        return parallel(call, &args.problem, 30_000, super::THINK_TOOL);
    }
    let steps: Vec<String> = mode(&args.mode)
        .map(|(_, s)| s.iter().map(|x| (*x).to_owned()).collect())
        .unwrap_or_default();
    let Some(answer_) = call.model_answers().first().cloned() else {
        let data = ThinkData {
            conclusion: None,
            reasoning: steps,
            insights: Vec::new(),
            confidence: None,
            status: "scaffold".to_owned(),
            mode: args.mode.clone(),
            provenance: Provenance {
                rules: RULES.to_owned(),
                model: None,
                limitations: vec![NO_MODEL.to_owned()],
            },
        };
        let result = json!({"mode": args.mode, "status": "scaffold"});
        return answer(
            call,
            (super::THINK_TOOL, RULES, None, result, Vec::new()),
            data,
            &["reasoningScaffold"],
        );
    };
    let model = model_of(&answer_);
    let mut limitations = vec![format!(
        "conclusion, reasoning, insights and confidence were written by {model}; the confidence \
         is the model's own report, not a measurement"
    )];
    let (conclusion, reasoning, insights, confidence) =
        match serde_json::from_str::<ThinkJson>(answer_.text().trim()) {
            Ok(j) => (
                j.conclusion,
                j.reasoning,
                j.insights,
                j.confidence.map(|c| round2(c.clamp(0.0, 1.0))),
            ),
            Err(e) => {
                limitations.push(
                    if answer_.exchange.finish_reason.as_deref() == Some("length") {
                        "the model's answer was cut at the token limit before its JSON was \
                         complete; its text, incomplete, is the conclusion and the steps are \
                         the mode's scaffold"
                            .to_owned()
                    } else {
                        format!(
                            "the model's answer was not the JSON asked for ({e}); its text is \
                             the conclusion and the steps are the mode's scaffold"
                        )
                    },
                );
                (answer_.text().trim().to_owned(), steps, Vec::new(), None)
            }
        };
    let mut texts = vec![call.derive_text(&conclusion)];
    for t in reasoning.iter().chain(&insights) {
        texts.push(call.derive_text(t));
    }
    let result = json!({
        "mode": args.mode,
        "status": "completed",
        "confidence": confidence,
        "reasoningSteps": reasoning.len(),
        "insights": insights.len(),
    });
    let data = ThinkData {
        conclusion: Some(conclusion),
        reasoning,
        insights,
        confidence,
        status: "completed".to_owned(),
        mode: args.mode.clone(),
        provenance: Provenance {
            rules: RULES.to_owned(),
            model: Some(model.clone()),
            limitations,
        },
    };
    answer(
        call,
        (super::THINK_TOOL, RULES, Some(model), result, texts),
        data,
        &["reasoningModel"],
    )
}

pub(super) fn decide_parallel(call: &mut Call<'_>) -> Outcome {
    let (args, timeout) = parallel_args(call.command)?;
    parallel(call, &args.problem, timeout, super::THINK_PARALLEL_TOOL)
}
