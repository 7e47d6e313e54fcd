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
//!
//! The files follow the checks: `layout` the document's shape, `signatures` the signed
//! checkpoint and the export signature, `events` each event and its inclusion proof, `texts`
//! the texts and completeness, `consistency` the proof to an earlier checkpoint. This one holds
//! the entry points, the report and the `Check` that gathers problems.

mod consistency;
mod events;
mod layout;
mod signatures;
mod texts;

use crate::audit::problem_code::ExportCode;
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::document::{FORMAT, SIGNATURE_MEMBER};
use crate::ledger::LedgerError;
use crate::ledger::canonical::canonical_bytes;
use crate::ledger::keyfile::key_name;
use layout::{TopLevel, top_level};

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
    pub code: ExportCode,
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
        code: ExportCode,
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
                self.fail(
                    ExportCode::Malformed,
                    None,
                    member(path, name),
                    "must be a string",
                );
                None
            }
            None => {
                self.fail(ExportCode::Malformed, None, member(path, name), "missing");
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
                self.fail(
                    ExportCode::Malformed,
                    None,
                    "$",
                    "the document is not a JSON object",
                );
                return;
            }
            Err(e) => {
                self.fail(ExportCode::Unparseable, None, "$", format!("not JSON: {e}"));
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
                    self.fail(ExportCode::Unparseable, None, "$", format!("not JSON: {e}"));
                    return;
                }
            }
        }
        let doc = &doc;
        for name in doc.keys() {
            if !MEMBERS.contains(&name.as_str()) {
                self.fail(
                    ExportCode::UnknownMember,
                    None,
                    member("$", name),
                    "not a member of thinkledger-audit/1",
                );
            }
        }
        match self.string(doc, "$", "format") {
            Some(FORMAT) | None => {}
            Some(_) => self.fail(
                ExportCode::UnknownFormat,
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
