//! Whether bytes are already in RFC 8785 form, judged on the bytes themselves.
//!
//! The other side of [`canonical`](super::canonical): there the question is "what bytes does
//! this value hash as?"; here it is "are these stored bytes exactly those bytes?", asked by
//! `verify` of every stored event. Answering it by parsing into a `serde_json::Value` and
//! writing it out again costs an allocation per key and value; this scanner reads the bytes
//! once and allocates nothing. It vouches only for what it can check completely (numbers,
//! strings in the escapes RFC 8785 writes, keys whose UTF-8 order is their UTF-16 order) and
//! answers `None` for anything else, leaving the verdict to the general serializer. Knows
//! nothing of events: the member names it looks for are given by the caller.

use std::ops::Range;

use super::canonical::{MAX_SAFE_INTEGER, utf16_less};

/// Nesting the scanner follows before it gives up (serde_json refuses beyond 128).
const MAX_DEPTH: usize = 64;

/// What [`scan_canonical`] found in bytes it vouches for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalScan {
    /// Where the top-level member named `skip` sits, with the comma that joins it to its
    /// neighbour (the first member takes the comma after it, any other the comma before it),
    /// so that the bytes without this range are the canonical form of the object without
    /// that member.
    pub skip: Option<Range<usize>>,
    /// The string values of every object with exactly one member, named `lone`, whose value
    /// is a string, in document order: each the range between the string's quotes, which holds
    /// no escape.
    pub lone_strings: Vec<Range<usize>>,
}

/// Scans `text`, which must hold one JSON object. `Some` means its bytes are exactly what
/// [`canonical_bytes`](super::canonical::canonical_bytes) writes for the value they parse to (a
/// property test checks this against it); `None` means they are not, or that they hold
/// something the scanner leaves to the general serializer: a key or a `lone` string with an
/// escape in it, keys whose UTF-8 and UTF-16 orders differ, nesting deeper than 64. It takes
/// a `str` because the caller parses the same text again, and checks UTF-8 once for both.
pub fn scan_canonical(text: &str, skip: &str, lone: &str) -> Option<CanonicalScan> {
    let bytes = text.as_bytes();
    let mut scanner = Scanner {
        text,
        bytes,
        at: 0,
        lone: lone.as_bytes(),
        lone_strings: Vec::new(),
    };
    if bytes.first() != Some(&b'{') {
        return None;
    }
    let skip = scanner.object(1, Some(skip.as_bytes()))?;
    (scanner.at == bytes.len()).then_some(CanonicalScan {
        skip,
        lone_strings: scanner.lone_strings,
    })
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    /// The next byte to read.
    at: usize,
    lone: &'a [u8],
    lone_strings: Vec<Range<usize>>,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(depth + 1, None).map(drop),
            b'[' => self.array(depth + 1),
            b'"' => self.string().map(drop),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word).then(|| self.at = end)
    }

    /// An object at `at`; with `skip`, where the member of that name sits.
    fn object(&mut self, depth: usize, skip: Option<&[u8]>) -> Option<Option<Range<usize>>> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.at += 1;
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(None);
        }
        let mut span = None;
        let mut previous: Option<Range<usize>> = None;
        // The value of a first member named `lone`, when it is a string.
        let mut lone = None;
        let mut first = true;
        loop {
            // Where the member starts, with the comma before it unless it is the first.
            let start = if first { self.at } else { self.at - 1 };
            if self.peek()? != b'"' {
                return None;
            }
            let (key, escaped) = self.string()?;
            if escaped {
                return None;
            }
            if let Some(previous) = previous {
                let (p, k) = (self.text.get(previous)?, self.text.get(key.clone())?);
                // Strictly ascending, so no key repeats; in both orders, so the order a parsed
                // map iterates in is the order of the bytes.
                if !(p < k && (p.is_ascii() && k.is_ascii() || utf16_less(p, k))) {
                    return None;
                }
            }
            if self.peek()? != b':' {
                return None;
            }
            self.at += 1;
            let name = self.bytes.get(key.clone())?;
            if first && name == self.lone && self.peek()? == b'"' {
                let (value, escaped) = self.string()?;
                if escaped {
                    return None;
                }
                lone = Some(value);
            } else {
                self.value(depth)?;
            }
            let next = self.peek()?;
            if skip == Some(name) {
                span = Some(if first && next == b',' {
                    start..self.at + 1
                } else {
                    start..self.at
                });
            }
            previous = Some(key);
            self.at += 1;
            match next {
                b',' => first = false,
                b'}' => break,
                _ => return None,
            }
        }
        if first && let Some(value) = lone {
            self.lone_strings.push(value);
        }
        Some(span)
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.at += 1;
        if self.peek()? == b']' {
            self.at += 1;
            return Some(());
        }
        loop {
            self.value(depth)?;
            let next = self.peek()?;
            self.at += 1;
            match next {
                b',' => {}
                b']' => return Some(()),
                _ => return None,
            }
        }
    }

    /// A string at `at` as RFC 8785 writes it: `"` and `\` escaped, the short escapes for
    /// backspace, tab, line feed, form feed and carriage return, `\u00xx` (lowercase) for other
    /// control characters and nothing else. The range between its quotes, and whether it holds
    /// an escape.
    fn string(&mut self) -> Option<(Range<usize>, bool)> {
        self.at += 1;
        let start = self.at;
        let mut escaped = false;
        loop {
            self.at += plain_run(self.bytes.get(self.at..)?);
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    return Some((start..self.at - 1, escaped));
                }
                b'\\' => {
                    escaped = true;
                    let len = match self.bytes.get(self.at + 1)? {
                        b'"' | b'\\' | b'b' | b't' | b'n' | b'f' | b'r' => 2,
                        b'u' => {
                            let code = match self.bytes.get(self.at + 2..self.at + 6)? {
                                [b'0', b'0', hi @ (b'0' | b'1'), lo] => {
                                    (hi - b'0') << 4 | lower_hex_digit(*lo)?
                                }
                                _ => return None,
                            };
                            if matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                                return None;
                            }
                            6
                        }
                        _ => return None,
                    };
                    self.at += len;
                }
                0x00..=0x1f => return None,
                _ => self.at += 1,
            }
        }
    }

    /// A number at `at`, in the form ECMAScript prints the double it parses to: an integer
    /// within ±(2^53−1) without leading zeros or `-0`, or a fraction or exponent exactly as
    /// `ryu-js` (the formatter the general serializer uses) writes it.
    fn number(&mut self) -> Option<()> {
        let start = self.at;
        if self.peek()? == b'-' {
            self.at += 1;
        }
        let digits = self.at;
        self.skip_digits();
        let integer = self.bytes.get(digits..self.at)?;
        if integer.is_empty() || (integer.len() > 1 && integer[0] == b'0') {
            return None;
        }
        if !matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            // Sixteen digits always hold 2^53−1; more never fit below it without a leading zero.
            if integer.len() > 16 || (integer == b"0" && digits > start) {
                return None;
            }
            let magnitude: u64 = self.text.get(digits..self.at)?.parse().ok()?;
            return (magnitude <= MAX_SAFE_INTEGER).then_some(());
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if self.skip_digits() == 0 {
                return None;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if self.skip_digits() == 0 {
                return None;
            }
        }
        let token = self.text.get(start..self.at)?;
        // Parsed by serde_json itself, so the double is the one a parsed `Value` would hold.
        let double: f64 = serde_json::from_str(token).ok()?;
        if double.fract() == 0.0 && double.abs() > MAX_SAFE_INTEGER as f64 {
            return None;
        }
        (ryu_js::Buffer::new().format_finite(double) == token).then_some(())
    }

    /// Skips ASCII digits; how many.
    fn skip_digits(&mut self) -> usize {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        self.at - start
    }
}

/// How many bytes at the start of `bytes` a string holds as they are: none of `"`, `\` or a
/// control character. Looks at eight bytes at a time, as serde_json does, since this is most
/// of the scanner's work.
fn plain_run(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    /// Whether any byte of `x` is below `n` (`n` ≤ 128): a classic bit trick, exact as to
    /// whether there is one, not as to where.
    fn any_below(x: u64, n: u8) -> bool {
        x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH != 0
    }
    let mut run = 0;
    for chunk in bytes.chunks_exact(8) {
        let Ok(chunk) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let x = u64::from_le_bytes(chunk);
        if any_below(x ^ (ONES * u64::from(b'"')), 1)
            || any_below(x ^ (ONES * u64::from(b'\\')), 1)
            || any_below(x, 0x20)
        {
            break;
        }
        run += 8;
    }
    run + bytes
        .iter()
        .skip(run)
        .take_while(|&&b| b != b'"' && b != b'\\' && b >= 0x20)
        .count()
}

fn lower_hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::ledger::canonical::canonical_bytes;

    /// What the scanner says of `input`, with the ranges it found as the text they cover.
    fn scan(input: &str) -> Option<(Option<&str>, Vec<&str>)> {
        let found = scan_canonical(input, "hash", "textCommitment")?;
        Some((
            found.skip.map(|r| &input[r]),
            found.lone_strings.into_iter().map(|r| &input[r]).collect(),
        ))
    }

    #[test]
    fn finds_the_skipped_member_with_its_comma_and_lone_strings_in_order() {
        assert_eq!(
            scan(r#"{"a":[{"textCommitment":"x"},{"b":{"textCommitment":"y"}}],"hash":"h","z":2}"#),
            Some((Some(r#","hash":"h""#), vec!["x", "y"]))
        );
        assert_eq!(
            scan(r#"{"hash":1,"z":2}"#),
            Some((Some(r#""hash":1,"#), vec![]))
        );
        assert_eq!(scan(r#"{"hash":{}}"#), Some((Some(r#""hash":{}"#), vec![])));
        // Not lone: a second member, or a value that is not a string.
        assert_eq!(
            scan(r#"{"a":{"textCommitment":"x","z":1},"b":{"textCommitment":1}}"#),
            Some((None, vec![]))
        );
        // Nested `hash` members are not the top-level one.
        assert_eq!(scan(r#"{"a":{"hash":1}}"#), Some((None, vec![])));
    }

    #[test]
    fn refuses_what_is_not_canonical_and_leaves_the_rare_to_the_general_serializer() {
        for input in [
            r#"{"b":1,"a":2}"#,
            r#"{"a":1,"a":2}"#,
            r#"{ "a":1}"#,
            r#"{"a":1} "#,
            r#"{"a":01}"#,
            r#"{"a":-0}"#,
            r#"{"a":1.0}"#,
            r#"{"a":1E-7}"#,
            r#"{"a":9007199254740992}"#,
            r#"{"a":1e21}"#,
            r#"{"a":"\/"}"#,
            r#"{"a":"\u0041"}"#,
            r#"{"a":"\u000a"}"#,
            r#"{"a":"\u001F"}"#,
            r#"{"\u001f":1}"#,
            r#"{"a":{"textCommitment":"\t"}}"#,
            r#"[1]"#,
            r#"{"a":tru}"#,
            r#"{"a":[1,]}"#,
            r#"{"a":1"#,
        ] {
            assert_eq!(scan(input), None, "{input}");
        }
        assert_eq!(
            scan(r#"{"a":"\u001f\n","b":-1,"c":1e-7,"d":0.5}"#),
            Some((None, vec![]))
        );
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(70), "]".repeat(70));
        assert_eq!(scan(&deep), None);
    }

    /// Values of the shapes events take, and of the shapes the scanner refuses.
    fn any_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|i| json!(i)),
            (-(1i64 << 54)..(1i64 << 54)).prop_map(|i| json!(i)),
            any::<u64>().prop_map(|u| json!(u)),
            (-1e30f64..1e30).prop_map(|f| json!(f)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| json!(f)),
            "\\PC{0,12}".prop_map(Value::String),
            "[\\x00-\\x20\"\\\\/a\\x7f\u{e9}\u{fb01}\u{1f600}]{0,8}".prop_map(Value::String),
            "[0-9a-f]{0,4}".prop_map(|s| json!({ "textCommitment": s })),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(
                    "[a-z\u{e9}\u{fb01}\u{1f600}]{0,3}|hash|textCommitment",
                    inner,
                    0..6
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// The ranges `scan_canonical` should find in the canonical bytes of `value`, by walking
    /// the value (`text_refs` walks events the same way).
    fn lone_strings(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if map.len() == 1
                    && let Some(Value::String(s)) = map.get("textCommitment")
                {
                    out.push(s.clone());
                    return;
                }
                map.values().for_each(|v| lone_strings(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| lone_strings(v, out)),
            _ => {}
        }
    }

    /// Damage to try: bytes that break the syntax, and bytes that keep it but break the
    /// canonical form (a repeated key, a needless escape, a number ECMAScript prints otherwise).
    const DAMAGE: &[&[u8]] = &[
        b"{",
        b"}",
        b"[",
        b"]",
        b":",
        b",",
        b"\"",
        b"\\",
        b" ",
        b"0",
        b"1",
        b"9",
        b".",
        b"e",
        b"-",
        b"t",
        b"/",
        b"a",
        b"\x1f",
        b"\xc3\xa9",
        b"\xff",
        b"-0",
        b"01",
        b"1.0",
        b"1E2",
        b"1e-7",
        b"9007199254740993",
        b"\\/",
        b"\\u0041",
        b"\\u000a",
        b"\\u001F",
        b"\\u001f",
        b"\"a\":1,",
        b"\"b\":[],",
        b"\"hash\":0,",
        b"{\"textCommitment\":\"ab\"}",
        b"\"textCommitment\":\"ab\",",
    ];

    /// `bytes` with `with` written over (`how` 0), inserted at (1) or, as many bytes, removed
    /// from (2) position `at`.
    fn damaged(bytes: &[u8], at: usize, how: u8, with: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        let at = at % (out.len() + 1);
        let end = (at + with.len()).min(out.len());
        let (range, with) = match how % 3 {
            0 => (at..end, with),
            1 => (at..at, with),
            _ => (at..end, &[][..]),
        };
        out.splice(range, with.iter().copied());
        out
    }

    /// If the scanner vouches for `bytes`, they parse, they are what the general serializer
    /// writes, and what it found is what a walk of the parsed value finds.
    fn check_vouched(bytes: &[u8]) {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        let Some(found) = scan_canonical(text, "hash", "textCommitment") else {
            return;
        };
        let shown = String::from_utf8_lossy(bytes);
        let parsed: Value = serde_json::from_slice(bytes).expect(&shown);
        assert_eq!(canonical_bytes(&parsed).expect(&shown), bytes, "{shown}");
        let mut want = Vec::new();
        lone_strings(&parsed, &mut want);
        let got: Vec<String> = found
            .lone_strings
            .iter()
            .map(|r| String::from_utf8(bytes[r.clone()].to_vec()).unwrap())
            .collect();
        assert_eq!(got, want, "{shown}");
        let mut without = parsed.clone();
        let removed = without.as_object_mut().expect(&shown).remove("hash");
        assert_eq!(found.skip.is_some(), removed.is_some(), "{shown}");
        let mut cut = bytes.to_vec();
        if let Some(span) = found.skip {
            cut.drain(span);
        }
        assert_eq!(cut, canonical_bytes(&without).unwrap(), "{shown}");
    }

    #[test]
    fn vouches_for_no_damage_at_any_place() {
        let value = json!({
            "a": {"a": 0, "b": [-1, 12, 0.5, 1e-7, -2.5e-30, true, null, false]},
            "b": [{"textCommitment": "0f"}, {"textCommitment": "1e", "z": {}}, []],
            "hash": "ab",
            "s": "tab\t nl\n us\u{1f} quote\" slash/ é \u{7f}",
            "z": {"b": {"textCommitment": 1}, "é": "x"}
        });
        let canonical = canonical_bytes(&value).unwrap();
        check_vouched(&canonical);
        let text = String::from_utf8(canonical.clone()).unwrap();
        assert!(scan_canonical(&text, "hash", "textCommitment").is_some());
        for at in 0..=canonical.len() {
            for with in DAMAGE {
                for how in 0..3 {
                    check_vouched(&damaged(&canonical, at, how, with));
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn vouches_only_for_canonical_bytes_and_finds_what_a_parse_finds(
            map in proptest::collection::btree_map("[a-c]|hash", any_value(), 0..5),
            at in 0usize..4096,
            how in 0u8..3,
            with in proptest::sample::select(DAMAGE),
        ) {
            let value = Value::Object(map.into_iter().collect());
            let Ok(canonical) = canonical_bytes(&value) else { return Ok(()) };
            check_vouched(&canonical);
            check_vouched(&damaged(&canonical, at, how, with));
        }

        #[test]
        fn plain_runs_stop_where_a_byte_by_byte_look_stops(
            bytes in proptest::collection::vec(
                proptest::sample::select(b"a \x00\x1f\x20\"\\\x7f\x80\xff!#[]".to_vec()),
                0..40,
            ),
        ) {
            let want = bytes.iter().take_while(|&&b| b != b'"' && b != b'\\' && b >= 0x20).count();
            proptest::prop_assert_eq!(plain_run(&bytes), want);
        }

        #[test]
        fn vouches_for_what_the_general_serializer_writes_of_plain_values(
            map in proptest::collection::btree_map("[a-z]{0,2}|hash", any_value(), 0..5),
        ) {
            let value = Value::Object(map.into_iter().collect());
            let Ok(canonical) = canonical_bytes(&value) else { return Ok(()) };
            let text = String::from_utf8(canonical.clone()).unwrap();
            // Everything but keys out of UTF-16 order and escapes in keys or lone strings.
            let plain = !text.contains("\\") && !text.contains('\u{fb01}');
            if plain {
                proptest::prop_assert!(scan_canonical(&text, "hash", "textCommitment").is_some(), "{}", text);
            }
        }
    }
}
