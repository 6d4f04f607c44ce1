//! The gateway keys' limits: requests per minute, upstream tokens per minute and per day,
//! counted in fixed windows numbered from the Unix epoch (so every instance agrees on the
//! window without talking), in this process's memory.
//!
//! A request is admitted while the key's token counts of the current minute and day are under
//! their limits and its request count of the minute, this one included, is at most its limit;
//! its tokens are charged when its answer ends (a stream when it ends or is cut), from the
//! upstream's usage or, when the upstream sent none, an estimate (counted apart in `/metrics`).
//! With `[limits] store` (feature `redis`) the counters live in Redis instead, shared by every
//! instance (`redis_limits.rs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::config::{GatewayKey, LimitsConfig};

/// How many "minute" windows make a day.
const MINUTES_PER_DAY: u64 = 1_440;

/// The gateway's token estimate where no upstream counted: a token per four bytes of JSON,
/// rounded up (the rule of thumb OpenAI and Anthropic give for English text). The one estimate
/// of `POST /v1/messages/count_tokens` and of a charge whose upstream sent no usage.
pub(crate) fn estimate_tokens(bytes: usize) -> u64 {
    u64::try_from(bytes.div_ceil(4)).unwrap_or(u64::MAX)
}

/// A limit a request went over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    /// `requests_per_minute`.
    Requests,
    /// `tokens_per_minute`.
    TokensMinute,
    /// `tokens_per_day`.
    TokensDay,
    /// The shared store cannot be reached and the config fails closed.
    Store,
}

impl Limit {
    /// Every limit, in the order of the `/metrics` series.
    pub(crate) const ALL: [Limit; 4] = [
        Limit::Requests,
        Limit::TokensMinute,
        Limit::TokensDay,
        Limit::Store,
    ];

    /// The config name of the limit.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Limit::Requests => "requests_per_minute",
            Limit::TokensMinute => "tokens_per_minute",
            Limit::TokensDay => "tokens_per_day",
            Limit::Store => "store_unreachable",
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// A refused request: the limit and when the window ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Refusal {
    pub(crate) limit: Limit,
    pub(crate) retry_after: Duration,
}

/// One key's counters for `/metrics`.
#[derive(Debug, Default)]
pub(crate) struct KeyCounters {
    pub(crate) requests: AtomicU64,
    pub(crate) tokens: AtomicU64,
    pub(crate) estimated_tokens: AtomicU64,
    pub(crate) refused: [AtomicU64; 4],
}

/// One key's windows in memory.
#[derive(Debug, Default, Clone, Copy)]
struct Windows {
    minute: u64,
    requests: u64,
    tokens_minute: u64,
    day: u64,
    tokens_day: u64,
}

/// One key's limits.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Caps {
    requests_per_minute: Option<u64>,
    tokens_per_minute: Option<u64>,
    tokens_per_day: Option<u64>,
}

impl Caps {
    fn of(key: &GatewayKey) -> Self {
        Self {
            requests_per_minute: key.requests_per_minute,
            tokens_per_minute: key.tokens_per_minute,
            tokens_per_day: key.tokens_per_day,
        }
    }

    fn any(self) -> bool {
        self.requests_per_minute.is_some()
            || self.tokens_per_minute.is_some()
            || self.tokens_per_day.is_some()
    }
}

/// The limits of every named gateway key, by the key's position in the config.
#[derive(Debug)]
pub(crate) struct Limiter {
    window_ms: u64,
    caps: Vec<Caps>,
    names: Vec<String>,
    windows: Mutex<Vec<Windows>>,
    counters: Vec<KeyCounters>,
    #[cfg(feature = "redis")]
    shared: Option<super::redis_limits::Shared>,
}

impl Limiter {
    /// The limiter of `keys` (named gateway keys, in config order).
    pub(crate) fn new(keys: &[GatewayKey], config: &LimitsConfig) -> Self {
        let window_ms = u64::try_from(config.window.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        Self {
            window_ms,
            caps: keys.iter().map(Caps::of).collect(),
            names: keys.iter().map(|k| k.name.clone()).collect(),
            windows: Mutex::new(vec![Windows::default(); keys.len()]),
            counters: keys.iter().map(|_| KeyCounters::default()).collect(),
            #[cfg(feature = "redis")]
            shared: config
                .store
                .as_deref()
                .map(|url| super::redis_limits::Shared::new(url, config.on_store_error)),
        }
    }

    /// The names of the keys, in order.
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// Key `key`'s counters.
    pub(crate) fn counters(&self, key: usize) -> Option<&KeyCounters> {
        self.counters.get(key)
    }

    /// The current minute window's number, the day's, and the time left in the minute.
    fn now(&self) -> (u64, u64, Duration) {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let minute = ms / self.window_ms;
        let left = self.window_ms - ms % self.window_ms;
        (
            minute,
            minute / MINUTES_PER_DAY,
            Duration::from_millis(left),
        )
    }

    /// The time left in the current day window.
    fn day_left(&self, minute: u64, left: Duration) -> Duration {
        let minutes = MINUTES_PER_DAY - 1 - minute % MINUTES_PER_DAY;
        left + Duration::from_millis(minutes.saturating_mul(self.window_ms))
    }

    /// Admits one request of key `key` or says which limit it is over.
    pub(crate) async fn admit(&self, key: usize) -> Result<(), Refusal> {
        let Some(caps) = self.caps.get(key).copied() else {
            return Ok(());
        };
        let counters = &self.counters[key];
        let decided = if caps.any() {
            self.decide(key, caps).await
        } else {
            Ok(())
        };
        match decided {
            Ok(()) => {
                counters.requests.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(refusal) => {
                counters.refused[refusal.limit.slot()].fetch_add(1, Ordering::Relaxed);
                Err(refusal)
            }
        }
    }

    async fn decide(&self, key: usize, caps: Caps) -> Result<(), Refusal> {
        let (minute, day, left) = self.now();
        #[cfg(feature = "redis")]
        if let Some(shared) = &self.shared {
            let ids = super::redis_limits::Ids {
                key: &self.names[key],
                minute,
                day,
                window_ms: self.window_ms,
            };
            let caps = [
                caps.requests_per_minute.unwrap_or(0),
                caps.tokens_per_minute.unwrap_or(0),
                caps.tokens_per_day.unwrap_or(0),
            ];
            return match shared.admit(&ids, caps).await {
                Some(Ok(())) => Ok(()),
                Some(Err(over)) => {
                    let limit = Limit::ALL.get(over).copied().unwrap_or(Limit::Store);
                    Err(Refusal {
                        limit,
                        retry_after: self.retry_after(limit, minute, left),
                    })
                }
                // The store is away and the config fails open.
                None => Ok(()),
            };
        }
        let mut all = self.windows.lock().unwrap_or_else(PoisonError::into_inner);
        let w = &mut all[key];
        w.roll(minute, day);
        let over = if caps.tokens_per_day.is_some_and(|cap| w.tokens_day >= cap) {
            Some(Limit::TokensDay)
        } else if caps
            .tokens_per_minute
            .is_some_and(|cap| w.tokens_minute >= cap)
        {
            Some(Limit::TokensMinute)
        } else if caps
            .requests_per_minute
            .is_some_and(|cap| w.requests >= cap)
        {
            Some(Limit::Requests)
        } else {
            None
        };
        match over {
            Some(limit) => Err(Refusal {
                limit,
                retry_after: self.retry_after(limit, minute, left),
            }),
            None => {
                w.requests += 1;
                Ok(())
            }
        }
    }

    fn retry_after(&self, limit: Limit, minute: u64, left: Duration) -> Duration {
        match limit {
            Limit::TokensDay => self.day_left(minute, left),
            Limit::Store => Duration::from_secs(1),
            _ => left,
        }
    }

    /// Charges `tokens` upstream tokens to key `key`; `estimated` when the upstream sent no
    /// usage and the count is the gateway's estimate.
    pub(crate) async fn charge(&self, key: usize, tokens: u64, estimated: bool) {
        let Some(caps) = self.caps.get(key).copied() else {
            return;
        };
        let counters = &self.counters[key];
        counters.tokens.fetch_add(tokens, Ordering::Relaxed);
        if estimated {
            counters
                .estimated_tokens
                .fetch_add(tokens, Ordering::Relaxed);
        }
        if caps.tokens_per_minute.is_none() && caps.tokens_per_day.is_none() {
            return;
        }
        let (minute, day, _) = self.now();
        #[cfg(feature = "redis")]
        if let Some(shared) = &self.shared {
            let ids = super::redis_limits::Ids {
                key: &self.names[key],
                minute,
                day,
                window_ms: self.window_ms,
            };
            shared.charge(&ids, tokens).await;
            return;
        }
        let mut all = self.windows.lock().unwrap_or_else(PoisonError::into_inner);
        let w = &mut all[key];
        w.roll(minute, day);
        w.tokens_minute = w.tokens_minute.saturating_add(tokens);
        w.tokens_day = w.tokens_day.saturating_add(tokens);
    }
}

impl Windows {
    /// Starts new windows when the minute or the day changed.
    fn roll(&mut self, minute: u64, day: u64) {
        if self.minute != minute {
            self.minute = minute;
            self.requests = 0;
            self.tokens_minute = 0;
        }
        if self.day != day {
            self.day = day;
            self.tokens_day = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(key: GatewayKey) -> Limiter {
        Limiter::new(
            &[key],
            &LimitsConfig::default().with_window(Duration::from_secs(3_600)),
        )
    }

    #[tokio::test]
    async fn requests_per_minute_hold_and_say_when_to_retry() {
        let l = limiter(GatewayKey::new("a", "k").with_limits(Some(3), None, None));
        for _ in 0..3 {
            l.admit(0).await.unwrap();
        }
        let refused = l.admit(0).await.unwrap_err();
        assert_eq!(refused.limit, Limit::Requests);
        assert!(refused.retry_after <= Duration::from_secs(3_600));
        assert!(refused.retry_after > Duration::ZERO);
        assert_eq!(l.counters(0).unwrap().requests.load(Ordering::Relaxed), 3);
        assert_eq!(l.counters(0).unwrap().refused[0].load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn tokens_charged_after_the_answer_close_the_budget() {
        let l = limiter(GatewayKey::new("a", "k").with_limits(None, Some(100), Some(150)));
        l.admit(0).await.unwrap();
        l.charge(0, 99, false).await;
        l.admit(0).await.unwrap();
        l.charge(0, 1, true).await;
        let refused = l.admit(0).await.unwrap_err();
        assert_eq!(refused.limit, Limit::TokensMinute);
        let c = l.counters(0).unwrap();
        assert_eq!(c.tokens.load(Ordering::Relaxed), 100);
        assert_eq!(c.estimated_tokens.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn the_estimate_is_a_token_per_four_bytes_rounded_up() {
        assert_eq!(estimate_tokens(0), 0);
        assert_eq!(estimate_tokens(1), 1);
        assert_eq!(estimate_tokens(8), 2);
        assert_eq!(estimate_tokens(9), 3);
    }

    #[tokio::test]
    async fn a_key_without_limits_is_never_refused() {
        let l = limiter(GatewayKey::new("a", "k"));
        for _ in 0..1_000 {
            l.admit(0).await.unwrap();
        }
        // A key position outside the config (an anonymous key) is not limited.
        l.admit(7).await.unwrap();
    }
}
