//! A memory owner's history as the log recorded it: every version stored or superseded, soft
//! deletes and erasures (hard deletes and `erase --user-id`, with the erasure's reason), read
//! from stored events one at a time, so a caller can feed it from any scan of the log (the
//! `ledger://memories/{userId}` resource between the writer's batches, the reviewer's page
//! beside the writer). The projection keeps only each memory's current version; the versions
//! before it live in the log, and this reads them back. Nothing here touches disk.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::events::SessionId;

/// One change to a memory.
#[derive(Debug, Clone)]
pub struct MemoryChange {
    pub seq: u64,
    pub recorded_at: String,
    pub principal: String,
    pub session: Option<SessionId>,
    pub memory_id: String,
    /// `MemoryStored`, `MemorySuperseded`, `MemorySoftDeleted` or `MemoryErased`.
    pub kind: String,
    /// The version this change made (stored: 1), or how many it had (erased).
    pub version: Option<u64>,
    /// The content this change recorded, if any: its text, or `None` when it is gone.
    pub content: Option<Option<String>>,
    /// What else it recorded (strength, salience, sectors, versions), in a line.
    pub detail: String,
    /// The erasure's reason, for an erasure.
    pub reason: Option<String>,
}

/// The owners seen and, for the owner asked about, every change to their memories.
#[derive(Debug, Clone, Default)]
pub struct MemoryHistory {
    /// Owner → changes recorded, for every owner the reader may read.
    pub owners: BTreeMap<String, usize>,
    /// The asked owner's changes, in the order visited.
    pub changes: Vec<MemoryChange>,
    owner: Option<String>,
}

const CHANGES: &[&str] = &[
    "MemoryStored",
    "MemorySuperseded",
    "MemorySoftDeleted",
    "MemoryErased",
];

impl MemoryHistory {
    /// A history of `owner`'s memories (or of no one's: the owners alone).
    pub fn of(owner: Option<String>) -> Self {
        Self {
            owner,
            ..Self::default()
        }
    }

    /// Takes in one stored event (`seq`, its JSON): the memory changes of owners `may_read`
    /// admits; `text` reads a commitment's text (`None`: erased or lost).
    pub fn visit(
        &mut self,
        seq: u64,
        event: &Value,
        may_read: &dyn Fn(&str) -> bool,
        text: &mut dyn FnMut(&str) -> Result<Option<String>, String>,
    ) -> Result<(), String> {
        let Some(facts) = event.get("facts").and_then(Value::as_array) else {
            return Ok(());
        };
        let reason = facts.iter().find_map(|f| {
            (f["type"] == "TextsErased")
                .then(|| f["reason"].as_str().unwrap_or_default().to_owned())
        });
        for fact in facts {
            let kind = fact["type"].as_str().unwrap_or_default();
            if !CHANGES.contains(&kind) {
                continue;
            }
            let user = fact["userId"].as_str().unwrap_or_default();
            if !may_read(user) {
                continue;
            }
            *self.owners.entry(user.to_owned()).or_default() += 1;
            if self.owner.as_deref() != Some(user) {
                continue;
            }
            let content = match fact
                .pointer("/content/textCommitment")
                .and_then(Value::as_str)
            {
                None => None,
                Some(c) => Some(text(c)?),
            };
            let detail = [
                "strength",
                "salience",
                "primarySector",
                "sectors",
                "versions",
            ]
            .iter()
            .filter_map(|k| {
                fact.get(*k)
                    .filter(|v| !v.is_null())
                    .map(|v| format!("{k} {v}"))
            })
            .collect::<Vec<_>>()
            .join(", ");
            self.changes.push(MemoryChange {
                seq,
                recorded_at: event["recordedAt"].as_str().unwrap_or_default().to_owned(),
                principal: event
                    .pointer("/actor/principal")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                session: event
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .and_then(SessionId::parse),
                memory_id: fact["memoryId"].as_str().unwrap_or_default().to_owned(),
                kind: kind.to_owned(),
                version: match kind {
                    "MemoryStored" => Some(1),
                    _ => fact
                        .get("version")
                        .or_else(|| fact.get("versions"))
                        .and_then(Value::as_u64),
                },
                content,
                detail,
                reason: (kind == "MemoryErased").then(|| reason.clone()).flatten(),
            });
        }
        Ok(())
    }

    /// The asked owner's changes oldest first, by memory in the order stored, as the resource
    /// shows them.
    pub fn document(&self) -> Value {
        let mut memories: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
        let mut order: Vec<&str> = Vec::new();
        let mut changes: Vec<&MemoryChange> = self.changes.iter().collect();
        changes.sort_by_key(|c| c.seq);
        for c in changes {
            let mut change = json!({
                "seq": c.seq,
                "recordedAt": c.recorded_at,
                "change": match c.kind.as_str() {
                    "MemoryStored" => "stored",
                    "MemorySuperseded" => "superseded",
                    "MemorySoftDeleted" => "softDeleted",
                    _ => "erased",
                },
                "principal": c.principal,
                "sessionId": c.session.as_ref().map(SessionId::as_str),
            });
            if let Some(v) = c.version {
                change["version"] = json!(v);
            }
            match &c.content {
                Some(Some(text)) => change["content"] = json!(text),
                Some(None) => change["contentErased"] = json!(true),
                None => {}
            }
            if !c.detail.is_empty() {
                change["detail"] = json!(c.detail);
            }
            if let Some(reason) = &c.reason {
                change["reason"] = json!(reason);
            }
            if !memories.contains_key(c.memory_id.as_str()) {
                order.push(&c.memory_id);
            }
            memories.entry(&c.memory_id).or_default().push(change);
        }
        json!({
            "userId": self.owner,
            "memories": order
                .into_iter()
                .map(|id| json!({ "memoryId": id, "changes": memories.remove(id) }))
                .collect::<Vec<_>>(),
        })
    }
}
