//! RFC 8785 (JCS) canonical bytes, with the number rules the ledger adds.
//!
//! Owns one question: "what exact bytes does this JSON value hash as?". It refuses values whose
//! canonical form would be ambiguous across implementations: non-finite numbers (which JSON
//! cannot carry) and integers outside ±(2^53−1), which IEEE-754 doubles — and so every JCS
//! implementation — cannot represent exactly. Knows nothing of events or storage.

use std::io::Write;

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

/// The canonical bytes of `value` for the plain values events are made of, written into `out`
/// (cleared first), or `None` when `value` holds anything this writer leaves to
/// [`canonical_bytes`]: a number that is not an integer within ±(2^53−1), or an object whose
/// keys' UTF-8 order is not already their UTF-16 order. When it returns `Some`, `out` is exactly
/// what [`canonical_bytes`] gives (a property test checks this against it), and the range
/// is where the top-level member named `skip` sits (with the comma that joins it to its
/// neighbour), so that `out` without that range is the canonical form of `value` without it.
///
/// It exists for `verify`, which checks every stored event: this writer allocates nothing but
/// `out`, where the general serializer builds a sorted copy of every object.
pub fn write_plain_canonical(
    value: &Value,
    skip: &str,
    out: &mut Vec<u8>,
) -> Option<Option<std::ops::Range<usize>>> {
    out.clear();
    let Value::Object(map) = value else {
        write_plain(value, out)?;
        return Some(None);
    };
    let mut span = None;
    out.push(b'{');
    let mut previous: Option<&str> = None;
    let count = map.len();
    for (i, (key, item)) in map.iter().enumerate() {
        if previous.is_some_and(|p| !utf16_less(p, key)) {
            return None;
        }
        previous = Some(key);
        let start = out.len();
        if i > 0 {
            out.push(b',');
        }
        write_string(key, out);
        out.push(b':');
        write_plain(item, out)?;
        if key == skip {
            // The first member takes the comma after it; any other, the comma before it.
            span = Some(if i == 0 && count > 1 {
                start..out.len() + 1
            } else {
                start..out.len()
            });
        }
    }
    out.push(b'}');
    Some(span)
}

/// Whether `a` sorts strictly before `b` by UTF-16 code units (RFC 8785 §3.2.3).
fn utf16_less(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        return a < b;
    }
    a.encode_utf16().lt(b.encode_utf16())
}

fn write_plain(value: &Value, out: &mut Vec<u8>) -> Option<()> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                if u > MAX_SAFE_INTEGER {
                    return None;
                }
                write!(out, "{u}").ok()?;
            } else if let Some(i) = n.as_i64() {
                if i.unsigned_abs() > MAX_SAFE_INTEGER {
                    return None;
                }
                write!(out, "{i}").ok()?;
            } else {
                return None;
            }
        }
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_plain(item, out)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            let mut previous: Option<&str> = None;
            for (i, (key, item)) in map.iter().enumerate() {
                if previous.is_some_and(|p| !utf16_less(p, key)) {
                    return None;
                }
                previous = Some(key);
                if i > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write_plain(item, out)?;
            }
            out.push(b'}');
        }
    }
    Some(())
}

/// A JSON string as RFC 8785 writes it: `"` and `\\` escaped, the short escapes for
/// backspace, tab, line feed, form feed and carriage return, `\u00xx` (lowercase) for other
/// control characters, everything else as it is.
fn write_string(s: &str, out: &mut Vec<u8>) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x09 => b"\\t",
            0x0a => b"\\n",
            0x0c => b"\\f",
            0x0d => b"\\r",
            0x00..=0x1f => &[],
            _ => continue,
        };
        out.extend_from_slice(&bytes[run..i]);
        run = i + 1;
        if escape.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(DIGITS[usize::from(b >> 4)]);
            out.push(DIGITS[usize::from(b & 0x0f)]);
        } else {
            out.extend_from_slice(escape);
        }
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
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

    /// Values of the shapes events take, and of the shapes the plain writer refuses.
    fn any_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|i| json!(i)),
            (-(1i64 << 54)..(1i64 << 54)).prop_map(|i| json!(i)),
            any::<u64>().prop_map(|u| json!(u)),
            (-1e30f64..1e30).prop_map(|f| json!(f)),
            "\\PC{0,12}".prop_map(Value::String),
            "[\\x00-\\x20\"\\\\/a\\x7f\u{e9}\u{fb01}\u{1f600}]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(
                    "[a-z\u{e9}\u{fb01}\u{1f600}]{0,3}|hash",
                    inner,
                    0..6
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn the_plain_writer_writes_what_the_general_one_writes(value in any_value()) {
            let mut out = Vec::new();
            if let Some(span) = write_plain_canonical(&value, "hash", &mut out) {
                proptest::prop_assert_eq!(&out, &canonical_bytes(&value).unwrap());
                let mut without = value.clone();
                if let Value::Object(map) = &mut without {
                    proptest::prop_assert_eq!(span.is_some(), map.remove("hash").is_some());
                }
                let mut cut = out.clone();
                if let Some(span) = span {
                    cut.drain(span);
                }
                proptest::prop_assert_eq!(cut, canonical_bytes(&without).unwrap());
            }
        }
    }

    #[test]
    fn the_plain_writer_leaves_floats_and_utf16_reordering_to_the_general_one() {
        let mut out = Vec::new();
        assert!(write_plain_canonical(&json!({"a": 1.5}), "hash", &mut out).is_none());
        assert!(write_plain_canonical(&json!([9007199254740992u64]), "hash", &mut out).is_none());
        assert!(
            write_plain_canonical(&json!({"\u{FB01}": 1, "\u{1F600}": 2}), "hash", &mut out)
                .is_none()
        );
        let span = write_plain_canonical(&json!({"a": 1, "hash": "h", "z": 2}), "hash", &mut out);
        assert_eq!(out, b"{\"a\":1,\"hash\":\"h\",\"z\":2}");
        assert_eq!(span, Some(Some(6..17)));
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
