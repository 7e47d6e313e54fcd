//! `biased_reasoning`: a primary model reasons about a question and a verifier model checks
//! each reasoning step for cognitive bias, visibly; a bias found is corrected by the primary
//! model; after `max_analysis_rounds` rounds the primary model writes the final synthesis. One
//! step per call. What comes next is a rule of the session's recorded steps:
//!
//! | last step | next step | `next_action` it announces |
//! |---|---|---|
//! | none | `Reasoning` (round 1) | `BiasCheck` |
//! | `Reasoning` | `BiasAnalysis` (verifier) | `ContinueReasoning` (a correction or the next round) or `Synthesize` |
//! | `BiasAnalysis` that found a bias | `Correction` | `ContinueReasoning` or `Synthesize` |
//! | `BiasAnalysis` without bias, or `Correction` | `Reasoning` (next round), or `Synthesis` once the rounds are done | `BiasCheck` / `Complete` |

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{
    LuxProvenance, Unavailable, json_answer, level, model_used, parse, provenance, request,
    schema_format, session, session_of, short_list, short_text,
};
use crate::app::Outcome;
use crate::app::call::model::ModelStep;
use crate::app::call::{Call, PathStep, Refusal, Target};
use crate::app::{App, Command, ErrorCode, Rejection};
use crate::events::lux::{BiasFound, BiasedStepRecorded};
use crate::events::{Fact, TextRef};
use crate::model::{ChatOutcome, ChatRequest, Message};
use crate::projections::lux::{BiasedStep, LuxSession};

const USAGE: &str = "pass query; optionally session_id, new_session, max_analysis_rounds \
                     (1-10, default 3), primary_model, verifier_model";

const DEFAULT_ROUNDS: u32 = 3;
const MAX_ROUNDS: u32 = 10;

/// Arguments of `biased_reasoning` (the seed's `BiasedReasoningRequest`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct BiasedReasoningArgs {
    /// The question (guidance on later calls of a session).
    #[schemars(extend("x-text" = true))]
    pub query: String,
    #[serde(default)]
    pub session_id: Option<String>,
    /// Start a new session even if your current one has a run.
    #[serde(default)]
    pub new_session: bool,
    /// Reasoning rounds before the synthesis (1–10, default 3; set by a session's first call).
    #[serde(default)]
    pub max_analysis_rounds: Option<u32>,
    /// The model that reasons, corrects and synthesises.
    #[serde(default)]
    pub primary_model: Option<String>,
    /// The model that checks for bias (default: the primary model).
    #[serde(default)]
    pub verifier_model: Option<String>,
}

/// The seed's `SessionStatus`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SessionStatus {
    pub total_steps: u32,
    pub reasoning_rounds: u32,
    pub biases_detected: u32,
    pub corrections_made: u32,
    pub is_complete: bool,
}

/// The seed's `BiasInfo`, from the verifier model.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BiasInfo {
    pub bias_type: String,
    /// `low`, `medium` or `high`.
    pub severity: String,
    pub description: String,
    pub suggested_correction: String,
}

/// The seed's biased-reasoning `SynthesisSnapshot`, from the primary model.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BiasedSynthesis {
    pub current_understanding: String,
    pub top_insights: Vec<String>,
    pub next_actions: Vec<String>,
    pub confidence_level: String,
    pub ready_for_decision: bool,
}

/// The answer of `biased_reasoning` (the seed's `BiasedReasoningResponse`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BiasedReasoningOutput {
    /// `Reasoning`, `BiasAnalysis`, `Correction` or `Synthesis`.
    pub step_type: String,
    pub step_number: u32,
    pub content: String,
    pub model_used: String,
    /// `BiasCheck`, `ContinueReasoning`, `Synthesize` or `Complete`.
    pub next_action: String,
    pub session_id: String,
    pub session_status: SessionStatus,
    pub bias_detected: Option<BiasInfo>,
    pub synthesis_snapshot: Option<BiasedSynthesis>,
    pub final_synthesis: Option<String>,
    /// Fields that are null, and why.
    pub unavailable: Unavailable,
    pub provenance: LuxProvenance,
}

/// The verifier's answer.
#[derive(Debug, Deserialize)]
struct Analysis {
    bias_detected: bool,
    bias_type: String,
    severity: String,
    description: String,
    suggested_correction: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Reasoning,
    BiasAnalysis,
    Correction,
    Synthesis,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Reasoning => "Reasoning",
            Kind::BiasAnalysis => "BiasAnalysis",
            Kind::Correction => "Correction",
            Kind::Synthesis => "Synthesis",
        }
    }
}

fn args(command: &Command) -> Result<BiasedReasoningArgs, Refusal> {
    let args: BiasedReasoningArgs = parse(command, USAGE)?;
    if args.query.trim().is_empty() {
        return Err(super::invalid("query is empty", USAGE));
    }
    if args
        .max_analysis_rounds
        .is_some_and(|r| r == 0 || r > MAX_ROUNDS)
    {
        return Err(super::invalid(
            format!("max_analysis_rounds must be 1-{MAX_ROUNDS}"),
            USAGE,
        ));
    }
    Ok(args)
}

/// The steps the call continues (none for a new session).
fn steps<'a>(
    app: &'a App,
    command: &Command,
    args: &BiasedReasoningArgs,
) -> Result<(Option<Target<'a>>, &'a [BiasedStep]), Refusal> {
    if args.new_session {
        return Ok((None, &[]));
    }
    let (target, lux) = session(app, command, args.session_id.as_deref())?;
    let steps = lux
        .map(|l: &LuxSession| l.biased.as_slice())
        .unwrap_or_default();
    if steps
        .last()
        .is_some_and(|s| s.fact.next_action == "Complete")
    {
        return Err((
            Rejection::new(
                ErrorCode::SessionClosed,
                format!(
                    "the biased-reasoning run of session {} is complete",
                    target.id()
                ),
                "pass new_session: true to analyse a new question",
            ),
            target.existing_id(),
        ));
    }
    Ok((Some(target), steps))
}

fn rounds_of(steps: &[BiasedStep]) -> u32 {
    let n = steps
        .iter()
        .filter(|s| s.fact.step_type == Kind::Reasoning.name())
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn max_rounds(steps: &[BiasedStep], args: &BiasedReasoningArgs) -> u32 {
    steps
        .iter()
        .find_map(|s| s.fact.max_analysis_rounds)
        .or(args.max_analysis_rounds)
        .unwrap_or(DEFAULT_ROUNDS)
}

/// The kind of step this call takes (the module's table).
fn kind(steps: &[BiasedStep], args: &BiasedReasoningArgs) -> Kind {
    let Some(last) = steps.last() else {
        return Kind::Reasoning;
    };
    match last.fact.step_type.as_str() {
        "Reasoning" => Kind::BiasAnalysis,
        "BiasAnalysis" if last.fact.bias.is_some() => Kind::Correction,
        _ if rounds_of(steps) >= max_rounds(steps, args) => Kind::Synthesis,
        _ => Kind::Reasoning,
    }
}

/// The transcript of the reasoning so far, for the models.
fn transcript(steps: &[BiasedStep]) -> String {
    let mut out = String::new();
    for s in steps {
        let label = match s.fact.step_type.as_str() {
            "Reasoning" => "Reasoning",
            "BiasAnalysis" => "Bias check",
            "Correction" => "Corrected reasoning",
            other => other,
        };
        out.push_str(&format!("{label}: {}\n", s.content.or_erased()));
    }
    out
}

fn primary(args: &BiasedReasoningArgs) -> Option<&str> {
    args.primary_model.as_deref()
}

fn verifier(args: &BiasedReasoningArgs) -> Option<&str> {
    args.verifier_model
        .as_deref()
        .or(args.primary_model.as_deref())
}

fn step_request(steps: &[BiasedStep], args: &BiasedReasoningArgs, kind: Kind) -> ChatRequest {
    let q = session_question(steps, args);
    let so_far = transcript(steps);
    let guidance = if steps.is_empty() || args.query.trim() == q.trim() {
        String::new()
    } else {
        format!("\nGuidance from the user: {}\n", args.query)
    };
    match kind {
        Kind::Reasoning => request(
            vec![
                Message::system(
                    "You reason carefully and concisely about a question, weighing evidence \
                     on every side.",
                ),
                Message::user(&format!(
                    "Question: {q}\n{}{guidance}\nGive your reasoning in one short paragraph.",
                    if so_far.is_empty() {
                        String::new()
                    } else {
                        format!("\nSo far:\n{so_far}")
                    }
                )),
            ],
            primary(args),
            Some(0.0),
        ),
        Kind::BiasAnalysis => {
            let last = steps.last().map_or("", |s| s.content.or_erased());
            let mut chat = request(
                vec![
                    Message::system(
                        "You check reasoning for cognitive biases (confirmation, anchoring, \
                         availability, overconfidence, framing, sunk cost, status quo, \
                         groupthink). Answer only with JSON.",
                    ),
                    Message::user(&format!(
                        "Question: {q}\n\nReasoning to check: {last}\n\nDoes this reasoning \
                         show a cognitive bias? Name it, rate its severity, describe it and \
                         suggest a correction."
                    )),
                ],
                verifier(args),
                Some(0.0),
            );
            chat.response_format = Some(schema_format(
                "bias_analysis",
                json!({
                    "bias_detected": {"type": "boolean"},
                    "bias_type": {"type": "string", "maxLength": 60},
                    "severity": level(),
                    "description": short_text(),
                    "suggested_correction": short_text(),
                }),
            ));
            chat
        }
        Kind::Correction => {
            let (reasoning, bias) = last_reasoning_and_bias(steps);
            request(
                vec![
                    Message::system(
                        "You correct reasoning so that it is free of the bias named. Answer \
                         with the corrected reasoning in one short paragraph.",
                    ),
                    Message::user(&format!(
                        "Question: {q}\n\nReasoning: {reasoning}\n\nBias found: {bias}\n\n\
                         Rewrite the reasoning without this bias."
                    )),
                ],
                primary(args),
                Some(0.0),
            )
        }
        Kind::Synthesis => request(
            vec![
                Message::system("You write the final, balanced answer to a question."),
                Message::user(&format!(
                    "Question: {q}\n\nReasoning and checks:\n{so_far}{guidance}\nWrite the \
                     final synthesis in one short paragraph."
                )),
            ],
            primary(args),
            Some(0.0),
        ),
    }
}

fn snapshot_request(
    steps: &[BiasedStep],
    args: &BiasedReasoningArgs,
    synthesis: &str,
) -> ChatRequest {
    let q = session_question(steps, args);
    let mut chat = request(
        vec![
            Message::system("You summarise an analysis and answer only with JSON."),
            Message::user(&format!(
                "Question: {q}\n\nFinal synthesis: {synthesis}\n\nSummarise as JSON: the \
                 current understanding, top insights, next actions, your confidence (low, \
                 medium or high), and whether it is ready for a decision."
            )),
        ],
        primary(args),
        Some(0.0),
    );
    chat.response_format = Some(schema_format(
        "analysis_snapshot",
        json!({
            "current_understanding": short_text(),
            "top_insights": short_list(),
            "next_actions": short_list(),
            "confidence_level": level(),
            "ready_for_decision": {"type": "boolean"},
        }),
    ));
    chat
}

/// The session's question: what its first step answered (kept as that step's guidance in the
/// recorded arguments), else this call's query.
fn session_question<'a>(steps: &'a [BiasedStep], args: &'a BiasedReasoningArgs) -> &'a str {
    steps
        .first()
        .and_then(|s| s.question.as_ref())
        .map_or(args.query.as_str(), |q| q.or_erased())
}

fn last_reasoning_and_bias(steps: &[BiasedStep]) -> (String, String) {
    let reasoning = steps
        .iter()
        .rev()
        .find(|s| s.fact.step_type == "Reasoning" || s.fact.step_type == "Correction")
        .map_or(String::new(), |s| s.content.or_erased().to_owned());
    let bias = steps
        .last()
        .and_then(|s| {
            let (t, d, c) = s.bias.as_ref()?;
            let b = s.fact.bias.as_ref()?;
            Some(format!(
                "{} ({}): {}. Suggested correction: {}",
                t.or_erased(),
                b.severity,
                d.or_erased(),
                c.or_erased()
            ))
        })
        .unwrap_or_default();
    (reasoning, bias)
}

/// The step's model call; for the synthesis, then the snapshot.
pub(super) fn plan(app: &App, command: &Command) -> Result<Option<ModelStep>, Refusal> {
    let args = args(command)?;
    let (_, steps) = steps(app, command, &args)?;
    let kind = kind(steps, &args);
    let answers = &command.prepared.model.answers;
    Ok(match (answers.first(), kind) {
        (None, _) => Some(ModelStep::Chat(step_request(steps, &args, kind))),
        (Some(synthesis), Kind::Synthesis) if answers.len() == 1 => Some(ModelStep::Chat(
            snapshot_request(steps, &args, synthesis.text().trim()),
        )),
        _ => None,
    })
}

/// A BiasAnalysis step's verdict read from the verifier's answer: the bias it reports (and
/// `content` becomes its description), or no bias (`content` says so); an answer that cannot
/// be read, or a severity outside low/medium/high, reports none and says why. Other steps
/// report no bias.
fn read_analysis(
    kind: Kind,
    answer: &ChatOutcome,
    content: &mut String,
    unavailable: &mut Unavailable,
) -> Option<BiasInfo> {
    if kind != Kind::BiasAnalysis {
        unavailable.note("bias_detected", "only a BiasAnalysis step reports a bias");
        return None;
    }
    match json_answer::<Analysis>(answer) {
        Ok(a) if a.bias_detected && !["low", "medium", "high"].contains(&a.severity.as_str()) => {
            unavailable.note(
                "bias_detected",
                format!(
                    "the verifier's severity {:?} is not low, medium or high, so no bias is \
                     reported",
                    a.severity
                ),
            );
            None
        }
        Ok(a) if a.bias_detected => {
            *content = a.description.clone();
            Some(BiasInfo {
                bias_type: a.bias_type,
                severity: a.severity,
                description: a.description,
                suggested_correction: a.suggested_correction,
            })
        }
        Ok(a) => {
            *content = format!("No bias found. {}", a.description);
            None
        }
        Err(reason) => {
            unavailable.note(
                "bias_detected",
                format!(
                    "the verifier's analysis could not be read, so no bias is reported: {reason}"
                ),
            );
            None
        }
    }
}

/// What comes after this step: a bias check after reasoning, more reasoning after a bias or
/// while rounds remain, then the synthesis, then nothing.
fn next_action(kind: Kind, bias_found: bool, rounds: u32, max: u32) -> &'static str {
    match kind {
        Kind::Reasoning => "BiasCheck",
        Kind::BiasAnalysis if bias_found => "ContinueReasoning",
        Kind::BiasAnalysis | Kind::Correction if rounds < max => "ContinueReasoning",
        Kind::BiasAnalysis | Kind::Correction => "Synthesize",
        Kind::Synthesis => "Complete",
    }
}

/// The synthesis snapshot the model writes with the final synthesis (its second answer); none
/// before, with why.
fn synthesis(
    kind: Kind,
    answers: &[ChatOutcome],
    unavailable: &mut Unavailable,
) -> Option<BiasedSynthesis> {
    if kind == Kind::Synthesis {
        match answers.get(1).map(json_answer::<BiasedSynthesis>) {
            Some(Ok(s)) => Some(s),
            Some(Err(reason)) => {
                unavailable.note("synthesis_snapshot", reason);
                None
            }
            None => None,
        }
    } else {
        unavailable.note(
            "synthesis_snapshot",
            "the model writes it with the final synthesis",
        );
        unavailable.note(
            "final_synthesis",
            "written once the analysis rounds are done",
        );
        None
    }
}

/// `biased_reasoning`: one step (reasoning, bias analysis, correction or synthesis) written by
/// the model, read, recorded and answered with the session's progress.
pub(super) fn decide(call: &mut Call<'_>) -> Outcome {
    let args = args(call.command)?;
    let (target, steps) = steps(call.app, call.command, &args)?;
    let kind = kind(steps, &args);
    let answers = call.model_answers().to_vec();
    let answer = answers
        .first()
        .ok_or_else(|| super::invalid("no model answer", USAGE))?;
    let model = model_used(answer);
    let mut unavailable = Unavailable::default();
    let max = max_rounds(steps, &args);
    let rounds = rounds_of(steps) + u32::from(kind == Kind::Reasoning);
    let mut content = answer.text().trim().to_owned();
    let bias = read_analysis(kind, answer, &mut content, &mut unavailable);
    let next_action = next_action(kind, bias.is_some(), rounds, max);
    let synthesis = synthesis(kind, &answers, &mut unavailable);
    let query = call
        .recorded_ref(&[PathStep::Key("query")])
        .ok_or_else(|| super::invalid("the query was not recorded as a text", USAGE))?;
    let content_ref: TextRef = call.derive_text(&content);
    let bias_found = bias.as_ref().map(|b| BiasFound {
        bias_type: call.derive_text(&b.bias_type),
        severity: b.severity.clone(),
        description: call.derive_text(&b.description),
        suggested_correction: call.derive_text(&b.suggested_correction),
    });
    let (session_id, mut facts) = session_of(call, target);
    let step_number = u32::try_from(steps.len() + 1).unwrap_or(u32::MAX);
    facts.push(Fact::BiasedStepRecorded(BiasedStepRecorded {
        step_number,
        step_type: kind.name().to_owned(),
        content: content_ref,
        model: model.clone(),
        next_action: next_action.to_owned(),
        max_analysis_rounds: steps.is_empty().then_some(max),
        question: steps.is_empty().then_some(query),
        bias: bias_found,
    }));
    let count = |name: &str| {
        u32::try_from(steps.iter().filter(|s| s.fact.step_type == name).count()).unwrap_or(u32::MAX)
    };
    let biases = u32::try_from(steps.iter().filter(|s| s.fact.bias.is_some()).count())
        .unwrap_or(u32::MAX)
        + u32::from(bias.is_some());
    let body = BiasedReasoningOutput {
        step_type: kind.name().to_owned(),
        step_number,
        content: content.clone(),
        model_used: model.clone(),
        next_action: next_action.to_owned(),
        session_id: session_id.to_string(),
        session_status: SessionStatus {
            total_steps: step_number,
            reasoning_rounds: rounds,
            biases_detected: biases,
            corrections_made: count("Correction") + u32::from(kind == Kind::Correction),
            is_complete: kind == Kind::Synthesis,
        },
        bias_detected: bias,
        synthesis_snapshot: synthesis,
        final_synthesis: (kind == Kind::Synthesis).then_some(content),
        unavailable,
        provenance: provenance(&model),
    };
    call.done(Some(session_id), facts, body)
}
