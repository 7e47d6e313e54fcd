//! The W3C trace context a caller sent with a call (MCP SEP-414: `params._meta.traceparent` and
//! `tracestate`; over HTTP, the `traceparent` and `tracestate` headers), as the event records
//! it: the two strings exactly as received, once they are found well formed.
//!
//! Pure data and its syntax (W3C Trace Context, level 1): what it is and whether it is well
//! formed. Where it came from, what is done with an ill-formed one and how a span is made of
//! it belong to the callers (`tools`, `otel`).

use serde::{Deserialize, Serialize};

/// The only `traceparent` version this server understands (and the only one defined).
const VERSION: &str = "00";

/// Longest `tracestate` recorded, in bytes: W3C asks that at least 512 be passed on, and a
/// longer one is dropped rather than let callers grow the event without bound.
pub const MAX_TRACESTATE_BYTES: usize = 512;

/// Most list members of a `tracestate` (W3C Trace Context: 32).
const MAX_TRACESTATE_MEMBERS: usize = 32;

/// A call's trace context, recorded as the event's `trace` member (docs/ledger-format.md §3.7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceContext {
    /// `00-<trace-id: 32 hex>-<parent-id: 16 hex>-<trace-flags: 2 hex>`, lowercase, neither
    /// id all zeros; exactly as received.
    pub traceparent: String,
    /// The vendors' list that came with it, exactly as received, when it came and is well
    /// formed. Absent from the canonical form otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
}

/// Why a `traceparent` or `tracestate` was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidTraceContext {
    #[error("traceparent is not 00-<32 hex>-<16 hex>-<2 hex> in lowercase (55 characters)")]
    Malformed,
    #[error("traceparent version {0:?} is not 00")]
    Version(String),
    #[error("traceparent trace-id is all zeros")]
    ZeroTraceId,
    #[error("traceparent parent-id is all zeros")]
    ZeroParentId,
    #[error("tracestate is over {MAX_TRACESTATE_BYTES} bytes")]
    TracestateTooLong,
    #[error("tracestate is not a list of at most 32 key=value members")]
    TracestateMalformed,
}

impl TraceContext {
    /// The context `traceparent` names, with `tracestate` when one came. An ill-formed
    /// `traceparent` is refused; an ill-formed `tracestate` is dropped (the second value says
    /// why), as W3C asks: the parent still holds without the vendors' list.
    pub fn parse(
        traceparent: &str,
        tracestate: Option<&str>,
    ) -> Result<(Self, Option<InvalidTraceContext>), InvalidTraceContext> {
        check_traceparent(traceparent)?;
        // An empty list (no member, only separators and blanks) says nothing: not recorded.
        let tracestate = tracestate.filter(|list| {
            list.split(',')
                .any(|m| !m.trim_matches([' ', '\t']).is_empty())
        });
        let (tracestate, dropped) = match tracestate {
            None => (None, None),
            Some(list) => match check_tracestate(list) {
                Ok(()) => (Some(list.to_owned()), None),
                Err(why) => (None, Some(why)),
            },
        };
        Ok((
            Self {
                traceparent: traceparent.to_owned(),
                tracestate,
            },
            dropped,
        ))
    }

    /// The trace id: 32 lowercase hex digits.
    pub fn trace_id(&self) -> &str {
        self.traceparent.get(3..35).unwrap_or_default()
    }

    /// The caller's span id (W3C's parent-id): 16 lowercase hex digits.
    pub fn parent_id(&self) -> &str {
        self.traceparent.get(36..52).unwrap_or_default()
    }

    /// The trace flags (bit 0: sampled).
    pub fn flags(&self) -> u8 {
        self.traceparent
            .get(53..55)
            .and_then(|hex| u8::from_str_radix(hex, 16).ok())
            .unwrap_or_default()
    }
}

fn is_lower_hex(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn check_traceparent(raw: &str) -> Result<(), InvalidTraceContext> {
    let parts: Vec<&str> = raw.split('-').collect();
    let [version, trace_id, parent_id, flags] = parts.as_slice() else {
        return Err(InvalidTraceContext::Malformed);
    };
    if version.len() != 2
        || trace_id.len() != 32
        || parent_id.len() != 16
        || flags.len() != 2
        || !parts.iter().all(|p| is_lower_hex(p))
    {
        return Err(InvalidTraceContext::Malformed);
    }
    if *version != VERSION {
        return Err(InvalidTraceContext::Version((*version).to_owned()));
    }
    if trace_id.bytes().all(|b| b == b'0') {
        return Err(InvalidTraceContext::ZeroTraceId);
    }
    if parent_id.bytes().all(|b| b == b'0') {
        return Err(InvalidTraceContext::ZeroParentId);
    }
    Ok(())
}

/// W3C `tracestate`: list members separated by commas (optional spaces and tabs around them,
/// empty members allowed), at most 32, each `key=value`.
fn check_tracestate(raw: &str) -> Result<(), InvalidTraceContext> {
    if raw.len() > MAX_TRACESTATE_BYTES {
        return Err(InvalidTraceContext::TracestateTooLong);
    }
    let members: Vec<&str> = raw
        .split(',')
        .map(|m| m.trim_matches([' ', '\t']))
        .filter(|m| !m.is_empty())
        .collect();
    if members.len() > MAX_TRACESTATE_MEMBERS || !members.iter().all(|m| is_member(m)) {
        return Err(InvalidTraceContext::TracestateMalformed);
    }
    Ok(())
}

fn is_member(member: &str) -> bool {
    let Some((key, value)) = member.split_once('=') else {
        return false;
    };
    is_key(key) && is_value(value)
}

/// `simple-key` or `tenant-id@system-id`.
fn is_key(key: &str) -> bool {
    let rest = |s: &str| {
        s.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'*' | b'/')
        })
    };
    match key.split_once('@') {
        None => {
            key.len() <= 256
                && key.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
                && rest(key)
        }
        Some((tenant, system)) => {
            (1..=241).contains(&tenant.len())
                && tenant
                    .as_bytes()
                    .first()
                    .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                && rest(tenant)
                && (1..=14).contains(&system.len())
                && system
                    .as_bytes()
                    .first()
                    .is_some_and(u8::is_ascii_lowercase)
                && rest(system)
        }
    }
}

/// 1 to 256 printable ASCII characters but `,` and `=`, the last not a space.
fn is_value(value: &str) -> bool {
    (1..=256).contains(&value.len())
        && value
            .bytes()
            .all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=')
        && !value.ends_with(' ')
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn check(traceparent: &str, tracestate: Option<&str>) -> Result<TraceContext, String> {
        TraceContext::parse(traceparent, tracestate)
            .map(|(context, _)| context)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_well_formed_traceparent_is_taken_as_received() {
        let context = check(GOOD, None).unwrap();
        assert_eq!(context.traceparent, GOOD);
        assert_eq!(context.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(context.parent_id(), "00f067aa0ba902b7");
        assert_eq!(context.flags(), 1);
        assert_eq!(context.tracestate, None);
        let json = serde_json::to_value(&context).unwrap();
        assert_eq!(json, serde_json::json!({ "traceparent": GOOD }));
    }

    #[test]
    fn ill_formed_traceparents_are_refused() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bg-01",
            " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n",
        ] {
            assert_eq!(
                check(bad, None),
                Err(InvalidTraceContext::Malformed.to_string()),
                "{bad:?}"
            );
        }
        assert_eq!(
            check(
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                None
            ),
            Err(InvalidTraceContext::Version("01".into()).to_string())
        );
        assert!(
            check(
                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                None
            )
            .is_err()
        );
        assert_eq!(
            check(
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                None
            ),
            Err(InvalidTraceContext::ZeroTraceId.to_string())
        );
        assert_eq!(
            check(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                None
            ),
            Err(InvalidTraceContext::ZeroParentId.to_string())
        );
    }

    #[test]
    fn a_well_formed_tracestate_is_kept_and_an_ill_formed_one_dropped() {
        for good in [
            "congo=t61rcWkgMzE",
            "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
            " rojo=1 ,\tcongo=2,,",
            "tenant1@vendor=x",
            "a*b/c_d-e=~!\"#$%&'()*+-./:;<>?@[]^_`{|}",
        ] {
            let (context, dropped) = TraceContext::parse(GOOD, Some(good)).unwrap();
            assert_eq!(context.tracestate.as_deref(), Some(good), "{good:?}");
            assert_eq!(dropped, None);
        }
        for empty in ["", " , ,\t"] {
            let (context, dropped) = TraceContext::parse(GOOD, Some(empty)).unwrap();
            assert_eq!((context.tracestate, dropped), (None, None), "{empty:?}");
        }
        let many = vec!["k=v"; 33].join(",");
        let long = format!("k={}", "v".repeat(MAX_TRACESTATE_BYTES));
        for bad in [
            "Congo=1",
            "congo",
            "congo=",
            "congo=a,b",
            "congo=a=b",
            "congo=tab\tinside",
            "1abc=v",
            "@vendor=v",
            "tenant@=v",
            "tenant@Vendor=v",
            "tenant@vendorwaytoolong=v",
            many.as_str(),
        ] {
            let (context, dropped) = TraceContext::parse(GOOD, Some(bad)).unwrap();
            assert_eq!(context.tracestate, None, "{bad:?}");
            assert_eq!(
                dropped,
                Some(InvalidTraceContext::TracestateMalformed),
                "{bad:?}"
            );
        }
        let (context, dropped) = TraceContext::parse(GOOD, Some(&long)).unwrap();
        assert_eq!(
            (context.tracestate, dropped),
            (None, Some(InvalidTraceContext::TracestateTooLong))
        );
    }
}
