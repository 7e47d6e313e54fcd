//! Skeleton-of-thought (the seed's SkeletonPhase): a phase outlines a node's answer as ordered
//! skeleton points (`start_skeleton_of_thought`), each point is elaborated on its own, and a
//! merge node subsumes the elaborations (`run_skeleton_elaboration`).
//!
//! Suitability is read from keyword cues of the source text; points are the caller's outline,
//! or outline templates (`sot_heuristic_scaffold`) chosen by cues — never model text.
//! Owns: the phase rules (points, order, elaboration, merge, states). Must not know: MCP,
//! storage.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{AnalysisOut, Call, NodeOut, PathStep, Refusal, refuse};
use super::modes::{Cue, NodeSpec, Scaffold, finish, matched_cues, words};
use super::providers::SOT_HEURISTIC_SCAFFOLD;
use crate::app::{Outcome, Rejection, lenient};
use crate::events::Fact;
use crate::events::deliberation::{SkeletonElaborated, SkeletonPhaseStarted, Suitability};
use crate::projections::deliberation::SkeletonPhase;

/// Points an outline template gives when the caller names no count.
pub const DEFAULT_SCAFFOLD_POINTS: u32 = 5;

/// The most points one phase may hold: past a dozen, an outline stops being a skeleton.
pub const MAX_POINTS: u32 = 12;

/// Elaborations one call may carry (the node budget applies too).
const MAX_ELABORATIONS_PER_CALL: usize = 64;

pub const STYLES: &[&str] = &["bullet", "numbered", "sections"];

/// The prompt pack of a skeleton phase (see `modes::prompt_packs`).
pub const PROMPT_PACK: &str = "sot_skeleton";

// ---------------------------------------------------------------------------------------------
// Suitability
// ---------------------------------------------------------------------------------------------

/// Cues that a problem decomposes into independent points.
const SUITABLE_CUES: &[Cue] = &[
    Cue {
        label: "list",
        forms: &["list", "lists", "listing", "checklist"],
    },
    Cue {
        label: "plan",
        forms: &["plan", "plans", "planning", "roadmap"],
    },
    Cue {
        label: "sections",
        forms: &["section", "sections", "outline", "outlines", "chapters"],
    },
    Cue {
        label: "steps",
        forms: &["steps", "stages", "phases", "milestones"],
    },
    Cue {
        label: "compare",
        forms: &[
            "compare",
            "comparing",
            "comparison",
            "versus",
            "vs",
            "options",
            "alternatives",
        ],
    },
    Cue {
        label: "document",
        forms: &[
            "document", "report", "guide", "essay", "article", "overview", "summary", "write",
            "draft", "proposal",
        ],
    },
    Cue {
        label: "aspects",
        forms: &["aspects", "factors", "considerations", "dimensions"],
    },
];

/// Cues that a problem is one chain of dependent steps, which parallel points would break.
const UNSUITABLE_CUES: &[Cue] = &[
    Cue {
        label: "proof",
        forms: &["prove", "proof", "proofs", "proving", "theorem", "lemma"],
    },
    Cue {
        label: "derivation",
        forms: &["derive", "derivation", "derivations", "deduce", "induction"],
    },
    Cue {
        label: "sequential math",
        forms: &[
            "equation",
            "equations",
            "integral",
            "calculate",
            "compute",
            "arithmetic",
        ],
    },
    Cue {
        label: "code debugging",
        forms: &[
            "debug",
            "debugging",
            "bug",
            "bugs",
            "traceback",
            "stacktrace",
            "segfault",
            "exception",
        ],
    },
];

/// How well `text` suits skeleton-of-thought. Score = 0.5 (neutral) + 0.1 per distinct
/// suitable cue − 0.15 per distinct unsuitable cue, clamped to [0, 1] and rounded to two
/// decimals; suitable when ≥ 0.5. Unsuitable cues weigh more because forcing independent
/// points on a proof, derivation or debugging session breaks the chain it depends on, while a
/// missed outline only costs speed. Keyword cues only: the text's meaning is not read.
pub fn suitability(text: &str) -> Suitability {
    let w = words(text);
    let good = matched_cues(&w, SUITABLE_CUES);
    let bad = matched_cues(&w, UNSUITABLE_CUES);
    let count = |v: &[&str]| f64::from(u32::try_from(v.len()).unwrap_or(u32::MAX));
    let raw = 0.5 + 0.1 * count(&good) - 0.15 * count(&bad);
    let score = (raw.clamp(0.0, 1.0) * 100.0).round() / 100.0;
    let mut reasons: Vec<String> = good
        .iter()
        .map(|c| format!("outline cue: {c} (decomposes into independent points)"))
        .collect();
    reasons.extend(bad.iter().map(|c| {
        format!(
            "sequential cue: {c} (each step depends on the one before; parallel points break it)"
        )
    }));
    if reasons.is_empty() {
        reasons.push("no cue either way: neutral".to_owned());
    }
    Suitability {
        suitable: score >= 0.5,
        score,
        reasons,
    }
}

// ---------------------------------------------------------------------------------------------
// Outline templates
// ---------------------------------------------------------------------------------------------

const COMPARISON_CUES: &[Cue] = &[
    Cue {
        label: "compare",
        forms: &["compare", "comparing", "comparison"],
    },
    Cue {
        label: "versus",
        forms: &["versus", "vs"],
    },
    Cue {
        label: "options",
        forms: &["options", "alternatives"],
    },
    Cue {
        label: "choose",
        forms: &["choose", "choosing", "choice"],
    },
    Cue {
        label: "trade-off",
        forms: &["trade off", "trade offs", "tradeoff", "tradeoffs"],
    },
];

const PLAN_CUES: &[Cue] = &[
    Cue {
        label: "plan",
        forms: &["plan", "planning", "roadmap"],
    },
    Cue {
        label: "steps",
        forms: &["steps", "milestones"],
    },
    Cue {
        label: "launch",
        forms: &["launch", "rollout"],
    },
    Cue {
        label: "migrate",
        forms: &["migrate", "migration"],
    },
    Cue {
        label: "implement",
        forms: &["implement", "implementation"],
    },
    Cue {
        label: "schedule",
        forms: &["schedule", "timeline"],
    },
];

const COMPARISON_OUTLINE: &[&str] = &[
    "Options in scope",
    "Criteria that decide between them",
    "Each option against the criteria",
    "Trade-offs: where each option wins",
    "Risks of each option",
    "Evidence behind the key differences",
    "Recommendation and its conditions",
    "What would change the recommendation",
];

const PLAN_OUTLINE: &[&str] = &[
    "Objective and success criteria",
    "Scope and constraints",
    "Milestones in order",
    "Resources and owners",
    "Dependencies between milestones",
    "Risks and mitigations",
    "Checkpoints: how progress is measured",
    "First concrete step",
];

const GENERAL_OUTLINE: &[&str] = &[
    "Context: what is asked and why it matters",
    "Key considerations that decide the answer",
    "Approach: the main steps or the core argument",
    "Evidence for each step, and what would refute it",
    "Risks and open questions",
    "Alternatives considered and why they lost",
    "Conclusion in a few sentences",
    "Next steps",
];

/// The outline template for `text`: comparison when its comparison cues outnumber its plan
/// cues, plan when the reverse, general otherwise; with its name.
fn outline_for(text: &str) -> (&'static str, &'static [&'static str]) {
    let w = words(text);
    let compare = matched_cues(&w, COMPARISON_CUES).len();
    let plan = matched_cues(&w, PLAN_CUES).len();
    if compare > plan {
        ("comparison", COMPARISON_OUTLINE)
    } else if plan > compare {
        ("plan", PLAN_OUTLINE)
    } else {
        ("general", GENERAL_OUTLINE)
    }
}

/// A point as the style writes it.
fn styled(style: &str, position: usize, text: &str) -> String {
    match style {
        "bullet" => format!("- {text}"),
        "sections" => format!("## {text}"),
        _ => format!("{position}. {text}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Planning a phase
// ---------------------------------------------------------------------------------------------

/// What a skeleton phase is planned from.
pub(super) struct SkeletonPlan<'p> {
    pub source_node_id: &'p str,
    /// The source node's text as shown (for suitability and the outline choice).
    pub source_text: &'p str,
    /// The caller's outline (each already checked non-empty); empty: an outline template.
    pub points: &'p [String],
    pub style: &'p str,
    pub max_points: u32,
}

/// The branch of a phase's point: each point is its own line of development.
fn point_branch(phase_id: &str, position: usize) -> String {
    format!("{phase_id}-p{position}")
}

/// Plans a phase into `s`: skeleton nodes under the source, in order, linked by
/// `temporally_precedes`; returns the phase fact (to follow the scaffold's facts).
pub(super) fn plan_skeleton(
    call: &mut Call<'_>,
    s: &mut Scaffold<'_>,
    plan: &SkeletonPlan<'_>,
) -> Result<SkeletonPhaseStarted, Refusal> {
    let d = s.edit.d;
    let phase_id = format!("sot-{}", d.phases.len() + 1);
    let suitability = suitability(plan.source_text);
    let source = vec![plan.source_node_id.to_owned()];
    let mut ids = Vec::new();
    let analysis;
    if plan.points.is_empty() {
        let (outline, points) = outline_for(plan.source_text);
        let limitations = [
            "scaffold, not semantic model output",
            "points come from a fixed outline template chosen by keyword cues; they do not read \
             the problem's meaning",
        ];
        let method = format!("sot.outline_template.{outline}");
        analysis = call.analysis(
            "Sketch",
            &method,
            SOT_HEURISTIC_SCAFFOLD,
            source.clone(),
            &limitations,
        );
        let count = usize::try_from(plan.max_points).unwrap_or(usize::MAX);
        for (i, point) in points.iter().take(count).enumerate() {
            let spec = NodeSpec {
                parents: source.clone(),
                branch_id: point_branch(&phase_id, i + 1),
                kind: "skeleton",
                tags: point_tags(&phase_id, i + 1),
                analysis: analysis.clone(),
            };
            ids.push(s.derived(call, spec, &styled(plan.style, i + 1, point))?);
        }
    } else {
        analysis = call.analysis(
            "Sketch",
            "sot.caller_outline",
            "caller",
            source.clone(),
            &["the points are the caller's outline, in the caller's order"],
        );
        for (i, point) in plan.points.iter().enumerate() {
            let spec = NodeSpec {
                parents: source.clone(),
                branch_id: point_branch(&phase_id, i + 1),
                kind: "skeleton",
                tags: point_tags(&phase_id, i + 1),
                analysis: analysis.clone(),
            };
            let field = format!("points[{i}]");
            let path = [PathStep::Key("points"), PathStep::Index(i)];
            ids.push(s.caller(call, spec, &field, &path, point)?);
        }
    }
    for pair in ids.windows(2) {
        s.edge(&pair[0], &pair[1], "temporally_precedes")?;
    }
    Ok(SkeletonPhaseStarted {
        session_id: d.session_id.clone(),
        phase_id,
        source_node_id: plan.source_node_id.to_owned(),
        style: plan.style.to_owned(),
        suitability,
        skeleton_node_ids: ids,
        prompt_pack: PROMPT_PACK.to_owned(),
        analysis,
    })
}

fn point_tags(phase_id: &str, position: usize) -> Vec<String> {
    vec![
        "sot".to_owned(),
        "skeleton".to_owned(),
        phase_id.to_owned(),
        format!("point:{position}"),
    ]
}

// ---------------------------------------------------------------------------------------------
// start_skeleton_of_thought
// ---------------------------------------------------------------------------------------------

/// Arguments of `start_skeleton_of_thought`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct StartSkeletonArgs {
    /// The node whose answer to outline (default: the root, the goal).
    #[serde(default)]
    #[schemars(with = "String")]
    pub source_node_id: Option<String>,
    /// Your outline, in order: short points (preferred). Without it the server adds outline
    /// template points (a scaffold, not content).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub points: Option<Vec<String>>,
    /// bullet, numbered (default) or sections: how scaffold points and the merge are written.
    #[serde(default)]
    #[schemars(with = "String")]
    pub style: Option<String>,
    /// At most this many points, 1 to 12 (default 5 for a template outline, 12 for yours).
    #[serde(default, deserialize_with = "lenient::u32_optional")]
    #[schemars(with = "u32", range(min = 1, max = 12))]
    pub max_points: Option<u32>,
    /// The session whose deliberation to use (default: this connection's).
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// How well the source suits skeleton-of-thought.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SuitabilityOut {
    pub suitable: bool,
    /// Heuristic cue score in [0, 1]; suitable at 0.5 or more.
    pub score: f64,
    /// The cues found (labels from the server's lists).
    pub reasons: Vec<String>,
}

impl From<&Suitability> for SuitabilityOut {
    fn from(s: &Suitability) -> Self {
        Self {
            suitable: s.suitable,
            score: s.score,
            reasons: s.reasons.clone(),
        }
    }
}

/// Response of `start_skeleton_of_thought`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StartSkeletonOutput {
    pub session_id: String,
    pub deliberation_id: String,
    pub phase_id: String,
    /// `skeleton`.
    pub state: String,
    pub source_node_id: String,
    pub style: String,
    pub suitability: SuitabilityOut,
    /// The MCP prompt that explains the phase.
    pub prompt_pack: String,
    /// The skeleton nodes, in outline order.
    pub skeleton_nodes: Vec<NodeOut>,
    pub safety_notes: Vec<String>,
    pub next_tools: Vec<String>,
    pub analysis: AnalysisOut,
}

fn invalid(message: impl Into<String>, suggestion: &str) -> Refusal {
    (
        Rejection::new("invalid_arguments", message, suggestion),
        None,
    )
}

/// Decides `start_skeleton_of_thought`.
pub(crate) fn decide_start_skeleton(call: &mut Call<'_>) -> Outcome {
    let args: StartSkeletonArgs = call.parse(
        "start_skeleton_of_thought takes {source_node_id?: string, points?: [string], style?: \
         bullet|numbered|sections, max_points?: 1..12, session_id?: string}",
    )?;
    let d = call.open_deliberation(args.session_id.as_deref())?;
    let style = args
        .style
        .as_deref()
        .unwrap_or("numbered")
        .trim()
        .to_ascii_lowercase();
    if !STYLES.contains(&style.as_str()) {
        return Err(refuse(
            d,
            "invalid_style",
            format!("\"{style}\" is not a skeleton style"),
            "use bullet, numbered or sections",
        ));
    }
    let points = args.points.unwrap_or_default();
    if let Some(i) = points.iter().position(|p| p.trim().is_empty()) {
        return Err(invalid(
            format!("points[{i}] is empty"),
            "give each point a few words, or omit points for a template outline",
        ));
    }
    let default_max = if points.is_empty() {
        DEFAULT_SCAFFOLD_POINTS
    } else {
        MAX_POINTS
    };
    let max_points = args.max_points.unwrap_or(default_max);
    if max_points == 0 || max_points > MAX_POINTS {
        return Err(refuse(
            d,
            "invalid_max_points",
            format!("max_points is {max_points}; it must be between 1 and {MAX_POINTS}"),
            format!(
                "pass 1 to {MAX_POINTS}; past a dozen points an outline stops being a skeleton"
            ),
        ));
    }
    if points.len() > usize::try_from(max_points).unwrap_or(usize::MAX) {
        return Err(refuse(
            d,
            "too_many_points",
            format!("{} points; max_points is {max_points}", points.len()),
            format!("merge related points, or raise max_points (at most {MAX_POINTS})"),
        ));
    }
    let source_node_id = args
        .source_node_id
        .clone()
        .unwrap_or_else(|| d.root_node_id.clone());
    let mut s = Scaffold::new(d);
    s.edit.require_node(&source_node_id, "source_node_id")?;
    let source_text = d
        .node(&source_node_id)
        .and_then(|n| call.app.deliberations().text(&n.content))
        .unwrap_or_default()
        .to_owned();
    let phase = plan_skeleton(
        call,
        &mut s,
        &SkeletonPlan {
            source_node_id: &source_node_id,
            source_text: &source_text,
            points: &points,
            style: &style,
            max_points,
        },
    )?;
    let mut notes = Vec::new();
    if !phase.suitability.suitable {
        notes.push(format!(
            "low skeleton suitability ({:.2}): the source reads as sequential reasoning; the \
             phase was started anyway — consider Quick (run_thinking_mode) or Map",
            phase.suitability.score
        ));
    }
    if points.is_empty() {
        notes.push(
            "the points are outline-template scaffold (sot_heuristic_scaffold), not content: \
             replace or elaborate them with your own reasoning"
                .to_owned(),
        );
    }
    let body = StartSkeletonOutput {
        session_id: d.session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
        phase_id: phase.phase_id.clone(),
        state: "skeleton".to_owned(),
        source_node_id,
        style,
        suitability: SuitabilityOut::from(&phase.suitability),
        prompt_pack: phase.prompt_pack.clone(),
        skeleton_nodes: s.nodes_out(call.at),
        safety_notes: notes,
        next_tools: vec![
            "run_skeleton_elaboration".to_owned(),
            "run_reasoning_checkpoint".to_owned(),
        ],
        analysis: AnalysisOut::from(&phase.analysis),
    };
    let mut facts = s.into_facts();
    facts.push(Fact::SkeletonPhaseStarted(phase));
    finish(call, Some(d.session_id.clone()), facts, body)
}

// ---------------------------------------------------------------------------------------------
// run_skeleton_elaboration
// ---------------------------------------------------------------------------------------------

/// One elaboration of a skeleton point.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ElaborationArg {
    /// The skeleton node it elaborates (a node of this phase).
    pub skeleton_node_id: String,
    /// The elaboration: a self-contained paragraph.
    pub content: String,
}

/// Arguments of `run_skeleton_elaboration`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ElaborationArgs {
    /// The phase (sot-N) from start_skeleton_of_thought.
    pub phase_id: String,
    /// Your elaborations. Omitted or empty: the server adds one elaboration prompt (scaffold)
    /// under each point that has neither an elaboration nor a prompt yet.
    #[serde(default)]
    #[schemars(with = "Vec<ElaborationArg>")]
    pub elaborations: Option<Vec<ElaborationArg>>,
    /// Merge the phase: a merge node subsuming every elaboration. Default: true when every
    /// skeleton point has at least one elaboration (or merge_summary is given), else false.
    #[serde(default, deserialize_with = "lenient::bool_optional")]
    #[schemars(with = "bool")]
    pub merge: Option<bool>,
    /// The merged answer, in your words (without it the merge node is a scaffold prompt).
    #[serde(default)]
    #[schemars(with = "String")]
    pub merge_summary: Option<String>,
    /// The session whose deliberation to use (default: this connection's).
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Response of `run_skeleton_elaboration`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ElaborationOutput {
    pub session_id: String,
    pub deliberation_id: String,
    pub phase_id: String,
    /// `skeleton`, `elaborating` or `merged` after this call.
    pub state: String,
    /// The elaboration nodes this call added (yours).
    pub elaboration_nodes: Vec<NodeOut>,
    /// Elaboration prompts this call added (scaffold, when no elaborations were sent).
    pub prompt_nodes: Vec<NodeOut>,
    pub merge_node: Option<NodeOut>,
    /// Every elaboration of the phase by skeleton node, after this call.
    pub elaboration_node_ids_by_skeleton: BTreeMap<String, Vec<String>>,
    /// Skeleton points still without an elaboration.
    pub unelaborated_skeleton_node_ids: Vec<String>,
    pub safety_notes: Vec<String>,
    pub next_tools: Vec<String>,
    pub analysis: AnalysisOut,
}

fn phase_or_refuse<'d>(
    d: &'d crate::projections::Deliberation,
    phase_id: &str,
) -> Result<&'d SkeletonPhase, Refusal> {
    let Some(phase) = d.phase(phase_id) else {
        return Err(refuse(
            d,
            "unknown_phase",
            format!("\"{phase_id}\" is not a skeleton phase of this deliberation"),
            if d.phases.is_empty() {
                "start one with start_skeleton_of_thought".to_owned()
            } else {
                format!(
                    "use one of: {}",
                    d.phases
                        .iter()
                        .map(|p| p.phase_id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
        ));
    };
    if phase.state == "merged" {
        return Err(refuse(
            d,
            "phase_merged",
            format!(
                "phase {phase_id} is merged (merge node {})",
                phase.merge_node_id.as_deref().unwrap_or("?")
            ),
            "refine the merge node with refine_thoughts, or start a new phase with \
             start_skeleton_of_thought",
        ));
    }
    Ok(phase)
}

/// Decides `run_skeleton_elaboration`.
pub(crate) fn decide_elaboration(call: &mut Call<'_>) -> Outcome {
    let args: ElaborationArgs = call.parse(
        "run_skeleton_elaboration takes {phase_id: string, elaborations?: [{skeleton_node_id, \
         content}], merge?: bool, merge_summary?: string, session_id?: string}",
    )?;
    let d = call.open_deliberation(args.session_id.as_deref())?;
    let phase = phase_or_refuse(d, args.phase_id.trim())?;
    let elaborations = args.elaborations.unwrap_or_default();
    if elaborations.len() > MAX_ELABORATIONS_PER_CALL {
        return Err(refuse(
            d,
            "invalid_arguments",
            format!(
                "{} elaborations; at most {MAX_ELABORATIONS_PER_CALL} per call",
                elaborations.len()
            ),
            "send them over several calls",
        ));
    }
    for (i, e) in elaborations.iter().enumerate() {
        if !phase.skeleton_node_ids.contains(&e.skeleton_node_id) {
            return Err(refuse(
                d,
                "unknown_node",
                format!(
                    "elaborations[{i}].skeleton_node_id \"{}\" is not a skeleton node of {}",
                    e.skeleton_node_id, phase.phase_id
                ),
                format!("use one of: {}", phase.skeleton_node_ids.join(", ")),
            ));
        }
        if e.content.trim().is_empty() {
            return Err(refuse(
                d,
                "invalid_arguments",
                format!("elaborations[{i}].content is empty"),
                "write the elaboration, or omit elaborations to get elaboration prompts",
            ));
        }
    }
    let summary = args.merge_summary.as_deref();
    if summary.is_some_and(|t| t.trim().is_empty()) {
        return Err(refuse(
            d,
            "invalid_arguments",
            "merge_summary is empty",
            "write the merged answer, or omit merge_summary for a merge prompt",
        ));
    }
    if args.merge == Some(false) && summary.is_some() {
        return Err(refuse(
            d,
            "invalid_arguments",
            "merge_summary was given with merge false",
            "drop merge_summary, or set merge true (or omit it)",
        ));
    }

    let mut s = Scaffold::new(d);
    let mut by_skeleton = phase.elaboration_node_ids_by_skeleton.clone();
    let mut new_by_skeleton: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let caller_analysis = call.analysis(
        "Sketch",
        "sot.caller_elaboration",
        "caller",
        phase.skeleton_node_ids.clone(),
        &["elaborations as the caller wrote them"],
    );
    for (i, e) in elaborations.iter().enumerate() {
        let branch_id = d
            .node(&e.skeleton_node_id)
            .map_or_else(|| "main".to_owned(), |n| n.branch_id.clone());
        let spec = NodeSpec {
            parents: vec![e.skeleton_node_id.clone()],
            branch_id,
            kind: "elaboration",
            tags: vec![
                "sot".to_owned(),
                "elaboration".to_owned(),
                phase.phase_id.clone(),
            ],
            analysis: caller_analysis.clone(),
        };
        let field = format!("elaborations[{i}].content");
        let path = [
            PathStep::Key("elaborations"),
            PathStep::Index(i),
            PathStep::Key("content"),
        ];
        let id = s.caller(call, spec, &field, &path, &e.content)?;
        by_skeleton
            .entry(e.skeleton_node_id.clone())
            .or_default()
            .push(id.clone());
        new_by_skeleton
            .entry(e.skeleton_node_id.clone())
            .or_default()
            .push(id);
    }
    let elaboration_count = s.edit.planned().len();

    // Elaboration prompts: only when no elaboration was sent, under points that have neither
    // an elaboration nor a prompt already (so repeating the call adds nothing twice).
    let scaffold_limitations = [
        "scaffold, not semantic model output",
        "a fixed instruction per point; the point's meaning is not read",
    ];
    let scaffold_analysis = call.analysis(
        "Sketch",
        "sot.elaboration_prompts",
        SOT_HEURISTIC_SCAFFOLD,
        phase.skeleton_node_ids.clone(),
        &scaffold_limitations,
    );
    if elaborations.is_empty() {
        for (position, skeleton_id) in phase.skeleton_node_ids.iter().enumerate() {
            let elaborated = by_skeleton.get(skeleton_id).is_some_and(|v| !v.is_empty());
            let prompted = d.children(skeleton_id).iter().any(|c| {
                d.node(c)
                    .is_some_and(|n| n.tags.iter().any(|t| t == "elaboration_prompt"))
            });
            if elaborated || prompted {
                continue;
            }
            let branch_id = d
                .node(skeleton_id)
                .map_or_else(|| "main".to_owned(), |n| n.branch_id.clone());
            let spec = NodeSpec {
                parents: vec![skeleton_id.clone()],
                branch_id,
                kind: "template",
                tags: vec![
                    "sot".to_owned(),
                    "elaboration_prompt".to_owned(),
                    phase.phase_id.clone(),
                ],
                analysis: scaffold_analysis.clone(),
            };
            let text = format!(
                "Elaborate point {} of {}: expand it into a short, self-contained paragraph \
                 that does not lean on the other points; send it with run_skeleton_elaboration \
                 (skeleton_node_id {skeleton_id}).",
                position + 1,
                phase.phase_id
            );
            s.derived(call, spec, &text)?;
        }
    }
    let prompt_count = s.edit.planned().len() - elaboration_count;

    let unelaborated: Vec<String> = phase
        .skeleton_node_ids
        .iter()
        .filter(|id| by_skeleton.get(*id).is_none_or(Vec::is_empty))
        .cloned()
        .collect();
    let merge = args
        .merge
        .unwrap_or(unelaborated.is_empty() || summary.is_some());
    let all_elaborations: Vec<String> = phase
        .skeleton_node_ids
        .iter()
        .flat_map(|id| by_skeleton.get(id).cloned().unwrap_or_default())
        .collect();
    if merge && all_elaborations.is_empty() {
        return Err(refuse(
            d,
            "nothing_to_merge",
            format!("phase {} has no elaboration to merge", phase.phase_id),
            "send elaborations first (run_skeleton_elaboration with elaborations)",
        ));
    }
    if !merge && elaboration_count == 0 && prompt_count == 0 {
        return Err(refuse(
            d,
            "nothing_to_elaborate",
            format!(
                "every point of {} already has an elaboration or a prompt, and no \
                 elaboration was sent",
                phase.phase_id
            ),
            format!(
                "send elaborations for {}, or merge with merge true",
                phase.skeleton_node_ids.join(", ")
            ),
        ));
    }
    let mut notes = Vec::new();
    let mut merge_node_id = None;
    let mut merge_analysis = None;
    if merge {
        if !unelaborated.is_empty() {
            notes.push(format!(
                "merged with {} point(s) not elaborated: {}",
                unelaborated.len(),
                unelaborated.join(", ")
            ));
        }
        let spec = |analysis| NodeSpec {
            parents: all_elaborations.clone(),
            branch_id: format!("{}-merge", phase.phase_id),
            kind: "merge",
            tags: vec!["sot".to_owned(), "merge".to_owned(), phase.phase_id.clone()],
            analysis,
        };
        let id = match summary {
            Some(text) => {
                let analysis = call.analysis(
                    "Sketch",
                    "sot.caller_merge",
                    "caller",
                    all_elaborations.clone(),
                    &["the merged answer as the caller wrote it"],
                );
                merge_analysis = Some(analysis.clone());
                s.caller(
                    call,
                    spec(analysis),
                    "merge_summary",
                    &[PathStep::Key("merge_summary")],
                    text,
                )?
            }
            None => {
                let analysis = call.analysis(
                    "Sketch",
                    "sot.merge_prompt",
                    SOT_HEURISTIC_SCAFFOLD,
                    all_elaborations.clone(),
                    &scaffold_limitations,
                );
                merge_analysis = Some(analysis.clone());
                let text = format!(
                    "Merge of {}: combine the elaborations of its {} point(s), in {} order, \
                     into one answer; remove overlap and name any contradiction between \
                     points.",
                    phase.phase_id,
                    phase.skeleton_node_ids.len(),
                    phase.style
                );
                s.derived(call, spec(analysis), &text)?
            }
        };
        for e in &all_elaborations {
            s.edge(&id, e, "subsumes")?;
        }
        merge_node_id = Some(id);
    }
    let state = if merge {
        "merged"
    } else if all_elaborations.is_empty() {
        "skeleton"
    } else {
        "elaborating"
    };
    let nodes = s.nodes_out(call.at);
    let (elaboration_nodes, mut rest): (Vec<NodeOut>, Vec<NodeOut>) =
        nodes.into_iter().partition(|n| n.kind == "elaboration");
    let merge_node = merge_node_id
        .as_ref()
        .and_then(|id| rest.iter().position(|n| &n.node_id == id))
        .map(|i| rest.remove(i));
    let prompt_nodes = std::mem::take(&mut rest);
    let analysis = merge_analysis.unwrap_or(if elaboration_count > 0 {
        caller_analysis
    } else {
        scaffold_analysis
    });
    let mut facts = s.into_facts();
    if elaboration_count > 0 || merge {
        facts.push(Fact::SkeletonElaborated(SkeletonElaborated {
            session_id: d.session_id.clone(),
            phase_id: phase.phase_id.clone(),
            elaboration_node_ids_by_skeleton: new_by_skeleton,
            merge_node_id: merge_node_id.clone(),
            state: state.to_owned(),
        }));
    }
    let next_tools = if merge {
        vec!["run_reasoning_checkpoint", "converge_reasoning"]
    } else {
        vec!["run_skeleton_elaboration", "score_thoughts"]
    };
    let body = ElaborationOutput {
        session_id: d.session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
        phase_id: phase.phase_id.clone(),
        state: state.to_owned(),
        elaboration_nodes,
        prompt_nodes,
        merge_node,
        elaboration_node_ids_by_skeleton: by_skeleton,
        unelaborated_skeleton_node_ids: unelaborated,
        safety_notes: notes,
        next_tools: next_tools.into_iter().map(str::to_owned).collect(),
        analysis: AnalysisOut::from(&analysis),
    };
    finish(call, Some(d.session_id.clone()), facts, body)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::testing::{Given, given};
    use super::*;

    async fn deliberation(goal: &str) -> Given {
        let g = given();
        g.ok("run_thinking_mode", json!({"mode": "Quick", "goal": goal}))
            .await;
        g
    }

    fn ids(nodes: &Value) -> Vec<String> {
        nodes
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|n| n["node_id"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn suitability_follows_the_documented_cues() {
        let plan = suitability("Write a plan with sections and steps for the launch");
        assert!(plan.suitable);
        assert_eq!(plan.score, 0.9);
        let proof = suitability("Prove the theorem by induction");
        assert!(!proof.suitable);
        assert_eq!(proof.score, 0.2);
        assert!(
            proof
                .reasons
                .iter()
                .any(|r| r.starts_with("sequential cue: proof"))
        );
        let neutral = suitability("Tell me about whales");
        assert!(neutral.suitable);
        assert_eq!(neutral.reasons, ["no cue either way: neutral"]);
        let debugging = suitability("Debug this traceback");
        assert!(!debugging.suitable);
    }

    #[test]
    fn outline_templates_are_chosen_by_cues() {
        assert_eq!(outline_for("compare the options").0, "comparison");
        assert_eq!(outline_for("plan the migration").0, "plan");
        assert_eq!(outline_for("whales").0, "general");
    }

    #[tokio::test]
    async fn caller_points_become_ordered_skeleton_nodes() {
        let g = deliberation("Write a guide to onboarding").await;
        let body = g
            .ok(
                "start_skeleton_of_thought",
                json!({"points": ["Accounts", "Tools", "First week"], "style": "bullet"}),
            )
            .await;
        assert_eq!(body["phase_id"], "sot-1");
        assert_eq!(body["state"], "skeleton");
        assert_eq!(body["source_node_id"], "node-1");
        assert_eq!(body["suitability"]["suitable"], true);
        assert_eq!(body["prompt_pack"], "sot_skeleton");
        assert_eq!(body["analysis"]["provider"], "caller");
        let nodes = body["skeleton_nodes"].as_array().expect("nodes");
        assert_eq!(nodes.len(), 3);
        assert_eq!(nodes[0]["content"], "Accounts");
        assert_eq!(nodes[0]["kind"], "skeleton");
        assert_ne!(nodes[0]["branch_id"], nodes[1]["branch_id"]);
        let id = g.connection.clone();
        let (edges, phase) = g
            .read(move |app| {
                let d = app.deliberations().get(&id).expect("deliberation");
                let edges: Vec<(String, String, String)> = d
                    .edges
                    .iter()
                    .filter(|e| e.edge_type == "temporally_precedes")
                    .map(|e| (e.from.clone(), e.to.clone(), e.edge_type.clone()))
                    .collect();
                let phase = d.phase("sot-1").map(|p| p.skeleton_node_ids.clone());
                (edges, phase)
            })
            .await;
        let skeleton = ids(&body["skeleton_nodes"]);
        assert_eq!(phase, Some(skeleton.clone()));
        assert!(edges.contains(&(
            skeleton[0].clone(),
            skeleton[1].clone(),
            "temporally_precedes".to_owned()
        )));
    }

    #[tokio::test]
    async fn without_points_a_flagged_template_scaffold() {
        let g = deliberation("Prove that the sum of two even numbers is even").await;
        let body = g.ok("start_skeleton_of_thought", json!({})).await;
        assert_eq!(body["skeleton_nodes"].as_array().map(Vec::len), Some(5));
        assert_eq!(body["analysis"]["provider"], "sot_heuristic_scaffold");
        assert!(
            body["analysis"]["limitations"]
                .to_string()
                .contains("scaffold, not semantic model output")
        );
        assert_eq!(body["suitability"]["suitable"], false);
        assert!(
            body["safety_notes"]
                .to_string()
                .contains("low skeleton suitability")
        );
        assert_eq!(
            body["skeleton_nodes"][0]["content"],
            "1. Context: what is asked and why it matters"
        );
        let body = g
            .ok(
                "start_skeleton_of_thought",
                json!({"source_node_id": "node-2", "style": "sections", "max_points": 2}),
            )
            .await;
        assert_eq!(body["phase_id"], "sot-2");
        assert_eq!(body["skeleton_nodes"].as_array().map(Vec::len), Some(2));
        assert!(
            body["skeleton_nodes"][0]["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("## "))
        );
    }

    #[tokio::test]
    async fn start_refusals() {
        let g = given();
        g.refused("start_skeleton_of_thought", json!({}), "no_deliberation")
            .await;
        let g = deliberation("Write a report").await;
        g.refused(
            "start_skeleton_of_thought",
            json!({"style": "prose"}),
            "invalid_style",
        )
        .await;
        g.refused(
            "start_skeleton_of_thought",
            json!({"max_points": 13}),
            "invalid_max_points",
        )
        .await;
        g.refused(
            "start_skeleton_of_thought",
            json!({"points": ["a", "b", "c"], "max_points": 2}),
            "too_many_points",
        )
        .await;
        g.refused(
            "start_skeleton_of_thought",
            json!({"points": ["a", " "]}),
            "invalid_arguments",
        )
        .await;
        g.refused(
            "start_skeleton_of_thought",
            json!({"source_node_id": "node-99"}),
            "unknown_node",
        )
        .await;
    }

    #[tokio::test]
    async fn elaborate_then_merge() {
        let g = deliberation("Write a guide").await;
        let start = g
            .ok(
                "start_skeleton_of_thought",
                json!({"points": ["Setup", "Usage"]}),
            )
            .await;
        let skeleton = ids(&start["skeleton_nodes"]);

        // No elaborations: one prompt per point, once.
        let body = g
            .ok("run_skeleton_elaboration", json!({"phase_id": "sot-1"}))
            .await;
        assert_eq!(body["prompt_nodes"].as_array().map(Vec::len), Some(2));
        assert_eq!(body["state"], "skeleton");
        assert_eq!(
            body["prompt_nodes"][0]["provenance"],
            "sot_heuristic_scaffold"
        );
        g.refused(
            "run_skeleton_elaboration",
            json!({"phase_id": "sot-1"}),
            "nothing_to_elaborate",
        )
        .await;
        g.refused(
            "run_skeleton_elaboration",
            json!({"phase_id": "sot-1", "merge": true}),
            "nothing_to_merge",
        )
        .await;

        // One point: elaborating, not merged.
        let body = g
            .ok(
                "run_skeleton_elaboration",
                json!({"phase_id": "sot-1",
                       "elaborations": [{"skeleton_node_id": skeleton[0], "content": "Install it."}]}),
            )
            .await;
        assert_eq!(body["state"], "elaborating");
        assert_eq!(body["unelaborated_skeleton_node_ids"], json!([skeleton[1]]));
        let first = ids(&body["elaboration_nodes"]);
        assert_eq!(body["elaboration_nodes"][0]["parent_ids"][0], skeleton[0]);

        // The last point: merged by default, the merge subsumes every elaboration.
        let body = g
            .ok(
                "run_skeleton_elaboration",
                json!({"phase_id": "sot-1",
                       "elaborations": [{"skeleton_node_id": skeleton[1], "content": "Run it."}],
                       "merge_summary": "Install it, then run it."}),
            )
            .await;
        assert_eq!(body["state"], "merged");
        let merge = &body["merge_node"];
        assert_eq!(merge["kind"], "merge");
        assert_eq!(merge["provenance"], "caller");
        assert_eq!(merge["content"], "Install it, then run it.");
        let second = ids(&body["elaboration_nodes"]);
        let merge_id = merge["node_id"].as_str().unwrap_or_default().to_owned();
        let id = g.connection.clone();
        let (subsumed, state) = g
            .read(move |app| {
                let d = app.deliberations().get(&id).expect("deliberation");
                let subsumed: Vec<String> = d
                    .edges
                    .iter()
                    .filter(|e| e.edge_type == "subsumes" && e.from == merge_id)
                    .map(|e| e.to.clone())
                    .collect();
                (subsumed, d.phase("sot-1").map(|p| p.state.clone()))
            })
            .await;
        assert_eq!(subsumed, [first[0].clone(), second[0].clone()]);
        assert_eq!(state.as_deref(), Some("merged"));

        g.refused(
            "run_skeleton_elaboration",
            json!({"phase_id": "sot-1",
                   "elaborations": [{"skeleton_node_id": skeleton[0], "content": "More."}]}),
            "phase_merged",
        )
        .await;
    }

    #[tokio::test]
    async fn elaboration_refusals() {
        let g = deliberation("Write a guide").await;
        g.refused(
            "run_skeleton_elaboration",
            json!({"phase_id": "sot-1"}),
            "unknown_phase",
        )
        .await;
        g.ok("start_skeleton_of_thought", json!({"points": ["A", "B"]}))
            .await;
        g.refused(
            "run_skeleton_elaboration",
            json!({"phase_id": "sot-1",
                   "elaborations": [{"skeleton_node_id": "node-1", "content": "x"}]}),
            "unknown_node",
        )
        .await;
        g.refused(
            "run_skeleton_elaboration",
            json!({"phase_id": "sot-1",
                   "elaborations": [{"skeleton_node_id": "node-5", "content": " "}]}),
            "invalid_arguments",
        )
        .await;
        g.refused(
            "run_skeleton_elaboration",
            json!({"phase_id": "sot-1", "merge": false, "merge_summary": "x"}),
            "invalid_arguments",
        )
        .await;
    }
}
