//! The one rule for what a v1 event must look like: `schemas/event.v1.json`, compiled into the
//! binary, and a validator for exactly the subset of JSON Schema 2020-12 the project's schemas
//! use. `verify-export` judges every exported event with it, and the golden-schema tests judge
//! every recorded event and tool result with the same code, so the schema, the verifier and the
//! documentation cannot disagree about which members are checked and which are tolerated.
//!
//! Annotation keywords are ignored; any other keyword it does not implement is a violation,
//! never a silent pass. It knows nothing of hashing, canonical form or the audit document: it
//! answers "which members break the schema, and why", as values, without panicking on any
//! input.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::{Map, Value};

/// Keywords that describe and never constrain.
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$defs",
    "title",
    "description",
    "format",
    "default",
    "examples",
];

/// `schemas/event.v1.json` as shipped with this build.
const EVENT_V1: &str = include_str!("../../schemas/event.v1.json");

/// One place where an instance breaks a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON path of the member, relative to the instance: empty for the instance itself, else
    /// `.name`, `["odd name"]` and `[index]` steps.
    pub path: String,
    /// What is wrong, in words.
    pub message: String,
}

/// One keyword of a schema object, with the object it sits in (`additionalProperties` reads
/// `properties` beside it, `if` reads `then`).
#[derive(Clone, Copy)]
struct Keyword<'s> {
    name: &'s str,
    arg: &'s Value,
    schema: &'s Map<String, Value>,
}

/// A schema with its patterns compiled.
pub struct Schema {
    root: Value,
    /// Every `pattern` of the schema, compiled once; a pattern that does not compile is absent
    /// and reported where it is used.
    patterns: HashMap<String, Regex>,
}

impl Schema {
    /// Prepares `root` for validation.
    pub fn new(root: Value) -> Self {
        let mut patterns = HashMap::new();
        collect_patterns(&root, &mut patterns);
        Self { root, patterns }
    }

    /// Every violation of the schema by `instance`, in document order; empty when it conforms.
    pub fn violations(&self, instance: &Value) -> Vec<Violation> {
        let mut out = Vec::new();
        self.check(&self.root, instance, "", &mut out, 0);
        out
    }

    /// Whether `instance` conforms.
    fn conforms(&self, schema: &Value, instance: &Value, depth: usize) -> bool {
        let mut out = Vec::new();
        self.check(schema, instance, "", &mut out, depth);
        out.is_empty()
    }

    fn resolve(&self, reference: &str) -> Option<&Value> {
        self.root.pointer(reference.strip_prefix('#')?)
    }

    fn check(
        &self,
        schema: &Value,
        value: &Value,
        at: &str,
        out: &mut Vec<Violation>,
        depth: usize,
    ) {
        // `$ref` cycles in a malformed schema end here rather than overflowing the stack.
        if depth > 64 {
            push(out, at, "the schema nests too deeply".to_owned());
            return;
        }
        let schema: &Map<String, Value> = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => return push(out, at, "nothing is allowed here".to_owned()),
            Value::Object(map) => map,
            _ => return push(out, at, "the schema here is not an object".to_owned()),
        };
        for (name, arg) in schema {
            // Annotations say nothing to check; `then` is applied together with `if`.
            if ANNOTATIONS.contains(&name.as_str()) || name == "then" {
                continue;
            }
            let keyword = Keyword { name, arg, schema };
            if !self.apply(keyword, value, at, out, depth) && !self.assert(keyword, value, at, out)
            {
                push(
                    out,
                    at,
                    format!("the schema keyword {name:?} is not supported"),
                );
            }
        }
    }

    /// An applicator keyword: `value` (or its members, or its items) checked against the
    /// subschemas it names. False when `keyword` is not one.
    fn apply(
        &self,
        keyword: Keyword<'_>,
        value: &Value,
        at: &str,
        out: &mut Vec<Violation>,
        depth: usize,
    ) -> bool {
        let Keyword {
            name: keyword,
            arg,
            schema,
        } = keyword;
        match keyword {
            "$ref" => match arg.as_str().and_then(|r| self.resolve(r)) {
                Some(target) => self.check(target, value, at, out, depth + 1),
                None => push(out, at, format!("the schema's $ref {arg} leads nowhere")),
            },
            "properties" => {
                if let (Value::Object(object), Value::Object(properties)) = (value, arg) {
                    for (name, sub) in properties {
                        if let Some(item) = object.get(name) {
                            let inner = member(at, name);
                            self.check(sub, item, &inner, out, depth + 1);
                        }
                    }
                }
            }
            "additionalProperties" => {
                if let Value::Object(object) = value {
                    let known = schema.get("properties").and_then(Value::as_object);
                    for (name, item) in object {
                        if !known.is_some_and(|k| k.contains_key(name)) {
                            let inner = member(at, name);
                            if *arg == Value::Bool(false) {
                                push(out, &inner, "no such member is allowed here".to_owned());
                            } else {
                                self.check(arg, item, &inner, out, depth + 1);
                            }
                        }
                    }
                }
            }
            "items" => {
                if let Value::Array(items) = value {
                    for (i, item) in items.iter().enumerate() {
                        let inner = format!("{at}[{i}]");
                        self.check(arg, item, &inner, out, depth + 1);
                    }
                }
            }
            "allOf" => {
                for option in arg.as_array().into_iter().flatten() {
                    self.check(option, value, at, out, depth + 1);
                }
            }
            "anyOf" | "oneOf" => {
                let options = arg.as_array().map(Vec::as_slice).unwrap_or_default();
                let passed = options
                    .iter()
                    .filter(|o| self.conforms(o, value, depth + 1))
                    .count();
                if passed == 0 || (keyword == "oneOf" && passed > 1) {
                    push(
                        out,
                        at,
                        format!(
                            "{} matches {passed} of the {} allowed forms ({keyword})",
                            describe(value),
                            options.len()
                        ),
                    );
                }
            }
            "if" => {
                if self.conforms(arg, value, depth + 1)
                    && let Some(then) = schema.get("then")
                {
                    self.check(then, value, at, out, depth + 1);
                }
            }
            _ => return false,
        }
        true
    }

    /// An assertion keyword: what `value` itself must be (its type, value, members, bounds,
    /// length or pattern). False when `keyword` is not one.
    fn assert(
        &self,
        keyword: Keyword<'_>,
        value: &Value,
        at: &str,
        out: &mut Vec<Violation>,
    ) -> bool {
        let Keyword {
            name: keyword, arg, ..
        } = keyword;
        match keyword {
            "type" => {
                let names: Vec<&str> = match arg {
                    Value::String(s) => vec![s.as_str()],
                    Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                    _ => Vec::new(),
                };
                if !names.iter().any(|n| type_matches(n, value)) {
                    push(
                        out,
                        at,
                        format!("{} is not {}", describe(value), names.join(" or ")),
                    );
                }
            }
            "const" if value != arg => push(out, at, format!("{} is not {arg}", describe(value))),
            "const" => {}
            "enum" => {
                if !arg.as_array().is_some_and(|a| a.contains(value)) {
                    push(out, at, format!("{} is not one of {arg}", describe(value)));
                }
            }
            "required" => {
                if let Value::Object(object) = value {
                    for name in arg.as_array().into_iter().flatten() {
                        let Some(name) = name.as_str() else { continue };
                        if !object.contains_key(name) {
                            push(out, &member(at, name), "missing".to_owned());
                        }
                    }
                }
            }
            "minimum" | "maximum" => {
                if let (Some(v), Some(limit)) = (value.as_f64(), arg.as_f64()) {
                    let below = keyword == "minimum" && v < limit;
                    let above = keyword == "maximum" && v > limit;
                    if below || above {
                        let side = if below { "below" } else { "above" };
                        push(out, at, format!("{value} is {side} the {keyword} {arg}"));
                    }
                }
            }
            "minItems" | "maxItems" => {
                if let (Some(items), Some(limit)) = (value.as_array(), arg.as_u64()) {
                    let len = u64::try_from(items.len()).unwrap_or(u64::MAX);
                    if (keyword == "minItems" && len < limit)
                        || (keyword == "maxItems" && len > limit)
                    {
                        push(out, at, format!("{len} items break {keyword} {limit}"));
                    }
                }
            }
            "minLength" | "maxLength" => {
                if let (Some(s), Some(limit)) = (value.as_str(), arg.as_u64()) {
                    let len = u64::try_from(s.chars().count()).unwrap_or(u64::MAX);
                    if (keyword == "minLength" && len < limit)
                        || (keyword == "maxLength" && len > limit)
                    {
                        push(out, at, format!("length {len} breaks {keyword} {limit}"));
                    }
                }
            }
            "pattern" => {
                if let Some(s) = value.as_str() {
                    match arg.as_str().and_then(|p| self.patterns.get(p)) {
                        Some(re) if re.is_match(s) => {}
                        Some(_) => {
                            push(out, at, format!("{} does not match {arg}", describe(value)))
                        }
                        None => push(out, at, format!("the schema's pattern {arg} is not valid")),
                    }
                }
            }
            _ => return false,
        }
        true
    }
}

/// The schema every v1 event is judged by.
pub fn event_v1() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        // A build whose own schema file is not JSON judges nothing as conforming.
        Schema::new(serde_json::from_str(EVENT_V1).unwrap_or(Value::Bool(false)))
    })
}

fn push(out: &mut Vec<Violation>, at: &str, message: String) {
    out.push(Violation {
        path: at.to_owned(),
        message,
    });
}

fn collect_patterns(schema: &Value, out: &mut HashMap<String, Regex>) {
    match schema {
        Value::Object(map) => {
            for (name, value) in map {
                if name == "pattern"
                    && let Some(pattern) = value.as_str()
                    && let Ok(re) = Regex::new(pattern)
                {
                    out.insert(pattern.to_owned(), re);
                } else {
                    collect_patterns(value, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_patterns(item, out)),
        _ => {}
    }
}

/// JSON Schema's type names. An `integer` is a number with no fractional part (RFC 8785 writes
/// `1.0` as `1`, so a canonical event never tells them apart).
fn type_matches(name: &str, value: &Value) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// A value as a reader would name it in a report: short values as JSON, long ones by kind.
fn describe(value: &Value) -> String {
    match value {
        Value::Object(_) => "an object".to_owned(),
        Value::Array(_) => "an array".to_owned(),
        other => {
            let text = other.to_string();
            if text.chars().count() > 80 {
                let kind = if other.is_string() { "string" } else { "value" };
                format!("a {kind} of {} characters", text.chars().count())
            } else {
                text
            }
        }
    }
}

/// `path.name`, or `path["name"]` when the name is not a plain identifier.
fn member(path: &str, name: &str) -> String {
    if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        format!("{path}.{name}")
    } else {
        format!("{path}[{}]", Value::String(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(schema: Value, instance: Value) -> Vec<(String, String)> {
        Schema::new(schema)
            .violations(&instance)
            .into_iter()
            .map(|v| (v.path, v.message))
            .collect()
    }

    #[test]
    fn every_violation_is_reported_with_its_path() {
        let schema = json!({
            "type": "object",
            "required": ["a", "b"],
            "properties": {
                "a": { "type": "integer", "maximum": 4294967295u64 },
                "c": { "type": "array", "items": { "type": "string", "pattern": "^[0-9a-f]+$" } },
                "odd name": { "enum": ["x"] }
            }
        });
        let found = check(
            schema,
            json!({"a": 4294967296u64, "c": ["ab", "zz", 3], "odd name": "y", "extra": 1}),
        );
        assert_eq!(
            found,
            [
                (
                    ".a".to_owned(),
                    "4294967296 is above the maximum 4294967295".to_owned()
                ),
                (
                    ".c[1]".to_owned(),
                    "\"zz\" does not match \"^[0-9a-f]+$\"".to_owned()
                ),
                (".c[2]".to_owned(), "3 is not string".to_owned()),
                (
                    "[\"odd name\"]".to_owned(),
                    "\"y\" is not one of [\"x\"]".to_owned()
                ),
                (".b".to_owned(), "missing".to_owned()),
            ]
        );
    }

    #[test]
    fn if_then_applies_only_when_the_condition_holds() {
        let schema = json!({
            "allOf": [{
                "if": { "required": ["type"], "properties": { "type": { "const": "A" } } },
                "then": { "required": ["x"] }
            }]
        });
        assert_eq!(check(schema.clone(), json!({"type": "B"})), []);
        assert_eq!(check(schema.clone(), json!({})), []);
        assert_eq!(
            check(schema, json!({"type": "A"})),
            [(".x".to_owned(), "missing".to_owned())]
        );
    }

    #[test]
    fn unsupported_keywords_and_broken_schemas_are_violations_not_panics() {
        assert_eq!(check(json!({"not": {}}), json!(1)).len(), 1);
        assert_eq!(check(json!({"type": "float"}), json!(1)).len(), 1);
        assert_eq!(check(json!({"$ref": "#/nowhere"}), json!(1)).len(), 1);
        assert_eq!(check(json!({"pattern": "("}), json!("a")).len(), 1);
        assert_eq!(check(json!({"$ref": "#"}), json!(1)).len(), 1);
    }

    #[test]
    fn the_shipped_event_schema_parses() {
        assert!(event_v1().root.is_object());
    }
}
