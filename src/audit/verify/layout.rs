//! The document's shape: its bytes against their canonical form (the first difference
//! reported with its byte offset), the top-level members in order, the selection and the keys.

use crate::audit::problem_code::ExportCode;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{Check, ExportProblem, offset_in, utf16_order};
use crate::audit::document::Selection;
use crate::events::SessionId;
use crate::ledger::canonical::canonical_bytes;
use crate::ledger::checkpoint::NoteVerifier;

/// The document's top level: its members in file order (names unescaped, values as they
/// stand in the file), or any other JSON value.
pub(super) enum TopLevel<'a> {
    Object(Vec<(String, &'a RawValue)>),
    Other(Value),
}

pub(super) fn top_level(bytes: &[u8]) -> Result<TopLevel<'_>, serde_json::Error> {
    let raw: &RawValue = serde_json::from_slice(bytes)?;
    if raw.get().starts_with('{') {
        Ok(TopLevel::Object(
            serde_json::from_str::<Members<'_>>(raw.get())?.0,
        ))
    } else {
        Ok(TopLevel::Other(serde_json::from_str(raw.get())?))
    }
}

/// An object's members in file order, repeats included, values unparsed.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for Members<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    members.push((name, map.next_value::<&'de RawValue>()?));
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Visit)
    }
}

impl Check {
    /// Records that the document departs from canonical form at byte `at` (the earliest place
    /// found is reported, once, by [`Check::report_not_canonical`]).
    pub(super) fn not_canonical_at(&mut self, at: usize, detail: String) {
        if self
            .not_canonical
            .as_ref()
            .is_none_or(|(first, _)| at < *first)
        {
            self.not_canonical = Some((at, detail));
        }
    }

    /// Compares the canonical bytes of a part of the document with the part, found at byte
    /// `offset` of the file.
    pub(super) fn compare_canonical(&mut self, canonical: &[u8], part: &[u8], offset: usize) {
        if canonical != part {
            let at = canonical
                .iter()
                .zip(part)
                .position(|(a, b)| a != b)
                .unwrap_or(canonical.len().min(part.len()));
            self.not_canonical_at(offset + at, String::new());
        }
    }

    /// The `not_canonical` problem, first in the report as the whole-document check it stands
    /// for.
    pub(super) fn report_not_canonical(&mut self) {
        let Some((at, detail)) = self.not_canonical.take() else {
            return;
        };
        self.canonical = false;
        let detail = if detail.is_empty() {
            format!(
                "the file is not in RFC 8785 canonical form (first difference at byte {at}); an \
                 export must be kept byte for byte as written"
            )
        } else {
            detail
        };
        self.problems.insert(
            0,
            ExportProblem {
                code: ExportCode::NotCanonical,
                seq: None,
                path: "$".to_owned(),
                detail,
            },
        );
    }

    /// Checks that the top level is laid out canonically: `{`, the members in sorted order
    /// without repeats, each `"name":value`, separated by single commas, then `}`, with nothing
    /// around. Whether each value is canonical is checked where it is read.
    pub(super) fn layout(&mut self, bytes: &[u8], members: &[(String, &RawValue)]) {
        let mut pos = 0;
        let expect = |pos: &mut usize, piece: &[u8]| -> Result<(), usize> {
            match bytes.get(*pos..*pos + piece.len()) {
                Some(found) if found == piece => {
                    *pos += piece.len();
                    Ok(())
                }
                _ => Err(*pos),
            }
        };
        let result = (|| {
            expect(&mut pos, b"{")?;
            for (i, (name, raw)) in members.iter().enumerate() {
                if i > 0 {
                    if utf16_order(&members[i - 1].0, name) != std::cmp::Ordering::Less {
                        return Err(pos);
                    }
                    expect(&mut pos, b",")?;
                }
                let key = canonical_bytes(&Value::String(name.clone())).map_err(|_| pos)?;
                expect(&mut pos, &key)?;
                expect(&mut pos, b":")?;
                if offset_in(bytes, raw.get()) != pos {
                    return Err(pos);
                }
                pos += raw.get().len();
            }
            expect(&mut pos, b"}")?;
            if pos == bytes.len() { Ok(()) } else { Err(pos) }
        })();
        if let Err(at) = result {
            self.not_canonical_at(at, String::new());
        }
    }

    pub(super) fn selection(&mut self, value: Option<&Value>) -> Option<Selection> {
        let Some(value) = value else {
            self.fail(ExportCode::Malformed, None, "$.selection", "missing");
            return None;
        };
        self.summary.selection = Some(value.clone());
        let parsed = serde_json::from_value::<Selection>(value.clone())
            .ok()
            .filter(|s| {
                let exact_members = value.as_object().map_or(0, Map::len)
                    == match s {
                        Selection::Session { .. } => 1,
                        Selection::Range { .. } => 2,
                    };
                let valid = match s {
                    Selection::Session { session_id } => {
                        SessionId::parse(session_id.as_str()).is_some()
                    }
                    Selection::Range { from_seq, to_seq } => *from_seq >= 1 && from_seq <= to_seq,
                };
                exact_members && valid
            });
        if parsed.is_none() {
            self.fail(
                ExportCode::Malformed,
                None,
                "$.selection",
                "must be {\"sessionId\": <lowercase UUID>} or {\"fromSeq\": a, \"toSeq\": b} with 1 ≤ a ≤ b",
            );
        }
        parsed
    }

    /// The key signatures are checked with: the pinned one, else the file's.
    pub(super) fn keys(
        &mut self,
        doc: &Map<String, Value>,
        origin: Option<&str>,
        pinned: Option<&str>,
    ) -> Option<NoteVerifier> {
        let file_text = self.string(doc, "$", "publicKey");
        let file_key = file_text.and_then(|text| {
            NoteVerifier::from_vkey(text)
                .map_err(|e| {
                    self.fail(ExportCode::BadPublicKey, None, "$.publicKey", e.to_string())
                })
                .ok()
        });
        if let (Some(key), Some(origin)) = (&file_key, origin)
            && key.name() != origin
        {
            self.fail(
                ExportCode::OriginMismatch,
                None,
                "$.publicKey",
                format!(
                    "the key is named {}, but this ledger's key is named {origin}",
                    key.name()
                ),
            );
        }
        let trusted = match pinned {
            Some(text) => match NoteVerifier::from_vkey(text.trim()) {
                Ok(pinned) => {
                    // A file key that does not parse is not the pinned key either.
                    let named = file_key
                        .as_ref()
                        .map(NoteVerifier::to_vkey)
                        .or_else(|| file_text.map(str::to_owned));
                    if let Some(named) = named
                        && file_key.as_ref() != Some(&pinned)
                    {
                        self.fail(
                            ExportCode::KeyMismatch,
                            None,
                            "$.publicKey",
                            format!(
                                "the export names key {named}, not the pinned key {}",
                                pinned.to_vkey()
                            ),
                        );
                    }
                    self.summary.key_pinned = true;
                    Some(pinned)
                }
                Err(e) => {
                    self.fail(ExportCode::BadPinnedKey, None, "--pubkey", e.to_string());
                    None
                }
            },
            None => {
                self.notes.push(
                    "the public key was not pinned: signatures were checked with the key inside \
                     the file, which shows the export is intact but not who made it; pass the \
                     ledger's key, obtained out of band, with --pubkey"
                        .to_owned(),
                );
                file_key
            }
        };
        self.summary.public_key = trusted.as_ref().map(NoteVerifier::to_vkey);
        trusted
    }

    /// Checks that the `events` array is laid out canonically: `[`, the elements separated by
    /// single commas, `]`, with no whitespace. Each element is checked where it is read.
    pub(super) fn array_layout(&mut self, bytes: &[u8], raw: &RawValue, items: &[&RawValue]) {
        let start = offset_in(bytes, raw.get());
        let end = start + raw.get().len();
        let mut pos = start + 1;
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                if bytes.get(pos) != Some(&b',') {
                    self.not_canonical_at(pos, String::new());
                    return;
                }
                pos += 1;
            }
            if offset_in(bytes, item.get()) != pos {
                self.not_canonical_at(pos, String::new());
                return;
            }
            pos += item.get().len();
        }
        if pos + 1 != end {
            self.not_canonical_at(pos, String::new());
        }
    }
}
