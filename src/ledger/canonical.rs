//! RFC 8785 (JCS) canonical bytes, with the number rules the ledger adds.
//!
//! Owns one question: "what exact bytes does this JSON value hash as?". It refuses values whose
//! canonical form would be ambiguous across implementations: non-finite numbers (which JSON
//! cannot carry) and integers outside ±(2^53−1), which IEEE-754 doubles — and so every JCS
//! implementation — cannot represent exactly. Knows nothing of events or storage.

use serde_json::Value;

use super::LedgerError;

/// The largest integer magnitude every JSON implementation represents exactly: 2^53 − 1.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Canonical RFC 8785 bytes of `value`, after checking its numbers.
pub fn canonical_bytes(value: &Value) -> Result<Vec<u8>, LedgerError> {
    check_numbers(value, &mut String::from("$"))?;
    serde_json_canonicalizer::to_vec(value)
        .map_err(|e| LedgerError::NotCanonicalizable(format!("JCS serialization failed: {e}")))
}

/// Whether `a` sorts strictly before `b` by UTF-16 code units (RFC 8785 §3.2.3).
pub(crate) fn utf16_less(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        return a < b;
    }
    a.encode_utf16().lt(b.encode_utf16())
}

/// Walks `value` and rejects numbers that cannot be hashed portably. `path` names the offending
/// place in JSONPath-like form so the error can say where.
fn check_numbers(value: &Value, path: &mut String) -> Result<(), LedgerError> {
    match value {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                if u > MAX_SAFE_INTEGER {
                    return Err(LedgerError::NotCanonicalizable(format!(
                        "integer at {path} is beyond ±(2^53−1)"
                    )));
                }
            } else if let Some(i) = n.as_i64() {
                if i.unsigned_abs() > MAX_SAFE_INTEGER {
                    return Err(LedgerError::NotCanonicalizable(format!(
                        "integer at {path} is beyond ±(2^53−1)"
                    )));
                }
            } else {
                match n.as_f64() {
                    Some(f) if f.is_finite() => {
                        if f.fract() == 0.0 && f.abs() > MAX_SAFE_INTEGER as f64 {
                            return Err(LedgerError::NotCanonicalizable(format!(
                                "number at {path} is an integer beyond ±(2^53−1)"
                            )));
                        }
                    }
                    _ => {
                        return Err(LedgerError::NotCanonicalizable(format!(
                            "number at {path} is not finite"
                        )));
                    }
                }
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                check_numbers(item, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Object(map) => {
            for (key, item) in map {
                let len = path.len();
                path.push('.');
                path.push_str(key);
                check_numbers(item, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Null | Value::Bool(_) | Value::String(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(input: Value, expect: &str) {
        let bytes = canonical_bytes(&input).unwrap();
        assert_eq!(String::from_utf8(bytes).unwrap(), expect);
    }

    #[test]
    fn sorts_keys_by_utf16_code_units_and_drops_whitespace() {
        // RFC 8785 §3.2.3: keys sort by their UTF-16 code units, so "\u{e9}" (é) sorts after
        // "z" and the astral "\u{1F600}" (surrogates D83D…) sorts before "\u{FB01}" (ﬁ).
        check(
            json!({"z": 1, "a": [true, null], "é": "x", "\u{FB01}": 2, "\u{1F600}": 3}),
            "{\"a\":[true,null],\"z\":1,\"é\":\"x\",\"\u{1F600}\":3,\"\u{FB01}\":2}",
        );
    }

    #[test]
    fn formats_numbers_as_ecmascript_does() {
        check(
            json!([1.0, 1e-7, 0.1, -0.0, 100, 4.5e15, 123.456e-30]),
            "[1,1e-7,0.1,0,100,4500000000000000,1.23456e-28]",
        );
    }

    #[test]
    fn escapes_only_what_rfc_8785_escapes() {
        check(json!("\u{7f}\u{1f}\"\\/é"), "\"\u{7f}\\u001f\\\"\\\\/é\"");
    }

    #[test]
    fn rejects_integers_beyond_two_to_the_53() {
        let err = canonical_bytes(&json!({"a": [1, 9007199254740992u64]})).unwrap_err();
        assert!(err.to_string().contains("$.a[1]"), "{err}");
        assert!(canonical_bytes(&json!(-9007199254740992i64)).is_err());
        assert!(canonical_bytes(&json!(9007199254740991u64)).is_ok());
        assert!(canonical_bytes(&json!(-9007199254740991i64)).is_ok());
        assert!(canonical_bytes(&json!(1e300)).is_err());
    }

    #[test]
    fn rejects_floats_that_are_integers_beyond_two_to_the_53() {
        // 1e21 has no fraction: its canonical form would print as an integer that doubles
        // cannot hold exactly, so it is refused like the integer literal would be.
        assert!(canonical_bytes(&json!(1e21)).is_err());
        assert!(canonical_bytes(&json!(1.5e-300)).is_ok());
    }

    #[test]
    fn non_finite_numbers_never_reach_the_hasher() {
        // The ledger relies on serde_json refusing NaN and infinities at parse time and at
        // construction; this pins that assumption so an upgrade that changes it fails here.
        assert!(serde_json::Number::from_f64(f64::NAN).is_none());
        assert!(serde_json::Number::from_f64(f64::INFINITY).is_none());
        assert!(serde_json::from_str::<Value>("1e400").is_err());
        assert!(serde_json::from_str::<Value>("NaN").is_err());
    }
}
