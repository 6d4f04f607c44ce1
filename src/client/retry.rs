//! When and how long to wait before sending a request again.

use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

/// Exponential backoff with jitter, for failures where sending again may help: connect errors,
/// a first-byte timeout, and HTTP 408/409/429/5xx (see [`crate::Error::is_retryable`]).
///
/// A request is only sent again while nothing of its answer has reached the caller: once a
/// stream has started (a 2xx head arrived) it is never resent.
///
/// The wait before retry `n` (0-based) is `base_delay * 2^n`, capped at `max_delay`, minus up to
/// `jitter` of itself at random (so many clients do not retry in step). When the provider says
/// how long to wait (`retry-after-ms`, `Retry-After` in seconds or as an HTTP date, or a body
/// field such as Gemini's `retryDelay`), that wait is used instead; if it is longer than
/// `max_delay` the error is returned at once, carrying the wait in
/// [`crate::ApiError::retry_after`], rather than retrying early or blocking for long.
///
/// Non-exhaustive: start from [`RetryPolicy::default`] (or [`RetryPolicy::none`]) and the `with_*` setters.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 turns retrying off).
    pub max_retries: u32,
    /// The first backoff.
    pub base_delay: Duration,
    /// The longest wait, computed or asked for by the provider.
    pub max_delay: Duration,
    /// The fraction of each computed wait taken off at random, in `0.0..=1.0`.
    pub jitter: f64,
}

impl Default for RetryPolicy {
    /// Two retries, 500 ms then 1 s (less jitter of up to 25%), provider waits up to 60 s.
    fn default() -> Self {
        Self {
            max_retries: 2,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
            jitter: 0.25,
        }
    }
}

impl RetryPolicy {
    /// No retries.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// Sets the number of retries.
    pub fn with_max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// Sets the first backoff.
    pub fn with_base_delay(mut self, d: Duration) -> Self {
        self.base_delay = d;
        self
    }

    /// Sets the longest wait.
    pub fn with_max_delay(mut self, d: Duration) -> Self {
        self.max_delay = d;
        self
    }

    /// Sets the jitter fraction (clamped to `0.0..=1.0`).
    pub fn with_jitter(mut self, jitter: f64) -> Self {
        self.jitter = jitter;
        self
    }

    /// The wait before retry number `retry` (0-based), or `None` when the provider asked for a
    /// wait longer than `max_delay`.
    pub fn delay(&self, retry: u32, asked: Option<Duration>) -> Option<Duration> {
        if let Some(asked) = asked {
            return (asked <= self.max_delay).then_some(asked);
        }
        let factor = 2u32.checked_pow(retry.min(31)).unwrap_or(u32::MAX);
        let backoff = self
            .base_delay
            .checked_mul(factor)
            .unwrap_or(self.max_delay)
            .min(self.max_delay);
        let jitter = if self.jitter.is_finite() {
            self.jitter.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let factor = 1.0 - jitter * random_unit();
        Some(Duration::try_from_secs_f64(backoff.as_secs_f64() * factor).unwrap_or(backoff))
    }
}

/// A number in `[0, 1)` from the standard library's per-process random hash keys.
fn random_unit() -> f64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos().into()),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// The wait a response's headers ask for: `retry-after-ms` (milliseconds, sent by OpenAI-style
/// services and read by their SDKs), else `Retry-After` as seconds or an IMF-fixdate.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    parse_retry_after(text("retry-after")?, SystemTime::now())
}

/// `Retry-After` as delay-seconds or an HTTP date (a date in the past means now).
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = super::time::parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn backoff_grows_caps_and_jitters_down() {
        let p = RetryPolicy::default()
            .with_base_delay(Duration::from_millis(100))
            .with_max_delay(Duration::from_millis(1000))
            .with_jitter(0.0);
        assert_eq!(p.delay(0, None), Some(Duration::from_millis(100)));
        assert_eq!(p.delay(2, None), Some(Duration::from_millis(400)));
        assert_eq!(p.delay(9, None), Some(Duration::from_millis(1000)));
        assert_eq!(p.delay(u32::MAX, None), Some(Duration::from_millis(1000)));
        let unbounded = p.clone().with_max_delay(Duration::MAX).with_jitter(1.0);
        assert!(unbounded.delay(40, None).is_some());
        let p = p.with_jitter(0.5);
        for _ in 0..50 {
            let d = p.delay(1, None).unwrap();
            assert!(d > Duration::from_millis(100) && d <= Duration::from_millis(200));
        }
    }

    #[test]
    fn provider_waits_win_and_are_bounded() {
        let p = RetryPolicy::default().with_max_delay(Duration::from_secs(10));
        let asked = Some(Duration::from_secs(3));
        assert_eq!(p.delay(0, asked), asked);
        assert_eq!(p.delay(0, Some(Duration::from_secs(11))), None);
    }

    #[test]
    fn retry_after_forms() {
        let now = super::super::time::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
        // A year that overflowed the date arithmetic (a debug-build panic) is ignored.
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 99999999999999 08:49:37 GMT", now),
            None
        );

        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150.5"));
        assert_eq!(retry_after(&h), Some(Duration::from_micros(150_500)));
        h.insert("retry-after-ms", HeaderValue::from_static("NaN"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
    }
}
