//! The key sealing state handed to a client: HMAC-SHA256 (RustCrypto `hmac`, `sha2`) over the
//! state's JSON, what kind of state it is and the id it rides on. Pure data and computation, no
//! IO: where the key comes from is the server's business. The gateway packs the provider state
//! of a call into the call's id with it (`providers::shared::carry_id`) and reads back only
//! state whose tag matches (`providers::seal`).

use std::sync::Arc;

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Map, Value};
use sha2::Sha256;

use crate::error::{Error, Result};

/// The bytes of the tag kept in a packed form (of HMAC-SHA256's 32).
const TAG: usize = 16;

/// The shortest key [`Seal::new`] takes, in bytes.
pub const MIN_KEY: usize = 16;

/// The server key sealing the provider state the gateway hands to clients in call ids and
/// reasoning items. Instances that must serve each other's turns need the same key.
#[derive(Clone)]
pub struct Seal {
    key: Arc<[u8]>,
}

impl std::fmt::Debug for Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Seal(..)")
    }
}

impl Seal {
    /// A seal with this key; a key shorter than [`MIN_KEY`] bytes is refused.
    pub fn new(key: impl AsRef<[u8]>) -> Result<Self> {
        let key = key.as_ref();
        if key.len() < MIN_KEY {
            return Err(Error::input(
                "state_key",
                format!(
                    "the key sealing call state must have at least {MIN_KEY} bytes, got {}",
                    key.len()
                ),
            ));
        }
        Ok(Self { key: key.into() })
    }

    fn mac(&self, kind: &str, head: &str, payload: &[u8]) -> Option<Hmac<Sha256>> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key).ok()?;
        for part in [
            b"toolwire-state-2".as_slice(),
            kind.as_bytes(),
            head.as_bytes(),
        ] {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac.update(payload);
        Some(mac)
    }

    /// `state` sealed for `head` (the call id it rides on, or "" for a reasoning item), as
    /// hex of its JSON then hex of the tag (only `[0-9a-f]`). `kind` separates ids from items.
    pub(crate) fn pack(&self, kind: &str, head: &str, state: &Map<String, Value>) -> String {
        let json = Value::Object(state.clone()).to_string();
        let mut out = hex(json.as_bytes());
        if let Some(mac) = self.mac(kind, head, json.as_bytes()) {
            out.push_str(&hex(&mac.finalize().into_bytes()[..TAG]));
        }
        out
    }

    /// The state [`Seal::pack`] sealed, after checking its tag (in constant time); `Err` says
    /// why not. The state is as it was sealed: the reader keeps the shape it allows.
    pub(crate) fn open(
        &self,
        kind: &str,
        head: &str,
        packed: &str,
    ) -> std::result::Result<Map<String, Value>, &'static str> {
        let bytes = unhex(packed).ok_or("not the gateway's encoding")?;
        if bytes.len() < TAG {
            return Err("too short");
        }
        let (json, tag) = bytes.split_at(bytes.len() - TAG);
        self.mac(kind, head, json)
            .ok_or("no key")?
            .verify_truncated_left(tag)
            .map_err(|_| "its seal does not match: altered, forged, or sealed by another key")?;
        match serde_json::from_slice::<Value>(json) {
            Ok(Value::Object(map)) => Ok(map),
            _ => Err("not a JSON object"),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    bytes
        .chunks(2)
        .map(|p| Some((digit(p[0])? << 4) | digit(p[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn seal() -> Seal {
        Seal::new("k".repeat(32)).unwrap()
    }

    #[test]
    fn an_altered_byte_or_a_moved_state_is_refused() {
        let mut state = Map::new();
        state.insert("item_id".into(), json!("fc_1"));
        let packed = seal().pack("id", "call_1", &state);
        assert!(packed.bytes().all(|b| b.is_ascii_hexdigit()), "{packed}");
        assert_eq!(seal().open("id", "call_1", &packed), Ok(state));
        for i in 0..packed.len() {
            let mut bytes = packed.as_bytes().to_vec();
            bytes[i] = if bytes[i] == b'0' { b'1' } else { b'0' };
            let altered = String::from_utf8(bytes).unwrap();
            assert!(seal().open("id", "call_1", &altered).is_err(), "byte {i}");
        }
        // The same state on another call id, as another kind, or under another key.
        assert!(seal().open("id", "call_2", &packed).is_err());
        assert!(seal().open("item", "call_1", &packed).is_err());
        let other = Seal::new("j".repeat(32)).unwrap();
        assert!(other.open("id", "call_1", &packed).is_err());
        assert!(seal().open("id", "call_1", "zz").is_err());
        assert!(seal().open("id", "call_1", "00").is_err());
    }

    #[test]
    fn short_keys_are_refused() {
        assert!(Seal::new("short").is_err());
        assert!(Seal::new([0_u8; MIN_KEY]).is_ok());
    }
}
