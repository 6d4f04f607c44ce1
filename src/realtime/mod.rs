//! Realtime sessions: tool calling over the WebSocket voice APIs — OpenAI Realtime (and xAI's,
//! which speaks it at another URL), GLM-Realtime, Qwen-Omni-Realtime, StepFun realtime and
//! Gemini Live.
//!
//! The layers are the crate's own: a sans-IO [`RealtimeCodec`] per dialect (pure translation:
//! session configuration in, client events out; server events in, canonical [`RealtimeEvent`]s
//! out), a [`session`] that does the WebSocket IO (feature `realtime`), an [`agent`] that runs
//! each call as soon as it is complete (feature `realtime`), a loopback [`mock`] server speaking
//! every dialect (features `realtime` and `mock`), and [`replay`] for recorded sessions (JSON
//! lines `{"dir": "server" | "client", "event": {...}}`).
//!
//! What the dialects differ in is data ([`RealtimeDialect`] for the four OpenAI-like ones;
//! Gemini Live has its own module):
//!
//! - tools in `session.update`: flat (`{"type":"function","name",...}`: OpenAI, GLM) or nested
//!   under `function` (Qwen, StepFun); GLM re-sends `turn_detection` with tools and honours them
//!   only with audio output; Qwen sends `enable_search: false` beside tools; StepFun always sends
//!   `tools` (`[]` when empty); Gemini Live declares them once in `setup`;
//! - calls: argument deltas keyed by `call_id`, completed by
//!   `response.function_call_arguments.done` (OpenAI, Qwen, StepFun); GLM sends only the
//!   `.done`, without a `call_id` (toolwire synthesizes `glm_<response id>_<output index>`,
//!   marked [`ToolCall::SYNTHETIC_ID`](crate::ToolCall::SYNTHETIC_ID)); Gemini Live sends whole
//!   calls in `toolCall` and may cancel them with `toolCallCancellation`;
//! - settings: each dialect's session takes the sampling and reasoning settings it documents
//!   ([`RealtimeSettings`]), the rest follow the drop policy of the HTTP wires;
//! - results: `conversation.item.create` with a `function_call_output` (with `call_id`, or
//!   without it on GLM, where results bind by position), then one `response.create`; Gemini Live
//!   answers each `toolCall` with one batched `toolResponse` carrying the ids.
//!
//! The rules every dialect shares:
//!
//! - a call completes at its own end event (`.done`, a whole Gemini call) and is handed out at
//!   once as [`RealtimeEvent::CallReady`]; a call still open when its response ends (cancelled,
//!   superseded, the socket closed) is `truncated` and never run;
//! - a `.done` without a name takes the name its deltas carried; a call that still has none is
//!   handed out anyway, so the agent answers it with an error result (never a silent skip);
//! - a `.done` whose arguments disagree with its deltas: **the deltas win** (as N.E.K.O does);
//!   the `.done` text is kept on the call as the extra field `done_arguments`;
//! - events of a cancelled response (the client sent `response.cancel`, the user started
//!   speaking over it, Gemini's `interrupted`) or of a superseded one (another response began)
//!   never complete a call: they come out as [`RealtimeEvent::Stale`];
//! - only one response is active at a time: results are held until the response that made
//!   their calls is done and every one of its calls is answered, then sent together, followed
//!   by one `response.create` once no response is active;
//! - nothing is lost: audio and every event toolwire does not interpret pass through unchanged
//!   ([`RealtimeEvent::Passthrough`]), unknown event types are kept and counted
//!   ([`RealtimeEvent::Unknown`], [`SessionStats`]), error events become
//!   [`RealtimeEvent::Error`] and the session goes on.
//!
#![doc = include_str!("../../providers/realtime.md")]

mod codec;
mod dialect;
mod gemini_live;
mod model;
pub mod replay;
mod settings;
mod state;

#[cfg(feature = "realtime")]
pub mod agent;
#[cfg(all(feature = "realtime", feature = "mock"))]
pub mod mock;
#[cfg(feature = "realtime")]
pub mod session;

pub use codec::RealtimeCodec;
pub use dialect::{
    DONE_ARGUMENTS, GLM_REALTIME, OPENAI_REALTIME, QWEN_REALTIME, RealtimeDialect,
    RealtimeToolChoice, STEPFUN_REALTIME, TextInput,
};
pub use gemini_live::GEMINI_LIVE_URL;
pub use model::{RealtimeEvent, RealtimeKind, SessionConfig, SessionStats};
#[cfg(feature = "realtime")]
pub use session::{RealtimeSession, SessionBuilder, SessionHandle};
pub use settings::{
    GEMINI_LIVE_SETTINGS, GLM_REALTIME_SETTINGS, OPENAI_REALTIME_REASONING,
    OPENAI_REALTIME_SETTINGS, QWEN_REALTIME_SETTINGS, RealtimeReasoning, RealtimeSettings,
    STEPFUN_REALTIME_SETTINGS,
};

/// What each dialect is served with: read from the dialects' own data, here above them, so
/// the model ([`RealtimeKind`]) stays below every dialect.
impl RealtimeKind {
    /// The OpenAI-like dialect's data; `None` for Gemini Live.
    pub fn dialect(self) -> Option<&'static RealtimeDialect> {
        match self {
            Self::OpenAiRealtime => Some(&OPENAI_REALTIME),
            Self::GlmRealtime => Some(&GLM_REALTIME),
            Self::QwenRealtime => Some(&QWEN_REALTIME),
            Self::StepFunRealtime => Some(&STEPFUN_REALTIME),
            Self::GeminiLive => None,
        }
    }

    /// The default WebSocket endpoint.
    pub fn url(self) -> &'static str {
        self.dialect().map_or(GEMINI_LIVE_URL, |d| d.url)
    }

    /// The sampling and reasoning settings the dialect's session setup takes.
    pub fn settings(self) -> &'static RealtimeSettings {
        self.dialect()
            .map_or(&GEMINI_LIVE_SETTINGS, |d| &d.settings)
    }

    /// Environment variables holding the API key, in order of preference.
    pub fn key_vars(self) -> &'static [&'static str] {
        self.dialect().map_or(gemini_live::KEY_VARS, |d| d.key_vars)
    }
}
