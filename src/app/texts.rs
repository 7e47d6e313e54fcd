//! How a call's arguments are recorded: known fields kept, free text replaced by a salted
//! commitment (its text stored beside the event, erasable), oversized text omitted.

use serde_json::{Map, Value, json};

use super::call::ArgsShape;
use super::draws::Draws;
use crate::events::TextRef;
use crate::ledger::canonical::canonical_bytes;
use crate::ledger::hash::text_commitment;
use crate::ledger::{NewText, TextRecord};

/// The text rules of one call, and where its salts come from.
#[derive(Debug, Clone, Copy)]
pub struct TextPolicy<'a> {
    pub max_text_bytes: usize,
    /// The decision's draws: each commitment takes the next salt.
    pub draws: &'a Draws,
}

/// A text field over the limit.
#[derive(Debug, Clone)]
pub struct Oversized {
    pub field: String,
    pub bytes: usize,
}

impl TextPolicy<'_> {
    /// Commits `text`: the decision's next salt, the commitment, and the record to store
    /// beside the event. (A call without randomness never gets here: it is refused first.)
    pub fn commit(&self, text: &str) -> (TextRef, NewText) {
        let salt = self.draws.salt();
        let text_ref = TextRef {
            commitment: text_commitment(&salt, text),
        };
        let new = NewText {
            text_ref: text_ref.clone(),
            record: TextRecord {
                salt,
                text: text.to_owned(),
            },
        };
        (text_ref, new)
    }

    /// The whole raw arguments as one committed text: for calls whose structure is unknown, so
    /// nothing they carry lands in the event in clear.
    pub fn opaque(&self, raw: &str, texts: &mut Vec<NewText>) -> Value {
        if raw.len() > self.max_text_bytes.saturating_mul(2) {
            return json!({ "omitted": { "reason": "too_large", "bytes": raw.len() } });
        }
        let (text_ref, new) = self.commit(raw);
        texts.push(new);
        json!({ "raw": text_ref })
    }

    /// The arguments to record: only the fields `shape` records; the strings at its text paths
    /// committed.
    /// Fails, pushing nothing, when a text field is over the limit. A value that cannot be
    /// hashed portably (an integer beyond 2^53) makes the whole call opaque.
    pub fn record(
        &self,
        args: &Map<String, Value>,
        shape: &ArgsShape,
        texts: &mut Vec<NewText>,
    ) -> Result<Value, Oversized> {
        for field in &shape.texts {
            if let Some(oversized) = self.oversized(args, field) {
                return Err(oversized);
            }
        }
        let mut local = Vec::new();
        let recorded = self.build(args, shape, &mut local, false);
        if canonical_bytes(&recorded).is_err() {
            return Ok(self.opaque(&Value::Object(args.clone()).to_string(), texts));
        }
        texts.extend(local);
        Ok(recorded)
    }

    /// Like [`TextPolicy::record`], for a call refused for oversized text: oversized fields are
    /// recorded as `{"omitted": {"reason": "too_large", "bytes": n}}` and not stored at all.
    pub fn record_without_texts(
        &self,
        args: &Map<String, Value>,
        shape: &ArgsShape,
        texts: &mut Vec<NewText>,
    ) -> Value {
        let mut local = Vec::new();
        let recorded = self.build(args, shape, &mut local, true);
        if canonical_bytes(&recorded).is_err() {
            return json!({ "omitted": { "reason": "not_canonicalizable" } });
        }
        texts.extend(local);
        recorded
    }

    /// The first text at `path` over the limit, with its concrete path (`claims[2].text`).
    fn oversized(&self, args: &Map<String, Value>, path: &str) -> Option<Oversized> {
        let (key, rest) = split_path(path);
        let mut found = None;
        if let Some(value) = args.get(key) {
            visit(value, rest, key.to_owned(), &mut |at, s| {
                if found.is_none() && s.len() > self.max_text_bytes {
                    found = Some(Oversized {
                        field: at,
                        bytes: s.len(),
                    });
                }
            });
        }
        found
    }

    fn build(
        &self,
        args: &Map<String, Value>,
        shape: &ArgsShape,
        texts: &mut Vec<NewText>,
        omit_oversized: bool,
    ) -> Value {
        let mut out = Map::new();
        for (key, value) in args {
            if !shape.records(key) {
                continue;
            }
            let mut recorded = value.clone();
            for path in &shape.texts {
                let (field, rest) = split_path(path);
                if field == key {
                    self.commit_at(&mut recorded, rest, texts, omit_oversized);
                }
            }
            out.insert(key.clone(), recorded);
        }
        Value::Object(out)
    }

    /// Replaces the strings at `rest` (relative to `value`) by their commitments.
    fn commit_at(
        &self,
        value: &mut Value,
        rest: &str,
        texts: &mut Vec<NewText>,
        omit_oversized: bool,
    ) {
        if rest.is_empty() {
            if let Value::String(s) = value {
                *value = if omit_oversized && s.len() > self.max_text_bytes {
                    json!({ "omitted": { "reason": "too_large", "bytes": s.len() } })
                } else {
                    let (text_ref, new) = self.commit(s);
                    texts.push(new);
                    serde_json::to_value(text_ref).unwrap_or(Value::Null)
                };
            }
        } else if let Some(inner) = rest.strip_prefix("[]") {
            if let Value::Array(items) = value {
                for item in items {
                    self.commit_at(item, inner, texts, omit_oversized);
                }
            }
        } else if let Some(inner) = rest.strip_prefix('.') {
            let (field, after) = split_path(inner);
            if let Value::Object(map) = value
                && let Some(child) = map.get_mut(field)
            {
                self.commit_at(child, after, texts, omit_oversized);
            }
        }
    }
}

/// `claims[].text` → (`claims`, `[].text`); `goal` → (`goal`, ``).
fn split_path(path: &str) -> (&str, &str) {
    let end = path.find(['[', '.']).unwrap_or(path.len());
    path.split_at(end)
}

/// Calls `found` with every string at `rest` under `value`, and its concrete path.
fn visit(value: &Value, rest: &str, at: String, found: &mut dyn FnMut(String, &str)) {
    if rest.is_empty() {
        if let Value::String(s) = value {
            found(at, s);
        }
    } else if let Some(inner) = rest.strip_prefix("[]") {
        if let Value::Array(items) = value {
            for (i, item) in items.iter().enumerate() {
                visit(item, inner, format!("{at}[{i}]"), found);
            }
        }
    } else if let Some(inner) = rest.strip_prefix('.') {
        let (field, after) = split_path(inner);
        if let Some(child) = value.get(field) {
            visit(child, after, format!("{at}.{field}"), found);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeded() -> Draws {
        Draws::new(&crate::effects::Seed::new([1; 32]))
    }

    fn shape(fields: &[&str], texts: &[&str]) -> ArgsShape {
        ArgsShape {
            fields: fields.iter().map(|f| (*f).to_owned()).collect(),
            texts: texts.iter().map(|t| (*t).to_owned()).collect(),
            unrecorded: Vec::new(),
        }
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn text_fields_are_committed_and_unknown_fields_dropped() {
        let draws = seeded();
        let policy = TextPolicy {
            max_text_bytes: 10,
            draws: &draws,
        };
        let mut texts = Vec::new();
        let recorded = policy
            .record(
                &args(json!({"thought": "secret", "n": 1, "junk": "x"})),
                &shape(&["thought", "n"], &["thought"]),
                &mut texts,
            )
            .unwrap();
        assert_eq!(texts.len(), 1);
        assert_eq!(texts[0].record.text, "secret");
        assert_eq!(
            recorded["thought"]["textCommitment"],
            texts[0].text_ref.commitment
        );
        assert_eq!(recorded["n"], 1);
        assert!(recorded.get("junk").is_none());
        assert!(!recorded.to_string().contains("secret"));
    }

    #[test]
    fn nested_text_paths_are_committed() {
        let draws = seeded();
        let policy = TextPolicy {
            max_text_bytes: 8,
            draws: &draws,
        };
        let mut texts = Vec::new();
        let a = args(json!({
            "claims": [{"text": "one", "criticality": "high"}, {"text": "two"}],
            "constraints": ["c1", 5],
            "goal": "g"
        }));
        let paths = ["claims[].text", "constraints[]", "goal"];
        let recorded = policy
            .record(
                &a,
                &shape(&["claims", "constraints", "goal"], &paths),
                &mut texts,
            )
            .unwrap();
        assert_eq!(texts.len(), 4);
        assert!(recorded["claims"][0]["text"]["textCommitment"].is_string());
        assert_eq!(recorded["claims"][0]["criticality"], "high");
        assert!(recorded["constraints"][0]["textCommitment"].is_string());
        assert_eq!(recorded["constraints"][1], 5);
        assert!(!recorded.to_string().contains("one"));
        let long = args(json!({"claims": [{"text": "ok"}, {"text": "far too long"}]}));
        let err = policy
            .record(
                &long,
                &shape(&["claims"], &["claims[].text"]),
                &mut Vec::new(),
            )
            .unwrap_err();
        assert_eq!(err.field, "claims[1].text");
    }

    #[test]
    fn oversized_text_is_refused_and_never_stored() {
        let draws = seeded();
        let policy = TextPolicy {
            max_text_bytes: 3,
            draws: &draws,
        };
        let mut texts = Vec::new();
        let a = args(json!({"thought": "toolong"}));
        let err = policy
            .record(&a, &shape(&["thought"], &["thought"]), &mut texts)
            .unwrap_err();
        assert_eq!((err.field.as_str(), err.bytes), ("thought", 7));
        assert!(texts.is_empty());
        let recorded =
            policy.record_without_texts(&a, &shape(&["thought"], &["thought"]), &mut texts);
        assert_eq!(recorded["thought"]["omitted"]["bytes"], 7);
        assert!(texts.is_empty());
    }

    #[test]
    fn values_that_cannot_be_hashed_make_the_call_opaque() {
        let draws = seeded();
        let policy = TextPolicy {
            max_text_bytes: 100,
            draws: &draws,
        };
        let mut texts = Vec::new();
        let recorded = policy
            .record(
                &args(json!({"n": 9007199254740993u64})),
                &shape(&["n"], &[]),
                &mut texts,
            )
            .unwrap();
        assert!(recorded["raw"]["textCommitment"].is_string());
        assert_eq!(texts.len(), 1);
    }
}
