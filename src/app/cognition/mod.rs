//! The cognition family: ThoughtMCP's reasoning and metacognition tools (`think`,
//! `analyze_systematically`, `think_parallel`, `decompose_problem`, `assess_confidence`,
//! `detect_bias`, `detect_emotion`, `analyze_reasoning`) with the seed's parameters, envelope
//! (`success`, `data`, `metadata`) and data fields. Facts: `events::cognition`; fold:
//! `projections::cognition`.
//!
//! What a rule can do is done by a documented rule set ([`frameworks`], [`decompose`],
//! [`bias`], [`emotion`], [`features`]), named with its version in every answer. What only a
//! model can write (a conclusion, an insight) comes from the configured model
//! ([`think`]); without one it is null and the answer says why — never template text posing
//! as reasoning. Every call acts on the caller's current session, so replay re-executes it.
//!
//! Owns: the eight tools' arguments, answers and rules. Must not know any other family.

mod appraisal;
mod argues;
pub mod argument;
mod argument_words;
pub mod bias;
pub mod decompose;
pub mod emotion;
pub mod examples;
mod fallacies;
pub mod features;
pub mod features2;
pub mod frameworks;
mod judgement;
mod metacognition;
pub mod reader;
mod reasoning;
mod think;

#[cfg(test)]
mod argument_evaluation;
#[cfg(test)]
mod evaluation;
#[cfg(test)]
mod reader_training;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::call::model::ModelTool;
use super::call::{ArgsShape, Call, Decide, Refusal, ToolSpec};
use super::{ErrorCode, Outcome, Rejection};
use crate::events::Fact;
use crate::events::TextRef;
use crate::events::cognition::CognitionRecorded;

pub use metacognition::{
    AnalyzeReasoningArgs, AnalyzeReasoningOutput, AssessConfidenceArgs, AssessConfidenceOutput,
    DetectBiasArgs, DetectBiasOutput, DetectEmotionArgs, DetectEmotionOutput,
};
pub use reasoning::{
    AnalyzeSystematicallyArgs, AnalyzeSystematicallyOutput, DecomposeProblemArgs,
    DecomposeProblemOutput,
};
pub use think::{ThinkArgs, ThinkOutput, ThinkParallelArgs, ThinkParallelOutput};

/// The name of the `think` tool.
pub const THINK_TOOL: &str = "think";
/// The name of the `analyze_systematically` tool.
pub const ANALYZE_SYSTEMATICALLY_TOOL: &str = "analyze_systematically";
/// The name of the `think_parallel` tool.
pub const THINK_PARALLEL_TOOL: &str = "think_parallel";
/// The name of the `decompose_problem` tool.
pub const DECOMPOSE_PROBLEM_TOOL: &str = "decompose_problem";
/// The name of the `assess_confidence` tool.
pub const ASSESS_CONFIDENCE_TOOL: &str = "assess_confidence";
/// The name of the `detect_bias` tool.
pub const DETECT_BIAS_TOOL: &str = "detect_bias";
/// The name of the `detect_emotion` tool.
pub const DETECT_EMOTION_TOOL: &str = "detect_emotion";
/// The name of the `analyze_reasoning` tool.
pub const ANALYZE_REASONING_TOOL: &str = "analyze_reasoning";

/// The tools of the `cognition` toolset.
pub(crate) const SPECS: &[ToolSpec] = &[
    ToolSpec {
        name: THINK_TOOL,
        args: ArgsShape::of::<crate::app::cognition::ThinkArgs>,
        decide: Decide::WithModel(ModelTool {
            plan: think::plan_think,
            decide: think::decide_think,
        }),
    },
    ToolSpec {
        name: ANALYZE_SYSTEMATICALLY_TOOL,
        args: ArgsShape::of::<crate::app::cognition::AnalyzeSystematicallyArgs>,
        decide: Decide::InContext(reasoning::decide_systematic),
    },
    ToolSpec {
        name: THINK_PARALLEL_TOOL,
        args: ArgsShape::of::<crate::app::cognition::ThinkParallelArgs>,
        decide: Decide::WithModel(ModelTool {
            plan: think::plan_parallel,
            decide: think::decide_parallel,
        }),
    },
    ToolSpec {
        name: DECOMPOSE_PROBLEM_TOOL,
        args: ArgsShape::of::<crate::app::cognition::DecomposeProblemArgs>,
        decide: Decide::InContext(reasoning::decide_decompose),
    },
    ToolSpec {
        name: ASSESS_CONFIDENCE_TOOL,
        args: ArgsShape::of::<crate::app::cognition::AssessConfidenceArgs>,
        decide: Decide::InContext(metacognition::decide_confidence),
    },
    ToolSpec {
        name: DETECT_BIAS_TOOL,
        args: ArgsShape::of::<crate::app::cognition::DetectBiasArgs>,
        decide: Decide::WithModel(ModelTool {
            plan: judgement::plan_bias,
            decide: metacognition::decide_bias,
        }),
    },
    ToolSpec {
        name: DETECT_EMOTION_TOOL,
        args: ArgsShape::of::<crate::app::cognition::DetectEmotionArgs>,
        decide: Decide::WithModel(ModelTool {
            plan: judgement::plan_emotion,
            decide: metacognition::decide_emotion,
        }),
    },
    ToolSpec {
        name: ANALYZE_REASONING_TOOL,
        args: ArgsShape::of::<crate::app::cognition::AnalyzeReasoningArgs>,
        decide: Decide::WithModel(ModelTool {
            plan: judgement::plan_analysis,
            decide: metacognition::decide_analysis,
        }),
    },
];

/// The seed's context object of the reasoning tools.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ProblemContext {
    #[serde(default)]
    #[schemars(extend("x-text" = true))]
    pub background: Option<String>,
    #[serde(default)]
    #[schemars(extend("x-text" = true))]
    pub constraints: Option<Vec<String>>,
    #[serde(default)]
    #[schemars(extend("x-text" = true))]
    pub goals: Option<Vec<String>>,
}

/// The seed's response envelope, for the catalog's output schemas.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Envelope<T> {
    pub success: bool,
    pub data: T,
    pub metadata: Metadata,
}

/// The seed's `metadata`, with the session the call was recorded in.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    pub timestamp: String,
    /// Milliseconds from the call's arrival to its answer (measured by the server).
    pub processing_time: Option<u64>,
    pub components_used: Vec<String>,
    /// The session the call was recorded in (replay it with `replay_reasoning_session`).
    pub session_id: String,
}

/// Where a rule-made answer comes from and what it cannot do.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Provenance {
    /// The rule set and version, or the model, that made each part.
    pub rules: String,
    /// The model that wrote the model-made parts; null when none was asked.
    pub model: Option<String>,
    /// What this answer cannot tell.
    pub limitations: Vec<String>,
}

/// A refusal in the seed's shape: `success: false`, its `error`, a suggestion.
pub(crate) fn fail(code: ErrorCode, error: impl Into<String>, suggestion: &str) -> Refusal {
    let mut details = Map::new();
    details.insert("success".into(), json!(false));
    (
        Rejection::new(code, error, suggestion).with_details(details),
        None,
    )
}

/// Parses a tool's arguments: a missing field is the seed's "Missing required parameter".
pub(crate) fn parse<T: DeserializeOwned>(args: &Value, suggestion: &str) -> Result<T, Refusal> {
    let args = if args.is_null() {
        json!({})
    } else {
        args.clone()
    };
    serde_json::from_value(args).map_err(|e| {
        let message = e.to_string();
        match message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next())
        {
            Some(field) => fail(
                ErrorCode::MissingParameter,
                format!("Missing required parameter: {field}"),
                suggestion,
            ),
            None => fail(
                ErrorCode::InvalidArguments,
                format!("Invalid arguments: {message}"),
                suggestion,
            ),
        }
    })
}

/// A required text that must not be blank.
pub(crate) fn non_empty(name: &str, value: &str, suggestion: &str) -> Result<(), Refusal> {
    if value.trim().is_empty() {
        return Err(fail(
            ErrorCode::InvalidArguments,
            format!("{name} cannot be empty"),
            suggestion,
        ));
    }
    Ok(())
}

/// Records the call's fact in the caller's current session and answers in the seed's envelope.
pub(crate) fn answer<T: Serialize>(
    call: &mut Call<'_>,
    fact: (&str, &str, Option<String>, Value, Vec<TextRef>),
    data: T,
    components: &[&str],
) -> Outcome {
    let (tool, rules, model, result, texts) = fact;
    let facts = vec![Fact::CognitionRecorded(CognitionRecorded {
        tool: tool.to_owned(),
        rules: rules.to_owned(),
        model,
        result: as_stored(result),
        texts,
    })];
    let mut body = call.seed_envelope(data, components);
    body["metadata"]["sessionId"] = json!(call.command.connection_session.to_string());
    call.done_in_current_session(facts, body)
}

/// `value` as it reads back from the ledger: RFC 8785 writes a whole float (`1.0`) as `1`,
/// which reads back as an integer, so whole floats are made integers before they are recorded
/// (otherwise a re-execution would see `1.0` where the log holds `1`).
fn as_stored(value: Value) -> Value {
    /// 2^53: integers beyond it are not exact in a float (and JCS refuses them anyway).
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match value {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            #[allow(clippy::cast_possible_truncation)] // whole and within ±2^53: exact
            Some(x) if x.fract() == 0.0 && x.abs() < EXACT => Value::from(x as i64),
            _ => Value::Number(n),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(as_stored).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, as_stored(v))).collect())
        }
        other => other,
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::as_stored;

    #[test]
    fn whole_floats_are_recorded_as_the_integers_they_read_back_as() {
        let v = as_stored(json!({"a": 1.0, "b": [0.5, -0.0, 2.0], "c": "1.0", "d": 3}));
        assert_eq!(v, json!({"a": 1, "b": [0.5, 0, 2], "c": "1.0", "d": 3}));
        assert!(v["a"].is_i64() && v["b"][2].is_i64());
        let text = serde_json::to_string(&v).unwrap();
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
    }
}
