//! The realtime canonical model: which dialect ([`RealtimeKind`]), what a session is
//! configured with ([`SessionConfig`]) and what comes out of it ([`RealtimeEvent`],
//! [`SessionStats`]). Every realtime file reads these; this file reads none of them, so the
//! realtime modules form no cycle.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ApiError, Error, Result};
use crate::types::{
    ChatRequest, ChatResponse, Effort, ProviderKind, Reasoning, StreamEvent, ToolCall, ToolChoice,
    ToolDefinition,
};

/// The realtime dialects. One spelling everywhere: module, `fixtures/`, CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub enum RealtimeKind {
    /// OpenAI Realtime (`wss://api.openai.com/v1/realtime`); xAI's realtime API speaks it too,
    /// given its URL.
    #[serde(rename = "openai-realtime")]
    OpenAiRealtime,
    /// Zhipu GLM-Realtime.
    #[serde(rename = "glm-realtime")]
    GlmRealtime,
    /// Qwen-Omni-Realtime on DashScope.
    #[serde(rename = "qwen-realtime")]
    QwenRealtime,
    /// StepFun realtime.
    #[serde(rename = "stepfun-realtime")]
    StepFunRealtime,
    /// Gemini Live (`BidiGenerateContent`).
    #[serde(rename = "gemini-live")]
    GeminiLive,
}

impl RealtimeKind {
    /// Every dialect, in display order.
    pub const ALL: [RealtimeKind; 5] = [
        Self::OpenAiRealtime,
        Self::GlmRealtime,
        Self::QwenRealtime,
        Self::StepFunRealtime,
        Self::GeminiLive,
    ];

    /// The dialect's one spelling.
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenAiRealtime => "openai-realtime",
            Self::GlmRealtime => "glm-realtime",
            Self::QwenRealtime => "qwen-realtime",
            Self::StepFunRealtime => "stepfun-realtime",
            Self::GeminiLive => "gemini-live",
        }
    }

    /// The HTTP provider of the same vendor: errors name it, and its key variables apply.
    pub fn provider(self) -> ProviderKind {
        match self {
            Self::OpenAiRealtime => ProviderKind::OpenAi,
            Self::GlmRealtime => ProviderKind::Glm,
            Self::QwenRealtime => ProviderKind::Qwen,
            Self::StepFunRealtime => ProviderKind::StepFun,
            Self::GeminiLive => ProviderKind::Gemini,
        }
    }
}

impl fmt::Display for RealtimeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for RealtimeKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|k| k.name()).collect();
                Error::input(
                    "provider",
                    format!(
                        "unknown realtime provider {s:?}; expected one of {}",
                        names.join(", ")
                    ),
                )
            })
    }
}

/// What a session is configured with, in canonical form; each dialect writes it its own way
/// (`session.update`, Gemini's `setup`).
///
/// Non-exhaustive: build it with [`SessionConfig::new`] and the `with_*` setters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SessionConfig {
    /// The model, as the provider spells it (in the URL, the session or the setup, by dialect).
    pub model: String,
    /// System instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    /// Which tools the model may or must call; `None` leaves the provider's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Output modalities (`["text"]`, `["text", "audio"]`); `None` leaves the provider's
    /// default (GLM gets `["text", "audio"]` when tools are set: it honours tools only then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modalities: Option<Vec<String>>,
    /// The dialect's `turn_detection` object, verbatim (GLM defaults to server VAD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_detection: Option<Value>,
    /// The output token limit of each response, where the dialect has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// The sampling temperature, where the dialect has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Short form of `reasoning`: on at the model's default, or off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<bool>,
    /// Reasoning effort, budget and summary, in the form the model takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// Nucleus sampling's `top_p`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// `top_k`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// The sampling seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// The presence penalty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// The frequency penalty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    /// Leave out (and list, [`RealtimeCodec::dropped`](super::RealtimeCodec::dropped)) the
    /// settings the dialect cannot carry instead of failing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drop_unsupported: bool,
    /// Fields merged into the session object (or Gemini's `setup`) last, for settings toolwire
    /// has no name for: voice, audio formats, transcription.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

impl SessionConfig {
    /// A configuration for `model` with these tools.
    pub fn new(model: impl Into<String>, tools: Vec<ToolDefinition>) -> Self {
        Self {
            model: model.into(),
            tools,
            ..Self::default()
        }
    }

    /// Sets the instructions.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Sets the tool choice.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Sets the output modalities (`["text"]`, `["text", "audio"]`).
    pub fn with_modalities<S: Into<String>>(
        mut self,
        modalities: impl IntoIterator<Item = S>,
    ) -> Self {
        self.modalities = Some(modalities.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the dialect's `turn_detection` object, verbatim.
    pub fn with_turn_detection(mut self, turn_detection: Value) -> Self {
        self.turn_detection = Some(turn_detection);
        self
    }

    /// Adds one field merged into the session object last.
    pub fn with_extra(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extra.insert(key.into(), value);
        self
    }

    /// Sets the output token limit of each response.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets the sampling temperature.
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets the reasoning settings.
    pub fn with_reasoning(mut self, reasoning: Reasoning) -> Self {
        self.reasoning = Some(reasoning);
        self
    }

    /// Sets the reasoning effort (keeping any budget or summary already set).
    pub fn with_effort(mut self, effort: Effort) -> Self {
        self.reasoning = Some(self.reasoning.unwrap_or_default().with_effort(effort));
        self
    }

    /// Leaves out (and lists) settings the dialect cannot carry instead of failing.
    pub fn with_drop_unsupported(mut self, drop: bool) -> Self {
        self.drop_unsupported = drop;
        self
    }

    /// Takes every sampling and reasoning setting of `req` (`max_tokens`, `temperature`,
    /// `thinking`, `reasoning`, `top_p`, `top_k`, `stop`, `seed`, the penalties,
    /// `drop_unsupported`), replacing those set here: a session configured like an HTTP request.
    pub fn with_settings_of(mut self, req: &ChatRequest) -> Self {
        self.max_tokens = req.max_tokens;
        self.temperature = req.temperature;
        self.thinking = req.thinking;
        self.reasoning = req.reasoning;
        self.top_p = req.top_p;
        self.top_k = req.top_k;
        self.stop = req.stop.clone();
        self.seed = req.seed;
        self.presence_penalty = req.presence_penalty;
        self.frequency_penalty = req.frequency_penalty;
        self.drop_unsupported = req.drop_unsupported;
        self
    }

    /// The settings as a request for the drop policy: the model and the settings, no messages.
    pub(crate) fn settings_request(&self) -> ChatRequest {
        let mut req = ChatRequest::new(self.model.clone(), Vec::new());
        req.max_tokens = self.max_tokens;
        req.temperature = self.temperature;
        req.thinking = self.thinking;
        req.reasoning = self.reasoning;
        req.top_p = self.top_p;
        req.top_k = self.top_k;
        req.stop = self.stop.clone();
        req.seed = self.seed;
        req.presence_penalty = self.presence_penalty;
        req.frequency_penalty = self.frequency_penalty;
        req.drop_unsupported = self.drop_unsupported;
        req
    }
}

/// What a realtime session delivers, in order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RealtimeEvent {
    /// A model response began: the `response`-th of the session (from 0), with the provider's
    /// id when it sent one.
    ResponseStarted {
        /// Position of the response in the session.
        response: usize,
        /// The provider's response id.
        id: Option<String>,
    },
    /// A model event of response `response`: text, a call starting, an argument fragment, a
    /// call final, usage, the finish.
    Model {
        /// Position of the response in the session.
        response: usize,
        /// The event.
        event: StreamEvent,
    },
    /// A call is complete (its end event arrived) and waits for its result: run it now.
    CallReady {
        /// Position of the response in the session.
        response: usize,
        /// The call (a call with malformed arguments or no name too: answer it with an error
        /// result).
        call: ToolCall,
    },
    /// A response ended; its canonical form (a cut one has finish reason `error` and its open
    /// calls `truncated`).
    ResponseDone {
        /// Position of the response in the session.
        response: usize,
        /// What the model answered.
        result: ChatResponse,
    },
    /// The server cancelled calls (Gemini Live `toolCallCancellation`): stop running them; no
    /// result is sent for them.
    CallsCancelled {
        /// The cancelled call ids.
        ids: Vec<String>,
    },
    /// An error event (or an error close) from the server, its code and message verbatim.
    Error(ApiError),
    /// A server event toolwire does not interpret (audio, session acknowledgements, the user's
    /// transcript), exactly as received.
    Passthrough(Value),
    /// A frame that is not a JSON object, as received.
    Bytes(Vec<u8>),
    /// An event of a type the dialect does not know: kept and counted.
    Unknown(Value),
    /// An event of a cancelled or superseded response: kept and counted; it never completes a
    /// call.
    Stale(Value),
    /// The socket closed.
    Closed {
        /// The close code, when the server sent one.
        code: Option<u16>,
        /// The close reason.
        reason: String,
    },
}

/// Counts of what a session saw: what was kept but not interpreted is visible here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionStats {
    /// Server events (JSON objects) received.
    pub server_events: usize,
    /// Client events sent (or, in a replay, recorded).
    pub client_events: usize,
    /// Model responses begun.
    pub responses: usize,
    /// Calls handed out to run.
    pub calls_ready: usize,
    /// Events of unknown type.
    pub unknown_events: usize,
    /// Events of cancelled or superseded responses.
    pub stale_events: usize,
    /// Error events (and error closes).
    pub error_events: usize,
    /// Calls the server cancelled.
    pub cancelled_calls: usize,
    /// Results dropped because their call had been cancelled.
    pub dropped_results: usize,
    /// Frames that were not JSON objects.
    pub raw_frames: usize,
}
