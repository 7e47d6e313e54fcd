//! Offline verification of an export from its bytes alone: canonical form, the keys, the signed
//! checkpoint, every event (canonical, hash, ledger, chain links, inclusion proof), completeness
//! of a seq range, every text against its commitment or its erasure, the consistency proof to an
//! earlier checkpoint, the time-stamp tokens (`timestamps.rs`), and the export signature.
//! docs/ledger-format.md §10.3 is the algorithm; the form of each event is judged by
//! `schemas/event.v1.json` through [`super::json_schema`].
//!
//! Reports every problem it finds, each with a stable code, the seq it concerns and the JSON path
//! of the offending member, rather than stopping at the first. Expected outcomes are values: it
//! never fails and never panics, whatever the bytes. It knows no store, no clock and no network.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::document::{FORMAT, SIGNATURE_MEMBER, Selection, signed_body};
use super::json_schema::event_v1;
use crate::events::{ENVELOPE_VERSION, SessionId};
use crate::ledger::LedgerError;
use crate::ledger::canonical::canonical_bytes;
use crate::ledger::checkpoint::{Checkpoint, NoteVerifier, kept_note, open_note};
use crate::ledger::hash::{
    AuditExportHasher, GENESIS_PREV_HASH, event_value_hash, parse_hex32, text_commitment,
};
use crate::ledger::keyfile::key_name;
use crate::ledger::merkle::{
    Blake3Hasher, MerkleHasher, NodeHash, verify_consistency, verify_inclusion,
};

/// The members a `thinkledger-audit/1` document may have.
const MEMBERS: &[&str] = &[
    "format",
    "ledgerId",
    "generatedAt",
    "selection",
    "publicKey",
    "checkpoint",
    "events",
    "texts",
    "consistency",
    SIGNATURE_MEMBER,
    "timestamps",
];

/// What to trust and what to check beyond the document.
#[derive(Default)]
pub struct VerifyOptions<'a> {
    /// The ledger's verifier key as obtained out of band. Without it the key inside the file is
    /// used, which proves integrity but not who made the export.
    pub pubkey: Option<&'a str>,
    /// An earlier checkpoint (signed note text) the reviewer holds: the export must prove that
    /// its log extends it.
    pub since_checkpoint: Option<&'a str>,
    /// Called with (events done, events in all) while events are checked.
    pub progress: Option<&'a dyn Fn(u64, u64)>,
    /// The certificate(s) of the time-stamping authority the reviewer trusts (PEM or DER):
    /// the export's time-stamp tokens must hold against it, and there must be one.
    pub tsa_cert: Option<&'a [u8]>,
}

/// One thing found wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportProblem {
    /// Stable code (docs/ledger-format.md §10.4 lists them).
    pub code: &'static str,
    /// The event concerned, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// JSON path of the offending member (`$.events[3].event.prevHash`), or the option
    /// (`--pubkey`, `--since-checkpoint`) that does not hold.
    pub path: String,
    pub detail: String,
}

/// What was verified.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportSummary {
    pub ledger_id: Option<String>,
    pub selection: Option<Value>,
    pub generated_at: Option<String>,
    /// Events in the export.
    pub events: u64,
    /// Of those, events the selection names.
    pub selected_events: u64,
    /// Of those, erasure events included only because a text mark relies on them.
    pub erasure_events: u64,
    /// Texts re-hashed and found to match their commitments.
    pub texts_verified: u64,
    /// Texts shown as erased, each backed by an included erasure event.
    pub texts_erased: u64,
    /// Tree size of the signed checkpoint.
    pub checkpoint_size: Option<u64>,
    /// The verifier key signatures were checked with.
    pub public_key: Option<String>,
    /// Whether that key was pinned by the reviewer (`--pubkey`) rather than read from the file.
    pub key_pinned: bool,
    /// Size of the earlier checkpoint (given with `--since-checkpoint`) the log was proven to
    /// extend.
    pub extends_checkpoint: Option<u64>,
    /// The time-stamp tokens that held against `--tsa-cert`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timestamps: Vec<super::TimestampSeen>,
}

/// The result of [`verify_export`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportReport {
    /// True when no problem was found.
    pub passed: bool,
    pub problems: Vec<ExportProblem>,
    pub summary: ExportSummary,
    /// Things a reviewer should know that are not failures (e.g. the key was not pinned).
    pub notes: Vec<String>,
}

/// Verifies an export's bytes, trusting `pubkey` if given, and checking that the log extends
/// `since_checkpoint` if given.
pub fn verify_export(
    bytes: &[u8],
    pubkey: Option<&str>,
    since_checkpoint: Option<&str>,
) -> ExportReport {
    verify_export_with(
        bytes,
        &VerifyOptions {
            pubkey,
            since_checkpoint,
            progress: None,
            tsa_cert: None,
        },
    )
}

/// Verifies an export's bytes as `options` say.
pub fn verify_export_with(bytes: &[u8], options: &VerifyOptions<'_>) -> ExportReport {
    let mut check = Check::default();
    check.document(bytes, options);
    ExportReport {
        passed: check.problems.is_empty(),
        problems: check.problems,
        summary: check.summary,
        notes: check.notes,
    }
}

/// What the checks learn about one exported event that later checks need.
struct EventSeen {
    /// Position in `events`.
    index: usize,
    /// Whether the selection names it.
    selected: bool,
    /// Commitments its `TextsErased` facts name.
    erases: BTreeSet<String>,
}

/// Where each commitment is referenced: (seq, JSON path) of every place.
type References = BTreeMap<String, Vec<(u64, String)>>;

struct Check {
    problems: Vec<ExportProblem>,
    notes: Vec<String>,
    summary: ExportSummary,
    /// The earliest byte where the file departs from canonical form, with the reason when it
    /// is more than a difference; not yet reported.
    not_canonical: Option<(usize, String)>,
    /// Whether the file is in canonical form (false once `not_canonical` is reported).
    canonical: bool,
}

impl Default for Check {
    fn default() -> Self {
        Self {
            problems: Vec::new(),
            notes: Vec::new(),
            summary: ExportSummary::default(),
            not_canonical: None,
            canonical: true,
        }
    }
}

impl Check {
    fn fail(
        &mut self,
        code: &'static str,
        seq: Option<u64>,
        path: impl Into<String>,
        detail: impl Into<String>,
    ) {
        self.problems.push(ExportProblem {
            code,
            seq,
            path: path.into(),
            detail: detail.into(),
        });
    }

    /// A required string member, or a `malformed` problem.
    fn string<'v>(
        &mut self,
        object: &'v Map<String, Value>,
        path: &str,
        name: &str,
    ) -> Option<&'v str> {
        match object.get(name) {
            Some(Value::String(s)) => Some(s),
            Some(_) => {
                self.fail("malformed", None, member(path, name), "must be a string");
                None
            }
            None => {
                self.fail("malformed", None, member(path, name), "missing");
                None
            }
        }
    }

    fn document(&mut self, bytes: &[u8], options: &VerifyOptions<'_>) {
        let members = match top_level(bytes) {
            Ok(TopLevel::Object(members)) => members,
            Ok(TopLevel::Other(value)) => {
                match canonical_bytes(&value) {
                    Ok(canonical) => self.compare_canonical(&canonical, bytes, 0),
                    Err(e) => self.not_canonical_at(0, e.to_string()),
                }
                self.report_not_canonical();
                self.fail("malformed", None, "$", "the document is not a JSON object");
                return;
            }
            Err(e) => {
                self.fail("unparseable", None, "$", format!("not JSON: {e}"));
                return;
            }
        };
        self.layout(bytes, &members);
        // Every member but `events` is small: it is read whole. `events` is read one element
        // at a time; a placeholder keeps its place among the member names.
        let mut doc = Map::new();
        let mut events_raw = None;
        for (name, raw) in &members {
            if name == "events" {
                events_raw = Some(*raw);
                doc.insert(name.clone(), Value::Null);
                continue;
            }
            match serde_json::from_str::<Value>(raw.get()) {
                Ok(value) => {
                    let at = offset_in(bytes, raw.get());
                    match canonical_bytes(&value) {
                        Ok(canonical) => {
                            self.compare_canonical(&canonical, raw.get().as_bytes(), at)
                        }
                        Err(e) => self.not_canonical_at(at, e.to_string()),
                    }
                    doc.insert(name.clone(), value);
                }
                Err(e) => {
                    self.fail("unparseable", None, "$", format!("not JSON: {e}"));
                    return;
                }
            }
        }
        let doc = &doc;
        for name in doc.keys() {
            if !MEMBERS.contains(&name.as_str()) {
                self.fail(
                    "unknown_member",
                    None,
                    member("$", name),
                    "not a member of thinkledger-audit/1",
                );
            }
        }
        match self.string(doc, "$", "format") {
            Some(FORMAT) | None => {}
            Some(_) => self.fail(
                "unknown_format",
                None,
                "$.format",
                format!(
                    "format is {}; this verifier reads {FORMAT}",
                    shown(doc.get("format"))
                ),
            ),
        }
        let ledger_id = self.string(doc, "$", "ledgerId");
        self.summary.ledger_id = ledger_id.map(str::to_owned);
        self.summary.generated_at = self.string(doc, "$", "generatedAt").map(str::to_owned);
        let origin = ledger_id.map(key_name);
        let selection = self.selection(doc.get("selection"));
        let trusted = self.keys(doc, origin.as_deref(), options.pubkey);
        let checkpoint = self.checkpoint(doc, trusted.as_ref(), origin.as_deref());
        let seen = self.events(
            doc,
            bytes,
            events_raw,
            ledger_id,
            checkpoint.as_ref(),
            selection.as_ref(),
            options,
        );
        if let Some(selection) = &selection {
            self.completeness(selection, &seen);
        }
        self.consistency(
            doc,
            checkpoint.as_ref(),
            trusted.as_ref(),
            origin.as_deref(),
            options,
        );
        let stamps = super::timestamps::check_timestamps(
            doc.get("timestamps"),
            checkpoint.as_ref(),
            trusted.as_ref(),
            origin.as_deref(),
            options.tsa_cert,
        );
        self.problems.extend(stamps.problems);
        self.notes.extend(stamps.notes);
        self.summary.timestamps = stamps.seen;
        self.report_not_canonical();
        self.export_signature(bytes, &members, doc, trusted.as_ref(), origin.as_deref());
    }

    /// Records that the document departs from canonical form at byte `at` (the earliest place
    /// found is reported, once, by [`Check::report_not_canonical`]).
    fn not_canonical_at(&mut self, at: usize, detail: String) {
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
    fn compare_canonical(&mut self, canonical: &[u8], part: &[u8], offset: usize) {
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
    fn report_not_canonical(&mut self) {
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
                code: "not_canonical",
                seq: None,
                path: "$".to_owned(),
                detail,
            },
        );
    }

    /// Checks that the top level is laid out canonically: `{`, the members in sorted order
    /// without repeats, each `"name":value`, separated by single commas, then `}`, with nothing
    /// around. Whether each value is canonical is checked where it is read.
    fn layout(&mut self, bytes: &[u8], members: &[(String, &RawValue)]) {
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

    fn selection(&mut self, value: Option<&Value>) -> Option<Selection> {
        let Some(value) = value else {
            self.fail("malformed", None, "$.selection", "missing");
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
                "malformed",
                None,
                "$.selection",
                "must be {\"sessionId\": <lowercase UUID>} or {\"fromSeq\": a, \"toSeq\": b} with 1 ≤ a ≤ b",
            );
        }
        parsed
    }

    /// The key signatures are checked with: the pinned one, else the file's.
    fn keys(
        &mut self,
        doc: &Map<String, Value>,
        origin: Option<&str>,
        pinned: Option<&str>,
    ) -> Option<NoteVerifier> {
        let file_text = self.string(doc, "$", "publicKey");
        let file_key = file_text.and_then(|text| {
            NoteVerifier::from_vkey(text)
                .map_err(|e| self.fail("bad_public_key", None, "$.publicKey", e.to_string()))
                .ok()
        });
        if let (Some(key), Some(origin)) = (&file_key, origin)
            && key.name() != origin
        {
            self.fail(
                "origin_mismatch",
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
                            "key_mismatch",
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
                    self.fail("bad_pinned_key", None, "--pubkey", e.to_string());
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

    /// The signed checkpoint, parsed even when its signature fails so that the proofs can
    /// still be judged against it.
    fn checkpoint(
        &mut self,
        doc: &Map<String, Value>,
        trusted: Option<&NoteVerifier>,
        origin: Option<&str>,
    ) -> Option<Checkpoint> {
        let note = self.string(doc, "$", "checkpoint")?;
        let checkpoint =
            self.signed_checkpoint(note, trusted, origin, "checkpoint", "$.checkpoint");
        self.summary.checkpoint_size = checkpoint.as_ref().map(Checkpoint::size);
        checkpoint
    }

    /// Opens a signed checkpoint note; `what` names it in problem codes (`checkpoint_…`).
    fn signed_checkpoint(
        &mut self,
        note: &str,
        trusted: Option<&NoteVerifier>,
        origin: Option<&str>,
        what: &'static str,
        path: &str,
    ) -> Option<Checkpoint> {
        let (signature_code, unparseable_code) = match what {
            "checkpoint" => ("checkpoint_signature", "checkpoint_unparseable"),
            _ => ("since_checkpoint_invalid", "since_checkpoint_invalid"),
        };
        match trusted {
            Some(key) => {
                if let Err(e) = open_note(note, std::slice::from_ref(key)) {
                    self.fail(
                        signature_code,
                        None,
                        path,
                        format!("the {what} signature does not verify: {e}"),
                    );
                }
            }
            None => self.fail(
                signature_code,
                None,
                path,
                format!("no usable key to check the {what} with"),
            ),
        }
        let Some(body) = note.rfind("\n\n").and_then(|at| note.get(..=at)) else {
            self.fail(
                unparseable_code,
                None,
                path,
                "not a signed note: no blank line before the signatures",
            );
            return None;
        };
        let checkpoint = match Checkpoint::parse_body(body) {
            Ok(checkpoint) => checkpoint,
            Err(e) => {
                self.fail(
                    unparseable_code,
                    None,
                    path,
                    format!("not a checkpoint: {e}"),
                );
                return None;
            }
        };
        if let Some(origin) = origin
            && checkpoint.origin() != origin
        {
            self.fail(
                "origin_mismatch",
                None,
                path,
                format!(
                    "the {what} is for {}, this ledger is {origin}",
                    checkpoint.origin()
                ),
            );
        }
        Some(checkpoint)
    }

    #[allow(clippy::too_many_arguments)]
    fn events(
        &mut self,
        doc: &Map<String, Value>,
        bytes: &[u8],
        raw: Option<&RawValue>,
        ledger_id: Option<&str>,
        checkpoint: Option<&Checkpoint>,
        selection: Option<&Selection>,
        options: &VerifyOptions<'_>,
    ) -> BTreeMap<u64, EventSeen> {
        let mut seen: BTreeMap<u64, EventSeen> = BTreeMap::new();
        let mut references = References::new();
        let items: Vec<&RawValue> = match raw {
            Some(raw) => match serde_json::from_str::<Vec<&RawValue>>(raw.get()) {
                Ok(items) => {
                    self.array_layout(bytes, raw, &items);
                    items
                }
                Err(_) => {
                    self.fail("malformed", None, "$.events", "must be an array");
                    Vec::new()
                }
            },
            None => {
                self.fail("malformed", None, "$.events", "missing");
                Vec::new()
            }
        };
        let total = u64::try_from(items.len()).unwrap_or(u64::MAX);
        self.summary.events = total;
        // The previous event in the array: its seq and stated hash.
        let mut previous: Option<(u64, Option<String>)> = None;
        for (index, raw_item) in items.iter().enumerate() {
            let at = format!("$.events[{index}]");
            let item: Value = match serde_json::from_str(raw_item.get()) {
                Ok(item) => item,
                Err(e) => {
                    self.fail("unparseable", None, "$", format!("not JSON at {at}: {e}"));
                    continue;
                }
            };
            let offset = offset_in(bytes, raw_item.get());
            match canonical_bytes(&item) {
                Ok(canonical) => {
                    self.compare_canonical(&canonical, raw_item.get().as_bytes(), offset);
                }
                Err(e) => self.not_canonical_at(offset, e.to_string()),
            }
            if let Some((seq, hash)) =
                self.event(&item, &at, ledger_id, checkpoint, previous.as_ref())
            {
                let event = item.get("event").unwrap_or(&Value::Null);
                let session = event.get("sessionId").and_then(Value::as_str);
                // Without a valid selection (already reported) membership cannot be judged.
                let selected = selection.is_none_or(|s| s.selects(seq, session));
                let mut places = Vec::new();
                text_refs_at(event, &mut format!("{at}.event"), &mut places);
                for (commitment, path) in places {
                    references.entry(commitment).or_default().push((seq, path));
                }
                // A repeated seq is reported (`seq_order`) and otherwise ignored.
                seen.entry(seq).or_insert_with(|| EventSeen {
                    index,
                    selected,
                    erases: erased_commitments(event),
                });
                previous = Some((seq, hash));
            }
            if let Some(progress) = options.progress {
                progress(
                    u64::try_from(index).unwrap_or(u64::MAX).saturating_add(1),
                    total,
                );
            }
        }
        self.texts(doc, &seen, &references);
        seen
    }

    /// Checks that the `events` array is laid out canonically: `[`, the elements separated by
    /// single commas, `]`, with no whitespace. Each element is checked where it is read.
    fn array_layout(&mut self, bytes: &[u8], raw: &RawValue, items: &[&RawValue]) {
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

    /// Checks one exported event; returns its seq and stated hash when it has a usable seq.
    fn event(
        &mut self,
        item: &Value,
        at: &str,
        ledger_id: Option<&str>,
        checkpoint: Option<&Checkpoint>,
        previous: Option<&(u64, Option<String>)>,
    ) -> Option<(u64, Option<String>)> {
        let Some(object) = item.as_object() else {
            self.fail(
                "malformed",
                None,
                at,
                "must be {\"event\": {...}, \"inclusionProof\": [...]}",
            );
            return None;
        };
        for name in object.keys() {
            if name != "event" && name != "inclusionProof" {
                self.fail(
                    "unknown_member",
                    None,
                    member(at, name),
                    "an exported event has only event and inclusionProof",
                );
            }
        }
        let event_path = format!("{at}.event");
        let Some(event) = object.get("event").filter(|e| e.is_object()) else {
            self.fail("malformed", None, event_path, "missing, or not an object");
            return None;
        };
        let Some(seq) = event.get("seq").and_then(Value::as_u64).filter(|s| *s >= 1) else {
            self.fail(
                "malformed",
                None,
                format!("{event_path}.seq"),
                "missing, or not an integer ≥ 1",
            );
            return None;
        };
        let seq_at = Some(seq);
        if let Some((prev, _)) = previous
            && seq <= *prev
        {
            self.fail(
                "seq_order",
                seq_at,
                format!("{event_path}.seq"),
                format!("events must be in ascending seq order without repeats; seq {seq} follows seq {prev}"),
            );
        }
        if let Err(e) = canonical_bytes(event) {
            self.fail("event_not_canonical", seq_at, &event_path, e.to_string());
        }
        // An event of another version is judged by the rules of its own version, which this
        // verifier does not know: only what every version shares (seq, ledgerId, hash, links,
        // proofs, text references) is checked.
        match event.get("v") {
            Some(v) if v.as_u64() == Some(u64::from(ENVELOPE_VERSION)) => {
                for violation in event_v1().violations(event) {
                    self.fail(
                        "event_malformed",
                        seq_at,
                        format!("{event_path}{}", violation.path),
                        format!(
                            "not a v{ENVELOPE_VERSION} event (schemas/event.v1.json): {}",
                            violation.message
                        ),
                    );
                }
            }
            v => self.fail(
                "unknown_version",
                seq_at,
                format!("{event_path}.v"),
                format!(
                    "the envelope version is {}; this verifier reads version {ENVELOPE_VERSION}",
                    shown(v)
                ),
            ),
        }
        let event_ledger = event.get("ledgerId").and_then(Value::as_str);
        if let Some(ledger_id) = ledger_id
            && event_ledger != Some(ledger_id)
        {
            self.fail(
                "foreign_ledger",
                seq_at,
                format!("{event_path}.ledgerId"),
                format!(
                    "the event belongs to ledger {}, the export to {ledger_id}",
                    shown(event.get("ledgerId"))
                ),
            );
        }
        let stated = event.get("hash").and_then(Value::as_str);
        let leaf = stated.and_then(parse_hex32);
        match (stated, event_value_hash(event)) {
            (Some(stated), Ok(computed)) if computed == stated => {}
            (_, Ok(computed)) => self.fail(
                "hash_mismatch",
                seq_at,
                format!("{event_path}.hash"),
                format!(
                    "the event's content hashes to {computed}; it states {}",
                    shown(event.get("hash"))
                ),
            ),
            (_, Err(e)) => self.fail(
                "hash_mismatch",
                seq_at,
                format!("{event_path}.hash"),
                e.to_string(),
            ),
        }
        let prev_hash = event.get("prevHash").and_then(Value::as_str);
        let expected_prev = if seq == 1 {
            Some(GENESIS_PREV_HASH.to_owned())
        } else {
            previous
                .filter(|(p, _)| p.checked_add(1) == Some(seq))
                .and_then(|(_, h)| h.clone())
        };
        if let Some(expected) = expected_prev
            && prev_hash != Some(expected.as_str())
        {
            self.fail(
                "broken_link",
                seq_at,
                format!("{event_path}.prevHash"),
                format!(
                    "prevHash is {}, but the hash of seq {} is {expected}",
                    shown(event.get("prevHash")),
                    seq - 1
                ),
            );
        }
        self.inclusion(
            object.get("inclusionProof"),
            &format!("{at}.inclusionProof"),
            seq,
            leaf,
            checkpoint,
        );
        Some((seq, stated.filter(|_| leaf.is_some()).map(str::to_owned)))
    }

    fn inclusion(
        &mut self,
        proof: Option<&Value>,
        path: &str,
        seq: u64,
        leaf: Option<[u8; 32]>,
        checkpoint: Option<&Checkpoint>,
    ) {
        let Some(proof) = self.hashes(proof, path, Some(seq)) else {
            return;
        };
        let Some(checkpoint) = checkpoint else {
            return;
        };
        if seq > checkpoint.size() {
            self.fail(
                "outside_checkpoint",
                Some(seq),
                path,
                format!("the checkpoint covers seqs 1..={} only", checkpoint.size()),
            );
            return;
        }
        let Some(leaf) = leaf else {
            self.fail(
                "inclusion_failed",
                Some(seq),
                path,
                "the event states no valid hash to prove",
            );
            return;
        };
        let hasher = Blake3Hasher;
        if let Err(e) = verify_inclusion(
            &hasher,
            &hasher.hash_leaf(&leaf),
            seq - 1,
            checkpoint.size(),
            &proof,
            checkpoint.root(),
        ) {
            self.fail(
                "inclusion_failed",
                Some(seq),
                path,
                format!("the event is not in the checkpoint's tree: {e}"),
            );
        }
    }

    /// A list of 64-hex-digit node hashes, or a `malformed` problem.
    fn hashes(
        &mut self,
        value: Option<&Value>,
        path: &str,
        seq: Option<u64>,
    ) -> Option<Vec<NodeHash>> {
        let Some(Value::Array(items)) = value else {
            self.fail("malformed", seq, path, "missing, or not an array of hashes");
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item.as_str().and_then(parse_hex32) {
                Some(node) => out.push(node),
                None => {
                    self.fail(
                        "malformed",
                        seq,
                        format!("{path}[{i}]"),
                        "not 64 lowercase hex digits",
                    );
                    return None;
                }
            }
        }
        Some(out)
    }

    fn texts(
        &mut self,
        doc: &Map<String, Value>,
        seen: &BTreeMap<u64, EventSeen>,
        references: &References,
    ) {
        let empty = Map::new();
        let texts = match doc.get("texts") {
            Some(Value::Object(texts)) => texts,
            Some(_) => {
                self.fail("malformed", None, "$.texts", "must be an object");
                &empty
            }
            None => {
                self.fail("malformed", None, "$.texts", "missing");
                &empty
            }
        };
        // Erasure events a valid mark relies on.
        let mut backing = BTreeSet::new();
        for (commitment, entry) in texts {
            let path = member("$.texts", commitment);
            let first_seq = references
                .get(commitment)
                .and_then(|places| places.first())
                .map(|(seq, _)| *seq);
            if parse_hex32(commitment).is_none() {
                self.fail(
                    "text_malformed",
                    None,
                    path,
                    "the member name is not a commitment (64 lowercase hex digits)",
                );
                continue;
            }
            if first_seq.is_none() {
                self.fail(
                    "text_unreferenced",
                    None,
                    &path,
                    "no exported event references this commitment",
                );
            }
            let entry = entry.as_object().unwrap_or(&empty);
            let salt = entry.get("salt").and_then(Value::as_str);
            let text = entry.get("text").and_then(Value::as_str);
            let erased_by = entry.get("erasedBySeq").and_then(Value::as_u64);
            match (salt, text, erased_by, entry.len()) {
                (Some(salt), Some(text), None, 2) => {
                    let Some(salt) = parse_hex32(salt) else {
                        self.fail("text_malformed", first_seq, format!("{path}.salt"), "not 64 lowercase hex digits");
                        continue;
                    };
                    if text_commitment(&salt, text) == *commitment {
                        self.summary.texts_verified += 1;
                    } else {
                        self.fail(
                            "text_mismatch",
                            first_seq,
                            path,
                            "salt and text do not re-derive the commitment: the text or its salt was changed",
                        );
                    }
                }
                (None, None, Some(by), 1) => match seen.get(&by) {
                    None => self.fail(
                        "erasure_unbacked",
                        Some(by),
                        format!("{path}.erasedBySeq"),
                        format!("the export does not include event {by}, so this erasure cannot be checked"),
                    ),
                    Some(event) if !event.erases.contains(commitment) => self.fail(
                        "erasure_unbacked",
                        Some(by),
                        format!("{path}.erasedBySeq"),
                        format!("event {by} erases no such commitment"),
                    ),
                    Some(_) => {
                        backing.insert(by);
                        self.summary.texts_erased += 1;
                    }
                },
                _ => self.fail(
                    "text_malformed",
                    first_seq,
                    path,
                    "must be {\"salt\": <64 hex>, \"text\": <string>} or {\"erasedBySeq\": <seq>}",
                ),
            }
        }
        for (commitment, places) in references {
            if !texts.contains_key(commitment) {
                for (seq, path) in places {
                    self.fail(
                        "text_missing",
                        Some(*seq),
                        path.clone(),
                        format!(
                            "the export holds neither the text nor its erasure for {commitment}"
                        ),
                    );
                }
            }
        }
        for (seq, event) in seen.iter() {
            if event.selected {
                self.summary.selected_events += 1;
            } else if backing.contains(seq) {
                self.summary.erasure_events += 1;
            } else {
                self.fail(
                    "not_selected",
                    Some(*seq),
                    format!("$.events[{}]", event.index),
                    "the selection does not name this event, and no text mark relies on it as an erasure",
                );
            }
        }
    }

    /// A seq range must be complete; a session must have at least one event.
    fn completeness(&mut self, selection: &Selection, seen: &BTreeMap<u64, EventSeen>) {
        match selection {
            Selection::Range { from_seq, to_seq } => {
                let mut expected = *from_seq;
                let present = seen.range(*from_seq..=*to_seq).map(|(seq, _)| *seq);
                for seq in present.chain(to_seq.checked_add(1)) {
                    if seq > expected {
                        self.fail(
                            "gap",
                            Some(expected),
                            "$.events",
                            format!(
                                "events {expected}..={} of the selected range are missing",
                                seq - 1
                            ),
                        );
                    }
                    expected = seq.saturating_add(1);
                }
            }
            Selection::Session { session_id } => {
                if !seen.values().any(|e| e.selected) {
                    self.fail(
                        "empty_selection",
                        None,
                        "$.events",
                        format!("no event of session {session_id} is included"),
                    );
                }
            }
        }
    }

    fn consistency(
        &mut self,
        doc: &Map<String, Value>,
        checkpoint: Option<&Checkpoint>,
        trusted: Option<&NoteVerifier>,
        origin: Option<&str>,
        options: &VerifyOptions<'_>,
    ) {
        let claimed = doc
            .get("consistency")
            .and_then(|value| self.consistency_proof(value, checkpoint));
        let Some(note) = options.since_checkpoint else {
            if let Some((size, _, true)) = claimed {
                self.notes.push(format!(
                    "the export proves its log extends a tree of {size} events, but no earlier \
                     checkpoint was given to anchor it (--since-checkpoint)"
                ));
            }
            return;
        };
        let path = "--since-checkpoint";
        let before = self.problems.len();
        let note = kept_note(note);
        let earlier = self.signed_checkpoint(&note, trusted, origin, "earlier checkpoint", path);
        // An earlier checkpoint that is not this ledger's says nothing about this export.
        let Some(earlier) = earlier.filter(|_| self.problems.len() == before) else {
            return;
        };
        let Some(checkpoint) = checkpoint else {
            return;
        };
        let (size, root) = (earlier.size(), *earlier.root());
        if size > checkpoint.size() {
            self.fail(
                "rollback",
                None,
                "$.checkpoint",
                format!(
                    "the earlier checkpoint covers {size} events, the export's only {}: the log was \
                     rolled back or replaced",
                    checkpoint.size()
                ),
            );
            return;
        }
        let fork = |size: u64| {
            format!(
                "the earlier checkpoint's root for {size} events differs from the root this log \
                 had at that size: the log was rewritten (forked) since"
            )
        };
        if size == checkpoint.size() {
            if root == *checkpoint.root() {
                self.summary.extends_checkpoint = Some(size);
            } else {
                self.fail("fork", None, "$.checkpoint", fork(size));
            }
            return;
        }
        if size == 0 {
            if root == Blake3Hasher.empty_root() {
                self.summary.extends_checkpoint = Some(0);
            } else {
                self.fail("fork", None, path, fork(0));
            }
            return;
        }
        // Judged on what the proof claims even when it failed (`consistency_failed`, already
        // reported), so that a proof from the wrong tree is named as such too.
        match (doc.get("consistency"), claimed) {
            (None, _) => self.fail(
                "consistency_missing",
                None,
                "$.consistency",
                format!("the export carries no consistency proof; export again with --since-checkpoint (from size {size})"),
            ),
            (Some(_), Some((from, _, _))) if from != size => self.fail(
                "consistency_missing",
                None,
                "$.consistency.fromSize",
                format!("the export proves consistency from size {from}, not from size {size} of the given checkpoint"),
            ),
            (Some(_), Some((_, from_root, _))) if from_root != root => {
                self.fail("fork", None, "$.consistency.fromRoot", fork(size));
            }
            (Some(_), Some((_, _, holds))) => {
                if holds {
                    self.summary.extends_checkpoint = Some(size);
                }
            }
            // Not a proof at all; already reported as malformed.
            (Some(_), None) => {}
        }
    }

    /// Checks the `consistency` member against the checkpoint; returns (fromSize, fromRoot,
    /// whether the proof holds) when the member is well formed.
    fn consistency_proof(
        &mut self,
        value: &Value,
        checkpoint: Option<&Checkpoint>,
    ) -> Option<(u64, NodeHash, bool)> {
        let at = "$.consistency";
        let Some(object) = value.as_object() else {
            self.fail(
                "malformed",
                None,
                at,
                "must be {\"fromSize\", \"fromRoot\", \"proof\"}",
            );
            return None;
        };
        for name in object.keys() {
            if !["fromSize", "fromRoot", "proof"].contains(&name.as_str()) {
                self.fail(
                    "unknown_member",
                    None,
                    member(at, name),
                    "not a member of a consistency proof",
                );
            }
        }
        let from_size = object.get("fromSize").and_then(Value::as_u64);
        let from_root = object
            .get("fromRoot")
            .and_then(Value::as_str)
            .and_then(parse_hex32);
        let proof = self.hashes(object.get("proof"), "$.consistency.proof", None);
        let (Some(from_size), Some(from_root)) = (from_size, from_root) else {
            self.fail(
                "malformed",
                None,
                at,
                "fromSize must be an integer and fromRoot 64 hex digits",
            );
            return None;
        };
        let (Some(proof), Some(checkpoint)) = (proof, checkpoint) else {
            return Some((from_size, from_root, false));
        };
        let hasher = Blake3Hasher;
        let verdict = if from_size == 0 {
            (from_root == hasher.empty_root() && proof.is_empty())
                .then_some(())
                .ok_or_else(|| {
                    "from the empty tree the root is H() and the proof is empty".to_owned()
                })
        } else {
            // m = n included: the proof is empty and the roots are equal (§10.3 step 7).
            verify_consistency(
                &hasher,
                from_size,
                checkpoint.size(),
                &from_root,
                checkpoint.root(),
                &proof,
            )
            .map_err(|e| e.to_string())
        };
        match verdict {
            Ok(()) => Some((from_size, from_root, true)),
            Err(e) => {
                self.fail(
                    "consistency_failed",
                    None,
                    "$.consistency.proof",
                    format!(
                        "the checkpoint's tree does not extend the tree of {from_size} events: {e}"
                    ),
                );
                Some((from_size, from_root, false))
            }
        }
    }

    /// The signature must verify (`export_signature`) and sign this document's digest
    /// (`export_digest_mismatch`). Both are judged whatever the other says: the digest is
    /// compared with the note's body even when its signature fails or no key can check it.
    fn export_signature(
        &mut self,
        bytes: &[u8],
        members: &[(String, &RawValue)],
        doc: &Map<String, Value>,
        trusted: Option<&NoteVerifier>,
        origin: Option<&str>,
    ) {
        let path = "$.exportSignature";
        let Some(note) = self.string(doc, "$", SIGNATURE_MEMBER) else {
            return;
        };
        match trusted {
            None => self.fail(
                "export_signature",
                None,
                path,
                "no usable key to check the export signature with",
            ),
            Some(key) => {
                if let Err(e) = open_note(note, std::slice::from_ref(key)) {
                    self.fail(
                        "export_signature",
                        None,
                        path,
                        format!("the export signature does not verify: {e}"),
                    );
                }
            }
        }
        // The body is the text up to and including the first `\n` of the last `\n\n`.
        let Some(body) = note.rfind("\n\n").and_then(|at| note.get(..=at)) else {
            self.fail(
                "export_digest_mismatch",
                None,
                path,
                "not a signed note: no blank line before the signatures, so no digest is signed",
            );
            return;
        };
        let digest = match self.digest(bytes, members) {
            Ok(digest) => digest,
            Err(e) => {
                self.fail(
                    "export_digest_mismatch",
                    None,
                    path,
                    format!("the document cannot be digested: {e}"),
                );
                return;
            }
        };
        if body != signed_body(origin.unwrap_or_default(), &digest) {
            self.fail(
                "export_digest_mismatch",
                None,
                path,
                format!(
                    "the note signs another document (this one digests to {digest}): the export \
                     was changed after it was signed"
                ),
            );
        }
    }

    /// The digest the export signature covers: of the canonical document without its
    /// signature. A canonical file is hashed as it stands, the signature member cut out; any
    /// other is canonicalized member by member (the events one at a time), never whole.
    fn digest(&self, bytes: &[u8], members: &[(String, &RawValue)]) -> Result<String, LedgerError> {
        let mut hasher = AuditExportHasher::new();
        if self.canonical {
            let Some(i) = members
                .iter()
                .position(|(name, _)| name == SIGNATURE_MEMBER)
            else {
                hasher.update(bytes);
                return Ok(hasher.finalize());
            };
            let raw = members[i].1.get();
            let value_end = offset_in(bytes, raw) + raw.len();
            // `,"exportSignature":…`, or `"exportSignature":…,` when it comes first.
            let key_len = SIGNATURE_MEMBER.len() + 3;
            let (cut_start, cut_end) = if i > 0 {
                (offset_in(bytes, raw) - key_len - 1, value_end)
            } else if members.len() > 1 {
                (1, value_end + 1)
            } else {
                (1, value_end)
            };
            hasher.update(&bytes[..cut_start]);
            hasher.update(&bytes[cut_end..]);
            return Ok(hasher.finalize());
        }
        // Repeated names keep their last value, as a JSON parser does.
        let mut sorted: Vec<&(String, &RawValue)> = Vec::new();
        for member in members.iter().rev() {
            if member.0 != SIGNATURE_MEMBER && !sorted.iter().any(|m| m.0 == member.0) {
                sorted.push(member);
            }
        }
        sorted.sort_by(|a, b| utf16_order(&a.0, &b.0));
        hasher.update(b"{");
        for (i, (name, raw)) in sorted.into_iter().enumerate() {
            if i > 0 {
                hasher.update(b",");
            }
            hasher.update(&canonical_bytes(&Value::String(name.clone()))?);
            hasher.update(b":");
            let items = (name == "events")
                .then(|| serde_json::from_str::<Vec<&RawValue>>(raw.get()).ok())
                .flatten();
            match items {
                Some(items) => {
                    hasher.update(b"[");
                    for (j, item) in items.iter().enumerate() {
                        if j > 0 {
                            hasher.update(b",");
                        }
                        hasher.update(&canonical_bytes(&parse(item)?)?);
                    }
                    hasher.update(b"]");
                }
                None => hasher.update(&canonical_bytes(&parse(raw)?)?),
            }
        }
        hasher.update(b"}");
        Ok(hasher.finalize())
    }
}

/// A member's value as a report shows it: a string as it stands, anything else as JSON, a
/// missing member as such.
fn shown(value: Option<&Value>) -> String {
    match value {
        None => "missing".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Commitments named by the event's `TextsErased` facts.
fn erased_commitments(event: &Value) -> BTreeSet<String> {
    event
        .get("facts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|fact| fact.get("type").and_then(Value::as_str) == Some("TextsErased"))
        .filter_map(|fact| fact.get("commitments").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// Every text reference (`{"textCommitment": "<string>"}`, docs/ledger-format.md §4.1) in
/// `value`, with the JSON path where it sits.
fn text_refs_at(value: &Value, path: &mut String, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            if map.len() == 1
                && let Some(Value::String(c)) = map.get("textCommitment")
            {
                out.push((c.clone(), path.clone()));
                return;
            }
            for (name, item) in map {
                let mut inner = member(path, name);
                text_refs_at(item, &mut inner, out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let mut inner = format!("{path}[{i}]");
                text_refs_at(item, &mut inner, out);
            }
        }
        _ => {}
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

/// The document's top level: its members in file order (names unescaped, values as they
/// stand in the file), or any other JSON value.
enum TopLevel<'a> {
    Object(Vec<(String, &'a RawValue)>),
    Other(Value),
}

fn top_level(bytes: &[u8]) -> Result<TopLevel<'_>, serde_json::Error> {
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

/// Where `part`, a slice of `bytes`, starts in it.
fn offset_in(bytes: &[u8], part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(bytes.as_ptr() as usize)
}

/// RFC 8785 order of member names: by their UTF-16 code units.
fn utf16_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

fn parse(raw: &RawValue) -> Result<Value, LedgerError> {
    serde_json::from_str(raw.get())
        .map_err(|e| LedgerError::NotCanonicalizable(format!("not JSON: {e}")))
}
