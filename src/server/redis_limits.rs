//! The gateway keys' counters shared by every instance through Redis or Valkey (feature
//! `redis`, `[limits] store = "redis://…"`).
//!
//! Each decision is one Lua script run atomically by the server (never a read then a write from
//! the gateway): the admission script reads the key's token counts of the minute and the day
//! and its request count of the minute, and counts the request only when every limit holds; the
//! charge script adds an answer's tokens to the minute and the day. Counter names carry the
//! gateway key's name and the window's number (`toolwire:limits:<name>:r:<minute>`), and expire
//! with their window.
//!
//! When Redis cannot be reached (each call waits at most [`STORE_TIMEOUT`], 2 s), the config's
//! choice applies ([`StoreFailure`]): requests go on unlimited (`open`) or are refused with 503
//! (`closed`). The change is logged once when the store goes away and once when it is back,
//! not per request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::OnceCell;

use super::config::StoreFailure;

/// The limit a request is over, as the admission script numbers them (the order of
/// `limits::Limit`): requests of the minute, tokens of the minute, tokens of the day.
pub(crate) type Over = usize;

/// The store cannot be reached and the config fails closed.
pub(crate) const STORE_AWAY: Over = 3;

/// The longest a limit decision waits for Redis.
pub(crate) const STORE_TIMEOUT: Duration = Duration::from_secs(2);

/// KEYS: requests of the minute, tokens of the minute, tokens of the day. ARGV: the three
/// limits (0: none), the minute's and the day's lengths in milliseconds. Returns 0 (admitted,
/// counted), 1 (requests), 2 (tokens of the minute), 3 (tokens of the day).
const ADMIT: &str = r"
local rpm, tpm, tpd = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if tpd > 0 and tonumber(redis.call('GET', KEYS[3]) or '0') >= tpd then return 3 end
if tpm > 0 and tonumber(redis.call('GET', KEYS[2]) or '0') >= tpm then return 2 end
if rpm > 0 then
  if tonumber(redis.call('GET', KEYS[1]) or '0') >= rpm then return 1 end
  redis.call('INCR', KEYS[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
return 0
";

/// KEYS: tokens of the minute, tokens of the day. ARGV: tokens, the minute's and the day's
/// lengths in milliseconds.
const CHARGE: &str = r"
redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('INCRBY', KEYS[2], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 0
";

/// A connection to the store that reconnects by itself, within [`STORE_TIMEOUT`].
async fn connect(client: redis::Client) -> Result<ConnectionManager, String> {
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(STORE_TIMEOUT)
        .set_response_timeout(STORE_TIMEOUT)
        .set_number_of_retries(1);
    match tokio::time::timeout(
        STORE_TIMEOUT,
        ConnectionManager::new_with_config(client, config),
    )
    .await
    {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("no answer in time".to_owned()),
    }
}

/// Which counters a decision reads: the gateway key's name and the current windows.
pub(crate) struct Ids<'a> {
    pub(crate) key: &'a str,
    pub(crate) minute: u64,
    pub(crate) day: u64,
    pub(crate) window_ms: u64,
}

impl Ids<'_> {
    fn name(&self, what: &str, window: u64) -> String {
        format!("toolwire:limits:{}:{what}:{window}", self.key)
    }

    /// Counters outlive their window a little, so a late charge still lands.
    fn ttls(&self) -> (u64, u64) {
        let minute = self.window_ms.saturating_mul(2);
        (
            minute,
            self.window_ms.saturating_mul(1_440).saturating_add(minute),
        )
    }
}

/// The shared store.
pub(crate) struct Shared {
    client: Option<redis::Client>,
    connection: Arc<OnceCell<ConnectionManager>>,
    failure: StoreFailure,
    /// Whether the store is away now (logged on change only).
    away: AtomicBool,
    admit: redis::Script,
    charge: redis::Script,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("failure", &self.failure)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// The store at `url` (connected on first use).
    pub(crate) fn new(url: &str, failure: StoreFailure) -> Self {
        let client = match redis::Client::open(url) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::error!(error = %e, "the limit store URL cannot be used");
                None
            }
        };
        let connection = Arc::new(OnceCell::new());
        // Connects now, so the first requests do not wait for it.
        if let (Some(client), Ok(runtime)) = (&client, tokio::runtime::Handle::try_current()) {
            let cell = Arc::clone(&connection);
            let client = client.clone();
            runtime.spawn(async move {
                let _ = cell.get_or_try_init(|| connect(client)).await;
            });
        }
        Self {
            client,
            connection,
            failure,
            away: AtomicBool::new(false),
            admit: redis::Script::new(ADMIT),
            charge: redis::Script::new(CHARGE),
        }
    }

    async fn connection(&self) -> Result<ConnectionManager, String> {
        let client = self
            .client
            .clone()
            .ok_or_else(|| "the store URL is not valid".to_owned())?;
        self.connection
            .get_or_try_init(|| connect(client))
            .await
            .cloned()
    }

    /// Logs the store going away or coming back, once per change.
    fn note(&self, error: Option<&str>) {
        match error {
            Some(e) => {
                if !self.away.swap(true, Ordering::Relaxed) {
                    let then = match self.failure {
                        StoreFailure::Open => "requests go on without limits until it is back",
                        StoreFailure::Closed => {
                            "requests of limited keys are refused (503) until it is back"
                        }
                    };
                    tracing::error!(error = e, "the limit store cannot be reached: {then}");
                }
            }
            None => {
                if self.away.swap(false, Ordering::Relaxed) {
                    tracing::warn!("the limit store is reachable again");
                }
            }
        }
    }

    /// Admits a request with limits `caps` (requests/min, tokens/min, tokens/day; 0: none):
    /// `Some(Ok)` admitted, `Some(Err)` over a limit ([`STORE_AWAY`] when the store is away and
    /// the config fails closed), `None` the store is away and the config fails open.
    pub(crate) async fn admit(&self, ids: &Ids<'_>, caps: [u64; 3]) -> Option<Result<(), Over>> {
        let (minute_ttl, day_ttl) = ids.ttls();
        let run = async {
            let mut conn = self.connection().await?;
            let mut invocation = self.admit.prepare_invoke();
            invocation
                .key(ids.name("r", ids.minute))
                .key(ids.name("t", ids.minute))
                .key(ids.name("d", ids.day))
                .arg(caps[0])
                .arg(caps[1])
                .arg(caps[2])
                .arg(minute_ttl)
                .arg(day_ttl);
            invocation
                .invoke_async::<i64>(&mut conn)
                .await
                .map_err(|e| e.to_string())
        };
        let answer = tokio::time::timeout(STORE_TIMEOUT, run)
            .await
            .unwrap_or_else(|_| Err("no answer in time".to_owned()));
        match answer {
            Ok(code) => {
                self.note(None);
                Some(match code {
                    1..=3 => Err(Over::try_from(code - 1).unwrap_or(0)),
                    _ => Ok(()),
                })
            }
            Err(e) => {
                self.note(Some(&e));
                match self.failure {
                    StoreFailure::Closed => Some(Err(STORE_AWAY)),
                    _ => None,
                }
            }
        }
    }

    /// Adds `tokens` to the key's minute and day (lost, and logged once, while the store is
    /// away).
    pub(crate) async fn charge(&self, ids: &Ids<'_>, tokens: u64) {
        let (minute_ttl, day_ttl) = ids.ttls();
        let run = async {
            let mut conn = self.connection().await?;
            let mut invocation = self.charge.prepare_invoke();
            invocation
                .key(ids.name("t", ids.minute))
                .key(ids.name("d", ids.day))
                .arg(tokens)
                .arg(minute_ttl)
                .arg(day_ttl);
            invocation
                .invoke_async::<i64>(&mut conn)
                .await
                .map_err(|e| e.to_string())
        };
        let answer = tokio::time::timeout(STORE_TIMEOUT, run)
            .await
            .unwrap_or_else(|_| Err("no answer in time".to_owned()));
        self.note(answer.err().as_deref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store nobody answers at: open lets requests through, closed refuses them, each after
    /// at most [`STORE_TIMEOUT`]; the store is marked away (logged once, not per request).
    #[tokio::test]
    async fn an_unreachable_store_follows_the_config() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let url = format!("redis://127.0.0.1:{port}");
        let ids = Ids {
            key: "k",
            minute: 1,
            day: 0,
            window_ms: 60_000,
        };
        let open = Shared::new(&url, StoreFailure::Open);
        for _ in 0..3 {
            let started = std::time::Instant::now();
            assert_eq!(open.admit(&ids, [1, 0, 0]).await, None);
            assert!(started.elapsed() < STORE_TIMEOUT * 4);
        }
        assert!(open.away.load(Ordering::Relaxed));
        open.charge(&ids, 10).await;
        let closed = Shared::new(&url, StoreFailure::Closed);
        assert_eq!(closed.admit(&ids, [1, 0, 0]).await, Some(Err(STORE_AWAY)));
        let bad = Shared::new("redis://[::1", StoreFailure::Closed);
        assert_eq!(bad.admit(&ids, [1, 0, 0]).await, Some(Err(STORE_AWAY)));
    }
}
