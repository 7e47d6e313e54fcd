//! A validator for the subset of JSON Schema 2020-12 the golden schemas use. Annotation keywords
//! are ignored; any other keyword it does not implement is an error, never a silent pass.

use serde_json::{Map, Value};

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

pub fn validate(schema: &Value, instance: &Value) -> Result<(), String> {
    Validator { root: schema }.check(schema, instance, "$")
}

struct Validator<'a> {
    root: &'a Value,
}

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
        other => panic!("unknown JSON Schema type {other:?}"),
    }
}

impl Validator<'_> {
    fn resolve(&self, reference: &str) -> Result<&Value, String> {
        let pointer = reference
            .strip_prefix('#')
            .ok_or_else(|| format!("non-local $ref {reference}"))?;
        self.root
            .pointer(pointer)
            .ok_or_else(|| format!("dangling $ref {reference}"))
    }

    fn check(&self, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
        let schema: &Map<String, Value> = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => return Err(format!("{at}: nothing is allowed here")),
            Value::Object(map) => map,
            other => return Err(format!("{at}: schema is not an object: {other}")),
        };
        for (keyword, arg) in schema {
            match keyword.as_str() {
                k if ANNOTATIONS.contains(&k) => {}
                "$ref" => self.check(
                    self.resolve(arg.as_str().ok_or("$ref is not a string")?)?,
                    value,
                    at,
                )?,
                "type" => {
                    let names: Vec<&str> = match arg {
                        Value::String(s) => vec![s.as_str()],
                        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                        _ => return Err(format!("{at}: bad type keyword")),
                    };
                    if !names.iter().any(|n| type_matches(n, value)) {
                        return Err(format!("{at}: {value} is not of type {names:?}"));
                    }
                }
                "const" if value != arg => return Err(format!("{at}: {value} is not {arg}")),
                "const" => {}
                "enum" => {
                    if !arg.as_array().is_some_and(|a| a.contains(value)) {
                        return Err(format!("{at}: {value} is not one of {arg}"));
                    }
                }
                "required" => {
                    if let Value::Object(object) = value {
                        for name in arg
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                        {
                            if !object.contains_key(name) {
                                return Err(format!("{at}: missing required member {name:?}"));
                            }
                        }
                    }
                }
                "properties" => {
                    if let (Value::Object(object), Value::Object(properties)) = (value, arg) {
                        for (name, sub) in properties {
                            if let Some(member) = object.get(name) {
                                self.check(sub, member, &format!("{at}.{name}"))?;
                            }
                        }
                    }
                }
                "additionalProperties" => {
                    if let Value::Object(object) = value {
                        let known = schema.get("properties").and_then(Value::as_object);
                        for (name, member) in object {
                            if !known.is_some_and(|k| k.contains_key(name)) {
                                self.check(arg, member, &format!("{at}.{name}"))?;
                            }
                        }
                    }
                }
                "items" => {
                    if let Value::Array(items) = value {
                        for (i, item) in items.iter().enumerate() {
                            self.check(arg, item, &format!("{at}[{i}]"))?;
                        }
                    }
                }
                "minimum" => {
                    if let (Some(v), Some(min)) = (value.as_f64(), arg.as_f64())
                        && v < min
                    {
                        return Err(format!("{at}: {value} is below {arg}"));
                    }
                }
                "minItems" | "maxItems" => {
                    if let (Some(items), Some(limit)) = (value.as_array(), arg.as_u64()) {
                        let len = items.len() as u64;
                        if (keyword == "minItems" && len < limit)
                            || (keyword == "maxItems" && len > limit)
                        {
                            return Err(format!("{at}: {len} items break {keyword} {limit}"));
                        }
                    }
                }
                "minLength" | "maxLength" => {
                    if let (Some(s), Some(limit)) = (value.as_str(), arg.as_u64()) {
                        let len = u64::try_from(s.chars().count()).unwrap_or(u64::MAX);
                        if (keyword == "minLength" && len < limit)
                            || (keyword == "maxLength" && len > limit)
                        {
                            return Err(format!("{at}: length {len} breaks {keyword} {limit}"));
                        }
                    }
                }
                "pattern" => {
                    if let Some(s) = value.as_str() {
                        let re = regex::Regex::new(arg.as_str().ok_or("pattern is not a string")?)
                            .map_err(|e| format!("bad pattern: {e}"))?;
                        if !re.is_match(s) {
                            return Err(format!("{at}: {s:?} does not match {arg}"));
                        }
                    }
                }
                "anyOf" | "oneOf" => {
                    let options = arg.as_array().ok_or("anyOf/oneOf is not an array")?;
                    let errors: Vec<String> = options
                        .iter()
                        .filter_map(|o| self.check(o, value, at).err())
                        .collect();
                    let passed = options.len() - errors.len();
                    if passed == 0 || (keyword == "oneOf" && passed > 1) {
                        return Err(format!(
                            "{at}: {passed} of the {keyword} options match ({})",
                            errors.join("; ")
                        ));
                    }
                }
                other => {
                    return Err(format!(
                        "{at}: keyword {other:?} is not supported by this checker"
                    ));
                }
            }
        }
        Ok(())
    }
}
