//! expand_thoughts and its lenses: a node branches into children, each on its own branch,
//! either the caller's candidates or fixed lens prompts quoting the node. Must not know:
//! templates, patterns, scores.

use std::collections::{BTreeSet, HashMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    BudgetRemaining, derived, edit_at_live_node, finish, fresh_branch, invalid, node_text,
};
use serde_json::json;

use crate::app::ErrorCode;
use crate::app::call::model::ModelStep;
use crate::app::call::{Call, PathStep, Refusal};
use crate::app::deliberation::context::refuse;
use crate::app::deliberation::graph_edit::GraphEdit;
use crate::app::deliberation::injection::shown;
use crate::app::deliberation::model;
use crate::app::deliberation::outputs::{AnalysisOut, NodeOut};
use crate::app::{App, Command};
use crate::app::{Outcome, lenient};
use crate::events::deliberation::{AnalysisMetadata, ScannedText};
use crate::projections::Deliberation;

/// An expansion lens: a fixed way of opening a new line of thought from a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Lens {
    pub name: &'static str,
    /// The prompt the child node carries (followed by the parent's content, quoted).
    pub prompt: &'static str,
}

/// The lenses, in the order expand_thoughts applies them. A node's next expansion uses the
/// first lenses it has not had yet.
pub const LENSES: &[Lens] = &[
    Lens {
        name: "decomposition",
        prompt: "Decomposition: split this into independent sub-questions, each answerable on \
                 its own, and say which one decides the rest.",
    },
    Lens {
        name: "constraint_first",
        prompt: "Constraint-first: name the hardest constraint on this and reason forward from \
                 what that constraint rules out.",
    },
    Lens {
        name: "counter_position",
        prompt: "Counter-position: state the strongest case against this and what would have \
                 to be true for that case to win.",
    },
    Lens {
        name: "analogy",
        prompt: "Analogy: find an already-solved problem with the same structure and map its \
                 solution onto this one; note where the mapping breaks.",
    },
    Lens {
        name: "failure_mode",
        prompt: "Failure mode: assume the approach taken here failed; list the most likely \
                 causes, most likely first.",
    },
    Lens {
        name: "first_principles",
        prompt: "First principles: strip this down to what is known to be true and rebuild \
                 the reasoning from those facts alone.",
    },
    Lens {
        name: "stakeholders",
        prompt: "Stakeholders: list whose interests this affects and how each of them would \
                 judge it.",
    },
    Lens {
        name: "scale_extremes",
        prompt: "Extremes: test this at ten times and at one tenth of the expected scale, time \
                 or cost; say what changes.",
    },
];

/// The lens registry (for resources that list it).
pub(crate) fn lenses() -> &'static [Lens] {
    LENSES
}

/// Arguments of `expand_thoughts`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ExpandArgs {
    /// `heuristic` (default), or `model_backed`: the configured model writes the children
    /// (refused without a provider: model_not_configured). `retrieval` is reserved.
    #[serde(default)]
    #[schemars(with = "String")]
    pub provider: Option<String>,
    /// The node to expand (default: the root).
    #[serde(default)]
    #[schemars(with = "String")]
    pub node_id: Option<String>,
    /// How many children to create: default the number of candidates, else min(3,
    /// max_expansions_per_call). More than max_expansions_per_call is refused.
    #[serde(default, deserialize_with = "lenient::u32_optional")]
    #[schemars(with = "u32", range(min = 1))]
    pub count: Option<u32>,
    /// Child thoughts the caller wrote (preferred): each becomes a child on its own branch.
    /// Without them, each child is a lens prompt quoting the node (heuristic, not semantic).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    #[schemars(extend("x-text" = true))]
    pub candidates: Option<Vec<String>>,
    /// Deliberation handle (`session_id` of an earlier response); omit for your current one.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Response of `expand_thoughts`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ExpandOutput {
    pub session_id: String,
    pub deliberation_id: String,
    /// The node expanded.
    pub node_id: String,
    /// The children, each on a new branch.
    pub nodes: Vec<NodeOut>,
    /// Lenses applied (empty when the caller sent candidates).
    pub lenses_used: Vec<String>,
    /// Lenses this node has not had yet.
    pub lenses_remaining: Vec<String>,
    pub node_count: usize,
    pub budget_remaining: BudgetRemaining,
    pub analysis: AnalysisOut,
}

const EXPAND_USAGE: &str = "send {\"node_id\": \"node-1\", \"candidates\": [\"...\", \"...\"]} \
    or {\"node_id\": \"node-1\", \"count\": 3}";

const LENS_LIMITATIONS: &[&str] = &[
    "each child is a fixed lens prompt quoting the parent; no semantic generation took place \
     (no model is configured)",
    "the lens order is fixed; it does not adapt to the content",
    "answer a lens by adding a thought under it (add_thought_node) or pass your own \
     candidates",
];

/// The model's children (`provider: "model_backed"`).
#[derive(Debug, Deserialize)]
struct ModelThoughts {
    thoughts: Vec<String>,
}

/// The model call of `expand_thoughts` with `provider: "model_backed"`: the goal and the
/// parent's text, asking for `count` children as JSON. No call for any other provider, or when
/// the decision will refuse anyway (no deliberation, a bad count, candidates given too).
pub(crate) fn plan_expand(app: &App, command: &Command) -> Result<Option<ModelStep>, Refusal> {
    let Some(args) = model::plan_args::<ExpandArgs>(command) else {
        return Ok(None);
    };
    if !model::asks_model(&command.arguments)
        || !command.prepared.model.answers.is_empty()
        || args.candidates.as_ref().is_some_and(|c| !c.is_empty())
    {
        return Ok(None);
    }
    let Some(d) = model::deliberation_of(app, command, args.session_id.as_deref()) else {
        return Ok(None);
    };
    let max = d.budgets.max_expansions_per_call;
    let count = args.count.unwrap_or_else(|| max.min(3));
    if count == 0 || count > max {
        return Ok(None);
    }
    let anchor = args.node_id.unwrap_or_else(|| d.root_node_id.clone());
    let Some(node) = d.node(&anchor) else {
        return Ok(None);
    };
    let prompt = format!(
        "Goal: {}\n\nThought to expand ({anchor}): {}\n\nWrite {count} distinct next thoughts \
         that each develop it in a different direction, one or two sentences each.",
        model::text_or_erased(app, &d.goal),
        model::text_or_erased(app, &node.content),
    );
    Ok(Some(ModelStep::Chat(model::json_request(
        "You expand a line of reasoning into next thoughts. Answer only with JSON.",
        &prompt,
        "expansion",
        json!({
            "type": "object",
            "properties": {
                "thoughts": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": 300},
                    "minItems": count,
                    "maxItems": count,
                }
            },
            "required": ["thoughts"],
            "additionalProperties": false,
        }),
    ))))
}

/// Decides `expand_thoughts`: the node and how many children, then the children from the model
/// (`model_backed`), from the lenses this node has not had (no candidates) or from the
/// caller's candidates, each on a fresh branch.
pub(crate) fn decide_expand(call: &mut Call<'_>) -> Outcome {
    let args: ExpandArgs = call.parse(EXPAND_USAGE)?;
    let d = call.open_deliberation(args.session_id.as_deref())?;
    let anchor = args.node_id.unwrap_or_else(|| d.root_node_id.clone());
    let edit = edit_at_live_node(d, &anchor)?;
    let candidates = args.candidates.unwrap_or_default();
    let count = child_count(d, args.count, &candidates)?;
    let fresh = fresh_lenses(d, &anchor);
    let mut children = Children {
        anchor,
        edit,
        taken: BTreeSet::new(),
        shown_text: HashMap::new(),
    };
    let mut lenses_used = Vec::new();
    let analysis = if model::asks_model(call.args) {
        if !candidates.is_empty() {
            return Err(model::not_with_candidates(d));
        }
        expand_by_model(call, &mut children, count)?
    } else if candidates.is_empty() {
        expand_by_lenses(call, &mut children, count, &fresh, &mut lenses_used)?
    } else {
        expand_by_candidates(call, &mut children, count, &candidates)?
    };
    let lenses_remaining = fresh
        .iter()
        .map(|l| l.name.to_owned())
        .filter(|n| !lenses_used.contains(n))
        .collect();
    let applied = finish(children.edit, &children.shown_text, call.at);
    let body = ExpandOutput {
        session_id: d.session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
        node_id: children.anchor,
        nodes: applied.nodes,
        lenses_used,
        lenses_remaining,
        node_count: applied.node_count,
        budget_remaining: applied.remaining,
        analysis: AnalysisOut::from(&analysis),
    };
    call.done(Some(d.session_id.clone()), applied.facts, body)
}

/// How many children the call makes: as asked, else one per candidate, else min(3, budget).
/// Refuses 0 and more than the deliberation allows per call.
fn child_count(
    d: &Deliberation,
    asked: Option<u32>,
    candidates: &[String],
) -> Result<u32, Refusal> {
    let max = d.budgets.max_expansions_per_call;
    let count = match asked {
        Some(0) => {
            return Err(invalid(d, "count is 0", "ask for at least one child"));
        }
        Some(n) => n,
        None if !candidates.is_empty() => u32::try_from(candidates.len()).unwrap_or(u32::MAX),
        None => max.min(3),
    };
    if count > max {
        return Err(refuse(
            d,
            ErrorCode::BudgetExceeded,
            format!("{count} children asked for; this deliberation allows {max} per call"),
            format!(
                "ask for at most {max} (call again for more), or start a deliberation with a \
                 larger budgets.max_expansions_per_call"
            ),
        ));
    }
    Ok(count)
}

/// The lenses `anchor` has not had yet (no child of it carries their `lens:` tag), in order.
fn fresh_lenses(d: &Deliberation, anchor: &str) -> Vec<&'static Lens> {
    let used: HashSet<&str> = d
        .children(anchor)
        .iter()
        .filter_map(|c| d.node(c))
        .flat_map(|n| n.tags.iter())
        .filter_map(|t| t.strip_prefix("lens:"))
        .collect();
    lenses().iter().filter(|l| !used.contains(l.name)).collect()
}

/// The children one call plans under the expanded node, and what the response shows of them.
struct Children<'a> {
    /// The node expanded.
    anchor: String,
    edit: GraphEdit<'a>,
    /// Branch ids this call has taken, so no two children share one.
    taken: BTreeSet<String>,
    /// Each new child's text as the response shows it.
    shown_text: HashMap<String, String>,
}

impl Children<'_> {
    /// Plans one child of the anchor on a fresh branch of its own; `shown` is its text as the
    /// response shows it. Returns nothing: the edit keeps the child.
    fn add(
        &mut self,
        content: ScannedText,
        tags: Vec<String>,
        analysis: &AnalysisMetadata,
        shown: String,
    ) -> Result<(), Refusal> {
        let branch = fresh_branch(self.edit.d, &self.anchor, &mut self.taken);
        let id = self.edit.add_node(
            vec![self.anchor.clone()],
            content,
            branch,
            "expansion",
            tags,
            analysis.clone(),
        )?;
        self.shown_text.insert(id, shown);
        Ok(())
    }
}

/// The children the model wrote (as [`plan_expand`] asked): exactly `count`, none empty, each
/// scanned for prompt injection like caller text.
fn expand_by_model(
    call: &mut Call<'_>,
    children: &mut Children<'_>,
    count: u32,
) -> Result<AnalysisMetadata, Refusal> {
    let d = children.edit.d;
    let answer = call.model_answers().first().cloned();
    let written: ModelThoughts =
        model::parse_answer(d, answer.as_ref(), &format!("{count} thoughts"))?;
    if written.thoughts.len() != usize::try_from(count).unwrap_or(usize::MAX)
        || written.thoughts.iter().any(|t| t.trim().is_empty())
    {
        return Err(refuse(
            d,
            ErrorCode::ModelAnswerUnusable,
            format!(
                "the model wrote {} thought(s), some perhaps empty, where {count} were asked \
                 for",
                written.thoughts.len()
            ),
            "retry, or pass your own candidates",
        ));
    }
    let name = answer.as_ref().map(model::model_name).unwrap_or_default();
    let analysis = call.model_analysis(
        &d.user_mode,
        "expand.model_backed",
        &name,
        vec![children.anchor.clone()],
        &[
            "the children were written by the model named here from the goal and the \
             parent's text; nothing checked that they are true or sound",
            "model text is scanned for prompt injection like caller text",
        ],
    );
    for (i, text) in written.thoughts.iter().enumerate() {
        let field = format!("model.thoughts[{i}]");
        let content = call.model_text(&field, text);
        let tags = vec!["expansion".to_owned(), "model".to_owned()];
        children.add(content, tags, &analysis, shown(text, &field))?;
    }
    Ok(analysis)
}

/// Lens prompts quoting the anchor, one per fresh lens in order; refused when fewer lenses are
/// left than children asked for. Each lens applied is pushed to `lenses_used`.
fn expand_by_lenses(
    call: &mut Call<'_>,
    children: &mut Children<'_>,
    count: u32,
    fresh: &[&Lens],
    lenses_used: &mut Vec<String>,
) -> Result<AnalysisMetadata, Refusal> {
    let d = children.edit.d;
    let anchor = children.anchor.clone();
    let wanted = usize::try_from(count).unwrap_or(usize::MAX);
    if fresh.len() < wanted {
        return Err(refuse(
            d,
            ErrorCode::LensesExhausted,
            format!(
                "{count} lens expansions asked for; {anchor} has {} lens(es) left of {}",
                fresh.len(),
                LENSES.len()
            ),
            "pass your own candidates, ask for fewer, or apply a reasoning pattern or \
             algorithm template instead",
        ));
    }
    let analysis = call.analysis(
        &d.user_mode,
        "expand.lens_templates",
        "heuristic",
        vec![anchor.clone()],
        LENS_LIMITATIONS,
    );
    let parent = node_text(call, d, &anchor);
    for lens in fresh.iter().take(wanted) {
        let text = format!("{}\n\nParent ({anchor}): \"{parent}\"", lens.prompt);
        let content = derived(call, &text);
        let tags = vec!["expansion".to_owned(), format!("lens:{}", lens.name)];
        children.add(content, tags, &analysis, text)?;
        lenses_used.push(lens.name.to_owned());
    }
    Ok(analysis)
}

/// The caller's candidates, one child each (scanned); refused when `count` disagrees with
/// them or one is empty.
fn expand_by_candidates(
    call: &mut Call<'_>,
    children: &mut Children<'_>,
    count: u32,
    candidates: &[String],
) -> Result<AnalysisMetadata, Refusal> {
    let d = children.edit.d;
    if usize::try_from(count).ok() != Some(candidates.len()) {
        return Err(invalid(
            d,
            format!(
                "count is {count} but {} candidates were sent",
                candidates.len()
            ),
            "omit count when sending candidates (each candidate becomes one child)",
        ));
    }
    if let Some(i) = candidates.iter().position(|c| c.trim().is_empty()) {
        return Err(invalid(
            d,
            format!("candidates[{i}] is empty"),
            "drop empty candidates",
        ));
    }
    let analysis = call.analysis(
        &d.user_mode,
        "expand.caller_candidates",
        "caller",
        vec![children.anchor.clone()],
        &[
            "the children are the caller's texts; the server only scanned them for prompt \
               injection and gave each its own branch",
        ],
    );
    for (i, text) in candidates.iter().enumerate() {
        let field = format!("candidates[{i}]");
        let content = call.scanned(
            &field,
            &[PathStep::Key("candidates"), PathStep::Index(i)],
            text,
        );
        let tags = vec!["expansion".to_owned(), "candidate".to_owned()];
        children.add(content, tags, &analysis, shown(text, &field))?;
    }
    Ok(analysis)
}
