//! `analyze_systematically` and `decompose_problem`: rule-made structure around a problem (a
//! framework and its steps; a sub-problem tree and its order). Neither writes a conclusion.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::decompose::{self, Dependency, SubProblem};
use super::frameworks::{self, TABLE};
use super::{Envelope, ProblemContext, Provenance, answer, fail, non_empty, parse};
use crate::app::call::Call;
use crate::app::{ErrorCode, Outcome};

const SYSTEMATIC_USAGE: &str = "pass {\"problem\": \"...\"} and optionally preferredFramework (one of \
     scientific-method, design-thinking, systems-thinking, critical-thinking, \
     creative-problem-solving, root-cause-analysis, first-principles, scenario-planning) and \
     context {background, constraints, goals}";

const DECOMPOSE_USAGE: &str =
    "pass {\"problem\": \"...\"} and optionally maxDepth (1-5, default 3) and context";

/// Arguments of `analyze_systematically` (the seed's).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnalyzeSystematicallyArgs {
    /// Problem to analyze.
    #[schemars(extend("x-text" = true))]
    pub problem: String,
    /// Overrides the automatic choice.
    #[serde(default)]
    #[schemars(extend("enum" = [
        "scientific-method", "design-thinking", "systems-thinking", "critical-thinking",
        "creative-problem-solving", "root-cause-analysis", "first-principles", "scenario-planning"
    ]))]
    pub preferred_framework: Option<String>,
    #[serde(default)]
    pub context: Option<ProblemContext>,
}

/// A framework's id, name and description.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FrameworkRef {
    pub id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// How the framework was chosen.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelectionData {
    pub confidence: f64,
    pub reason: String,
    pub is_hybrid: bool,
    /// The cue words of the rule table the problem matched.
    pub matched_cues: Vec<String>,
}

/// The framework applied: its steps; conclusion and insights need a model (null/empty here).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FrameworkResult {
    pub conclusion: Option<String>,
    pub steps: Vec<String>,
    pub insights: Vec<String>,
    pub confidence: Option<f64>,
}

/// A framework that could also fit.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Alternative {
    pub framework: FrameworkRef,
    pub reason: String,
}

/// `analyze_systematically`'s data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SystematicData {
    pub framework: FrameworkRef,
    pub selection: SelectionData,
    pub result: FrameworkResult,
    pub alternatives: Vec<Alternative>,
    pub provenance: Provenance,
}

pub type AnalyzeSystematicallyOutput = Envelope<SystematicData>;

fn context_text(context: Option<&ProblemContext>) -> String {
    let Some(c) = context else {
        return String::new();
    };
    let mut parts = vec![c.background.clone().unwrap_or_default()];
    parts.extend(c.constraints.clone().unwrap_or_default());
    parts.extend(c.goals.clone().unwrap_or_default());
    parts.join(" ")
}

pub(super) fn decide_systematic(call: &mut Call<'_>) -> Outcome {
    let args: AnalyzeSystematicallyArgs = parse(call.args, SYSTEMATIC_USAGE)?;
    non_empty("problem", &args.problem, SYSTEMATIC_USAGE)?;
    let text = format!("{} {}", args.problem, context_text(args.context.as_ref()));
    let auto = frameworks::select(&text);
    let (framework, confidence, reason, hybrid) = match args.preferred_framework.as_deref() {
        Some(id) => {
            let Some(f) = frameworks::by_id(id) else {
                return Err(fail(
                    ErrorCode::InvalidArguments,
                    // The caller's value is not echoed: a refusal's message is stored in
                    // clear.
                    "Unknown framework",
                    SYSTEMATIC_USAGE,
                ));
            };
            (
                f,
                1.0,
                "Preferred framework requested by the caller".to_owned(),
                false,
            )
        }
        None if auto.top == 0 => (
            auto.framework,
            auto.confidence,
            "No cue of the rule table matched; critical thinking is the default".to_owned(),
            false,
        ),
        None => (
            auto.framework,
            auto.confidence,
            format!(
                "Problem characteristics match the {} pattern ({})",
                auto.framework.best_for.to_lowercase(),
                auto.cues.join(", ")
            ),
            auto.hybrid,
        ),
    };
    let alternatives: Vec<Alternative> = auto
        .runners_up
        .iter()
        .map(|(f, _)| *f)
        .chain(std::iter::once(&TABLE[3]))
        .filter(|f| f.id != framework.id)
        .take(2)
        .map(|f| Alternative {
            framework: FrameworkRef {
                id: f.id.to_owned(),
                name: f.name.to_owned(),
                description: None,
            },
            reason: format!("Suited to {}", f.best_for.to_lowercase()),
        })
        .collect();
    let data = SystematicData {
        framework: FrameworkRef {
            id: framework.id.to_owned(),
            name: framework.name.to_owned(),
            description: Some(framework.description.to_owned()),
        },
        selection: SelectionData {
            confidence,
            reason,
            is_hybrid: hybrid,
            matched_cues: auto.cues.iter().map(|c| (*c).to_owned()).collect(),
        },
        result: FrameworkResult {
            conclusion: None,
            steps: framework.steps.iter().map(|s| (*s).to_owned()).collect(),
            insights: Vec::new(),
            confidence: None,
        },
        alternatives,
        provenance: Provenance {
            rules: frameworks::RULES.to_owned(),
            model: None,
            limitations: vec![
                "The framework is chosen by cue words (docs/cognition.md), not by understanding \
                 the problem"
                    .to_owned(),
                "conclusion and insights are null: only a model or you can write them; the \
                 steps are the framework's scaffold"
                    .to_owned(),
            ],
        },
    };
    let result = json!({
        "framework": framework.id,
        "confidence": confidence,
        "isHybrid": hybrid,
        "alternatives": data.alternatives.iter().map(|a| a.framework.id.clone()).collect::<Vec<_>>(),
    });
    answer(
        call,
        (
            super::ANALYZE_SYSTEMATICALLY_TOOL,
            frameworks::RULES,
            None,
            result,
            Vec::new(),
        ),
        data,
        &["frameworkSelector"],
    )
}

/// Arguments of `decompose_problem` (the seed's).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecomposeProblemArgs {
    /// Problem to decompose.
    #[schemars(extend("x-text" = true))]
    pub problem: String,
    /// 1–5 (default 3).
    #[serde(default)]
    #[schemars(range(min = 1, max = 5))]
    pub max_depth: Option<f64>,
    #[serde(default)]
    pub context: Option<ProblemContext>,
}

/// `decompose_problem`'s data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecomposeData {
    pub problem: String,
    pub sub_problems: Vec<SubProblem>,
    pub dependencies: Vec<Dependency>,
    pub execution_order: Vec<String>,
    pub total_sub_problems: usize,
    pub max_depth: u32,
    pub provenance: Provenance,
}

pub type DecomposeProblemOutput = Envelope<DecomposeData>;

pub(super) fn decide_decompose(call: &mut Call<'_>) -> Outcome {
    let args: DecomposeProblemArgs = parse(call.args, DECOMPOSE_USAGE)?;
    non_empty("problem", &args.problem, DECOMPOSE_USAGE)?;
    let depth = match args.max_depth {
        None => 3,
        Some(d) if d.fract() == 0.0 && (1.0..=5.0).contains(&d) => {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked 1..=5
            let d = d as u32;
            d
        }
        Some(d) => {
            return Err(fail(
                ErrorCode::InvalidArguments,
                format!("maxDepth {d} is out of range"),
                "pass maxDepth as a whole number from 1 to 5",
            ));
        }
    };
    let tree = decompose::decompose(&args.problem, depth);
    let Some(order) = tree.order.clone() else {
        // The rules build a tree with forward sibling edges only; a cycle would be a bug.
        return Err(fail(
            ErrorCode::InvalidArguments,
            "the dependencies form a cycle",
            "report this problem text: the decomposition rules should never make a cycle",
        ));
    };
    let texts = tree
        .nodes
        .iter()
        .skip(1)
        .map(|n| call.derive_text(&n.description))
        .collect();
    let result = json!({
        "subProblems": tree.nodes.iter().map(|n| json!({"id": n.id, "depth": n.depth, "parent": n.parent})).collect::<Vec<_>>(),
        "dependencies": tree.dependencies,
        "executionOrder": order,
        "splitIntoParts": tree.split_into_parts,
    });
    let data = DecomposeData {
        problem: args.problem.clone(),
        total_sub_problems: tree.nodes.len(),
        sub_problems: tree.nodes,
        dependencies: tree.dependencies,
        execution_order: order,
        max_depth: depth,
        provenance: Provenance {
            rules: decompose::RULES.to_owned(),
            model: None,
            limitations: vec![
                "Sub-problems below the problem's own parts come from a fixed phase template \
                 (docs/cognition.md), not from understanding the problem"
                    .to_owned(),
            ],
        },
    };
    answer(
        call,
        (
            super::DECOMPOSE_PROBLEM_TOOL,
            decompose::RULES,
            None,
            result,
            texts,
        ),
        data,
        &["problemDecomposer"],
    )
}
