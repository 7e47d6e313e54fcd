//! Portable tool schemas: the pass that turns what schemars derives into JSON Schemas every MCP
//! client accepts, and the check that proves it (the rules of the MCP Inspector's `--strict`
//! schema lint, which `tests/inspector/` also runs against the real server).
//!
//! What the pass changes, and why each change keeps the contract:
//! - `"default": null` is dropped (it contradicts the declared type; absence says "optional").
//! - Rust integer formats (`uint32`, `int64`, …) are dropped: JSON Schema does not define them
//!   and `minimum` already says what matters.
//! - A bare `true` schema, or one with no validation keyword at all (schemars writes either for
//!   a `serde_json::Value`), becomes an explicit "any JSON value": `anyOf` of the six types.
//!   `false` becomes `{"not": {}}`.
//! - In an input schema, an optional parameter typed `["T", "null"]` becomes `T`: the
//!   application reads `null` exactly as an absent parameter, so leaving it out says the same.
//! - Any other `["T", "null"]` (output fields that are always present, possibly null) becomes
//!   `anyOf: [{"type": "T", …T's keywords}, {"type": "null"}]`.
//!
//! It knows JSON Schema only: not which tool a schema belongs to, nor MCP.

use serde_json::{Map, Value, json};

/// Which side of a tool a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Arguments: optional parameters need no `null` alternative.
    Input,
    /// Results: a field that may be null says so.
    Output,
}

/// Keywords whose value is one subschema.
const SINGLE: &[&str] = &[
    "items",
    "contains",
    "not",
    "propertyNames",
    "if",
    "then",
    "else",
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
    "contentSchema",
];
/// Keywords whose value is an array of subschemas.
const LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value maps names to subschemas.
const MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "$defs",
    "definitions",
];
/// Positions where `true` / `false` are the ordinary spelling, not a schema to declare.
const BOOLEAN_VALUED: &[&str] = &[
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
];
/// Keywords that constrain an instance (a schema without any of them accepts everything).
const CONSTRAINING: &[&str] = &[
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "items",
    "prefixItems",
    "contains",
    "additionalItems",
    "unevaluatedItems",
    "properties",
    "patternProperties",
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "dependentSchemas",
    "dependencies",
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
];

/// The keywords that only apply to instances of one type; they move into that type's branch
/// when a type union is split.
fn applies_to(keyword: &str) -> Option<&'static [&'static str]> {
    const STRING: &[&str] = &["string"];
    const NUMBER: &[&str] = &["number", "integer"];
    const ARRAY: &[&str] = &["array"];
    const OBJECT: &[&str] = &["object"];
    Some(match keyword {
        "minLength" | "maxLength" | "pattern" | "contentEncoding" | "contentMediaType"
        | "contentSchema" => STRING,
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => NUMBER,
        "items" | "prefixItems" | "minItems" | "maxItems" | "uniqueItems" | "contains"
        | "minContains" | "maxContains" | "additionalItems" | "unevaluatedItems" => ARRAY,
        "properties"
        | "required"
        | "additionalProperties"
        | "patternProperties"
        | "minProperties"
        | "maxProperties"
        | "propertyNames"
        | "dependentRequired"
        | "dependentSchemas"
        | "dependencies"
        | "unevaluatedProperties" => OBJECT,
        _ => return None,
    })
}

/// "Any JSON value", spelled so that every client sees a declared type.
fn any_value(description: Option<Value>) -> Value {
    let mut schema = json!({
        "anyOf": [
            {"type": "object"},
            {"type": "array"},
            {"type": "string"},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "null"},
        ]
    });
    if let (Some(d), Value::Object(map)) = (description, &mut schema) {
        map.insert("description".into(), d);
    }
    schema
}

/// Rewrites `schema` (a tool's input or output schema) in place into its portable form.
pub fn make_portable(schema: &mut Value, side: Side) {
    rewrite(schema, side, None);
}

fn rewrite(node: &mut Value, side: Side, keyword: Option<&str>) {
    match node {
        Value::Bool(allowed) => {
            if keyword.is_some_and(|k| BOOLEAN_VALUED.contains(&k)) {
                return;
            }
            *node = if *allowed {
                any_value(None)
            } else {
                json!({"not": {}})
            };
        }
        Value::Object(map) => {
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            let rust_format = map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| f.starts_with("uint") || f.starts_with("int"));
            if rust_format {
                map.remove("format");
            }
            if side == Side::Input {
                drop_null_from_optional_properties(map);
            }
            for key in SINGLE {
                if let Some(sub) = map.get_mut(*key) {
                    rewrite(sub, side, Some(key));
                }
            }
            for key in LISTS {
                if let Some(Value::Array(subs)) = map.get_mut(*key) {
                    subs.iter_mut().for_each(|s| rewrite(s, side, Some(key)));
                }
            }
            for key in MAPS {
                if let Some(Value::Object(subs)) = map.get_mut(*key) {
                    subs.values_mut().for_each(|s| rewrite(s, side, Some(key)));
                }
            }
            split_type_union(map);
            let constrains = map.keys().any(|k| CONSTRAINING.contains(&k.as_str()))
                || (map.contains_key("if")
                    && (map.contains_key("then") || map.contains_key("else")));
            if !constrains && keyword != Some("not") {
                *node = any_value(map.remove("description"));
            }
        }
        _ => {}
    }
}

/// An object schema's optional properties lose their `null` alternative (input side only).
fn drop_null_from_optional_properties(map: &mut Map<String, Value>) {
    let required: Vec<String> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let Some(Value::Object(properties)) = map.get_mut("properties") else {
        return;
    };
    for (name, property) in properties.iter_mut() {
        if required.contains(name) {
            continue;
        }
        let Value::Object(prop) = property else {
            continue;
        };
        if let Some(Value::Array(types)) = prop.get_mut("type") {
            types.retain(|t| t.as_str() != Some("null"));
            if let [only] = types.as_slice() {
                let only = only.clone();
                prop.insert("type".into(), only);
            }
        }
        if let Some(Value::Array(values)) = prop.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
        let single_non_null = match prop.get("anyOf") {
            Some(Value::Array(options)) if options.iter().any(is_null_type) => {
                let rest: Vec<&Value> = options.iter().filter(|o| !is_null_type(o)).collect();
                match rest.as_slice() {
                    [one] => Some((*one).clone()),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some(Value::Object(inner)) = single_non_null {
            prop.remove("anyOf");
            for (k, v) in inner {
                prop.entry(k).or_insert(v);
            }
        }
    }
}

fn is_null_type(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        && schema.as_object().is_some_and(|m| m.len() == 1)
}

/// `"type": [A, B, …]` becomes `anyOf` of one branch per type, each with the keywords that
/// apply to it; annotations and `enum`/`const` stay where they were.
fn split_type_union(map: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = map.get("type") else {
        return;
    };
    let types: Vec<String> = types
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    map.remove("type");
    if let [only] = types.as_slice() {
        map.insert("type".into(), Value::String(only.clone()));
        return;
    }
    let moved: Vec<String> = map
        .keys()
        .filter(|k| applies_to(k).is_some())
        .cloned()
        .collect();
    let mut specific = Map::new();
    for key in moved {
        if let Some(value) = map.remove(&key) {
            specific.insert(key, value);
        }
    }
    let branches: Vec<Value> = types
        .iter()
        .map(|t| {
            let mut branch = Map::new();
            branch.insert("type".into(), Value::String(t.clone()));
            for (k, v) in &specific {
                if applies_to(k).is_some_and(|ts| ts.contains(&t.as_str())) {
                    branch.insert(k.clone(), v.clone());
                }
            }
            if (t == "number" || t == "integer")
                && let Some(format) = map.get("format")
            {
                branch.insert("format".into(), format.clone());
            }
            Value::Object(branch)
        })
        .collect();
    if types.iter().any(|t| t == "number" || t == "integer") {
        map.remove("format");
    }
    if map.contains_key("anyOf") {
        let all_of = map
            .entry("allOf")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = all_of {
            list.push(json!({ "anyOf": branches }));
        }
    } else {
        map.insert("anyOf".into(), Value::Array(branches));
    }
}

/// Every place `schema` is not portable, as `path: problem` — the MCP Inspector's strict lint
/// rules: a bare boolean schema, a `type` array, a `$ref` outside the document, and a schema
/// that constrains nothing.
#[cfg(test)]
pub fn problems(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(schema, "", None, &mut out);
    out
}

#[cfg(test)]
fn check(node: &Value, path: &str, keyword: Option<&str>, out: &mut Vec<String>) {
    match node {
        Value::Bool(b) if !keyword.is_some_and(|k| BOOLEAN_VALUED.contains(&k)) => {
            out.push(format!("{path}: bare `{b}` schema"));
        }
        Value::Object(map) => {
            if map.get("type").is_some_and(Value::is_array) {
                out.push(format!("{path}: `type` is an array"));
            }
            if map
                .get("$ref")
                .and_then(Value::as_str)
                .is_some_and(|r| !r.starts_with('#'))
            {
                out.push(format!("{path}: `$ref` outside the document"));
            }
            let constrains = map.keys().any(|k| CONSTRAINING.contains(&k.as_str()))
                || (map.contains_key("if")
                    && (map.contains_key("then") || map.contains_key("else")));
            if !constrains && keyword != Some("not") {
                out.push(format!("{path}: constrains nothing"));
            }
            for key in SINGLE {
                if let Some(sub) = map.get(*key) {
                    check(sub, &format!("{path}.{key}"), Some(key), out);
                }
            }
            for key in LISTS {
                if let Some(Value::Array(subs)) = map.get(*key) {
                    for (i, s) in subs.iter().enumerate() {
                        check(s, &format!("{path}.{key}[{i}]"), Some(key), out);
                    }
                }
            }
            for key in MAPS {
                if let Some(Value::Object(subs)) = map.get(*key) {
                    for (name, s) in subs {
                        check(s, &format!("{path}.{key}.{name}"), Some(key), out);
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn portable(mut schema: Value, side: Side) -> Value {
        make_portable(&mut schema, side);
        assert_eq!(problems(&schema), Vec::<String>::new(), "{schema}");
        schema
    }

    #[test]
    fn output_unions_with_null_become_any_of_with_the_keywords_in_their_branch() {
        let out = portable(
            json!({
                "type": "object",
                "properties": {
                    "n": {"type": ["integer", "null"], "minimum": 1, "format": "uint32", "description": "d"},
                    "x": {"type": ["number", "null"], "format": "double"},
                    "s": {"type": ["string", "null"]}
                },
                "required": ["n", "x", "s"]
            }),
            Side::Output,
        );
        assert_eq!(
            out["properties"]["n"],
            json!({"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "description": "d"})
        );
        assert_eq!(
            out["properties"]["x"],
            json!({"anyOf": [{"type": "number", "format": "double"}, {"type": "null"}]})
        );
        assert_eq!(
            out["properties"]["s"],
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]})
        );
    }

    #[test]
    fn optional_inputs_drop_their_null_alternative() {
        let out = portable(
            json!({
                "type": "object",
                "properties": {
                    "a": {"type": ["integer", "null"], "minimum": 1, "default": null},
                    "b": {"anyOf": [{"$ref": "#/$defs/B"}, {"type": "null"}], "description": "b"},
                    "r": {"type": ["string", "null"]}
                },
                "required": ["r"],
                "$defs": {"B": {"type": "object", "properties": {"c": {"type": ["string", "null"]}}}}
            }),
            Side::Input,
        );
        assert_eq!(
            out["properties"]["a"],
            json!({"type": "integer", "minimum": 1})
        );
        assert_eq!(
            out["properties"]["b"],
            json!({"$ref": "#/$defs/B", "description": "b"})
        );
        assert_eq!(
            out["properties"]["r"],
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]})
        );
        assert_eq!(
            out["$defs"]["B"]["properties"]["c"],
            json!({"type": "string"})
        );
    }

    #[test]
    fn untyped_schemas_declare_any_value_and_boolean_keywords_stay() {
        let out = portable(
            json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "t": true,
                    "f": false,
                    "d": {"description": "anything"},
                    "m": {"type": "object", "additionalProperties": true}
                }
            }),
            Side::Output,
        );
        assert_eq!(out["additionalProperties"], json!(false));
        assert_eq!(
            out["properties"]["t"]["anyOf"].as_array().map(Vec::len),
            Some(6)
        );
        assert_eq!(out["properties"]["f"], json!({"not": {}}));
        assert_eq!(out["properties"]["d"]["description"], "anything");
        assert_eq!(
            out["properties"]["d"]["anyOf"].as_array().map(Vec::len),
            Some(6)
        );
        assert_eq!(out["properties"]["m"]["additionalProperties"], json!(true));
    }

    #[test]
    fn the_check_names_every_rule() {
        let found = problems(&json!({
            "type": "object",
            "properties": {
                "a": true,
                "b": {"type": ["string", "null"]},
                "c": {"$ref": "https://example.com/s.json"},
                "d": {"description": "?"}
            }
        }));
        assert_eq!(found.len(), 4, "{found:?}");
    }
}
