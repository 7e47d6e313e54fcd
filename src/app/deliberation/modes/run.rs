//! `run_thinking_mode` and its compatibility flow `reasoning_autopilot`: route (Auto), start a
//! deliberation if the session has none, add the mode's scaffold nodes and record the route.
//!
//! Owns: a run's order (continue or start, route, subject, scaffold, record). Must not know: the
//! router's rules (it asks `classify`) or what each mode scaffolds (`scaffolds`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::scaffold::{NodeSpec, Scaffold, preview};
use super::catalog::{EstimatedCost, ThinkingModeContract, contract, estimated_cost, mode_named};
use super::plans::{PlanStep, autopilot_steps, next_tools};
use super::router::{classify, route_fact, safety_notes};
use super::scaffolds::{SCAFFOLD_LIMITATIONS, scaffold_mode, tags};
use super::{existing_deliberation, profile_of};
use crate::app::ErrorCode;
use crate::app::call::{Call, PathStep, Refusal};
use crate::app::deliberation::budgets::{BudgetArgs, budgets_or_refuse, profile_or_refuse};
use crate::app::deliberation::injection::shown;
use crate::app::deliberation::mode::{Mode, mode_or_refuse};
use crate::app::deliberation::outputs::{AnalysisOut, NodeOut, RouteDecisionOut};
use crate::app::deliberation::start::{StartPlan, Started, plan_start};
use crate::app::deliberation::{REASONING_AUTOPILOT_TOOL, RUN_THINKING_MODE_TOOL};
use crate::app::providers::{HEURISTIC, SOT_HEURISTIC_SCAFFOLD};
use crate::app::{Outcome, Rejection};
use crate::events::deliberation::{AnalysisMetadata, RouteDecision};
use crate::events::{Fact, SessionId};
use crate::projections::{Deliberation, DeliberationState};

/// Arguments of `run_thinking_mode`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct RunModeArgs {
    /// Auto (default), Quick, Explore, Map, Sketch or Test (or cot, tot, got, reasonkit).
    #[serde(default)]
    #[schemars(with = "String")]
    pub mode: Option<String>,
    /// The question or task. Required to start a deliberation; in a session that holds one it
    /// becomes the subject node the scaffold hangs from (omit it to scaffold under the root).
    #[serde(default)]
    #[schemars(with = "String")]
    #[schemars(extend("x-text" = true))]
    pub goal: Option<String>,
    /// quick, balanced, deep or paranoid (default balanced; an existing deliberation keeps its
    /// own).
    #[serde(default)]
    #[schemars(with = "String")]
    pub profile: Option<String>,
    /// Constraints the answer must respect (used when a deliberation starts).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    #[schemars(extend("x-text" = true))]
    pub constraints: Option<Vec<String>>,
    /// Budget overrides (used when a deliberation starts).
    #[serde(default)]
    #[schemars(with = "BudgetArgs")]
    pub budgets: Option<BudgetArgs>,
    /// The session to run in (default: your current session's deliberation if it has one, else a
    /// new deliberation).
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Arguments of `reasoning_autopilot`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AutopilotArgs {
    /// The question or task. Required to start a deliberation; in a session that holds one it
    /// becomes the subject node the scaffold hangs from (omit it to scaffold under the root).
    #[serde(default)]
    #[schemars(with = "String")]
    #[schemars(extend("x-text" = true))]
    pub goal: Option<String>,
    /// quick, balanced, deep or paranoid (default balanced; an existing deliberation keeps its
    /// own).
    #[serde(default)]
    #[schemars(with = "String")]
    pub profile: Option<String>,
    /// Constraints the answer must respect (used when a deliberation starts).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    #[schemars(extend("x-text" = true))]
    pub constraints: Option<Vec<String>>,
    /// Budget overrides (used when a deliberation starts).
    #[serde(default)]
    #[schemars(with = "BudgetArgs")]
    pub budgets: Option<BudgetArgs>,
    /// The session to run in (default: your current session's deliberation if it has one, else a
    /// new deliberation).
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Response of `run_thinking_mode`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunModeOutput {
    pub session_id: String,
    pub deliberation_id: String,
    /// Whether this call started the deliberation.
    pub started: bool,
    pub user_mode: String,
    pub internal_method: String,
    pub mode_rationale: String,
    pub safety_notes: Vec<String>,
    pub estimated_cost: EstimatedCost,
    pub mode_contract: ThinkingModeContract,
    pub route_decision: RouteDecisionOut,
    /// Always null: no model calibrates the route.
    pub semantic_confidence: Option<f64>,
    pub route_id: String,
    /// The skeleton phase a Sketch run started.
    pub phase_id: Option<String>,
    /// Every node this call added, in order (the root first when it started the deliberation).
    pub nodes_created: Vec<NodeOut>,
    pub next_tools: Vec<String>,
    pub analysis: AnalysisOut,
}

/// Response of `reasoning_autopilot`: a run in Auto mode, and the plan to follow.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AutopilotOutput {
    #[serde(flatten)]
    pub run: RunModeOutput,
    /// Ordered steps the client should run next for the chosen mode.
    pub autopilot_plan: Vec<PlanStep>,
}

struct RunRequest<'r> {
    mode: Mode,
    goal: Option<&'r str>,
    profile: Option<&'r str>,
    constraints: &'r [String],
    budgets: Option<&'r BudgetArgs>,
    session_id: Option<&'r str>,
    /// The tool deciding, recorded as the route's source.
    source: &'static str,
}

struct RunResult {
    body: RunModeOutput,
    plan: Vec<PlanStep>,
    session_id: SessionId,
    facts: Vec<Fact>,
}

fn goal_required() -> Refusal {
    (
        Rejection::new(
            ErrorCode::InvalidArguments,
            "goal is required to start a deliberation",
            "send goal (the question or task); or pass the session_id of a session that holds \
             a deliberation to continue it",
        ),
        None,
    )
}

/// A run's route: the mode it scaffolds, how sure the router is and why.
struct Route {
    mode: Mode,
    confidence: f64,
    rationale: String,
}

/// Runs a mode: the deliberation to continue or the one to start, the route (the router's for
/// Auto), the subject node, the mode's scaffold, then the route fact and the response.
fn run(call: &mut Call<'_>, req: RunRequest<'_>) -> Result<RunResult, Refusal> {
    let profile_arg = req
        .profile
        .map(|p| profile_or_refuse(Some(p)))
        .transpose()?;
    let existing = deliberation_to_continue(call, &req)?;
    let routing_text = routing_text(call, &req, existing)?;
    let route = route(req.mode, &routing_text);
    let mode = route.mode;
    let mut notes = Vec::new();
    let mut facts = Vec::new();
    let mut preview_state: Option<DeliberationState> = None;
    let (d, started, profile) = match existing {
        Some(d) => {
            notes = continuing_notes(d, &req, mode);
            (d, false, profile_of(d))
        }
        None => {
            let profile = profile_arg.unwrap_or("balanced");
            let started = start_for_run(call, &req, mode, profile)?;
            preview_state = Some(preview(&started, call.at));
            let Some(d) = preview_state
                .as_ref()
                .and_then(|state| state.get(&started.session_id))
            else {
                return Err((
                    Rejection::new(
                        ErrorCode::InvalidArguments,
                        "the deliberation could not be planned",
                        "retry without session_id",
                    ),
                    None,
                ));
            };
            facts = started.facts;
            (d, true, profile)
        }
    };
    let mut all_notes = safety_notes(mode, profile);
    all_notes.append(&mut notes);
    let mut notes = all_notes;
    let mut s = Scaffold::new(d);
    let mut created = Vec::new();
    let subject = match (started, req.goal) {
        (false, Some(goal)) => add_subject(call, &mut s, mode, goal)?,
        _ => d.root_node_id.clone(),
    };
    if let (Some(state), Some(root)) = (&preview_state, d.node(&d.root_node_id)) {
        let mut out = NodeOut::of(state, root);
        out.content = Some(routing_text.clone());
        created.push(out);
    }
    let phase = scaffold_mode(call, &mut s, mode, &subject, &routing_text)?;
    let phase_id = sketch_phase_id(phase.as_ref(), &mut notes);
    created.extend(s.nodes_out(call.at));
    let source_ids: Vec<String> = std::iter::once(subject.clone())
        .chain(s.edit.planned().iter().map(|n| n.node_id.clone()))
        .collect();
    facts.extend(s.into_facts());
    facts.extend(phase);
    let decision = RouteDecision {
        decision: mode.user_mode.to_owned(),
        confidence: route.confidence,
        rationale: route.rationale.clone(),
        blocking_gaps: Vec::new(),
    };
    let route_id = format!("route-{}", d.routes.len() + 1);
    facts.push(route_fact(d, req.source, mode, decision.clone()));
    let plan = autopilot_steps(mode, profile);
    let analysis = run_analysis(call, mode, source_ids);
    let session_id = d.session_id.clone();
    let body = RunModeOutput {
        session_id: session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
        started,
        user_mode: mode.user_mode.to_owned(),
        internal_method: mode.internal_method.to_owned(),
        mode_rationale: route.rationale,
        safety_notes: notes,
        estimated_cost: estimated_cost(mode, profile),
        mode_contract: contract(mode),
        route_decision: RouteDecisionOut::from(&decision),
        semantic_confidence: None,
        route_id,
        phase_id,
        nodes_created: created,
        next_tools: next_tools(&plan),
        analysis: AnalysisOut::from(&analysis),
    };
    Ok(RunResult {
        body,
        plan,
        session_id,
        facts,
    })
}

/// The deliberation a run continues, if any. A concluded deliberation no longer changes: a run
/// that names no session starts a new deliberation (in a new session) rather than being
/// refused. Refuses an empty goal sent to continue one.
fn deliberation_to_continue<'a>(
    call: &Call<'a>,
    req: &RunRequest<'_>,
) -> Result<Option<&'a Deliberation>, Refusal> {
    let existing = match existing_deliberation(call, req.session_id)? {
        Some(d) if d.status == "concluded" && req.session_id.is_none() => None,
        Some(_) => Some(call.open_deliberation(req.session_id)?),
        None => None,
    };
    if let (Some(_), Some(goal)) = (existing, req.goal)
        && goal.trim().is_empty()
    {
        return Err((
            Rejection::new(
                ErrorCode::InvalidArguments,
                "goal is empty",
                "omit goal to scaffold under the deliberation's root, or state the sub-goal",
            ),
            None,
        ));
    }
    Ok(existing)
}

/// What the router reads: the goal as stored (redacted if the scan matched), else the goal of
/// the deliberation continued; with neither, the goal is required.
fn routing_text(
    call: &Call<'_>,
    req: &RunRequest<'_>,
    existing: Option<&Deliberation>,
) -> Result<String, Refusal> {
    match (req.goal, existing) {
        (Some(goal), _) => Ok(shown(goal, "goal")),
        (None, Some(d)) => Ok(call
            .app
            .deliberations()
            .text(&d.goal)
            .unwrap_or_default()
            .to_owned()),
        (None, None) => Err(goal_required()),
    }
}

/// The route: the router's choice for Auto, else the caller's mode at full confidence.
fn route(asked: Mode, routing_text: &str) -> Route {
    if asked.user_mode == "Auto" {
        let routed = classify(routing_text);
        return Route {
            mode: routed.mode,
            confidence: routed.confidence,
            rationale: routed.rationale,
        };
    }
    Route {
        mode: asked,
        confidence: 1.0,
        rationale: format!(
            "{} chosen by the caller (internal {}); no routing rule applied",
            asked.user_mode, asked.internal_method
        ),
    }
}

/// What a run that continues `d` tells the caller: settings that only apply at start were
/// ignored, and a route to another mode leaves the deliberation's mode as it was.
fn continuing_notes(d: &Deliberation, req: &RunRequest<'_>, mode: Mode) -> Vec<String> {
    let mut notes = Vec::new();
    if req.profile.is_some() || req.budgets.is_some() || !req.constraints.is_empty() {
        notes.push(format!(
            "profile, budgets and constraints apply when a deliberation starts; {} keeps its \
             own (profile {})",
            d.deliberation_id, d.profile
        ));
    }
    if d.user_mode != mode.user_mode {
        notes.push(format!(
            "{} was started in {}; this run records a route to {} without changing its mode",
            d.deliberation_id, d.user_mode, mode.user_mode
        ));
    }
    notes
}

/// Plans the deliberation a run starts, with the profile's budgets (or the caller's within
/// them); the goal is required.
fn start_for_run(
    call: &mut Call<'_>,
    req: &RunRequest<'_>,
    mode: Mode,
    profile: &'static str,
) -> Result<Started, Refusal> {
    let budgets = budgets_or_refuse(profile, req.budgets)?;
    let goal = req.goal.ok_or_else(goal_required)?;
    plan_start(
        call,
        &StartPlan {
            session_id: req.session_id,
            goal,
            goal_path: &[PathStep::Key("goal")],
            constraints: req.constraints,
            constraints_key: "constraints",
            mode,
            profile,
            budgets,
        },
    )
}

/// The subject node of a run that continues a deliberation with a goal of its own: the goal as
/// the caller stated it, under the root.
fn add_subject(
    call: &mut Call<'_>,
    s: &mut Scaffold<'_>,
    mode: Mode,
    goal: &str,
) -> Result<String, Refusal> {
    let spec = NodeSpec {
        parents: vec![s.edit.d.root_node_id.clone()],
        branch_id: "main".to_owned(),
        kind: "thought",
        tags: tags(&["run_goal"]),
        analysis: call.analysis(
            mode.user_mode,
            "run.subject_as_given",
            "caller",
            Vec::new(),
            &["the subject of this run as the caller stated it"],
        ),
    };
    s.caller(call, spec, "goal", &[PathStep::Key("goal")], goal)
}

/// The Sketch phase's id, with a note when the goal reads as sequential reasoning.
fn sketch_phase_id(phase: Option<&Fact>, notes: &mut Vec<String>) -> Option<String> {
    let Some(Fact::SkeletonPhaseStarted(p)) = phase else {
        return None;
    };
    if !p.suitability.suitable {
        notes.push(format!(
            "skeleton suitability is low ({:.2}): the goal reads as sequential reasoning; the \
             phase was started anyway — consider Quick or Map",
            p.suitability.score
        ));
    }
    Some(p.phase_id.clone())
}

/// The run's analysis: the mode's scaffold method over the subject and every node it planned.
fn run_analysis(call: &Call<'_>, mode: Mode, source_ids: Vec<String>) -> AnalysisMetadata {
    let method = format!("run.{}_scaffold", mode.internal_method);
    let provider = if mode.user_mode == "Sketch" {
        SOT_HEURISTIC_SCAFFOLD
    } else {
        HEURISTIC
    };
    call.analysis(
        mode.user_mode,
        &method,
        provider,
        source_ids,
        SCAFFOLD_LIMITATIONS,
    )
}

/// Decides `run_thinking_mode`: routes (Auto), starts a deliberation if the session has none,
/// scaffolds the mode's workflow and records the route.
pub(crate) fn decide_run_thinking_mode(call: &mut Call<'_>) -> Outcome {
    let args: RunModeArgs = call.parse(
        "run_thinking_mode takes {mode?: Auto|Quick|Explore|Map|Sketch|Test, goal?: string, \
         profile?: quick|balanced|deep|paranoid, constraints?: [string], budgets?: {…}, \
         session_id?: string}",
    )?;
    let mode = mode_or_refuse(args.mode.as_deref(), "Auto")?;
    let constraints = args.constraints.unwrap_or_default();
    let result = run(
        call,
        RunRequest {
            mode,
            goal: args.goal.as_deref(),
            profile: args.profile.as_deref(),
            constraints: &constraints,
            budgets: args.budgets.as_ref(),
            session_id: args.session_id.as_deref(),
            source: RUN_THINKING_MODE_TOOL,
        },
    )?;
    call.done(Some(result.session_id), result.facts, result.body)
}

/// Decides `reasoning_autopilot`: `run_thinking_mode` in Auto, with the plan to follow.
pub(crate) fn decide_autopilot(call: &mut Call<'_>) -> Outcome {
    let args: AutopilotArgs = call.parse(
        "reasoning_autopilot takes {goal?: string, profile?: quick|balanced|deep|paranoid, \
         constraints?: [string], budgets?: {…}, session_id?: string}",
    )?;
    let constraints = args.constraints.unwrap_or_default();
    let result = run(
        call,
        RunRequest {
            mode: mode_named("Auto"),
            goal: args.goal.as_deref(),
            profile: args.profile.as_deref(),
            constraints: &constraints,
            budgets: args.budgets.as_ref(),
            session_id: args.session_id.as_deref(),
            source: REASONING_AUTOPILOT_TOOL,
        },
    )?;
    let body = AutopilotOutput {
        run: result.body,
        autopilot_plan: result.plan,
    };
    call.done(Some(result.session_id), result.facts, body)
}
