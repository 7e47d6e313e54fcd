//! When to try a model call again, and how long to wait: exponential backoff with "equal jitter"
//! (half the step fixed, half drawn), the draw coming from a small generator seeded by the
//! caller (the one door for randomness stays `effects.rs`), and a server's `Retry-After`
//! honoured up to a ceiling. Pure: no clock, no sleeping.

use std::time::Duration;

use chrono::DateTime;

/// How many attempts a call gets and how long it waits between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (at least 1).
    pub max_attempts: u32,
    /// The first backoff step; each retry doubles it.
    pub base_delay: Duration,
    /// The largest backoff step.
    pub max_delay: Duration,
    /// The longest `Retry-After` honoured; a server asking for more ends the retries at once.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1` after failed attempt `attempt` (1-based):
    /// `step = min(base × 2^(attempt−1), max)`, then `step/2 + jitter·step/2`, unless the server
    /// said `Retry-After`, which is then used as it is. `None`: the server asked for longer
    /// than [`RetryPolicy::max_retry_after`].
    pub fn delay(
        &self,
        attempt: u32,
        retry_after: Option<Duration>,
        jitter: &mut Jitter,
    ) -> Option<Duration> {
        if let Some(asked) = retry_after {
            return (asked <= self.max_retry_after).then_some(asked);
        }
        let exponent = attempt.saturating_sub(1).min(20);
        let step = self
            .base_delay
            .saturating_mul(1u32 << exponent)
            .min(self.max_delay);
        let half = step / 2;
        Some(half + half.mul_f64(jitter.unit()))
    }
}

/// A small deterministic generator (SplitMix64) for backoff jitter, seeded by the caller.
#[derive(Debug, Clone)]
pub struct Jitter(u64);

impl Jitter {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in [0, 1), from the generator's top 32 bits.
    fn unit(&mut self) -> f64 {
        let top = u32::try_from(self.next() >> 32).unwrap_or(0);
        f64::from(top) / 4_294_967_296.0
    }
}

/// Reads a `Retry-After` header: delay-seconds, or an HTTP-date measured against the same
/// response's `Date` header (so no local clock is read). Unreadable values are ignored.
pub fn parse_retry_after(value: &str, date: Option<&str>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let until = DateTime::parse_from_rfc2822(value).ok()?;
    let now = DateTime::parse_from_rfc2822(date?.trim()).ok()?;
    let millis = (until - now).num_milliseconds().max(0);
    Some(Duration::from_millis(u64::try_from(millis).unwrap_or(0)))
}

/// Whether an HTTP status is worth another attempt: rate limited or a server error.
pub fn retryable_status(status: u16) -> bool {
    status == 429 || (500..=599).contains(&status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_inside_the_upper_half_and_is_capped() {
        let policy = RetryPolicy::default();
        let mut jitter = Jitter::new(7);
        for attempt in 1..=8 {
            let step = (policy.base_delay * (1 << (attempt - 1))).min(policy.max_delay);
            let d = policy.delay(attempt, None, &mut jitter).unwrap();
            assert!(
                d >= step / 2 && d <= step,
                "attempt {attempt}: {d:?} vs {step:?}"
            );
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_waits_and_another_seed_others() {
        let policy = RetryPolicy::default();
        let waits = |seed| {
            let mut j = Jitter::new(seed);
            (1..=3)
                .map(|a| policy.delay(a, None, &mut j).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(waits(1), waits(1));
        assert_ne!(waits(1), waits(2));
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_ceiling() {
        let policy = RetryPolicy::default();
        let mut j = Jitter::new(0);
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(2)), &mut j),
            Some(Duration::from_secs(2))
        );
        assert_eq!(policy.delay(1, Some(Duration::from_secs(31)), &mut j), None);
        assert_eq!(parse_retry_after(" 3 ", None), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after(
                "Wed, 21 Oct 2026 07:28:05 GMT",
                Some("Wed, 21 Oct 2026 07:28:00 GMT")
            ),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2026 07:28:05 GMT", None),
            None
        );
        assert_eq!(parse_retry_after("soon", None), None);
        assert!(retryable_status(429) && retryable_status(503) && !retryable_status(400));
    }
}
