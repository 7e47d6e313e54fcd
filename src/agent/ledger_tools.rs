//! `LedgerTools`: thinkledger's own tools as the engine's [`ToolExecutor`]. Each call goes
//! through an in-process `ThinkServer` exactly like a client's `tools/call`: it is decided,
//! recorded as its own ledger event (in the run's session, when the tool acts on one) and
//! answered with its `seq` and event hash, which the run's `AgentToolReturned` fact names.

use rmcp::model::CallToolResult;
use serde_json::Value;

use super::error::ReasoningError;
use super::traits::{BoxFuture, ToolDefinition, ToolExecutor, ToolOutcome, ToolRecord};
use crate::events::Actor;
use crate::tools::{Call, Catalog, EnabledToolsets, Reporter, SessionSlot, ThinkServer, Toolsets};

/// thinkledger's tools, called through the ledger.
pub struct LedgerTools {
    server: ThinkServer,
    actor: Actor,
    slot: SessionSlot,
    toolsets: EnabledToolsets,
    definitions: Vec<ToolDefinition>,
}

impl LedgerTools {
    /// The tools named in `names` (each must be one of `catalog`'s), called as `actor` in the
    /// session `slot` holds.
    pub fn new(
        server: ThinkServer,
        catalog: &Catalog,
        names: &[String],
        actor: Actor,
        slot: SessionSlot,
    ) -> Result<Self, String> {
        let mut definitions = Vec::new();
        for name in names {
            let entry = catalog.entry(name).ok_or_else(|| {
                let known: Vec<&str> = catalog
                    .all_entries()
                    .iter()
                    .map(|e| e.tool.name.as_ref())
                    .collect();
                format!(
                    "there is no tool named \"{name}\"; the tools are: {}",
                    known.join(", ")
                )
            })?;
            definitions.push(ToolDefinition {
                name: name.clone(),
                description: entry
                    .tool
                    .description
                    .as_deref()
                    .unwrap_or_default()
                    .to_owned(),
                parameters: Value::Object((*entry.tool.input_schema).clone()),
            });
        }
        Ok(Self {
            server,
            actor,
            slot,
            toolsets: EnabledToolsets::new(Toolsets::all()),
            definitions,
        })
    }
}

/// The outcome of a recorded call: what the tool answered for the model (its body without the
/// ledger's receipt, which goes to the record instead), its status, code and record.
fn outcome_of(result: &CallToolResult) -> ToolOutcome {
    let text: String = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    let mut body = result
        .structured_content
        .clone()
        .or_else(|| serde_json::from_str::<Value>(&text).ok())
        .unwrap_or(Value::Null);
    let record = match (
        body.get("seq").and_then(Value::as_u64),
        body.get("eventHash").and_then(Value::as_str),
    ) {
        (Some(seq), Some(hash)) => Some(ToolRecord {
            seq,
            event_hash: hash.to_owned(),
        }),
        _ => None,
    };
    let shown = match &mut body {
        Value::Object(map) => {
            map.remove("seq");
            map.remove("eventHash");
            serde_json::to_string_pretty(&body).unwrap_or(text)
        }
        _ => text,
    };
    let outcome = if result.is_error == Some(true) {
        let code = body
            .get("code")
            .and_then(Value::as_str)
            .unwrap_or("tool_error")
            .to_owned();
        ToolOutcome::failed(code, shown)
    } else {
        ToolOutcome::succeeded(shown)
    };
    match record {
        Some(record) => outcome.recorded_as(record),
        None => outcome,
    }
}

impl ToolExecutor for LedgerTools {
    fn definitions(&self) -> Vec<ToolDefinition> {
        self.definitions.clone()
    }

    fn execute<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Result<ToolOutcome, ReasoningError>> {
        Box::pin(async move {
            let call = Call {
                tool: name.to_owned(),
                arguments: arguments.clone(),
                actor: self.actor.clone(),
                slot: self.slot.clone(),
                toolsets: self.toolsets.clone(),
                idempotency_key: None,
                reporter: Reporter::silent(),
                origin: Default::default(),
            };
            let result = self.server.call(call, None).await;
            Ok(outcome_of(&result))
        })
    }
}
