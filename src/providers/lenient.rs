//! Lenient field readers for wire types: a field of an unexpected type is read as absent (or
//! converted when the meaning is unambiguous) instead of failing the whole payload, so an odd
//! server costs one field, never the turn.
//!
//! The readers are visitors: a field is read straight from the payload, never through a
//! `serde_json::Value`, so a chunk costs no allocation for the fields it reads (strings are
//! borrowed when the wire type borrows).

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// `null` (or absent) as the type's default: `"tool_calls": null` is no calls.
pub(crate) fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A list that a server may send as its one element (iFlytek Spark through an
/// OpenAI-compatible endpoint sends `tool_calls` as one call object, not an array): an array
/// reads as is, an object as a list of one, `null` or absent as empty. Elements are read in
/// place from the payload (no buffering), so borrowed fields keep borrowing.
pub(crate) fn one_or_many<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct OneOrMany<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for OneOrMany<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list, one object, or null")
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_any(self)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            // Capacity from the hint is capped: a hostile hint allocates nothing.
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(16));
            while let Some(item) = seq.next_element()? {
                out.push(item);
            }
            Ok(out)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            let one = T::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
            Ok(vec![one])
        }
    }
    d.deserialize_any(OneOrMany(std::marker::PhantomData))
}

/// A scalar read leniently: what each reader makes of a string, a number or anything else.
trait Lenient<'de>: Sized {
    fn string(s: Cow<'de, str>) -> Option<Self>;
    fn unsigned(n: u64) -> Option<Self>;
    fn signed(n: i64) -> Option<Self>;
    fn float(f: f64) -> Option<Self>;
    /// A number handed over as its text (serde_json's `arbitrary_precision`): read as the
    /// number the text is.
    fn number(text: &str) -> Option<Self> {
        if let Ok(n) = text.parse() {
            Self::unsigned(n)
        } else if let Ok(n) = text.parse() {
            Self::signed(n)
        } else {
            text.parse().ok().and_then(Self::float)
        }
    }
}

/// The key under which serde_json's `arbitrary_precision` feature (which a dependent crate may
/// turn on: features unify) hands a number to a visitor, as a one-entry map holding its text.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// Reads any JSON value as `T` leniently; containers and booleans are skipped as absent.
struct Reader<T>(std::marker::PhantomData<T>);

impl<'de, T: Lenient<'de>> Visitor<'de> for Reader<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(T::string(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(T::string(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(T::string(Cow::Owned(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(T::unsigned(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(T::signed(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(T::float(v))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let Some(first) = map.next_key::<Cow<'_, str>>()? else {
            return Ok(None);
        };
        let read = if first == NUMBER_TOKEN {
            // A number, as `Value` reads it under that feature; any other value under the key
            // (only a payload can put one there) is absent, never an error.
            match map.next_value::<Value>()? {
                Value::String(text) => T::number(&text),
                _ => None,
            }
        } else {
            map.next_value::<IgnoredAny>()?;
            None
        };
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(read)
    }
}

fn read<'de, D: Deserializer<'de>, T: Lenient<'de>>(d: D) -> Result<Option<T>, D::Error> {
    d.deserialize_any(Reader(std::marker::PhantomData))
}

/// A JSON number's text as `serde_json` writes it.
fn float_text(f: f64) -> Option<String> {
    serde_json::Number::from_f64(f).map(|n| n.to_string())
}

impl<'de> Lenient<'de> for Cow<'de, str> {
    fn string(s: Cow<'de, str>) -> Option<Self> {
        Some(s)
    }
    fn unsigned(n: u64) -> Option<Self> {
        Some(Cow::Owned(n.to_string()))
    }
    fn signed(n: i64) -> Option<Self> {
        Some(Cow::Owned(n.to_string()))
    }
    fn float(f: f64) -> Option<Self> {
        float_text(f).map(Cow::Owned)
    }
    fn number(text: &str) -> Option<Self> {
        // The number's own text, as `Number::to_string` gives it under that feature.
        Some(Cow::Owned(text.to_owned()))
    }
}

/// A string; a number as its text (`"id": 7`); anything else absent.
pub(crate) fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(read::<D, Cow<'de, str>>(d)?.map(Cow::into_owned))
}

/// [`text`], borrowed from the payload when the string has no escapes.
pub(crate) fn text_ref<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    read(d)
}

/// An integer, or a string holding one (`"1"`); anything else absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Int(i64);

impl Lenient<'_> for Int {
    fn string(s: Cow<'_, str>) -> Option<Self> {
        s.trim().parse().ok().map(Int)
    }
    fn unsigned(n: u64) -> Option<Self> {
        // Past i64, as the float it is closest to (saturating), like `serde_json::Number`.
        Some(Int(i64::try_from(n).unwrap_or(n as f64 as i64)))
    }
    fn signed(n: i64) -> Option<Self> {
        Some(Int(n))
    }
    fn float(f: f64) -> Option<Self> {
        (f.fract() == 0.0).then_some(Int(f as i64))
    }
}

/// An integer, or a string holding one; anything else absent.
pub(crate) fn int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(read::<D, Int>(d)?.map(|Int(n)| n))
}

/// A token count: a non-negative integer (`12`, `12.0` or `"12"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Count(u64);

impl Lenient<'_> for Count {
    fn string(s: Cow<'_, str>) -> Option<Self> {
        s.trim().parse().ok().map(Count)
    }
    fn unsigned(n: u64) -> Option<Self> {
        Some(Count(n))
    }
    fn signed(n: i64) -> Option<Self> {
        u64::try_from(n).ok().map(Count)
    }
    fn float(f: f64) -> Option<Self> {
        (f.fract() == 0.0 && f >= 0.0 && f <= u64::MAX as f64).then_some(Count(f as u64))
    }
}

/// A token count: a non-negative integer (`12`, `12.0` or `"12"`); anything else absent.
pub(crate) fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(read::<D, Count>(d)?.map(|Count(n)| n))
}

/// [`content_text`] of a raw field: a string is read in place (escapes into `buf`); only an
/// array of parts (or another odd value) is parsed. An error where the field would not parse as
/// a `Value` (a lone surrogate, a number out of range: a `RawValue` checks neither), so such a
/// payload fails as it would have, instead of losing its text.
pub(crate) fn raw_content_text<'r>(
    raw: &'r RawValue,
    buf: &'r mut String,
) -> serde_json::Result<Cow<'r, str>> {
    let text = raw.get();
    Ok(match text.as_bytes().first() {
        Some(b'"') => match string_token(text, buf) {
            Some(s) => Cow::Borrowed(s),
            None => Cow::Owned(serde_json::from_str::<String>(text)?),
        },
        _ => Cow::Owned(content_text(&serde_json::from_str::<Value>(text)?).into_owned()),
    })
}

/// The text of a JSON string token (`"…"`, quotes included, as a `RawValue` holds it): the
/// inside itself when it has no escapes, else unescaped into `buf`, which the caller reuses so
/// a stream of fragments costs no allocation. `None` when the token is not a well-formed JSON
/// string; callers then ask `serde_json`, so the result never differs from its own.
pub(crate) fn string_token<'r>(raw: &'r str, buf: &'r mut String) -> Option<&'r str> {
    unescape(raw, buf, false)
}

/// [`string_token`], except that a lone surrogate escape (`\ud800` without its pair: no
/// character, which UTF-8 cannot hold and serde_json refuses) reads as U+FFFD, so text that
/// carries one is kept rather than lost.
pub(crate) fn string_token_lossy<'r>(raw: &'r str, buf: &'r mut String) -> Option<&'r str> {
    unescape(raw, buf, true)
}

fn unescape<'r>(raw: &'r str, buf: &'r mut String, lossy: bool) -> Option<&'r str> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if memchr::memchr(b'\\', inner.as_bytes()).is_none() {
        return Some(inner);
    }
    buf.clear();
    let mut rest = inner;
    while let Some(at) = memchr::memchr(b'\\', rest.as_bytes()) {
        buf.push_str(&rest[..at]);
        let escape = *rest.as_bytes().get(at + 1).filter(|b| b.is_ascii())?;
        // Both bytes are ASCII, so the slice starts on a character boundary.
        rest = &rest[at + 2..];
        let c = match escape {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = hex4(rest)?;
                rest = &rest[4..];
                let pair = if (0xD800..0xDC00).contains(&high) {
                    let low = rest
                        .strip_prefix("\\u")
                        .and_then(hex4)
                        .filter(|low| (0xDC00..0xE000).contains(low));
                    low.map(|low| {
                        // `\uXXXX`: six ASCII bytes.
                        rest = &rest[6..];
                        0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                    })
                } else {
                    Some(high)
                };
                match pair.and_then(char::from_u32) {
                    Some(c) => c,
                    None if lossy => char::REPLACEMENT_CHARACTER,
                    None => return None,
                }
            }
            _ => return None,
        };
        buf.push(c);
    }
    buf.push_str(rest);
    Some(buf)
}

/// Four hex digits at the start of `s`.
fn hex4(s: &str) -> Option<u32> {
    let digits = s.as_bytes().get(..4)?;
    digits.iter().try_fold(0u32, |n, &b| {
        let d = (b as char).to_digit(16)?;
        Some(n << 4 | d)
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

/// An object read as `T`, with the object itself kept verbatim beside it: a provider's own
/// usage report, whose fields the canonical counts keep only in part.
#[derive(Debug, Clone)]
pub(crate) struct Kept<T> {
    /// What was read.
    pub value: T,
    /// The object as sent.
    pub raw: Value,
}

impl<T> std::ops::Deref for Kept<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

/// Like [`object`], keeping the object too. Nothing is allocated when the field is absent or
/// `null`.
pub(crate) fn object_kept<'de, D, T>(d: D) -> Result<Option<Kept<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    Ok(match Value::deserialize(d)? {
        raw @ Value::Object(_) => T::deserialize(&raw).ok().map(|value| Kept { value, raw }),
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

    #[derive(serde::Deserialize)]
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

    /// `s` as a JSON string token with every character outside printable ASCII escaped, and
    /// with `/` escaped too.
    fn escaped(s: &str) -> String {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '/' => out.push_str("\\/"),
                ' '..='~' => out.push(c),
                _ => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{unit:04X}"));
                    }
                }
            }
        }
        out.push('"');
        out
    }

    proptest::proptest! {
        #[test]
        fn string_tokens_read_like_serde_json(s in "\\PC*") {
            let mut buf = String::new();
            for token in [serde_json::to_string(&s).unwrap(), escaped(&s)] {
                proptest::prop_assert_eq!(string_token(&token, &mut buf), Some(s.as_str()));
            }
        }

        #[test]
        fn any_text_between_quotes_reads_without_panicking(s in "(\\\\|\\\\u|é|[a-f0-9]|\\PC){0,12}") {
            // Callers hand in tokens serde_json already accepted; any other text must still
            // not panic, and where serde_json accepts it the two agree.
            let token = format!("\"{s}\"");
            let mut buf = String::new();
            let ours = string_token(&token, &mut buf).map(str::to_owned);
            if let (Some(text), Ok(serde)) = (ours, serde_json::from_str::<String>(&token)) {
                proptest::prop_assert_eq!(text, serde);
            }
        }

        #[test]
        fn a_string_token_is_never_read_otherwise_than_serde_json(token in r#""([^"\\\x00-\x1f]|\\["\\/bfnrtxu]|\\u[0-9a-fA-FdD]{0,4}){0,8}""#) {
            let mut buf = String::new();
            if let Some(text) = string_token(&token, &mut buf) {
                let serde: String = serde_json::from_str(&token).unwrap();
                proptest::prop_assert_eq!(text, serde);
            }
        }
    }

    #[test]
    fn numbers_under_arbitrary_precision_are_numbers() {
        // A dependent crate may turn on serde_json's `arbitrary_precision` (features unify):
        // then every number reaches a visitor as this one-entry map, which `Value` reads as the
        // number; the visitors must too, or every numeric `index`, id and count reads absent.
        let n = |text: &str| format!(r#"{{"$serde_json::private::Number":"{text}"}}"#);
        let json = format!(
            r#"{{"id":{},"index":{},"tokens":{}}}"#,
            n("7"),
            n("1"),
            n("12.0")
        );
        let p: Probe = serde_json::from_str(&json).unwrap();
        assert_eq!(
            (p.id.as_deref(), p.index, p.tokens),
            (Some("7"), Some(1), Some(12))
        );
        let json = format!(
            r#"{{"id":{},"index":{},"tokens":{}}}"#,
            n("-3"),
            n("x"),
            n("-3")
        );
        let p: Probe = serde_json::from_str(&json).unwrap();
        assert_eq!(
            (p.id.as_deref(), p.index, p.tokens),
            (Some("-3"), None, None)
        );
        // Other objects stay absent, and so does the key holding no text or beside other keys'
        // text: one odd field never fails the payload.
        let p: Probe = serde_json::from_str(r#"{"id":{"a":"7"},"index":{"a":1,"b":[2]}}"#).unwrap();
        assert_eq!((p.id, p.index), (None, None));
        let json =
            format!(r#"{{"id":{{"{NUMBER_TOKEN}":5}},"index":{{"{NUMBER_TOKEN}":"2","x":[1]}}}}"#);
        let p: Probe = serde_json::from_str(&json).unwrap();
        assert_eq!((p.id, p.index), (None, Some(2)));
    }

    #[test]
    fn lone_surrogates_read_as_replacement_characters_when_lossy() {
        let mut buf = String::new();
        for (token, text) in [
            (r#""\ud800""#, "\u{FFFD}"),
            (r#""a\udc00b""#, "a\u{FFFD}b"),
            (r#""\ud800\ud800x""#, "\u{FFFD}\u{FFFD}x"),
            (r#""\ud83dx\ud83d\ude00""#, "\u{FFFD}x\u{1F600}"),
            (r#""\ud83d\n""#, "\u{FFFD}\n"),
        ] {
            assert_eq!(string_token(token, &mut buf), None, "{token}");
            assert_eq!(string_token_lossy(token, &mut buf), Some(text), "{token}");
        }
        assert_eq!(string_token_lossy(r#""\x""#, &mut buf), None);
    }

    #[test]
    fn string_tokens_with_surrogates_and_bad_escapes() {
        let mut buf = String::new();
        assert_eq!(
            string_token(r#""\ud83d\ude00x""#, &mut buf),
            Some("\u{1F600}x")
        );
        assert_eq!(string_token(r#""\u00e9\n""#, &mut buf), Some("é\n"));
        for bad in [
            r#""\ud83d""#,
            r#""\ude00""#,
            r#""\ud83dx""#,
            r#""\u12""#,
            r#""\x""#,
            r#""\u+abc""#,
            "x",
            r#""\""#,
        ] {
            assert_eq!(string_token(bad, &mut buf), None, "{bad}");
        }
    }

    /// The readers as they were written over `Value`: the visitors must agree with them.
    fn by_value(v: &Value) -> (Option<String>, Option<i64>, Option<u64>) {
        let text = match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        let int = match v {
            Value::Number(n) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        let count = match v {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= u64::MAX as f64)
                    .map(|f| f as u64)
            }),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        (text, int, count)
    }

    #[test]
    fn visitors_agree_with_the_value_readers() {
        let cases = [
            "0",
            "7",
            "-3",
            "12.0",
            "12.5",
            "-0.0",
            "1e20",
            "1.5e300",
            "-9223372036854775808",
            "9223372036854775807",
            "9223372036854775808",
            "18446744073709551615",
            "18446744073709551616",
            "\"12\"",
            "\" 12 \"",
            "\"-1\"",
            "\"x\"",
            "\"a\\\"b\"",
            "\"\"",
            "null",
            "true",
            "false",
            "[]",
            "[1,{\"a\":[2]}]",
            "{}",
            "{\"id\":7}",
        ];
        for case in cases {
            let json = format!(r#"{{"id":{case},"index":{case},"tokens":{case}}}"#);
            let p: Probe = serde_json::from_str(&json).unwrap();
            let v: Value = serde_json::from_str(case).unwrap();
            assert_eq!((p.id, p.index, p.tokens), by_value(&v), "{case}");
            // Through a `Value` deserializer too (`object` reads nested types that way).
            let p: Probe = serde_json::from_value(serde_json::from_str(&json).unwrap()).unwrap();
            assert_eq!(
                (p.id, p.index, p.tokens),
                by_value(&v),
                "{case} (from a Value)"
            );
        }
    }
}
