//! A page of a session's recorded calls, whatever their family: each call's row (seq, time,
//! tool, outcome with the refusal's code and message, principal, summary) and, folded under it,
//! the arguments and every fact the call recorded, with each referenced text resolved: shown,
//! marked as erased (with the erasure's seq and reason), or missing. Text a model wrote is
//! marked as model output with the model's name. The thoughts recorded on the page get a table
//! of their own. Rendering is generic over the stored JSON, so a new family's facts appear here
//! without a line of this file changing.
//!
//! Must not know: how the window was read (`read::call_window`), any family's rules.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use maud::{Markup, html};
use serde_json::Value;

use super::pages::when;
use super::read::{CallWindow, Erasure, RecordedCall, Shown};
use crate::events::Fact;
use crate::projections::Session;

/// Characters of one text shown on the page; the rest is in the audit export.
const MOST_TEXT_CHARS: usize = 4_000;

/// In a fact that names its `model`, the members holding text the model wrote (the rest are
/// the caller's words, the server's templates or structured values).
const MODEL_WRITTEN: &[&str] = &[
    "reply",
    "content",
    "response",
    "description",
    "suggestedCorrection",
    "biasType",
    "texts",
];

/// An erased text: says so, and why when the erasure recorded a reason.
pub(super) fn erased_mark(erasure: Option<&Erasure>) -> Markup {
    html! {
        span.erased {
            "[text erased"
            @if let Some(e) = erasure {
                " at seq " (e.seq)
                @if let Some(reason) = &e.reason { ": " (reason) }
            }
            "]"
        }
    }
}

/// A referenced text as the page shows it.
pub(super) fn text_of(texts: &HashMap<String, Shown>, commitment: &str) -> Markup {
    match texts.get(commitment) {
        Some(Shown::Text(text)) => {
            let cut = text.char_indices().nth(MOST_TEXT_CHARS).map(|(at, _)| at);
            html! {
                div.thought {
                    @match cut {
                        Some(at) => { (&text[..at]) span.note { " … (" (text[at..].chars().count()) " more characters in the audit export)" } },
                        None => (text),
                    }
                }
            }
        }
        Some(Shown::Erased(erasure)) => erased_mark(Some(erasure)),
        Some(Shown::Missing) | None => {
            html! { span.erased { "[text missing: run thinkledger verify]" } }
        }
    }
}

/// Characters of a thought in the thoughts table (the whole text is under its call).
const MOST_TABLE_CHARS: usize = 400;

/// A thought in the table: its start, with a link to the whole text under its call.
fn short_text(texts: &HashMap<String, Shown>, commitment: &str, seq: u64) -> Markup {
    match texts.get(commitment) {
        Some(Shown::Text(text)) if text.chars().count() > MOST_TABLE_CHARS => {
            let cut: String = text.chars().take(MOST_TABLE_CHARS).collect();
            html! { div.thought { (cut) "… " a href={ "#call-" (seq) } { "(whole text)" } } }
        }
        _ => text_of(texts, commitment),
    }
}

/// The pager of a window: previous, page n of m, next.
pub(super) fn pager(window: &CallWindow, base: &str) -> Markup {
    let pages = window.pages();
    html! {
        @if pages > 1 {
            p.pager {
                @if window.page > 0 { a rel="prev" href={ (base) "?page=" (window.page) } { "← earlier calls" } " · " }
                "page " (window.page + 1) " of " (pages) " (" (window.total) " calls)"
                @if window.page + 1 < pages { " · " a rel="next" href={ (base) "?page=" (window.page + 2) } { "later calls →" } }
            }
        }
    }
}

/// The thoughts recorded by the calls of the window; with the session's body at hand, each
/// with its tags as they stand now (else as recorded).
pub(super) fn thoughts(window: &CallWindow, body: Option<&Session>) -> Markup {
    let now: HashMap<u64, &[String]> = body
        .map(|s| {
            let (first, last) = (
                window.calls.first().map_or(0, |c| c.event.seq),
                window.calls.last().map_or(0, |c| c.event.seq),
            );
            s.thoughts
                .iter()
                .filter(|t| (first..=last).contains(&t.seq))
                .map(|t| (t.seq, t.tags.as_slice()))
                .collect()
        })
        .unwrap_or_default();
    let recorded: Vec<(u64, &crate::events::thinking::ThoughtRecorded)> = window
        .calls
        .iter()
        .flat_map(|c| {
            c.event.facts.iter().filter_map(move |f| match f {
                Fact::ThoughtRecorded(t) => Some((c.event.seq, t)),
                _ => None,
            })
        })
        .collect();
    let marks = |t: &crate::events::thinking::ThoughtRecorded| -> String {
        let mut parts = Vec::new();
        if t.is_revision || t.revises_thought.is_some() {
            parts.push(match t.revises_thought {
                Some(n) => format!("revises #{n}"),
                None => "revision".to_owned(),
            });
        }
        match (&t.branch_id, t.branch_from_thought) {
            (Some(id), Some(from)) => parts.push(format!("branch {id} from #{from}")),
            (Some(id), None) => parts.push(format!("on branch {id}")),
            _ => {}
        }
        if !t.next_thought_needed {
            parts.push("concludes".to_owned());
        }
        parts.join("; ")
    };
    html! {
        @if recorded.is_empty() {
            p.note { "No thoughts recorded on this page of calls." }
        } @else {
            table #thoughts {
                thead { tr { th { "Seq" } th { "#" } th { "Thought" } th { "Tags" } th { "Marks" } } }
                tbody {
                    @for (seq, t) in &recorded {
                        tr id={ "thought-" (seq) } {
                            td { (seq) }
                            td { (t.thought_number) "/" (t.total_thoughts) }
                            td { (short_text(&window.texts, &t.text.commitment, *seq)) }
                            td { @for tag in now.get(seq).copied().unwrap_or(&t.tags) { span.tag { (tag) } } }
                            td { (marks(t)) }
                        }
                    }
                }
            }
        }
    }
}

/// Every call of the window, each with its arguments and facts folded under its row.
pub(super) fn calls(window: &CallWindow) -> Markup {
    html! {
        table #timeline {
            thead { tr { th { "Seq" } th { "Recorded" } th { "Tool" } th { "Outcome" } th { "Principal" } th { "What it did" } } }
            tbody {
                @for call in &window.calls {
                    (call_rows(call, &window.texts))
                }
            }
        }
    }
}

fn call_rows(call: &RecordedCall, texts: &HashMap<String, Shown>) -> Markup {
    let e = &call.row.entry;
    // A text the call references twice (an argument and the fact that records it) is shown
    // once.
    let shown = Shown1 {
        texts,
        seen: RefCell::new(HashSet::new()),
    };
    let shown = &shown;
    let error = call.event.outcome.error.as_ref();
    html! {
        tr id={ "call-" (e.seq) } class=[(e.status != "ok").then_some("refused")] {
            td { a href={ "#call-" (e.seq) } { (e.seq) } }
            td { (when(&e.recorded_at)) }
            td { code { (e.tool) } }
            td {
                (e.status)
                @if let Some(code) = &e.error_code { ": " code { (code) } }
            }
            td { (call.row.principal) " " span.note { "(" (call.event.actor.transport) ")" } }
            td {
                (e.summary)
                @if let Some(error) = error { div.refused { (error.message) } }
                details {
                    summary { "Recorded arguments and facts" }
                    h4 { "Arguments" }
                    (value_view(call.stored.pointer("/call/arguments").unwrap_or(&Value::Null), shown, None))
                    @if let Some(facts) = call.stored.get("facts").and_then(Value::as_array) {
                        @for fact in facts {
                            (fact_view(fact, shown))
                        }
                    }
                    p.note { "Provenance: " (call.event.provenance.kind) " " code { (call.event.provenance.name) } " " (call.event.provenance.version) }
                    @if let Some(trace) = &call.event.trace {
                        // The caller's trace (docs/ledger-format.md §3.7): what joins this call
                        // with the agent's trace and the server's span.
                        p.note.trace { "Trace " code { (trace.trace_id()) } ", caller's span " code { (trace.parent_id()) } }
                    }
                }
            }
        }
    }
}

/// The texts of one call as the page shows them, each once.
struct Shown1<'a> {
    texts: &'a HashMap<String, Shown>,
    seen: RefCell<HashSet<String>>,
}

fn fact_view(fact: &Value, texts: &Shown1<'_>) -> Markup {
    let kind = fact.get("type").and_then(Value::as_str).unwrap_or("fact");
    let model = fact.get("model").and_then(Value::as_str);
    let members: Vec<(&String, &Value)> = fact
        .as_object()
        .map(|m| m.iter().filter(|(k, _)| *k != "type").collect())
        .unwrap_or_default();
    html! {
        div.fact {
            h4 { (kind) @if let Some(model) = model { " " span.tag.model { "model " (model) } } }
            table.kv {
                @for (key, value) in &members {
                    tr {
                        th { (key) }
                        td {
                            @if let Some(model) = model.filter(|_| MODEL_WRITTEN.contains(&key.as_str())) {
                                div.note.model-output { "model output (" (model) ")" }
                            }
                            (value_view(value, texts, Some(key)))
                        }
                    }
                }
            }
        }
    }
}

/// A recorded value: a text reference as its text, an object as a table, an array as a list.
fn value_view(value: &Value, texts: &Shown1<'_>, key: Option<&str>) -> Markup {
    match value {
        Value::Object(map) if map.len() == 1 && map.contains_key("textCommitment") => {
            let commitment = map["textCommitment"].as_str().unwrap_or_default();
            if key == Some("vector") {
                return html! { span.note { "[a stored embedding vector]" } };
            }
            if !texts.seen.borrow_mut().insert(commitment.to_owned()) {
                return html! { span.note { "[the same text as above]" } };
            }
            text_of(texts.texts, commitment)
        }
        Value::Object(map) if map.is_empty() => html! { span.note { "{}" } },
        Value::Object(map) => html! {
            table.kv {
                @for (k, v) in map {
                    tr { th { (k) } td { (value_view(v, texts, Some(k))) } }
                }
            }
        },
        Value::Array(items) if items.is_empty() => html! { span.note { "[]" } },
        Value::Array(items) if items.iter().all(|v| !v.is_object() && !v.is_array()) => {
            html! { (items.iter().map(scalar).collect::<Vec<_>>().join(", ")) }
        }
        Value::Array(items) => html! {
            ol { @for item in items { li { (value_view(item, texts, key)) } } }
        },
        Value::Null => html! { span.note { "—" } },
        other => html! { (scalar(other)) },
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
