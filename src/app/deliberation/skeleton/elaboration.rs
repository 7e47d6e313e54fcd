//! `run_skeleton_elaboration`: add the caller's elaborations under a phase's skeleton points,
//! then merge them into one node that subsumes every elaboration; or, sent without
//! elaborations, prompt for each point still lacking one.
//!
//! Owns: elaboration, merge and the phase states. Must not know: MCP, storage.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::scaffold::{NodeSpec, Scaffold};
use crate::app::ErrorCode;
use crate::app::call::{Call, PathStep, Refusal};
use crate::app::deliberation::context::refuse;
use crate::app::deliberation::outputs::{AnalysisOut, NodeOut};
use crate::app::deliberation::{
    CONVERGE_REASONING_TOOL, RUN_REASONING_CHECKPOINT_TOOL, RUN_SKELETON_ELABORATION_TOOL,
    SCORE_THOUGHTS_TOOL,
};
use crate::app::providers::SOT_HEURISTIC_SCAFFOLD;
use crate::app::{Outcome, lenient};
use crate::events::Fact;
use crate::events::deliberation::{AnalysisMetadata, SkeletonElaborated};
use crate::projections::Deliberation;
use crate::projections::deliberation::SkeletonPhase;

/// Elaborations one call may carry (the node budget applies too).
const MAX_ELABORATIONS_PER_CALL: usize = 64;

/// One elaboration of a skeleton point.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ElaborationArg {
    /// The skeleton node it elaborates (a node of this phase).
    pub skeleton_node_id: String,
    /// The elaboration: a self-contained paragraph.
    #[schemars(extend("x-text" = true))]
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
    #[schemars(extend("x-text" = true))]
    pub merge_summary: Option<String>,
    /// The session whose deliberation to use (default: your current session).
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
            ErrorCode::UnknownPhase,
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
            ErrorCode::PhaseMerged,
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

/// What an elaboration or merge prompt admits about itself.
const SCAFFOLD_LIMITATIONS: &[&str] = &[
    "scaffold, not semantic model output",
    "a fixed instruction per point; the point's meaning is not read",
];

/// Decides `run_skeleton_elaboration`: the checks, the caller's elaborations, the prompts for
/// points still bare (only when none was sent), whether to merge, the merge node, then the
/// phase's new state, the fact and the response.
pub(crate) fn decide_elaboration(call: &mut Call<'_>) -> Outcome {
    let args: ElaborationArgs = call.parse(
        "run_skeleton_elaboration takes {phase_id: string, elaborations?: [{skeleton_node_id, \
         content}], merge?: bool, merge_summary?: string, session_id?: string}",
    )?;
    let d = call.open_deliberation(args.session_id.as_deref())?;
    let phase = phase_or_refuse(d, args.phase_id.trim())?;
    let elaborations = args.elaborations.unwrap_or_default();
    let summary = args.merge_summary.as_deref();
    check_elaborations(d, phase, &elaborations, summary, args.merge)?;

    let mut s = Scaffold::new(d);
    let caller_analysis = call.analysis(
        "Sketch",
        "sot.caller_elaboration",
        "caller",
        phase.skeleton_node_ids.clone(),
        &["elaborations as the caller wrote them"],
    );
    let (by_skeleton, new_by_skeleton) =
        add_elaborations(call, &mut s, phase, &elaborations, &caller_analysis)?;
    let elaboration_count = s.edit.planned().len();
    let scaffold_analysis = call.analysis(
        "Sketch",
        "sot.elaboration_prompts",
        SOT_HEURISTIC_SCAFFOLD,
        phase.skeleton_node_ids.clone(),
        SCAFFOLD_LIMITATIONS,
    );
    if elaborations.is_empty() {
        add_prompts(call, &mut s, phase, &by_skeleton, &scaffold_analysis)?;
    }
    let prompt_count = s.edit.planned().len() - elaboration_count;
    let plan = plan_merge(
        d,
        phase,
        &by_skeleton,
        args.merge,
        summary,
        elaboration_count + prompt_count,
    )?;
    let notes = plan.notes();
    let (merge_node_id, merge_analysis) = if plan.merge {
        let (id, analysis) = add_merge(call, &mut s, phase, &plan.all_elaborations, summary)?;
        (Some(id), Some(analysis))
    } else {
        (None, None)
    };
    let state = if plan.merge {
        "merged"
    } else if plan.all_elaborations.is_empty() {
        "skeleton"
    } else {
        "elaborating"
    };
    let (elaboration_nodes, prompt_nodes, merge_node) =
        split_nodes(&s, call.at, merge_node_id.as_deref());
    let analysis = merge_analysis.unwrap_or(if elaboration_count > 0 {
        caller_analysis
    } else {
        scaffold_analysis
    });
    let mut facts = s.into_facts();
    if elaboration_count > 0 || plan.merge {
        facts.push(Fact::SkeletonElaborated(SkeletonElaborated {
            session_id: d.session_id.clone(),
            phase_id: phase.phase_id.clone(),
            elaboration_node_ids_by_skeleton: new_by_skeleton,
            merge_node_id: merge_node_id.clone(),
            state: state.to_owned(),
        }));
    }
    let next_tools = if plan.merge {
        vec![RUN_REASONING_CHECKPOINT_TOOL, CONVERGE_REASONING_TOOL]
    } else {
        vec![RUN_SKELETON_ELABORATION_TOOL, SCORE_THOUGHTS_TOOL]
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
        unelaborated_skeleton_node_ids: plan.unelaborated,
        safety_notes: notes,
        next_tools: next_tools.into_iter().map(str::to_owned).collect(),
        analysis: AnalysisOut::from(&analysis),
    };
    call.done(Some(d.session_id.clone()), facts, body)
}

/// Refuses, before anything is planned: too many elaborations, one under a node that is not a
/// skeleton point of the phase or with no content, an empty merge summary, or a summary sent
/// with `merge: false`.
fn check_elaborations(
    d: &Deliberation,
    phase: &SkeletonPhase,
    elaborations: &[ElaborationArg],
    summary: Option<&str>,
    merge: Option<bool>,
) -> Result<(), Refusal> {
    if elaborations.len() > MAX_ELABORATIONS_PER_CALL {
        return Err(refuse(
            d,
            ErrorCode::InvalidArguments,
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
                ErrorCode::UnknownNode,
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
                ErrorCode::InvalidArguments,
                format!("elaborations[{i}].content is empty"),
                "write the elaboration, or omit elaborations to get elaboration prompts",
            ));
        }
    }
    if summary.is_some_and(|t| t.trim().is_empty()) {
        return Err(refuse(
            d,
            ErrorCode::InvalidArguments,
            "merge_summary is empty",
            "write the merged answer, or omit merge_summary for a merge prompt",
        ));
    }
    if merge == Some(false) && summary.is_some() {
        return Err(refuse(
            d,
            ErrorCode::InvalidArguments,
            "merge_summary was given with merge false",
            "drop merge_summary, or set merge true (or omit it)",
        ));
    }
    Ok(())
}

/// Plans the caller's elaborations, each under its skeleton point on that point's branch.
/// Returns every elaboration of the phase by point (recorded and new), and this call's alone.
fn add_elaborations(
    call: &mut Call<'_>,
    s: &mut Scaffold<'_>,
    phase: &SkeletonPhase,
    elaborations: &[ElaborationArg],
    analysis: &AnalysisMetadata,
) -> Result<(ByPoint, ByPoint), Refusal> {
    let d = s.edit.d;
    let mut by_skeleton = phase.elaboration_node_ids_by_skeleton.clone();
    let mut new_by_skeleton: ByPoint = BTreeMap::new();
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
            analysis: analysis.clone(),
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
    Ok((by_skeleton, new_by_skeleton))
}

/// Plans an elaboration prompt under each point that has neither an elaboration nor a prompt
/// already, so repeating the call adds nothing twice. (Only when no elaboration was sent.)
fn add_prompts(
    call: &mut Call<'_>,
    s: &mut Scaffold<'_>,
    phase: &SkeletonPhase,
    by_skeleton: &ByPoint,
    analysis: &AnalysisMetadata,
) -> Result<(), Refusal> {
    let d = s.edit.d;
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
            analysis: analysis.clone(),
        };
        let text = format!(
            "Elaborate point {} of {}: expand it into a short, self-contained paragraph that \
             does not lean on the other points; send it with run_skeleton_elaboration \
             (skeleton_node_id {skeleton_id}).",
            position + 1,
            phase.phase_id
        );
        s.derived(call, spec, &text)?;
    }
    Ok(())
}

/// Node ids by the skeleton point they elaborate.
type ByPoint = BTreeMap<String, Vec<String>>;

/// Whether a call merges its phase, and what the phase's elaborations cover.
struct MergePlan {
    /// Whether the call merges (as asked, else when every point is elaborated or a summary
    /// was sent).
    merge: bool,
    /// Points still without an elaboration.
    unelaborated: Vec<String>,
    /// Every elaboration of the phase, point by point: what a merge subsumes.
    all_elaborations: Vec<String>,
}

impl MergePlan {
    /// What the response notes: a merge that leaves points unelaborated names them.
    fn notes(&self) -> Vec<String> {
        if !self.merge || self.unelaborated.is_empty() {
            return Vec::new();
        }
        vec![format!(
            "merged with {} point(s) not elaborated: {}",
            self.unelaborated.len(),
            self.unelaborated.join(", ")
        )]
    }
}

/// Decides whether the call merges; refuses a merge with nothing to merge, and a call that
/// neither merges nor added any node (`added`: elaborations and prompts planned).
fn plan_merge(
    d: &Deliberation,
    phase: &SkeletonPhase,
    by_skeleton: &ByPoint,
    merge: Option<bool>,
    summary: Option<&str>,
    added: usize,
) -> Result<MergePlan, Refusal> {
    let unelaborated: Vec<String> = phase
        .skeleton_node_ids
        .iter()
        .filter(|id| by_skeleton.get(*id).is_none_or(Vec::is_empty))
        .cloned()
        .collect();
    let merge = merge.unwrap_or(unelaborated.is_empty() || summary.is_some());
    let all_elaborations: Vec<String> = phase
        .skeleton_node_ids
        .iter()
        .flat_map(|id| by_skeleton.get(id).cloned().unwrap_or_default())
        .collect();
    if merge && all_elaborations.is_empty() {
        return Err(refuse(
            d,
            ErrorCode::NothingToMerge,
            format!("phase {} has no elaboration to merge", phase.phase_id),
            "send elaborations first (run_skeleton_elaboration with elaborations)",
        ));
    }
    if !merge && added == 0 {
        return Err(refuse(
            d,
            ErrorCode::NothingToElaborate,
            format!(
                "every point of {} already has an elaboration or a prompt, and no elaboration \
                 was sent",
                phase.phase_id
            ),
            format!(
                "send elaborations for {}, or merge with merge true",
                phase.skeleton_node_ids.join(", ")
            ),
        ));
    }
    Ok(MergePlan {
        merge,
        unelaborated,
        all_elaborations,
    })
}

/// Plans the merge node over every elaboration (the caller's summary, or a scaffold prompt to
/// write one) with a `subsumes` edge to each; returns its id and analysis.
fn add_merge(
    call: &mut Call<'_>,
    s: &mut Scaffold<'_>,
    phase: &SkeletonPhase,
    all_elaborations: &[String],
    summary: Option<&str>,
) -> Result<(String, AnalysisMetadata), Refusal> {
    let spec = |analysis| NodeSpec {
        parents: all_elaborations.to_vec(),
        branch_id: format!("{}-merge", phase.phase_id),
        kind: "merge",
        tags: vec!["sot".to_owned(), "merge".to_owned(), phase.phase_id.clone()],
        analysis,
    };
    let (id, analysis) = match summary {
        Some(text) => {
            let analysis = call.analysis(
                "Sketch",
                "sot.caller_merge",
                "caller",
                all_elaborations.to_vec(),
                &["the merged answer as the caller wrote it"],
            );
            let id = s.caller(
                call,
                spec(analysis.clone()),
                "merge_summary",
                &[PathStep::Key("merge_summary")],
                text,
            )?;
            (id, analysis)
        }
        None => {
            let analysis = call.analysis(
                "Sketch",
                "sot.merge_prompt",
                SOT_HEURISTIC_SCAFFOLD,
                all_elaborations.to_vec(),
                SCAFFOLD_LIMITATIONS,
            );
            let text = format!(
                "Merge of {}: combine the elaborations of its {} point(s), in {} order, into \
                 one answer; remove overlap and name any contradiction between points.",
                phase.phase_id,
                phase.skeleton_node_ids.len(),
                phase.style
            );
            (s.derived(call, spec(analysis.clone()), &text)?, analysis)
        }
    };
    for e in all_elaborations {
        s.edge(&id, e, "subsumes")?;
    }
    Ok((id, analysis))
}

/// The planned nodes as the response shows them: the elaborations, the prompts, the merge node.
fn split_nodes(
    s: &Scaffold<'_>,
    at: &str,
    merge_node_id: Option<&str>,
) -> (Vec<NodeOut>, Vec<NodeOut>, Option<NodeOut>) {
    let (elaboration_nodes, mut rest): (Vec<NodeOut>, Vec<NodeOut>) = s
        .nodes_out(at)
        .into_iter()
        .partition(|n| n.kind == "elaboration");
    let merge_node = merge_node_id
        .and_then(|id| rest.iter().position(|n| n.node_id == id))
        .map(|i| rest.remove(i));
    (elaboration_nodes, rest, merge_node)
}
