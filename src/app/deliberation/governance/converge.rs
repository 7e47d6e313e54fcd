//! `converge_reasoning`: once checks 1–3 pass and the quality score meets the threshold, adds a
//! convergence node over the best-scored live leaf of each branch (up to 3) and marks the
//! deliberation converged.
//!
//! Must not know: what the chosen nodes mean; they are picked by score and branch.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::claims::quote;
use super::{Assessment, assess, empty_text, is_candidate, threshold_or_refuse};
use crate::app::ErrorCode;
use crate::app::Outcome;
use crate::app::call::{Call, PathStep, Refusal};
use crate::app::deliberation::context::refuse;
use crate::app::deliberation::graph_edit::GraphEdit;
use crate::app::deliberation::injection::shown;
use crate::app::deliberation::outputs::{BlockingGapOut, NodeOut};
use crate::app::deliberation::{CONSENSUS_ANSWER_TOOL, RUN_REASONING_CHECKPOINT_TOOL};
use crate::events::Fact;
use crate::events::deliberation::{BlockingGap, DeliberationStatusChanged, ScannedText};
use crate::projections::Deliberation;
use crate::projections::deliberation::Node;

/// Arguments of `converge_reasoning`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ConvergeArgs {
    /// The quality convergence needs, in [0, 1]; default by profile (quick 0.5, balanced 0.65,
    /// deep 0.75, paranoid 0.85).
    #[serde(default)]
    #[schemars(with = "f64", range(min = 0.0, max = 1.0))]
    pub quality_threshold: Option<f64>,
    /// Your synthesis of the chosen nodes; without it the convergence node lists them and
    /// quotes their content.
    #[serde(default)]
    #[schemars(with = "String")]
    #[schemars(extend("x-text" = true))]
    pub summary: Option<String>,
    /// Deliberation handle (`session_id` of an earlier response); omit for your current one.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Response of `converge_reasoning`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ConvergeOutput {
    /// The convergence node: a child of the chosen nodes, with `subsumes` edges to them.
    pub node: NodeOut,
    /// The chosen nodes: the best-scored live leaf of each branch, up to 3.
    pub subsumed_node_ids: Vec<String>,
    /// `converged`.
    pub status: String,
    pub quality_score: f64,
    pub quality_tier: String,
    pub threshold: f64,
    pub recommended_tools: Vec<String>,
    pub session_id: String,
    pub deliberation_id: String,
}

/// The nodes a convergence subsumes: live candidate leaves (no live candidate child), the best
/// of each branch (highest score; unscored last; ties to the earlier node), then the best three
/// of those in the same order.
fn convergence_sources(d: &Deliberation) -> Vec<String> {
    let live_candidate = |id: &str| {
        d.node(id)
            .is_some_and(|n| n.pruned.is_none() && is_candidate(&n.kind))
    };
    let leaves: Vec<(usize, &Node)> = d
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.pruned.is_none() && is_candidate(&n.kind))
        .filter(|(_, n)| !d.children(&n.node_id).iter().any(|c| live_candidate(c)))
        .collect();
    // Higher score first, scored before unscored, then the earlier node.
    let better = |a: &(usize, &Node), b: &(usize, &Node)| match (a.1.score, b.1.score) {
        (Some(x), Some(y)) => y.total_cmp(&x).then(a.0.cmp(&b.0)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.0.cmp(&b.0),
    };
    let mut best: BTreeMap<&str, (usize, &Node)> = BTreeMap::new();
    for leaf in leaves {
        let slot = best.entry(leaf.1.branch_id.as_str()).or_insert(leaf);
        if better(&leaf, slot).is_lt() {
            *slot = leaf;
        }
    }
    let mut chosen: Vec<_> = best.into_values().collect();
    chosen.sort_by(better);
    chosen
        .into_iter()
        .take(3)
        .map(|(_, n)| n.node_id.clone())
        .collect()
}

/// Decides `converge_reasoning`: refused while a critical gate fails or the score is below the
/// threshold; else one convergence node over the best-scored live leaf of each branch, which
/// subsumes them, and the deliberation marked converged.
pub(crate) fn decide_converge(call: &mut Call<'_>) -> Outcome {
    let args: ConvergeArgs =
        call.parse("send {\"quality_threshold\": 0.8, \"summary\": \"…\"} or nothing")?;
    let d = call.open_deliberation(args.session_id.as_deref())?;
    let state = call.app.deliberations();
    let threshold = threshold_or_refuse(d, args.quality_threshold)?;
    if args.summary.as_deref().is_some_and(|s| s.trim().is_empty()) {
        return Err(empty_text(d, "summary", "a synthesis, or omit summary"));
    }
    let a = assess(state, d, threshold);
    if !a.critical_gates_pass() || a.below_threshold() {
        return Err(blocked(d, &a));
    }
    let sources = convergence_sources(d);
    if sources.is_empty() {
        return Err(refuse(
            d,
            ErrorCode::NothingToConverge,
            "there is no live candidate node to converge on",
            "add thoughts first (add_thought_node, expand_thoughts), or pass an answer to \
             consensus_answer directly",
        ));
    }
    let Convergence {
        content,
        provider,
        method,
        shown_text,
    } = convergence_content(call, d, &sources, args.summary.as_deref());
    let analysis = call.analysis(
        &d.user_mode,
        method,
        provider,
        sources.clone(),
        &[
            "the chosen nodes are picked by score and branch, not by meaning",
            if provider == "caller" {
                "the summary is the caller's; nothing checks it against the chosen nodes"
            } else {
                "the content lists and quotes the chosen nodes; it is not a synthesis"
            },
        ],
    );
    let mut graph = GraphEdit::new(d);
    let node_id = graph.add_node(
        sources.clone(),
        content,
        "convergence".to_owned(),
        "convergence",
        vec!["convergence".to_owned()],
        analysis,
    )?;
    for source in &sources {
        graph.add_edge(&node_id, source, "subsumes")?;
    }
    let node = graph
        .planned()
        .last()
        .map(|n| NodeOut::planned(n, &shown_text, call.at));
    let Some(node) = node else {
        return Err(refuse(
            d,
            ErrorCode::InternalError,
            "the convergence node was not planned",
            "retry",
        ));
    };
    let mut facts = graph.into_facts();
    facts.push(Fact::DeliberationStatusChanged(DeliberationStatusChanged {
        session_id: d.session_id.clone(),
        status: "converged".to_owned(),
        node_id: Some(node_id),
        quality_score: Some(a.quality_score),
    }));
    let mut recommended_tools = Vec::new();
    if a.governed {
        recommended_tools.push(RUN_REASONING_CHECKPOINT_TOOL.to_owned());
    }
    recommended_tools.push(CONSENSUS_ANSWER_TOOL.to_owned());
    let body = ConvergeOutput {
        node,
        subsumed_node_ids: sources,
        status: "converged".to_owned(),
        quality_score: a.quality_score,
        quality_tier: a.quality_tier.to_owned(),
        threshold: a.threshold,
        recommended_tools,
        session_id: d.session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
    };
    call.done(Some(d.session_id.clone()), facts, body)
}

/// The refusal of a convergence the gates block: every blocker of checks 1–3 and the quality
/// gap, named in the message and listed in the details with the score and threshold.
fn blocked(d: &Deliberation, a: &Assessment) -> Refusal {
    let mut blockers: Vec<BlockingGap> = a
        .checks
        .iter()
        .take(3)
        .flat_map(|c| c.blockers.iter().cloned())
        .collect();
    blockers.extend(a.quality_gap());
    let named: Vec<String> = blockers
        .iter()
        .map(|b| format!("{} ({})", b.check, b.subject.as_deref().unwrap_or("score")))
        .collect();
    let mut details = Map::new();
    details.insert(
        "blockers".into(),
        serde_json::to_value(
            blockers
                .iter()
                .map(BlockingGapOut::from)
                .collect::<Vec<_>>(),
        )
        .unwrap_or(Value::Null),
    );
    details.insert("quality_score".into(), json!(a.quality_score));
    details.insert("threshold".into(), json!(a.threshold));
    let (rejection, session) = refuse(
        d,
        ErrorCode::ConvergenceBlocked,
        format!("convergence is blocked: {}", named.join(", ")),
        "clear the blockers first: verify_thoughts for claims and conflicts, \
         set_assumption_status for assumptions; run_reasoning_checkpoint or \
         evaluate_reasoning_quality shows what raises the score",
    );
    (rejection.with_details(details), session)
}

/// The convergence node's content, and what it shows.
struct Convergence {
    content: ScannedText,
    /// `caller` (the caller's summary) or `heuristic` (the listing of the sources).
    provider: &'static str,
    method: &'static str,
    /// The content as the response shows it.
    shown_text: String,
}

/// The convergence node's content: the caller's summary (scanned), else a derived listing of
/// each source with its score and its text quoted.
fn convergence_content(
    call: &mut Call<'_>,
    d: &Deliberation,
    sources: &[String],
    summary: Option<&str>,
) -> Convergence {
    let state = call.app.deliberations();
    match summary {
        Some(summary) => Convergence {
            content: call.scanned("summary", &[PathStep::Key("summary")], summary),
            provider: "caller",
            method: "converge.caller_summary",
            shown_text: shown(summary, "summary"),
        },
        None => {
            let mut text = format!(
                "Convergence of {} (the best-scored live leaf of each branch):",
                sources.join(", ")
            );
            for id in sources {
                let node = d.node(id);
                let score = node
                    .and_then(|n| n.score)
                    .map_or("unscored".to_owned(), |s| format!("score {s:.2}"));
                let content = node
                    .and_then(|n| state.text(&n.content))
                    .map_or("(content erased)".to_owned(), |c| {
                        format!("\"{}\"", quote(c))
                    });
                text.push_str(&format!("\n- {id} ({score}): {content}"));
            }
            let derived = call.derive_text(&text);
            Convergence {
                content: ScannedText {
                    text: derived,
                    original: None,
                    redactions: Vec::new(),
                },
                provider: "heuristic",
                method: "converge.best_leaf_per_branch",
                shown_text: text,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::GAP_QUALITY;
    use super::super::tests::{blocker_checks, start, thought};
    use crate::app::deliberation::testing::given;

    #[tokio::test]
    async fn convergence_is_blocked_below_the_threshold() {
        let g = given();
        let s = start(&g, "Test", "paranoid").await;
        for branch in ["a", "b", "c"] {
            thought(&g, &s, branch, "An option.").await;
        }
        // Governed with no claims: verification coverage 0, scoring 0 → 0.65 < 0.85.
        let blocked = g
            .refused(
                "converge_reasoning",
                json!({"session_id": s}),
                "convergence_blocked",
            )
            .await;
        assert_eq!(blocked["quality_score"], 0.65);
        assert_eq!(blocked["threshold"], 0.85);
        assert_eq!(blocker_checks(&blocked), [GAP_QUALITY]);
        g.refused(
            "converge_reasoning",
            json!({"quality_threshold": 1.5, "session_id": s}),
            "invalid_threshold",
        )
        .await;
        let ckpt = g
            .ok("run_reasoning_checkpoint", json!({"session_id": s}))
            .await;
        assert_eq!(ckpt["route_decision"]["decision"], "verify");
        assert_eq!(
            ckpt["route_decision"]["blocking_gaps"],
            json!([GAP_QUALITY])
        );
        let conv = g
            .ok(
                "converge_reasoning",
                json!({"quality_threshold": 0.6, "summary": "All three options are viable.",
                       "session_id": s}),
            )
            .await;
        assert_eq!(conv["node"]["content"], "All three options are viable.");
        assert_eq!(conv["node"]["provenance"], "caller");
    }
}
