//! Autopilot plans: the ordered tools each mode's workflow calls next, by profile, each with
//! why.
//!
//! Owns: the workflows. Must not know: how they are run.

use schemars::JsonSchema;
use serde::Serialize;

use crate::app::deliberation::mode::Mode;

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

fn workflow(mode: Mode) -> &'static [StepSpec] {
    match mode.user_mode {
        "Quick" => &[
            (
                "add_thought_node",
                "answer the restate, key-steps and answer-check prompts, one concise node each",
                &[],
            ),
            (
                "verify_thoughts",
                "paranoid: check the facts the answer rests on against your evidence",
                PARANOID,
            ),
            (
                "evaluate_reasoning_quality",
                "see the quality score and any gaps before answering",
                DEEPER,
            ),
            (
                "consensus_answer",
                "state the answer; the policy guard checks it",
                &[],
            ),
        ],
        "Explore" => &[
            (
                "add_thought_node",
                "develop each opened branch with your own reasoning",
                &[],
            ),
            ("score_thoughts", "rank the branches by the rubric", &[]),
            ("prune_thoughts", "keep a beam of the best branches", &[]),
            (
                "refine_thoughts",
                "correct the surviving branches with concrete feedback",
                DEEPER,
            ),
            (
                "run_reasonkit_pipeline",
                "critique the beam (anchoring, unexamined assumptions)",
                STRICT,
            ),
            (
                "run_reasoning_checkpoint",
                "gate on quality, diversity and open gaps",
                DEEPER,
            ),
            (
                "converge_reasoning",
                "write the convergence node once the gates pass",
                &[],
            ),
            (
                "consensus_answer",
                "state the answer; the policy guard checks it",
                &[],
            ),
        ],
        "Map" => &[
            (
                "add_thought_node",
                "answer the drivers, constraints and risks prompts and relate the answers by \
                 typed edges",
                &[],
            ),
            (
                "refine_thoughts",
                "resolve each conflicts edge with a refinement",
                DEEPER,
            ),
            (
                "run_reasonkit_pipeline",
                "laserlogic: list conflicts and orphan nodes",
                DEEPER,
            ),
            (
                "evaluate_reasoning_quality",
                "see the quality score and any gaps",
                &[],
            ),
            (
                "converge_reasoning",
                "write the convergence node once the gates pass",
                &[],
            ),
            (
                "consensus_answer",
                "state the answer; the policy guard checks it",
                &[],
            ),
        ],
        "Sketch" => &[
            (
                "run_skeleton_elaboration",
                "elaborate every skeleton point independently, then merge",
                &[],
            ),
            (
                "score_thoughts",
                "score the elaborations before merging",
                STRICT,
            ),
            (
                "run_reasoning_checkpoint",
                "gate the phase (pass its phase_id)",
                DEEPER,
            ),
            (
                "converge_reasoning",
                "write the convergence node from the merge",
                &[],
            ),
            (
                "consensus_answer",
                "state the answer; the policy guard checks it",
                &[],
            ),
        ],
        "Test" => &[
            (
                "verify_thoughts",
                "register the claims to verify and generate verification questions",
                &[],
            ),
            (
                "verify_thoughts",
                "send your evidence (tier, independence_group) and resolve source conflicts",
                &[],
            ),
            (
                "record_assumption",
                "record what the answer takes for granted",
                &[],
            ),
            (
                "set_assumption_status",
                "settle verifiable high and critical assumptions",
                DEEPER,
            ),
            (
                "run_reasonkit_pipeline",
                "stage markers: perspectives, logic, first principles, verification, critique",
                &[],
            ),
            (
                "run_reasoning_checkpoint",
                "record a fresh route decision and the blocking gaps",
                &[],
            ),
            (
                "consensus_answer",
                "passes only when the five policy-guard checks pass",
                &[],
            ),
        ],
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
