//! Facts of the cognition tools (ThoughtMCP's `think`, `analyze_systematically`,
//! `think_parallel`, `decompose_problem`, `assess_confidence`, `detect_bias`, `detect_emotion`,
//! `analyze_reasoning`): one `CognitionRecorded` per call.
//!
//! Pure data. What the caller wrote is the recorded arguments' commitment; texts the decision
//! derived from it (a bias's evidence span, a sub-problem, a model's conclusion) are
//! [`TextRef`]s in `texts`; numbers, labels and ids are inline in `result`, never caller text.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::TextRef;

/// One cognition call's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CognitionRecorded {
    /// The tool that was called.
    pub tool: String,
    /// The rule set and version that decided it (docs/cognition.md).
    pub rules: String,
    /// The model that answered, as the provider reported it; absent when no model was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The outcome's numbers, labels and ids (no free text).
    pub result: Value,
    /// Texts the decision derived or the model wrote, in the order the answer shows them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub texts: Vec<TextRef>,
}
