//! Quotas per principal: calls per minute and bytes of text per UTC day (`serve
//! --quota-calls-per-minute`, `--quota-text-bytes-per-day`).
//!
//! Counting is an effect of the caller's side, like the clock it reads: the verdict of a call
//! over its quota goes into the command ([`crate::effects::OverQuota`]) and the decision refuses
//! it (`quota_exceeded`), so the refusal is recorded like any other and a re-execution gives it
//! back from the event. Only admitted calls count; the window of calls slides, the day's bytes
//! start again at 00:00 UTC. The counts live in memory: a restart forgets them.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value;

use crate::effects::OverQuota;

/// The limits; `None` is unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuotaLimits {
    pub calls_per_minute: Option<u32>,
    pub text_bytes_per_day: Option<u64>,
}

#[derive(Debug, Default)]
struct Usage {
    /// When each admitted call of the last minute was prepared, oldest first.
    recent: VecDeque<DateTime<Utc>>,
    day: Option<NaiveDate>,
    bytes_today: u64,
}

/// Every principal's usage, shared by the handlers of one server.
#[derive(Debug, Default)]
pub struct Quotas {
    limits: QuotaLimits,
    usage: Mutex<HashMap<String, Usage>>,
}

impl Quotas {
    pub fn new(limits: QuotaLimits) -> Self {
        Self {
            limits,
            usage: Mutex::new(HashMap::new()),
        }
    }

    /// Counts a call of `principal` prepared at `at` with `arguments`, or says why it is over
    /// its quota (then it is not counted).
    pub fn admit(
        &self,
        principal: &str,
        at: DateTime<Utc>,
        arguments: &Value,
    ) -> Option<OverQuota> {
        if self.limits == QuotaLimits::default() {
            return None;
        }
        let bytes = text_bytes(arguments);
        let mut all = self
            .usage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let usage = all.entry(principal.to_owned()).or_default();
        let minute_ago = at - chrono::Duration::minutes(1);
        while usage.recent.front().is_some_and(|t| *t <= minute_ago) {
            usage.recent.pop_front();
        }
        if usage.day != Some(at.date_naive()) {
            usage.day = Some(at.date_naive());
            usage.bytes_today = 0;
        }
        if let Some(limit) = self.limits.calls_per_minute
            && usage.recent.len() >= limit as usize
        {
            let oldest = usage.recent.front().copied().unwrap_or(at);
            let wait = (oldest + chrono::Duration::minutes(1) - at)
                .num_milliseconds()
                .max(1);
            return Some(OverQuota {
                message: format!(
                    "{principal} made {limit} calls in the last minute, its quota; this call was \
                     not decided"
                ),
                suggestion: format!(
                    "retry in {:.1} s, or ask the server's operator for a larger \
                     --quota-calls-per-minute",
                    wait as f64 / 1000.0
                ),
            });
        }
        if let Some(limit) = self.limits.text_bytes_per_day
            && usage.bytes_today + bytes > limit
        {
            return Some(OverQuota {
                message: format!(
                    "{principal} sent {} bytes of text today (UTC) and this call has {bytes}; \
                     its quota is {limit} bytes a day; this call was not decided",
                    usage.bytes_today
                ),
                suggestion: "send less text, retry after 00:00 UTC, or ask the server's operator \
                             for a larger --quota-text-bytes-per-day"
                    .to_owned(),
            });
        }
        usage.recent.push_back(at);
        usage.bytes_today += bytes;
        None
    }
}

/// The bytes of every string in `value` (keys excluded): the text a call sends.
fn text_bytes(value: &Value) -> u64 {
    match value {
        Value::String(s) => s.len() as u64,
        Value::Array(items) => items.iter().map(text_bytes).sum(),
        Value::Object(map) => map.values().map(text_bytes).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_790_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn calls_per_minute_slide_and_refusals_do_not_count() {
        let quotas = Quotas::new(QuotaLimits {
            calls_per_minute: Some(2),
            text_bytes_per_day: None,
        });
        let args = json!({"thought": "x"});
        assert!(quotas.admit("alice", at(0), &args).is_none());
        assert!(quotas.admit("alice", at(10), &args).is_none());
        let over = quotas
            .admit("alice", at(20), &args)
            .expect("third call in a minute");
        assert!(over.suggestion.contains("retry in 40.0 s"), "{over:?}");
        assert!(
            quotas.admit("bob", at(20), &args).is_none(),
            "per principal"
        );
        assert!(
            quotas.admit("alice", at(60), &args).is_none(),
            "the first one left the window"
        );
        assert!(quotas.admit("alice", at(65), &args).is_some());
    }

    #[test]
    fn text_bytes_count_per_utc_day() {
        let quotas = Quotas::new(QuotaLimits {
            calls_per_minute: None,
            text_bytes_per_day: Some(10),
        });
        assert!(
            quotas
                .admit("alice", at(0), &json!({"a": "12345", "n": 7}))
                .is_none()
        );
        assert!(
            quotas
                .admit("alice", at(1), &json!({"b": ["123456"]}))
                .is_some()
        );
        assert!(
            quotas
                .admit("alice", at(2), &json!({"b": "12345"}))
                .is_none()
        );
        assert!(
            quotas
                .admit("alice", at(86_400), &json!({"c": "1234567890"}))
                .is_none()
        );
    }
}
