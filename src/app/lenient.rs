//! Lenient argument decoding: numbers and booleans sent as strings are accepted.
//!
//! Loose clients send `"3"` for 3 and `"false"` for false (the most common complaint against the
//! reference sequential-thinking server, which crashed on them). These serde helpers accept both
//! forms and nothing else: `"3.5"`, `"yes"` or `2^40` are still errors.

use serde::{Deserialize, Deserializer, de::Error};
use serde_json::Value;

fn to_u32<E: Error>(value: Value) -> Result<u32, E> {
    let n = match &value {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                u
            } else if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0) {
                // 3.0 is an integer; anything else is not.
                format!("{f:.0}").parse::<u64>().map_err(E::custom)?
            } else {
                return Err(E::custom(format!("expected a positive integer, got {n}")));
            }
        }
        Value::String(s) => s
            .trim()
            .parse::<u64>()
            .map_err(|_| E::custom(format!("expected a positive integer, got \"{s}\"")))?,
        other => {
            return Err(E::custom(format!(
                "expected a positive integer, got {other}"
            )));
        }
    };
    u32::try_from(n).map_err(|_| E::custom(format!("{n} is too large (at most {})", u32::MAX)))
}

fn to_bool<E: Error>(value: Value) -> Result<bool, E> {
    match &value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s.trim().eq_ignore_ascii_case("true") => Ok(true),
        Value::String(s) if s.trim().eq_ignore_ascii_case("false") => Ok(false),
        other => Err(E::custom(format!("expected true or false, got {other}"))),
    }
}

pub fn u32_required<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    to_u32(Value::deserialize(d)?)
}

pub fn u32_optional<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => to_u32(v).map(Some),
    }
}

pub fn bool_required<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    to_bool(Value::deserialize(d)?)
}

pub fn bool_optional<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => to_bool(v).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, Debug)]
    struct Probe {
        #[serde(deserialize_with = "super::u32_required")]
        n: u32,
        #[serde(default, deserialize_with = "super::bool_optional")]
        b: Option<bool>,
    }

    fn parse(v: serde_json::Value) -> Result<Probe, String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    #[test]
    fn accepts_numbers_and_booleans_as_strings() {
        let p = parse(json!({"n": "3", "b": "False"})).unwrap();
        assert_eq!((p.n, p.b), (3, Some(false)));
        let p = parse(json!({"n": 4.0, "b": true})).unwrap();
        assert_eq!((p.n, p.b), (4, Some(true)));
        assert_eq!(parse(json!({"n": 1, "b": null})).unwrap().b, None);
        assert_eq!(parse(json!({"n": 1})).unwrap().b, None);
    }

    #[test]
    fn refuses_what_is_not_an_integer_or_a_boolean() {
        for bad in [
            json!({"n": "3.5"}),
            json!({"n": 3.5}),
            json!({"n": -1}),
            json!({"n": "x"}),
            json!({"n": 5_000_000_000u64}),
            json!({"n": 1, "b": "yes"}),
            json!({"n": [1]}),
        ] {
            assert!(parse(bad.clone()).is_err(), "{bad} was accepted");
        }
    }
}
