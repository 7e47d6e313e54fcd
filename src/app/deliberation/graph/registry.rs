//! The algorithm templates and reasoning patterns, and the tools that apply them
//! (apply_algorithm_template, apply_reasoning_pattern): fixed scaffolds of prompt nodes quoting
//! the node they hang under, linked by the edges each one names. Must not know: scores.

use std::collections::{BTreeSet, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    BudgetRemaining, EdgeOut, derived, edit_at_live_node, finish, fresh_branch, node_text,
};
use crate::app::ErrorCode;
use crate::app::Outcome;
use crate::app::call::{Call, Refusal};
use crate::app::deliberation::context::refuse;
use crate::app::deliberation::outputs::{AnalysisOut, NodeOut};
use crate::projections::Deliberation;

/// A registry whose entries a caller names: templates and patterns are looked up alike.
trait Registered: Sized + 'static {
    /// What an entry is, as a refusal says it ("an algorithm template").
    const KIND: &'static str;
    /// The refusal code for a name not in the registry.
    const UNKNOWN: ErrorCode;
    fn registry() -> &'static [Self];
    fn name(&self) -> &'static str;
}

/// The entry named `asked` (trimmed, in any case), or a refusal that lists the names.
fn lookup<T: Registered>(d: &Deliberation, asked: &str) -> Result<&'static T, Refusal> {
    let wanted = asked.trim().to_ascii_lowercase();
    T::registry()
        .iter()
        .find(|t| t.name() == wanted)
        .ok_or_else(|| {
            let names: Vec<&str> = T::registry().iter().map(T::name).collect();
            refuse(
                d,
                T::UNKNOWN,
                format!("\"{asked}\" is not {}", T::KIND),
                format!("use one of: {}", names.join(", ")),
            )
        })
}

// ---------------------------------------------------------------------------------------------
// apply_algorithm_template
// ---------------------------------------------------------------------------------------------

/// One step of an algorithm template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TemplateStep {
    pub title: &'static str,
    pub prompt: &'static str,
}

/// An edge between two steps of a template (0-based step indexes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TemplateEdge {
    pub from_step: usize,
    pub to_step: usize,
    pub edge_type: &'static str,
}

/// A reasoning algorithm as a scaffold: ordered steps (children of the anchor node, on one
/// new branch) and the edges that order them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct AlgorithmTemplate {
    pub name: &'static str,
    pub description: &'static str,
    pub steps: &'static [TemplateStep],
    pub edges: &'static [TemplateEdge],
}

const fn step(title: &'static str, prompt: &'static str) -> TemplateStep {
    TemplateStep { title, prompt }
}

const fn edge(from_step: usize, to_step: usize, edge_type: &'static str) -> TemplateEdge {
    TemplateEdge {
        from_step,
        to_step,
        edge_type,
    }
}

/// A sequence: each step precedes the next and depends on it.
macro_rules! chain_edges {
    ($($a:literal => $b:literal),* $(,)?) => {
        &[$(edge($a, $b, "temporally_precedes"), edge($b, $a, "depends_on")),*]
    };
}

/// The algorithm templates, in catalog order.
pub const TEMPLATES: &[AlgorithmTemplate] = &[
    AlgorithmTemplate {
        name: "divide_and_conquer",
        description: "Split the problem into independent parts, solve each, then combine.",
        steps: &[
            step(
                "Split",
                "Divide the problem into parts that can be solved independently.",
            ),
            step(
                "Solve parts",
                "Solve each part on its own, noting what it needs from the others.",
            ),
            step(
                "Combine",
                "Merge the part solutions and check the seams between them.",
            ),
        ],
        edges: chain_edges![0 => 1, 1 => 2],
    },
    AlgorithmTemplate {
        name: "hypothesis_test",
        description: "State a falsifiable hypothesis, derive a prediction, test it, decide.",
        steps: &[
            step("Hypothesis", "State a falsifiable hypothesis."),
            step(
                "Prediction",
                "Derive an observable prediction that would differ if the hypothesis were \
                 false.",
            ),
            step(
                "Test",
                "Design the test, or find the evidence, that checks the prediction.",
            ),
            step(
                "Verdict",
                "Compare the result with the prediction: keep, revise or drop the hypothesis.",
            ),
        ],
        edges: chain_edges![0 => 1, 1 => 2, 2 => 3],
    },
    AlgorithmTemplate {
        name: "pros_cons",
        description: "List the arguments for and against, then weigh them.",
        steps: &[
            step("Pros", "List the strongest arguments for."),
            step("Cons", "List the strongest arguments against."),
            step(
                "Weigh",
                "Weigh the pros against the cons; say which few decide it.",
            ),
        ],
        edges: &[
            edge(2, 0, "depends_on"),
            edge(2, 1, "depends_on"),
            edge(0, 2, "temporally_precedes"),
            edge(1, 2, "temporally_precedes"),
        ],
    },
    AlgorithmTemplate {
        name: "five_whys",
        description: "Ask why five times to walk from a symptom to a root cause.",
        steps: &[
            step("Why 1", "Why does the problem occur?"),
            step("Why 2", "Why does that happen?"),
            step("Why 3", "Why does that happen?"),
            step("Why 4", "Why does that happen?"),
            step("Why 5", "Why does that happen?"),
            step(
                "Root cause",
                "State the cause that, removed, removes the problem; check it against each \
                 why.",
            ),
        ],
        edges: chain_edges![0 => 1, 1 => 2, 2 => 3, 3 => 4, 4 => 5],
    },
    AlgorithmTemplate {
        name: "pre_mortem",
        description: "Imagine the plan failed; find why, the warning signs, and mitigations.",
        steps: &[
            step(
                "Imagine failure",
                "It is a year from now and the plan failed. Describe the failure.",
            ),
            step(
                "Causes",
                "List the causes of that failure, most likely first.",
            ),
            step(
                "Warning signs",
                "For each cause, name the earliest sign that it is happening.",
            ),
            step(
                "Mitigations",
                "Change the plan to block the top causes; say what each change costs.",
            ),
        ],
        edges: chain_edges![0 => 1, 1 => 2, 2 => 3],
    },
    AlgorithmTemplate {
        name: "decision_matrix",
        description: "Score options against weighted criteria and pick by weighted total.",
        steps: &[
            step("Options", "List the options, including doing nothing."),
            step("Criteria", "List the criteria and give each a weight."),
            step("Score", "Score each option on each criterion."),
            step(
                "Decide",
                "Pick by weighted total; flag close calls and criteria that swing the result.",
            ),
        ],
        edges: &[
            edge(2, 0, "depends_on"),
            edge(2, 1, "depends_on"),
            edge(3, 2, "depends_on"),
            edge(0, 2, "temporally_precedes"),
            edge(1, 2, "temporally_precedes"),
            edge(2, 3, "temporally_precedes"),
        ],
    },
    AlgorithmTemplate {
        name: "first_principles",
        description: "List the assumptions, keep only the fundamentals, rebuild from them.",
        steps: &[
            step("Assumptions", "List everything this currently assumes."),
            step(
                "Fundamentals",
                "Keep only what is known to be true; say how it is known.",
            ),
            step(
                "Rebuild",
                "Reason up from the fundamentals alone to a solution.",
            ),
        ],
        edges: chain_edges![0 => 1, 1 => 2],
    },
];

/// The template registry (for resources that list it).
pub(crate) fn templates() -> &'static [AlgorithmTemplate] {
    TEMPLATES
}

impl Registered for AlgorithmTemplate {
    const KIND: &'static str = "an algorithm template";
    const UNKNOWN: ErrorCode = ErrorCode::UnknownTemplate;
    fn registry() -> &'static [Self] {
        templates()
    }
    fn name(&self) -> &'static str {
        self.name
    }
}

/// Arguments of `apply_algorithm_template`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct TemplateArgs {
    /// divide_and_conquer, hypothesis_test, pros_cons, five_whys, pre_mortem,
    /// decision_matrix or first_principles.
    pub template: String,
    /// The node the steps hang under (default: the root).
    #[serde(default)]
    #[schemars(with = "String")]
    pub node_id: Option<String>,
    /// Deliberation handle (`session_id` of an earlier response); omit for your current one.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Response of `apply_algorithm_template`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TemplateOutput {
    pub session_id: String,
    pub deliberation_id: String,
    pub template: String,
    /// The node the steps hang under.
    pub node_id: String,
    /// The step nodes, in order, on one new branch.
    pub nodes: Vec<NodeOut>,
    pub edges_added: Vec<EdgeOut>,
    pub node_count: usize,
    pub budget_remaining: BudgetRemaining,
    pub analysis: AnalysisOut,
}

const TEMPLATE_USAGE: &str = "send {\"template\": \"pros_cons\", \"node_id\": \"node-1\"}";

pub(crate) fn decide_template(call: &mut Call<'_>) -> Outcome {
    let args: TemplateArgs = call.parse(TEMPLATE_USAGE)?;
    let d = call.open_deliberation(args.session_id.as_deref())?;
    let template = lookup::<AlgorithmTemplate>(d, &args.template)?;
    let anchor = args.node_id.unwrap_or_else(|| d.root_node_id.clone());
    let mut edit = edit_at_live_node(d, &anchor)?;
    let analysis = call.analysis(
        &d.user_mode,
        &format!("template.{}", template.name),
        "heuristic",
        vec![anchor.clone()],
        &[
            "the steps are a fixed scaffold quoting the anchor node; none of them is answered \
             (no model is configured)",
            "answer each step with add_thought_node under it",
        ],
    );
    let branch = fresh_branch(d, &anchor, &mut BTreeSet::new());
    let anchor_text = node_text(call, d, &anchor);
    let total = template.steps.len();
    let mut ids = Vec::with_capacity(total);
    let mut shown_text = HashMap::new();
    for (i, s) in template.steps.iter().enumerate() {
        let text = format!(
            "{} step {}/{total} — {}: {}\n\nFor ({anchor}): \"{anchor_text}\"",
            template.name,
            i + 1,
            s.title,
            s.prompt
        );
        let content = derived(call, &text);
        let tags = vec![
            "template".to_owned(),
            format!("template:{}", template.name),
            format!("step:{}", i + 1),
        ];
        let id = edit.add_node(
            vec![anchor.clone()],
            content,
            branch.clone(),
            "template",
            tags,
            analysis.clone(),
        )?;
        shown_text.insert(id.clone(), text);
        ids.push(id);
    }
    for e in template.edges {
        if let (Some(from), Some(to)) = (ids.get(e.from_step), ids.get(e.to_step)) {
            edit.add_edge(from, to, e.edge_type)?;
        }
    }
    let applied = finish(edit, &shown_text, call.at);
    let body = TemplateOutput {
        session_id: d.session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
        template: template.name.to_owned(),
        node_id: anchor,
        nodes: applied.nodes,
        edges_added: applied.edges,
        node_count: applied.node_count,
        budget_remaining: applied.remaining,
        analysis: AnalysisOut::from(&analysis),
    };
    call.done(Some(d.session_id.clone()), applied.facts, body)
}

// ---------------------------------------------------------------------------------------------
// apply_reasoning_pattern
// ---------------------------------------------------------------------------------------------

/// A reasoning pattern: a prompt node linked to its target by a fitting edge
/// (`new edge_type target`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ReasoningPattern {
    pub name: &'static str,
    pub description: &'static str,
    /// The edge from the pattern node to the node it is applied to.
    pub edge_type: &'static str,
    pub prompt: &'static str,
}

/// The pattern registry, in catalog order.
pub const PATTERNS: &[ReasoningPattern] = &[
    ReasoningPattern {
        name: "steelman",
        description: "Restate the position at its strongest before judging it.",
        edge_type: "supports",
        prompt: "Steelman: restate this at its strongest, as its best advocate would, \
                 adding the best evidence for it.",
    },
    ReasoningPattern {
        name: "red_team",
        description: "Attack the position as an adversary to find where it breaks.",
        edge_type: "conflicts",
        prompt: "Red team: attack this as a capable adversary would; find the inputs, \
                 conditions or actors that break it.",
    },
    ReasoningPattern {
        name: "devils_advocate",
        description: "Argue the opposite conclusion as well as it can be argued.",
        edge_type: "conflicts",
        prompt: "Devil's advocate: argue for the opposite conclusion as convincingly as \
                 possible.",
    },
    ReasoningPattern {
        name: "inversion",
        description: "Ask what would guarantee failure, then avoid it.",
        edge_type: "contextualizes",
        prompt: "Inversion: what would guarantee that this fails? List it, then check this \
                 against each item.",
    },
    ReasoningPattern {
        name: "premortem",
        description: "Assume it already failed and explain why.",
        edge_type: "contextualizes",
        prompt: "Premortem: assume this was adopted and failed; write the most plausible \
                 story of why.",
    },
    ReasoningPattern {
        name: "analogy",
        description: "Map a structurally similar, better-understood case onto this one.",
        edge_type: "analogous_to",
        prompt: "Analogy: name a better-understood case with the same structure; say what \
                 carries over and where the analogy breaks.",
    },
    ReasoningPattern {
        name: "base_rates",
        description: "Anchor on how often this kind of thing happens before the specifics.",
        edge_type: "requires_grounding",
        prompt: "Base rates: how often does this kind of outcome happen in the reference \
                 class? Cite the source of the rate before adjusting for specifics.",
    },
    ReasoningPattern {
        name: "second_order_effects",
        description: "Follow the consequences of the consequences.",
        edge_type: "depends_on",
        prompt: "Second-order effects: if this happens, what follows from its consequences, \
                 and who reacts to them?",
    },
    ReasoningPattern {
        name: "concrete_example",
        description: "Ground the idea in one specific worked instance.",
        edge_type: "exemplifies",
        prompt: "Concrete example: work through one specific instance of this with real \
                 numbers, names or steps.",
    },
    ReasoningPattern {
        name: "generalize",
        description: "State the general principle this is a case of.",
        edge_type: "subsumes",
        prompt: "Generalize: state the general principle this is one case of, and one other \
                 case it covers.",
    },
];

/// The pattern registry (for reasoning://patterns).
pub(crate) fn patterns() -> &'static [ReasoningPattern] {
    PATTERNS
}

impl Registered for ReasoningPattern {
    const KIND: &'static str = "a reasoning pattern";
    const UNKNOWN: ErrorCode = ErrorCode::UnknownPattern;
    fn registry() -> &'static [Self] {
        patterns()
    }
    fn name(&self) -> &'static str {
        self.name
    }
}

/// Arguments of `apply_reasoning_pattern`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct PatternArgs {
    /// steelman, red_team, devils_advocate, inversion, premortem, analogy, base_rates,
    /// second_order_effects, concrete_example or generalize (reasoning://patterns).
    pub pattern: String,
    /// The node to apply it to (default: the root).
    #[serde(default)]
    #[schemars(with = "String")]
    pub node_id: Option<String>,
    /// Deliberation handle (`session_id` of an earlier response); omit for your current one.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Response of `apply_reasoning_pattern`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PatternOutput {
    pub session_id: String,
    pub deliberation_id: String,
    pub pattern: String,
    /// The node the pattern was applied to.
    pub node_id: String,
    /// The prompt node, a child of the target on a new branch.
    pub node: NodeOut,
    pub edges_added: Vec<EdgeOut>,
    pub node_count: usize,
    pub budget_remaining: BudgetRemaining,
    pub analysis: AnalysisOut,
}

const PATTERN_USAGE: &str =
    "send {\"pattern\": \"red_team\", \"node_id\": \"node-2\"}; reasoning://patterns lists them";

pub(crate) fn decide_pattern(call: &mut Call<'_>) -> Outcome {
    let args: PatternArgs = call.parse(PATTERN_USAGE)?;
    let d = call.open_deliberation(args.session_id.as_deref())?;
    let pattern = lookup::<ReasoningPattern>(d, &args.pattern)?;
    let target = args.node_id.unwrap_or_else(|| d.root_node_id.clone());
    let mut edit = edit_at_live_node(d, &target)?;
    let analysis = call.analysis(
        &d.user_mode,
        &format!("pattern.{}", pattern.name),
        "heuristic",
        vec![target.clone()],
        &[
            "the node is the pattern's fixed prompt quoting the target; the pattern was not \
             carried out (no model is configured)",
            "answer it with add_thought_node under the pattern node",
        ],
    );
    let text = format!(
        "{}\n\nTarget ({target}): \"{}\"",
        pattern.prompt,
        node_text(call, d, &target)
    );
    let content = derived(call, &text);
    let branch = fresh_branch(d, &target, &mut BTreeSet::new());
    let tags = vec!["pattern".to_owned(), format!("pattern:{}", pattern.name)];
    let id = edit.add_node(
        vec![target.clone()],
        content,
        branch,
        "pattern",
        tags,
        analysis.clone(),
    )?;
    edit.add_edge(&id, &target, pattern.edge_type)?;
    let mut applied = finish(edit, &HashMap::from([(id, text)]), call.at);
    let node = applied.take_node(d)?;
    let body = PatternOutput {
        session_id: d.session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
        pattern: pattern.name.to_owned(),
        node_id: target,
        node,
        edges_added: applied.edges,
        node_count: applied.node_count,
        budget_remaining: applied.remaining,
        analysis: AnalysisOut::from(&analysis),
    };
    call.done(Some(d.session_id.clone()), applied.facts, body)
}
