//! Comparing a re-decided call with its record.
//!
//! A re-decision commits its texts under salts of its own (drawn from a stand-in seed: the
//! call's secret seed is never recorded), so its commitments differ from the recorded ones even
//! when nothing else does. They are paired by position (the same argument in
//! the re-derived and the recorded `call.arguments`) and replaced by the recorded ones wherever
//! they appear (facts, body) before anything is compared or hashed.
//!
//! Must not know: where events come from, or which tool was called.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

use super::{Divergence, ReplayError, text_ref};
use crate::events::{Event, OutcomeStatus};
use crate::ledger::Draft;
use crate::ledger::hash::response_digest;

/// One member that differs, by its path (`facts[1].totalThoughts`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FieldDifference {
    pub path: String,
    /// The member as recorded: any JSON value (a string, a number, an object, null, …).
    pub recorded: Value,
    /// The member as decided again: any JSON value.
    pub rederived: Value,
}

/// `None` when the re-decided `draft` reproduces `event`, else how it differs.
/// `recorded_body` is the response body itself when the event kept it; `recorded_text` reads a
/// recorded commitment's text back (None when erased or missing).
pub(super) fn compare(
    event: &Event,
    draft: Draft,
    recorded_body: Option<Value>,
    recorded_text: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Divergence>, ReplayError> {
    let mut fresh_to_recorded = HashMap::new();
    pair_commitments(
        &draft.call.arguments,
        &event.call.arguments,
        &mut fresh_to_recorded,
    );
    // Texts the decision derived itself (a node's redacted content, a generated question) are
    // paired by position in the facts, but only when the re-derived text is the recorded one
    // (or the recorded one is no longer there to compare): a changed derivation diverges.
    let fresh_texts: HashMap<&str, &str> = draft
        .texts
        .iter()
        .map(|t| (t.text_ref.commitment.as_str(), t.record.text.as_str()))
        .collect();
    let draft_facts = substitute(
        serde_json::to_value(&draft.facts).unwrap_or(Value::Null),
        &fresh_to_recorded,
    );
    let recorded_facts = serde_json::to_value(&event.facts).unwrap_or(Value::Null);
    let mut derived = HashMap::new();
    pair_commitments(&draft_facts, &recorded_facts, &mut derived);
    for (fresh, recorded) in derived {
        let Some(text) = fresh_texts.get(fresh.as_str()) else {
            continue;
        };
        if recorded_text(&recorded).is_none_or(|r| r == *text) {
            fresh_to_recorded.entry(fresh).or_insert(recorded);
        }
    }
    let swap = |value: Value| substitute(value, &fresh_to_recorded);
    let body = swap(draft.body);
    let arguments = recorded_in_clear(
        swap(draft.call.arguments),
        &event.call.arguments,
        &fresh_texts,
    );
    let facts = swap(serde_json::to_value(&draft.facts).unwrap_or(Value::Null));
    let rederived_digest = response_digest(&body)?;

    let mut differences = Vec::new();
    let members = [
        ("status", status(event.outcome.status), status(draft.status)),
        (
            "error",
            json!(event.outcome.error),
            json!(draft.error.as_ref()),
        ),
        (
            "sessionId",
            json!(event.session_id),
            json!(draft.session_id),
        ),
        ("call.arguments", event.call.arguments.clone(), arguments),
        (
            "facts",
            serde_json::to_value(&event.facts).unwrap_or(Value::Null),
            facts,
        ),
        // An input recorded as received: the rebuilt command must carry it.
        ("trace", json!(event.trace), json!(draft.trace)),
    ];
    for (path, recorded, rederived) in members {
        field_differences(path.to_owned(), &recorded, &rederived, &mut differences);
    }
    if let Some(recorded) = recorded_body {
        field_differences("body".to_owned(), &recorded, &body, &mut differences);
    }
    if rederived_digest == event.outcome.response_digest && differences.is_empty() {
        return Ok(None);
    }
    Ok(Some(Divergence {
        recorded_digest: event.outcome.response_digest.clone(),
        rederived_digest,
        recorded_status: status_name(event.outcome.status),
        rederived_status: status_name(draft.status),
        differences,
        rederived_body: body,
    }))
}

fn status(s: OutcomeStatus) -> Value {
    serde_json::to_value(s).unwrap_or(Value::Null)
}

fn status_name(s: OutcomeStatus) -> String {
    status(s).as_str().unwrap_or_default().to_owned()
}

/// Pairs each text commitment of `fresh` with the one at the same place in `recorded`.
fn pair_commitments(fresh: &Value, recorded: &Value, out: &mut HashMap<String, String>) {
    if let (Some(f), Some(r)) = (text_ref(fresh), text_ref(recorded)) {
        out.insert(f.to_owned(), r.to_owned());
        return;
    }
    match (fresh, recorded) {
        (Value::Object(f), Value::Object(r)) => {
            for (name, value) in f {
                if let Some(other) = r.get(name) {
                    pair_commitments(value, other, out);
                }
            }
        }
        (Value::Array(f), Value::Array(r)) => {
            for (a, b) in f.iter().zip(r) {
                pair_commitments(a, b, out);
            }
        }
        _ => {}
    }
}

/// The re-derived `arguments` with each fresh commitment that `recorded` holds in clear, as the
/// very string it commits to, given back as that string: the same argument, recorded before its
/// field was declared a text (`decompose_problem`'s `context.goals` was kept in clear until its
/// shape was derived from its type, which commits every free text of the shared context).
fn recorded_in_clear(arguments: Value, recorded: &Value, fresh: &HashMap<&str, &str>) -> Value {
    if let (Some(commitment), Value::String(clear)) = (text_ref(&arguments), recorded)
        && fresh.get(commitment) == Some(&clear.as_str())
    {
        return recorded.clone();
    }
    match (arguments, recorded) {
        (Value::Object(obj), Value::Object(r)) => Value::Object(
            obj.into_iter()
                .map(|(k, v)| {
                    let v = match r.get(&k) {
                        Some(other) => recorded_in_clear(v, other, fresh),
                        None => v,
                    };
                    (k, v)
                })
                .collect(),
        ),
        (Value::Array(items), Value::Array(r)) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| match r.get(i) {
                    Some(other) => recorded_in_clear(v, other, fresh),
                    None => v,
                })
                .collect(),
        ),
        (other, _) => other,
    }
}

/// `value` with every text reference to a fresh commitment replaced by its recorded twin.
fn substitute(value: Value, map: &HashMap<String, String>) -> Value {
    if let Some(recorded) = text_ref(&value).and_then(|c| map.get(c)) {
        return json!({ "textCommitment": recorded });
    }
    match value {
        Value::Object(obj) => Value::Object(
            obj.into_iter()
                .map(|(k, v)| (k, substitute(v, map)))
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| substitute(v, map)).collect())
        }
        other => other,
    }
}

/// The leaves where `recorded` and `rederived` differ, by path; a whole value where their shapes
/// differ.
fn field_differences(
    path: String,
    recorded: &Value,
    rederived: &Value,
    out: &mut Vec<FieldDifference>,
) {
    if recorded == rederived {
        return;
    }
    match (recorded, rederived) {
        (Value::Object(a), Value::Object(b)) => {
            let mut names: Vec<&String> = a.keys().chain(b.keys()).collect();
            names.sort();
            names.dedup();
            for name in names {
                field_differences(
                    format!("{path}.{name}"),
                    a.get(name).unwrap_or(&Value::Null),
                    b.get(name).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                field_differences(format!("{path}[{i}]"), x, y, out);
            }
        }
        _ => out.push(FieldDifference {
            path,
            recorded: recorded.clone(),
            rederived: rederived.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_commitments_are_mapped_back_wherever_they_appear() {
        let mut map = HashMap::new();
        pair_commitments(
            &json!({"thought": {"textCommitment": "new"}, "n": 1}),
            &json!({"thought": {"textCommitment": "old"}, "n": 2}),
            &mut map,
        );
        let swapped = substitute(
            json!([{"type": "ThoughtRecorded", "text": {"textCommitment": "new"}}]),
            &map,
        );
        assert_eq!(swapped[0]["text"]["textCommitment"], "old");
    }

    #[test]
    fn a_text_recorded_in_clear_matches_its_fresh_commitment() {
        let fresh = HashMap::from([("c1", "ship it"), ("c2", "other")]);
        let recorded =
            json!({"context": {"goals": ["ship it", "later"]}, "problem": {"textCommitment": "p"}});
        let rederived = json!({"context": {"goals": [{"textCommitment": "c1"}, {"textCommitment": "c2"}]}, "problem": {"textCommitment": "p"}});
        let given_back = recorded_in_clear(rederived, &recorded, &fresh);
        assert_eq!(given_back["context"]["goals"][0], "ship it");
        assert_eq!(
            given_back["context"]["goals"][1]["textCommitment"], "c2",
            "a different text stays a difference"
        );
        assert_eq!(given_back["problem"]["textCommitment"], "p");
    }

    #[test]
    fn differences_are_named_by_path() {
        let mut out = Vec::new();
        field_differences(
            "facts".into(),
            &json!([{"a": 1, "b": [1, 2]}, {"c": true}]),
            &json!([{"a": 1, "b": [1, 3]}, {"c": true, "d": 0}]),
            &mut out,
        );
        let paths: Vec<&str> = out.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["facts[0].b[1]", "facts[1].d"]);
        out.clear();
        field_differences("x".into(), &json!([1]), &json!([1, 2]), &mut out);
        assert_eq!(out.len(), 1);
    }
}
