//! Catalog entries of the skeleton-of-thought tools: `start_skeleton_of_thought`,
//! `run_skeleton_elaboration` (decided in `app::deliberation::skeleton`).

use super::super::catalog::{Effect, ToolEntry, entry, render_json};
use crate::app::deliberation::skeleton::{
    ElaborationArgs, ElaborationOutput, StartSkeletonArgs, StartSkeletonOutput,
};
use crate::app::{RUN_SKELETON_ELABORATION_TOOL, START_SKELETON_OF_THOUGHT_TOOL};

pub(super) fn entries() -> Vec<ToolEntry> {
    vec![
        entry::<StartSkeletonArgs, StartSkeletonOutput>(
            START_SKELETON_OF_THOUGHT_TOOL,
            "Start Skeleton of Thought",
            "Outline a node's answer (default: the goal) as ordered skeleton points — yours \
             (points, preferred) or an outline template when you send none (a scaffold, not \
             content). Reports suitability from keyword cues: lists, plans, sections and \
             comparisons suit a skeleton; proofs, derivations and debugging do not (allowed, \
             but flagged). Returns the phase_id for run_skeleton_elaboration.",
            Effect::Appends,
            render_json,
        ),
        entry::<ElaborationArgs, ElaborationOutput>(
            RUN_SKELETON_ELABORATION_TOOL,
            "Elaborate Skeleton",
            "Add your elaborations under a phase's skeleton points, then merge: a merge node \
             (your merge_summary, or a merge prompt) that subsumes every elaboration. Merges by \
             default once every point has an elaboration. Sent without elaborations, it adds \
             one elaboration prompt under each point still lacking one.",
            Effect::Appends,
            render_json,
        ),
    ]
}
