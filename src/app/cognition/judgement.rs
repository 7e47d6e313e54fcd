//! A model's judgement beside the rules (`detect_emotion`, `detect_bias`, `analyze_reasoning`):
//! when a provider is configured, the tool asks the model once — which of the eleven emotions
//! and which valence sign, which of the eight bias types, or which of the six fallacies — with
//! the answer constrained to those labels by a
//! JSON schema, and shows the answer as `modelJudgement`, labelled with the model, beside the
//! rules' own reading, which it never changes. Without a provider nothing is asked and the
//! answer is the rules' alone; a configured provider that fails refuses the call
//! (`model_call_failed`), as for `think`.
//!
//! Only labels are taken from the model's answer (an answer that is not the JSON asked for, or
//! names a label outside the lists, gives `status: "unreadable"`), so the judgement is
//! recorded in clear and no model text reaches the answer.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::bias::BIAS_TYPES;
use super::emotion::EMOTIONS;
use super::metacognition::{
    ANALYSIS_USAGE, AnalyzeReasoningArgs, BIAS_USAGE, DetectBiasArgs, DetectEmotionArgs,
    EMOTION_USAGE,
};
use super::think::{model_failed, model_of, no_model};
use super::{non_empty, parse};
use crate::app::call::model::ModelStep;
use crate::app::call::{Call, Refusal};
use crate::app::{App, Command};
use crate::model::{ChatOutcome, ChatRequest, Message, ResponseFormat};

/// The fallacies a model may name (the labels of `argument::Fallacy`).
pub const FALLACIES: [&str; 6] = [
    "circular",
    "hasty_generalisation",
    "false_dilemma",
    "appeal_to_authority",
    "non_sequitur",
    "bandwagon",
];

/// The valence signs a model may answer.
const SIGNS: [&str; 3] = ["positive", "negative", "neutral"];

/// What the model said of a text, beside the rules.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelJudgement {
    /// The model that answered.
    pub model: String,
    /// `answered`, or `unreadable` (the answer was not the JSON asked for; nothing is taken).
    pub status: String,
    /// detect_emotion: the emotion the model names (one of the eleven, or `none`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emotion: Option<String>,
    /// detect_emotion: `positive`, `negative` or `neutral`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valence: Option<String>,
    /// detect_bias: the bias types the model names (of the eight), possibly none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub biases: Option<Vec<String>>,
    /// analyze_reasoning: the fallacies the model names (of the six), possibly none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallacies: Option<Vec<String>>,
}

impl ModelJudgement {
    /// The judgement as the event records it: labels only.
    pub fn recorded(&self) -> Value {
        json!({
            "status": self.status,
            "emotion": self.emotion,
            "valence": self.valence,
            "biases": self.biases,
            "fallacies": self.fallacies,
        })
    }
}

/// The limitation every answer with a judgement states.
pub fn limitation(judgement: &ModelJudgement) -> String {
    format!(
        "modelJudgement is {}'s answer, asked once beside the rules and constrained to their \
         labels; it is not a measurement and the rules' reading does not use it",
        judgement.model
    )
}

fn request(system: &str, text: &str, name: &str, schema: Value) -> ChatRequest {
    let mut request = ChatRequest::new(vec![Message::system(system), Message::user(text)]);
    request.temperature = Some(0.0);
    request.max_tokens = Some(48);
    request.response_format = Some(ResponseFormat::json_schema(name, schema));
    request
}

fn emotion_request(text: &str) -> ChatRequest {
    let mut emotions: Vec<&str> = EMOTIONS.to_vec();
    emotions.push("none");
    request(
        &format!(
            "Name the emotion the writer of the text feels most, one of: {}; and whether the \
             text is positive, negative or neutral. Answer in JSON.",
            emotions.join(", ")
        ),
        text,
        "emotion",
        json!({
            "type": "object",
            "properties": {
                "emotion": {"type": "string", "enum": emotions},
                "valence": {"type": "string", "enum": SIGNS},
            },
            "required": ["emotion", "valence"],
            "additionalProperties": false,
        }),
    )
}

fn bias_request(text: &str) -> ChatRequest {
    request(
        &format!(
            "Which cognitive biases does this reasoning show? Choose from: {} (attribution: \
             behaviour put down to character rather than the situation). An empty list when \
             none. Answer in JSON.",
            BIAS_TYPES.join(", ")
        ),
        text,
        "biases",
        json!({
            "type": "object",
            "properties": {
                "biases": {
                    "type": "array",
                    "items": {"type": "string", "enum": BIAS_TYPES},
                    "maxItems": 3,
                },
            },
            "required": ["biases"],
            "additionalProperties": false,
        }),
    )
}

fn fallacy_request(text: &str) -> ChatRequest {
    request(
        "Which fallacies does this reasoning commit? Choose from: circular (the conclusion \
         restates a premise), hasty_generalisation (a general claim from a few cases), \
         false_dilemma (two options offered as the only ones), appeal_to_authority (a claim \
         accepted because of who made it), non_sequitur (the conclusion does not follow from \
         its grounds), bandwagon (right because many do or believe it). An empty list when the \
         reasoning is sound or argues nothing. Answer in JSON.",
        text,
        "fallacies",
        json!({
            "type": "object",
            "properties": {
                "fallacies": {
                    "type": "array",
                    "items": {"type": "string", "enum": FALLACIES},
                    "maxItems": 3,
                },
            },
            "required": ["fallacies"],
            "additionalProperties": false,
        }),
    )
}

/// The one model call of `analyze_reasoning`, when a provider is configured.
pub(super) fn plan_analysis(_app: &App, command: &Command) -> Result<Option<ModelStep>, Refusal> {
    let args: AnalyzeReasoningArgs = parse(&command.arguments, ANALYSIS_USAGE)?;
    non_empty("reasoning", &args.reasoning, ANALYSIS_USAGE)?;
    ask_once(command, || fallacy_request(&args.reasoning))
}

/// The one model call of `detect_emotion`, when a provider is configured.
pub(super) fn plan_emotion(_app: &App, command: &Command) -> Result<Option<ModelStep>, Refusal> {
    let args: DetectEmotionArgs = parse(&command.arguments, EMOTION_USAGE)?;
    non_empty("text", &args.text, EMOTION_USAGE)?;
    ask_once(command, || emotion_request(&args.text))
}

/// The one model call of `detect_bias`, when a provider is configured.
pub(super) fn plan_bias(_app: &App, command: &Command) -> Result<Option<ModelStep>, Refusal> {
    let args: DetectBiasArgs = parse(&command.arguments, BIAS_USAGE)?;
    non_empty("reasoning", &args.reasoning, BIAS_USAGE)?;
    ask_once(command, || bias_request(&args.reasoning))
}

/// One chat of `request`, unless it was answered, no provider is configured, or the provider
/// failed (a refusal).
fn ask_once(
    command: &Command,
    request: impl FnOnce() -> ChatRequest,
) -> Result<Option<ModelStep>, Refusal> {
    model_failed(command)?;
    if !command.prepared.model.answers.is_empty() || no_model(command) {
        return Ok(None);
    }
    Ok(Some(ModelStep::Chat(request())))
}

#[derive(Deserialize)]
struct EmotionJson {
    emotion: String,
    valence: String,
}

#[derive(Deserialize)]
struct BiasJson {
    biases: Vec<String>,
}

#[derive(Deserialize)]
struct FallacyJson {
    fallacies: Vec<String>,
}

/// Labels without repeats, in the model's order.
fn distinct(labels: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in labels {
        if !out.contains(&l) {
            out.push(l);
        }
    }
    out
}

fn unreadable(model: String) -> ModelJudgement {
    ModelJudgement {
        model,
        status: "unreadable".to_owned(),
        emotion: None,
        valence: None,
        biases: None,
        fallacies: None,
    }
}

fn judged(answer: &ChatOutcome) -> ModelJudgement {
    ModelJudgement {
        model: model_of(answer),
        status: "answered".to_owned(),
        emotion: None,
        valence: None,
        biases: None,
        fallacies: None,
    }
}

/// The model's emotion judgement of this call, if the model was asked.
pub(super) fn emotion(call: &Call<'_>) -> Option<ModelJudgement> {
    let answer = call.model_answers().first()?;
    let parsed = serde_json::from_str::<EmotionJson>(answer.text().trim())
        .ok()
        .filter(|j| {
            (EMOTIONS.contains(&j.emotion.as_str()) || j.emotion == "none")
                && SIGNS.contains(&j.valence.as_str())
        });
    Some(match parsed {
        Some(j) => ModelJudgement {
            emotion: Some(j.emotion),
            valence: Some(j.valence),
            ..judged(answer)
        },
        None => unreadable(model_of(answer)),
    })
}

/// The model's bias judgement of this call, if the model was asked.
pub(super) fn bias(call: &Call<'_>) -> Option<ModelJudgement> {
    let answer = call.model_answers().first()?;
    let parsed = serde_json::from_str::<BiasJson>(answer.text().trim())
        .ok()
        .filter(|j| j.biases.iter().all(|b| BIAS_TYPES.contains(&b.as_str())));
    Some(match parsed {
        Some(j) => ModelJudgement {
            biases: Some(distinct(j.biases)),
            ..judged(answer)
        },
        None => unreadable(model_of(answer)),
    })
}

/// The model's fallacy judgement of this call, if the model was asked.
pub(super) fn fallacies(call: &Call<'_>) -> Option<ModelJudgement> {
    let answer = call.model_answers().first()?;
    let parsed = serde_json::from_str::<FallacyJson>(answer.text().trim())
        .ok()
        .filter(|j| j.fallacies.iter().all(|f| FALLACIES.contains(&f.as_str())));
    Some(match parsed {
        Some(j) => ModelJudgement {
            fallacies: Some(distinct(j.fallacies)),
            ..judged(answer)
        },
        None => unreadable(model_of(answer)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_requests_constrain_the_answer_to_the_rules_labels() {
        let r = emotion_request("We lost the match.");
        let format = serde_json::to_value(&r.response_format).unwrap();
        let text = format.to_string();
        for e in EMOTIONS {
            assert!(text.contains(e), "{e}");
        }
        assert!(text.contains("\"none\""));
        let b = serde_json::to_value(bias_request("x").response_format).unwrap();
        for t in BIAS_TYPES {
            assert!(b.to_string().contains(t), "{t}");
        }
        let f = serde_json::to_value(fallacy_request("x").response_format).unwrap();
        for t in FALLACIES {
            assert!(f.to_string().contains(t), "{t}");
        }
    }

    #[test]
    fn the_fallacy_labels_are_the_rules_labels() {
        use super::super::argument::Fallacy;
        let rules = [
            Fallacy::Circular,
            Fallacy::HastyGeneralisation,
            Fallacy::FalseDilemma,
            Fallacy::AppealToAuthority,
            Fallacy::NonSequitur,
            Fallacy::Bandwagon,
        ]
        .map(Fallacy::label);
        assert_eq!(rules, FALLACIES);
    }
}
