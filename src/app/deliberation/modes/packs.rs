//! The prompt packs exposed as MCP prompts: instructions telling a client how to run a mode
//! with this server's tools, rendered from templates with `{argument}` placeholders.
//!
//! Owns: the packs, their arguments and rendering. Must not know: MCP message framing.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::catalog::strings;

/// One argument of a prompt pack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PromptArgument {
    pub name: String,
    pub description: String,
    pub required: bool,
}

/// One message of a rendered prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PromptMessage {
    /// `user`.
    pub role: String,
    pub text: String,
}

/// A prompt pack: instructions telling an MCP client how to run a mode with this server's
/// tools. Rendered by substituting `{argument}` placeholders in its template; a template line
/// whose optional argument is absent is left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PromptPack {
    pub name: String,
    pub title: String,
    pub description: String,
    pub arguments: Vec<PromptArgument>,
    /// The template, one line per entry.
    pub template: Vec<String>,
}

impl PromptPack {
    /// The prompt's messages for `args`; an error names a missing required argument.
    pub fn render(&self, args: &BTreeMap<String, String>) -> Result<Vec<PromptMessage>, String> {
        for a in &self.arguments {
            let given = args.get(&a.name).is_some_and(|v| !v.trim().is_empty());
            if a.required && !given {
                return Err(format!(
                    "prompt {} needs the argument {}: {}",
                    self.name, a.name, a.description
                ));
            }
        }
        let mut lines = Vec::new();
        'line: for line in &self.template {
            let mut out = line.clone();
            for a in &self.arguments {
                let placeholder = format!("{{{}}}", a.name);
                if !out.contains(&placeholder) {
                    continue;
                }
                match args.get(&a.name).filter(|v| !v.trim().is_empty()) {
                    Some(value) => out = out.replace(&placeholder, value.trim()),
                    None => continue 'line,
                }
            }
            lines.push(out);
        }
        Ok(vec![PromptMessage {
            role: "user".to_owned(),
            text: lines.join("\n"),
        }])
    }
}

const GOAL_ARG: (&str, &str, bool) = ("goal", "the question or task", true);
const PROFILE_ARG: (&str, &str, bool) = (
    "profile",
    "quick, balanced, deep or paranoid (default balanced)",
    false,
);
const SESSION_ARG: (&str, &str, bool) = (
    "session_id",
    "a session holding a deliberation to continue (default: your current session)",
    false,
);

struct PackSpec {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    arguments: &'static [(&'static str, &'static str, bool)],
    template: &'static [&'static str],
}

const PACKS: &[PackSpec] = &[
    PackSpec {
        name: "auto_route",
        title: "Auto: route, then run the mode",
        description: "Let the server route a goal to a thinking mode and follow its plan.",
        arguments: &[GOAL_ARG, PROFILE_ARG, SESSION_ARG],
        template: &[
            "Goal: {goal}",
            "Profile: {profile}",
            "Session: {session_id}",
            "1. Call reasoning_autopilot with the goal (and profile, session_id if given).",
            "2. Show the user user_mode, mode_rationale and estimated_cost from its answer.",
            "3. Follow autopilot_plan in order; each step names the tool and why.",
            "4. Finish with consensus_answer; if it is refused with consensus_blocked, resolve \
             each named blocker and try again.",
        ],
    },
    PackSpec {
        name: "quick_reasoning_audit",
        title: "Quick: concise reasoning audit",
        description: "Answer with a short, auditable line of reasoning (CoT-style, no hidden \
                      chain-of-thought transcript).",
        arguments: &[GOAL_ARG, PROFILE_ARG, SESSION_ARG],
        template: &[
            "Goal: {goal}",
            "Profile: {profile}",
            "Session: {session_id}",
            "1. Call run_thinking_mode with mode Quick and the goal.",
            "2. Answer its three prompts (restate, key steps, answer check) with add_thought_node, \
             one concise node each, parented on the prompt.",
            "Record only the decisive steps and the facts they rest on: a concise audit, not a \
             transcript of private reasoning.",
            "3. If the answer rests on facts that need checking, switch to Test \
             (run_thinking_mode with mode Test); otherwise call consensus_answer.",
        ],
    },
    PackSpec {
        name: "explore_branches",
        title: "Explore: expand, score, prune",
        description: "Tree-of-Thoughts: develop distinct branches, score them, keep a beam.",
        arguments: &[GOAL_ARG, PROFILE_ARG, SESSION_ARG],
        template: &[
            "Goal: {goal}",
            "Profile: {profile}",
            "Session: {session_id}",
            "1. Call run_thinking_mode with mode Explore; it opens one branch per lens.",
            "2. Develop each branch (add_thought_node on it, or expand_thoughts with your own \
             candidates).",
            "3. set_scoring_rubric if the defaults do not fit, then score_thoughts.",
            "4. prune_thoughts to a beam; refine_thoughts the survivors with concrete feedback.",
            "5. run_reasoning_checkpoint, then converge_reasoning and consensus_answer.",
        ],
    },
    PackSpec {
        name: "map_dependencies",
        title: "Map: typed dependency graph",
        description: "Graph-of-Thoughts: drivers, constraints and risks with typed edges, \
                      conflicts and refinements.",
        arguments: &[GOAL_ARG, PROFILE_ARG, SESSION_ARG],
        template: &[
            "Goal: {goal}",
            "Profile: {profile}",
            "Session: {session_id}",
            "1. Call run_thinking_mode with mode Map; it adds drivers, constraints, risks and a \
             synthesis prompt.",
            "2. Answer each with add_thought_node, relating nodes by typed edges: depends_on, \
             contextualizes, supports, conflicts, refines, subsumes.",
            "3. Mark every contradiction (conflicts, or contradicts_fatally when both cannot \
             hold) and resolve it with refine_thoughts.",
            "4. run_reasonkit_pipeline with stages [laserlogic] to list conflicts and orphans, \
             then converge_reasoning.",
        ],
    },
    PackSpec {
        name: "sot_skeleton",
        title: "Sketch: skeleton first",
        description: "Skeleton-of-Thought: write the outline (ordered points) before any \
                      detail.",
        arguments: &[GOAL_ARG, PROFILE_ARG, SESSION_ARG],
        template: &[
            "Goal: {goal}",
            "Profile: {profile}",
            "Session: {session_id}",
            "1. Write a skeleton: 3 to 8 short points, in order, each a few words.",
            "2. Call start_skeleton_of_thought with points set to your skeleton (without points \
             the server adds outline-template points, not content).",
            "3. Read suitability: proofs, derivations and debugging are sequential; if it is \
             unsuitable, prefer Quick or Map.",
            "4. Then follow the sot_elaboration prompt with the returned phase_id.",
        ],
    },
    PackSpec {
        name: "sot_elaboration",
        title: "Sketch: elaborate and merge",
        description: "Skeleton-of-Thought: expand each point on its own, then merge.",
        arguments: &[
            ("phase_id", "the skeleton phase (sot-N)", true),
            SESSION_ARG,
        ],
        template: &[
            "Phase: {phase_id}",
            "Session: {session_id}",
            "1. For each skeleton point, write a self-contained paragraph that does not lean on \
             the other points.",
            "2. Call run_skeleton_elaboration with elaborations [{skeleton_node_id, content}] \
             for every point; it merges once every point has one (or pass merge explicitly).",
            "3. Give merge_summary to write the merged answer yourself.",
            "4. run_reasoning_checkpoint with the phase_id, then converge_reasoning.",
        ],
    },
    PackSpec {
        name: "test_verification",
        title: "Test: verify, then pass the gates",
        description: "Chain-of-Verification plus ReasonKit governance up to consensus_answer.",
        arguments: &[GOAL_ARG, PROFILE_ARG, SESSION_ARG],
        template: &[
            "Goal: {goal}",
            "Profile: {profile}",
            "Session: {session_id}",
            "1. Call run_thinking_mode with mode Test.",
            "2. List the claims the answer rests on, each with criticality (low, medium, high, \
             critical), and call verify_thoughts with them and generate_questions true.",
            "3. Answer the verification questions with evidence you can cite: source, tier \
             (primary, secondary, tertiary) and independence_group; send it to verify_thoughts.",
            "4. record_assumption for what you take for granted; settle verifiable ones with \
             set_assumption_status.",
            "5. run_reasonkit_pipeline, then run_reasoning_checkpoint.",
            "6. consensus_answer; a consensus_blocked refusal names each blocker to resolve.",
        ],
    },
];

/// The prompt packs (exposed as MCP prompts), in catalog order.
pub(crate) fn prompt_packs() -> Vec<PromptPack> {
    PACKS
        .iter()
        .map(|p| PromptPack {
            name: p.name.to_owned(),
            title: p.title.to_owned(),
            description: p.description.to_owned(),
            arguments: p
                .arguments
                .iter()
                .map(|(name, description, required)| PromptArgument {
                    name: (*name).to_owned(),
                    description: (*description).to_owned(),
                    required: *required,
                })
                .collect(),
            template: strings(p.template),
        })
        .collect()
}
