//! The canonical response → the bytes a Chat Completions server sends, for the mock provider.
//!
//! What is written follows the dialect's [`ResponseShape`]: for OpenAI (as recorded in
//! openai-python's streaming snapshots) a role-only first chunk, content fragments, each tool
//! call opened by a fragment carrying `index`, `id`, `type` and `name` with empty `arguments`,
//! then argument fragments keyed by `index` only, a chunk with an empty delta and the
//! `finish_reason`, a usage-only chunk with empty `choices`, and `data: [DONE]`; GLM, Qwen and
//! StepFun differ where their shapes say.
//! The stream is the scripted answer's events (`split::cut`) written by the gateway's
//! [`ChunkWriter`] speaking as the dialect's server ([`ChunkWriter::native`]): one stream
//! writer for the mock and the gateway. Decoding what this writes gives back the response it
//! was given.

use serde_json::{Map, Value, json};

use super::{Dialect, OPENAI, OpenAi};
use crate::error::{ApiError, Result};
use crate::provider::StreamWriter;
use crate::provider::{Framing, HttpRequest, Provider, ProviderInfo, Respond, StreamDecoder};
use crate::providers::shared::{carry_id, fold_turn};
use crate::providers::split::{FINE, cut, plain};

use super::gateway::ChunkWriter;
use crate::types::{
    ChatRequest, ChatResponse, FinishReason, SchemaMode, ToolCall, ToolDefinition, Usage,
};

/// The Chat Completions writer: a [`Dialect`] and the [`ResponseShape`] its server writes in.
/// What the mock provider serves for every OpenAI-compatible wire (`glm::responder()`, ...);
/// decoding is the dialect's own, so what it writes reads back through it.
#[derive(Debug, Clone, Copy)]
pub struct OpenAiResponder {
    provider: OpenAi,
    shape: &'static ResponseShape,
}

impl OpenAiResponder {
    /// The writer for `dialect`, answering in `shape`.
    pub fn new(dialect: &'static Dialect, shape: &'static ResponseShape) -> Self {
        Self {
            provider: OpenAi::with_dialect(dialect),
            shape,
        }
    }

    /// The dialect it decodes and encodes requests with.
    pub fn dialect(&self) -> &'static Dialect {
        self.provider.dialect()
    }

    /// How it writes its answers.
    pub fn shape(&self) -> &'static ResponseShape {
        self.shape
    }

    fn wire(&self) -> Wire<'static> {
        Wire {
            dialect: self.provider.dialect(),
            shape: self.shape,
        }
    }
}

impl Default for OpenAiResponder {
    /// OpenAI itself.
    fn default() -> Self {
        Self::new(&OPENAI, &OPENAI_RESPONSE)
    }
}

impl Provider for OpenAiResponder {
    fn info(&self) -> &ProviderInfo {
        self.provider.info()
    }

    fn encode(&self, req: &ChatRequest, stream: bool) -> Result<HttpRequest> {
        self.provider.encode(req, stream)
    }

    fn decode(&self, body: &[u8]) -> Result<ChatResponse> {
        self.provider.decode(body)
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        self.provider.decoder()
    }

    fn decoder_for(&self, request: &HttpRequest) -> Box<dyn StreamDecoder> {
        self.provider.decoder_for(request)
    }

    fn decode_for(&self, request: &HttpRequest, body: &[u8]) -> Result<ChatResponse> {
        self.provider.decode_for(request, body)
    }

    fn framing(&self) -> Framing {
        self.provider.framing()
    }

    fn decode_error(&self, status: Option<u16>, body: &[u8]) -> ApiError {
        self.provider.decode_error(status, body)
    }

    fn encode_parameters(&self, tool: &ToolDefinition, mode: Option<SchemaMode>) -> Result<Value> {
        self.provider.encode_parameters(tool, mode)
    }
}

impl Respond for OpenAiResponder {
    fn encode_response(&self, response: &ChatResponse, stream: bool) -> Result<Vec<u8>> {
        Ok(if stream {
            let events = cut(&plain(response), response.usage, FINE);
            let mut out = Vec::new();
            let mut w = ChunkWriter::native(self.wire(), response, MOCK.id);
            w.start(&mut out);
            w.events(&events, &mut out);
            w.finish(response, &mut out);
            out
        } else {
            body(self.wire(), &MOCK, response)
        })
    }

    fn encode_error(&self, error: &ApiError, stream: bool) -> (u16, Vec<u8>) {
        self::error(self.wire(), error, stream)
    }
}

/// A dialect and its response shape: what every writer function below reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wire<'a> {
    pub(super) dialect: &'a Dialect,
    pub(super) shape: &'a ResponseShape,
}

/// OpenAI's own Chat Completions: what the gateway writes for its clients.
pub(crate) const OPENAI_WIRE: Wire<'static> = Wire {
    dialect: &OPENAI,
    shape: &OPENAI_RESPONSE,
};

/// How a server of this wire writes its bodies, streams and errors: what
/// [`crate::provider::Respond::encode_response`] and [`crate::provider::Respond::encode_error`] produce for the
/// mock provider. Decoding accepts far more than this; these fields only make the mock speak
/// the provider's documented shape, so a client tested against it meets the real quirks.
///
/// Non-exhaustive: derive one from a built-in shape with the `const` `with_*` setters.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ResponseShape {
    /// Where `role` goes in stream deltas.
    pub role: DeltaRole,
    /// `content` in stream deltas that carry no text.
    pub idle_content: IdleContent,
    /// `finish_reason` on the chunks of a turn still running.
    pub running_finish: RunningFinish,
    /// How tool calls travel in a stream.
    pub calls: StreamedCalls,
    /// Where usage goes in a stream.
    pub usage: StreamUsage,
    /// Top-level fields every chunk and body carries as `null` (Qwen `usage` until the usage
    /// chunk, `system_fingerprint`).
    pub null_fields: &'static [&'static str],
    /// Fields every choice carries as `null` (Qwen `logprobs`).
    pub null_choice_fields: &'static [&'static str],
    /// Calls in a whole body carry their `index` (GLM and Qwen, fixtures `glm/single_call`,
    /// `qwen/single_call`).
    pub body_call_index: bool,
    /// Canonical finish reasons this wire spells its own way, and that spelling (GLM
    /// `sensitive`, `network_error`). Each is also in [`Dialect::finish_reasons`], so
    /// decoding maps it back; every other reason goes out under its canonical name.
    pub finish_reasons: &'static [(FinishReason, &'static str)],
    /// The fields of an error body.
    pub error_fields: ErrorFields,
    /// A 4xx error answering a stream request comes SSE-framed (`data: {"error": …}`), as on
    /// Qwen (fixture `qwen/quirk_sse_error_body`); otherwise it is a plain JSON
    /// body.
    pub sse_errors: bool,
}

impl ResponseShape {
    /// Sets [`ResponseShape::role`].
    pub const fn with_role(mut self, role: DeltaRole) -> Self {
        self.role = role;
        self
    }

    /// Sets [`ResponseShape::idle_content`].
    pub const fn with_idle_content(mut self, idle_content: IdleContent) -> Self {
        self.idle_content = idle_content;
        self
    }

    /// Sets [`ResponseShape::running_finish`].
    pub const fn with_running_finish(mut self, running_finish: RunningFinish) -> Self {
        self.running_finish = running_finish;
        self
    }

    /// Sets [`ResponseShape::calls`].
    pub const fn with_calls(mut self, calls: StreamedCalls) -> Self {
        self.calls = calls;
        self
    }

    /// Sets [`ResponseShape::usage`].
    pub const fn with_usage(mut self, usage: StreamUsage) -> Self {
        self.usage = usage;
        self
    }

    /// Sets [`ResponseShape::null_fields`].
    pub const fn with_null_fields(mut self, null_fields: &'static [&'static str]) -> Self {
        self.null_fields = null_fields;
        self
    }

    /// Sets [`ResponseShape::null_choice_fields`].
    pub const fn with_null_choice_fields(
        mut self,
        null_choice_fields: &'static [&'static str],
    ) -> Self {
        self.null_choice_fields = null_choice_fields;
        self
    }

    /// Sets [`ResponseShape::body_call_index`].
    pub const fn with_body_call_index(mut self, body_call_index: bool) -> Self {
        self.body_call_index = body_call_index;
        self
    }

    /// Sets [`ResponseShape::finish_reasons`].
    pub const fn with_finish_reasons(
        mut self,
        finish_reasons: &'static [(FinishReason, &'static str)],
    ) -> Self {
        self.finish_reasons = finish_reasons;
        self
    }

    /// Sets [`ResponseShape::error_fields`].
    pub const fn with_error_fields(mut self, error_fields: ErrorFields) -> Self {
        self.error_fields = error_fields;
        self
    }

    /// Sets [`ResponseShape::sse_errors`].
    pub const fn with_sse_errors(mut self, sse_errors: bool) -> Self {
        self.sse_errors = sse_errors;
        self
    }
}

/// Where `role` goes in stream deltas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeltaRole {
    /// A chunk of its own opens the stream: `{"role": "assistant", "content": ""}` (OpenAI,
    /// OpenAI's recorded streams).
    OpeningChunk,
    /// As [`DeltaRole::OpeningChunk`], and the finish chunk's delta is `{"content": ""}`
    /// (Mistral, the streams quoted in vercel/ai's Mistral provider tests and
    /// spring-projects/spring-ai#5019).
    OpeningChunkEmptyFinish,
    /// `"role": "assistant"` on the stream's first delta only (Qwen, Qwen's recorded streams).
    FirstDelta,
    /// This `role` on every delta, the finish chunk's too, whose delta is then
    /// `{"role": …, "content": ""}` (GLM `"assistant"`, GLM's recorded streams; StepFun `""`, StepFun's chat/streaming doc example).
    EveryDelta(&'static str),
}

/// `content` in a stream delta that carries no text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdleContent {
    /// Left out (OpenAI, GLM).
    Absent,
    /// `null` (Qwen's reasoning and tool-call deltas, Qwen's recorded streams).
    Null,
    /// `""` (StepFun, StepFun's chat/streaming doc example).
    Empty,
}

/// `finish_reason` on the chunks of a turn still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunningFinish {
    /// `null` (OpenAI, Qwen).
    Null,
    /// Left out (GLM, GLM's recorded streams).
    Absent,
    /// `""` (StepFun, StepFun's chat/streaming doc example).
    Empty,
}

/// How tool calls travel in a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamedCalls {
    /// Each call opened by a fragment with `index`, `id`, `type` and `name`, its arguments
    /// following in fragments keyed by `index`; the finish comes on a chunk of its own (OpenAI,
    /// Qwen, StepFun, GLM with `tool_stream`).
    Fragments {
        /// The opener already holds the first piece of the arguments instead of `""` (Qwen's
        /// documented stream, the stream in the Model Studio function-calling guide).
        first_piece_in_opener: bool,
        /// Argument fragments repeat `"id": ""` and `"type": "function"` (Qwen's recorded streams,
        /// patterns A and B).
        empty_id_continuations: bool,
    },
    /// Every call whole in one chunk that already carries the `finish_reason`, which a last
    /// chunk repeats (GLM without `tool_stream`, GLM's recorded streams). Each call's `index` is this
    /// value (`-1` on the GLM-4.5 family), or its position when `None`.
    Whole {
        /// The `index` every call carries, or `None` for its position.
        index: Option<i64>,
    },
    /// Every call whole in one chunk that carries the `finish_reason` and ends the stream: no
    /// finish chunk follows (Mistral, fixture `mistral/stream_single_call`). Each call's
    /// `index` is its position.
    WholeWithFinish,
}

/// Where usage goes in a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamUsage {
    /// A last chunk with empty `choices` (OpenAI and Qwen with `include_usage`).
    LastChunk,
    /// On the chunk that carries the (last) `finish_reason` (GLM, GLM's recorded streams).
    FinishChunk,
    /// On every chunk, as running totals that end at the turn's usage (StepFun, StepFun's chat/streaming doc example).
    EveryChunk,
}

/// The fields of an error body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorFields {
    /// `{"error": {"message", "type", "param", "code"}}` (OpenAI, OpenAI; Qwen).
    OpenAi,
    /// `{"error": {"code", "message"}}` (GLM's error-code docs).
    CodeMessage,
    /// `{"object": "error", "message", "type", "param", "code"}` at the top level (Mistral,
    /// the bodies quoted in karthink/gptel#1203 and nearai/ironclaw#1241).
    TopLevel,
}

/// How OpenAI's server writes (OpenAI's recorded streams): a role-only opening chunk, calls opened then
/// streamed in fragments, `finish_reason: null` and `logprobs: null` while running, usage in a
/// last chunk.
pub const OPENAI_RESPONSE: ResponseShape = ResponseShape {
    role: DeltaRole::OpeningChunk,
    idle_content: IdleContent::Absent,
    running_finish: RunningFinish::Null,
    calls: StreamedCalls::Fragments {
        first_piece_in_opener: false,
        empty_id_continuations: false,
    },
    usage: StreamUsage::LastChunk,
    null_fields: &[],
    // Every choice, of a body and of a chunk, carries `"logprobs": null` when none were asked
    // for: the chat completion object and chunk object in OpenAI's API reference
    // (<https://platform.openai.com/docs/api-reference/chat/object>,
    // <https://platform.openai.com/docs/api-reference/chat-streaming/streaming>) and
    // openai-python's recorded streams show it; the gateway wrote it, the mock did not.
    null_choice_fields: &["logprobs"],
    body_call_index: false,
    finish_reasons: &[],
    error_fields: ErrorFields::OpenAi,
    sse_errors: false,
};

/// Who an answer is written for: its `id`, `model` and `created`, and whether it was
/// translated from another wire (the gateway's answers) rather than scripted for this one (the
/// mock's).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stamp<'a> {
    /// The answer's id.
    pub(crate) id: &'a str,
    /// The model name the client sees.
    pub(crate) model: &'a str,
    /// Seconds since the epoch (the caller's clock: providers read none).
    pub(crate) created: u64,
    /// Translated from another wire: every call id is written, carrying the call's provider
    /// state ([`carry_id`]), and a raw finish reason (the upstream wire's spelling) is not
    /// this wire's, so the canonical reason goes out.
    pub(crate) translated: bool,
    /// The key sealing the state call ids carry (translated answers).
    pub(crate) seal: Option<&'a crate::seal::Seal>,
}

/// The mock's own values.
pub(crate) const MOCK: Stamp<'static> = Stamp {
    id: "chatcmpl-toolwire-mock",
    model: "toolwire-mock",
    created: 0,
    translated: false,
    seal: None,
};

/// Fields every chunk and body carries.
pub(super) fn envelope(
    shape: &ResponseShape,
    stamp: &Stamp<'_>,
    object: &str,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("id".into(), json!(stamp.id));
    m.insert("object".into(), json!(object));
    m.insert("created".into(), json!(stamp.created));
    m.insert("model".into(), json!(stamp.model));
    for field in shape.null_fields {
        m.insert((*field).into(), Value::Null);
    }
    m
}

/// The wire `finish_reason` of a response: its `raw_finish_reason` verbatim when set on a
/// scripted answer (a GLM `sensitive`), else the wire's own spelling of the canonical reason
/// where it has one, else the canonical name (`stop` for a translated turn that ended in error:
/// the error itself goes out as the wire's error).
pub(crate) fn finish_wire<'a>(
    w: Wire<'a>,
    stamp: &Stamp<'_>,
    response: &'a ChatResponse,
) -> &'a str {
    if let (Some(raw), false) = (&response.raw_finish_reason, stamp.translated) {
        // Verbatim unless this wire reads it as another reason (a recorded `tool_calls` on
        // calls the turn cut short, which the answer says ended in `length`); a value the wire
        // has no reading for (a scripted one) goes out as it is.
        let same = match super::decode::finish_reason(w.dialect, Some(raw)) {
            Some(FinishReason::Stop | FinishReason::ToolCalls) => {
                response.finish_reason.is_normal_end()
            }
            Some(FinishReason::Other(_)) | None => true,
            Some(decoded) => decoded == response.finish_reason,
        };
        if same {
            return raw;
        }
    }
    let reason = &response.finish_reason;
    if stamp.translated && *reason == FinishReason::Error {
        return "stop";
    }
    let found = w
        .shape
        .finish_reasons
        .iter()
        .find(|(canonical, _)| canonical == reason)
        .map(|(_, wire)| *wire);
    match (found, reason) {
        (Some(wire), _) => wire,
        // Another wire's value (Gemini's `MALFORMED_FUNCTION_CALL`, Anthropic's `pause_turn`)
        // is not one this wire documents: a translated turn ends `tool_calls` with calls,
        // `stop` without.
        (None, FinishReason::Other(_)) if stamp.translated => {
            if response.tool_calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            }
        }
        (None, _) => reason.as_str(),
    }
}

pub(super) fn usage_json(u: &Usage) -> Value {
    let mut m = Map::new();
    m.insert("prompt_tokens".into(), json!(u.input_tokens));
    m.insert("completion_tokens".into(), json!(u.output_tokens));
    m.insert(
        "total_tokens".into(),
        json!(u.input_tokens.saturating_add(u.output_tokens)),
    );
    if let Some(c) = u.cached_input_tokens {
        m.insert("prompt_tokens_details".into(), json!({"cached_tokens": c}));
    }
    if let Some(r) = u.reasoning_tokens {
        m.insert(
            "completion_tokens_details".into(),
            json!({"reasoning_tokens": r}),
        );
    }
    Value::Object(m)
}

/// `part / whole` of `value`, rounded down: the running total after `part` of `whole` chunks.
pub(super) fn share(value: u64, part: usize, whole: usize) -> u64 {
    let (part, whole) = (part as u128, whole.max(1) as u128);
    u64::try_from(u128::from(value) * part / whole).unwrap_or(value)
}

/// The call's wire object; a minted id is left out of a scripted answer, as the service that
/// sent none did.
pub(super) fn call_json(
    call: &ToolCall,
    stamp: &Stamp<'_>,
    index: Option<i64>,
    arguments: &str,
) -> Value {
    let id = if stamp.translated {
        Some(carry_id(call, stamp.seal))
    } else {
        (!call.has_synthetic_id()).then(|| call.id.clone())
    };
    call_fragment(index, id.as_deref(), &call.name, arguments)
}

/// A call's wire object from its parts: `index` (streams), `id` (when it has one), `type`,
/// `name` and `arguments`, in the order OpenAI sends them.
pub(super) fn call_fragment(
    index: Option<i64>,
    id: Option<&str>,
    name: &str,
    arguments: &str,
) -> Value {
    let mut m = Map::new();
    if let Some(index) = index {
        m.insert("index".into(), json!(index));
    }
    if let Some(id) = id {
        m.insert("id".into(), json!(id));
    }
    m.insert("type".into(), json!("function"));
    m.insert(
        "function".into(),
        json!({"name": name, "arguments": arguments}),
    );
    Value::Object(m)
}

/// The response's structured reasoning entries (OpenRouter and MiniMax `reasoning_details`,
/// kept verbatim by the decoder under the dialect's field name), with that field name.
pub(super) fn reasoning_details<'r>(
    dialect: &Dialect,
    response: &'r ChatResponse,
) -> Option<(&'static str, &'r Value)> {
    let field = dialect.reasoning_details?;
    response.extra.get(field).map(|details| (field, details))
}

/// A whole `chat.completion` body: the one body writer of this wire, the mock's and the
/// gateway's.
pub(crate) fn body(w: Wire<'_>, stamp: &Stamp<'_>, response: &ChatResponse) -> Vec<u8> {
    let shape = w.shape;
    let folded;
    let calls: &[ToolCall] = if stamp.translated {
        folded = fold_turn(response);
        &folded
    } else {
        &response.tool_calls
    };
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    let content = match (&response.text, &response.reasoning) {
        (text, Some(reasoning)) if w.dialect.thinking_chunks => {
            let mut chunks = vec![thinking_chunk(reasoning)];
            chunks.extend(text.iter().map(|t| json!({"type": "text", "text": t})));
            Value::Array(chunks)
        }
        (None, _) if w.dialect.empty_content_as_string => json!(""),
        (text, _) => json!(text),
    };
    message.insert("content".into(), content);
    if let (Some(reasoning), Some(field)) =
        (&response.reasoning, w.dialect.reasoning_fields.first())
    {
        message.insert(field.name().into(), json!(reasoning));
    }
    if let Some((field, details)) = reasoning_details(w.dialect, response) {
        message.insert(field.into(), details.clone());
    }
    if !calls.is_empty() {
        let calls: Vec<Value> = (0_i64..)
            .zip(calls)
            .map(|(i, c)| {
                call_json(
                    c,
                    stamp,
                    shape.body_call_index.then_some(i),
                    &c.raw_arguments,
                )
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    let mut choice = Map::new();
    choice.insert("index".into(), json!(0));
    choice.insert("message".into(), Value::Object(message));
    choice.insert(
        "finish_reason".into(),
        json!(finish_wire(w, stamp, response)),
    );
    for field in shape.null_choice_fields {
        choice.insert((*field).into(), Value::Null);
    }
    let mut body = envelope(shape, stamp, "chat.completion");
    body.insert("choices".into(), json!([choice]));
    if let Some(u) = &response.usage {
        body.insert("usage".into(), usage_json(u));
    }
    Value::Object(body).to_string().into_bytes()
}

/// A Magistral `thinking` chunk holding `text`.
pub(super) fn thinking_chunk(text: &str) -> Value {
    json!({"type": "thinking", "thinking": [{"type": "text", "text": text}]})
}

/// `{"role": role, "content": ""}`: OpenAI's opening delta, GLM's and StepFun's finish delta.
pub(super) fn role_and_empty_content(role: &str) -> Map<String, Value> {
    let mut d = Map::new();
    d.insert("role".into(), json!(role));
    d.insert("content".into(), json!(""));
    d
}

fn push_data(out: &mut Vec<u8>, data: &str) {
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(data.as_bytes());
    out.extend_from_slice(b"\n\n");
}

/// OpenAI's class of an error (the body's `type`), by its status: a refused request
/// (`invalid_request_error`, also for a bad key: the 401 body quoted in
/// continuedev/continue#9358 is `{"type": "invalid_request_error", "code": "invalid_api_key"}`),
/// a rate limit (`requests`, as in OpenAI's "Rate limit reached for requests"), or a fault of
/// the server (`server_error`). The specific reason is the `code`.
fn error_class(status: Option<u16>) -> &'static str {
    match status {
        Some(429) => "requests",
        Some(400..=499) => "invalid_request_error",
        _ => "server_error",
    }
}

/// The error body, in the fields the wire's shape names: the one error writer of this wire.
fn error_json(w: Wire<'_>, error: &ApiError) -> Value {
    let mut e = Map::new();
    match w.shape.error_fields {
        ErrorFields::OpenAi => {
            e.insert("message".into(), json!(error.message));
            e.insert("type".into(), json!(error_class(error.status)));
            e.insert("param".into(), Value::Null);
            e.insert("code".into(), json!(error.code));
        }
        ErrorFields::CodeMessage => {
            if let Some(code) = &error.code {
                e.insert("code".into(), json!(code));
            }
            e.insert("message".into(), json!(error.message));
        }
        ErrorFields::TopLevel => {
            e.insert("object".into(), json!("error"));
            e.insert("message".into(), json!(error.message));
            e.insert("type".into(), json!("invalid_request_error"));
            e.insert("param".into(), Value::Null);
            e.insert("code".into(), json!(error.code));
            return Value::Object(e);
        }
    }
    json!({ "error": e })
}

/// The status and body for `error`. An error without a status in a stream is an error event
/// inside a 200 stream, after the content of its partial response if it has one; a 4xx
/// answering a stream is SSE-framed where the wire does that.
pub(crate) fn error(w: Wire<'static>, error: &ApiError, stream: bool) -> (u16, Vec<u8>) {
    let body = error_json(w, error).to_string();
    match error.status {
        // The partial answer's chunks as far as it got, without a finish, then the error.
        None if stream => {
            let mut out = Vec::new();
            match &error.partial {
                Some(partial) => {
                    let mut writer = ChunkWriter::native(w, partial, MOCK.id);
                    writer.start(&mut out);
                    writer.events(&cut(&plain(partial), partial.usage, FINE), &mut out);
                    writer.fail(error, &mut out);
                }
                None => push_data(&mut out, &body),
            }
            (200, out)
        }
        Some(status) if stream && w.shape.sse_errors && (400..500).contains(&status) => {
            let mut out = Vec::new();
            push_data(&mut out, &body);
            (status, out)
        }
        status => (status.unwrap_or(500), body.into_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::openai::{OPENAI_COMPATIBLE, decode};
    use crate::providers::{glm, qwen, stepfun};
    use crate::replay::replay;
    use crate::test_support::{
        assert_round_trips, chunks, sample_chunks, samples, with_raw_finish,
    };

    /// One writer: a scripted answer streamed by the mock and the same answer's events written
    /// by the gateway's writer give the same chunks, `"logprobs": null` on every choice as
    /// OpenAI's chunk object shows it
    /// (<https://platform.openai.com/docs/api-reference/chat-streaming/streaming>).
    #[test]
    fn the_mock_and_the_gateway_write_the_same_chunks() {
        let answer = ChatResponse::default()
            .with_text("Checking the weather.")
            .with_tool_calls(vec![ToolCall::new(
                "call_1",
                "get_weather",
                r#"{"city":"Paris"}"#,
            )])
            .with_finish_reason(FinishReason::ToolCalls)
            .with_usage(Usage::new(12, 7));
        let parse = |bytes: &[u8]| -> Vec<Value> {
            String::from_utf8_lossy(bytes)
                .split("\n\n")
                .filter_map(|f| f.strip_prefix("data: "))
                .map(|d| serde_json::from_str(d).unwrap_or(json!(d)))
                .collect()
        };
        let mock = OpenAiResponder::default()
            .encode_response(&answer, true)
            .unwrap();
        let mut gateway = Vec::new();
        let mut w = ChunkWriter::new(MOCK.id, MOCK.model, MOCK.created, true);
        w.start(&mut gateway);
        // One event per batch, as an upstream's bytes arrive.
        for event in crate::providers::split::events(&answer, FINE) {
            w.events(std::slice::from_ref(&event), &mut gateway);
        }
        w.finish(&answer, &mut gateway);
        let (mock, gateway) = (parse(&mock), parse(&gateway));
        assert_eq!(mock, gateway);
        let choices = mock.iter().filter_map(|c| c["choices"].get(0));
        assert!(choices.clone().count() > 3);
        assert!(
            choices
                .into_iter()
                .all(|c| c.get("logprobs") == Some(&Value::Null))
        );
    }

    #[test]
    fn decode_inverts_encode_response() {
        assert_round_trips(&OpenAiResponder::default());
        assert_round_trips(&OpenAiResponder::new(&OPENAI_COMPATIBLE, &OPENAI_RESPONSE));
    }

    /// OpenRouter and MiniMax answers carry `reasoning_details`, which must go back verbatim
    /// on the next turn: the mock writes them (whole, and one entry per chunk in a stream) and
    /// the decoder keeps them as written; DeepSeek and Kimi write `reasoning_content`.
    #[test]
    fn dialects_write_the_reasoning_their_servers_write() {
        use crate::providers::{deepseek, kimi, minimax, openrouter};
        let details = json!([
            {"type": "reasoning.text", "text": "Look up Paris.", "format": "unknown", "index": 0},
            {"type": "reasoning.encrypted", "data": "c2lnbmVk", "format": "unknown", "index": 1}
        ]);
        let mut response = ChatResponse::default()
            .with_tool_calls(vec![ToolCall::new(
                "call_1",
                "get_weather",
                r#"{"city":"Paris"}"#,
            )])
            .with_finish_reason(FinishReason::ToolCalls);
        response.reasoning = Some("Look up Paris.".into());
        response
            .extra
            .insert("reasoning_details".into(), details.clone());
        // (MiniMax has no plain reasoning field: its thinking is only in the details.)
        for (name, responder, has_text, has_details) in [
            ("openrouter", openrouter::responder(), true, true),
            ("minimax", minimax::responder(), false, true),
            ("deepseek", deepseek::responder(), true, false),
            ("kimi", kimi::responder(), true, false),
        ] {
            for stream in [false, true] {
                let bytes = responder.encode_response(&response, stream).unwrap();
                let back = if stream {
                    replay(&responder, &bytes).unwrap().response
                } else {
                    responder.decode(&bytes).unwrap()
                };
                assert_eq!(
                    back.reasoning.as_deref(),
                    has_text.then_some("Look up Paris."),
                    "{name} stream={stream}"
                );
                let want = has_details.then(|| details.clone());
                assert_eq!(
                    back.extra.get("reasoning_details").cloned(),
                    want,
                    "{name} stream={stream}"
                );
                assert_eq!(back.tool_calls[0].raw_arguments, r#"{"city":"Paris"}"#);
            }
        }
    }

    #[test]
    fn every_wire_finish_reason_decodes_back() {
        let compatible = OpenAiResponder::new(&OPENAI_COMPATIBLE, &OPENAI_RESPONSE);
        let glm_tool_stream = OpenAiResponder::new(&glm::GLM, &glm::GLM_TOOL_STREAM_RESPONSE);
        for r in [
            OpenAiResponder::default(),
            compatible,
            glm::responder(),
            glm_tool_stream,
            qwen::responder(),
            stepfun::responder(),
        ] {
            let (w, d) = (r.wire(), r.dialect());
            for (canonical, wire) in r.shape().finish_reasons {
                let response = ChatResponse {
                    finish_reason: canonical.clone(),
                    ..ChatResponse::default()
                };
                assert_eq!(finish_wire(w, &MOCK, &response), *wire);
                let scripted = ChatResponse {
                    raw_finish_reason: Some("tw_scripted".into()),
                    ..response
                };
                assert_eq!(
                    finish_wire(w, &MOCK, &scripted),
                    "tw_scripted",
                    "raw goes out verbatim"
                );
                assert_eq!(
                    decode::finish_reason(d, Some(wire)).as_ref(),
                    Some(canonical),
                    "{}: {wire}",
                    d.info.kind
                );
            }
        }
    }

    #[test]
    fn stream_shape_follows_the_recordings() {
        let chunks = sample_chunks(&OpenAiResponder::default(), "parallel calls");
        assert_eq!(
            chunks[0]["choices"][0]["delta"],
            json!({"role": "assistant", "content": ""})
        );
        assert!(chunks[1]["choices"][0]["delta"].get("role").is_none());
        let opener = chunks
            .iter()
            .find(|c| c["choices"][0]["delta"]["tool_calls"][0]["id"] == "call_tw_2")
            .unwrap();
        let head = &opener["choices"][0]["delta"]["tool_calls"][0];
        assert_eq!(head["index"], 1);
        assert_eq!(head["function"]["name"], "get_weather");
        assert_eq!(head["function"]["arguments"], "");
        let fragment = &chunks[chunks.len() - 3]["choices"][0]["delta"]["tool_calls"][0];
        assert_eq!(
            fragment.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["index", "function"]
        );
        let last = chunks.last().unwrap();
        assert_eq!(last["choices"], json!([]));
        assert_eq!(last["usage"]["prompt_tokens"], 12);
        let finish = &chunks[chunks.len() - 2]["choices"][0];
        assert_eq!(finish["finish_reason"], "tool_calls");
        assert_eq!(finish["delta"], json!({}));
        for running in &chunks[..chunks.len() - 2] {
            assert_eq!(running["choices"][0]["finish_reason"], Value::Null);
            assert!(running.get("usage").is_none());
        }
    }

    #[test]
    fn minted_ids_stay_minted() {
        let p = OpenAiResponder::default();
        let (_, response) = samples()
            .into_iter()
            .find(|(n, _)| *n == "minted ids")
            .unwrap();
        let sse = p.encode_response(&response, true).unwrap();
        assert!(!String::from_utf8_lossy(&sse).contains("call_0"));
        assert_eq!(
            crate::test_support::counts_only(replay(&p, &sse).unwrap().response),
            with_raw_finish(&response, &sse)
        );
    }

    #[test]
    fn errors_round_trip() {
        let p = OpenAiResponder::default();
        let mut e = ApiError::new(crate::ProviderKind::OpenAi, Some(429), "Rate limit reached");
        e.code = Some("rate_limit_exceeded".into());
        for stream in [false, true] {
            let (status, body) = p.encode_error(&e, stream);
            assert_eq!(status, 429);
            assert!(
                body.starts_with(b"{\"error\""),
                "plain JSON, stream {stream}"
            );
            let back = p.decode_error(Some(status), &body);
            assert_eq!(back.code, e.code);
            assert_eq!(back.message, e.message);
        }

        // Mid-stream: a 200 stream with the partial content, then the error event.
        let mut e = ApiError::new(crate::ProviderKind::OpenAi, None, "overloaded");
        e.partial = Some(Box::new(ChatResponse {
            tool_calls: vec![ToolCall::new("call_tw_9", "get_weather", r#"{"city":"Pa"#)],
            ..ChatResponse::default()
        }));
        let (status, sse) = p.encode_error(&e, true);
        assert_eq!(status, 200);
        let err = replay(&p, &sse).unwrap_err();
        let api = err.api().unwrap();
        assert_eq!(api.message, "overloaded");
        let partial = err.partial().unwrap();
        assert_eq!(partial.tool_calls[0].raw_arguments, r#"{"city":"Pa"#);
        assert_eq!(
            partial.tool_calls[0].error.as_ref().unwrap().kind,
            crate::ArgumentsErrorKind::Truncated
        );
        assert!(chunks(&sse).last().unwrap().get("error").is_some());
    }

    #[test]
    fn running_totals_end_at_the_turns_usage() {
        assert_eq!(share(30, 1, 4), 7);
        assert_eq!(share(30, 4, 4), 30);
        assert_eq!(share(u64::MAX, 3, 3), u64::MAX);
        assert_eq!(share(5, 1, 0), 5);
    }
}
