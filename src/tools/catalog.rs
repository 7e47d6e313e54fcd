//! The tool catalog: every tool's MCP definition, grouped by family, and the `--toolsets`
//! choice of which families are listed. Every schema is listed in its portable form
//! ([`portable`]).

mod portable;

use std::sync::Arc;

use std::any::Any;

use rmcp::handler::server::tool::{schema_for_output, schema_for_type};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use rmcp::schemars::JsonSchema;
use serde_json::{Value, json};

use super::{audit, deliberation, maxential, replay, thinking};
use portable::{Side, make_portable};

/// One tool as listed to clients.
pub struct ToolEntry {
    /// The family `--toolsets` selects it by.
    pub family: &'static str,
    pub tool: Tool,
    /// The text content block of a successful result (structured content carries the rest).
    pub render_text: fn(&Value) -> String,
}

/// The families a server offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolsets(Vec<String>);

/// A `--toolsets` name that is not a family.
#[derive(Debug, thiserror::Error)]
#[error("unknown toolset \"{name}\"; choose from: all, {}", FAMILIES.join(", "))]
pub struct UnknownToolset {
    pub name: String,
}

/// Families implemented, in listing order.
pub const FAMILIES: &[&str] = &["thinking", "maxential", "audit", "deliberation"];

impl Toolsets {
    pub fn all() -> Self {
        Self(FAMILIES.iter().map(|f| (*f).to_owned()).collect())
    }

    /// Parses a comma-separated list such as `thinking,maxential` or `all`.
    pub fn parse(list: &str) -> Result<Self, UnknownToolset> {
        let mut out = Vec::new();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if name == "all" {
                return Ok(Self::all());
            }
            if !FAMILIES.contains(&name) {
                return Err(UnknownToolset {
                    name: name.to_owned(),
                });
            }
            if !out.iter().any(|o: &String| o == name) {
                out.push(name.to_owned());
            }
        }
        Ok(Self(out))
    }

    pub fn contains(&self, family: &str) -> bool {
        self.0.iter().any(|f| f == family)
    }
}

/// All tools, and which of them this server offers.
pub struct Catalog {
    entries: Vec<ToolEntry>,
    toolsets: Toolsets,
}

impl Catalog {
    pub fn new(toolsets: Toolsets) -> Self {
        let mut entries = thinking::entries();
        entries.extend(maxential::entries());
        entries.extend(replay::entries());
        entries.extend(audit::entries());
        entries.extend(deliberation::entries());
        Self { entries, toolsets }
    }

    /// Every tool of every family, offered or not (for schema generation).
    pub fn all_entries(&self) -> &[ToolEntry] {
        &self.entries
    }

    pub fn entry(&self, name: &str) -> Option<&ToolEntry> {
        self.entries.iter().find(|e| e.tool.name == name)
    }

    pub fn is_enabled(&self, name: &str) -> bool {
        self.entry(name)
            .is_some_and(|e| self.toolsets.contains(e.family))
    }

    /// The tools listed to clients.
    pub fn tools(&self) -> Vec<Tool> {
        self.entries
            .iter()
            .filter(|e| self.toolsets.contains(e.family))
            .map(|e| e.tool.clone())
            .collect()
    }
}

/// What a tool promises about its effects. Every call appends an audit event, so no tool is
/// read-only; these say what happens to the thinking state.
#[derive(Debug, Clone, Copy)]
pub(super) enum Effect {
    /// Adds to the state (a new thought): repeating it adds again.
    Appends,
    /// Changes state, but repeating the same call changes nothing more (tag, reset).
    Idempotent,
    /// Reads the state; only the audit event is written.
    Reads,
}

/// A tool's catalog entry: schemas from its argument and output types (the output schema
/// carries the receipt), honest annotations from its [`Effect`].
pub(super) fn entry<Args: JsonSchema + Any, Output: JsonSchema + Any>(
    family: &'static str,
    name: &'static str,
    title: &str,
    description: &'static str,
    effect: Effect,
    render_text: fn(&Value) -> String,
) -> ToolEntry {
    let annotations = ToolAnnotations::with_title(title)
        .read_only(false)
        .destructive(false)
        .idempotent(!matches!(effect, Effect::Appends))
        .open_world(false);
    let tool = Tool::new(
        name,
        description,
        tidy(schema_for_type::<Args>(), Side::Input),
    )
    .with_title(title)
    .with_raw_output_schema(with_receipt(tidy(
        schema_for_output::<Output>(),
        Side::Output,
    )))
    .with_annotations(annotations);
    ToolEntry {
        family,
        tool,
        render_text,
    }
}

/// An output schema with the ledger receipt every successful result carries: `seq` and
/// `eventHash` of the event that recorded the call.
fn with_receipt(schema: Arc<JsonObject>) -> Arc<JsonObject> {
    let mut schema = (*schema).clone();
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props.insert(
            "seq".into(),
            json!({"type": "integer", "minimum": 1, "description": "Seq of the ledger event that recorded this call."}),
        );
        props.insert(
            "eventHash".into(),
            json!({"type": "string", "description": "BLAKE3 hash (hex) of that event."}),
        );
    }
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.push(json!("seq"));
        required.push(json!("eventHash"));
    }
    Arc::new(schema)
}

/// A schema as clients should see it: in the portable form of [`portable::make_portable`].
fn tidy(schema: Arc<JsonObject>, side: Side) -> Arc<JsonObject> {
    let mut value = Value::Object((*schema).clone());
    make_portable(&mut value, side);
    match value {
        Value::Object(map) => Arc::new(map),
        _ => schema,
    }
}

/// Pretty JSON of the whole structured result (the reference server's text block).
pub(super) fn render_json(body: &Value) -> String {
    super::pretty(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolsets_parse_lists_and_all() {
        assert_eq!(Toolsets::parse("all").unwrap(), Toolsets::all());
        assert_eq!(
            Toolsets::parse(" maxential , maxential").unwrap(),
            Toolsets(vec!["maxential".into()])
        );
        let err = Toolsets::parse("thinking,nope").unwrap_err();
        assert!(err.to_string().contains("nope"));
    }

    #[test]
    fn a_catalog_lists_only_its_families() {
        let catalog = Catalog::new(Toolsets::parse("maxential").unwrap());
        let names: Vec<String> = catalog.tools().iter().map(|t| t.name.to_string()).collect();
        assert_eq!(names, ["reset", "search", "tag", "export", "visualize"]);
        assert!(!catalog.is_enabled("sequentialthinking"));
        assert!(catalog.entry("sequentialthinking").is_some());
    }

    #[test]
    fn annotations_are_honest() {
        let catalog = Catalog::new(Toolsets::all());
        for entry in catalog.all_entries() {
            let a = entry.tool.annotations.as_ref().expect("annotations");
            assert_eq!(
                a.read_only_hint,
                Some(false),
                "{} appends an event",
                entry.tool.name
            );
            assert_eq!(
                a.destructive_hint,
                Some(false),
                "{} deletes nothing",
                entry.tool.name
            );
        }
        let thinking = catalog
            .entry("sequentialthinking")
            .and_then(|e| e.tool.annotations.clone());
        assert_eq!(thinking.and_then(|a| a.idempotent_hint), Some(false));
    }

    #[test]
    fn every_schema_is_portable() {
        let catalog = Catalog::new(Toolsets::all());
        let mut found = Vec::new();
        for entry in catalog.all_entries() {
            let input = Value::Object((*entry.tool.input_schema).clone());
            for p in portable::problems(&input) {
                found.push(format!("{}: inputSchema{p}", entry.tool.name));
            }
            if let Some(output) = &entry.tool.output_schema {
                for p in portable::problems(&Value::Object((**output).clone())) {
                    found.push(format!("{}: outputSchema{p}", entry.tool.name));
                }
            }
        }
        assert!(
            found.is_empty(),
            "unportable schemas:\n{}",
            found.join("\n")
        );
    }

    #[test]
    fn every_output_schema_carries_the_receipt() {
        let catalog = Catalog::new(Toolsets::all());
        for entry in catalog.all_entries() {
            let schema = entry.tool.output_schema.as_ref().expect("output schema");
            let required = schema["required"].as_array().expect("required list");
            assert!(
                required.contains(&json!("seq")) && required.contains(&json!("eventHash")),
                "{}",
                entry.tool.name
            );
            assert_eq!(
                entry.tool.input_schema["type"], "object",
                "{}",
                entry.tool.name
            );
            let props = entry.tool.input_schema["properties"]
                .as_object()
                .expect("properties");
            for (name, prop) in props {
                assert!(
                    prop.get("default") != Some(&Value::Null),
                    "{}.{name} defaults to null",
                    entry.tool.name
                );
            }
        }
    }
}
