//! The four OpenAI-like realtime dialects: their differences as data, and the translation both
//! ways (session configuration and results out, server events in).

use serde_json::{Map, Value, json};

use super::model::{RealtimeEvent, RealtimeKind, SessionConfig};
use super::settings::{
    self, GLM_REALTIME_SETTINGS, OPENAI_REALTIME_SETTINGS, QWEN_REALTIME_SETTINGS,
    RealtimeSettings, STEPFUN_REALTIME_SETTINGS,
};
use super::state::{CALL_CHARGE, Held, Open, State, forward};
use crate::assemble::Fragment;
use crate::error::{ApiError, Error, Result};
use crate::provider::{Dropped, NameMap, scalar_text};
use crate::providers::openai::openai_name;
use crate::types::{FinishReason, ToolCall, ToolChoice, ToolDefinition, ToolResult, Usage};

/// How a dialect takes `tool_choice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RealtimeToolChoice {
    /// OpenAI's session field: `"auto" | "none" | "required" | {"type":"function","name":…}`.
    Flat,
    /// No such field is documented: `auto` is the default, `none` sends no tools, `required`
    /// and a named tool are refused ([`Error::Unsupported`]).
    AutoOnly,
}

/// How a user's text reaches the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TextInput {
    /// A `conversation.item.create` user message with `input_text`, then `response.create`.
    Item,
    /// Appended to the session's `instructions` through `session.update`, then
    /// `response.create` (Qwen-Omni-Realtime documents no user-message item).
    Instructions,
}

/// An OpenAI-like realtime dialect: every way it differs from OpenAI Realtime is a field here.
///
/// Non-exhaustive: a custom dialect starts from a built-in constant ([`OPENAI_REALTIME`], ...)
/// and changes what differs with the `const` `with_*` setters, so it is still a constant.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct RealtimeDialect {
    /// Which dialect.
    pub kind: RealtimeKind,
    /// Default WebSocket endpoint.
    pub url: &'static str,
    /// Environment variables holding the API key (sent as `Authorization: Bearer`).
    pub key_vars: &'static [&'static str],
    /// The model goes in the URL as `?model=`.
    pub model_in_query: bool,
    /// The model goes in the session object as `model` (GLM).
    pub model_in_session: bool,
    /// `session.type` (OpenAI's GA interface requires `"realtime"`).
    pub session_type: Option<&'static str>,
    /// The session field for output modalities.
    pub modalities_field: &'static str,
    /// Tools nested under `function` (Chat Completions shape) instead of flat.
    pub nested_tools: bool,
    /// How `tool_choice` is sent.
    pub tool_choice: RealtimeToolChoice,
    /// `tools` is sent even when empty (StepFun).
    pub tools_always: bool,
    /// Session fields set to `false` whenever tools are sent (Qwen: `enable_search` and `tools`
    /// are mutually exclusive).
    pub disabled_with_tools: &'static [&'static str],
    /// `turn_detection` is sent with every tools update, server VAD unless configured (GLM
    /// documents it must be re-sent when tools change under server VAD).
    pub resend_turn_detection: bool,
    /// Tools are honoured only with audio output (GLM): `["text","audio"]` is sent with tools
    /// unless modalities are set, and modalities without audio are refused.
    pub tools_need_audio: bool,
    /// Results carry `call_id` (GLM's carry none: results bind by position).
    pub result_call_id: bool,
    /// Prefix of ids synthesized for calls that come without `call_id`:
    /// `<prefix>_<response id>_<output index>`.
    pub synthetic_id_prefix: &'static str,
    /// How user text is sent.
    pub text_input: TextInput,
    /// `input_audio_buffer.speech_started` during a response cancels it (server VAD's
    /// `interrupt_response`, on by default).
    pub speech_interrupts: bool,
    /// Whether a tool name is accepted as is; others are mapped reversibly.
    pub valid_name: fn(&str) -> bool,
    /// The sampling and reasoning settings the session takes, and their names.
    pub settings: RealtimeSettings,
}

impl RealtimeDialect {
    /// Sets [`RealtimeDialect::kind`].
    pub const fn with_kind(mut self, kind: RealtimeKind) -> Self {
        self.kind = kind;
        self
    }

    /// Sets [`RealtimeDialect::url`].
    pub const fn with_url(mut self, url: &'static str) -> Self {
        self.url = url;
        self
    }

    /// Sets [`RealtimeDialect::key_vars`].
    pub const fn with_key_vars(mut self, key_vars: &'static [&'static str]) -> Self {
        self.key_vars = key_vars;
        self
    }

    /// Sets [`RealtimeDialect::model_in_query`].
    pub const fn with_model_in_query(mut self, model_in_query: bool) -> Self {
        self.model_in_query = model_in_query;
        self
    }

    /// Sets [`RealtimeDialect::model_in_session`].
    pub const fn with_model_in_session(mut self, model_in_session: bool) -> Self {
        self.model_in_session = model_in_session;
        self
    }

    /// Sets [`RealtimeDialect::session_type`].
    pub const fn with_session_type(mut self, session_type: Option<&'static str>) -> Self {
        self.session_type = session_type;
        self
    }

    /// Sets [`RealtimeDialect::modalities_field`].
    pub const fn with_modalities_field(mut self, modalities_field: &'static str) -> Self {
        self.modalities_field = modalities_field;
        self
    }

    /// Sets [`RealtimeDialect::nested_tools`].
    pub const fn with_nested_tools(mut self, nested_tools: bool) -> Self {
        self.nested_tools = nested_tools;
        self
    }

    /// Sets [`RealtimeDialect::tool_choice`].
    pub const fn with_tool_choice(mut self, tool_choice: RealtimeToolChoice) -> Self {
        self.tool_choice = tool_choice;
        self
    }

    /// Sets [`RealtimeDialect::tools_always`].
    pub const fn with_tools_always(mut self, tools_always: bool) -> Self {
        self.tools_always = tools_always;
        self
    }

    /// Sets [`RealtimeDialect::disabled_with_tools`].
    pub const fn with_disabled_with_tools(
        mut self,
        disabled_with_tools: &'static [&'static str],
    ) -> Self {
        self.disabled_with_tools = disabled_with_tools;
        self
    }

    /// Sets [`RealtimeDialect::resend_turn_detection`].
    pub const fn with_resend_turn_detection(mut self, resend_turn_detection: bool) -> Self {
        self.resend_turn_detection = resend_turn_detection;
        self
    }

    /// Sets [`RealtimeDialect::tools_need_audio`].
    pub const fn with_tools_need_audio(mut self, tools_need_audio: bool) -> Self {
        self.tools_need_audio = tools_need_audio;
        self
    }

    /// Sets [`RealtimeDialect::result_call_id`].
    pub const fn with_result_call_id(mut self, result_call_id: bool) -> Self {
        self.result_call_id = result_call_id;
        self
    }

    /// Sets [`RealtimeDialect::synthetic_id_prefix`].
    pub const fn with_synthetic_id_prefix(mut self, synthetic_id_prefix: &'static str) -> Self {
        self.synthetic_id_prefix = synthetic_id_prefix;
        self
    }

    /// Sets [`RealtimeDialect::text_input`].
    pub const fn with_text_input(mut self, text_input: TextInput) -> Self {
        self.text_input = text_input;
        self
    }

    /// Sets [`RealtimeDialect::speech_interrupts`].
    pub const fn with_speech_interrupts(mut self, speech_interrupts: bool) -> Self {
        self.speech_interrupts = speech_interrupts;
        self
    }

    /// Sets [`RealtimeDialect::valid_name`].
    pub const fn with_valid_name(mut self, valid_name: fn(&str) -> bool) -> Self {
        self.valid_name = valid_name;
        self
    }

    /// Sets [`RealtimeDialect::settings`].
    pub const fn with_settings(mut self, settings: RealtimeSettings) -> Self {
        self.settings = settings;
        self
    }
}

/// OpenAI Realtime (GA interface): flat tools and `tool_choice` in `session.update`, argument
/// deltas keyed by `call_id`. Evidence:
/// <https://platform.openai.com/docs/api-reference/realtime-server-events> (function call
/// argument events), <https://platform.openai.com/docs/guides/realtime-conversations>
/// (function calling). xAI's realtime API speaks the same wire at `wss://api.x.ai/v1/realtime`.
pub const OPENAI_REALTIME: RealtimeDialect = RealtimeDialect {
    kind: RealtimeKind::OpenAiRealtime,
    url: "wss://api.openai.com/v1/realtime",
    key_vars: &["OPENAI_API_KEY"],
    model_in_query: true,
    model_in_session: false,
    session_type: Some("realtime"),
    modalities_field: "output_modalities",
    nested_tools: false,
    tool_choice: RealtimeToolChoice::Flat,
    tools_always: false,
    disabled_with_tools: &[],
    resend_turn_detection: false,
    tools_need_audio: false,
    result_call_id: true,
    synthetic_id_prefix: "call",
    text_input: TextInput::Item,
    speech_interrupts: true,
    valid_name: openai_name,
    settings: OPENAI_REALTIME_SETTINGS,
};

/// GLM-Realtime: flat tools, honoured only with audio output; calls arrive only as
/// `response.function_call_arguments.done` without `call_id`; results go back without it.
/// Evidence: <https://docs.bigmodel.cn/cn/guide/models/sound-and-video/glm-realtime>,
/// <https://github.com/MetaGLM/glm-realtime-sdk/blob/30acbf018bcf78c4ac43d230a27fca936b6dda08/python/samples/message_handler.py>
/// (`FunctionCallOutputItem(output=…)`, no `call_id`),
/// <https://github.com/Project-N-E-K-O/N.E.K.O/blob/10a239826922a0c1494e07a88df38b23e64014a0/main_logic/omni_realtime_client/_tools.py>
/// (`turn_detection` re-sent with tools; results without `call_id`).
pub const GLM_REALTIME: RealtimeDialect = RealtimeDialect {
    kind: RealtimeKind::GlmRealtime,
    url: "wss://open.bigmodel.cn/api/paas/v4/realtime",
    key_vars: &["ZHIPUAI_API_KEY", "ZAI_API_KEY"],
    model_in_query: false,
    model_in_session: true,
    session_type: None,
    modalities_field: "modalities",
    nested_tools: false,
    tool_choice: RealtimeToolChoice::AutoOnly,
    tools_always: false,
    disabled_with_tools: &[],
    resend_turn_detection: true,
    tools_need_audio: true,
    result_call_id: false,
    synthetic_id_prefix: "glm",
    text_input: TextInput::Item,
    speech_interrupts: true,
    valid_name: openai_name,
    settings: GLM_REALTIME_SETTINGS,
};

/// Qwen-Omni-Realtime: tools nested under `function`, exclusive with `enable_search`; OpenAI's
/// delta/done events with `call_id`. Evidence:
/// <https://www.alibabacloud.com/help/en/model-studio/client-events> (`session.update` with
/// nested `tools`), <https://www.alibabacloud.com/help/en/model-studio/server-events> (function
/// calling events), N.E.K.O's `_tools.py` (as for GLM: `enable_search: false` with tools).
pub const QWEN_REALTIME: RealtimeDialect = RealtimeDialect {
    kind: RealtimeKind::QwenRealtime,
    url: "wss://dashscope.aliyuncs.com/api-ws/v1/realtime",
    key_vars: &["DASHSCOPE_API_KEY"],
    model_in_query: true,
    model_in_session: false,
    session_type: None,
    modalities_field: "modalities",
    nested_tools: true,
    tool_choice: RealtimeToolChoice::AutoOnly,
    tools_always: false,
    disabled_with_tools: &["enable_search"],
    resend_turn_detection: false,
    tools_need_audio: false,
    result_call_id: true,
    synthetic_id_prefix: "call",
    text_input: TextInput::Instructions,
    speech_interrupts: true,
    valid_name: openai_name,
    settings: QWEN_REALTIME_SETTINGS,
};

/// StepFun realtime: tools nested under `function` and always sent (`[]` when none); delta/done
/// events with `call_id`. Evidence: <https://platform.stepfun.com/docs/zh/guides/developer/realtime>,
/// N.E.K.O's `_tools.py` (as for GLM).
pub const STEPFUN_REALTIME: RealtimeDialect = RealtimeDialect {
    kind: RealtimeKind::StepFunRealtime,
    url: "wss://api.stepfun.com/v1/realtime",
    key_vars: &["STEPFUN_API_KEY"],
    model_in_query: true,
    model_in_session: false,
    session_type: None,
    modalities_field: "modalities",
    nested_tools: true,
    tool_choice: RealtimeToolChoice::AutoOnly,
    tools_always: true,
    disabled_with_tools: &[],
    resend_turn_detection: false,
    tools_need_audio: false,
    result_call_id: true,
    synthetic_id_prefix: "call",
    text_input: TextInput::Item,
    speech_interrupts: true,
    valid_name: openai_name,
    settings: STEPFUN_REALTIME_SETTINGS,
};

/// Extra field of a call whose `.done` carried other arguments than its deltas (which win).
pub const DONE_ARGUMENTS: &str = "done_arguments";

/// Event types every OpenAI-like dialect sends that toolwire passes through uninterpreted
/// (by prefix).
const PASSTHROUGH: &[&str] = &[
    "session.",
    "conversation.",
    "input_audio_buffer.",
    "output_audio_buffer.",
    "input_image_buffer.",
    "rate_limits.",
    "transcription_session.",
    "response.content_part.",
    "response.output_item.",
    "response.audio.",
    "response.output_audio.",
    "response.audio_transcript.done",
    "response.output_audio_transcript.done",
    "response.text.done",
    "response.output_text.done",
    "heartbeat",
];

/// Text deltas (the model's text, or the transcript of what it said).
const TEXT_DELTAS: &[&str] = &[
    "response.text.delta",
    "response.output_text.delta",
    "response.audio_transcript.delta",
    "response.output_audio_transcript.delta",
];

/// The wire names for `tools`.
pub(crate) fn names(d: &RealtimeDialect, tools: &[ToolDefinition]) -> Result<NameMap> {
    NameMap::build(tools.iter().map(|t| t.name.as_str()), d.valid_name)
}

fn tool_json(d: &RealtimeDialect, tool: &ToolDefinition, names: &NameMap) -> Value {
    let mut f = Map::new();
    f.insert("name".into(), json!(names.wire(&tool.name)));
    if !tool.description.is_empty() {
        f.insert("description".into(), json!(tool.description));
    }
    f.insert("parameters".into(), tool.parameters.clone());
    if d.nested_tools {
        json!({"type": "function", "function": f})
    } else {
        let mut flat = Map::new();
        flat.insert("type".into(), json!("function"));
        flat.extend(f);
        Value::Object(flat)
    }
}

/// Writes `tools` (and what goes with them) into a session object. `update`: a mid-session
/// change, which always carries `tools` (an empty list removes them).
fn put_tools(
    d: &RealtimeDialect,
    s: &mut Map<String, Value>,
    tools: &[ToolDefinition],
    choice: Option<&ToolChoice>,
    names: &NameMap,
    update: bool,
) -> Result<()> {
    let provider = d.kind.provider();
    let mut offered = tools;
    if d.tool_choice == RealtimeToolChoice::AutoOnly {
        match choice {
            None | Some(ToolChoice::Auto) => {}
            Some(ToolChoice::None) => offered = &[],
            Some(other) => {
                let what = match other {
                    ToolChoice::Tool(name) => format!("a named tool choice ({name:?})"),
                    _ => "tool_choice \"required\"".to_owned(),
                };
                return Err(Error::unsupported(
                    provider,
                    format!("{what}: {} documents no tool_choice", d.kind),
                ));
            }
        }
    }
    if !offered.is_empty() || d.tools_always || update {
        let list: Vec<Value> = offered.iter().map(|t| tool_json(d, t, names)).collect();
        s.insert("tools".into(), Value::Array(list));
    }
    if d.tool_choice == RealtimeToolChoice::Flat
        && !offered.is_empty()
        && let Some(choice) = choice
    {
        let v = match choice.without_allowed() {
            ToolChoice::Auto | ToolChoice::Allowed { .. } => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "name": names.wire(&name)}),
        };
        s.insert("tool_choice".into(), v);
    }
    if !offered.is_empty() {
        for field in d.disabled_with_tools {
            s.insert((*field).into(), Value::Bool(false));
        }
    }
    if d.resend_turn_detection
        && (update || !offered.is_empty())
        && !s.contains_key("turn_detection")
    {
        s.insert("turn_detection".into(), json!({"type": "server_vad"}));
    }
    Ok(())
}

fn session_update(d: &RealtimeDialect, mut s: Map<String, Value>) -> Value {
    if let Some(t) = d.session_type {
        let mut typed = Map::new();
        typed.insert("type".into(), json!(t));
        typed.append(&mut s);
        s = typed;
    }
    json!({"type": "session.update", "session": s})
}

/// The `session.update` that configures a session, and the settings it left out.
pub(crate) fn configure(
    d: &RealtimeDialect,
    config: &SessionConfig,
    names: &NameMap,
) -> Result<(Value, Vec<Dropped>)> {
    let mut s = Map::new();
    if d.model_in_session && !config.model.is_empty() {
        s.insert("model".into(), json!(config.model));
    }
    if let Some(i) = &config.instructions {
        s.insert("instructions".into(), json!(i));
    }
    let mut modalities = config.modalities.clone();
    if d.tools_need_audio
        && !config.tools.is_empty()
        && config.tool_choice != Some(ToolChoice::None)
    {
        match &modalities {
            None => modalities = Some(vec!["text".into(), "audio".into()]),
            Some(m) if !m.iter().any(|x| x == "audio") => {
                return Err(Error::unsupported(
                    d.kind.provider(),
                    format!(
                        "{} honours tools only with audio output; modalities {m:?} have none",
                        d.kind
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(m) = modalities {
        s.insert(d.modalities_field.into(), json!(m));
    }
    if let Some(td) = &config.turn_detection {
        s.insert("turn_detection".into(), td.clone());
    }
    let dropped = settings::apply(d.kind, &d.settings, config, &mut s)?;
    if !config.tools.is_empty() && config.tool_choice != Some(ToolChoice::None) {
        for flag in d.disabled_with_tools {
            if config.extra.get(*flag) == Some(&Value::Bool(true)) {
                return Err(Error::unsupported(
                    d.kind.provider(),
                    format!(
                        "extra.{flag} true together with tools: {} cannot combine them; drop \
                         {flag} or the tools",
                        d.kind
                    ),
                ));
            }
        }
    }
    put_tools(
        d,
        &mut s,
        &config.tools,
        config.tool_choice.as_ref(),
        names,
        false,
    )?;
    for (k, v) in &config.extra {
        s.insert(k.clone(), v.clone());
    }
    Ok((session_update(d, s), dropped))
}

/// The `session.update` that replaces the tools mid-session.
pub(crate) fn update_tools(
    d: &RealtimeDialect,
    config: &SessionConfig,
    names: &NameMap,
) -> Result<Value> {
    let mut s = Map::new();
    if let Some(td) = config
        .turn_detection
        .as_ref()
        .filter(|_| d.resend_turn_detection)
    {
        s.insert("turn_detection".into(), td.clone());
    }
    put_tools(
        d,
        &mut s,
        &config.tools,
        config.tool_choice.as_ref(),
        names,
        true,
    )?;
    Ok(session_update(d, s))
}

/// The event carrying a user's text (before `response.create`); `instructions` is the
/// session's running instructions, for dialects that take text there.
pub(crate) fn user_text(d: &RealtimeDialect, text: &str, instructions: &str) -> Value {
    match d.text_input {
        TextInput::Item => json!({
            "type": "conversation.item.create",
            "item": {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": text}]},
        }),
        TextInput::Instructions => session_update(
            d,
            Map::from_iter([("instructions".into(), json!(instructions))]),
        ),
    }
}

/// The text of a `function_call_output`: a string output as is, other JSON as its text; an
/// error as `{"error": message, "output": detail}` (no wire has an error flag).
pub(crate) fn output_text(r: &ToolResult) -> String {
    if r.is_error || r.error.is_some() {
        let message = r.error.clone().unwrap_or_else(|| r.content_text());
        let mut m = Map::new();
        m.insert("error".into(), json!(message));
        if !r.output.is_null() && r.error.is_some() {
            m.insert("output".into(), r.output.clone());
        }
        return Value::Object(m).to_string();
    }
    match &r.output {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// One result as `conversation.item.create`.
pub(crate) fn result_item(d: &RealtimeDialect, held: &Held) -> Value {
    let mut item = Map::new();
    item.insert("type".into(), json!("function_call_output"));
    if d.result_call_id && !held.call.synthetic {
        item.insert("call_id".into(), json!(held.call.id));
    }
    item.insert("output".into(), json!(output_text(&held.result)));
    json!({"type": "conversation.item.create", "item": item})
}

fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// The error an `error` event (or a failed response) carries, code and message verbatim.
pub(crate) fn api_error(d_kind: RealtimeKind, error: &Value, body: &Value) -> ApiError {
    let message = text(error, "message")
        .map(str::to_owned)
        .or_else(|| error.as_str().map(str::to_owned))
        .unwrap_or_else(|| "the server sent an error event without a message".to_owned());
    let mut e = ApiError::new(d_kind.provider(), None, message);
    e.code = error
        .get("code")
        .and_then(scalar_text)
        .or_else(|| text(error, "type").map(str::to_owned));
    e.body = body.to_string();
    e
}

fn usage(v: &Value) -> Option<Usage> {
    let u = v.get("usage")?;
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    let (input, output) = (n("input_tokens"), n("output_tokens"));
    if input.is_none() && output.is_none() {
        return None;
    }
    Some(Usage {
        input_tokens: input.unwrap_or(0),
        output_tokens: output.unwrap_or(0),
        reasoning_tokens: None,
        ..Default::default()
    })
}

/// The canonical finish reason of a `response.done` status.
fn finish_reason(response: &Value) -> FinishReason {
    let reason = response
        .get("status_details")
        .and_then(|s| text(s, "reason"));
    match text(response, "status") {
        None | Some("completed") => FinishReason::Stop,
        Some("failed") => FinishReason::Error,
        Some("incomplete") => match reason {
            Some("max_output_tokens") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
            None => FinishReason::Other("incomplete".into()),
        },
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

/// The call an event is about, as the event names it.
#[derive(Debug, Clone, Copy, Default)]
struct CallRef<'a> {
    call_id: Option<&'a str>,
    item_id: Option<&'a str>,
    output_index: Option<u64>,
    name: Option<&'a str>,
    arguments: Option<&'a str>,
}

impl<'a> CallRef<'a> {
    /// From an argument event (`.delta`, `.done`).
    fn of_event(event: &'a Value) -> Self {
        Self {
            call_id: text(event, "call_id"),
            item_id: text(event, "item_id"),
            output_index: event.get("output_index").and_then(Value::as_u64),
            name: text(event, "name"),
            arguments: event.get("arguments").and_then(Value::as_str),
        }
    }

    /// From an output item event (`response.output_item.added` / `.done`).
    fn of_item(event: &'a Value, item: &'a Value) -> Self {
        Self {
            call_id: text(item, "call_id"),
            item_id: text(item, "id"),
            output_index: event.get("output_index").and_then(Value::as_u64),
            name: text(item, "name"),
            arguments: item.get("arguments").and_then(Value::as_str),
        }
    }
}

/// One server event.
pub(crate) fn feed(
    d: &RealtimeDialect,
    state: &mut State,
    event: Value,
    out: &mut Vec<RealtimeEvent>,
) {
    let Some(kind) = event.get("type").and_then(Value::as_str).map(str::to_owned) else {
        state.stats.unknown_events += 1;
        out.push(RealtimeEvent::Unknown(event));
        return;
    };
    match kind.as_str() {
        "response.created" => {
            let id = event
                .get("response")
                .and_then(|r| text(r, "id"))
                .map(str::to_owned);
            state.begin(id, out);
        }
        "response.done" => {
            let response = event.get("response").cloned().unwrap_or(Value::Null);
            let Some(open) = state.route(text(&response, "id"), out) else {
                return stale(state, event, out);
            };
            let mut events = Vec::new();
            if let Some(u) = usage(&response) {
                open.turn.usage(u, &mut events);
                if let Some(raw) = response.get("usage") {
                    open.turn.raw_usage(raw.clone());
                }
            }
            forward(open.index, events, out);
            if text(&response, "status") == Some("failed") {
                let details = response
                    .get("status_details")
                    .cloned()
                    .unwrap_or(Value::Null);
                let error = details.get("error").cloned().unwrap_or(details);
                state.stats.error_events += 1;
                out.push(RealtimeEvent::Error(api_error(d.kind, &error, &event)));
            }
            state.end(
                Some(finish_reason(&response)),
                text(&response, "status"),
                out,
            );
        }
        "response.output_item.added" => {
            let item = event.get("item").cloned().unwrap_or(Value::Null);
            if text(&item, "type") != Some("function_call") {
                return passthrough(event, out);
            }
            let call = CallRef::of_item(&event, &item);
            match live(state, &event, out) {
                Some(false) => {
                    start_call(d, state, call, out);
                }
                _ => stale(state, event.clone(), out),
            }
        }
        "response.function_call_arguments.delta" => {
            let call = CallRef::of_event(&event);
            if live(state, &event, out) != Some(false) {
                return stale(state, event.clone(), out);
            }
            let delta = event.get("delta").and_then(Value::as_str).unwrap_or("");
            if let Some((position, key)) = start_call(d, state, call, out)
                && let Some(open) = state.open.as_mut()
            {
                if open.ended.contains(&position) {
                    // Text after the call's end event (which came cut off): not part of it.
                    return stale(state, event.clone(), out);
                }
                open.charge(delta.len());
                let mut events = Vec::new();
                open.turn.fragment(
                    0,
                    Fragment {
                        index: turn_index(position),
                        id: Some(&key),
                        name: None,
                        arguments: Some(delta),
                    },
                    &mut events,
                );
                forward(open.index, events, out);
            }
        }
        "response.function_call_arguments.done" => {
            let call = CallRef::of_event(&event);
            done(d, state, &event, call, out);
        }
        "response.output_item.done" => {
            let item = event.get("item").cloned().unwrap_or(Value::Null);
            let completed = text(&item, "type") == Some("function_call")
                && text(&item, "status").is_none_or(|s| s == "completed");
            if !completed {
                return passthrough(event, out);
            }
            // A server that skipped `.done` ends the call here; after `.done` it is a repeat.
            let call = CallRef::of_item(&event, &item);
            done(d, state, &event, call, out);
        }
        "error" => {
            let error = event.get("error").cloned().unwrap_or(Value::Null);
            state.stats.error_events += 1;
            // A refused `response.create` must not block the next one.
            state.requested = false;
            out.push(RealtimeEvent::Error(api_error(d.kind, &error, &event)));
        }
        "input_audio_buffer.speech_started" => {
            if d.speech_interrupts
                && let Some(open) = state.open.as_mut()
            {
                open.cancelled = true;
            }
            passthrough(event, out);
        }
        k if TEXT_DELTAS.contains(&k) => {
            let Some(open) = state.route(text(&event, "response_id"), out) else {
                return stale(state, event, out);
            };
            let delta = event.get("delta").and_then(Value::as_str).unwrap_or("");
            open.charge(delta.len());
            let mut events = Vec::new();
            open.turn.text(delta, &mut events);
            forward(open.index, events, out);
        }
        k if PASSTHROUGH.iter().any(|p| k.starts_with(p)) => passthrough(event, out),
        _ => {
            state.stats.unknown_events += 1;
            out.push(RealtimeEvent::Unknown(event));
        }
    }
}

fn passthrough(event: Value, out: &mut Vec<RealtimeEvent>) {
    out.push(RealtimeEvent::Passthrough(event));
}

fn stale(state: &mut State, event: Value, out: &mut Vec<RealtimeEvent>) {
    state.stats.stale_events += 1;
    out.push(RealtimeEvent::Stale(event));
}

/// Routes an event to its response: `Some(false)` live, `Some(true)` its response is being
/// cancelled, `None` stale.
fn live(state: &mut State, event: &Value, out: &mut Vec<RealtimeEvent>) -> Option<bool> {
    state
        .route(text(event, "response_id"), out)
        .map(|open| open.cancelled)
}

/// The key of a call: its `call_id`; else the call its item or its output index started; an
/// event that names no call at all continues the call started last while that one is open;
/// else an id synthesized from the response and output index (`true`: synthetic). Distinct
/// `call_id`s are always distinct calls, whatever else the events carry.
fn call_key(d: &RealtimeDialect, open: &Open, call: CallRef<'_>) -> (String, bool) {
    if let Some(id) = call.call_id {
        return (id.to_owned(), false);
    }
    let known = (call.item_id.and_then(|i| open.items.get(i)))
        .or_else(|| call.output_index.and_then(|n| open.outputs.get(&n)));
    if let Some(key) = known {
        return (key.clone(), false);
    }
    if call.item_id.is_none()
        && call.output_index.is_none()
        && let Some(last) = &open.last
        && let Some(&position) = open.keys.get(last)
        && open.turn.completed_call(position).is_none()
        && !open.ended.contains(&position)
    {
        return (last.clone(), false);
    }
    let response = open
        .id
        .clone()
        .unwrap_or_else(|| format!("r{}", open.index));
    let output = call
        .output_index
        .map_or_else(|| open.turn.call_count().to_string(), |n| n.to_string());
    (
        format!("{}_{response}_{output}", d.synthetic_id_prefix),
        true,
    )
}

/// The wire index toolwire gives the call at `position`: the [`Assembler`](crate::assemble::Assembler)
/// keys each fragment by it, so calls are told apart by their key here and never by the
/// turn's fallbacks (which continue a nameless fragment with a fresh id at its position).
fn turn_index(position: usize) -> Option<i64> {
    Some(i64::try_from(position).unwrap_or(i64::MAX))
}

/// Whether argument text at a call's end event decides nothing yet: empty, or stopping before
/// its JSON is complete (a response cut by a token limit still sends `.done`).
fn cut_off(text: &str) -> bool {
    text.trim().is_empty()
        || matches!(
            serde_json::from_str::<serde::de::IgnoredAny>(text),
            Err(e) if e.is_eof()
        )
}

/// The call `call` names in the open response, started if new (with its name when known);
/// its position and key.
fn start_call(
    d: &RealtimeDialect,
    state: &mut State,
    call: CallRef<'_>,
    out: &mut Vec<RealtimeEvent>,
) -> Option<(usize, String)> {
    let names = &state.names;
    let open = state.open.as_mut()?;
    let (key, synthetic) = call_key(d, open, call);
    if let Some(item) = call.item_id {
        open.items
            .entry(item.to_owned())
            .or_insert_with(|| key.clone());
    }
    if let Some(n) = call.output_index {
        open.outputs.entry(n).or_insert_with(|| key.clone());
    }
    if let Some(&position) = open.keys.get(&key) {
        return Some((position, key));
    }
    let name = call.name.map(|n| names.canonical(n).to_owned());
    open.charge(CALL_CHARGE + call.arguments.map_or(0, str::len));
    let mut events = Vec::new();
    let position = open.turn.call_count();
    open.turn.fragment(
        0,
        Fragment {
            index: turn_index(position),
            id: Some(&key),
            name: name.as_deref(),
            arguments: None,
        },
        &mut events,
    );
    if open.turn.call_count() != position + 1 {
        // The turn is over (it takes no new call).
        return None;
    }
    if synthetic && let Some(extra) = open.turn.call_extra(position) {
        extra.insert(ToolCall::SYNTHETIC_ID.into(), Value::Bool(true));
    }
    open.keys.insert(key.clone(), position);
    open.last = Some(key.clone());
    forward(open.index, events, out);
    Some((position, key))
}

/// A call's end event (`.done`, or a completed `function_call` item): the call is final now,
/// unless its response is being cancelled. The deltas win over the event's own arguments.
fn done(
    d: &RealtimeDialect,
    state: &mut State,
    event: &Value,
    call: CallRef<'_>,
    out: &mut Vec<RealtimeEvent>,
) {
    let Some(cancelled) = live(state, event, out) else {
        return stale(state, event.clone(), out);
    };
    let Some((position, key)) = start_call(d, state, call, out) else {
        return stale(state, event.clone(), out);
    };
    let names = &state.names;
    let Some(open) = state.open.as_mut() else {
        return;
    };
    if open.turn.completed_call(position).is_some() || open.ended.contains(&position) {
        // The item's own `done` after `.done`: a repeat.
        return passthrough(event.clone(), out);
    }
    let index = open.index;
    let (has_name, so_far) = open
        .turn
        .call_so_far(position)
        .map(|(n, a)| (!n.is_empty(), a.to_owned()))
        .unwrap_or_default();
    let final_args = call.arguments.unwrap_or("");
    let name = call
        .name
        .filter(|_| !has_name)
        .map(|n| names.canonical(n).to_owned());
    let fill_args = (so_far.is_empty() && !final_args.is_empty()).then_some(final_args);
    let mut events = Vec::new();
    if name.is_some() || fill_args.is_some() {
        open.turn.fragment(
            0,
            Fragment {
                index: turn_index(position),
                id: Some(&key),
                name: name.as_deref(),
                arguments: fill_args,
            },
            &mut events,
        );
    }
    if !so_far.is_empty()
        && !final_args.is_empty()
        && final_args != so_far
        && let Some(extra) = open.turn.call_extra(position)
    {
        // The deltas win; the `.done` text is kept beside them.
        extra.insert(DONE_ARGUMENTS.into(), json!(final_args));
    }
    if cancelled {
        forward(index, events, out);
        return stale(state, event.clone(), out);
    }
    if open.turn.call_arguments(position).is_some_and(cut_off) {
        // Final or cut: the response's end decides (see `Open::ended`).
        open.ended.insert(position);
        return forward(index, events, out);
    }
    open.turn.complete_call(position, &mut events);
    let ready = open.turn.completed_call(position).cloned();
    forward(index, events, out);
    if let Some(ready) = ready {
        state.ready(index, 0, ready, out);
    }
}
