//! The crate's one error type. Variants are chosen by what the caller does next.

use std::fmt;
use std::time::Duration;

use crate::types::{ChatResponse, ProviderKind};

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A boxed source error.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong, grouped by what the caller does next.
///
/// Tool problems (malformed arguments, unknown tools, failing handlers) are not errors: they
/// become error results sent back to the model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request never got an answer: DNS, connect, TLS, a dropped connection. Retry may help.
    #[error("{provider}: transport error: {message}")]
    Transport {
        /// The provider being called.
        provider: ProviderKind,
        /// What failed (never contains the API key).
        message: String,
        /// Whether the failure happened while connecting (safe to retry).
        connect: bool,
        /// The underlying error.
        #[source]
        source: Option<BoxError>,
    },
    /// A configured time limit ran out.
    #[error("{provider}: {phase} timeout after {limit:?}")]
    Timeout {
        /// The provider being called.
        provider: ProviderKind,
        /// Which limit.
        phase: TimeoutPhase,
        /// The configured limit.
        limit: Duration,
        /// What a stream had delivered before it stalled, unfinished calls marked `truncated`.
        partial: Option<Box<ChatResponse>>,
    },
    /// The provider answered with an error.
    #[error("{0}")]
    Api(Box<ApiError>),
    /// A body or stream payload did not have the shape the provider's wire format promises.
    #[error("{provider}: cannot decode {what}: {message}")]
    Decode {
        /// The provider whose wire format was expected.
        provider: ProviderKind,
        /// What was being decoded and where (e.g. "SSE line 12", "response body").
        what: String,
        /// The parser's reason.
        message: String,
        /// What had arrived before the undecodable part, unfinished calls marked `truncated`
        /// (set when the problem came mid-stream).
        partial: Option<Box<ChatResponse>>,
    },
    /// A stream broke: it ended without its terminal signal or a limit was crossed. The partial
    /// response (with unfinished calls marked `truncated`) is kept.
    #[error("{provider}: stream broken: {reason}")]
    Stream {
        /// The provider being streamed.
        provider: ProviderKind,
        /// What happened.
        reason: String,
        /// What had arrived, unfinished calls marked `truncated`.
        partial: Option<Box<ChatResponse>>,
    },
    /// The request cannot be expressed on this provider's wire without changing its meaning.
    #[error("{provider}: unsupported: {feature}")]
    Unsupported {
        /// The provider.
        provider: ProviderKind,
        /// What cannot be sent, and why.
        feature: String,
    },
    /// Canonical input is invalid: a bad tool name, a schema with a cyclic `$ref`, a history that
    /// breaks a provider's turn rules.
    #[error("invalid input at {path}: {message}")]
    Input {
        /// Where: a JSON path or field name.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The agent loop reached its turn limit.
    #[error("agent stopped after {0} turns (max_turns)")]
    MaxTurns(usize),
    /// An MCP server could not be started or reached, broke the protocol, went away or did not
    /// answer in time (a failing tool is not this: it is an error result).
    #[error("MCP server {server}: {message}")]
    Mcp {
        /// The server: its command line or URL.
        server: String,
        /// What went wrong.
        message: String,
    },
}

impl Error {
    pub(crate) fn input(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Input {
            path: path.into(),
            message: message.into(),
        }
    }

    pub(crate) fn decode(
        provider: ProviderKind,
        what: impl Into<String>,
        message: impl fmt::Display,
    ) -> Self {
        Self::Decode {
            provider,
            what: what.into(),
            message: message.to_string(),
            partial: None,
        }
    }

    /// A stream none of whose `payloads` had the shape of `provider`'s chunks (`shape` names
    /// the fields that make one): most likely another API's stream, decoded with the wrong
    /// provider. Never an empty success, so nothing in it is silently lost.
    pub(crate) fn foreign_stream(provider: ProviderKind, payloads: usize, shape: &str) -> Self {
        Self::decode(
            provider,
            "stream",
            format!(
                "no payload had the shape of {provider}'s stream chunks ({shape}; {payloads} \
                 received): is this another provider's stream (wrong provider)?"
            ),
        )
    }

    /// A short name of the error's kind (`api`, `timeout`, ...): the `kind` of a golden error
    /// and the `error.type` field of tracing spans; never any text a server sent.
    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            Self::Api(_) => "api",
            Self::Stream { .. } => "stream",
            Self::Decode { .. } => "decode",
            Self::Unsupported { .. } => "unsupported",
            Self::Input { .. } => "input",
            Self::Transport { .. } => "transport",
            Self::Timeout { .. } => "timeout",
            Self::Mcp { .. } => "mcp",
            _ => "other",
        }
    }

    pub(crate) fn unsupported(provider: ProviderKind, feature: impl Into<String>) -> Self {
        Self::Unsupported {
            provider,
            feature: feature.into(),
        }
    }

    /// Whether sending the same request again may succeed: connect failures, timeouts before
    /// any output, and API errors with HTTP status 408, 409, 429 or 5xx. An error event inside
    /// a 200 stream has no status and is not retryable by this rule: part of the turn may
    /// already have been delivered.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Transport { connect, .. } => *connect,
            Self::Timeout { phase, .. } => {
                matches!(phase, TimeoutPhase::Connect | TimeoutPhase::FirstByte)
            }
            Self::Api(api) => api.is_retryable(),
            _ => false,
        }
    }

    /// The HTTP status of an API error.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Api(api) => api.status,
            _ => None,
        }
    }

    /// The provider involved, if any.
    pub fn provider(&self) -> Option<ProviderKind> {
        match self {
            Self::Transport { provider, .. }
            | Self::Timeout { provider, .. }
            | Self::Decode { provider, .. }
            | Self::Stream { provider, .. }
            | Self::Unsupported { provider, .. } => Some(*provider),
            Self::Api(api) => Some(api.provider),
            Self::Input { .. } | Self::MaxTurns(_) | Self::Mcp { .. } => None,
        }
    }

    /// The API error, when the provider said no.
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            Self::Api(api) => Some(api),
            _ => None,
        }
    }

    /// What had arrived before the failure, when a stream broke, stalled or errored mid-way.
    pub fn partial(&self) -> Option<&ChatResponse> {
        match self {
            Self::Stream { partial, .. }
            | Self::Timeout { partial, .. }
            | Self::Decode { partial, .. } => partial.as_deref(),
            Self::Api(api) => api.partial.as_deref(),
            _ => None,
        }
    }
}

impl Error {
    /// A decode error located at a line of the body (`… at line N`); other errors as they are.
    pub(crate) fn at_line(self, line: usize) -> Self {
        match self {
            Self::Decode {
                provider,
                what,
                message,
                partial,
            } => Self::Decode {
                provider,
                what: format!("{what} at line {line}"),
                message,
                partial,
            },
            other => other,
        }
    }

    /// The partial response slot of the variants that carry one.
    pub(crate) fn partial_mut(&mut self) -> Option<&mut Option<Box<ChatResponse>>> {
        match self {
            Self::Stream { partial, .. }
            | Self::Timeout { partial, .. }
            | Self::Decode { partial, .. } => Some(partial),
            Self::Api(api) => Some(&mut api.partial),
            _ => None,
        }
    }

    /// Attaches what a stream had delivered, unless the error already carries it.
    pub(crate) fn with_partial(mut self, partial: Option<Box<ChatResponse>>) -> Self {
        if let Some(slot) = self.partial_mut()
            && slot.is_none()
        {
            *slot = partial;
        }
        self
    }
}

impl From<ApiError> for Error {
    fn from(e: ApiError) -> Self {
        Self::Api(Box::new(e))
    }
}

/// Which time limit ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeoutPhase {
    /// Establishing the connection.
    Connect,
    /// Waiting for the response head and first body byte.
    FirstByte,
    /// The gap between two chunks of a stream.
    Idle,
    /// The whole request.
    Total,
}

impl fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Connect => "connect",
            Self::FirstByte => "first-byte",
            Self::Idle => "idle",
            Self::Total => "total",
        })
    }
}

/// An error answer from a provider, its own code and message kept verbatim.
///
/// Non-exhaustive: build it (for the mock provider, a custom provider's `decode_error`) with
/// [`ApiError::new`] and the `with_*` setters.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ApiError {
    /// Who answered.
    pub provider: ProviderKind,
    /// The HTTP status; `None` for an error event inside a 200 stream.
    pub status: Option<u16>,
    /// The provider's error code (`"rate_limit_exceeded"`, `"1113"`, `"RESOURCE_EXHAUSTED"`), verbatim.
    pub code: Option<String>,
    /// The provider's message, verbatim.
    pub message: String,
    /// How long the provider asked us to wait (`Retry-After`, Gemini `retryDelay`).
    pub retry_after: Option<Duration>,
    /// The raw error body (for logs; never holds the API key, which is only ever in headers).
    pub body: String,
    /// What the stream had delivered before the error event, if it came mid-stream.
    pub partial: Option<Box<ChatResponse>>,
}

impl ApiError {
    /// An error with just a message.
    pub fn new(provider: ProviderKind, status: Option<u16>, message: impl Into<String>) -> Self {
        Self {
            provider,
            status,
            code: None,
            message: message.into(),
            retry_after: None,
            body: String::new(),
            partial: None,
        }
    }

    /// Sets the provider's error code.
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    /// Sets how long the provider asked to wait.
    pub fn with_retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    /// Sets the raw error body.
    pub fn with_body(mut self, body: impl Into<String>) -> Self {
        self.body = body.into();
        self
    }

    /// Sets what the stream delivered before the error.
    pub fn with_partial(mut self, partial: ChatResponse) -> Self {
        self.partial = Some(Box::new(partial));
        self
    }

    /// Whether the same request may succeed later.
    pub fn is_retryable(&self) -> bool {
        match self.status {
            Some(s) => matches!(s, 408 | 409 | 429) || (500..600).contains(&s),
            None => false,
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.provider)?;
        if let Some(status) = self.status {
            write!(f, " HTTP {status}")?;
        }
        if let Some(code) = &self.code {
            write!(f, " [{code}]")?;
        }
        write!(f, ": {}", self.message)
    }
}
