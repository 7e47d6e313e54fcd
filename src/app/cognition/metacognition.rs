//! The metacognition tools: `assess_confidence`, `detect_bias`, `detect_emotion`,
//! `analyze_reasoning`, each decided by its rule set ([`super::features`], [`super::bias`],
//! [`super::emotion`], and for `analyze_reasoning` [`super::features2`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::argues;
use super::argument;
use super::bias::{self, Finding};
use super::emotion::{self, Circumplex, Discrete};
use super::features::{self, Dimensions, Quality};
use super::features2;
use super::judgement::{self, ModelJudgement};
use super::reader::{self, Reading};
use super::{Envelope, Provenance, answer, non_empty, parse};
use crate::app::Outcome;
use crate::app::call::Call;
use crate::events::TextRef;

const CONFIDENCE_USAGE: &str =
    "pass {\"reasoning\": \"...\"} and optionally evidence (a list of strings) and context";
pub(super) const BIAS_USAGE: &str =
    "pass {\"reasoning\": \"...\"} and optionally context and monitorContinuously";
pub(super) const EMOTION_USAGE: &str =
    "pass {\"text\": \"...\"} and optionally includeDiscrete and context";
pub(super) const ANALYSIS_USAGE: &str = "pass {\"reasoning\": \"...\"} and optionally context, \
     includeConfidence, includeBias, includeEmotion";

/// Arguments of `assess_confidence` (the seed's).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AssessConfidenceArgs {
    /// Reasoning to assess.
    #[schemars(extend("x-text" = true))]
    pub reasoning: String,
    /// Supporting evidence.
    #[serde(default)]
    #[schemars(extend("x-text" = true))]
    pub evidence: Option<Vec<String>>,
    /// Context for the assessment.
    #[serde(default)]
    #[schemars(extend("x-text" = true))]
    pub context: Option<String>,
}

/// `assess_confidence`'s data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfidenceData {
    pub overall_confidence: f64,
    pub dimensions: Dimensions,
    pub interpretation: String,
    pub warnings: Vec<String>,
    pub recommendations: Vec<String>,
    /// What the dimensions were computed from.
    pub features: features::Features,
    pub provenance: Provenance,
}

pub type AssessConfidenceOutput = Envelope<ConfidenceData>;

fn feature_limits() -> Vec<String> {
    vec![
        "Scores come from counted text features (docs/cognition.md), not from checking the \
         claims; they order texts, they are not calibrated probabilities"
            .to_owned(),
    ]
}

fn assess(reasoning: &str, evidence: &[String], context: Option<&str>) -> ConfidenceData {
    let x = features::count(reasoning, evidence, context);
    let d = features::dimensions(&x);
    let overall = features::overall(&d);
    let (warnings, recommendations) = features::advice(&x, &d);
    ConfidenceData {
        overall_confidence: overall,
        dimensions: d,
        interpretation: features::interpretation(overall).to_owned(),
        warnings,
        recommendations,
        features: x,
        provenance: Provenance {
            rules: features::RULES.to_owned(),
            model: None,
            limitations: feature_limits(),
        },
    }
}

pub(super) fn decide_confidence(call: &mut Call<'_>) -> Outcome {
    let args: AssessConfidenceArgs = parse(call.args, CONFIDENCE_USAGE)?;
    non_empty("reasoning", &args.reasoning, CONFIDENCE_USAGE)?;
    let evidence = args.evidence.unwrap_or_default();
    let data = assess(&args.reasoning, &evidence, args.context.as_deref());
    let result = json!({
        "overallConfidence": data.overall_confidence,
        "dimensions": data.dimensions,
        "features": data.features,
    });
    answer(
        call,
        (
            super::ASSESS_CONFIDENCE_TOOL,
            features::RULES,
            None,
            result,
            Vec::new(),
        ),
        data,
        &["confidenceAssessor"],
    )
}

/// Arguments of `detect_bias` (the seed's).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DetectBiasArgs {
    /// Reasoning to analyze.
    #[schemars(extend("x-text" = true))]
    pub reasoning: String,
    #[serde(default)]
    #[schemars(extend("x-text" = true))]
    pub context: Option<String>,
    /// Accepted; each call is one analysis (nothing keeps running between calls).
    #[serde(default)]
    pub monitor_continuously: Option<bool>,
}

/// `detect_bias`'s data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BiasData {
    pub biases: Vec<Finding>,
    /// Milliseconds the rules took: 0 here, as the decision is timed by the server's
    /// `metadata.processingTime`.
    pub detection_time: f64,
    /// Always false: a call is one analysis.
    pub monitoring_active: bool,
    /// The configured model's answer, beside the rules (absent without a provider).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_judgement: Option<ModelJudgement>,
    pub provenance: Provenance,
}

pub type DetectBiasOutput = Envelope<BiasData>;

fn bias_limits() -> Vec<String> {
    vec![
        "Biases are found by phrase patterns and by resemblance to labelled example \
         sentences (docs/cognition.md): a bias in words no pattern names and unlike every \
         example is missed, and a match is a sign, not a proof"
            .to_owned(),
    ]
}

/// Each finding's evidence as derived texts (caller text stays erasable), and the result.
fn record_biases(call: &mut Call<'_>, found: &[Finding]) -> (serde_json::Value, Vec<TextRef>) {
    let mut texts = Vec::new();
    for f in found {
        for e in &f.evidence {
            texts.push(call.derive_text(e));
        }
    }
    let result = json!({
        "biases": found.iter().map(|f| json!({
            "type": f.kind,
            "severity": f.severity,
            "confidence": f.confidence,
            "spans": f.spans,
            "basis": f.basis,
        })).collect::<Vec<_>>(),
    });
    (result, texts)
}

pub(super) fn decide_bias(call: &mut Call<'_>) -> Outcome {
    let args: DetectBiasArgs = parse(call.args, BIAS_USAGE)?;
    non_empty("reasoning", &args.reasoning, BIAS_USAGE)?;
    let found = bias::detect(&args.reasoning);
    let (mut result, texts) = record_biases(call, &found);
    let model_judgement = judgement::bias(call);
    let mut limitations = bias_limits();
    if let Some(j) = &model_judgement {
        result["modelJudgement"] = j.recorded();
        limitations.push(judgement::limitation(j));
    }
    let model = model_judgement.as_ref().map(|j| j.model.clone());
    let data = BiasData {
        biases: found,
        detection_time: 0.0,
        monitoring_active: false,
        model_judgement,
        provenance: Provenance {
            rules: bias::RULES.to_owned(),
            model: model.clone(),
            limitations,
        },
    };
    let components: &[&str] = if model.is_some() {
        &["biasDetector", "reasoningModel"]
    } else {
        &["biasDetector"]
    };
    answer(
        call,
        (super::DETECT_BIAS_TOOL, bias::RULES, model, result, texts),
        data,
        components,
    )
}

/// Arguments of `detect_emotion` (the seed's).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DetectEmotionArgs {
    /// Text to analyze.
    #[schemars(extend("x-text" = true))]
    pub text: String,
    /// Include the discrete emotions (default true).
    #[serde(default)]
    pub include_discrete: Option<bool>,
    #[serde(default)]
    #[schemars(extend("x-text" = true))]
    pub context: Option<String>,
}

/// `detect_emotion`'s data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmotionData {
    pub circumplex: Circumplex,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discrete: Option<Discrete>,
    /// Milliseconds: see `metadata.processingTime`.
    pub detection_time: f64,
    /// The configured model's answer, beside the rules (absent without a provider).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_judgement: Option<ModelJudgement>,
    pub provenance: Provenance,
}

pub type DetectEmotionOutput = Envelope<EmotionData>;

fn emotion_data(text: &str, discrete: bool) -> EmotionData {
    let reading = emotion::read(text);
    EmotionData {
        circumplex: reading.circumplex,
        discrete: discrete.then_some(reading.discrete),
        detection_time: 0.0,
        model_judgement: None,
        provenance: Provenance {
            rules: emotion::RULES.to_owned(),
            model: None,
            limitations: vec![
                "Word lexicons and appraisal cues with negation and intensifier rules; without \
                 an emotion word or cue, the vote of the nearest labelled example sentences \
                 (docs/cognition.md): irony and sarcasm are missed, and a vote is only as good \
                 as the examples near the text"
                    .to_owned(),
            ],
        },
    }
}

pub(super) fn decide_emotion(call: &mut Call<'_>) -> Outcome {
    let args: DetectEmotionArgs = parse(call.args, EMOTION_USAGE)?;
    non_empty("text", &args.text, EMOTION_USAGE)?;
    let discrete = args.include_discrete.unwrap_or(true);
    let mut data = emotion_data(&args.text, discrete);
    data.model_judgement = judgement::emotion(call);
    let model = data.model_judgement.as_ref().map(|j| j.model.clone());
    if let Some(j) = &data.model_judgement {
        data.provenance.model = model.clone();
        data.provenance.limitations.push(judgement::limitation(j));
    }
    let mut result = json!({
        "circumplex": data.circumplex,
        "discrete": data.discrete.as_ref().map(|d| json!({
            "primary": d.primary,
            "emotions": d.emotions,
            "confidence": d.confidence,
            "basis": d.basis,
            "examples": d.examples.as_ref().map(|v| json!({
                "k": v.k,
                "shares": v.shares,
                "nearestSimilarity": v.nearest.similarity,
            })),
        })),
    });
    if let Some(j) = &data.model_judgement {
        result["modelJudgement"] = j.recorded();
    }
    let mut components = vec!["emotionAnalyzer"];
    if discrete {
        components.push("discreteEmotionClassifier");
    }
    if model.is_some() {
        components.push("reasoningModel");
    }
    answer(
        call,
        (
            super::DETECT_EMOTION_TOOL,
            emotion::RULES,
            model,
            result,
            Vec::new(),
        ),
        data,
        &components,
    )
}

/// Arguments of `analyze_reasoning` (the seed's).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnalyzeReasoningArgs {
    /// Reasoning to analyze.
    #[schemars(extend("x-text" = true))]
    pub reasoning: String,
    #[serde(default)]
    #[schemars(extend("x-text" = true))]
    pub context: Option<String>,
    /// Default true.
    #[serde(default)]
    pub include_confidence: Option<bool>,
    /// Default true.
    #[serde(default)]
    pub include_bias: Option<bool>,
    /// Default false.
    #[serde(default)]
    pub include_emotion: Option<bool>,
}

/// The confidence part of an analysis.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfidenceSummary {
    pub overall_confidence: f64,
    pub dimensions: Dimensions,
}

/// `analyze_reasoning`'s data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisData {
    pub quality: Quality,
    pub strengths: Vec<String>,
    pub weaknesses: Vec<String>,
    pub recommendations: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<ConfidenceSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub biases: Option<Vec<Finding>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emotion: Option<EmotionData>,
    /// The configured model's answer, beside the rules (absent without a provider).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_judgement: Option<ModelJudgement>,
    pub provenance: Provenance,
}

pub type AnalyzeReasoningOutput = Envelope<AnalysisData>;

/// The findings features/2 takes from argument/2, then reader/2's, for the recorded result:
/// each one's type, byte span (the whole passage for the reader's), confidence (the reader's
/// probability) and the measure it lowers.
fn recorded_findings(a: &argument::Assessment, read: Option<&Read>) -> serde_json::Value {
    let mut findings: Vec<serde_json::Value> = features2::taken(a)
        .iter()
        .map(|f| {
            json!({
                "type": f.fallacy.label(),
                "span": f.span,
                "confidence": f.confidence,
                "lowers": f.fallacy.lowered().field(),
            })
        })
        .collect();
    if let Some((fallacy, reading, len)) = read {
        findings.push(json!({
            "type": fallacy.label(),
            "span": {"start": 0, "end": len},
            "confidence": reading.probability,
            "lowers": fallacy.lowered().field(),
            "by": reader::RULES,
        }));
    }
    json!({ "findings": findings })
}

/// A fallacy reader/2 adds, its reading, and the passage's length in bytes.
type Read = (argument::Fallacy, Reading, usize);

/// reader/2's finding on `text`, when it reads a fallacy features/2 has not found. `inputs`
/// are argues/2's ([`argues::inputs`]: reader/2's, then more), made once for both readers.
fn read_finding(text: &str, inputs: Option<&[f64]>, a: &argument::Assessment) -> Option<Read> {
    let reading = reader::read_inputs(inputs?)?;
    let found: Vec<argument::Fallacy> = features2::taken(a).iter().map(|f| f.fallacy).collect();
    let fallacy = reader::finding(&reading, &found)?;
    Some((fallacy, reading, text.len()))
}

/// argues/2's probability that the passage of `inputs` argues nothing, when it reads so and
/// nothing was found (neither the rules' findings nor reader/2's): the answer is then neutral.
fn argues_nothing(
    inputs: Option<&[f64]>,
    a: &argument::Assessment,
    read: Option<&Read>,
) -> Option<f64> {
    if read.is_some() || !features2::taken(a).is_empty() {
        return None;
    }
    argues::argues_nothing(inputs?).and_then(|(nothing, p)| nothing.then_some(p))
}

/// The neutral answer for a text that argues nothing: the four measures at 0.5, no strength or
/// weakness, and the reason as the one recommendation.
fn neutral(p: f64, quality: &mut Quality, judged: &mut (Vec<String>, Vec<String>, Vec<String>)) {
    *quality = Quality {
        coherence: 0.5,
        completeness: 0.5,
        logical_validity: 0.5,
        evidence_support: 0.5,
    };
    *judged = (
        Vec::new(),
        Vec::new(),
        vec![format!(
            "No argument to assess: the text states, asks, tells or instructs without giving \
             reasons for a conclusion (read by {} with probability {p:.2}); the measures are \
             neutral (0.5). To have reasoning analysed, state the conclusion and the reasons \
             for it",
            argues::RULES
        )],
    );
}

/// The reader's finding named among the weaknesses and recommendations, as the rules' are.
fn judge_read(
    read: Option<&Read>,
    weaknesses: &mut Vec<String>,
    recommendations: &mut Vec<String>,
) {
    if let Some((fallacy, reading, _)) = read {
        weaknesses.push(format!(
            "{} (the whole passage, read by {} with probability {:.2}); lowers {}",
            fallacy.name(),
            reader::RULES,
            reading.probability,
            fallacy.lowered().field()
        ));
        recommendations.push(fallacy.advice().to_owned());
    }
}

fn argument_limits() -> Vec<String> {
    vec![
        "Two fallacies are named by general shapes (docs/cognition.md): a conclusion that \
         restates its premises, and a general or absolute claim beside a few cases or none. \
         All six (also false dilemmas, appeals to authority, non sequiturs and bandwagons) are \
         read by reader/2, a logistic regression over the compiled-in potion-base-2M embedding \
         and the rules' inputs, which names at most one per passage: on a held-out set it found \
         13 of 32 of those four and flagged no sound passage, so a missing finding is no \
         verdict of soundness; a finding is a sign, not a proof. With a model configured, \
         modelJudgement names the fallacies the model sees"
            .to_owned(),
    ]
}

/// What the neutral answer rests on (named only in neutral answers: an answer it does not
/// change re-executes to the one recorded before it was adopted).
fn neutral_limit() -> String {
    "Whether a text argues at all is read by argues/2, a logistic regression over the \
     compiled-in embedding and the text's discourse (questions, instructions, reasons, \
     prescriptions, tense): on a held-out set it answered neutrally for 10 of 12 texts without \
     an argument and for none of 24 sound arguments; a short argument may still be read as none"
        .to_owned()
}

pub(super) fn decide_analysis(call: &mut Call<'_>) -> Outcome {
    let args: AnalyzeReasoningArgs = parse(call.args, ANALYSIS_USAGE)?;
    non_empty("reasoning", &args.reasoning, ANALYSIS_USAGE)?;
    let x = features::count(&args.reasoning, &[], args.context.as_deref());
    let d = features::dimensions(&x);
    let assessment = argument::assess(&args.reasoning);
    let inputs = argues::inputs(&args.reasoning);
    let read = read_finding(&args.reasoning, inputs.as_deref(), &assessment);
    let mut quality = features2::quality(&args.reasoning, &x, &d, &assessment);
    if let Some((_, reading, _)) = &read {
        let found: Vec<argument::Fallacy> = features2::taken(&assessment)
            .iter()
            .map(|f| f.fallacy)
            .collect();
        quality = reader::lowered(quality, reading, &found);
    }
    let mut judged = features2::judge(&x, &quality, &assessment);
    judge_read(read.as_ref(), &mut judged.1, &mut judged.2);
    let nothing = argues_nothing(inputs.as_deref(), &assessment, read.as_ref());
    if let Some(p) = nothing {
        neutral(p, &mut quality, &mut judged);
    }
    let (strengths, weaknesses, recommendations) = judged;
    let mut components = vec!["reasoningAnalyzer"];
    let confidence = args.include_confidence.unwrap_or(true).then(|| {
        components.push("confidenceAssessor");
        ConfidenceSummary {
            overall_confidence: features::overall(&d),
            dimensions: d.clone(),
        }
    });
    let biases = args.include_bias.unwrap_or(true).then(|| {
        components.push("biasDetector");
        bias::detect(&args.reasoning)
    });
    let emotion = args.include_emotion.unwrap_or(false).then(|| {
        components.push("emotionAnalyzer");
        emotion_data(&args.reasoning, true)
    });
    let (bias_result, texts) = match &biases {
        Some(found) => {
            let (r, t) = record_biases(call, found);
            (r["biases"].clone(), t)
        }
        None => (serde_json::Value::Null, Vec::new()),
    };
    let mut argument = recorded_findings(&assessment, read.as_ref());
    if let Some(p) = nothing {
        argument["argues"] = json!({ "argues": false, "probability": p, "by": argues::RULES });
    }
    let mut result = json!({
        "quality": quality,
        "argument": argument,
        "overallConfidence": confidence.as_ref().map(|c| c.overall_confidence),
        "biases": bias_result,
        "emotion": emotion.as_ref().map(|e| json!({
            "circumplex": e.circumplex,
            "primary": e.discrete.as_ref().and_then(|d| d.primary.clone()),
        })),
    });
    // reader/2 is named when it adds a finding: a call it adds none to re-executes to the
    // answer features/2 recorded before it was adopted.
    let read_by = match (&read, nothing) {
        (Some(_), _) => format!(" + {}", reader::RULES),
        (None, Some(_)) => format!(" + {}", argues::RULES),
        (None, None) => String::new(),
    };
    let rules = format!(
        "{} + {}{read_by} + {}",
        features2::RULES,
        argument::RULES,
        bias::RULES
    );
    let model_judgement = judgement::fallacies(call);
    let mut limitations = [feature_limits(), argument_limits(), bias_limits()].concat();
    if nothing.is_some() {
        limitations.push(neutral_limit());
    }
    if let Some(j) = &model_judgement {
        result["modelJudgement"] = j.recorded();
        limitations.push(judgement::limitation(j));
        components.push("reasoningModel");
    }
    let model = model_judgement.as_ref().map(|j| j.model.clone());
    let data = AnalysisData {
        quality,
        strengths,
        weaknesses,
        recommendations,
        confidence,
        biases,
        emotion,
        model_judgement,
        provenance: Provenance {
            rules: rules.clone(),
            model: model.clone(),
            limitations,
        },
    };
    answer(
        call,
        (super::ANALYZE_REASONING_TOOL, &rules, model, result, texts),
        data,
        &components,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`read_finding`] with the inputs made from `text`.
    fn finding(text: &str, a: &argument::Assessment) -> Option<Read> {
        read_finding(text, argues::inputs(text).as_deref(), a)
    }

    #[test]
    fn reader_2_adds_a_development_false_dilemma_and_spares_the_fixtures_passage() {
        let text = "Either we ship the feature this week or the company goes bankrupt.";
        let a = argument::assess(text);
        let (fallacy, reading, len) = finding(text, &a).expect("reader/2 reads a fallacy");
        assert_eq!(fallacy, argument::Fallacy::FalseDilemma, "{reading:?}");
        assert_eq!(len, text.len());
        let recorded = recorded_findings(&a, finding(text, &a).as_ref());
        assert_eq!(
            recorded["findings"][0]["type"], "false_dilemma",
            "{recorded}"
        );
        let fixture = "Based on our analysis, the proposed solution is optimal because it \
                       addresses all requirements while minimizing costs";
        assert_eq!(finding(fixture, &argument::assess(fixture)), None);
    }

    #[test]
    fn argues_2_answers_neutrally_only_where_nothing_was_found() {
        let none = "The meeting is at 3pm in room 4.";
        let a = argument::assess(none);
        let x = argues::inputs(none);
        assert!(argues_nothing(x.as_deref(), &a, finding(none, &a).as_ref()).is_some());
        let circular = "The sky is blue because it is blue.";
        let a = argument::assess(circular);
        assert!(!features2::taken(&a).is_empty());
        assert_eq!(
            argues_nothing(argues::inputs(circular).as_deref(), &a, None),
            None
        );
    }
}
