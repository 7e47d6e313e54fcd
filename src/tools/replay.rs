//! The review tools of the `audit` family: `diff_sessions` (and `replay_reasoning_session`,
//! once decisions can read the log).

use serde_json::Value;

use super::catalog::{Effect, ToolEntry, entry};
use crate::app::replay::{DiffSessionsArgs, DiffSessionsOutput};

/// The text block of `diff_sessions`: the unified-diff-like rendering.
fn diff_text(body: &Value) -> String {
    body.get("text")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

pub(super) fn entries() -> Vec<ToolEntry> {
    vec![entry::<DiffSessionsArgs, DiffSessionsOutput>(
        "audit",
        "diff_sessions",
        "Diff Sessions",
        "Compare two thinking sessions (e.g. two runs of the same task): main-line thoughts \
         aligned by text (added, removed, changed), branches found in only one, tag changes, and \
         whether the conclusion (the final thought with nextThoughtNeeded=false) differs. \
         Returns the diff as JSON and as unified-diff-like text (- is session_a, + is \
         session_b).",
        Effect::Reads,
        diff_text,
    )]
}
