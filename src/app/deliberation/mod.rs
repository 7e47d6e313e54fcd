//! The deliberation workspace (ReasonKit Think v2): thinking modes and routing, the thought DAG
//! with typed edges, scoring and beam pruning, the assumption ledger, verification with an
//! evidence matrix, quality checkpoints, convergence and the consensus policy guard,
//! skeleton-of-thought, patterns and templates.
//!
//! Every tool is decided here from the deliberation projection and its arguments, at the
//! decision time the ledger fixes (so a replay re-derives the same output). Analysis is the
//! deterministic heuristic provider: templates, rule checks, weighted structural scores and
//! evaluation of caller-supplied evidence. Model-backed and retrieval providers are boundaries
//! that fail closed (see `app::providers`). Owns: the rules. Must not know: MCP, storage.

pub mod budgets;
pub mod context;
pub mod governance;
pub mod graph;
pub mod graph_edit;
pub mod injection;
pub mod mode;
pub mod model;
pub mod modes;
pub mod outputs;
pub mod scaffold;
pub mod skeleton;
pub mod start;
#[cfg(test)]
pub mod testing;

use super::call::model::ModelTool;
use super::call::{ArgsShape, Decide, ToolSpec};

/// The name of the `run_thinking_mode` tool: its spec, its catalog entry and every reference use this.
pub const RUN_THINKING_MODE_TOOL: &str = "run_thinking_mode";
/// The name of the `reasoning_intent_router` tool: its spec, its catalog entry and every reference use this.
pub const REASONING_INTENT_ROUTER_TOOL: &str = "reasoning_intent_router";
/// The name of the `reasoning_autopilot` tool: its spec, its catalog entry and every reference use this.
pub const REASONING_AUTOPILOT_TOOL: &str = "reasoning_autopilot";
/// The name of the `start_deliberation` tool: its spec, its catalog entry and every reference use this.
pub const START_DELIBERATION_TOOL: &str = "start_deliberation";
/// The name of the `add_thought_node` tool: its spec, its catalog entry and every reference use this.
pub const ADD_THOUGHT_NODE_TOOL: &str = "add_thought_node";
/// The name of the `expand_thoughts` tool: its spec, its catalog entry and every reference use this.
pub const EXPAND_THOUGHTS_TOOL: &str = "expand_thoughts";
/// The name of the `apply_algorithm_template` tool: its spec, its catalog entry and every reference use this.
pub const APPLY_ALGORITHM_TEMPLATE_TOOL: &str = "apply_algorithm_template";
/// The name of the `set_scoring_rubric` tool: its spec, its catalog entry and every reference use this.
pub const SET_SCORING_RUBRIC_TOOL: &str = "set_scoring_rubric";
/// The name of the `score_thoughts` tool: its spec, its catalog entry and every reference use this.
pub const SCORE_THOUGHTS_TOOL: &str = "score_thoughts";
/// The name of the `prune_thoughts` tool: its spec, its catalog entry and every reference use this.
pub const PRUNE_THOUGHTS_TOOL: &str = "prune_thoughts";
/// The name of the `refine_thoughts` tool: its spec, its catalog entry and every reference use this.
pub const REFINE_THOUGHTS_TOOL: &str = "refine_thoughts";
/// The name of the `record_assumption` tool: its spec, its catalog entry and every reference use this.
pub const RECORD_ASSUMPTION_TOOL: &str = "record_assumption";
/// The name of the `set_assumption_status` tool: its spec, its catalog entry and every reference use this.
pub const SET_ASSUMPTION_STATUS_TOOL: &str = "set_assumption_status";
/// The name of the `apply_reasoning_pattern` tool: its spec, its catalog entry and every reference use this.
pub const APPLY_REASONING_PATTERN_TOOL: &str = "apply_reasoning_pattern";
/// The name of the `verify_thoughts` tool: its spec, its catalog entry and every reference use this.
pub const VERIFY_THOUGHTS_TOOL: &str = "verify_thoughts";
/// The name of the `evaluate_reasoning_quality` tool: its spec, its catalog entry and every reference use this.
pub const EVALUATE_REASONING_QUALITY_TOOL: &str = "evaluate_reasoning_quality";
/// The name of the `run_reasoning_checkpoint` tool: its spec, its catalog entry and every reference use this.
pub const RUN_REASONING_CHECKPOINT_TOOL: &str = "run_reasoning_checkpoint";
/// The name of the `converge_reasoning` tool: its spec, its catalog entry and every reference use this.
pub const CONVERGE_REASONING_TOOL: &str = "converge_reasoning";
/// The name of the `run_reasonkit_pipeline` tool: its spec, its catalog entry and every reference use this.
pub const RUN_REASONKIT_PIPELINE_TOOL: &str = "run_reasonkit_pipeline";
/// The name of the `consensus_answer` tool: its spec, its catalog entry and every reference use this.
pub const CONSENSUS_ANSWER_TOOL: &str = "consensus_answer";
/// The name of the `start_skeleton_of_thought` tool: its spec, its catalog entry and every reference use this.
pub const START_SKELETON_OF_THOUGHT_TOOL: &str = "start_skeleton_of_thought";
/// The name of the `run_skeleton_elaboration` tool: its spec, its catalog entry and every reference use this.
pub const RUN_SKELETON_ELABORATION_TOOL: &str = "run_skeleton_elaboration";

/// The deliberation family's tools, in the seed's order (its tool table).
pub(crate) const SPECS: &[ToolSpec] = &[
    ToolSpec {
        name: RUN_THINKING_MODE_TOOL,
        args: ArgsShape::of::<modes::RunModeArgs>,
        decide: Decide::InContext(modes::decide_run_thinking_mode),
    },
    ToolSpec {
        name: REASONING_INTENT_ROUTER_TOOL,
        args: ArgsShape::of::<modes::RouterArgs>,
        decide: Decide::InContext(modes::decide_intent_router),
    },
    ToolSpec {
        name: REASONING_AUTOPILOT_TOOL,
        args: ArgsShape::of::<modes::AutopilotArgs>,
        decide: Decide::InContext(modes::decide_autopilot),
    },
    ToolSpec {
        name: START_DELIBERATION_TOOL,
        args: ArgsShape::of::<graph::StartArgs>,
        decide: Decide::InContext(graph::decide_start),
    },
    ToolSpec {
        name: ADD_THOUGHT_NODE_TOOL,
        args: ArgsShape::of::<graph::AddNodeArgs>,
        decide: Decide::InContext(graph::decide_add_node),
    },
    ToolSpec {
        name: EXPAND_THOUGHTS_TOOL,
        args: ArgsShape::of::<graph::ExpandArgs>,
        decide: Decide::WithModel(ModelTool {
            plan: graph::plan_expand,
            decide: graph::decide_expand,
        }),
    },
    ToolSpec {
        name: APPLY_ALGORITHM_TEMPLATE_TOOL,
        args: ArgsShape::of::<graph::TemplateArgs>,
        decide: Decide::InContext(graph::decide_template),
    },
    ToolSpec {
        name: SET_SCORING_RUBRIC_TOOL,
        args: ArgsShape::of::<graph::RubricArgs>,
        decide: Decide::InContext(graph::decide_rubric),
    },
    ToolSpec {
        name: SCORE_THOUGHTS_TOOL,
        args: ArgsShape::of::<graph::ScoreArgs>,
        decide: Decide::WithModel(ModelTool {
            plan: graph::plan_score,
            decide: graph::decide_score,
        }),
    },
    ToolSpec {
        name: PRUNE_THOUGHTS_TOOL,
        args: ArgsShape::of::<graph::PruneArgs>,
        decide: Decide::InContext(graph::decide_prune),
    },
    ToolSpec {
        name: REFINE_THOUGHTS_TOOL,
        args: ArgsShape::of::<graph::RefineArgs>,
        decide: Decide::InContext(graph::decide_refine),
    },
    ToolSpec {
        name: RECORD_ASSUMPTION_TOOL,
        args: ArgsShape::of::<governance::RecordAssumptionArgs>,
        decide: Decide::InContext(governance::decide_record_assumption),
    },
    ToolSpec {
        name: SET_ASSUMPTION_STATUS_TOOL,
        args: ArgsShape::of::<governance::AssumptionStatusArgs>,
        decide: Decide::InContext(governance::decide_assumption_status),
    },
    ToolSpec {
        name: APPLY_REASONING_PATTERN_TOOL,
        args: ArgsShape::of::<graph::PatternArgs>,
        decide: Decide::InContext(graph::decide_pattern),
    },
    ToolSpec {
        name: VERIFY_THOUGHTS_TOOL,
        args: ArgsShape::of::<governance::VerifyArgs>,
        decide: Decide::WithModel(ModelTool {
            plan: governance::plan_verify,
            decide: governance::decide_verify,
        }),
    },
    ToolSpec {
        name: EVALUATE_REASONING_QUALITY_TOOL,
        args: ArgsShape::of::<governance::EvaluateArgs>,
        decide: Decide::InContext(governance::decide_evaluate),
    },
    ToolSpec {
        name: RUN_REASONING_CHECKPOINT_TOOL,
        args: ArgsShape::of::<governance::CheckpointArgs>,
        decide: Decide::InContext(governance::decide_checkpoint),
    },
    ToolSpec {
        name: CONVERGE_REASONING_TOOL,
        args: ArgsShape::of::<governance::ConvergeArgs>,
        decide: Decide::InContext(governance::decide_converge),
    },
    ToolSpec {
        name: RUN_REASONKIT_PIPELINE_TOOL,
        args: ArgsShape::of::<modes::PipelineArgs>,
        decide: Decide::InContext(modes::decide_pipeline),
    },
    ToolSpec {
        name: CONSENSUS_ANSWER_TOOL,
        args: ArgsShape::of::<governance::ConsensusArgs>,
        decide: Decide::InContext(governance::decide_consensus),
    },
    ToolSpec {
        name: START_SKELETON_OF_THOUGHT_TOOL,
        args: ArgsShape::of::<skeleton::StartSkeletonArgs>,
        decide: Decide::InContext(skeleton::decide_start_skeleton),
    },
    ToolSpec {
        name: RUN_SKELETON_ELABORATION_TOOL,
        args: ArgsShape::of::<skeleton::ElaborationArgs>,
        decide: Decide::InContext(skeleton::decide_elaboration),
    },
];
