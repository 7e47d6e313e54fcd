//! `run_thinking_mode` and its compatibility flow `reasoning_autopilot`: route (Auto), start a
//! deliberation if the session has none, add the mode's scaffold nodes and record the route.
//!
//! Owns: what each mode scaffolds. Must not know: the router's rules (it asks `classify`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::scaffold::{NodeSpec, Scaffold, preview};
use super::super::skeleton::{self, SkeletonPlan};
use super::catalog::{
    EstimatedCost, ThinkingModeContract, contract, estimated_cost, mode_named, strings,
};
use super::plans::{PlanStep, autopilot_steps, next_tools};
use super::router::{classify, route_fact, safety_notes};
use super::{existing_deliberation, profile_of};
use crate::app::ErrorCode;
use crate::app::call::{Call, PathStep, Refusal};
use crate::app::deliberation::budgets::{BudgetArgs, budgets_or_refuse, profile_or_refuse};
use crate::app::deliberation::injection::shown;
use crate::app::deliberation::mode::{Mode, mode_or_refuse};
use crate::app::deliberation::outputs::{AnalysisOut, NodeOut, RouteDecisionOut};
use crate::app::deliberation::start::{StartPlan, plan_start};
use crate::app::deliberation::{REASONING_AUTOPILOT_TOOL, RUN_THINKING_MODE_TOOL};
use crate::app::providers::{HEURISTIC, SOT_HEURISTIC_SCAFFOLD};
use crate::app::{Outcome, Rejection};
use crate::events::deliberation::RouteDecision;
use crate::events::{Fact, SessionId};
use crate::projections::DeliberationState;

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

const SCAFFOLD_LIMITATIONS: &[&str] = &[
    "no model invoked: the nodes are rule-written prompts for the client to answer, not \
     reasoning content",
    "the scaffold is the same for every goal of a mode; only routing reads the goal's words",
];

/// The lenses Explore opens branches with, in order.
const LENSES: &[(&str, &str)] = &[
    (
        "conventional",
        "the approach most practitioners would take first; state it, then what would make it \
         win or fail",
    ),
    (
        "contrarian",
        "an approach that deliberately inverts the obvious one; state it, then what would make \
         it win or fail",
    ),
    (
        "constraint-first",
        "start from the hardest constraint and build the approach that satisfies it first",
    ),
    (
        "analogy",
        "borrow a solution from a different domain facing a similar problem, and map it over",
    ),
    (
        "minimal",
        "the simplest thing that could work; what does it leave out, and does that matter?",
    ),
    (
        "risk-averse",
        "the approach that minimises the worst case; what does that caution cost?",
    ),
    (
        "first-principles",
        "rebuild the answer from the basic facts and constraints, ignoring convention",
    ),
    (
        "stakeholder",
        "the approach the most affected party would choose; whose interests does it serve?",
    ),
];

fn tags(items: &[&str]) -> Vec<String> {
    strings(items)
}

/// Runs a mode's scaffold on `d` under `parent`; returns the Sketch phase fact, if any.
fn scaffold_mode(
    call: &mut Call<'_>,
    s: &mut Scaffold<'_>,
    mode: Mode,
    parent: &str,
    subject_text: &str,
) -> Result<Option<Fact>, Refusal> {
    let d = s.edit.d;
    let analysis = |call: &Call<'_>, method: &str| {
        call.analysis(
            mode.user_mode,
            method,
            HEURISTIC,
            vec![parent.to_owned()],
            SCAFFOLD_LIMITATIONS,
        )
    };
    let branch = d
        .node(parent)
        .map_or_else(|| "main".to_owned(), |n| n.branch_id.clone());
    match mode.user_mode {
        "Quick" => {
            let steps = [
                (
                    "restate",
                    "Restate: in one or two sentences, what is asked and what a good answer \
                     must satisfy (constraints included).",
                ),
                (
                    "key_steps",
                    "Key steps: list the few decisive steps or facts the answer rests on — a \
                     concise audit, not a transcript of private reasoning.",
                ),
                (
                    "answer_check",
                    "Answer check: state the answer and check it against the restatement and \
                     each constraint; name anything still unverified.",
                ),
            ];
            let mut previous = parent.to_owned();
            for (i, (tag, text)) in steps.iter().enumerate() {
                let spec = NodeSpec {
                    parents: vec![previous.clone()],
                    branch_id: branch.clone(),
                    kind: "template",
                    tags: tags(&["quick", "cot", *tag]),
                    analysis: analysis(call, "quick.linear_scaffold"),
                };
                let id = s.derived(call, spec, text)?;
                if i > 0 {
                    s.edge(&previous, &id, "temporally_precedes")?;
                }
                previous = id;
            }
            Ok(None)
        }
        "Explore" => {
            let count = usize::try_from(d.budgets.max_expansions_per_call)
                .unwrap_or(usize::MAX)
                .min(LENSES.len());
            for (lens, text) in LENSES.iter().take(count) {
                // Each branch is named after its first node: distinct within the run and from
                // every earlier run's branches.
                let branch_id = s.edit.next_node_id();
                let spec = NodeSpec {
                    parents: vec![parent.to_owned()],
                    branch_id,
                    kind: "expansion",
                    tags: vec![
                        "explore".to_owned(),
                        "tot".to_owned(),
                        format!("lens:{lens}"),
                    ],
                    analysis: analysis(call, "explore.lens_templates"),
                };
                s.derived(call, spec, &format!("Branch ({lens} lens): {text}"))?;
            }
            Ok(None)
        }
        "Map" => {
            let constraints = d.constraints.len();
            let constraints_text = if constraints == 0 {
                "Constraints: what limits the possible answers (resources, rules, time, \
                 compatibility)? Relate each to the drivers it bounds."
                    .to_owned()
            } else {
                format!(
                    "Constraints: the deliberation lists {constraints} constraint(s); add any \
                     unstated ones and relate each to the drivers it bounds."
                )
            };
            let spec = |kind_tag: &str| NodeSpec {
                parents: vec![parent.to_owned()],
                branch_id: branch.clone(),
                kind: "template",
                tags: tags(&["map", "got", kind_tag]),
                analysis: analysis(call, "map.dependency_scaffold"),
            };
            let drivers_spec = spec("drivers");
            let constraints_spec = spec("constraints");
            let risks_spec = spec("risks");
            let drivers = s.derived(
                call,
                drivers_spec,
                "Drivers: which forces, causes or goals shape the outcome? One node per \
                 driver, linked here with depends_on where one driver needs another.",
            )?;
            let limits = s.derived(call, constraints_spec, &constraints_text)?;
            let risks = s.derived(
                call,
                risks_spec,
                "Risks: what could break the outcome, and which drivers or constraints does \
                 each risk depend on? Mark incompatible risks with conflicts edges.",
            )?;
            let synthesis_spec = NodeSpec {
                parents: vec![drivers.clone(), limits.clone(), risks.clone()],
                branch_id: branch.clone(),
                kind: "template",
                tags: tags(&["map", "got", "synthesis"]),
                analysis: analysis(call, "map.dependency_scaffold"),
            };
            let synthesis = s.derived(
                call,
                synthesis_spec,
                "Synthesis: how do the drivers, constraints and risks interact? Name each \
                 conflict (conflicts / contradicts_fatally) and refinement (refines) you find.",
            )?;
            s.edge(&limits, &drivers, "contextualizes")?;
            s.edge(&risks, &drivers, "depends_on")?;
            s.edge(&risks, &limits, "depends_on")?;
            s.edge(&synthesis, &drivers, "depends_on")?;
            s.edge(&synthesis, &limits, "depends_on")?;
            s.edge(&synthesis, &risks, "depends_on")?;
            Ok(None)
        }
        "Sketch" => {
            let phase = skeleton::plan_skeleton(
                call,
                s,
                &SkeletonPlan {
                    source_node_id: parent,
                    source_text: subject_text,
                    points: &[],
                    style: "numbered",
                    max_points: skeleton::DEFAULT_SCAFFOLD_POINTS,
                },
            )?;
            Ok(Some(Fact::SkeletonPhaseStarted(phase)))
        }
        "Test" => {
            let claims_spec = NodeSpec {
                parents: vec![parent.to_owned()],
                branch_id: branch.clone(),
                kind: "template",
                tags: tags(&["test", "reasonkit", "claims"]),
                analysis: analysis(call, "test.verification_scaffold"),
            };
            let claims = s.derived(
                call,
                claims_spec,
                "Claims to verify: list each factual claim the answer will rest on, with its \
                 criticality (low, medium, high, critical); send them to verify_thoughts as \
                 claims.",
            )?;
            let assumptions_spec = NodeSpec {
                parents: vec![parent.to_owned()],
                branch_id: branch.clone(),
                kind: "template",
                tags: tags(&["test", "reasonkit", "assumptions"]),
                analysis: analysis(call, "test.verification_scaffold"),
            };
            let assumptions = s.derived(
                call,
                assumptions_spec,
                "Assumptions: what is taken for granted? Record each with record_assumption \
                 (criticality, verifiable) and settle the verifiable ones with evidence.",
            )?;
            let stage_spec = NodeSpec {
                parents: vec![claims.clone(), assumptions.clone()],
                branch_id: branch.clone(),
                kind: "stage",
                tags: tags(&["test", "reasonkit", "stage:verification"]),
                analysis: analysis(call, "test.verification_scaffold"),
            };
            let stage = s.derived(
                call,
                stage_spec,
                "Verification stage: call verify_thoughts with the claims and your evidence \
                 (tier, independence_group), record_assumption for each assumption, then \
                 run_reasoning_checkpoint. consensus_answer is refused until the policy guard \
                 passes.",
            )?;
            s.edge(&stage, &claims, "depends_on")?;
            s.edge(&stage, &assumptions, "depends_on")?;
            Ok(None)
        }
        _ => Ok(None),
    }
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

fn run(call: &mut Call<'_>, req: RunRequest<'_>) -> Result<RunResult, Refusal> {
    let profile_arg = req
        .profile
        .map(|p| profile_or_refuse(Some(p)))
        .transpose()?;
    let existing = match existing_deliberation(call, req.session_id)? {
        // A concluded deliberation no longer changes: a run that names no session starts a new
        // deliberation (in a new session) rather than being refused.
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
    // What the router reads: the goal as stored (redacted if the scan matched).
    let routing_text = match (req.goal, existing) {
        (Some(goal), _) => shown(goal, "goal"),
        (None, Some(d)) => call
            .app
            .deliberations()
            .text(&d.goal)
            .unwrap_or_default()
            .to_owned(),
        (None, None) => return Err(goal_required()),
    };
    let (mode, confidence, rationale) = if req.mode.user_mode == "Auto" {
        let routed = classify(&routing_text);
        (routed.mode, routed.confidence, routed.rationale)
    } else {
        (
            req.mode,
            1.0,
            format!(
                "{} chosen by the caller (internal {}); no routing rule applied",
                req.mode.user_mode, req.mode.internal_method
            ),
        )
    };
    let mut notes = Vec::new();
    let mut facts = Vec::new();
    let mut preview_state: Option<DeliberationState> = None;
    let (d, started, profile) = match existing {
        Some(d) => {
            if req.profile.is_some() || req.budgets.is_some() || !req.constraints.is_empty() {
                notes.push(format!(
                    "profile, budgets and constraints apply when a deliberation starts; {} \
                     keeps its own (profile {})",
                    d.deliberation_id, d.profile
                ));
            }
            if d.user_mode != mode.user_mode {
                notes.push(format!(
                    "{} was started in {}; this run records a route to {} without changing \
                     its mode",
                    d.deliberation_id, d.user_mode, mode.user_mode
                ));
            }
            (d, false, profile_of(d))
        }
        None => {
            let profile = profile_arg.unwrap_or("balanced");
            let budgets = budgets_or_refuse(profile, req.budgets)?;
            let goal = req.goal.ok_or_else(goal_required)?;
            let started = plan_start(
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
            )?;
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
        (false, Some(goal)) => {
            let spec = NodeSpec {
                parents: vec![d.root_node_id.clone()],
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
            s.caller(call, spec, "goal", &[PathStep::Key("goal")], goal)?
        }
        _ => d.root_node_id.clone(),
    };
    if let (Some(state), Some(root)) = (&preview_state, d.node(&d.root_node_id)) {
        let mut out = NodeOut::of(state, root);
        out.content = Some(routing_text.clone());
        created.push(out);
    }
    let phase = scaffold_mode(call, &mut s, mode, &subject, &routing_text)?;
    let phase_id = match &phase {
        Some(Fact::SkeletonPhaseStarted(p)) => {
            if !p.suitability.suitable {
                notes.push(format!(
                    "skeleton suitability is low ({:.2}): the goal reads as sequential \
                     reasoning; the phase was started anyway — consider Quick or Map",
                    p.suitability.score
                ));
            }
            Some(p.phase_id.clone())
        }
        _ => None,
    };
    created.extend(s.nodes_out(call.at));
    let source_ids: Vec<String> = std::iter::once(subject.clone())
        .chain(s.edit.planned().iter().map(|n| n.node_id.clone()))
        .collect();
    facts.extend(s.into_facts());
    facts.extend(phase);
    let decision = RouteDecision {
        decision: mode.user_mode.to_owned(),
        confidence,
        rationale: rationale.clone(),
        blocking_gaps: Vec::new(),
    };
    let route_id = format!("route-{}", d.routes.len() + 1);
    facts.push(route_fact(d, req.source, mode, decision.clone()));
    let plan = autopilot_steps(mode, profile);
    let method = format!("run.{}_scaffold", mode.internal_method);
    let provider = if mode.user_mode == "Sketch" {
        SOT_HEURISTIC_SCAFFOLD
    } else {
        HEURISTIC
    };
    let analysis = call.analysis(
        mode.user_mode,
        &method,
        provider,
        source_ids,
        SCAFFOLD_LIMITATIONS,
    );
    let session_id = d.session_id.clone();
    let body = RunModeOutput {
        session_id: session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
        started,
        user_mode: mode.user_mode.to_owned(),
        internal_method: mode.internal_method.to_owned(),
        mode_rationale: rationale,
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
