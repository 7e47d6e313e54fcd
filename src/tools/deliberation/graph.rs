//! Catalog entries of the thought-graph tools (decided in `app::deliberation::graph`): what
//! each does, what of it is heuristic, and what repeating it does.

use super::super::catalog::{CallerEffect, Effect, ToolEntry, entry, render_json};
use crate::app::deliberation::graph::{
    AddNodeArgs, AddNodeOutput, ExpandArgs, ExpandOutput, PatternArgs, PatternOutput, PruneArgs,
    PruneOutput, RefineArgs, RefineOutput, RubricArgs, RubricOutput, ScoreArgs, ScoreOutput,
    StartArgs, StartOutput, TemplateArgs, TemplateOutput,
};
use crate::app::{
    ADD_THOUGHT_NODE_TOOL, APPLY_ALGORITHM_TEMPLATE_TOOL, APPLY_REASONING_PATTERN_TOOL,
    EXPAND_THOUGHTS_TOOL, PRUNE_THOUGHTS_TOOL, REFINE_THOUGHTS_TOOL, SCORE_THOUGHTS_TOOL,
    SET_SCORING_RUBRIC_TOOL, START_DELIBERATION_TOOL,
};

pub(super) fn entries() -> Vec<ToolEntry> {
    vec![
        entry::<StartArgs, StartOutput>(
            START_DELIBERATION_TOOL,
            "Start Deliberation",
            "Open a deliberation: the goal becomes the root node of a thought graph, with \
             constraints, a thinking mode (default Explore; Auto starts as Explore, since this \
             tool does not route), a profile (quick, balanced, deep, paranoid) and budgets \
             (nodes, depth, expansions per call, verification questions). Goal and constraints \
             are scanned for prompt injection and redacted. Starts in your current session, \
             or a new one that later calls continue.",
            Effect::Appends,
            render_json,
        )
        .with_caller(CallerEffect::ContinuesStartedSession),
        entry::<AddNodeArgs, AddNodeOutput>(
            ADD_THOUGHT_NODE_TOOL,
            "Add Thought Node",
            "Add a thought you wrote to the graph, under parent_ids (default the root), on a \
             branch (default the parent's), with tags and typed edges from it to other nodes \
             (supports, conflicts, depends_on, refines, subsumes, analogous_to, \
             contradicts_fatally, temporally_precedes, requires_grounding, contextualizes, \
             exemplifies). depends_on and refines must stay acyclic; budgets are enforced. The \
             content is scanned for prompt injection and redacted.",
            Effect::Appends,
            render_json,
        ),
        entry::<ExpandArgs, ExpandOutput>(
            EXPAND_THOUGHTS_TOOL,
            "Expand Thoughts",
            "Branch a node into children, each on its own branch. Pass candidates (your own \
             texts) to record real alternatives; without them each child is a fixed lens prompt \
             (decomposition, constraint-first, counter-position, analogy, failure mode, first \
             principles, stakeholders, extremes) quoting the node: heuristic scaffolding, not \
             generated ideas; provider model_backed has the configured model write them. At              most max_expansions_per_call children per call.",
            Effect::Appends,
            render_json,
        )
        .may_ask_model(),
        entry::<TemplateArgs, TemplateOutput>(
            APPLY_ALGORITHM_TEMPLATE_TOOL,
            "Apply Algorithm Template",
            "Scaffold a reasoning algorithm under a node as ordered step nodes on a new branch, \
             linked by temporally_precedes and depends_on edges: divide_and_conquer, \
             hypothesis_test, pros_cons, five_whys, pre_mortem, decision_matrix, \
             first_principles. The steps are fixed prompts quoting the node; answer them with \
             add_thought_node.",
            Effect::Appends,
            render_json,
        ),
        entry::<RubricArgs, RubricOutput>(
            SET_SCORING_RUBRIC_TOOL,
            "Set Scoring Rubric",
            "Set the weights (each 0 to 1) score_thoughts gives its dimensions: grounding, \
             coherence, novelty, specificity, assumption_risk, agent. Dimensions not named weigh \
             0. Setting the same weights again changes nothing.",
            Effect::Idempotent,
            render_json,
        ),
        entry::<ScoreArgs, ScoreOutput>(
            SCORE_THOUGHTS_TOOL,
            "Score Thoughts",
            "Score nodes (default every live node but the root) and rank them: a weighted mean \
             of structural dimensions — grounding (supports edges, verified or refuted claims), \
             coherence (conflict edges), novelty (word overlap with other nodes), specificity \
             (lexical: numbers and long words), assumption_risk (open high or critical \
             assumptions) — plus agent, your own 0-to-1 judgement when given. Heuristic, not a \
             judgement of truth; provider model_backed adds the configured model's judgement              (model). Each call records a new score run.",
            Effect::Appends,
            render_json,
        )
        .may_ask_model(),
        entry::<PruneArgs, PruneOutput>(
            PRUNE_THOUGHTS_TOOL,
            "Prune Thoughts",
            "Beam-prune the graph: at each depth keep the beam_width best-scored live nodes \
             (ties in node order), prune the rest and any below min_score, and prune nodes whose \
             parents were all pruned. Refused while a candidate is unscored (run \
             score_thoughts). Pruned nodes stay in the graph, marked; each call records a prune.",
            Effect::Appends,
            render_json,
        ),
        entry::<RefineArgs, RefineOutput>(
            REFINE_THOUGHTS_TOOL,
            "Refine Thought",
            "Record a refinement of a node in light of feedback: a new node on its branch with a \
             refines edge to it. Pass refined_content (your rewrite) to record the refinement \
             itself; without it the node is a template quoting the node and the feedback, not a \
             rewrite. Feedback and content are scanned for prompt injection.",
            Effect::Appends,
            render_json,
        ),
        entry::<PatternArgs, PatternOutput>(
            APPLY_REASONING_PATTERN_TOOL,
            "Apply Reasoning Pattern",
            "Apply a reasoning pattern to a node: adds the pattern's prompt (quoting the node) as \
             a child on a new branch, linked by the fitting edge — steelman (supports), red_team \
             and devils_advocate (conflicts), inversion and premortem (contextualizes), analogy \
             (analogous_to), base_rates (requires_grounding), second_order_effects (depends_on), \
             concrete_example (exemplifies), generalize (subsumes). reasoning://patterns lists \
             them. The pattern is prompted, not carried out.",
            Effect::Appends,
            render_json,
        ),
    ]
}
