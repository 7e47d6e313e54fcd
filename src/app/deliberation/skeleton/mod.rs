//! Skeleton-of-thought (the seed's SkeletonPhase): a phase outlines a node's answer as ordered
//! skeleton points (`start_skeleton_of_thought`), each point is elaborated on its own, and a
//! merge node subsumes the elaborations (`run_skeleton_elaboration`).
//!
//! Suitability is read from keyword cues of the source text; points are the caller's outline,
//! or outline templates (`sot_heuristic_scaffold`) chosen by cues — never model text.
//! Owns: the phase rules (points, order, elaboration, merge, states). Must not know: MCP,
//! storage.
//!
//! Layout: `suitability` (cues and outline templates), `start` (`start_skeleton_of_thought`),
//! `elaboration` (`run_skeleton_elaboration`); the phase planning both share, here.

mod elaboration;
mod start;
mod suitability;
#[cfg(test)]
mod tests;

pub(crate) use elaboration::decide_elaboration;
pub use elaboration::{ElaborationArg, ElaborationArgs, ElaborationOutput};
pub(crate) use start::decide_start_skeleton;
pub use start::{StartSkeletonArgs, StartSkeletonOutput, SuitabilityOut};
pub use suitability::suitability;

use super::scaffold::{NodeSpec, Scaffold};
use crate::app::call::{Call, PathStep, Refusal};
use crate::app::providers::SOT_HEURISTIC_SCAFFOLD;
use crate::events::deliberation::SkeletonPhaseStarted;
use suitability::{outline_for, styled};

/// Points an outline template gives when the caller names no count.
pub const DEFAULT_SCAFFOLD_POINTS: u32 = 5;

/// The most points one phase may hold: past a dozen, an outline stops being a skeleton.
pub const MAX_POINTS: u32 = 12;

pub const STYLES: &[&str] = &["bullet", "numbered", "sections"];

/// The prompt pack of a skeleton phase (see `modes::prompt_packs`).
pub const PROMPT_PACK: &str = "sot_skeleton";

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
