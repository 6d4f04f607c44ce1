//! Gemini Live (`BidiGenerateContent` over WebSocket): tools declared once in `setup`, whole
//! calls in `toolCall`, cancellations in `toolCallCancellation`, one batched `toolResponse` per
//! `toolCall`.
//!
//! Evidence: <https://ai.google.dev/api/live> (`BidiGenerateContentSetup`,
//! `BidiGenerateContentToolCall`, `BidiGenerateContentToolCallCancellation`,
//! `BidiGenerateContentToolResponse`: "individual FunctionResponse objects are matched to the
//! respective FunctionCall objects by the id field"), <https://ai.google.dev/gemini-api/docs/live-tools>.
//! The setup has no tool choice and cannot change tools mid-session (N.E.K.O's
//! `apply_tools_to_session` ignores Gemini for that reason).

use serde_json::{Map, Value, json};

use super::model::{RealtimeEvent, RealtimeKind, SessionConfig};
use super::settings::{self, GEMINI_LIVE_SETTINGS};
use super::state::{Held, State, forward};
use crate::error::{ApiError, Error, Result};
use crate::provider::{Dropped, NameMap};
use crate::providers::gemini::gemini_name;
use crate::types::{FinishReason, SchemaMode, ToolCall, ToolChoice, ToolDefinition, Usage};

/// The Live API endpoint (the key goes in the `x-goog-api-key` header).
pub const GEMINI_LIVE_URL: &str = "wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent";

pub(crate) const KEY_VARS: &[&str] = &["GEMINI_API_KEY", "GOOGLE_API_KEY"];

/// The wire names for `tools`.
pub(crate) fn names(tools: &[ToolDefinition]) -> Result<NameMap> {
    NameMap::build(tools.iter().map(|t| t.name.as_str()), gemini_name)
}

/// The `setup` message, and the settings it left out.
pub(crate) fn configure(config: &SessionConfig, names: &NameMap) -> Result<(Value, Vec<Dropped>)> {
    let provider = RealtimeKind::GeminiLive.provider();
    let offer = match &config.tool_choice {
        None | Some(ToolChoice::Auto) => true,
        Some(ToolChoice::None) => false,
        Some(other) => {
            let what = match other {
                ToolChoice::Tool(name) => format!("a named tool choice ({name:?})"),
                _ => "tool_choice \"required\"".to_owned(),
            };
            return Err(Error::unsupported(
                provider,
                format!("{what}: the Gemini Live setup has no tool choice"),
            ));
        }
    };
    let mut setup = Map::new();
    let model = if config.model.starts_with("models/") {
        config.model.clone()
    } else {
        format!("models/{}", config.model)
    };
    setup.insert("model".into(), json!(model));
    let mut generation = Map::new();
    if let Some(m) = &config.modalities {
        let upper: Vec<String> = m.iter().map(|x| x.to_ascii_uppercase()).collect();
        generation.insert("responseModalities".into(), json!(upper));
    }
    let dropped = settings::apply(
        RealtimeKind::GeminiLive,
        &GEMINI_LIVE_SETTINGS,
        config,
        &mut generation,
    )?;
    if !generation.is_empty() {
        setup.insert("generationConfig".into(), Value::Object(generation));
    }
    if let Some(i) = &config.instructions {
        setup.insert("systemInstruction".into(), json!({"parts": [{"text": i}]}));
    }
    if offer && !config.tools.is_empty() {
        let mut declarations = Vec::with_capacity(config.tools.len());
        for (k, tool) in config.tools.iter().enumerate() {
            let mut decl = Map::new();
            decl.insert("name".into(), json!(names.wire(&tool.name)));
            if !tool.description.is_empty() {
                decl.insert("description".into(), json!(tool.description));
            }
            let path = format!("tools[{k}].parameters");
            if let Some((field, schema)) =
                crate::providers::gemini::encode::parameters(tool, SchemaMode::Lowered, &path)?
            {
                decl.insert(field.into(), schema);
            }
            declarations.push(Value::Object(decl));
        }
        setup.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations}]),
        );
    }
    for (k, v) in &config.extra {
        setup.insert(k.clone(), v.clone());
    }
    Ok((json!({"setup": setup}), dropped))
}

/// A user's text: one complete turn.
pub(crate) fn user_text(text: &str) -> Value {
    json!({"clientContent": {"turns": [{"role": "user", "parts": [{"text": text}]}],
                             "turnComplete": true}})
}

/// One `toolResponse` answering a whole `toolCall`, in call order; a synthetic id is not sent.
pub(crate) fn tool_response(group: &[Held]) -> Value {
    let responses: Vec<Value> = group
        .iter()
        .map(|h| {
            let mut r = Map::new();
            if !h.call.synthetic {
                r.insert("id".into(), json!(h.call.id));
            }
            r.insert("name".into(), json!(h.result.name));
            r.insert(
                "response".into(),
                crate::providers::gemini::encode::response_object(&h.result),
            );
            Value::Object(r)
        })
        .collect();
    json!({"toolResponse": {"functionResponses": responses}})
}

fn usage(meta: &Value) -> Option<Usage> {
    let n = |k: &str| meta.get(k).and_then(Value::as_u64);
    let (input, output) = (n("promptTokenCount"), n("responseTokenCount"));
    if input.is_none() && output.is_none() {
        return None;
    }
    Some(Usage {
        input_tokens: input.unwrap_or(0),
        output_tokens: output.unwrap_or(0),
        reasoning_tokens: n("thoughtsTokenCount"),
        ..Default::default()
    })
}

/// Top-level fields toolwire passes through uninterpreted.
const PASSTHROUGH: &[&str] = &[
    "setupComplete",
    "goAway",
    "sessionResumptionUpdate",
    "voiceActivity",
];

/// One server message (a message may carry several fields, e.g. content and usage).
pub(crate) fn feed(state: &mut State, message: Value, out: &mut Vec<RealtimeEvent>) {
    let Some(fields) = message.as_object() else {
        state.stats.unknown_events += 1;
        out.push(RealtimeEvent::Unknown(message));
        return;
    };
    let mut known = false;
    let mut pass = false;
    let content = fields.get("serverContent");
    if let Some(content) = content {
        known = true;
        pass |= content_output(state, content, out);
    }
    let call = fields.get("toolCall");
    if let Some(call) = call {
        known = true;
        tool_call(state, call, out);
    }
    if let Some(meta) = fields.get("usageMetadata") {
        known = true;
        match (usage(meta), state.open.as_mut()) {
            (Some(u), Some(open)) => {
                let mut events = Vec::new();
                open.turn.usage(u, &mut events);
                open.turn.raw_usage(meta.clone());
                forward(open.index, events, out);
            }
            // Usage between responses: nothing to attach it to; kept as it came.
            _ => pass = true,
        }
    }
    // The response ends after its usage is in: at the end of the turn, or with its calls.
    if let Some(content) = content {
        content_end(state, content, out);
    }
    if call.is_some() {
        state.end(Some(FinishReason::Stop), None, out);
    }
    if let Some(cancel) = fields.get("toolCallCancellation") {
        known = true;
        let ids: Vec<String> = cancel
            .get("ids")
            .and_then(Value::as_array)
            .map(|ids| {
                ids.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        state.cancel_calls(&ids);
        out.push(RealtimeEvent::CallsCancelled { ids });
    }
    if PASSTHROUGH.iter().any(|k| fields.contains_key(*k)) {
        known = true;
        pass = true;
    }
    if !known {
        state.stats.unknown_events += 1;
        out.push(RealtimeEvent::Unknown(message));
    } else if pass {
        out.push(RealtimeEvent::Passthrough(message));
    }
}

/// `serverContent`'s output: text (thoughts as reasoning) and transcripts. Returns whether it
/// carries something toolwire does not interpret (audio, the user's transcript).
fn content_output(state: &mut State, content: &Value, out: &mut Vec<RealtimeEvent>) -> bool {
    let mut opaque = false;
    let parts = content
        .get("modelTurn")
        .and_then(|t| t.get("parts"))
        .and_then(Value::as_array);
    let transcript = content
        .get("outputTranscription")
        .and_then(|t| t.get("text"))
        .and_then(Value::as_str);
    let has_output = parts.is_some_and(|p| !p.is_empty()) || transcript.is_some();
    if has_output && let Some(open) = state.route(None, out) {
        let mut events = Vec::new();
        for part in parts.into_iter().flatten() {
            if let Some(t) = part.get("text").and_then(Value::as_str) {
                open.charge(t.len());
            }
            match part.get("text").and_then(Value::as_str) {
                Some(t) if part.get("thought") == Some(&Value::Bool(true)) => {
                    open.turn.reasoning(t, &mut events);
                }
                Some(t) => open.turn.text(t, &mut events),
                None => opaque = true,
            }
        }
        if let Some(t) = transcript {
            open.charge(t.len());
            open.turn.text(t, &mut events);
        }
        forward(open.index, events, out);
    }
    if content.get("inputTranscription").is_some() {
        opaque = true;
    }
    opaque
}

/// `serverContent`'s end of turn: `turnComplete`, or `interrupted` (the user spoke over it).
fn content_end(state: &mut State, content: &Value, out: &mut Vec<RealtimeEvent>) {
    if content.get("interrupted") == Some(&Value::Bool(true)) {
        if let Some(open) = state.open.as_mut() {
            open.cancelled = true;
        }
        state.end(Some(FinishReason::Other("interrupted".into())), None, out);
    } else if content.get("turnComplete") == Some(&Value::Bool(true)) {
        state.end(Some(FinishReason::Stop), None, out);
    }
}

/// `toolCall`: whole calls, complete at once (the response ends with them, after any usage in
/// the same message).
fn tool_call(state: &mut State, call: &Value, out: &mut Vec<RealtimeEvent>) {
    let batch = state.batches;
    state.batches += 1;
    let calls = call
        .get("functionCalls")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let names = state.names.clone();
    let Some(open) = state.route(None, out) else {
        return;
    };
    let index = open.index;
    let mut ready = Vec::new();
    let mut events = Vec::new();
    // Calls without an id get `call_<n>`, unique in the message, marked synthetic (and never
    // sent back). Minted numbers only grow, so this stays linear.
    let native: std::collections::HashSet<&str> = calls
        .iter()
        .filter_map(|fc| fc.get("id").and_then(Value::as_str))
        .collect();
    let mut next = 0;
    for fc in &calls {
        let mut extra = Map::new();
        let minted;
        let id = match fc
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            Some(id) => id,
            None => {
                while native.contains(format!("call_{next}").as_str()) {
                    next += 1;
                }
                minted = format!("call_{next}");
                next += 1;
                extra.insert(ToolCall::SYNTHETIC_ID.into(), Value::Bool(true));
                minted.as_str()
            }
        };
        let name = fc.get("name").and_then(Value::as_str).unwrap_or("");
        let args = args_text(fc.get("args"));
        open.charge(super::state::CALL_CHARGE + args.len());
        let position =
            open.turn
                .whole_call(Some(id), names.canonical(name), &args, extra, &mut events);
        open.turn.complete_call(position, &mut events);
        ready.extend(open.turn.completed_call(position).cloned());
    }
    forward(index, events, out);
    for c in ready {
        state.ready(index, batch, c, out);
    }
}

/// The argument text of a `functionCall`'s `args`, exactly as the `gemini` provider reads the
/// same part over HTTP: none (or `null`) is `{}`, a string (some proxies) is its text, an
/// object its JSON text.
fn args_text(args: Option<&Value>) -> String {
    match args {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(Value::String(text)) => text.clone(),
        Some(args) => args.to_string(),
    }
}

/// The error a close frame carries (Gemini Live reports errors by closing the socket).
pub(crate) fn close_error(kind: RealtimeKind, code: u16, reason: &str) -> ApiError {
    let mut e = ApiError::new(
        kind.provider(),
        None,
        if reason.is_empty() {
            format!("the server closed the session with code {code}")
        } else {
            reason.to_owned()
        },
    );
    e.code = Some(code.to_string());
    e
}
