//! The mode contract catalog behind `reasoning://thinking-modes`: what each thinking mode is
//! for, which tools, prompt packs and resources it uses, the behaviour and safety rules it
//! keeps, and what it is expected to cost under each profile.
//!
//! Owns: the contracts and the cost estimates. Must not know: how a query is routed, what a
//! mode scaffolds.

use schemars::JsonSchema;
use serde::Serialize;

use super::plans::autopilot_steps;
use crate::app::deliberation::budgets::{PROFILES, profile_budgets};
use crate::app::deliberation::mode::{MODES, Mode};
use crate::app::deliberation::{
    ADD_THOUGHT_NODE_TOOL, APPLY_REASONING_PATTERN_TOOL, CONSENSUS_ANSWER_TOOL,
    CONVERGE_REASONING_TOOL, EVALUATE_REASONING_QUALITY_TOOL, EXPAND_THOUGHTS_TOOL,
    PRUNE_THOUGHTS_TOOL, REASONING_AUTOPILOT_TOOL, REASONING_INTENT_ROUTER_TOOL,
    RECORD_ASSUMPTION_TOOL, REFINE_THOUGHTS_TOOL, RUN_REASONING_CHECKPOINT_TOOL,
    RUN_REASONKIT_PIPELINE_TOOL, RUN_SKELETON_ELABORATION_TOOL, RUN_THINKING_MODE_TOOL,
    SCORE_THOUGHTS_TOOL, SET_ASSUMPTION_STATUS_TOOL, SET_SCORING_RUBRIC_TOOL,
    START_SKELETON_OF_THOUGHT_TOOL, VERIFY_THOUGHTS_TOOL,
};

/// What running a mode is expected to cost under one profile. An ordinal estimate from the
/// mode's workflow, not a measurement.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct EstimatedCost {
    /// The profile this estimate is for.
    pub profile: String,
    /// `low`, `medium`, `high` or `very_high`: the mode's base level (Quick low; Explore, Map,
    /// Sketch medium; Test high) shifted one step down for the quick profile and one step up
    /// for deep and paranoid. `varies` for Auto, which costs what its route costs.
    pub relative: String,
    /// Tool calls in the mode's recommended workflow for this profile (the run itself plus
    /// each `autopilot_plan` step, once; repeated expand/score rounds are not counted). Null
    /// for Auto.
    pub expected_tool_calls: Option<u32>,
    /// The node budget the profile starts a deliberation with.
    pub max_nodes: u32,
    /// How the estimate was made.
    pub basis: String,
}

/// One thinking mode's contract (the seed's ThinkingModeContract).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ThinkingModeContract {
    /// `Auto`, `Quick`, `Explore`, `Map`, `Sketch` or `Test`.
    pub mode: String,
    /// `auto`, `cot`, `tot`, `got` or `reasonkit`.
    pub internal_method: String,
    /// Names the `mode` parameters accept for it (case-insensitive).
    pub aliases: Vec<String>,
    /// The estimate under each profile, in profile order.
    pub estimated_cost: Vec<EstimatedCost>,
    /// The tools its workflow runs on.
    pub primary_tools: Vec<String>,
    /// Prompt packs (MCP prompts) that tell a client how to run it.
    pub prompt_packs: Vec<String>,
    /// Resources that show its state.
    pub resources: Vec<String>,
    /// What a run of it does and asks of the client.
    pub required_behavior: Vec<String>,
    /// What it must not do or claim.
    pub safety_rules: Vec<String>,
    /// What a client gets out of it.
    pub output_expectations: Vec<String>,
}

struct ContractSpec {
    mode: &'static str,
    aliases: &'static [&'static str],
    primary_tools: &'static [&'static str],
    prompt_packs: &'static [&'static str],
    resources: &'static [&'static str],
    required_behavior: &'static [&'static str],
    safety_rules: &'static [&'static str],
    output_expectations: &'static [&'static str],
}

const CONTRACTS: &[ContractSpec] = &[
    ContractSpec {
        mode: "Auto",
        aliases: &["auto"],
        primary_tools: &[
            RUN_THINKING_MODE_TOOL,
            REASONING_INTENT_ROUTER_TOOL,
            REASONING_AUTOPILOT_TOOL,
        ],
        prompt_packs: &["auto_route"],
        resources: &["reasoning://thinking-modes", "reasoning://config/providers"],
        required_behavior: &[
            "route by the reasoning_intent_router rules (keyword and structure cues), then run \
             the routed mode's workflow",
            "show user_mode, internal_method, mode_rationale and estimated_cost before deep work",
            "record the route decision in the session",
        ],
        safety_rules: &[
            "route confidence is the margin between rule scores, not a calibrated probability",
            "when no cue matches, route to Explore and say that it is the default",
        ],
        output_expectations: &[
            "user_mode, internal_method, mode_rationale, safety_notes, estimated_cost and \
             mode_contract",
            "a route_decision whose rationale names the matched cues",
            "from reasoning_autopilot, an ordered autopilot_plan of next tools",
        ],
    },
    ContractSpec {
        mode: "Quick",
        aliases: &["quick", "cot"],
        primary_tools: &[
            RUN_THINKING_MODE_TOOL,
            ADD_THOUGHT_NODE_TOOL,
            EVALUATE_REASONING_QUALITY_TOOL,
            CONSENSUS_ANSWER_TOOL,
        ],
        prompt_packs: &["quick_reasoning_audit"],
        resources: &["reasoning://thinking-modes"],
        required_behavior: &[
            "a short linear scaffold: restate the goal, the decisive steps, an answer check",
            "answer each scaffold prompt with one concise node",
        ],
        safety_rules: &[
            "no raw hidden chain-of-thought: record a concise audit of the decisive steps, not a \
             transcript",
            "escalate to Test when the answer rests on facts that need checking",
        ],
        output_expectations: &[
            "restatement, decisive steps and answer check as nodes",
            "a consensus answer with heuristic confidence",
        ],
    },
    ContractSpec {
        mode: "Explore",
        aliases: &["explore", "tot"],
        primary_tools: &[
            RUN_THINKING_MODE_TOOL,
            EXPAND_THOUGHTS_TOOL,
            SET_SCORING_RUBRIC_TOOL,
            SCORE_THOUGHTS_TOOL,
            PRUNE_THOUGHTS_TOOL,
            REFINE_THOUGHTS_TOOL,
            CONVERGE_REASONING_TOOL,
        ],
        prompt_packs: &["explore_branches"],
        resources: &[
            "reasoning://thinking-modes",
            "reasoning://session/{id}/checkpoints",
        ],
        required_behavior: &[
            "expand distinct branches, at most max_expansions_per_call per call",
            "score against the rubric, prune to a beam, refine the survivors",
            "meet the profile's diversity floor before consensus",
        ],
        safety_rules: &[
            "scores are structural heuristics unless the client supplies agent_scores",
            "pruned nodes stay in the ledger: pruning narrows the beam, it deletes nothing",
        ],
        output_expectations: &[
            "scored branch nodes",
            "a pruned beam with refinements",
            "a convergence node",
        ],
    },
    ContractSpec {
        mode: "Map",
        aliases: &["map", "got"],
        primary_tools: &[
            RUN_THINKING_MODE_TOOL,
            ADD_THOUGHT_NODE_TOOL,
            APPLY_REASONING_PATTERN_TOOL,
            REFINE_THOUGHTS_TOOL,
            EVALUATE_REASONING_QUALITY_TOOL,
            CONVERGE_REASONING_TOOL,
        ],
        prompt_packs: &["map_dependencies"],
        resources: &[
            "reasoning://thinking-modes",
            "reasoning://session/{id}/checkpoints",
        ],
        required_behavior: &[
            "name drivers, constraints and risks as nodes",
            "relate them with typed edges (depends_on, contextualizes, conflicts, refines, \
             subsumes)",
            "keep depends_on and refines acyclic (a cycle is refused)",
        ],
        safety_rules: &[
            "handle conflicts and contradicts_fatally edges before consensus",
            "edges are the client's claims about relations, not verified facts",
        ],
        output_expectations: &[
            "a typed graph of drivers, constraints and risks",
            "explicit conflicts and refinements",
            "a merge or convergence node",
        ],
    },
    ContractSpec {
        mode: "Sketch",
        aliases: &["sketch"],
        primary_tools: &[
            START_SKELETON_OF_THOUGHT_TOOL,
            RUN_SKELETON_ELABORATION_TOOL,
            SCORE_THOUGHTS_TOOL,
            RUN_REASONING_CHECKPOINT_TOOL,
            CONVERGE_REASONING_TOOL,
        ],
        prompt_packs: &["sot_skeleton", "sot_elaboration"],
        resources: &[
            "reasoning://thinking-modes",
            "reasoning://session/{id}/skeleton-phases",
            "reasoning://session/{id}/skeleton-phase/{phase_id}",
        ],
        required_behavior: &[
            "outline first (ordered skeleton points), then elaborate each point on its own, \
             then merge",
            "check suitability: proofs, derivations and debugging are sequential and suit a \
             skeleton poorly",
        ],
        safety_rules: &[
            "scaffold points are outline templates (sot_heuristic_scaffold), not model output",
            "an unsuitable source is allowed but flagged",
        ],
        output_expectations: &[
            "a skeleton phase with ordered points",
            "elaborations per point",
            "a merge node that subsumes the elaborations",
        ],
    },
    ContractSpec {
        mode: "Test",
        aliases: &["test", "reasonkit"],
        primary_tools: &[
            VERIFY_THOUGHTS_TOOL,
            RECORD_ASSUMPTION_TOOL,
            SET_ASSUMPTION_STATUS_TOOL,
            RUN_REASONKIT_PIPELINE_TOOL,
            RUN_REASONING_CHECKPOINT_TOOL,
            CONSENSUS_ANSWER_TOOL,
        ],
        prompt_packs: &["test_verification"],
        resources: &[
            "reasoning://thinking-modes",
            "reasoning://session/{id}/assumptions",
            "reasoning://session/{id}/checkpoints",
        ],
        required_behavior: &[
            "chain of verification: claims, verification questions, client-supplied evidence, \
             statuses",
            "record assumptions with criticality and whether evidence could settle them",
            "run a checkpoint; consensus_answer must pass the five policy-guard checks",
        ],
        safety_rules: &[
            "a claim's status comes only from client-supplied evidence: no retrieval provider \
             is active",
            "unresolved critical claims, unhandled source conflicts and blocking assumptions \
             refuse consensus (consensus_blocked)",
            "governed: consensus needs a route decision no older than the last change",
        ],
        output_expectations: &[
            "a verification matrix of claim statuses",
            "an assumption ledger",
            "a checkpoint with quality score and blocking gaps",
            "a consensus answer, or a consensus_blocked refusal naming every blocker",
        ],
    },
];

pub(super) fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

pub(super) fn mode_named(name: &str) -> Mode {
    MODES
        .iter()
        .copied()
        .find(|m| m.user_mode == name)
        .unwrap_or(MODES[0])
}

/// The cost levels, cheapest first.
const LEVELS: &[&str] = &["low", "medium", "high", "very_high"];

/// The estimated cost of `mode` under `profile` (see [`EstimatedCost`]).
pub fn estimated_cost(mode: Mode, profile: &str) -> EstimatedCost {
    let max_nodes = profile_budgets(profile).max_nodes;
    if mode.user_mode == "Auto" {
        return EstimatedCost {
            profile: profile.to_owned(),
            relative: "varies".to_owned(),
            expected_tool_calls: None,
            max_nodes,
            basis: "Auto costs what the routed mode costs, plus the routing step".to_owned(),
        };
    }
    let base: i32 = match mode.user_mode {
        "Quick" => 0,
        "Test" => 2,
        _ => 1,
    };
    let shift = match profile {
        "quick" => -1,
        "deep" | "paranoid" => 1,
        _ => 0,
    };
    let level = usize::try_from((base + shift).clamp(0, 3)).unwrap_or(0);
    let steps = autopilot_steps(mode, profile).len();
    EstimatedCost {
        profile: profile.to_owned(),
        relative: LEVELS[level].to_owned(),
        expected_tool_calls: u32::try_from(steps + 1).ok(),
        max_nodes,
        basis: "ordinal: the mode's base level shifted by the profile; tool calls counted from \
                the mode's recommended workflow; nodes from the profile's budget"
            .to_owned(),
    }
}

/// The contract of one mode.
pub fn contract(mode: Mode) -> ThinkingModeContract {
    let spec = CONTRACTS
        .iter()
        .find(|c| c.mode == mode.user_mode)
        .unwrap_or(&CONTRACTS[0]);
    ThinkingModeContract {
        mode: spec.mode.to_owned(),
        internal_method: mode.internal_method.to_owned(),
        aliases: strings(spec.aliases),
        estimated_cost: PROFILES.iter().map(|p| estimated_cost(mode, p)).collect(),
        primary_tools: strings(spec.primary_tools),
        prompt_packs: strings(spec.prompt_packs),
        resources: strings(spec.resources),
        required_behavior: strings(spec.required_behavior),
        safety_rules: strings(spec.safety_rules),
        output_expectations: strings(spec.output_expectations),
    }
}

/// The Thinking Mode catalog (`reasoning://thinking-modes`), in mode order.
pub(crate) fn contracts() -> Vec<ThinkingModeContract> {
    MODES.iter().map(|m| contract(*m)).collect()
}
