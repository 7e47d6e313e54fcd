//! `run_reasonkit_pipeline`: one stage marker node per ReasonKit stage, each with findings
//! counted from the graph's structure, claims and assumptions as they stood before the call.
//!
//! Owns: the stages, their prompts and what each finds. Must not know: what the content means
//! (no stage judges it).

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::super::scaffold::{NodeSpec, Scaffold};
use super::profile_of;
use crate::app::ErrorCode;
use crate::app::Outcome;
use crate::app::call::Call;
use crate::app::deliberation::budgets::profile_or_refuse;
use crate::app::deliberation::context::refuse;
use crate::app::deliberation::outputs::{AnalysisOut, NodeOut};
use crate::app::deliberation::{
    EXPAND_THOUGHTS_TOOL, RECORD_ASSUMPTION_TOOL, REFINE_THOUGHTS_TOOL,
    RUN_REASONING_CHECKPOINT_TOOL, SET_ASSUMPTION_STATUS_TOOL, VERIFY_THOUGHTS_TOOL,
};
use crate::app::providers::HEURISTIC;
use crate::projections::Deliberation;
use crate::projections::deliberation::Node;

/// The ReasonKit stages, in pipeline order: name, title, prompt.
const STAGES: &[(&str, &str, &str)] = &[
    (
        "gigathink",
        "GigaThink — perspective expansion",
        "GigaThink (perspective expansion): develop distinct perspectives — stakeholders, time \
         horizons, failure modes, analogies — each as its own branch (expand_thoughts, or \
         add_thought_node with a new branch_id), until the profile's diversity floor is met.",
    ),
    (
        "laserlogic",
        "LaserLogic — logic and structure check",
        "LaserLogic (logic check): for each conclusion, link the premises it rests on with \
         depends_on edges; mark contradictions with conflicts or contradicts_fatally; connect \
         or prune orphan nodes.",
    ),
    (
        "bedrock",
        "BedRock — first principles",
        "BedRock (first principles): decompose the goal into the basic facts and constraints it \
         rests on; record each as a node linked by requires_grounding or depends_on, and each \
         untested premise with record_assumption.",
    ),
    (
        "proofguard",
        "ProofGuard — verification status",
        "ProofGuard (verification): send every claim the answer rests on to verify_thoughts \
         with evidence (tier, independence_group); record a resolution for each contested \
         claim.",
    ),
    (
        "brutalhonesty",
        "BrutalHonesty — adversarial critique",
        "BrutalHonesty (adversarial critique): argue against the leading branch, test the \
         high-criticality assumptions (set_assumption_status), and open a counter-branch if \
         only one line of thought exists.",
    ),
];

/// Stages a profile runs when none are named.
fn default_stages(profile: &str) -> &'static [&'static str] {
    match profile {
        "quick" => &["gigathink", "laserlogic"],
        "balanced" => &["gigathink", "laserlogic", "bedrock", "proofguard"],
        _ => &[
            "gigathink",
            "laserlogic",
            "bedrock",
            "proofguard",
            "brutalhonesty",
        ],
    }
}

/// Node kinds that are candidate lines of thought (diversity, grounding, anchoring).
const CANDIDATE_KINDS: &[&str] = &[
    "thought",
    "expansion",
    "template",
    "pattern",
    "refinement",
    "elaboration",
];

/// The diversity floor by profile (shared semantics of the policy guard).
fn diversity_floor(profile: &str) -> usize {
    match profile {
        "quick" => 1,
        "balanced" => 2,
        _ => 3,
    }
}

/// Arguments of `run_reasonkit_pipeline`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct PipelineArgs {
    /// quick, balanced, deep or paranoid: picks the default stages (default: the
    /// deliberation's profile).
    #[serde(default)]
    #[schemars(with = "String")]
    pub profile: Option<String>,
    /// A subset of gigathink, laserlogic, bedrock, proofguard, brutalhonesty (run in that
    /// order, each once); omitted or empty: the profile's default set.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub stages: Option<Vec<String>>,
    /// The session whose deliberation to examine (default: your current session).
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// One stage's marker and what it found.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StageOut {
    pub stage: String,
    pub title: String,
    /// The stage node added.
    pub node_id: String,
    pub prompt: String,
    /// `attention` when the findings show something to act on, else `clear`.
    pub status: String,
    /// Counts and ids computed from the graph before this call.
    #[schemars(with = "serde_json::Map<String, Value>")]
    pub findings: Value,
}

/// Response of `run_reasonkit_pipeline`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PipelineOutput {
    pub session_id: String,
    pub deliberation_id: String,
    pub profile: String,
    pub stages: Vec<StageOut>,
    pub nodes_created: Vec<NodeOut>,
    pub next_tools: Vec<String>,
    pub analysis: AnalysisOut,
}

/// A stage's findings and whether they need attention, from the graph's structure.
fn stage_findings(d: &Deliberation, stage: &str, profile: &str) -> (bool, Value) {
    let candidates: Vec<&Node> = d
        .live_nodes()
        .filter(|n| CANDIDATE_KINDS.contains(&n.kind.as_str()))
        .collect();
    let branches: BTreeSet<&str> = candidates.iter().map(|n| n.branch_id.as_str()).collect();
    match stage {
        "gigathink" => gigathink(profile, &branches, candidates.len()),
        "laserlogic" => laserlogic(d),
        "bedrock" => bedrock(d, &candidates),
        "proofguard" => proofguard(d),
        _ => brutalhonesty(d, &branches, candidates.len()),
    }
}

/// GigaThink: needs attention while the live candidates span fewer branches than the
/// profile's diversity floor.
fn gigathink(profile: &str, branches: &BTreeSet<&str>, live_candidates: usize) -> (bool, Value) {
    let floor = diversity_floor(profile);
    (
        branches.len() < floor,
        json!({
            "branches": branches.len(),
            "branch_ids": branches,
            "diversity_floor": floor,
            "live_candidate_nodes": live_candidates,
        }),
    )
}

/// LaserLogic: needs attention when a conflict edge or an orphan node (no parent and no edge)
/// exists; strict cycles cannot.
fn laserlogic(d: &Deliberation) -> (bool, Value) {
    let conflicts: Vec<Value> = d
        .edges
        .iter()
        .filter(|e| matches!(e.edge_type.as_str(), "conflicts" | "contradicts_fatally"))
        .map(|e| json!({"from": e.from, "to": e.to, "edge_type": e.edge_type}))
        .collect();
    let fatal = d
        .edges
        .iter()
        .filter(|e| e.edge_type == "contradicts_fatally")
        .count();
    let orphans: Vec<&str> = d
        .nodes
        .iter()
        .filter(|n| n.node_id != d.root_node_id && n.parent_ids.is_empty())
        .filter(|n| {
            !d.edges
                .iter()
                .any(|e| e.from == n.node_id || e.to == n.node_id)
        })
        .map(|n| n.node_id.as_str())
        .collect();
    (
        !conflicts.is_empty() || !orphans.is_empty(),
        json!({
            "strict_cycles": 0,
            "strict_cycles_note": "depends_on / refines cycles are refused when an edge \
                                   is added, so none can exist",
            "conflict_edges": conflicts,
            "fatal_contradictions": fatal,
            "orphan_node_ids": orphans,
        }),
    )
}

/// BedRock: needs attention while a live candidate neither depends on, is grounded by or
/// supports anything, nor carries an assumption.
fn bedrock(d: &Deliberation, candidates: &[&Node]) -> (bool, Value) {
    let ungrounded: Vec<&str> = candidates
        .iter()
        .filter(|n| {
            !d.edges.iter().any(|e| {
                e.from == n.node_id
                    && matches!(
                        e.edge_type.as_str(),
                        "depends_on" | "requires_grounding" | "supports"
                    )
            }) && !d.assumptions_by_node.contains_key(&n.node_id)
        })
        .map(|n| n.node_id.as_str())
        .collect();
    (
        !ungrounded.is_empty(),
        json!({
            "live_candidate_nodes": candidates.len(),
            "ungrounded_node_ids": ungrounded,
            "assumptions_recorded": d.assumptions.len(),
            "grounding_edges": d.edges.iter().filter(|e| matches!(e.edge_type.as_str(),
                "depends_on" | "requires_grounding")).count(),
        }),
    )
}

/// ProofGuard: needs attention while a claim is unverified, short of evidence or contested, or
/// when no claim is recorded.
fn proofguard(d: &Deliberation) -> (bool, Value) {
    let mut by_status: BTreeMap<&str, usize> = BTreeMap::new();
    for c in &d.claims {
        *by_status.entry(c.status.as_str()).or_default() += 1;
    }
    let with = |statuses: &[&str]| -> Vec<&str> {
        d.claims
            .iter()
            .filter(|c| statuses.contains(&c.status.as_str()))
            .map(|c| c.claim_id.as_str())
            .collect()
    };
    let open = ["unverified", "insufficient_evidence", "contested"];
    let pending = d
        .questions
        .iter()
        .filter(|q| {
            d.claim(&q.claim_id)
                .is_some_and(|c| open.contains(&c.status.as_str()))
        })
        .count();
    let unverified = with(&["unverified", "insufficient_evidence"]);
    let contested = with(&["contested"]);
    (
        !unverified.is_empty() || !contested.is_empty() || d.claims.is_empty(),
        json!({
            "claims": d.claims.len(),
            "by_status": by_status,
            "unverified_claim_ids": unverified,
            "contested_claim_ids": contested,
            "questions_pending": pending,
        }),
    )
}

/// BrutalHonesty: needs attention while a high or critical assumption is unexamined, or every
/// live candidate sits on one branch (anchoring).
fn brutalhonesty(
    d: &Deliberation,
    branches: &BTreeSet<&str>,
    live_candidates: usize,
) -> (bool, Value) {
    let unexamined: Vec<&str> = d
        .assumptions
        .iter()
        .filter(|a| {
            matches!(a.criticality.as_str(), "high" | "critical") && a.status == "unverified"
        })
        .map(|a| a.assumption_id.as_str())
        .collect();
    let anchoring = live_candidates != 0 && branches.len() <= 1;
    (
        !unexamined.is_empty() || anchoring,
        json!({
            "unexamined_high_assumption_ids": unexamined,
            "single_branch_anchoring": anchoring,
            "branches": branches.len(),
            "live_candidate_nodes": live_candidates,
        }),
    )
}

const PIPELINE_LIMITATIONS: &[&str] = &[
    "stage markers: each prompt is fixed wording, and findings are counts and ids read from the \
     graph's structure, claims and assumptions",
    "no model judged the reasoning's content; a clear stage means no structural issue, not \
     sound reasoning",
];

/// Decides `run_reasonkit_pipeline`: one stage node per selected stage, with findings from the
/// graph as it stood before the call.
pub(crate) fn decide_pipeline(call: &mut Call<'_>) -> Outcome {
    let args: PipelineArgs = call.parse(
        "run_reasonkit_pipeline takes {profile?: quick|balanced|deep|paranoid, stages?: \
         [gigathink|laserlogic|bedrock|proofguard|brutalhonesty], session_id?: string}",
    )?;
    let d = call.open_deliberation(args.session_id.as_deref())?;
    let profile = match args.profile.as_deref() {
        Some(p) => profile_or_refuse(Some(p)).map_err(|(r, _)| (r, Some(d.session_id.clone())))?,
        None => profile_of(d),
    };
    let requested = args.stages.unwrap_or_default();
    let selected: Vec<&str> = if requested.is_empty() {
        default_stages(profile).to_vec()
    } else {
        for name in &requested {
            let name = name.trim().to_ascii_lowercase();
            if !STAGES.iter().any(|(s, _, _)| *s == name) {
                return Err(refuse(
                    d,
                    ErrorCode::UnknownStage,
                    format!("\"{name}\" is not a ReasonKit stage"),
                    "use any of gigathink, laserlogic, bedrock, proofguard, brutalhonesty, or \
                     omit stages for the profile's default set",
                ));
            }
        }
        STAGES
            .iter()
            .map(|(s, _, _)| *s)
            .filter(|s| requested.iter().any(|r| r.trim().eq_ignore_ascii_case(s)))
            .collect()
    };
    let mode = d.user_mode.as_str();
    let mut s = Scaffold::new(d);
    let mut stages = Vec::new();
    let mut previous: Option<String> = None;
    for name in &selected {
        let Some((_, title, prompt)) = STAGES.iter().find(|(s, _, _)| s == name) else {
            continue;
        };
        let (attention, findings) = stage_findings(d, name, profile);
        let spec = NodeSpec {
            parents: vec![d.root_node_id.clone()],
            branch_id: "reasonkit".to_owned(),
            kind: "stage",
            tags: vec![
                "reasonkit".to_owned(),
                format!("stage:{name}"),
                format!("profile:{profile}"),
            ],
            analysis: call.analysis(
                mode,
                &format!("pipeline.{name}"),
                HEURISTIC,
                vec![d.root_node_id.clone()],
                PIPELINE_LIMITATIONS,
            ),
        };
        let node_id = s.derived(call, spec, prompt)?;
        if let Some(prev) = &previous {
            s.edge(prev, &node_id, "temporally_precedes")?;
        }
        previous = Some(node_id.clone());
        stages.push(StageOut {
            stage: (*name).to_owned(),
            title: (*title).to_owned(),
            node_id,
            prompt: (*prompt).to_owned(),
            status: if attention { "attention" } else { "clear" }.to_owned(),
            findings,
        });
    }
    let mut next: Vec<String> = Vec::new();
    for stage in stages.iter().filter(|s| s.status == "attention") {
        let tool = match stage.stage.as_str() {
            "gigathink" => EXPAND_THOUGHTS_TOOL,
            "laserlogic" => REFINE_THOUGHTS_TOOL,
            "bedrock" => RECORD_ASSUMPTION_TOOL,
            "proofguard" => VERIFY_THOUGHTS_TOOL,
            _ => SET_ASSUMPTION_STATUS_TOOL,
        };
        if !next.iter().any(|t| t == tool) {
            next.push(tool.to_owned());
        }
    }
    next.push(RUN_REASONING_CHECKPOINT_TOOL.to_owned());
    let analysis = call.analysis(
        mode,
        "pipeline.stage_markers",
        HEURISTIC,
        vec![d.root_node_id.clone()],
        PIPELINE_LIMITATIONS,
    );
    let nodes_created = s.nodes_out(call.at);
    let facts = s.into_facts();
    let body = PipelineOutput {
        session_id: d.session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
        profile: profile.to_owned(),
        stages,
        nodes_created,
        next_tools: next,
        analysis: AnalysisOut::from(&analysis),
    };
    call.done(Some(d.session_id.clone()), facts, body)
}
