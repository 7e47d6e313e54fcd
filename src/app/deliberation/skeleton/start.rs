//! `start_skeleton_of_thought`: outline a node's answer (default: the goal) as ordered skeleton
//! points, the caller's or an outline template's, and report the source's suitability.
//!
//! Owns: the start arguments, their checks and the response. Must not know: MCP, storage.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::scaffold::Scaffold;
use super::{DEFAULT_SCAFFOLD_POINTS, MAX_POINTS, STYLES, SkeletonPlan, plan_skeleton};
use crate::app::ErrorCode;
use crate::app::call::{Call, Refusal};
use crate::app::deliberation::context::refuse;
use crate::app::deliberation::outputs::{AnalysisOut, NodeOut};
use crate::app::deliberation::{RUN_REASONING_CHECKPOINT_TOOL, RUN_SKELETON_ELABORATION_TOOL};
use crate::app::{Outcome, Rejection, lenient};
use crate::events::Fact;
use crate::events::deliberation::Suitability;

/// Arguments of `start_skeleton_of_thought`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct StartSkeletonArgs {
    /// The node whose answer to outline (default: the root, the goal).
    #[serde(default)]
    #[schemars(with = "String")]
    pub source_node_id: Option<String>,
    /// Your outline, in order: short points (preferred). Without it the server adds outline
    /// template points (a scaffold, not content).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    #[schemars(extend("x-text" = true))]
    pub points: Option<Vec<String>>,
    /// bullet, numbered (default) or sections: how scaffold points and the merge are written.
    #[serde(default)]
    #[schemars(with = "String")]
    pub style: Option<String>,
    /// At most this many points, 1 to 12 (default 5 for a template outline, 12 for yours).
    #[serde(default, deserialize_with = "lenient::u32_optional")]
    #[schemars(with = "u32", range(min = 1, max = 12))]
    pub max_points: Option<u32>,
    /// The session whose deliberation to use (default: your current session).
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// How well the source suits skeleton-of-thought.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SuitabilityOut {
    pub suitable: bool,
    /// Heuristic cue score in [0, 1]; suitable at 0.5 or more.
    pub score: f64,
    /// The cues found (labels from the server's lists).
    pub reasons: Vec<String>,
}

impl From<&Suitability> for SuitabilityOut {
    fn from(s: &Suitability) -> Self {
        Self {
            suitable: s.suitable,
            score: s.score,
            reasons: s.reasons.clone(),
        }
    }
}

/// Response of `start_skeleton_of_thought`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StartSkeletonOutput {
    pub session_id: String,
    pub deliberation_id: String,
    pub phase_id: String,
    /// `skeleton`.
    pub state: String,
    pub source_node_id: String,
    pub style: String,
    pub suitability: SuitabilityOut,
    /// The MCP prompt that explains the phase.
    pub prompt_pack: String,
    /// The skeleton nodes, in outline order.
    pub skeleton_nodes: Vec<NodeOut>,
    pub safety_notes: Vec<String>,
    pub next_tools: Vec<String>,
    pub analysis: AnalysisOut,
}

fn invalid(message: impl Into<String>, suggestion: &str) -> Refusal {
    (
        Rejection::new(ErrorCode::InvalidArguments, message, suggestion),
        None,
    )
}

/// Decides `start_skeleton_of_thought`.
pub(crate) fn decide_start_skeleton(call: &mut Call<'_>) -> Outcome {
    let args: StartSkeletonArgs = call.parse(
        "start_skeleton_of_thought takes {source_node_id?: string, points?: [string], style?: \
         bullet|numbered|sections, max_points?: 1..12, session_id?: string}",
    )?;
    let d = call.open_deliberation(args.session_id.as_deref())?;
    let style = args
        .style
        .as_deref()
        .unwrap_or("numbered")
        .trim()
        .to_ascii_lowercase();
    if !STYLES.contains(&style.as_str()) {
        return Err(refuse(
            d,
            ErrorCode::InvalidStyle,
            format!("\"{style}\" is not a skeleton style"),
            "use bullet, numbered or sections",
        ));
    }
    let points = args.points.unwrap_or_default();
    if let Some(i) = points.iter().position(|p| p.trim().is_empty()) {
        return Err(invalid(
            format!("points[{i}] is empty"),
            "give each point a few words, or omit points for a template outline",
        ));
    }
    let default_max = if points.is_empty() {
        DEFAULT_SCAFFOLD_POINTS
    } else {
        MAX_POINTS
    };
    let max_points = args.max_points.unwrap_or(default_max);
    if max_points == 0 || max_points > MAX_POINTS {
        return Err(refuse(
            d,
            ErrorCode::InvalidMaxPoints,
            format!("max_points is {max_points}; it must be between 1 and {MAX_POINTS}"),
            format!(
                "pass 1 to {MAX_POINTS}; past a dozen points an outline stops being a skeleton"
            ),
        ));
    }
    if points.len() > usize::try_from(max_points).unwrap_or(usize::MAX) {
        return Err(refuse(
            d,
            ErrorCode::TooManyPoints,
            format!("{} points; max_points is {max_points}", points.len()),
            format!("merge related points, or raise max_points (at most {MAX_POINTS})"),
        ));
    }
    let source_node_id = args
        .source_node_id
        .clone()
        .unwrap_or_else(|| d.root_node_id.clone());
    let mut s = Scaffold::new(d);
    s.edit.require_node(&source_node_id, "source_node_id")?;
    let source_text = d
        .node(&source_node_id)
        .and_then(|n| call.app.deliberations().text(&n.content))
        .unwrap_or_default()
        .to_owned();
    let phase = plan_skeleton(
        call,
        &mut s,
        &SkeletonPlan {
            source_node_id: &source_node_id,
            source_text: &source_text,
            points: &points,
            style: &style,
            max_points,
        },
    )?;
    let mut notes = Vec::new();
    if !phase.suitability.suitable {
        notes.push(format!(
            "low skeleton suitability ({:.2}): the source reads as sequential reasoning; the \
             phase was started anyway — consider Quick (run_thinking_mode) or Map",
            phase.suitability.score
        ));
    }
    if points.is_empty() {
        notes.push(
            "the points are outline-template scaffold (sot_heuristic_scaffold), not content: \
             replace or elaborate them with your own reasoning"
                .to_owned(),
        );
    }
    let body = StartSkeletonOutput {
        session_id: d.session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
        phase_id: phase.phase_id.clone(),
        state: "skeleton".to_owned(),
        source_node_id,
        style,
        suitability: SuitabilityOut::from(&phase.suitability),
        prompt_pack: phase.prompt_pack.clone(),
        skeleton_nodes: s.nodes_out(call.at),
        safety_notes: notes,
        next_tools: vec![
            RUN_SKELETON_ELABORATION_TOOL.to_owned(),
            RUN_REASONING_CHECKPOINT_TOOL.to_owned(),
        ],
        analysis: AnalysisOut::from(&phase.analysis),
    };
    let mut facts = s.into_facts();
    facts.push(Fact::SkeletonPhaseStarted(phase));
    call.done(Some(d.session_id.clone()), facts, body)
}
