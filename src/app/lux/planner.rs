//! `planner`: a plan written one step at a time by the model, with revisions and branches; the
//! final step brings the model's synthesis of the plan.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{
    LuxProvenance, Unavailable, branches, chain_session, check_numbering, json_answer, level, line,
    model_used, parse, provenance, request, schema_format, session_of, short_list, short_text,
    temperature,
};
use crate::app::Outcome;
use crate::app::call::model::ModelStep;
use crate::app::call::{Call, PathStep, Refusal};
use crate::app::{App, Command};
use crate::events::Fact;
use crate::events::lux::PlanStepRecorded;
use crate::model::{ChatRequest, Message};
use crate::projections::lux::{LuxSession, PlanStep};

const USAGE: &str = "pass step (the task for step 1, guidance later), step_number, total_steps, \
                     next_step_required; optionally is_step_revision + revises_step_number, \
                     is_branch_point + branch_from_step + branch_id, more_steps_needed, \
                     session_id, model, temperature (0-2, default 0.7)";

const SYSTEM: &str = "You are a careful planner. Write exactly one step of the plan: one short, \
                      concrete, actionable paragraph. Do not repeat earlier steps.";

/// The seed's default temperature.
const DEFAULT_TEMPERATURE: f64 = 0.7;

/// Arguments of `planner` (the seed's `PlannerRequest`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct PlannerArgs {
    /// The task (step 1) or planning guidance for this step.
    #[schemars(extend("x-text" = true))]
    pub step: String,
    /// This step's number, from 1.
    pub step_number: u32,
    /// Estimated total steps.
    pub total_steps: u32,
    /// Whether another step is needed; false ends the plan with a synthesis.
    pub next_step_required: bool,
    #[serde(default)]
    pub is_step_revision: bool,
    #[serde(default)]
    pub revises_step_number: Option<u32>,
    #[serde(default)]
    pub is_branch_point: bool,
    #[serde(default)]
    pub branch_from_step: Option<u32>,
    #[serde(default)]
    pub branch_id: Option<String>,
    #[serde(default)]
    pub more_steps_needed: bool,
    /// Continue this plan's session (default: your current session).
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// 0–2, default 0.7.
    #[serde(default)]
    pub temperature: Option<f64>,
}

/// The seed's `PlannerMetadata`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PlannerMetadata {
    pub branches: Vec<String>,
    pub step_history_length: u32,
    pub is_step_revision: bool,
    pub revises_step_number: Option<u32>,
    pub is_branch_point: bool,
    pub branch_from_step: Option<u32>,
    pub branch_id: Option<String>,
    pub more_steps_needed: bool,
}

/// The seed's planner `SynthesisSnapshot`, written by the model, with what it says needs more
/// thought.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PlanSynthesis {
    pub current_plan: String,
    pub key_decisions: Vec<String>,
    pub next_actions: Vec<String>,
    /// `low`, `medium` or `high`.
    pub confidence_level: String,
    pub ready_for_execution: bool,
    pub thinking_required: bool,
    pub required_thinking: Vec<String>,
}

/// The answer of `planner` (the seed's `PlannerResponse`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PlannerOutput {
    /// `planning` or `complete`.
    pub status: String,
    pub step_number: u32,
    pub total_steps: u32,
    pub next_step_required: bool,
    /// The step the model wrote.
    pub step_content: String,
    pub metadata: PlannerMetadata,
    /// The session handle: pass it as session_id to continue the plan.
    pub continuation_id: Option<String>,
    pub planning_complete: Option<bool>,
    pub plan_summary: Option<String>,
    pub next_steps: Option<String>,
    pub thinking_required: Option<bool>,
    pub required_thinking: Option<Vec<String>>,
    pub planner_required: Option<bool>,
    pub model_used: Option<String>,
    pub synthesis_snapshot: Option<PlanSynthesis>,
    pub session_id: String,
    /// Fields that are null, and why.
    pub unavailable: Unavailable,
    pub provenance: LuxProvenance,
}

fn args(command: &Command) -> Result<PlannerArgs, Refusal> {
    let args: PlannerArgs = parse(command, USAGE)?;
    if args.step.trim().is_empty() {
        return Err(super::invalid("step is empty", USAGE));
    }
    check_numbering(
        args.step_number,
        args.total_steps,
        args.revises_step_number.filter(|_| args.is_step_revision),
        args.branch_from_step,
        [
            "step_number",
            "total_steps",
            "revises_step_number",
            "branch_from_step",
        ],
    )?;
    Ok(args)
}

fn plan_line<'a>(lux: Option<&'a LuxSession>, args: &PlannerArgs) -> Vec<&'a PlanStep> {
    line(
        lux.map(|l| l.plan.as_slice()).unwrap_or_default(),
        |s| (s.fact.branch_id.as_deref(), s.fact.branch_from_step),
        |s| s.fact.step_number,
        args.branch_id.as_deref(),
        args.branch_from_step,
    )
}

/// The task: step 1's text on this session (or this call's, when it is step 1).
fn task<'a>(lux: Option<&'a LuxSession>, args: &'a PlannerArgs) -> &'a str {
    lux.and_then(|l| l.plan.iter().find(|s| s.fact.step_number == 1))
        .map_or(args.step.as_str(), |s| s.guidance.or_erased())
}

fn step_request(
    lux: Option<&LuxSession>,
    args: &PlannerArgs,
    temperature: Option<f64>,
) -> ChatRequest {
    let mut prompt = format!("Task: {}\n", task(lux, args));
    let earlier = plan_line(lux, args);
    if !earlier.is_empty() {
        prompt.push_str("\nPlan so far:\n");
        for s in earlier {
            prompt.push_str(&format!(
                "{}. {}\n",
                s.fact.step_number,
                s.content.or_erased()
            ));
        }
    }
    if args.step_number > 1 {
        prompt.push_str(&format!("\nGuidance: {}\n", args.step));
    }
    if let Some(r) = args.revises_step_number.filter(|_| args.is_step_revision) {
        prompt.push_str(&format!("\nRevise step {r}.\n"));
    }
    prompt.push_str(&format!(
        "\nWrite step {} of about {}.",
        args.step_number,
        args.total_steps.max(args.step_number)
    ));
    request(
        vec![Message::system(SYSTEM), Message::user(&prompt)],
        args.model.as_deref(),
        temperature,
    )
}

fn synthesis_request(lux: Option<&LuxSession>, args: &PlannerArgs, this_step: &str) -> ChatRequest {
    let mut prompt = format!("Task: {}\n\nThe plan:\n", task(lux, args));
    for s in plan_line(lux, args) {
        prompt.push_str(&format!(
            "{}. {}\n",
            s.fact.step_number,
            s.content.or_erased()
        ));
    }
    prompt.push_str(&format!("{}. {this_step}\n", args.step_number));
    prompt.push_str(
        "\nSummarise this plan as JSON: the current plan in one or two sentences, key \
         decisions, next actions, your confidence (low, medium or high), whether it is ready \
         for execution, and whether any point needs more thinking (and which).",
    );
    let mut chat = request(
        vec![
            Message::system("You review plans and answer only with JSON."),
            Message::user(&prompt),
        ],
        args.model.as_deref(),
        Some(0.0),
    );
    chat.response_format = Some(schema_format(
        "plan_synthesis",
        json!({
            "current_plan": short_text(),
            "key_decisions": short_list(),
            "next_actions": short_list(),
            "confidence_level": level(),
            "ready_for_execution": {"type": "boolean"},
            "thinking_required": {"type": "boolean"},
            "required_thinking": short_list(),
        }),
    ));
    chat
}

/// The step, then (on the final step) the synthesis.
pub(super) fn plan(app: &App, command: &Command) -> Result<Option<ModelStep>, Refusal> {
    let args = args(command)?;
    let temperature = temperature(args.temperature, Some(DEFAULT_TEMPERATURE))?;
    let (_, lux) = chain_session(
        app,
        command,
        args.session_id.as_deref(),
        args.step_number == 1,
    )?;
    let answers = &command.prepared.model.answers;
    Ok(match answers.first() {
        None => Some(ModelStep::Chat(step_request(lux, &args, temperature))),
        Some(step) if !args.next_step_required && answers.len() == 1 => Some(ModelStep::Chat(
            synthesis_request(lux, &args, step.text().trim()),
        )),
        Some(_) => None,
    })
}

pub(super) fn decide(call: &mut Call<'_>) -> Outcome {
    let args = args(call.command)?;
    let (target, lux) = chain_session(
        call.app,
        call.command,
        args.session_id.as_deref(),
        args.step_number == 1,
    )?;
    let answers = call.model_answers().to_vec();
    let step = answers
        .first()
        .ok_or_else(|| super::invalid("no model answer", USAGE))?;
    let content = step.text().trim().to_owned();
    let model = model_used(step);
    let mut unavailable = Unavailable::default();
    let synthesis = match answers.get(1) {
        Some(answer) => match json_answer::<PlanSynthesis>(answer) {
            Ok(s) => Some(s),
            Err(reason) => {
                unavailable.note("synthesis_snapshot", reason);
                None
            }
        },
        None => {
            unavailable.note(
                "synthesis_snapshot",
                "the model synthesises the plan on its final step (next_step_required: false)",
            );
            None
        }
    };
    if synthesis.is_none() {
        for field in [
            "plan_summary",
            "next_steps",
            "thinking_required",
            "required_thinking",
        ] {
            unavailable.note(
                field,
                "comes from the model's synthesis, absent on this step",
            );
        }
    }
    let guidance = call
        .recorded_ref(&[PathStep::Key("step")])
        .ok_or_else(|| super::invalid("the step was not recorded as a text", USAGE))?;
    let content_ref = call.derive_text(&content);
    let total = args.total_steps.max(args.step_number);
    let fact = PlanStepRecorded {
        step_number: args.step_number,
        total_steps: total,
        next_step_required: args.next_step_required,
        is_step_revision: args.is_step_revision,
        revises_step_number: args.revises_step_number.filter(|_| args.is_step_revision),
        is_branch_point: args.is_branch_point,
        branch_from_step: args.branch_from_step,
        branch_id: args.branch_id.clone(),
        guidance,
        content: content_ref,
        model: model.clone(),
    };
    let history = lux.map_or(0, |l| l.plan.len()) + 1;
    let mut all_branches = branches(
        lux.map(|l| l.plan.as_slice()).unwrap_or_default(),
        |s: &PlanStep| s.fact.branch_id.as_deref(),
    );
    if let Some(b) = &args.branch_id
        && !all_branches.contains(b)
    {
        all_branches.push(b.clone());
    }
    let complete = !args.next_step_required;
    let (session_id, mut facts) = session_of(call, target);
    let body = PlannerOutput {
        status: if complete { "complete" } else { "planning" }.to_owned(),
        step_number: args.step_number,
        total_steps: total,
        next_step_required: args.next_step_required,
        step_content: content,
        metadata: PlannerMetadata {
            branches: all_branches,
            step_history_length: u32::try_from(history).unwrap_or(u32::MAX),
            is_step_revision: args.is_step_revision,
            revises_step_number: fact.revises_step_number,
            is_branch_point: args.is_branch_point,
            branch_from_step: args.branch_from_step,
            branch_id: args.branch_id.clone(),
            more_steps_needed: args.more_steps_needed,
        },
        continuation_id: Some(session_id.to_string()),
        planning_complete: Some(complete),
        plan_summary: synthesis.as_ref().map(|s| s.current_plan.clone()),
        next_steps: synthesis.as_ref().map(|s| s.next_actions.join("; ")),
        thinking_required: synthesis.as_ref().map(|s| s.thinking_required),
        required_thinking: synthesis.as_ref().map(|s| s.required_thinking.clone()),
        planner_required: Some(args.next_step_required || args.more_steps_needed),
        model_used: Some(model.clone()),
        synthesis_snapshot: synthesis,
        session_id: session_id.to_string(),
        unavailable,
        provenance: provenance(&model),
    };

    facts.push(Fact::PlanStepRecorded(fact));
    call.done(Some(session_id), facts, body)
}
