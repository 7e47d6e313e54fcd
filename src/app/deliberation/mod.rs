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
pub mod modes;
pub mod outputs;
pub mod scaffold;
pub mod skeleton;
pub mod start;
#[cfg(test)]
pub mod testing;

use super::call::{Decide, ToolSpec};

/// The deliberation family's tools, in the seed's order (its tool table).
pub(crate) const SPECS: &[ToolSpec] = &[
    ToolSpec {
        name: "run_thinking_mode",
        known_fields: &[
            "mode",
            "goal",
            "profile",
            "constraints",
            "budgets",
            "session_id",
        ],
        text_fields: &["goal", "constraints[]"],
        decide: Decide::InContext(modes::decide_run_thinking_mode),
    },
    ToolSpec {
        name: "reasoning_intent_router",
        known_fields: &["query", "profile", "session_id"],
        text_fields: &["query"],
        decide: Decide::InContext(modes::decide_intent_router),
    },
    ToolSpec {
        name: "reasoning_autopilot",
        known_fields: &["goal", "profile", "constraints", "budgets", "session_id"],
        text_fields: &["goal", "constraints[]"],
        decide: Decide::InContext(modes::decide_autopilot),
    },
    ToolSpec {
        name: "start_deliberation",
        known_fields: &[
            "goal",
            "constraints",
            "mode",
            "profile",
            "budgets",
            "session_id",
        ],
        text_fields: &["goal", "constraints[]"],
        decide: Decide::InContext(graph::decide_start),
    },
    ToolSpec {
        name: "add_thought_node",
        known_fields: &[
            "content",
            "parent_ids",
            "branch_id",
            "tags",
            "edges",
            "session_id",
        ],
        text_fields: &["content"],
        decide: Decide::InContext(graph::decide_add_node),
    },
    ToolSpec {
        name: "expand_thoughts",
        known_fields: &["node_id", "count", "candidates", "provider", "session_id"],
        text_fields: &["candidates[]"],
        decide: Decide::InContext(graph::decide_expand),
    },
    ToolSpec {
        name: "apply_algorithm_template",
        known_fields: &["template", "node_id", "session_id"],
        text_fields: &[],
        decide: Decide::InContext(graph::decide_template),
    },
    ToolSpec {
        name: "set_scoring_rubric",
        known_fields: &["weights", "session_id"],
        text_fields: &[],
        decide: Decide::InContext(graph::decide_rubric),
    },
    ToolSpec {
        name: "score_thoughts",
        known_fields: &["node_ids", "agent_scores", "provider", "session_id"],
        text_fields: &[],
        decide: Decide::InContext(graph::decide_score),
    },
    ToolSpec {
        name: "prune_thoughts",
        known_fields: &["beam_width", "min_score", "session_id"],
        text_fields: &[],
        decide: Decide::InContext(graph::decide_prune),
    },
    ToolSpec {
        name: "refine_thoughts",
        known_fields: &["node_id", "feedback", "refined_content", "session_id"],
        text_fields: &["feedback", "refined_content"],
        decide: Decide::InContext(graph::decide_refine),
    },
    ToolSpec {
        name: "record_assumption",
        known_fields: &[
            "text",
            "criticality",
            "verifiable",
            "source_node_ids",
            "session_id",
        ],
        text_fields: &["text"],
        decide: Decide::InContext(governance::decide_record_assumption),
    },
    ToolSpec {
        name: "set_assumption_status",
        known_fields: &[
            "assumption_id",
            "status",
            "evidence",
            "rationale",
            "session_id",
        ],
        text_fields: &["evidence[]", "rationale"],
        decide: Decide::InContext(governance::decide_assumption_status),
    },
    ToolSpec {
        name: "apply_reasoning_pattern",
        known_fields: &["pattern", "node_id", "session_id"],
        text_fields: &[],
        decide: Decide::InContext(graph::decide_pattern),
    },
    ToolSpec {
        name: "verify_thoughts",
        known_fields: &[
            "claims",
            "evidence",
            "resolutions",
            "generate_questions",
            "provider",
            "session_id",
        ],
        text_fields: &[
            "claims[].text",
            "evidence[].source",
            "evidence[].excerpt",
            "resolutions[].rationale",
        ],
        decide: Decide::InContext(governance::decide_verify),
    },
    ToolSpec {
        name: "evaluate_reasoning_quality",
        known_fields: &["session_id"],
        text_fields: &[],
        decide: Decide::InContext(governance::decide_evaluate),
    },
    ToolSpec {
        name: "run_reasoning_checkpoint",
        known_fields: &["quality_threshold", "phase_id", "session_id"],
        text_fields: &[],
        decide: Decide::InContext(governance::decide_checkpoint),
    },
    ToolSpec {
        name: "converge_reasoning",
        known_fields: &["quality_threshold", "summary", "session_id"],
        text_fields: &["summary"],
        decide: Decide::InContext(governance::decide_converge),
    },
    ToolSpec {
        name: "run_reasonkit_pipeline",
        known_fields: &["profile", "stages", "session_id"],
        text_fields: &[],
        decide: Decide::InContext(modes::decide_pipeline),
    },
    ToolSpec {
        name: "consensus_answer",
        known_fields: &["answer", "session_id"],
        text_fields: &["answer"],
        decide: Decide::InContext(governance::decide_consensus),
    },
    ToolSpec {
        name: "start_skeleton_of_thought",
        known_fields: &[
            "source_node_id",
            "points",
            "style",
            "max_points",
            "session_id",
        ],
        text_fields: &["points[]"],
        decide: Decide::InContext(skeleton::decide_start_skeleton),
    },
    ToolSpec {
        name: "run_skeleton_elaboration",
        known_fields: &[
            "phase_id",
            "elaborations",
            "merge",
            "merge_summary",
            "session_id",
        ],
        text_fields: &["elaborations[].content", "merge_summary"],
        decide: Decide::InContext(skeleton::decide_elaboration),
    },
];
