//! What a tool's call records, derived from its argument type: the fields an event keeps and
//! the paths of the free texts in them (committed, stored beside the event, erasable).
//!
//! A tool names its argument type once ([`super::ToolSpec::args`], `ArgsShape::of::<T>`); its
//! JSON Schema (the one clients are shown) gives the recorded fields, and the fields marked
//! `#[schemars(extend("x-text" = true))]` give the texts. So no list beside the type can
//! disagree with it, and the tests below hold every tool to one more rule: every field serde
//! reads into the type is one the event records, so a decision never reads an argument that a
//! re-execution would not have.

use schemars::{JsonSchema, SchemaGenerator};
use serde::de::{self, DeserializeOwned, Visitor};
use serde_json::{Map, Value};

/// The schema keyword that marks a free-text field. Never shown to clients: the catalog takes
/// it out of the schemas it lists.
pub const TEXT_MARK: &str = "x-text";

/// The recorded fields of a tool's arguments and the paths of their texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgsShape {
    /// Argument names recorded in the event, sorted; others are ignored and not recorded.
    pub fields: Vec<String>,
    /// Paths of the free texts: `goal`, `constraints[]`, `context.background`,
    /// `elaborations[].content`.
    pub texts: Vec<String>,
    /// Names serde reads into the type that the event would not record (a field the schema
    /// skips, an alias): a decision reading them would decide on what a re-execution never
    /// sees. Empty for every tool (`test: app::registry::tests::every_argument_a_decision_reads_is_recorded`).
    pub unrecorded: Vec<String>,
}

impl ArgsShape {
    /// The shape of `T`, from its JSON Schema (and, for `unrecorded`, from what serde reads).
    #[must_use]
    pub fn of<T: JsonSchema + DeserializeOwned>() -> Self {
        let root = SchemaGenerator::default().into_root_schema_for::<T>();
        let root = root.as_value();
        let defs = root
            .get("$defs")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut fields = Vec::new();
        let mut texts = Vec::new();
        for (name, schema) in properties(root, &defs) {
            fields.push(name.clone());
            text_paths(schema, &defs, &name, &mut texts, 0);
        }
        let unrecorded = serde_fields::<T>()
            .unwrap_or_default()
            .into_iter()
            .filter(|name| !fields.iter().any(|f| f == name))
            .map(str::to_owned)
            .collect();
        Self {
            fields,
            texts,
            unrecorded,
        }
    }

    /// Whether the event records the argument `name`.
    #[must_use]
    pub fn records(&self, name: &str) -> bool {
        self.fields.iter().any(|f| f == name)
    }
}

/// The properties of an object schema, following `$ref` and `allOf` (serde's `flatten`).
fn properties<'a>(schema: &'a Value, defs: &'a Map<String, Value>) -> Vec<(String, &'a Value)> {
    let schema = resolve(schema, defs);
    let mut out: Vec<(String, &Value)> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().map(|(k, v)| (k.clone(), v)).collect())
        .unwrap_or_default();
    for part in schema
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.extend(properties(part, defs));
    }
    out
}

/// `schema`, or the definition its `$ref` names.
fn resolve<'a>(schema: &'a Value, defs: &'a Map<String, Value>) -> &'a Value {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| defs.get(name))
        .unwrap_or(schema)
}

/// Collects the text paths under `schema`, which sits at `path`.
fn text_paths(
    schema: &Value,
    defs: &Map<String, Value>,
    path: &str,
    out: &mut Vec<String>,
    depth: usize,
) {
    // A recursive type (a node holding nodes) ends here: no argument nests deeper.
    if depth > 8 {
        return;
    }
    if schema.get(TEXT_MARK) == Some(&Value::Bool(true)) {
        let array = is_array(resolve(schema, defs));
        out.push(if array {
            format!("{path}[]")
        } else {
            path.to_owned()
        });
        return;
    }
    let schema = resolve(schema, defs);
    for (name, inner) in properties(schema, defs) {
        text_paths(inner, defs, &format!("{path}.{name}"), out, depth + 1);
    }
    if let Some(items) = schema.get("items") {
        text_paths(items, defs, &format!("{path}[]"), out, depth + 1);
    }
    for key in ["anyOf", "oneOf"] {
        for part in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            text_paths(part, defs, path, out, depth + 1);
        }
    }
}

/// Whether `schema` is an array's, or an optional array's (`"type": ["array", "null"]`).
fn is_array(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "array",
        Some(Value::Array(types)) => types.iter().any(|t| t == "array"),
        _ => false,
    }
}

/// The field names serde reads into `T` (with their aliases), or `None` for a type serde reads
/// as a map (one with a flattened member), whose fields the schema lists instead.
#[must_use]
pub fn serde_fields<T: DeserializeOwned>() -> Option<Vec<&'static str>> {
    let mut seen = None;
    let _ = T::deserialize(FieldNames(&mut seen));
    seen.map(<[&str]>::to_vec)
}

/// A deserializer that answers nothing and notes the fields a struct asks for.
struct FieldNames<'s>(&'s mut Option<&'static [&'static str]>);

#[derive(Debug)]
struct Stop;

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("field names noted")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<M: std::fmt::Display>(_: M) -> Self {
        Stop
    }
}

impl<'de> de::Deserializer<'de> for FieldNames<'_> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Stop> {
        *self.0 = Some(fields);
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Inner {
        #[schemars(extend("x-text" = true))]
        background: Option<String>,
        #[schemars(extend("x-text" = true))]
        constraints: Vec<String>,
        level: u32,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Item {
        #[schemars(extend("x-text" = true))]
        content: String,
        weight: f64,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Sample {
        #[schemars(extend("x-text" = true))]
        goal: String,
        context: Option<Inner>,
        elaborations: Vec<Item>,
        session_id: Option<String>,
        #[serde(alias = "n")]
        count: u32,
    }

    #[test]
    fn the_shape_lists_every_field_and_every_marked_text() {
        let shape = ArgsShape::of::<Sample>();
        assert_eq!(
            shape.fields,
            ["context", "count", "elaborations", "goal", "sessionId"]
        );
        assert_eq!(
            shape.texts,
            [
                "context.background",
                "context.constraints[]",
                "elaborations[].content",
                "goal"
            ]
        );
        assert!(shape.records("sessionId") && !shape.records("session_id"));
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct ReadsMore {
        goal: String,
        #[schemars(skip)]
        hidden: Option<String>,
        #[serde(alias = "session_id")]
        session_id: Option<String>,
    }

    #[test]
    fn a_field_serde_reads_but_the_event_would_not_record_is_named() {
        assert!(
            ArgsShape::of::<Sample>()
                .unrecorded
                .contains(&"n".to_owned())
        );
        assert_eq!(
            ArgsShape::of::<ReadsMore>().unrecorded,
            ["hidden", "session_id"]
        );
    }

    #[test]
    fn serde_fields_names_what_serde_reads_aliases_included() {
        let mut fields = serde_fields::<Sample>().expect("a plain struct");
        fields.sort_unstable();
        assert_eq!(
            fields,
            ["context", "count", "elaborations", "goal", "n", "sessionId"]
        );
    }
}
