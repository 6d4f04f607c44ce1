//! Lenient field readers for wire types: a field of an unexpected type is read as absent (or
//! converted when the meaning is unambiguous) instead of failing the whole payload, so an odd
//! server costs one field, never the turn.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// `null` (or absent) as the type's default: `"tool_calls": null` is no calls.
pub(crate) fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A string; a number as its text (`"id": 7`); anything else absent.
pub(crate) fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// An integer, or a string holding one; anything else absent.
pub(crate) fn int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    })
}

/// A token count: a non-negative integer (`12`, `12.0` or `"12"`); anything else absent.
pub(crate) fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= u64::MAX as f64)
                .map(|f| f as u64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    })
}

/// An object of type `T`, or absent when the field holds anything else (`"usage": "n/a"`).
pub(crate) fn object<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    Ok(match Value::deserialize(d)? {
        v @ Value::Object(_) => serde_json::from_value(v).ok(),
        _ => None,
    })
}

/// Text of a `content`-like field: a string, or the `text` of every part of an array, joined.
pub(crate) fn content_text(v: &Value) -> Cow<'_, str> {
    match v {
        Value::String(s) => Cow::Borrowed(s),
        Value::Array(parts) => {
            let mut texts = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str));
            match (texts.next(), texts.next()) {
                (None, _) => Cow::Borrowed(""),
                (Some(one), None) => Cow::Borrowed(one),
                (Some(a), Some(b)) => {
                    let mut s = String::from(a);
                    s.push_str(b);
                    texts.for_each(|t| s.push_str(t));
                    Cow::Owned(s)
                }
            }
        }
        _ => Cow::Borrowed(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Probe {
        #[serde(default, deserialize_with = "text")]
        id: Option<String>,
        #[serde(default, deserialize_with = "int")]
        index: Option<i64>,
        #[serde(default, deserialize_with = "count")]
        tokens: Option<u64>,
    }

    #[test]
    fn odd_types_are_read_or_absent() {
        let p: Probe = serde_json::from_str(r#"{"id":7,"index":"1","tokens":12.0}"#).unwrap();
        assert_eq!(
            (p.id.as_deref(), p.index, p.tokens),
            (Some("7"), Some(1), Some(12))
        );
        let p: Probe = serde_json::from_str(r#"{"id":{},"index":[],"tokens":-3}"#).unwrap();
        assert_eq!((p.id, p.index, p.tokens), (None, None, None));
    }
}
