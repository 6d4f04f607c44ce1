//! Content parts: text, images, files and audio in user messages and tool results.
//!
//! JSON (pinned): `{"type": "text", "text": "..."}`, `{"type": "image", "media_type":
//! "image/png", "data": "<base64>"}` or `{"type": "image", "url": "https://..."}`,
//! `{"type": "file", "media_type": "application/pdf", "data": "...", "filename": "a.pdf"}` (or
//! `url`), `{"type": "audio", "media_type": "audio/wav", "data": "..."}`. A piece of media is
//! carried by exactly one of `data` (base64, with its `media_type`) or `url`.

use serde::{Deserialize, Serialize};

/// Where a piece of media is: inline base64 bytes, or a URL the provider fetches.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// Base64 bytes (standard alphabet, no `data:` prefix) of this media type.
    Data {
        /// The IANA media type, e.g. `image/png`, `application/pdf`, `audio/wav`.
        media_type: String,
        /// The bytes, base64-encoded.
        data: String,
    },
    /// A URL, with the media type when it is known.
    Url {
        /// The address (`https://…`, `gs://…`, or a provider's file URI).
        url: String,
        /// The IANA media type, when known (some wires require it with a URL).
        media_type: Option<String>,
    },
}

impl Source {
    /// A URL as a source: a `data:<type>;base64,<data>` URL as inline data (how OpenAI-style
    /// clients send images), any other URL as a URL.
    pub fn from_url(url: String) -> Self {
        if let Some(rest) = url.strip_prefix("data:")
            && let Some((media_type, data)) = rest.split_once(";base64,")
        {
            return Source::Data {
                media_type: media_type.to_owned(),
                data: data.to_owned(),
            };
        }
        Source::Url {
            url,
            media_type: None,
        }
    }

    /// The media type, when known.
    pub fn media_type(&self) -> Option<&str> {
        match self {
            Self::Data { media_type, .. } => Some(media_type),
            Self::Url { media_type, .. } => media_type.as_deref(),
        }
    }

    /// The media as one URL: the URL itself, or a `data:<type>;base64,<data>` URL (the form
    /// OpenAI-style wires take inline media in).
    pub fn as_url(&self) -> String {
        match self {
            Self::Data { media_type, data } => format!("data:{media_type};base64,{data}"),
            Self::Url { url, .. } => url.clone(),
        }
    }
}

/// One part of a message's content.
///
/// Non-exhaustive: build parts with [`Part::text`], [`Part::image`], [`Part::image_url`],
/// [`Part::file`], [`Part::file_url`] and [`Part::audio`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawPart", into = "RawPart")]
#[non_exhaustive]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// Its bytes or URL.
        source: Source,
    },
    /// A document (PDF, plain text, …).
    File {
        /// Its bytes or URL.
        source: Source,
        /// Its file name, when known (some wires require one).
        filename: Option<String>,
    },
    /// Audio.
    Audio {
        /// Its bytes or URL.
        source: Source,
    },
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// An image from base64 bytes.
    pub fn image(media_type: impl Into<String>, data: impl Into<String>) -> Self {
        Self::Image {
            source: Source::Data {
                media_type: media_type.into(),
                data: data.into(),
            },
        }
    }

    /// An image at a URL.
    pub fn image_url(url: impl Into<String>) -> Self {
        Self::Image {
            source: Source::Url {
                url: url.into(),
                media_type: None,
            },
        }
    }

    /// A file from base64 bytes, with its name.
    pub fn file(
        media_type: impl Into<String>,
        data: impl Into<String>,
        filename: impl Into<String>,
    ) -> Self {
        Self::File {
            source: Source::Data {
                media_type: media_type.into(),
                data: data.into(),
            },
            filename: Some(filename.into()),
        }
    }

    /// A file at a URL, with its media type.
    pub fn file_url(url: impl Into<String>, media_type: impl Into<String>) -> Self {
        Self::File {
            source: Source::Url {
                url: url.into(),
                media_type: Some(media_type.into()),
            },
            filename: None,
        }
    }

    /// Audio from base64 bytes.
    pub fn audio(media_type: impl Into<String>, data: impl Into<String>) -> Self {
        Self::Audio {
            source: Source::Data {
                media_type: media_type.into(),
                data: data.into(),
            },
        }
    }

    /// The part's `type`: `text`, `image`, `file` or `audio` (for messages and errors).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Text { .. } => "text",
            Self::Image { .. } => "image",
            Self::File { .. } => "file",
            Self::Audio { .. } => "audio",
        }
    }

    /// The media, for any part but text.
    pub fn source(&self) -> Option<&Source> {
        match self {
            Self::Text { .. } => None,
            Self::Image { source } | Self::File { source, .. } | Self::Audio { source } => {
                Some(source)
            }
        }
    }

    /// The text of a text part.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } => Some(text),
            _ => None,
        }
    }
}

/// The JSON form of a part, checked when read.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPart {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    filename: Option<String>,
}

impl TryFrom<RawPart> for Part {
    type Error = String;

    fn try_from(raw: RawPart) -> Result<Self, String> {
        let kind = raw.kind.as_str();
        if kind == "text" {
            if raw.media_type.is_some() || raw.data.is_some() || raw.url.is_some() {
                return Err("a text part has only `text`".into());
            }
            return match raw.text {
                Some(text) => Ok(Self::Text { text }),
                None => Err("a text part needs `text`".into()),
            };
        }
        if !matches!(kind, "image" | "file" | "audio") {
            return Err(format!(
                "unknown part type {kind:?} (expected text, image, file or audio)"
            ));
        }
        if raw.text.is_some() {
            return Err(format!("a{} {kind} part has no `text`", article(kind)));
        }
        if raw.filename.is_some() && kind != "file" {
            return Err(format!(
                "only a file part has a `filename`, not a{} {kind}",
                article(kind)
            ));
        }
        let source = match (raw.data, raw.url) {
            (Some(data), None) => {
                let Some(media_type) = raw.media_type.filter(|t| !t.is_empty()) else {
                    return Err(format!(
                        "a{} {kind} part with `data` needs its `media_type`",
                        article(kind)
                    ));
                };
                if data.is_empty() {
                    return Err(format!("a{} {kind} part has empty `data`", article(kind)));
                }
                Source::Data { media_type, data }
            }
            (None, Some(url)) if !url.is_empty() => Source::Url {
                url,
                media_type: raw.media_type,
            },
            (Some(_), Some(_)) => {
                return Err(format!(
                    "a{} {kind} part has `data` or `url`, not both",
                    article(kind)
                ));
            }
            _ => {
                return Err(format!(
                    "a{} {kind} part needs `data` or `url`",
                    article(kind)
                ));
            }
        };
        Ok(match kind {
            "image" => Self::Image { source },
            "file" => Self::File {
                source,
                filename: raw.filename,
            },
            _ => Self::Audio { source },
        })
    }
}

fn article(kind: &str) -> &'static str {
    if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "n"
    } else {
        ""
    }
}

impl From<Part> for RawPart {
    fn from(part: Part) -> Self {
        let kind = part.kind().to_owned();
        let mut raw = RawPart {
            kind,
            text: None,
            media_type: None,
            data: None,
            url: None,
            filename: None,
        };
        let source = match part {
            Part::Text { text } => {
                raw.text = Some(text);
                return raw;
            }
            Part::Image { source } | Part::Audio { source } => source,
            Part::File { source, filename } => {
                raw.filename = filename;
                source
            }
        };
        match source {
            Source::Data { media_type, data } => {
                raw.media_type = Some(media_type);
                raw.data = Some(data);
            }
            Source::Url { url, media_type } => {
                raw.media_type = media_type;
                raw.url = Some(url);
            }
        }
        raw
    }
}

/// What a user message says: a string, or a list of parts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Text and media, in order.
    Parts(Vec<Part>),
}

impl Content {
    /// The text of a plain-text content, or of a list that holds only text parts (joined
    /// without separator); `None` when there is media.
    pub fn as_text(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            Self::Text(text) => Some(std::borrow::Cow::Borrowed(text)),
            Self::Parts(parts) => {
                let mut out = String::new();
                for part in parts {
                    out.push_str(part.as_text()?);
                }
                Some(std::borrow::Cow::Owned(out))
            }
        }
    }

    /// The parts (a plain text is one text part).
    pub fn parts(&self) -> Vec<Part> {
        match self {
            Self::Text(text) => vec![Part::text(text.clone())],
            Self::Parts(parts) => parts.clone(),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        // Read as a value first so a bad part says what is wrong with it, not only that the
        // content matched neither form.
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::String(text) => Ok(Self::Text(text)),
            serde_json::Value::Array(items) => {
                let mut parts = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let part = Part::deserialize(item)
                        .map_err(|e| D::Error::custom(format!("content[{i}]: {e}")))?;
                    parts.push(part);
                }
                Ok(Self::Parts(parts))
            }
            other => Err(D::Error::custom(format!(
                "content must be a string or a list of parts, not {}",
                super::json_kind(&other)
            ))),
        }
    }
}

impl Default for Content {
    fn default() -> Self {
        Self::Text(String::new())
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<Vec<Part>> for Content {
    fn from(parts: Vec<Part>) -> Self {
        Self::Parts(parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_read_and_write_the_pinned_json() {
        let cases = [
            json!({"type": "text", "text": "the page"}),
            json!({"type": "image", "media_type": "image/png", "data": "iVBORw0KGgo="}),
            json!({"type": "image", "url": "https://example.com/a.png"}),
            json!({"type": "file", "media_type": "application/pdf", "data": "JVBERi0=", "filename": "a.pdf"}),
            json!({"type": "file", "media_type": "application/pdf", "url": "https://example.com/a.pdf"}),
            json!({"type": "audio", "media_type": "audio/wav", "data": "UklGRg=="}),
        ];
        for case in cases {
            let part: Part = serde_json::from_value(case.clone()).unwrap();
            assert_eq!(serde_json::to_value(&part).unwrap(), case);
        }
    }

    #[test]
    fn bad_parts_say_what_is_wrong() {
        let cases = [
            (json!({"type": "image"}), "needs `data` or `url`"),
            (
                json!({"type": "image", "data": "AA=="}),
                "needs its `media_type`",
            ),
            (
                json!({"type": "image", "data": "AA==", "url": "https://x", "media_type": "image/png"}),
                "not both",
            ),
            (
                json!({"type": "video", "url": "https://x"}),
                "unknown part type",
            ),
            (json!({"type": "text"}), "needs `text`"),
            (
                json!({"type": "audio", "url": "https://x", "filename": "a"}),
                "only a file part",
            ),
            (
                json!({"type": "image", "url": "https://x", "detail": "high"}),
                "unknown field",
            ),
        ];
        for (case, expected) in cases {
            let err = serde_json::from_value::<Part>(case.clone()).unwrap_err();
            assert!(err.to_string().contains(expected), "{case}: {err}");
        }
    }

    #[test]
    fn content_is_a_string_or_parts() {
        let text: Content = serde_json::from_value(json!("hi")).unwrap();
        assert_eq!(text, Content::Text("hi".into()));
        let parts: Content = serde_json::from_value(
            json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
        )
        .unwrap();
        assert_eq!(parts.as_text().as_deref(), Some("ab"));
        let media = Content::Parts(vec![Part::image_url("https://x/a.png")]);
        let err = serde_json::from_value::<Content>(
            json!([{"type": "text", "text": "a"}, {"type": "image"}]),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("content[1]: an image part needs"),
            "{err}"
        );
        assert!(serde_json::from_value::<Content>(json!(3)).is_err());
        assert_eq!(media.as_text(), None);
        assert_eq!(serde_json::to_value(&text).unwrap(), json!("hi"));
    }
}
