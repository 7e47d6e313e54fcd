//! One audit-stream record per committed event, and its two wire forms: a JSON line (the
//! `file:` target) and an RFC 5424 syslog message framed by octet counting (RFC 6587 §3.4.1,
//! the `syslog+tcp://` target). Pure: bytes in, bytes out; the task in `mod.rs` reads the log
//! and sends.
//!
//! A record names the call (seq, hashes, time, tool, outcome, who, which session) and never
//! what the caller wrote, unless the operator opted in (`--audit-stream-arguments`): then the
//! call's recorded arguments come with it, each text reference replaced by its text.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The format of a record, in every record (`format`).
pub const RECORD_FORMAT: &str = "thinkledger-stream/1";

/// Syslog facility of every message: 13, "log audit" (RFC 5424 §6.2.1).
const FACILITY_LOG_AUDIT: u8 = 13;

/// The event members a record is made of; everything else in the event is left unread.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    seq: u64,
    ledger_id: String,
    #[serde(default)]
    session_id: Option<String>,
    recorded_at: String,
    actor: EnvelopeActor,
    call: EnvelopeCall,
    outcome: EnvelopeOutcome,
    prev_hash: String,
    hash: String,
}

#[derive(Deserialize)]
struct EnvelopeActor {
    principal: String,
    transport: String,
    #[serde(default)]
    role: Option<String>,
}

#[derive(Deserialize)]
struct EnvelopeCall {
    tool: String,
    #[serde(default)]
    arguments: Value,
}

#[derive(Deserialize)]
struct EnvelopeOutcome {
    status: String,
    #[serde(default)]
    error: Option<EnvelopeError>,
}

#[derive(Deserialize)]
struct EnvelopeError {
    code: String,
}

/// Resolves a text reference's commitment (64 hex digits) to its text, when it is stored.
pub type TextOf<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// One committed event as the stream sends it (docs/audit.md, "The audit stream").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub format: String,
    pub seq: u64,
    pub hash: String,
    pub prev_hash: String,
    pub recorded_at: String,
    pub tool: String,
    /// `ok`, `rejected` or `failed`.
    pub outcome: String,
    /// The refusal's code (`text_too_large`, `quota_exceeded`, …) when the call was not `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    pub principal: String,
    /// `auditor` (or another role) when the principal is not a member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    pub transport: String,
    /// The session the call was recorded in, if any.
    pub session: Option<String>,
    pub ledger_id: String,
    /// The call's recorded arguments with their texts, only when the operator opted in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

impl Record {
    /// The record of the stored event `bytes`. `texts`, when given, resolves a text reference's
    /// commitment (64 hex digits) to its text; the arguments are then included, each reference
    /// replaced by its text, or left as recorded when the text is erased or missing.
    pub fn of_event(bytes: &[u8], texts: Option<&TextOf<'_>>) -> Result<Self, String> {
        let event: Envelope =
            serde_json::from_slice(bytes).map_err(|e| format!("an unreadable event: {e}"))?;
        let arguments = texts.map(|texts| with_texts(event.call.arguments, texts));
        Ok(Self {
            format: RECORD_FORMAT.to_owned(),
            seq: event.seq,
            hash: event.hash,
            prev_hash: event.prev_hash,
            recorded_at: event.recorded_at,
            tool: event.call.tool,
            error_code: event
                .outcome
                .error
                .map(|e| e.code)
                .filter(|_| event.outcome.status != "ok"),
            outcome: event.outcome.status,
            principal: event.actor.principal,
            role: event.actor.role,
            transport: event.actor.transport,
            session: event.session_id,
            ledger_id: event.ledger_id,
            arguments,
        })
    }

    /// The record as one line of JSON, newline included.
    pub fn json_line(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(self).unwrap_or_default();
        line.push(b'\n');
        line
    }

    /// The record as one RFC 5424 message in RFC 6587 octet-counting framing
    /// (`LEN SP SYSLOG-MSG`): facility log audit, severity by outcome, `recordedAt` as the
    /// timestamp, app name `thinkledger`, message id `event`, no structured data, and the JSON
    /// record as the message, written in ASCII (every other character escaped), so the
    /// message is MSG-ANY and needs no byte order mark.
    pub fn syslog_frame(&self, origin: &Origin) -> Vec<u8> {
        let severity = match self.outcome.as_str() {
            "ok" => 6,       // informational
            "rejected" => 5, // notice
            _ => 3,          // error
        };
        let pri = FACILITY_LOG_AUDIT * 8 + severity;
        let timestamp = if is_syslog_timestamp(&self.recorded_at) {
            self.recorded_at.as_str()
        } else {
            "-"
        };
        let json = ascii_json(&serde_json::to_string(self).unwrap_or_default());
        let message = format!(
            "<{pri}>1 {timestamp} {} thinkledger {} event - {json}",
            origin.hostname, origin.pid
        );
        let mut frame = format!("{} ", message.len()).into_bytes();
        frame.extend_from_slice(message.as_bytes());
        frame
    }
}

/// Where messages come from: the HOSTNAME and PROCID fields of every message.
#[derive(Debug, Clone)]
pub struct Origin {
    /// Printable ASCII without spaces, at most 255 bytes, or `-` (RFC 5424's NILVALUE).
    pub hostname: String,
    pub pid: u32,
}

impl Origin {
    /// `hostname` as RFC 5424 allows it, or `-`.
    pub fn new(hostname: &str, pid: u32) -> Self {
        let hostname = hostname.trim();
        let fits = !hostname.is_empty()
            && hostname.len() <= 255
            && hostname.bytes().all(|b| (33..=126).contains(&b));
        Self {
            hostname: if fits {
                hostname.to_owned()
            } else {
                "-".into()
            },
            pid,
        }
    }
}

/// `arguments` with every text reference (`{"textCommitment": HEX}`, docs/ledger-format.md
/// §4.1) that `texts` resolves replaced by its text.
fn with_texts(arguments: Value, texts: &TextOf<'_>) -> Value {
    match arguments {
        Value::Object(map) => {
            if map.len() == 1
                && let Some(Value::String(commitment)) = map.get("textCommitment")
            {
                return match texts(commitment) {
                    Some(text) => Value::String(text),
                    None => Value::Object(map),
                };
            }
            Value::Object(
                map.into_iter()
                    .map(|(k, v)| (k, with_texts(v, texts)))
                    .collect(),
            )
        }
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| with_texts(v, texts)).collect())
        }
        other => other,
    }
}

/// JSON text with every non-ASCII character written as `\uXXXX` (UTF-16 units): the same
/// JSON value, in ASCII. Non-ASCII characters can only stand inside strings, where the escape
/// means the same character.
fn ascii_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// Whether `time` is the ledger's `YYYY-MM-DDTHH:MM:SS.ffffffZ`, which is an RFC 5424
/// TIMESTAMP as it stands.
fn is_syslog_timestamp(time: &str) -> bool {
    let b = time.as_bytes();
    b.len() == 27
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            26 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(status: &str, error: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "v": 1, "kind": "ToolCallRecorded", "seq": 7,
            "ledgerId": "0b1c2d3e-0000-4000-8000-000000000001",
            "sessionId": "0b1c2d3e-0000-4000-8000-000000000002",
            "recordedAt": "2026-11-28T07:58:15.123456Z",
            "actor": {"principal": "ålice", "transport": "http", "clientName": null,
                      "clientVersion": null},
            "call": {"tool": "sequentialthinking",
                     "arguments": {"thought": {"textCommitment": "ab"}, "thoughtNumber": 1,
                                   "tags": [{"textCommitment": "cd"}]}},
            "facts": [],
            "outcome": {"status": status, "responseDigest": "00", "error": error},
            "provenance": {"kind": "rules", "name": "x", "version": "1"},
            "prevHash": "11", "hash": "22"
        }))
        .unwrap()
    }

    #[test]
    fn a_record_names_the_call_and_holds_no_caller_text_unless_asked() {
        let record = Record::of_event(&event("ok", Value::Null), None).unwrap();
        assert_eq!(
            serde_json::to_value(&record).unwrap(),
            json!({
                "format": "thinkledger-stream/1", "seq": 7, "hash": "22", "prevHash": "11",
                "recordedAt": "2026-11-28T07:58:15.123456Z", "tool": "sequentialthinking",
                "outcome": "ok", "principal": "ålice", "transport": "http",
                "session": "0b1c2d3e-0000-4000-8000-000000000002",
                "ledgerId": "0b1c2d3e-0000-4000-8000-000000000001"
            })
        );
        let texts = |c: &str| (c == "ab").then(|| "my thought".to_owned());
        let with = Record::of_event(&event("ok", Value::Null), Some(&texts)).unwrap();
        assert_eq!(
            with.arguments,
            Some(json!({"thought": "my thought", "thoughtNumber": 1,
                        "tags": [{"textCommitment": "cd"}]}))
        );
    }

    #[test]
    fn a_refusal_carries_its_code_and_a_lower_severity() {
        let error = json!({"code": "text_too_large", "message": "m", "suggestion": "s"});
        let record = Record::of_event(&event("rejected", error), None).unwrap();
        assert_eq!(record.error_code.as_deref(), Some("text_too_large"));
        let frame = record.syslog_frame(&Origin::new("host-1", 42));
        let text = String::from_utf8(frame).unwrap();
        let (length, message) = text.split_once(' ').unwrap();
        assert_eq!(length.parse::<usize>().unwrap(), message.len());
        assert!(
            message
                .starts_with("<109>1 2026-11-28T07:58:15.123456Z host-1 thinkledger 42 event - {")
        );
        let json = message.split_once(" - ").unwrap().1;
        assert!(json.is_ascii());
        assert!(json.contains("\\u00e5lice"), "{json}");
        let back: Record = serde_json::from_str(json).unwrap();
        assert_eq!(back, record);
    }

    #[test]
    fn odd_hostnames_and_times_become_nil_values() {
        assert_eq!(Origin::new("a b", 1).hostname, "-");
        assert_eq!(Origin::new("", 1).hostname, "-");
        assert_eq!(Origin::new("host.example\n", 1).hostname, "host.example");
        assert!(is_syslog_timestamp("2026-11-28T07:58:15.123456Z"));
        assert!(!is_syslog_timestamp("2026-11-28 07:58:15"));
        assert_eq!(ascii_json("\"😀\""), "\"\\ud83d\\ude00\"");
    }
}
