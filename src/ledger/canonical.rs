//! RFC 8785 (JCS) canonical bytes, with the number rules the ledger adds.
//!
//! Owns one question: "what exact bytes does this JSON value hash as?". It refuses values whose
//! canonical form would be ambiguous across implementations: non-finite numbers (which JSON
//! cannot carry) and integers outside ±(2^53−1), which IEEE-754 doubles — and so every JCS
//! implementation — cannot represent exactly. Knows nothing of events or storage.

use std::cmp::Ordering;

use serde_json::Value;

use super::LedgerError;

/// The largest integer magnitude every JSON implementation represents exactly: 2^53 − 1.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Canonical RFC 8785 bytes of `value`, after checking its numbers.
///
/// Written here rather than through `serde_json_canonicalizer` (which the tests keep as the
/// reference this must equal byte for byte): that crate re-parses every key and buffers every
/// member, and was a fifth of the writer's time per event. Strings are escaped as RFC 8785
/// §3.2.2.2 says (`"`, `\`, and U+0000–U+001F, five of them by their short forms, the rest as
/// `\u00xx`); numbers are ECMAScript's shortest form of the double (`ryu-js`); members are
/// sorted by the UTF-16 code units of their keys.
pub fn canonical_bytes(value: &Value) -> Result<Vec<u8>, LedgerError> {
    let mut out = Vec::with_capacity(1024);
    write_canonical(value, &mut out).map_err(Refused::into_error)?;
    Ok(out)
}

/// Whether `a` sorts strictly before `b` by UTF-16 code units (RFC 8785 §3.2.3).
pub(crate) fn utf16_less(a: &str, b: &str) -> bool {
    utf16_cmp(a, b) == Ordering::Less
}

fn utf16_cmp(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

/// A number that cannot be hashed portably: what is wrong with it, and where it is (the steps
/// from it up to the root, innermost first).
struct Refused {
    what: &'static str,
    steps: Vec<Step>,
}

enum Step {
    Index(usize),
    Key(String),
}

impl Refused {
    fn within(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }

    /// The error, naming the place in JSONPath-like form (`$.a[1]`).
    fn into_error(self) -> LedgerError {
        let mut path = String::from("$");
        for step in self.steps.iter().rev() {
            match step {
                Step::Index(i) => path.push_str(&format!("[{i}]")),
                Step::Key(key) => {
                    path.push('.');
                    path.push_str(key);
                }
            }
        }
        LedgerError::NotCanonicalizable(self.what.replace("{path}", &path))
    }
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) -> Result<(), Refused> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            let f = portable(n).map_err(|what| Refused {
                what,
                steps: Vec::new(),
            })?;
            out.extend_from_slice(ryu_js::Buffer::new().format_finite(f).as_bytes());
        }
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out).map_err(|r| r.within(Step::Index(i)))?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            // Keys are unique, so an unstable sort gives the one order.
            members.sort_unstable_by(|a, b| utf16_cmp(a.0, b.0));
            out.push(b'{');
            for (i, (key, member)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write_canonical(member, out).map_err(|r| r.within(Step::Key(key.clone())))?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// `text` as an RFC 8785 string: quoted, with `"`, `\` and the control characters escaped.
fn write_string(text: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = text.as_bytes();
    let mut plain = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x09 => b"\\t",
            0x0a => b"\\n",
            0x0c => b"\\f",
            0x0d => b"\\r",
            0x00..=0x1f => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ],
            _ => continue,
        };
        out.extend_from_slice(&bytes[plain..i]);
        out.extend_from_slice(escape);
        plain = i + 1;
    }
    out.extend_from_slice(&bytes[plain..]);
    out.push(b'"');
}

/// The number as the double every JCS implementation reads it as, unless that is ambiguous:
/// an integer beyond ±(2^53−1) (which doubles cannot all represent) or a non-finite number.
fn portable(n: &serde_json::Number) -> Result<f64, &'static str> {
    const BEYOND: &str = "integer at {path} is beyond ±(2^53−1)";
    if let Some(u) = n.as_u64() {
        return if u > MAX_SAFE_INTEGER {
            Err(BEYOND)
        } else {
            Ok(u as f64)
        };
    }
    if let Some(i) = n.as_i64() {
        return if i.unsigned_abs() > MAX_SAFE_INTEGER {
            Err(BEYOND)
        } else {
            Ok(i as f64)
        };
    }
    match n.as_f64() {
        Some(f) if f.is_finite() => {
            if f.fract() == 0.0 && f.abs() > MAX_SAFE_INTEGER as f64 {
                Err("number at {path} is an integer beyond ±(2^53−1)")
            } else {
                Ok(f)
            }
        }
        _ => Err("number at {path} is not finite"),
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
        let every_control: String = (0u8..=0x20).map(char::from).collect();
        let value = json!({ every_control.clone(): every_control });
        assert_eq!(
            canonical_bytes(&value).unwrap(),
            serde_json_canonicalizer::to_vec(&value).unwrap()
        );
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

    /// Whether a double is a number the ledger hashes (not one `canonical_bytes` refuses).
    fn hashable(f: f64) -> bool {
        f.is_finite() && (f.fract() != 0.0 || f.abs() <= MAX_SAFE_INTEGER as f64)
    }

    /// Values of every JSON shape, with the keys and strings RFC 8785 treats specially.
    fn any_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-(1i64 << 53) + 1..(1i64 << 53)).prop_map(|i| json!(i)),
            (0u64..(1u64 << 53)).prop_map(|u| json!(u)),
            (-1e15f64..1e15).prop_map(|f| json!(f)),
            (-1f64..1.0).prop_map(|f| json!(f)),
            // Any double, those the ledger refuses brought into range (with a fraction).
            any::<f64>()
                .prop_map(|f| match f {
                    f if hashable(f) => f,
                    f if f.is_finite() => f * 1e-300,
                    _ => 0.5,
                })
                .prop_map(|f| json!(f)),
            "\\PC{0,12}".prop_map(Value::String),
            "[\\x00-\\x20\"\\\\/a\\x7f\u{e9}\u{fb01}\u{1f600}\u{ffff}]{0,8}"
                .prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(
                    "[a-z\u{e9}\u{fb01}\u{1f600}\u{ffff}\\x00\"]{0,3}",
                    inner,
                    0..6
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// The same bytes as `serde_json_canonicalizer`, the reference implementation.
        #[test]
        fn equals_the_reference_canonicalizer(value in any_value()) {
            let ours = canonical_bytes(&value).unwrap();
            let reference = serde_json_canonicalizer::to_vec(&value).unwrap();
            proptest::prop_assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&reference)
            );
            proptest::prop_assert_eq!(ours, reference);
        }
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
