//! The timeline of a session: one entry per recorded call, in log order, saying when it was
//! recorded, which tool, how it ended and what it changed.
//!
//! Entries are generic over facts (each change names its fact type and says in one line what it
//! did), so facts added later (deliberation nodes, assumptions, checkpoints) show up without a
//! new entry shape. Must not know: where the events come from, MCP, re-execution.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Serialize;

use crate::events::{Event, Fact, OutcomeStatus};

/// One change a call made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// The fact's type, e.g. `ThoughtRecorded`.
    pub fact: String,
    /// The thought it concerns, if any.
    pub thought_number: Option<u32>,
    /// The deliberation entity it concerns (node, claim, assumption, checkpoint, phase id),
    /// if any. Omitted when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// What it did, in one line.
    pub summary: String,
}

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimelineEntry {
    pub seq: u64,
    /// When the server decided the call (its claim, not a proof of time).
    pub recorded_at: String,
    pub tool: String,
    /// `ok`, `rejected` or `failed`.
    pub status: String,
    /// The error code of a call that did not succeed.
    pub error_code: Option<String>,
    /// What the call changed (empty for reads and refused calls).
    pub changes: Vec<Change>,
    /// The entry in one line.
    pub summary: String,
    /// With re-execution: `matched`, `diverged` or `skipped`.
    pub reexecution: Option<String>,
}

/// A recorded result in one readable line: arrays longer than [`LISTED`] are shown by their
/// length (a depth-5 decomposition has hundreds of ids).
fn one_line(result: &serde_json::Value) -> String {
    /// The longest array shown item by item.
    const LISTED: usize = 6;
    fn shorten(value: &serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match value {
            Value::Array(items) if items.len() > LISTED => {
                Value::String(format!("{} items", items.len()))
            }
            Value::Array(items) => Value::Array(items.iter().map(shorten).collect()),
            Value::Object(map) => {
                Value::Object(map.iter().map(|(k, v)| (k.clone(), shorten(v))).collect())
            }
            other => other.clone(),
        }
    }
    shorten(result).to_string()
}

/// The timeline of `events` (one session's, in log order).
#[must_use]
pub fn timeline(events: &[Event]) -> Vec<TimelineEntry> {
    // Thought numbers by the seq that recorded them, for tag changes.
    let mut numbers: HashMap<u64, u32> = HashMap::new();
    let mut out = Vec::with_capacity(events.len());
    for event in events {
        let changes: Vec<Change> = event
            .facts
            .iter()
            .map(|fact| change(event.seq, fact, &mut numbers))
            .collect();
        let status = match event.outcome.status {
            OutcomeStatus::Ok => "ok",
            OutcomeStatus::Rejected => "rejected",
            OutcomeStatus::Failed => "failed",
        };
        let error_code = event.outcome.error.as_ref().map(|e| e.code.clone());
        let summary = if !changes.is_empty() {
            changes
                .iter()
                .map(|c| c.summary.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        } else {
            match &error_code {
                Some(code) => format!("{status}: {code}"),
                None => "read; nothing changed".to_owned(),
            }
        };
        out.push(TimelineEntry {
            seq: event.seq,
            recorded_at: event.recorded_at.clone(),
            tool: event.call.tool.clone(),
            status: status.to_owned(),
            error_code,
            changes,
            summary,
            reexecution: None,
        });
    }
    out
}

fn change(seq: u64, fact: &Fact, numbers: &mut HashMap<u64, u32>) -> Change {
    let (name, thought_number, summary) = match fact {
        Fact::SessionStarted { .. } => ("SessionStarted", None, "session started".to_owned()),
        Fact::ThoughtRecorded(t) => {
            numbers.insert(seq, t.thought_number);
            let mut s = format!("thought {}/{}", t.thought_number, t.total_thoughts);
            if let Some(r) = t.revises_thought {
                s.push_str(&format!(" revises thought {r}"));
            } else if t.is_revision {
                s.push_str(" (revision)");
            }
            match (&t.branch_id, t.branch_from_thought) {
                (Some(b), Some(from)) => {
                    s.push_str(&format!(" on branch {b} from thought {from}"));
                }
                (Some(b), None) => s.push_str(&format!(" on branch {b}")),
                _ => {}
            }
            if t.needs_more_thoughts {
                s.push_str(", needs more thoughts");
            }
            if !t.next_thought_needed {
                s.push_str(", concludes");
            }
            if !t.tags.is_empty() {
                s.push_str(&format!(" [{}]", t.tags.join(", ")));
            }
            ("ThoughtRecorded", Some(t.thought_number), s)
        }
        Fact::ThoughtTagged {
            thought_seq,
            added,
            removed,
            ..
        } => {
            let number = numbers.get(thought_seq).copied();
            let which = number.map_or_else(
                || format!("the thought of event {thought_seq}"),
                |n| format!("thought {n}"),
            );
            let mut moves: Vec<String> = added.iter().map(|t| format!("+{t}")).collect();
            moves.extend(removed.iter().map(|t| format!("-{t}")));
            (
                "ThoughtTagged",
                number,
                format!("tags of {which}: {}", moves.join(" ")),
            )
        }
        Fact::SessionClosed { reason, .. } => {
            ("SessionClosed", None, format!("session closed ({reason})"))
        }
        Fact::TextsErased {
            commitments,
            reason,
            ..
        } => (
            "TextsErased",
            None,
            format!("{} text(s) erased: {reason}", commitments.len()),
        ),
        other => {
            let (name, subject, summary) = deliberation_change(other);
            return Change {
                fact: name.to_owned(),
                thought_number: None,
                subject,
                summary,
            };
        }
    };
    Change {
        fact: name.to_owned(),
        thought_number,
        subject: None,
        summary,
    }
}

/// A fact's name, the subject it concerns (if any) and what it did, in one line.
type Said = (&'static str, Option<String>, String);

/// What a fact says here when `change` summarizes it instead (the thinking family's).
fn other() -> Said {
    ("Other", None, String::new())
}

/// ` (n span(s) redacted)`, or nothing when no span of a caller's text was redacted.
fn redacted(n: usize) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(" ({n} span(s) redacted)")
    }
}

/// A deliberation fact's name, subject and one-line summary (ids and rule wording only: caller
/// text stays out of timelines, which may be shown where erased text must not reappear).
///
/// Every fact is named here, so a new fact cannot be left out; each family's facts are
/// summarized by a helper of its own below.
fn deliberation_change(fact: &Fact) -> Said {
    match fact {
        Fact::DeliberationStarted(_)
        | Fact::NodeAdded(_)
        | Fact::EdgeAdded(_)
        | Fact::RubricSet(_)
        | Fact::NodesScored(_)
        | Fact::NodesPruned(_) => graph_change(fact),
        Fact::AssumptionRecorded(_)
        | Fact::AssumptionStatusSet(_)
        | Fact::VerificationRecorded(_)
        | Fact::RouteDecided(_)
        | Fact::CheckpointRecorded(_)
        | Fact::DeliberationStatusChanged(_)
        | Fact::ConsensusReached(_) => governance_change(fact),
        Fact::SkeletonPhaseStarted(_) | Fact::SkeletonElaborated(_) => skeleton_change(fact),
        Fact::MemoryStored(_)
        | Fact::MemorySuperseded(_)
        | Fact::MemoriesRetrieved(_)
        | Fact::MemorySoftDeleted(_)
        | Fact::MemoryErased(_) => memory_change(fact),
        Fact::ModelConferred(_)
        | Fact::TracedThoughtRecorded(_)
        | Fact::PlanStepRecorded(_)
        | Fact::BiasedStepRecorded(_) => model_change(fact),
        Fact::AgentRunStarted(_)
        | Fact::AgentModelRequested(_)
        | Fact::AgentModelResponded(_)
        | Fact::AgentModelFailed(_)
        | Fact::AgentToolRequested(_)
        | Fact::AgentToolReturned(_)
        | Fact::AgentBreakerTripped(_)
        | Fact::AgentIntentDetected(_)
        | Fact::AgentNudged(_)
        | Fact::AgentRunEnded(_) => agent_change(fact),
        Fact::CognitionRecorded(f) => (
            "CognitionRecorded",
            None,
            // The result holds numbers, labels and ids only (never caller or model text).
            format!(
                "{} decided by {}{}: {}",
                f.tool,
                f.rules,
                f.model
                    .as_ref()
                    .map_or_else(String::new, |m| format!(" with {m}")),
                one_line(&f.result)
            ),
        ),
        // The thinking facts are summarized by `change`.
        Fact::SessionStarted { .. }
        | Fact::ThoughtRecorded(_)
        | Fact::ThoughtTagged { .. }
        | Fact::SessionClosed { .. }
        | Fact::TextsErased { .. } => other(),
    }
}

/// The thought graph's facts: a deliberation's start, its nodes, edges, rubric, scores and prunes. Any other fact says nothing here (`deliberation_change` sends none).
fn graph_change(fact: &Fact) -> Said {
    match fact {
        Fact::DeliberationStarted(d) => (
            "DeliberationStarted",
            Some(d.deliberation_id.clone()),
            format!(
                "deliberation {} started: mode {} ({}), profile {}, budgets {} nodes / depth {}",
                d.deliberation_id,
                d.user_mode,
                d.internal_method,
                d.profile,
                d.budgets.max_nodes,
                d.budgets.max_depth
            ),
        ),
        Fact::NodeAdded(n) => (
            "NodeAdded",
            Some(n.node_id.clone()),
            format!(
                "{} node {} on branch {} at depth {}{}{}",
                n.kind,
                n.node_id,
                n.branch_id,
                n.depth,
                if n.parent_ids.is_empty() {
                    String::new()
                } else {
                    format!(" under {}", n.parent_ids.join(", "))
                },
                redacted(n.content.redactions.len())
            ),
        ),
        Fact::EdgeAdded(e) => (
            "EdgeAdded",
            Some(e.from.clone()),
            format!("edge {} {} {}", e.from, e.edge_type, e.to),
        ),
        Fact::RubricSet(r) => (
            "RubricSet",
            None,
            format!(
                "rubric set: {}",
                r.weights
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        Fact::NodesScored(s) => (
            "NodesScored",
            Some(s.score_run_id.clone()),
            format!("{} scored {} node(s)", s.score_run_id, s.scores.len()),
        ),
        Fact::NodesPruned(p) => (
            "NodesPruned",
            None,
            format!(
                "pruned {} node(s) with beam width {}, kept {}",
                p.node_ids.len(),
                p.beam_width,
                p.kept.len()
            ),
        ),
        _ => other(),
    }
}

/// The governance facts: assumptions, verification, routes, checkpoints, status and consensus. Any other fact says nothing here (`deliberation_change` sends none).
fn governance_change(fact: &Fact) -> Said {
    match fact {
        Fact::AssumptionRecorded(a) => (
            "AssumptionRecorded",
            Some(a.assumption_id.clone()),
            format!(
                "assumption {} recorded ({}, {}){}",
                a.assumption_id,
                a.criticality,
                if a.verifiable {
                    "verifiable"
                } else {
                    "not verifiable"
                },
                redacted(a.text.redactions.len())
            ),
        ),
        Fact::AssumptionStatusSet(a) => (
            "AssumptionStatusSet",
            Some(a.assumption_id.clone()),
            format!("assumption {} is now {}", a.assumption_id, a.status),
        ),
        Fact::VerificationRecorded(v) => (
            "VerificationRecorded",
            Some(v.verification_id.clone()),
            format!(
                "{}: {} new claim(s), {} evidence item(s), {} resolution(s); {}",
                v.verification_id,
                v.claims.len(),
                v.evidence.len(),
                v.resolutions.len(),
                v.statuses
                    .iter()
                    .map(|(k, s)| format!("{k} {s}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        Fact::RouteDecided(r) => (
            "RouteDecided",
            Some(r.route_id.clone()),
            format!(
                "route {} by {}: {} ({} / {})",
                r.route_id, r.source, r.decision.decision, r.user_mode, r.internal_method
            ),
        ),
        Fact::CheckpointRecorded(c) => (
            "CheckpointRecorded",
            Some(c.checkpoint_id.clone()),
            format!(
                "checkpoint {}: quality {:.2} ({}), route {}, {} blocking gap(s)",
                c.checkpoint_id,
                c.quality_score,
                c.quality_tier,
                c.route_decision.decision,
                c.blocking_gaps.len()
            ),
        ),
        Fact::DeliberationStatusChanged(s) => (
            "DeliberationStatusChanged",
            s.node_id.clone(),
            format!("deliberation {}", s.status),
        ),
        Fact::ConsensusReached(c) => (
            "ConsensusReached",
            None,
            format!(
                "consensus answer given (heuristic confidence {:.2}){}",
                c.confidence,
                redacted(c.answer.redactions.len())
            ),
        ),
        _ => other(),
    }
}

/// The skeleton-of-thought facts: a phase started and elaborated. Any other fact says nothing here (`deliberation_change` sends none).
fn skeleton_change(fact: &Fact) -> Said {
    match fact {
        Fact::SkeletonPhaseStarted(p) => (
            "SkeletonPhaseStarted",
            Some(p.phase_id.clone()),
            format!(
                "skeleton phase {} started with {} point(s) ({})",
                p.phase_id,
                p.skeleton_node_ids.len(),
                if p.suitability.suitable {
                    "suitable"
                } else {
                    "not suitable"
                }
            ),
        ),
        Fact::SkeletonElaborated(p) => (
            "SkeletonElaborated",
            Some(p.phase_id.clone()),
            format!(
                "skeleton phase {}: {} elaboration(s), state {}",
                p.phase_id,
                p.elaboration_node_ids_by_skeleton
                    .values()
                    .map(Vec::len)
                    .sum::<usize>(),
                p.state
            ),
        ),
        _ => other(),
    }
}

/// The memory family's facts. Any other fact says nothing here (`deliberation_change` sends none).
fn memory_change(fact: &Fact) -> Said {
    match fact {
        Fact::MemoryStored(m) => (
            "MemoryStored",
            Some(m.memory_id.clone()),
            format!(
                "memory {} stored ({}), {} waypoint(s)",
                m.memory_id,
                m.primary_sector,
                m.links.len()
            ),
        ),
        Fact::MemorySuperseded(m) => (
            "MemorySuperseded",
            Some(m.memory_id.clone()),
            format!("memory {} superseded by version {}", m.memory_id, m.version),
        ),
        Fact::MemoriesRetrieved(r) => (
            "MemoriesRetrieved",
            None,
            format!(
                "{} returned {} of {} memories",
                r.via,
                r.memories.len(),
                r.total_count
            ),
        ),
        Fact::MemorySoftDeleted(m) => (
            "MemorySoftDeleted",
            Some(m.memory_id.clone()),
            format!("memory {} soft-deleted", m.memory_id),
        ),
        Fact::MemoryErased(m) => (
            "MemoryErased",
            Some(m.memory_id.clone()),
            format!("memory {} erased ({} version(s))", m.memory_id, m.versions),
        ),
        _ => other(),
    }
}

/// The model-backed family's facts. Any other fact says nothing here (`deliberation_change` sends none).
fn model_change(fact: &Fact) -> Said {
    match fact {
        Fact::ModelConferred(f) => ("ModelConferred", None, format!("{} replied", f.model)),
        Fact::TracedThoughtRecorded(f) => (
            "TracedThoughtRecorded",
            Some(f.thought_number.to_string()),
            format!(
                "{} wrote thought {} ({}){}",
                f.model,
                f.thought_number,
                f.thought_type,
                f.intervention
                    .as_ref()
                    .map_or_else(String::new, |i| format!(
                        ", intervention {}",
                        i.intervention_type
                    ))
            ),
        ),
        Fact::PlanStepRecorded(f) => (
            "PlanStepRecorded",
            Some(f.step_number.to_string()),
            format!("{} wrote plan step {}", f.model, f.step_number),
        ),
        Fact::BiasedStepRecorded(f) => (
            "BiasedStepRecorded",
            Some(f.step_number.to_string()),
            format!(
                "{} step {} by {}; next {}",
                f.step_type, f.step_number, f.model, f.next_action
            ),
        ),
        _ => other(),
    }
}

/// The reasoning engine's facts. Any other fact says nothing here (`deliberation_change` sends none).
fn agent_change(fact: &Fact) -> Said {
    match fact {
        Fact::AgentRunStarted(f) => (
            "AgentRunStarted",
            None,
            format!(
                "run started with {} tool(s), at most {} model call(s)",
                f.tools.len(),
                f.max_iterations
            ),
        ),
        Fact::AgentModelRequested(f) => (
            "AgentModelRequested",
            Some(f.iteration.to_string()),
            format!("model asked with {} message(s)", f.messages),
        ),
        Fact::AgentModelResponded(f) => (
            "AgentModelResponded",
            Some(f.iteration.to_string()),
            if f.tool_calls.is_empty() {
                format!("{} answered", f.model)
            } else {
                format!("{} called {}", f.model, f.tool_calls.join(", "))
            },
        ),
        Fact::AgentModelFailed(f) => (
            "AgentModelFailed",
            Some(f.iteration.to_string()),
            "the model call failed".to_owned(),
        ),
        Fact::AgentToolRequested(f) => (
            "AgentToolRequested",
            Some(f.call_id.clone()),
            format!("{} requested", f.tool),
        ),
        Fact::AgentToolReturned(f) => (
            "AgentToolReturned",
            Some(f.call_id.clone()),
            format!(
                "{} {}{} after {} attempt(s)",
                f.tool,
                f.status,
                f.error_code
                    .as_ref()
                    .map_or_else(String::new, |c| format!(" ({c})")),
                f.attempts
            ),
        ),
        Fact::AgentBreakerTripped(f) => (
            "AgentBreakerTripped",
            None,
            format!(
                "{} failed {} times in a row with {}",
                f.tool, f.failures, f.error_code
            ),
        ),
        Fact::AgentIntentDetected(f) => (
            "AgentIntentDetected",
            Some(f.iteration.to_string()),
            format!("intent {} ({:.2})", f.intent, f.score),
        ),
        Fact::AgentNudged(f) => (
            "AgentNudged",
            Some(f.iteration.to_string()),
            "nudged to act on its plan".to_owned(),
        ),
        Fact::AgentRunEnded(f) => (
            "AgentRunEnded",
            None,
            format!(
                "run ended {} after {} model call(s)",
                f.status, f.iterations
            ),
        ),
        _ => other(),
    }
}

/// The timeline as text, one line per call.
#[must_use]
pub fn render_text(entries: &[TimelineEntry]) -> String {
    let mut out = String::new();
    for e in entries {
        let verdict = e
            .reexecution
            .as_deref()
            .map_or_else(String::new, |v| format!("  [{v}]"));
        out.push_str(&format!(
            "{:>5}  {}  {:<20} {:<8} {}{verdict}\n",
            e.seq,
            e.recorded_at,
            e.tool,
            e.status,
            crate::export::single_line(&e.summary)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::one_line;

    #[test]
    fn a_result_reads_in_one_line_with_long_lists_counted() {
        let result = json!({"framework": "root-cause-analysis", "alternatives": ["a", "b"],
                            "executionOrder": (0..17).map(|k| format!("p-{k}")).collect::<Vec<_>>(),
                            "nested": {"ids": [1, 2, 3, 4, 5, 6, 7]}});
        let line = one_line(&result);
        assert!(!line.contains('\n'));
        assert!(line.contains(r#""alternatives":["a","b"]"#), "{line}");
        assert!(line.contains(r#""executionOrder":"17 items""#), "{line}");
        assert!(line.contains(r#""ids":"7 items""#), "{line}");
    }
}
