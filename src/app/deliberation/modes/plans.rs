//! Autopilot plans: the ordered tools each mode's workflow calls next, by profile, each with
//! why.
//!
//! Owns: the workflows. Must not know: how they are run.

use schemars::JsonSchema;
use serde::Serialize;

use crate::app::deliberation::mode::Mode;
use crate::app::deliberation::{
    ADD_THOUGHT_NODE_TOOL, CONSENSUS_ANSWER_TOOL, CONVERGE_REASONING_TOOL,
    EVALUATE_REASONING_QUALITY_TOOL, PRUNE_THOUGHTS_TOOL, RECORD_ASSUMPTION_TOOL,
    REFINE_THOUGHTS_TOOL, RUN_REASONING_CHECKPOINT_TOOL, RUN_REASONKIT_PIPELINE_TOOL,
    RUN_SKELETON_ELABORATION_TOOL, SCORE_THOUGHTS_TOOL, SET_ASSUMPTION_STATUS_TOOL,
    VERIFY_THOUGHTS_TOOL,
};

/// One step of a recommended workflow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PlanStep {
    /// 1-based position.
    pub order: u32,
    pub tool: String,
    pub why: String,
}

/// A workflow step and the profiles it applies to (empty: all).
type StepSpec = (&'static str, &'static str, &'static [&'static str]);

const DEEPER: &[&str] = &["balanced", "deep", "paranoid"];
const STRICT: &[&str] = &["deep", "paranoid"];
const PARANOID: &[&str] = &["paranoid"];

/// Quick: answer the linear prompts, then the answer (verified only when paranoid).
const QUICK: &[StepSpec] = &[
    (
        ADD_THOUGHT_NODE_TOOL,
        "answer the restate, key-steps and answer-check prompts, one concise node each",
        &[],
    ),
    (
        VERIFY_THOUGHTS_TOOL,
        "paranoid: check the facts the answer rests on against your evidence",
        PARANOID,
    ),
    (
        EVALUATE_REASONING_QUALITY_TOOL,
        "see the quality score and any gaps before answering",
        DEEPER,
    ),
    (
        CONSENSUS_ANSWER_TOOL,
        "state the answer; the policy guard checks it",
        &[],
    ),
];

/// Explore: develop the branches, rank and prune them to a beam, gate, converge.
const EXPLORE: &[StepSpec] = &[
    (
        ADD_THOUGHT_NODE_TOOL,
        "develop each opened branch with your own reasoning",
        &[],
    ),
    (SCORE_THOUGHTS_TOOL, "rank the branches by the rubric", &[]),
    (PRUNE_THOUGHTS_TOOL, "keep a beam of the best branches", &[]),
    (
        REFINE_THOUGHTS_TOOL,
        "correct the surviving branches with concrete feedback",
        DEEPER,
    ),
    (
        RUN_REASONKIT_PIPELINE_TOOL,
        "critique the beam (anchoring, unexamined assumptions)",
        STRICT,
    ),
    (
        RUN_REASONING_CHECKPOINT_TOOL,
        "gate on quality, diversity and open gaps",
        DEEPER,
    ),
    (
        CONVERGE_REASONING_TOOL,
        "write the convergence node once the gates pass",
        &[],
    ),
    (
        CONSENSUS_ANSWER_TOOL,
        "state the answer; the policy guard checks it",
        &[],
    ),
];

/// Map: answer the dependency prompts, resolve conflicts, gate, converge.
const MAP: &[StepSpec] = &[
    (
        ADD_THOUGHT_NODE_TOOL,
        "answer the drivers, constraints and risks prompts and relate the answers by \
         typed edges",
        &[],
    ),
    (
        REFINE_THOUGHTS_TOOL,
        "resolve each conflicts edge with a refinement",
        DEEPER,
    ),
    (
        RUN_REASONKIT_PIPELINE_TOOL,
        "laserlogic: list conflicts and orphan nodes",
        DEEPER,
    ),
    (
        EVALUATE_REASONING_QUALITY_TOOL,
        "see the quality score and any gaps",
        &[],
    ),
    (
        CONVERGE_REASONING_TOOL,
        "write the convergence node once the gates pass",
        &[],
    ),
    (
        CONSENSUS_ANSWER_TOOL,
        "state the answer; the policy guard checks it",
        &[],
    ),
];

/// Sketch: elaborate the skeleton points and merge, gate the phase, converge.
const SKETCH: &[StepSpec] = &[
    (
        RUN_SKELETON_ELABORATION_TOOL,
        "elaborate every skeleton point independently, then merge",
        &[],
    ),
    (
        SCORE_THOUGHTS_TOOL,
        "score the elaborations before merging",
        STRICT,
    ),
    (
        RUN_REASONING_CHECKPOINT_TOOL,
        "gate the phase (pass its phase_id)",
        DEEPER,
    ),
    (
        CONVERGE_REASONING_TOOL,
        "write the convergence node from the merge",
        &[],
    ),
    (
        CONSENSUS_ANSWER_TOOL,
        "state the answer; the policy guard checks it",
        &[],
    ),
];

/// Test: claims and evidence, assumptions, the stage markers, a fresh route, the guard.
const TEST: &[StepSpec] = &[
    (
        VERIFY_THOUGHTS_TOOL,
        "register the claims to verify and generate verification questions",
        &[],
    ),
    (
        VERIFY_THOUGHTS_TOOL,
        "send your evidence (tier, independence_group) and resolve source conflicts",
        &[],
    ),
    (
        RECORD_ASSUMPTION_TOOL,
        "record what the answer takes for granted",
        &[],
    ),
    (
        SET_ASSUMPTION_STATUS_TOOL,
        "settle verifiable high and critical assumptions",
        DEEPER,
    ),
    (
        RUN_REASONKIT_PIPELINE_TOOL,
        "stage markers: perspectives, logic, first principles, verification, critique",
        &[],
    ),
    (
        RUN_REASONING_CHECKPOINT_TOOL,
        "record a fresh route decision and the blocking gaps",
        &[],
    ),
    (
        CONSENSUS_ANSWER_TOOL,
        "passes only when the five policy-guard checks pass",
        &[],
    ),
];

/// The workflow of a mode (Auto and unknown modes have none).
fn workflow(mode: Mode) -> &'static [StepSpec] {
    match mode.user_mode {
        "Quick" => QUICK,
        "Explore" => EXPLORE,
        "Map" => MAP,
        "Sketch" => SKETCH,
        "Test" => TEST,
        _ => &[],
    }
}

/// The recommended next steps for `mode` under `profile`.
pub fn autopilot_steps(mode: Mode, profile: &str) -> Vec<PlanStep> {
    workflow(mode)
        .iter()
        .filter(|(_, _, profiles)| profiles.is_empty() || profiles.contains(&profile))
        .enumerate()
        .map(|(i, (tool, why, _))| PlanStep {
            order: u32::try_from(i + 1).unwrap_or(u32::MAX),
            tool: (*tool).to_owned(),
            why: (*why).to_owned(),
        })
        .collect()
}

pub(super) fn next_tools(steps: &[PlanStep]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in steps {
        if !out.contains(&s.tool) {
            out.push(s.tool.clone());
        }
    }
    out
}
