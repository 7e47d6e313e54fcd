//! The tool catalog: every tool's MCP definition, grouped by family, and the `--toolsets`
//! choice of which families are listed. Every schema is listed in its portable form
//! ([`portable`]).

mod portable;

use std::sync::{Arc, LazyLock};

use std::any::Any;

use rmcp::handler::server::tool::{schema_for_output, schema_for_type};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use rmcp::schemars::JsonSchema;
use serde_json::{Value, json};

use super::{audit, cognition, deliberation, lux, maxential, memory, replay, thinking, toolsets};
use crate::app::call::args::TEXT_MARK;
use crate::app::toolsets::ToolsetStatus;
use portable::{Side, make_portable};

/// One tool as listed to clients.
pub struct ToolEntry {
    /// The family `--toolsets` selects it by.
    pub family: &'static str,
    /// The definition `tools/list` shows: its output schema is [`terse`].
    pub tool: Tool,
    /// The output schema with every description, served at `reasoning://schemas/{name}`.
    pub documented_output: Arc<JsonObject>,
    /// The text content block of a successful result (structured content carries the rest).
    pub render_text: fn(&Value) -> String,
    /// What the tools layer does for the caller around the call, beyond recording it.
    pub caller: CallerEffect,
    /// Whether the tool only reads (its [`Effect`] is `Reads`): an auditor may call it.
    pub reads_only: bool,
}

/// What a tool's call does on the tools layer, for its caller, beside the ledger: declared on
/// the tool's catalog entry ([`ToolEntry::with_caller`]), so the handler chooses by property,
/// never by a list of tool names. The effects that follow a call take place only when it is
/// recorded and accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallerEffect {
    /// Nothing beyond the call itself.
    #[default]
    None,
    /// May start a deliberation or a model-backed chain in a new session (the body's
    /// `session_id`), which becomes the caller's current session.
    ContinuesStartedSession,
    /// Closes the caller's current session (the body's `sessionId`): the caller moves on to a
    /// new one.
    RotatesClosedSession,
    /// Enables (`true`) or disables the toolset the body's `toolset.name` names in the
    /// caller's list, telling the caller its tool list changed.
    SetsToolset(bool),
    /// Proves events against a signed checkpoint: one is signed first if the log grew, so the
    /// caller's latest calls are covered.
    SignsCheckpointFirst,
    /// Embeds the text of the named argument before the call is sent (prepare), so the
    /// decision has its vector.
    Embeds(&'static str),
}

impl ToolEntry {
    /// The entry of a tool that may ask a model provider outside thinkledger (when a call asks
    /// for `provider: "model_backed"`): its annotations say it reaches an open world.
    #[must_use]
    pub(super) fn may_ask_model(mut self) -> Self {
        if let Some(annotations) = &mut self.tool.annotations {
            annotations.open_world_hint = Some(true);
        }
        self
    }

    /// The entry with `effect` for its caller.
    #[must_use]
    pub(super) fn with_caller(mut self, effect: CallerEffect) -> Self {
        self.caller = effect;
        self
    }
}

/// A choice of families: what a server offers a new caller (`--toolsets`), or what one caller
/// has enabled since. The `toolsets` family (the tools that change this choice) is always in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolsets(Vec<String>);

/// A `--toolsets` name that is not a family.
#[derive(Debug, thiserror::Error)]
#[error("unknown toolset \"{name}\"; choose from: all, default, {}", FAMILIES.join(", "))]
pub struct UnknownToolset {
    pub name: String,
}

/// Families a caller can choose, in listing order: every toolset of the decider's dispatch
/// ([`crate::app::TOOL_FAMILIES`]) but the meta family.
pub static FAMILIES: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    crate::app::TOOL_FAMILIES
        .iter()
        .map(|(set, _)| *set)
        .filter(|set| *set != META_FAMILY)
        .collect()
});

/// The families offered when `--toolsets` is not given: the everyday tools, in well under the
/// 32 KB `tools/list` budget (a test holds it there). The others are one `enable_toolset` away.
pub const DEFAULT_FAMILIES: &[&str] = &["thinking", "maxential"];

/// The family of `list_toolsets`, `enable_toolset` and `disable_toolset`: always offered.
pub const META_FAMILY: &str = crate::app::toolsets::FAMILY;

impl Toolsets {
    pub fn all() -> Self {
        Self(FAMILIES.iter().map(|f| (*f).to_owned()).collect())
    }

    /// [`DEFAULT_FAMILIES`].
    pub fn default_sets() -> Self {
        Self(DEFAULT_FAMILIES.iter().map(|f| (*f).to_owned()).collect())
    }

    /// Parses a comma-separated list such as `thinking,maxential`, `default` or `all`.
    pub fn parse(list: &str) -> Result<Self, UnknownToolset> {
        let mut out = Self(Vec::new());
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "all" => return Ok(Self::all()),
                "default" => {
                    for family in DEFAULT_FAMILIES {
                        out.insert(family);
                    }
                }
                META_FAMILY => {}
                _ if FAMILIES.contains(&name) => out.insert(name),
                _ => {
                    return Err(UnknownToolset {
                        name: name.to_owned(),
                    });
                }
            }
        }
        Ok(out)
    }

    /// The enabled families, in the order they were enabled.
    pub fn families(&self) -> &[String] {
        &self.0
    }

    /// The families named in `names` that exist (a relayed connection's state).
    pub fn of_names(names: &[String]) -> Self {
        let mut out = Self(Vec::new());
        for name in names {
            out.insert(name);
        }
        out
    }

    pub fn contains(&self, family: &str) -> bool {
        family == META_FAMILY || self.0.iter().any(|f| f == family)
    }

    /// Adds `family` (a name from [`FAMILIES`]); adding one twice changes nothing.
    pub fn insert(&mut self, family: &str) {
        if FAMILIES.contains(&family) && !self.contains(family) {
            self.0.push(family.to_owned());
        }
    }

    /// Removes `family`; the meta family stays.
    pub fn remove(&mut self, family: &str) {
        self.0.retain(|f| f != family);
    }
}

/// The definitions of every family's tools: one line per family.
const FAMILY_ENTRIES: &[fn() -> Vec<ToolEntry>] = &[
    thinking::entries,
    maxential::entries,
    replay::entries,
    audit::entries,
    deliberation::entries,
    memory::entries,
    lux::entries,
    cognition::entries,
    toolsets::entries,
];

/// All tools, what each family weighs in `tools/list`, and which families a new caller is
/// offered.
pub struct Catalog {
    entries: Vec<ToolEntry>,
    /// Compact JSON bytes of each entry's `tools/list` definition, in entry order.
    sizes: Vec<u64>,
    defaults: Toolsets,
}

impl Catalog {
    pub fn new(defaults: Toolsets) -> Self {
        let mut entries: Vec<ToolEntry> = FAMILY_ENTRIES.iter().flat_map(|f| f()).collect();
        // Listed in the decider's dispatch order, whichever file defines a tool.
        let order: Vec<&str> = crate::app::TOOL_FAMILIES
            .iter()
            .flat_map(|(_, tools)| tools.iter().copied())
            .collect();
        entries.sort_by_key(|e| order.iter().position(|t| *t == e.tool.name));
        let sizes = entries
            .iter()
            .map(|e| {
                serde_json::to_vec(&e.tool)
                    .map_or(0, |bytes| u64::try_from(bytes.len()).unwrap_or(u64::MAX))
            })
            .collect();
        Self {
            entries,
            sizes,
            defaults,
        }
    }

    /// Every tool of every family, offered or not (for schema generation).
    pub fn all_entries(&self) -> &[ToolEntry] {
        &self.entries
    }

    pub fn entry(&self, name: &str) -> Option<&ToolEntry> {
        self.entries.iter().find(|e| e.tool.name == name)
    }

    /// The families a new caller is offered (`--toolsets`).
    pub fn defaults(&self) -> &Toolsets {
        &self.defaults
    }

    /// Whether `name` is a tool of a family in `enabled`.
    pub fn is_enabled(&self, name: &str, enabled: &Toolsets) -> bool {
        self.entry(name).is_some_and(|e| enabled.contains(e.family))
    }

    /// The tools listed to a caller with `enabled`.
    pub fn tools(&self, enabled: &Toolsets) -> Vec<Tool> {
        self.entries
            .iter()
            .filter(|e| enabled.contains(e.family))
            .map(|e| e.tool.clone())
            .collect()
    }

    /// Every family with its tools, their `tools/list` bytes and whether `enabled` holds it:
    /// the selectable families in listing order, then the meta family.
    pub fn statuses(&self, enabled: &Toolsets) -> Vec<ToolsetStatus> {
        FAMILIES
            .iter()
            .chain(std::iter::once(&META_FAMILY))
            .map(|family| {
                let members = self.entries.iter().zip(&self.sizes);
                let members: Vec<(&ToolEntry, &u64)> =
                    members.filter(|(e, _)| e.family == *family).collect();
                ToolsetStatus {
                    name: (*family).to_owned(),
                    tools: members
                        .iter()
                        .map(|(e, _)| e.tool.name.to_string())
                        .collect(),
                    bytes: members.iter().map(|(_, size)| **size).sum(),
                    enabled: enabled.contains(family),
                }
            })
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
    /// Removes what it names for good (a hard delete erases texts).
    Erases,
    /// Asks a model provider outside thinkledger (open world), then adds the answer to the
    /// state: repeating it asks again.
    AsksModel,
}

/// A tool's catalog entry: schemas from its argument and output types (the output schema
/// carries the receipt), honest annotations from its [`Effect`].
pub(super) fn entry<Args: JsonSchema + Any, Output: JsonSchema + Any>(
    name: &'static str,
    title: &str,
    description: &'static str,
    effect: Effect,
    render_text: fn(&Value) -> String,
) -> ToolEntry {
    let annotations = ToolAnnotations::with_title(title)
        .read_only(false)
        .destructive(matches!(effect, Effect::Erases))
        .idempotent(!matches!(effect, Effect::Appends | Effect::AsksModel))
        .open_world(matches!(effect, Effect::AsksModel));
    let documented_output = with_receipt(tidy(schema_for_output::<Output>(), Side::Output));
    let tool = Tool::new(
        name,
        description,
        tidy(schema_for_type::<Args>(), Side::Input),
    )
    .with_title(title)
    .with_raw_output_schema(terse(&documented_output))
    .with_annotations(annotations);
    ToolEntry {
        // A tool the decider does not dispatch has no set; the catalog test catches it.
        family: crate::app::toolset_of(name).unwrap_or_default(),
        tool,
        documented_output,
        render_text,
        caller: CallerEffect::None,
        reads_only: matches!(effect, Effect::Reads),
    }
}

/// An output schema as `tools/list` carries it: the result's own members keep their
/// descriptions; the descriptions of everything nested in them (the shared definitions in
/// `$defs`, which many tools repeat, and their members) are left to the documented form at
/// `reasoning://schemas/{name}`. Only the `description` keyword goes: names, types, `required`,
/// enums and bounds, the whole contract a client validates against, stay.
fn terse(documented: &Arc<JsonObject>) -> Arc<JsonObject> {
    let mut schema = (**documented).clone();
    schema.remove("description");
    for (keyword, value) in &mut schema {
        match (keyword.as_str(), value) {
            ("properties", Value::Object(members)) => {
                for member in members.values_mut() {
                    if let Value::Object(member) = member {
                        for (inner, sub) in member.iter_mut() {
                            if inner != "description" {
                                strip_descriptions(inner, sub);
                            }
                        }
                    }
                }
            }
            (keyword, value) => strip_descriptions(keyword, value),
        }
    }
    Arc::new(schema)
}

/// Removes the `description` keyword from every schema under `value`, which sits under
/// `keyword` in its parent schema. Member names are never mistaken for keywords: a property
/// called `description` stays.
fn strip_descriptions(keyword: &str, value: &mut Value) {
    match (keyword, value) {
        // Maps from names to schemas.
        ("properties" | "$defs" | "definitions" | "patternProperties", Value::Object(map)) => {
            for schema in map.values_mut() {
                strip_schema(schema);
            }
        }
        // Lists of schemas.
        ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(list)) => {
            for schema in list {
                strip_schema(schema);
            }
        }
        // One schema.
        (
            "items" | "additionalProperties" | "not" | "contains" | "if" | "then" | "else",
            schema,
        ) => strip_schema(schema),
        _ => {}
    }
}

fn strip_schema(schema: &mut Value) {
    if let Value::Object(map) = schema {
        if map.get("description").is_some_and(Value::is_string) {
            map.remove("description");
        }
        for (keyword, value) in map.iter_mut() {
            strip_descriptions(keyword, value);
        }
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
    unmark_texts(&mut value);
    make_portable(&mut value, side);
    if let (Side::Input, Value::Object(map)) = (side, &mut value) {
        // A tool without parameters still lists them, as an empty object (clients expect it).
        map.entry("properties").or_insert_with(|| json!({}));
    }
    match value {
        Value::Object(map) => Arc::new(map),
        _ => schema,
    }
}

/// `schema` without the marks of free-text fields ([`TEXT_MARK`]): they tell the application
/// what to commit, and are no part of the contract clients see.
fn unmark_texts(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            map.remove(TEXT_MARK);
            map.values_mut().for_each(unmark_texts);
        }
        Value::Array(items) => items.iter_mut().for_each(unmark_texts),
        _ => {}
    }
}

/// Pretty JSON of the whole structured result (the reference server's text block).
pub(super) fn render_json(body: &Value) -> String {
    super::pretty(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The catalog and the decider name each tool's argument type separately: the fields a
    /// client is shown are exactly the ones its events record.
    #[test]
    fn every_listed_argument_is_the_one_recorded() {
        let catalog = Catalog::new(Toolsets::all());
        for entry in catalog.all_entries() {
            let name = entry.tool.name.as_ref();
            let listed: Vec<&str> = entry
                .tool
                .input_schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            let mut recorded: Vec<&str> = crate::app::recorded_arguments(name)
                .unwrap_or_else(|| panic!("{name} has no spec"))
                .fields
                .iter()
                .map(String::as_str)
                .collect();
            let mut listed = listed;
            listed.sort_unstable();
            recorded.sort_unstable();
            assert_eq!(listed, recorded, "{name}");
            assert!(
                !Value::Object((*entry.tool.input_schema).clone())
                    .to_string()
                    .contains(TEXT_MARK),
                "{name}: the text mark is shown to clients"
            );
        }
    }

    #[test]
    fn the_catalog_defines_exactly_the_tools_the_decider_dispatches() {
        let catalog = Catalog::new(Toolsets::all());
        let listed: Vec<&str> = catalog
            .all_entries()
            .iter()
            .map(|e| {
                assert!(
                    !e.family.is_empty(),
                    "{} is dispatched by no family",
                    e.tool.name
                );
                e.tool.name.as_ref()
            })
            .collect();
        let dispatched: Vec<&str> = crate::app::TOOL_FAMILIES
            .iter()
            .flat_map(|(_, tools)| tools.iter().copied())
            .collect();
        assert_eq!(listed, dispatched);
    }

    #[test]
    fn the_caller_effects_sit_on_the_tools_that_have_them() {
        let catalog = Catalog::new(Toolsets::all());
        let declared: Vec<(&str, CallerEffect)> = catalog
            .all_entries()
            .iter()
            .filter(|e| e.caller != CallerEffect::None)
            .map(|e| (e.tool.name.as_ref(), e.caller))
            .collect();
        assert_eq!(
            declared,
            [
                ("reset", CallerEffect::RotatesClosedSession),
                ("export_reasoning_audit", CallerEffect::SignsCheckpointFirst),
                ("run_thinking_mode", CallerEffect::ContinuesStartedSession),
                ("reasoning_autopilot", CallerEffect::ContinuesStartedSession),
                ("start_deliberation", CallerEffect::ContinuesStartedSession),
                ("store_memory", CallerEffect::Embeds("content")),
                ("retrieve_memories", CallerEffect::Embeds("text")),
                ("update_memory", CallerEffect::Embeds("content")),
                ("traced_reasoning", CallerEffect::ContinuesStartedSession),
                ("planner", CallerEffect::ContinuesStartedSession),
                ("biased_reasoning", CallerEffect::ContinuesStartedSession),
                ("enable_toolset", CallerEffect::SetsToolset(true)),
                ("disable_toolset", CallerEffect::SetsToolset(false)),
            ]
        );
    }

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
        let names: Vec<String> = catalog
            .tools(catalog.defaults())
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        assert_eq!(
            names,
            [
                "reset",
                "search",
                "tag",
                "export",
                "visualize",
                "list_toolsets",
                "enable_toolset",
                "disable_toolset"
            ]
        );
        assert!(!catalog.is_enabled("sequentialthinking", catalog.defaults()));
        assert!(catalog.entry("sequentialthinking").is_some());
    }

    #[test]
    fn every_tool_that_only_reads_may_be_called_by_an_auditor() {
        let catalog = Catalog::new(Toolsets::all());
        let refused: Vec<&str> = catalog
            .all_entries()
            .iter()
            .filter(|e| e.reads_only && !crate::app::auditor_may_call(&e.tool.name))
            .map(|e| e.tool.name.as_ref())
            .collect();
        assert!(
            refused.is_empty(),
            "read-only roles may call every tool that changes nothing: {refused:?}"
        );
    }

    #[test]
    fn the_default_list_stays_within_its_budget_and_every_tool_is_in_a_set() {
        let catalog = Catalog::new(Toolsets::default_sets());
        let list = rmcp::model::ListToolsResult::with_all_items(catalog.tools(catalog.defaults()));
        let bytes = serde_json::to_vec(&list).unwrap().len();
        assert!(
            bytes <= 32 * 1024,
            "the default tools/list is {bytes} bytes"
        );
        let statuses = catalog.statuses(catalog.defaults());
        let listed: usize = statuses.iter().map(|s| s.tools.len()).sum();
        assert_eq!(listed, catalog.all_entries().len());
        let enabled: Vec<&str> = statuses
            .iter()
            .filter(|s| s.enabled)
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(enabled, ["thinking", "maxential", META_FAMILY]);
    }

    #[test]
    fn listed_output_schemas_keep_the_contract_and_lose_only_nested_descriptions() {
        let documented = json!({
            "description": "root",
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "kept: a member of the result"},
                "node": {"$ref": "#/$defs/Node", "description": "kept"},
                "list": {"type": "array", "items": {"type": "string", "description": "nested"}}
            },
            "required": ["description", "node", "list"],
            "$defs": {"Node": {"type": "object", "description": "gone", "properties": {
                "description": {"type": "string", "description": "gone"},
                "kind": {"enum": ["a", "b"], "description": "gone"}
            }, "required": ["description", "kind"]}}
        });
        let Value::Object(map) = documented else {
            unreachable!()
        };
        let listed = Value::Object((*terse(&Arc::new(map))).clone());
        assert_eq!(
            listed,
            json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string", "description": "kept: a member of the result"},
                    "node": {"$ref": "#/$defs/Node", "description": "kept"},
                    "list": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["description", "node", "list"],
                "$defs": {"Node": {"type": "object", "properties": {
                    "description": {"type": "string"},
                    "kind": {"enum": ["a", "b"]}
                }, "required": ["description", "kind"]}}
            })
        );
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
            // Only a hard delete removes what it names for good.
            assert_eq!(
                a.destructive_hint,
                Some(entry.tool.name == "delete_memory"),
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
