//! The tools that place one node: start_deliberation (the goal as root), add_thought_node (a
//! caller's thought with typed edges) and refine_thoughts (a refinement linked to the node it
//! refines). Must not know: the lens, template and pattern registries, or scores.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{BudgetRemaining, EdgeOut, derived, edit_at_live_node, finish, invalid, node_text};
use crate::app::ErrorCode;
use crate::app::Outcome;
use crate::app::call::{Call, PathStep, Refusal};
use crate::app::deliberation::budgets::{BudgetArgs, budgets_or_refuse, profile_or_refuse};
use crate::app::deliberation::context::refuse;
use crate::app::deliberation::graph_edit::GraphEdit;
use crate::app::deliberation::injection::{scan, shown};
use crate::app::deliberation::mode::{mode_or_refuse, parse_mode};
use crate::app::deliberation::outputs::{AnalysisOut, NodeOut, RedactionOut};
use crate::app::deliberation::start::{StartPlan, plan_start};
use crate::app::tags::normalize_tags;
use crate::events::Fact;
use crate::events::deliberation::Budgets;
use crate::projections::Deliberation;

/// A deliberation's budgets as responses show them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct BudgetsOut {
    pub max_nodes: u32,
    pub max_depth: u32,
    pub max_expansions_per_call: u32,
    pub max_verification_questions: u32,
}

impl From<Budgets> for BudgetsOut {
    fn from(b: Budgets) -> Self {
        Self {
            max_nodes: b.max_nodes,
            max_depth: b.max_depth,
            max_expansions_per_call: b.max_expansions_per_call,
            max_verification_questions: b.max_verification_questions,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// start_deliberation
// ---------------------------------------------------------------------------------------------

/// Arguments of `start_deliberation`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct StartArgs {
    /// The question or task to deliberate on; it becomes the root node.
    #[schemars(extend("x-text" = true))]
    pub goal: String,
    /// Constraints the answer must respect (at most 64).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    #[schemars(extend("x-text" = true))]
    pub constraints: Option<Vec<String>>,
    /// Thinking mode: Quick, Explore (default), Map, Sketch, Test, or the internal values cot,
    /// tot, got, reasonkit. Auto is accepted and starts as Explore: this tool does not route
    /// (reasoning_intent_router and run_thinking_mode do).
    #[serde(default)]
    #[schemars(with = "String")]
    pub mode: Option<String>,
    /// quick, balanced (default), deep or paranoid: sets the default budgets.
    #[serde(default)]
    #[schemars(with = "String")]
    pub profile: Option<String>,
    /// Overrides of the profile's budgets (each from 1 to its ceiling).
    #[serde(default)]
    #[schemars(with = "BudgetArgs")]
    pub budgets: Option<BudgetArgs>,
    /// An existing session without a deliberation to start it in; by default your current
    /// session if it has not started yet, else a new session.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Response of `start_deliberation`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StartOutput {
    pub session_id: String,
    pub deliberation_id: String,
    pub root_node_id: String,
    /// Auto, Quick, Explore, Map, Sketch or Test (Auto starts as Explore).
    pub user_mode: String,
    /// cot, tot, got or reasonkit.
    pub internal_method: String,
    /// Why this mode is in force.
    pub mode_rationale: String,
    pub profile: String,
    pub budgets: BudgetsOut,
    /// Always `open` for a new deliberation.
    pub status: String,
    /// The root node (the goal).
    pub nodes: Vec<NodeOut>,
    /// Spans of the goal and constraints redacted as prompt injection.
    pub redactions: Vec<RedactionOut>,
    pub analysis: AnalysisOut,
}

const START_USAGE: &str = "send {\"goal\": \"...\", \"constraints\": [\"...\"], \"mode\": \
    \"Explore\", \"profile\": \"balanced\", \"budgets\": {\"max_nodes\": 200}}";

pub(crate) fn decide_start(call: &mut Call<'_>) -> Outcome {
    let args: StartArgs = call.parse(START_USAGE)?;
    let requested = mode_or_refuse(args.mode.as_deref(), "Explore")?;
    let (mode, mode_rationale) = if requested.internal_method == "auto" {
        let explore = parse_mode("Explore").unwrap_or(requested);
        (
            explore,
            "Auto was asked: start_deliberation does not route, so it starts as Explore (tot, \
             branching and pruning); use reasoning_intent_router or run_thinking_mode for a \
             routed choice"
                .to_owned(),
        )
    } else if args.mode.is_none() {
        (
            requested,
            "no mode was given: Explore (tot, branching and pruning) is the default".to_owned(),
        )
    } else {
        (
            requested,
            format!(
                "{} was asked for (internal method {})",
                requested.user_mode, requested.internal_method
            ),
        )
    };
    let profile = profile_or_refuse(args.profile.as_deref())?;
    let budgets = budgets_or_refuse(profile, args.budgets.as_ref())?;
    let constraints = args.constraints.unwrap_or_default();
    let started = plan_start(
        call,
        &StartPlan {
            session_id: args.session_id.as_deref(),
            goal: &args.goal,
            goal_path: &[PathStep::Key("goal")],
            constraints: &constraints,
            constraints_key: "constraints",
            mode,
            profile,
            budgets,
        },
    )?;
    let mut redactions = Vec::new();
    let mut nodes = Vec::new();
    for fact in &started.facts {
        match fact {
            Fact::DeliberationStarted(s) => {
                redactions.extend(s.goal.redactions.iter().map(RedactionOut::from));
                for c in &s.constraints {
                    redactions.extend(c.redactions.iter().map(RedactionOut::from));
                }
            }
            Fact::NodeAdded(n) => {
                nodes.push(NodeOut::planned(n, &shown(&args.goal, "goal"), call.at));
            }
            _ => {}
        }
    }
    let analysis = call.analysis(
        mode.user_mode,
        "start.goal_as_root",
        "caller",
        Vec::new(),
        &[
            "the root node is the goal as the caller stated it; nothing was generated",
            "budgets come from the profile and the caller's overrides",
        ],
    );
    let body = StartOutput {
        session_id: started.session_id.to_string(),
        deliberation_id: started.deliberation_id,
        root_node_id: started.root_node_id,
        user_mode: mode.user_mode.to_owned(),
        internal_method: mode.internal_method.to_owned(),
        mode_rationale,
        profile: profile.to_owned(),
        budgets: budgets.into(),
        status: "open".to_owned(),
        nodes,
        redactions,
        analysis: AnalysisOut::from(&analysis),
    };
    call.done(Some(started.session_id), started.facts, body)
}

// ---------------------------------------------------------------------------------------------
// add_thought_node
// ---------------------------------------------------------------------------------------------

/// A typed edge to add with a new node.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct EdgeArg {
    /// The edge's target: an existing node, or `new` for the node being added.
    pub to: String,
    /// One of: supports, conflicts, depends_on, refines, subsumes, analogous_to,
    /// contradicts_fatally, temporally_precedes, requires_grounding, contextualizes,
    /// exemplifies. depends_on and refines must stay acyclic.
    pub edge_type: String,
    /// The edge's source: the new node by default; an existing node id relates that node to
    /// the new one (or two existing nodes).
    #[serde(default)]
    #[schemars(with = "String")]
    pub from: Option<String>,
}

/// Arguments of `add_thought_node`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AddNodeArgs {
    /// The thought, as the caller (agent) wrote it. Scanned for prompt injection.
    #[schemars(extend("x-text" = true))]
    pub content: String,
    /// Parent nodes (default: the root). The node sits one level below its deepest parent.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub parent_ids: Option<Vec<String>>,
    /// Branch (line of thought) of the node; default: its first parent's branch (`main` under
    /// the root). Letters, digits and `-_.:/`, at most 64 characters.
    #[serde(default)]
    #[schemars(with = "String")]
    pub branch_id: Option<String>,
    /// Labels (lowercased, deduplicated; at most 32 of at most 64 characters).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub tags: Option<Vec<String>>,
    /// Typed edges from the new node (or from `from`) to other nodes; at most 64.
    #[serde(default)]
    #[schemars(with = "Vec<EdgeArg>")]
    pub edges: Option<Vec<EdgeArg>>,
    /// Deliberation handle (`session_id` of an earlier response); omit for your current one.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Response of `add_thought_node`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AddNodeOutput {
    pub session_id: String,
    pub deliberation_id: String,
    pub node: NodeOut,
    pub edges_added: Vec<EdgeOut>,
    /// Nodes in the deliberation after this call.
    pub node_count: usize,
    pub budget_remaining: BudgetRemaining,
    pub analysis: AnalysisOut,
}

const ADD_USAGE: &str = "send {\"content\": \"...\", \"parent_ids\": [\"node-1\"], \"edges\": \
    [{\"to\": \"node-2\", \"edge_type\": \"supports\"}]}";

/// Most edges one call may add.
const MAX_EDGES_PER_CALL: usize = 64;

fn valid_branch_id(id: &str) -> bool {
    !id.is_empty()
        && id.chars().count() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:/".contains(c))
}

/// Labels as stored: normalized, and free of anything the injection scan matches (a tag is
/// stored inline, so it must not carry an instruction).
fn checked_tags(d: &Deliberation, raw: &[String]) -> Result<Vec<String>, Refusal> {
    let tags = normalize_tags(raw).map_err(|r| (r, Some(d.session_id.clone())))?;
    if let Some(bad) = tags.iter().find(|t| scan("tags", t).is_some()) {
        return Err(refuse(
            d,
            ErrorCode::InvalidTag,
            format!("the tag \"{bad}\" reads as an instruction to a model"),
            "use short descriptive labels such as hypothesis, evidence, counter, decision",
        ));
    }
    Ok(tags)
}

pub(crate) fn decide_add_node(call: &mut Call<'_>) -> Outcome {
    let args: AddNodeArgs = call.parse(ADD_USAGE)?;
    let d = call.open_deliberation(args.session_id.as_deref())?;
    if args.content.trim().is_empty() {
        return Err(invalid(
            d,
            "content is empty",
            "write the thought in content",
        ));
    }
    let mut parents: Vec<String> = Vec::new();
    for p in args
        .parent_ids
        .unwrap_or_else(|| vec![d.root_node_id.clone()])
    {
        if !parents.contains(&p) {
            parents.push(p);
        }
    }
    if parents.is_empty() {
        return Err(invalid(
            d,
            "parent_ids is empty: only the goal is a root",
            "omit parent_ids to attach the node under the root, or name its parents",
        ));
    }
    let mut edit = GraphEdit::new(d);
    for p in &parents {
        edit.require_node(p, "parent")?;
    }
    let branch_id = match args.branch_id {
        Some(b) if valid_branch_id(b.trim()) => b.trim().to_owned(),
        Some(b) => {
            return Err(invalid(
                d,
                format!("\"{b}\" is not a usable branch_id"),
                "use letters, digits and -_.:/ (at most 64 characters), or omit branch_id to \
                 stay on the parent's branch",
            ));
        }
        None => d
            .node(&parents[0])
            .map_or_else(|| "main".to_owned(), |n| n.branch_id.clone()),
    };
    let tags = checked_tags(d, args.tags.as_deref().unwrap_or_default())?;
    let edges = args.edges.unwrap_or_default();
    if edges.len() > MAX_EDGES_PER_CALL {
        return Err(invalid(
            d,
            format!("{} edges; at most {MAX_EDGES_PER_CALL}", edges.len()),
            "add the remaining edges with further nodes",
        ));
    }
    let content = call.scanned("content", &[PathStep::Key("content")], &args.content);
    let analysis = call.analysis(
        &d.user_mode,
        "add.caller_node",
        "caller",
        parents.clone(),
        &["the content is the caller's; the server only scanned it for prompt injection"],
    );
    let node_id = edit.add_node(
        parents,
        content,
        branch_id,
        "thought",
        tags,
        analysis.clone(),
    )?;
    for e in &edges {
        let resolve = |id: &str| {
            if id == "new" {
                node_id.clone()
            } else {
                id.to_owned()
            }
        };
        let from = e.from.as_deref().map_or_else(|| node_id.clone(), resolve);
        edit.add_edge(&from, &resolve(&e.to), &e.edge_type)?;
    }
    let shown_text = HashMap::from([(node_id, shown(&args.content, "content"))]);
    let mut applied = finish(edit, &shown_text, call.at);
    let node = applied.take_node(d)?;
    let body = AddNodeOutput {
        session_id: d.session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
        node,
        edges_added: applied.edges,
        node_count: applied.node_count,
        budget_remaining: applied.remaining,
        analysis: AnalysisOut::from(&analysis),
    };
    call.done(Some(d.session_id.clone()), applied.facts, body)
}

// ---------------------------------------------------------------------------------------------
// refine_thoughts
// ---------------------------------------------------------------------------------------------

/// Arguments of `refine_thoughts`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct RefineArgs {
    /// The node to refine.
    pub node_id: String,
    /// What is wrong or missing in it. Scanned for prompt injection.
    #[schemars(extend("x-text" = true))]
    pub feedback: String,
    /// The refined thought, written by the caller (preferred). Without it the new node is a
    /// template quoting the node and the feedback (heuristic, not a rewrite).
    #[serde(default)]
    #[schemars(with = "String")]
    #[schemars(extend("x-text" = true))]
    pub refined_content: Option<String>,
    /// Deliberation handle (`session_id` of an earlier response); omit for your current one.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Response of `refine_thoughts`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RefineOutput {
    pub session_id: String,
    pub deliberation_id: String,
    /// The refinement: a child of the refined node on its branch.
    pub node: NodeOut,
    /// The node refined.
    pub refines: String,
    /// The `refines` edge from the new node to the refined one.
    pub edges_added: Vec<EdgeOut>,
    pub node_count: usize,
    pub budget_remaining: BudgetRemaining,
    /// Spans of the feedback and the refined content redacted as prompt injection.
    pub redactions: Vec<RedactionOut>,
    pub analysis: AnalysisOut,
}

const REFINE_USAGE: &str = "send {\"node_id\": \"node-3\", \"feedback\": \"...\", \
    \"refined_content\": \"...\"}";

pub(crate) fn decide_refine(call: &mut Call<'_>) -> Outcome {
    let args: RefineArgs = call.parse(REFINE_USAGE)?;
    let d = call.open_deliberation(args.session_id.as_deref())?;
    let mut edit = edit_at_live_node(d, &args.node_id)?;
    if args.feedback.trim().is_empty() {
        return Err(invalid(
            d,
            "feedback is empty",
            "say what is wrong or missing in the node",
        ));
    }
    if args
        .refined_content
        .as_deref()
        .is_some_and(|c| c.trim().is_empty())
    {
        return Err(invalid(
            d,
            "refined_content is empty",
            "write the refined thought, or omit refined_content for a template",
        ));
    }
    let target = &args.node_id;
    let feedback = call.scanned("feedback", &[PathStep::Key("feedback")], &args.feedback);
    let feedback_shown = shown(&args.feedback, "feedback");
    let (mut content, text, analysis) =
        match &args.refined_content {
            Some(refined) => {
                let content = call.scanned(
                    "refined_content",
                    &[PathStep::Key("refined_content")],
                    refined,
                );
                let analysis = call.analysis(
                &d.user_mode,
                "refine.caller_content",
                "caller",
                vec![target.clone()],
                &["the refined content is the caller's; the server scanned it and the feedback \
                   for prompt injection and linked it to the node it refines"],
            );
                (content, shown(refined, "refined_content"), analysis)
            }
            None => {
                let original = node_text(call, d, target);
                let text = format!(
                    "Refinement of {target}: revise it so that it answers the feedback; keep what \
                 the feedback does not touch.\n\nFeedback: \"{feedback_shown}\"\n\nOriginal \
                 ({target}): \"{original}\""
                );
                let analysis = call.analysis(
                    &d.user_mode,
                    "refine.feedback_template",
                    "heuristic",
                    vec![target.clone()],
                    &[
                        "the refinement is a template quoting the node and the feedback; it does \
                   not rewrite the thought (no model is configured); send refined_content to \
                   record the rewrite",
                    ],
                );
                (derived(call, &text), text, analysis)
            }
        };
    // The feedback is stored only in the arguments; what was cut from it is recorded with the
    // node it shaped.
    content
        .redactions
        .extend(feedback.redactions.iter().cloned());
    let redactions: Vec<RedactionOut> = content.redactions.iter().map(RedactionOut::from).collect();
    let branch = d
        .node(target)
        .map_or_else(|| "main".to_owned(), |n| n.branch_id.clone());
    let id = edit.add_node(
        vec![target.clone()],
        content,
        branch,
        "refinement",
        vec!["refinement".to_owned()],
        analysis.clone(),
    )?;
    edit.add_edge(&id, target, "refines")?;
    let mut applied = finish(edit, &HashMap::from([(id, text)]), call.at);
    let node = applied.take_node(d)?;
    let body = RefineOutput {
        session_id: d.session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
        node,
        refines: target.clone(),
        edges_added: applied.edges,
        node_count: applied.node_count,
        budget_remaining: applied.remaining,
        redactions,
        analysis: AnalysisOut::from(&analysis),
    };
    call.done(Some(d.session_id.clone()), applied.facts, body)
}
