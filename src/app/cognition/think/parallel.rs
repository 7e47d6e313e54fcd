//! The four streams of `think_parallel` (and `think` in `parallel` mode) read: each stream's
//! JSON answer, its stance and insights, the conflicts between stances, an insight's
//! corroboration by the other streams, the streams' agreement and timings; without a model, the
//! streams' scaffold.
//!
//! Must not know: how the streams are asked (the plan is `think`'s).

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::json;

use super::super::emotion::words;
use super::super::{Provenance, answer, round2};
use super::{
    Conflict, Insight, NO_MODEL, ParallelData, RULES, Recommendation, STANCES, STREAMS,
    StreamScaffold, StreamTiming, SyncPoint, mode, model_of,
};
use crate::app::Outcome;
use crate::app::call::Call;
use crate::events::TextRef;
use crate::model::ChatOutcome;

#[derive(Deserialize)]
struct StreamJson {
    #[serde(default)]
    insights: Vec<String>,
    recommendation: String,
    #[serde(default)]
    rationale: Option<String>,
    stance: String,
    #[serde(default)]
    confidence: Option<f64>,
}

/// A stream's self-reported confidence, kept only when it is a number in [0, 1].
fn stream_confidence(j: &StreamJson) -> Option<f64> {
    j.confidence.filter(|c| (0.0..=1.0).contains(c)).map(round2)
}

fn content(text: &str) -> BTreeSet<String> {
    words(text).into_iter().filter(|w| w.len() > 3).collect()
}

/// Each stream's scaffold of steps, with the stance it took (when one was read).
fn stream_scaffolds(stances: &[Option<String>]) -> Vec<StreamScaffold> {
    STREAMS
        .iter()
        .zip(stances)
        .map(|(s, stance)| StreamScaffold {
            stream: (*s).to_owned(),
            steps: mode(s)
                .map(|(_, st)| st.iter().map(|x| (*x).to_owned()).collect())
                .unwrap_or_default(),
            stance: stance.clone(),
        })
        .collect()
}

/// Without a model: the four streams' scaffolds, every field only a model fills left empty.
fn parallel_scaffold(call: &mut Call<'_>, timeout: u64, tool: &str) -> Outcome {
    let data = ParallelData {
        conclusion: None,
        insights: Vec::new(),
        recommendations: Vec::new(),
        conflicts: Vec::new(),
        confidence: None,
        quality: None,
        streams: stream_scaffolds(&[None, None, None, None]),
        timings: Vec::new(),
        overlapping: None,
        synchronization: Vec::new(),
        status: "scaffold".to_owned(),
        provenance: Provenance {
            rules: RULES.to_owned(),
            model: None,
            limitations: vec![NO_MODEL.to_owned()],
        },
    };
    let result = json!({"mode": "parallel", "status": "scaffold", "timeoutMs": timeout});
    answer(
        call,
        (tool, RULES, None, result, Vec::new()),
        data,
        &["parallelScaffold"],
    )
}

/// Each stream's stance, kept only when it is one of the three asked for: a stance is recorded
/// in clear (a label), so any other model text is never taken as one.
fn stances_of(parsed: &[Option<StreamJson>]) -> Vec<Option<String>> {
    parsed
        .iter()
        .map(|p| {
            p.as_ref()
                .map(|j| j.stance.trim().to_lowercase())
                .filter(|s| STANCES.contains(&s.as_str()))
        })
        .collect()
}

/// Every stream's insights, each weighted by how many other streams corroborate it (share two
/// of its content words), most important first; and each stream's recommendation, the
/// synthetic stream's first.
fn insights_and_recommendations(
    parsed: &[Option<StreamJson>],
) -> (Vec<Insight>, Vec<Recommendation>) {
    let bags: Vec<BTreeSet<String>> = parsed
        .iter()
        .map(|p| {
            p.as_ref().map_or_else(BTreeSet::new, |j| {
                let mut all = content(&j.recommendation);
                for i in &j.insights {
                    all.extend(content(i));
                }
                all
            })
        })
        .collect();
    let mut insights = Vec::new();
    let mut recommendations = Vec::new();
    for (k, p) in parsed.iter().enumerate() {
        let Some(j) = p else { continue };
        for text in &j.insights {
            let mine = content(text);
            let shared = bags
                .iter()
                .enumerate()
                .filter(|(o, bag)| *o != k && mine.intersection(bag).count() >= 2)
                .count();
            #[allow(clippy::cast_precision_loss)] // at most 3
            let importance = round2(0.5 + 0.5 * shared as f64 / 3.0);
            insights.push(Insight {
                content: text.clone(),
                sources: vec![STREAMS[k].to_owned()],
                importance,
                confidence: stream_confidence(j),
            });
        }
        recommendations.push(Recommendation {
            description: j.recommendation.clone(),
            sources: vec![STREAMS[k].to_owned()],
            priority: if STREAMS[k] == "synthetic" { 1 } else { 2 },
            confidence: stream_confidence(j),
            rationale: j
                .rationale
                .as_ref()
                .map(|r| r.trim().to_owned())
                .filter(|r| !r.is_empty()),
        });
    }
    insights.sort_by(|a, b| b.importance.total_cmp(&a.importance));
    recommendations.sort_by_key(|r| r.priority);
    (insights, recommendations)
}

/// One conflict per pair of streams whose stances differ; half as severe when one is `mixed`.
fn stance_conflicts(stances: &[Option<String>]) -> Vec<Conflict> {
    let mut conflicts = Vec::new();
    for a in 0..4 {
        for b in a + 1..4 {
            let (Some(sa), Some(sb)) = (&stances[a], &stances[b]) else {
                continue;
            };
            if sa != sb {
                let severity = if sa == "mixed" || sb == "mixed" {
                    0.5
                } else {
                    1.0
                };
                conflicts.push(Conflict {
                    id: format!("conflict-{}", conflicts.len() + 1),
                    kind: "stance".to_owned(),
                    description: format!("{} is {sa}, {} is {sb}", STREAMS[a], STREAMS[b]),
                    severity,
                    source_streams: vec![STREAMS[a].to_owned(), STREAMS[b].to_owned()],
                });
            }
        }
    }
    conflicts
}

/// The overall confidence (the share of readable streams taking the most common stance) and
/// quality (the share of streams that answered readably).
fn agreement(
    parsed: &[Option<StreamJson>],
    stances: &[Option<String>],
) -> (Option<f64>, Option<f64>) {
    let readable = parsed.iter().filter(|p| p.is_some()).count();
    let most_common = STANCES
        .iter()
        .map(|s| stances.iter().filter(|x| x.as_deref() == Some(*s)).count())
        .max()
        .unwrap_or(0);
    #[allow(clippy::cast_precision_loss)] // at most 4
    let (confidence, quality) = (
        (readable > 0).then(|| round2(most_common as f64 / readable as f64)),
        Some(round2(readable as f64 / 4.0)),
    );
    (confidence, quality)
}

/// When the streams ran, as the recorded exchanges say.
struct Timing {
    /// Each stream's send offset and latency.
    timings: Vec<StreamTiming>,
    /// Whether every stream was still running when the last one was sent (unknown without
    /// send offsets).
    overlapping: Option<bool>,
    /// Which streams had answered at 25, 50 and 75 % of the timeout.
    synchronization: Vec<SyncPoint>,
}

/// The streams' timings, overlap and synchronisation points, from the recorded exchanges.
fn timing(answers: &[ChatOutcome], timeout: u64) -> Timing {
    let timings: Vec<StreamTiming> = answers
        .iter()
        .zip(STREAMS)
        .map(|(a, s)| StreamTiming {
            stream: s.to_owned(),
            started_after_ms: a.exchange.started_after_ms,
            latency_ms: a.exchange.latency_ms,
        })
        .collect();
    let ends: Vec<u64> = timings
        .iter()
        .map(|t| t.started_after_ms.unwrap_or(0) + t.latency_ms)
        .collect();
    let last_start = timings.iter().filter_map(|t| t.started_after_ms).max();
    let overlapping = last_start.map(|s| ends.iter().all(|e| *e > s));
    let synchronization = [25u32, 50, 75]
        .iter()
        .map(|p| {
            let at = timeout * u64::from(*p) / 100;
            SyncPoint {
                percent: *p,
                at_ms: at,
                completed_streams: STREAMS
                    .iter()
                    .zip(&ends)
                    .filter(|(_, e)| **e <= at)
                    .map(|(s, _)| (*s).to_owned())
                    .collect(),
            }
        })
        .collect::<Vec<_>>();
    Timing {
        timings,
        overlapping,
        synchronization,
    }
}

/// What the model wrote and what the rules computed, and each stream whose answer could not be
/// read, with why.
fn parallel_limitations(
    model: &str,
    parsed: &[Option<StreamJson>],
    answers: &[ChatOutcome],
) -> Vec<String> {
    let mut limitations = vec![format!(
        "insights, recommendations, rationales, stances and each stream's confidence were \
         written by {model}, one call per stream (a stream's confidence is the model's own \
         report, not a measurement); conflicts, importance, the overall confidence and quality \
         are computed from them by the rules in docs/cognition.md"
    )];
    for ((stream, p), a) in STREAMS.iter().zip(parsed).zip(answers) {
        if p.is_none() {
            let why = if a.exchange.finish_reason.as_deref() == Some("length") {
                "was cut at the token limit"
            } else {
                "was not the JSON asked for"
            };
            limitations.push(format!(
                "the {stream} stream's answer {why}: its insights, recommendation and stance \
                 are missing"
            ));
        }
    }
    limitations
}

/// The model's texts the answer carries, committed: insights, then each recommendation and its
/// rationale.
fn derived_texts(
    call: &mut Call<'_>,
    insights: &[Insight],
    recommendations: &[Recommendation],
) -> Vec<TextRef> {
    let mut texts = Vec::new();
    for i in insights {
        texts.push(call.derive_text(&i.content));
    }
    for r in recommendations {
        texts.push(call.derive_text(&r.description));
        if let Some(rationale) = &r.rationale {
            texts.push(call.derive_text(rationale));
        }
    }
    texts
}

/// The four streams: the scaffold without a model; with one, each stream's JSON answer read,
/// weighed and compared by the rules above.
pub(super) fn parallel(call: &mut Call<'_>, _problem: &str, timeout: u64, tool: &str) -> Outcome {
    let answers = call.model_answers().to_vec();
    if answers.is_empty() {
        return parallel_scaffold(call, timeout, tool);
    }
    let model = model_of(&answers[0]);
    let parsed: Vec<Option<StreamJson>> = answers
        .iter()
        .map(|a| serde_json::from_str::<StreamJson>(a.text().trim()).ok())
        .collect();
    let stances = stances_of(&parsed);
    let (insights, recommendations) = insights_and_recommendations(&parsed);
    let conflicts = stance_conflicts(&stances);
    let (confidence, quality) = agreement(&parsed, &stances);
    let Timing {
        timings,
        overlapping,
        synchronization,
    } = timing(&answers, timeout);
    let conclusion = parsed[3].as_ref().map(|j| j.recommendation.clone());
    let limitations = parallel_limitations(&model, &parsed, &answers);
    let texts = derived_texts(call, &insights, &recommendations);
    let result = json!({
        "mode": "parallel",
        "status": "completed",
        "timeoutMs": timeout,
        "stances": stances,
        "conflicts": conflicts.len(),
        "timings": timings,
        "overlapping": overlapping,
        "synchronization": synchronization,
        "confidence": confidence,
        "quality": quality,
    });
    let data = ParallelData {
        conclusion,
        insights,
        recommendations,
        conflicts,
        confidence,
        quality,
        streams: stream_scaffolds(&stances),
        timings,
        overlapping,
        synchronization,
        status: "completed".to_owned(),
        provenance: Provenance {
            rules: RULES.to_owned(),
            model: Some(model.clone()),
            limitations,
        },
    };
    answer(
        call,
        (tool, RULES, Some(model), result, texts),
        data,
        &["parallelStreams", "reasoningModel"],
    )
}
