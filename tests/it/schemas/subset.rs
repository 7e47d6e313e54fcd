//! The validator the golden schemas are checked with: the one `verify-export` judges events
//! with (`thinkledger::audit::json_schema`), so a test and the verifier cannot disagree about
//! what a schema allows.

use serde_json::Value;
use thinkledger::audit::json_schema::Schema;

/// `Ok` when `instance` conforms to `schema`, else every violation, one per line.
pub fn validate(schema: &Value, instance: &Value) -> Result<(), String> {
    let violations = Schema::new(schema.clone()).violations(instance);
    if violations.is_empty() {
        return Ok(());
    }
    Err(violations
        .iter()
        .map(|v| format!("${}: {}", v.path, v.message))
        .collect::<Vec<_>>()
        .join("\n"))
}
