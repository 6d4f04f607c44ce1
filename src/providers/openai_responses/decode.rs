//! Responses API bodies and event streams → the canonical model.
//!
//! A whole body is decoded as the stream of its output items: each item goes through the same
//! `output_item.done` path a streamed item ends with, so both forms give the same response.

use std::collections::HashMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::wire::{Event, Item, ResponseObject, Usage as WireUsage};
use super::{CUSTOM_TOOL, ITEM_ID, OTHER_ITEMS, REASONING_ITEMS, REFUSAL, UNKNOWN_EVENTS};
use crate::assemble::{Assembler, Fragment};
use crate::error::{ApiError, Error, Result};
use crate::provider::{ProviderKind, StreamDecoder, generic_error, scalar_text};
use crate::providers::shared::{foreign_body, stops_mid_json};
use crate::types::{ChatResponse, FinishReason, HostedCall, StreamEvent, Usage};

const KIND: ProviderKind = ProviderKind::OpenAiResponses;

/// Event types toolwire knows and has no use for: lifecycle events, `.done` events whose text
/// already arrived as deltas, and the progress of server-side tools. Ignored without counting.
const IGNORED: [&str; 12] = [
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.done",
    "response.output_text.annotation.added",
    "response.refusal.done",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.done",
    "response.reasoning_text.done",
];

/// Prefixes of the documented events of server-side tools (their items are skipped too).
const IGNORED_PREFIXES: [&str; 9] = [
    "response.audio.",
    "response.code_interpreter_call",
    "response.file_search_call.",
    "response.web_search_call.",
    "response.image_generation_call.",
    "response.mcp_call",
    "response.mcp_list_tools.",
    "response.shell_call",
    "response.apply_patch_call",
];

/// Prefixes of the status events of hosted calls (`.in_progress`, `.searching`,
/// `.interpreting`, `.generating`, …), passed on as [`StreamEvent::HostedCall`].
const HOSTED_EVENTS: [&str; 6] = [
    "response.web_search_call.",
    "response.file_search_call.",
    "response.code_interpreter_call.",
    "response.image_generation_call.",
    "response.mcp_call.",
    "response.mcp_list_tools.",
];

/// An output item OpenAI ran itself.
pub(super) fn hosted_item(ty: &str) -> bool {
    matches!(
        ty,
        "web_search_call"
            | "file_search_call"
            | "code_interpreter_call"
            | "mcp_call"
            | "mcp_list_tools"
            | "tool_search_call"
            | "tool_search_output"
            | "image_generation_call"
    )
}

/// A hosted item's name, input and result, as far as each item type has them: the tool's
/// name (the item type without `_call`; an MCP call's own tool name), what it was asked
/// (`action`, `queries`, `code`, `arguments`), and what it gave (`results`, `outputs`,
/// `output`, `tools`, `result`; `None` when the item carries none, as a web search's).
pub(super) fn hosted_fields(ty: &str, item: &Value) -> (String, Value, Option<Value>) {
    let pick = |keys: &[&str]| {
        let mut m = serde_json::Map::new();
        for k in keys {
            if let Some(v) = item.get(*k).filter(|v| !v.is_null()) {
                m.insert((*k).to_owned(), v.clone());
            }
        }
        Value::Object(m)
    };
    let field = |k: &str| item.get(k).filter(|v| !v.is_null()).cloned();
    let name = ty.strip_suffix("_call").unwrap_or(ty).to_owned();
    match ty {
        "web_search_call" => (name, pick(&["action"]), None),
        "file_search_call" => (name, pick(&["queries"]), field("results")),
        "code_interpreter_call" => (name, pick(&["code", "container_id"]), field("outputs")),
        "mcp_call" => {
            let tool = item.get("name").and_then(Value::as_str).unwrap_or("mcp");
            let result = field("output").or_else(|| field("error"));
            (
                tool.to_owned(),
                pick(&["server_label", "arguments"]),
                result,
            )
        }
        "mcp_list_tools" => (name, pick(&["server_label"]), field("tools")),
        "tool_search_call" => (name, pick(&["arguments"]), None),
        "tool_search_output" => ("tool_search".into(), Value::Null, field("tools")),
        "image_generation_call" => (name, pick(&["revised_prompt"]), field("result")),
        _ => (name, pick(&[]), None),
    }
}

/// The canonical finish reason of a response `status` (and `incomplete_details.reason`):
/// `completed` is a normal end (complete calls settle it to `tool_calls`), `incomplete` for
/// `max_output_tokens` is `length`, for `content_filter` is `content_filter`; anything else is
/// kept verbatim (the reason if there is one, else the status).
pub(crate) fn finish_reason(status: Option<&str>, reason: Option<&str>) -> FinishReason {
    match (status, reason) {
        (None | Some("completed"), _) => FinishReason::Stop,
        (_, Some("max_output_tokens")) => FinishReason::Length,
        (_, Some("content_filter")) => FinishReason::ContentFilter,
        (_, Some(reason)) => FinishReason::Other(reason.to_owned()),
        (Some(status), None) => FinishReason::Other(status.to_owned()),
    }
}

/// The usage of a whole body read alone ([`crate::provider::Provider::decode_usage`]): its
/// `usage` field, the rest of the body skipped unread.
pub(super) fn body_usage(body: &[u8]) -> Option<Usage> {
    #[derive(Deserialize)]
    struct Counted {
        #[serde(default, deserialize_with = "crate::providers::lenient::object")]
        usage: Option<WireUsage>,
    }
    let counted: Counted = serde_json::from_slice(body).ok()?;
    counted.usage.as_ref().map(usage)
}

fn usage(u: &WireUsage) -> Usage {
    Usage {
        input_tokens: u.input_tokens.unwrap_or(0),
        output_tokens: u.output_tokens.unwrap_or(0),
        reasoning_tokens: u
            .output_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens),
        // `input_tokens_details.cached_tokens`: prompt tokens read from the cache (part of
        // `input_tokens`).
        cached_input_tokens: u
            .input_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens),
        ..Default::default()
    }
}

/// An [`ApiError`] for an `error` event or a failed response: `error` is the event's nested
/// error object or the response's, `flat` the event's own `code` and `message`; the payload is
/// kept verbatim as the body.
fn stream_error(error: Option<&Value>, flat: (Option<&str>, Option<&str>), body: &str) -> ApiError {
    let field = |k: &str| error.and_then(|e| e.get(k)).and_then(scalar_text);
    let code = field("code")
        .or_else(|| flat.0.filter(|c| !c.is_empty()).map(str::to_owned))
        .or_else(|| field("type"));
    let message = field("message")
        .or_else(|| flat.1.filter(|m| !m.is_empty()).map(str::to_owned))
        .unwrap_or_else(|| "the response failed without a message".to_owned());
    let mut api = ApiError::new(KIND, None, message);
    api.code = code;
    api.retry_after = retry_hint(&api.message);
    api.body = body.to_owned();
    api
}

/// The wait a rate-limit message asks for, in its own words: "Please try again in 300ms." /
/// "in 11.122s." / "in 1m9.696s." (OpenAI puts it nowhere else; its Codex CLI reads it the same
/// way, openai/codex PR #2266). A `Retry-After` header, when there is one, wins over it.
pub(crate) fn retry_hint(message: &str) -> Option<Duration> {
    const MARK: &str = "try again in ";
    let rest = &message[message.find(MARK)? + MARK.len()..];
    let mut total = 0.0_f64;
    let mut parsed = false;
    let mut text = rest;
    // At most a few `<number><unit>` groups (`1h2m3.5s`); anything else ends the duration.
    for _ in 0..4 {
        let digits = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let Ok(value) = text[..digits].parse::<f64>() else {
            break;
        };
        let after = &text[digits..];
        let (unit, scale) = if after.starts_with("ms") {
            (2, 0.001)
        } else if after.starts_with('h') {
            (1, 3600.0)
        } else if after.starts_with('m') {
            (1, 60.0)
        } else if after.starts_with('s') {
            (1, 1.0)
        } else {
            break;
        };
        total += value * scale;
        parsed = true;
        text = &after[unit..];
    }
    if !parsed || !total.is_finite() {
        return None;
    }
    Duration::try_from_secs_f64(total).ok()
}

/// What an output item is, as far as toolwire cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Function,
    Custom,
    Reasoning,
    Message,
    /// A call OpenAI runs itself (web search, file search, code interpreter, MCP, tool
    /// search, image generation): a hosted call.
    Hosted,
    /// Any other item (an MCP approval request, a computer call, …): kept verbatim in
    /// `other_items`.
    Other,
}

impl Kind {
    fn of(item_type: Option<&str>) -> Self {
        match item_type {
            Some("function_call") => Self::Function,
            Some("custom_tool_call") => Self::Custom,
            Some("reasoning") => Self::Reasoning,
            Some("message") => Self::Message,
            Some(t) if hosted_item(t) => Self::Hosted,
            _ => Self::Other,
        }
    }

    fn wire(self) -> &'static str {
        match self {
            Self::Function => "function_call",
            Self::Custom => "custom_tool_call",
            Self::Reasoning => "reasoning",
            Self::Message => "message",
            Self::Hosted | Self::Other => "output",
        }
    }
}

/// One output item of the turn.
#[derive(Debug)]
struct ItemState {
    kind: Kind,
    /// The call's position in the turn (calls only).
    call: Option<usize>,
    /// Whether the call's `call_id` is known.
    has_call_id: bool,
    /// The call's arguments are final (its `.done` arrived): no more deltas.
    closed: bool,
    /// Text or reasoning deltas arrived for this item (else its `.done` item supplies them).
    streamed: bool,
    /// The hosted call's position in `hosted_calls` (hosted items only).
    hosted: Option<usize>,
}

/// The decoder of one turn.
#[derive(Debug)]
pub(crate) struct Decoder {
    turn: Assembler,
    /// Items by `output_index`.
    items: HashMap<i64, ItemState>,
    /// `output_index` by item id, for events that carry only `item_id`.
    ids: HashMap<String, i64>,
    /// Reasoning items (verbatim, from `output_item.done`) waiting for the item they precede.
    pending: Vec<Value>,
    /// Reasoning items that preceded the text, or trailed the turn.
    text_reasoning: Vec<Value>,
    /// The part (item, kind, index) of the last reasoning text, for `\n\n` between parts.
    reasoning_part: Option<(i64, u8, i64)>,
    /// The message item of the last text, for `\n\n` between message items.
    text_item: Option<i64>,
    /// Finished output items with no canonical form (an MCP approval request, …), verbatim.
    other: Vec<Value>,
    /// The last hosted call of each tool (`web_search`, `tool_search`, …), for its `*_output`
    /// item.
    hosted_by_tool: HashMap<String, usize>,
    refusal: String,
    unknown: u64,
    ended: bool,
}

impl Decoder {
    pub(crate) fn new() -> Self {
        Self {
            turn: Assembler::new(KIND),
            items: HashMap::new(),
            ids: HashMap::new(),
            pending: Vec::new(),
            text_reasoning: Vec::new(),
            reasoning_part: None,
            text_item: None,
            other: Vec::new(),
            hosted_by_tool: HashMap::new(),
            refusal: String::new(),
            unknown: 0,
            ended: false,
        }
    }

    /// The item an event is about: its `output_index`, else its `item_id`.
    fn key(&self, ev: &Event) -> Option<i64> {
        ev.output_index
            .filter(|i| *i >= 0)
            .or_else(|| ev.item_id.as_ref().and_then(|id| self.ids.get(id).copied()))
    }

    fn apply(&mut self, ty: &str, ev: Event, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        match ty {
            "response.output_item.added" => {
                let (index, item) = item_of(&ev, ty)?;
                self.item_added(index, item, out)
            }
            "response.output_item.done" => {
                let (index, item) = item_of(&ev, ty)?;
                self.item_done(index, item, out)
            }
            "response.function_call_arguments.delta" => {
                self.call_delta(&ev, Kind::Function, ty, out)
            }
            "response.custom_tool_call_input.delta" => self.call_delta(&ev, Kind::Custom, ty, out),
            "response.function_call_arguments.done" => {
                let index = self.known(&ev, Kind::Function, ty)?;
                self.close_call(index, ev.arguments.as_deref(), ty, out)?;
                self.complete(index, out);
                Ok(())
            }
            "response.custom_tool_call_input.done" => {
                let index = self.known(&ev, Kind::Custom, ty)?;
                self.close_call(index, ev.input.as_deref(), ty, out)?;
                self.complete(index, out);
                Ok(())
            }
            "response.output_text.delta" => {
                self.mark_streamed(&ev);
                let index = self.key(&ev).unwrap_or(-1);
                self.text(index, ev.delta.as_deref().unwrap_or_default(), out);
                Ok(())
            }
            "response.refusal.delta" => {
                self.mark_streamed(&ev);
                self.refusal
                    .push_str(ev.delta.as_deref().unwrap_or_default());
                Ok(())
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.mark_streamed(&ev);
                let index = self.key(&ev).unwrap_or(-1);
                let part = if ty == "response.reasoning_text.delta" {
                    (index, 1, ev.content_index.unwrap_or(0))
                } else {
                    (index, 0, ev.summary_index.unwrap_or(0))
                };
                self.reasoning(part, ev.delta.as_deref().unwrap_or_default(), out);
                Ok(())
            }
            "response.completed" | "response.incomplete" => {
                let response = ev.response.unwrap_or_default();
                self.terminal(&response, out)
            }
            "response.failed" => {
                let response = ev.response.unwrap_or_default();
                Err(stream_error(response.error.as_ref(), (None, None), data).into())
            }
            "error" => {
                let flat = (ev.code.as_deref(), ev.message.as_deref());
                Err(stream_error(ev.error.as_ref().filter(|e| e.is_object()), flat, data).into())
            }
            hosted
                if HOSTED_EVENTS.iter().any(|p| hosted.starts_with(p))
                    && hosted
                        .rsplit_once('.')
                        .is_some_and(|(_, s)| !s.contains("delta")) =>
            {
                // `response.web_search_call.searching` and the like: what the hosted call is
                // doing now, for a UI; the item itself carries the rest.
                let status = hosted.rsplit_once('.').map_or("", |(_, s)| s);
                let at = self
                    .key(&ev)
                    .and_then(|i| self.items.get(&i))
                    .and_then(|s| s.hosted);
                if let Some(at) = at
                    && !matches!(status, "completed" | "done")
                {
                    self.turn.hosted_done(at, None, status, out);
                }
                Ok(())
            }
            known
                if IGNORED.contains(&known)
                    || IGNORED_PREFIXES.iter().any(|p| known.starts_with(p)) =>
            {
                Ok(())
            }
            _ => {
                self.unknown += 1;
                Ok(())
            }
        }
    }

    fn mark_streamed(&mut self, ev: &Event) {
        if let Some(state) = self.key(ev).and_then(|i| self.items.get_mut(&i)) {
            state.streamed = true;
        }
    }

    /// A reasoning item's id and `encrypted_content`, as the stream's
    /// [`StreamEvent::ReasoningState`] (the item itself is kept verbatim).
    fn reasoning_state(&mut self, raw: &Value, out: &mut Vec<StreamEvent>) {
        let field = |key: &str| raw.get(key).and_then(Value::as_str);
        self.turn
            .reasoning_state(field("id"), field("encrypted_content"), out);
    }

    /// Appends reasoning text, with a blank line between parts (summary parts are paragraphs
    /// of their own).
    fn reasoning(&mut self, part: (i64, u8, i64), text: &str, out: &mut Vec<StreamEvent>) {
        if text.is_empty() {
            return;
        }
        if self.reasoning_part.is_some_and(|p| p != part) {
            self.turn.reasoning("\n\n", out);
        }
        self.reasoning_part = Some(part);
        self.turn.reasoning(text, out);
    }

    /// Appends text, with a blank line between message items (a `commentary` message and the
    /// `final_answer` one, say).
    fn text(&mut self, item: i64, text: &str, out: &mut Vec<StreamEvent>) {
        if text.is_empty() {
            return;
        }
        if self.text_item.is_some_and(|i| i != item) {
            self.turn.text("\n\n", out);
        }
        self.text_item = Some(item);
        self.turn.text(text, out);
    }

    fn item_added(&mut self, index: i64, raw: &Value, out: &mut Vec<StreamEvent>) -> Result<()> {
        if self.items.contains_key(&index) {
            // A repeated announcement of the same item adds nothing.
            return Ok(());
        }
        let item = read_item(raw, "response.output_item.added")?;
        let kind = Kind::of(item.r#type.as_deref());
        if let Some(id) = item.id.as_ref().filter(|id| !id.is_empty()) {
            self.ids.insert(id.clone(), index);
        }
        let mut state = ItemState {
            kind,
            call: None,
            has_call_id: false,
            closed: false,
            streamed: false,
            hosted: None,
        };
        match kind {
            Kind::Function | Kind::Custom => self.open_call(index, &item, &mut state, out)?,
            Kind::Message => self.text_reasoning.append(&mut self.pending),
            Kind::Hosted => state.hosted = Some(self.start_hosted(raw, out)),
            Kind::Reasoning => self.reasoning_state(raw, out),
            Kind::Other => {}
        }
        self.items.insert(index, state);
        Ok(())
    }

    /// Starts a hosted call from its item: a `*_output` item (`tool_search_output`) joins the
    /// call it answers (the last one of the same tool) instead.
    fn start_hosted(&mut self, raw: &Value, out: &mut Vec<StreamEvent>) -> usize {
        let ty = raw.get("type").and_then(Value::as_str).unwrap_or("");
        let (name, input, _) = hosted_fields(ty, raw);
        if let Some(tool) = ty.strip_suffix("_output")
            && let Some(&index) = self.hosted_by_tool.get(tool)
        {
            return index;
        }
        let id = raw.get("id").and_then(Value::as_str).unwrap_or("");
        let call = HostedCall::new(id, name.clone(), KIND.name()).with_input(input);
        let index = self.turn.start_hosted(call, out);
        if let Some(tool) = ty.strip_suffix("_call") {
            self.hosted_by_tool.insert(tool.to_owned(), index);
        }
        index
    }

    /// Starts a call: its name and id, the arguments it came with, and the reasoning items
    /// that preceded it (echoed back before it).
    fn open_call(
        &mut self,
        index: i64,
        item: &Item,
        state: &mut ItemState,
        out: &mut Vec<StreamEvent>,
    ) -> Result<()> {
        let Some(name) = item.name.as_deref().filter(|n| !n.is_empty()) else {
            return Err(Error::decode(
                KIND,
                format!("{} item at output_index {index}", state.kind.wire()),
                "the call has no name, so it cannot be run",
            ));
        };
        let call_id = item.call_id.as_deref().filter(|id| !id.is_empty());
        // A custom call's input is free text, kept as the model wrote it.
        let arguments = match state.kind {
            Kind::Custom => item.input.clone().unwrap_or_default(),
            _ => item
                .arguments_text()
                .map(std::borrow::Cow::into_owned)
                .unwrap_or_default(),
        };
        let position = self.turn.call_count();
        self.turn.fragment(
            0,
            Fragment {
                index: Some(index),
                id: call_id,
                name: Some(name),
                arguments: Some(&arguments),
            },
            out,
        );
        state.call = Some(position);
        state.has_call_id = call_id.is_some();
        if let Some(extra) = self.turn.call_extra(position) {
            if let Some(id) = item.id.as_ref().filter(|id| !id.is_empty()) {
                extra.insert(ITEM_ID.into(), Value::String(id.clone()));
            }
            if state.kind == Kind::Custom {
                extra.insert(CUSTOM_TOOL.into(), Value::Bool(true));
            }
            if !self.pending.is_empty() {
                let items = std::mem::take(&mut self.pending);
                extra.insert(REASONING_ITEMS.into(), Value::Array(items));
            }
        }
        let mut turn = serde_json::Map::new();
        if !self.text_reasoning.is_empty() {
            turn.insert(
                REASONING_ITEMS.into(),
                Value::Array(self.text_reasoning.clone()),
            );
        }
        self.turn.call_state(position, turn, out);
        Ok(())
    }

    /// The call an argument event is about; an event for an item never announced, or of
    /// another kind, is a decode error.
    fn known(&self, ev: &Event, kind: Kind, ty: &str) -> Result<i64> {
        let index = self
            .key(ev)
            .ok_or_else(|| Error::decode(KIND, ty, "no output_index or known item_id"))?;
        match self.items.get(&index) {
            Some(state) if state.kind == kind => Ok(index),
            Some(state) => Err(Error::decode(
                KIND,
                ty,
                format!(
                    "the item at output_index {index} is a {} item, not a {}",
                    state.kind.wire(),
                    kind.wire()
                ),
            )),
            None => Err(Error::decode(
                KIND,
                ty,
                format!("no output item was added at output_index {index}"),
            )),
        }
    }

    fn call_delta(
        &mut self,
        ev: &Event,
        kind: Kind,
        ty: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<()> {
        let index = self.known(ev, kind, ty)?;
        let delta = ev.delta.as_deref().unwrap_or_default();
        let Some(state) = self.items.get_mut(&index) else {
            return Ok(());
        };
        if state.closed {
            return Err(Error::decode(
                KIND,
                ty,
                format!("a delta after the arguments of output_index {index} were final"),
            ));
        }
        if delta.is_empty() {
            return Ok(());
        }
        self.push(index, delta, out);
        Ok(())
    }

    fn push(&mut self, index: i64, text: &str, out: &mut Vec<StreamEvent>) {
        self.turn.fragment(
            0,
            Fragment {
                index: Some(index),
                id: None,
                name: None,
                arguments: Some(text),
            },
            out,
        );
    }

    /// The call's arguments are final: `done` (the `.done` event's or the done item's text) is
    /// authoritative. Deltas that are a prefix of it are completed with the rest; deltas that
    /// disagree with it are a decode error (never a silent choice between the two).
    fn close_call(
        &mut self,
        index: i64,
        done: Option<&str>,
        ty: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<()> {
        let Some(state) = self.items.get_mut(&index) else {
            return Ok(());
        };
        if state.closed {
            return Ok(());
        }
        state.closed = true;
        let so_far = state
            .call
            .and_then(|p| self.turn.call_arguments(p))
            .unwrap_or_default();
        let rest = match done {
            None => String::new(),
            Some(done) if done.len() >= so_far.len() && done.starts_with(so_far) => {
                done[so_far.len()..].to_owned()
            }
            Some(_) => {
                return Err(Error::decode(
                    KIND,
                    ty,
                    format!(
                        "the final arguments of output_index {index} differ from the streamed deltas"
                    ),
                ));
            }
        };
        if !rest.is_empty() {
            self.push(index, &rest, out);
        }
        Ok(())
    }

    /// The wire marked the call at `index` finished: it is final now, unless its argument
    /// text stops inside a JSON value: OpenAI marks a call cut by `max_output_tokens` finished
    /// too, and only the turn's finish tells a cut (`truncated`) from text the model wrote so
    /// (`malformed`); such a call cannot run either way, so waiting costs nothing.
    fn complete(&mut self, index: i64, out: &mut Vec<StreamEvent>) {
        let Some(state) = self.items.get(&index) else {
            return;
        };
        let Some(position) = state.call else {
            return;
        };
        if state.kind == Kind::Function
            && self
                .turn
                .call_arguments(position)
                .is_some_and(stops_mid_json)
        {
            return;
        }
        self.turn.complete_call(position, out);
    }

    fn item_done(&mut self, index: i64, raw: &Value, out: &mut Vec<StreamEvent>) -> Result<()> {
        const WHAT: &str = "response.output_item.done";
        if !self.items.contains_key(&index) {
            // Never announced (a whole body, or a server that sends only finished items).
            self.item_added(index, raw, out)?;
        }
        let item = read_item(raw, WHAT)?;
        let Some(state) = self.items.get(&index) else {
            return Ok(());
        };
        let (kind, streamed, position, has_call_id) =
            (state.kind, state.streamed, state.call, state.has_call_id);
        match kind {
            Kind::Function | Kind::Custom => {
                let done = if kind == Kind::Custom {
                    item.input.clone()
                } else {
                    item.arguments_text().map(std::borrow::Cow::into_owned)
                };
                self.close_call(index, done.as_deref(), WHAT, out)?;
                if let Some(call_id) = item.call_id.as_deref().filter(|id| !id.is_empty())
                    && !has_call_id
                {
                    self.turn.fragment(
                        0,
                        Fragment {
                            index: Some(index),
                            id: Some(call_id),
                            ..Fragment::default()
                        },
                        out,
                    );
                }
                // An item id the announcement lacked (a call completed at its arguments'
                // `.done` keeps the id it was announced with).
                if let (Some(position), Some(id)) = (position, item.id.as_ref())
                    && !id.is_empty()
                    && let Some(extra) = self.turn.call_extra(position)
                {
                    extra
                        .entry(ITEM_ID)
                        .or_insert_with(|| Value::String(id.clone()));
                }
                // An item cut off by the end of the turn stays open: the finish decides.
                if item.status.as_deref() != Some("incomplete") {
                    self.complete(index, out);
                }
            }
            Kind::Reasoning => {
                if !streamed {
                    let summaries = Item::part_texts(&item.summary, "summary_text", "text");
                    for (i, text) in summaries.enumerate() {
                        self.reasoning((index, 0, i as i64), text, out);
                    }
                    let contents = Item::part_texts(&item.content, "reasoning_text", "text");
                    for (i, text) in contents.enumerate() {
                        self.reasoning((index, 1, i as i64), text, out);
                    }
                }
                self.reasoning_state(raw, out);
                self.pending.push(raw.clone());
            }
            Kind::Message => {
                if !streamed {
                    for text in Item::part_texts(&item.content, "output_text", "text") {
                        self.text(index, text, out);
                    }
                    for text in Item::part_texts(&item.content, "refusal", "refusal") {
                        self.refusal.push_str(text);
                    }
                }
            }
            Kind::Hosted => {
                let ty = item.r#type.as_deref().unwrap_or("");
                let (_, input, result) = hosted_fields(ty, raw);
                if let Some(at) = self.items.get(&index).and_then(|s| s.hosted) {
                    // Text that came before an item that arrived only at its end still came
                    // before it: `at` was set when it was announced.
                    let answer = ty.ends_with("_output");
                    if let Some(call) = self.turn.hosted_mut(at) {
                        if !answer {
                            call.input = input;
                        }
                        call.blocks.push(raw.clone());
                    }
                    let status = match item.status.as_deref() {
                        Some("failed") => "failed",
                        Some("incomplete") => "incomplete",
                        _ => "completed",
                    };
                    self.turn.hosted_done(at, result, status, out);
                }
            }
            Kind::Other => self.other.push(raw.clone()),
        }
        if let Some(state) = self.items.get_mut(&index) {
            state.streamed = true;
        }
        Ok(())
    }

    /// Puts what the turn collected besides text and calls on the response.
    fn settle_extras(&mut self) {
        self.text_reasoning.append(&mut self.pending);
        if !self.text_reasoning.is_empty() {
            let items = std::mem::take(&mut self.text_reasoning);
            self.turn.set_extra(REASONING_ITEMS, Value::Array(items));
        }
        if !self.refusal.is_empty() {
            let refusal = std::mem::take(&mut self.refusal);
            self.turn.set_extra(REFUSAL, Value::String(refusal));
        }
        if !self.other.is_empty() {
            let items = std::mem::take(&mut self.other);
            self.turn.set_extra(OTHER_ITEMS, Value::Array(items));
        }
        if self.unknown > 0 {
            self.turn
                .set_extra(UNKNOWN_EVENTS, Value::from(self.unknown));
        }
    }

    /// `response.completed` / `response.incomplete`, or a whole body's status.
    fn terminal(&mut self, response: &ResponseObject, out: &mut Vec<StreamEvent>) -> Result<()> {
        if let Some(u) = &response.usage {
            self.turn.usage(usage(u), out);
            self.turn.raw_usage(u.raw.clone());
        }
        if self.items.is_empty() {
            // A stream that sent only its terminal event: its output is the whole answer.
            for (i, item) in response.output.iter().enumerate() {
                self.item_done(i64::try_from(i).unwrap_or(i64::MAX), item, out)?;
            }
        }
        let status = response.status.as_deref().filter(|s| !s.is_empty());
        let reason = response
            .incomplete_details
            .as_ref()
            .and_then(|d| d.reason.as_deref())
            .filter(|r| !r.is_empty());
        self.settle_extras();
        self.turn
            .finish(finish_reason(status, reason), reason.or(status), out);
        self.ended = true;
        Ok(())
    }
}

/// The `output_index` and item of an `output_item` event.
fn item_of<'e>(ev: &'e Event, ty: &str) -> Result<(i64, &'e Value)> {
    let index = ev
        .output_index
        .filter(|i| *i >= 0)
        .ok_or_else(|| Error::decode(KIND, ty, "no output_index"))?;
    let item = ev
        .item
        .as_ref()
        .filter(|i| i.is_object())
        .ok_or_else(|| Error::decode(KIND, ty, "no item object"))?;
    Ok((index, item))
}

fn read_item(raw: &Value, what: &str) -> Result<Item> {
    Item::deserialize(raw).map_err(|e| Error::decode(KIND, what, e))
}

impl StreamDecoder for Decoder {
    fn feed(&mut self, event: Option<&str>, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let data = data.trim();
        // No `[DONE]` on this wire; a proxy that adds one ends nothing early.
        if data.is_empty() || data == "[DONE]" || self.ended {
            return Ok(());
        }
        let ev: Event =
            serde_json::from_str(data).map_err(|e| Error::decode(KIND, "stream payload", e))?;
        let Some(ty) = ev
            .r#type
            .clone()
            .filter(|t| !t.is_empty())
            .or_else(|| event.filter(|e| !e.is_empty()).map(str::to_owned))
        else {
            return Err(Error::decode(
                KIND,
                "stream payload",
                "no event `type`: not a Responses API event (did the stream switch format?)",
            ));
        };
        match self.apply(&ty, ev, data, out) {
            Err(Error::Api(mut api)) => {
                self.settle_extras();
                api.partial = Some(Box::new(self.turn.interrupt()));
                Err(Error::Api(api))
            }
            other => other,
        }
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<ChatResponse> {
        if !self.ended {
            self.settle_extras();
        }
        self.turn.end(out)
    }
}

/// A whole (non-streamed) body: a response object, or an error body.
pub(crate) fn decode_body(body: &[u8]) -> Result<ChatResponse> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| Error::decode(KIND, "response body", e))?;
    let Value::Object(map) = &value else {
        return Err(Error::decode(KIND, "response body", "not a JSON object"));
    };
    let error = map.get("error").filter(|e| !e.is_null());
    if error.is_some() && !map.contains_key("output") {
        return Err(api_error(None, body).into());
    }
    // A response object's `output` is a list of items (DashScope's and Bedrock Converse's
    // `output` are objects).
    if !map.get("output").is_some_and(Value::is_array) {
        return Err(foreign_body(KIND, super::BODY.fields));
    }
    let response =
        ResponseObject::deserialize(&value).map_err(|e| Error::decode(KIND, "response body", e))?;
    if response.status.as_deref() == Some("failed") {
        let text = String::from_utf8_lossy(body);
        return Err(stream_error(response.error.as_ref(), (None, None), &text).into());
    }
    let mut decoder = Decoder::new();
    let mut sink = Vec::new();
    for (i, item) in response.output.iter().enumerate() {
        decoder.item_done(i64::try_from(i).unwrap_or(i64::MAX), item, &mut sink)?;
    }
    decoder.terminal(&response, &mut sink)?;
    decoder.turn.end(&mut sink)
}

/// An error body: `{"error": {"message", "type", "param", "code"}}` (code, else type, as the
/// code), or any shape [`generic_error`] reads.
pub(crate) fn api_error(status: Option<u16>, body: &[u8]) -> ApiError {
    let mut api = generic_error(KIND, status, body);
    api.retry_after = retry_hint(&api.message);
    api
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ArgumentsErrorKind;

    fn run(events: &[&str]) -> (Vec<StreamEvent>, Result<ChatResponse>) {
        let mut d = Decoder::new();
        let mut out = Vec::new();
        for e in events {
            if let Err(e) = d.feed(None, e, &mut out) {
                return (out, Err(e));
            }
        }
        let r = d.finish(&mut out);
        (out, r)
    }

    const ADDED: &str = r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","arguments":"","call_id":"call_1","name":"f"}}"#;
    const COMPLETED: &str = r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":3,"output_tokens":4}}}"#;

    #[test]
    fn a_call_completes_at_its_done_event_not_at_the_end() {
        let (events, r) = run(&[
            ADDED,
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"{\"a\":"}"#,
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"1}"}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"a\":1}","call_id":"call_1","name":"f"}}"#,
            r#"{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_2","type":"function_call","arguments":"","call_id":"call_2","name":"g"}}"#,
            COMPLETED,
        ]);
        let r = r.unwrap();
        // Deltas keyed only by item_id reach their call.
        assert_eq!(r.tool_calls[0].raw_arguments, "{\"a\":1}");
        let complete = events
            .iter()
            .position(|e| matches!(e, StreamEvent::ToolCallComplete { index: 0, .. }))
            .unwrap();
        let second = events
            .iter()
            .position(|e| matches!(e, StreamEvent::ToolCallStarted { index: 1, .. }))
            .unwrap();
        assert!(complete < second, "{events:?}");
        // The second call never got its done: completed at the end, from empty text.
        assert!(r.tool_calls[1].is_complete());
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    }

    #[test]
    fn finished_items_without_deltas_carry_everything() {
        let (_, r) = run(&[
            r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"A"},{"type":"summary_text","text":"B"}]}}"#,
            r#"{"type":"response.output_item.done","output_index":1,"item":{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"Hi"},{"type":"refusal","refusal":"no"}]}}"#,
            r#"{"type":"response.output_item.done","output_index":2,"item":{"id":"fc_1","type":"function_call","arguments":"{}","name":"f"}}"#,
            COMPLETED,
        ]);
        let r = r.unwrap();
        assert_eq!(r.reasoning.as_deref(), Some("A\n\nB"));
        assert_eq!(r.text.as_deref(), Some("Hi"));
        assert_eq!(r.extra[REFUSAL], "no");
        // The reasoning item preceded the text; the call without call_id gets a minted id.
        assert_eq!(r.extra[REASONING_ITEMS][0]["id"], "rs_1");
        assert!(r.tool_calls[0].has_synthetic_id());
        assert_eq!(r.tool_calls[0].extra[ITEM_ID], "fc_1");
    }

    #[test]
    fn message_items_are_paragraphs_and_other_items_are_kept() {
        let (_, r) = run(&[
            r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"m1","type":"message","phase":"commentary","content":[]}}"#,
            r#"{"type":"response.output_text.delta","output_index":0,"item_id":"m1","delta":"Got it."}"#,
            r#"{"type":"response.output_item.done","output_index":1,"item":{"id":"ws","type":"web_search_call","status":"completed"}}"#,
            r#"{"type":"response.output_item.added","output_index":2,"item":{"id":"m2","type":"message","phase":"final_answer","content":[]}}"#,
            r#"{"type":"response.output_text.delta","output_index":2,"item_id":"m2-rotated","delta":"Here."}"#,
            COMPLETED,
        ]);
        let r = r.unwrap();
        assert_eq!(r.text.as_deref(), Some("Got it.\n\nHere."));
        assert_eq!(r.hosted_calls[0].blocks[0]["type"], "web_search_call");
        assert_eq!(r.hosted_calls[0].name, "web_search");
        assert_eq!(r.hosted_calls[0].at, "Got it.".len());
        assert!(!r.extra.contains_key(OTHER_ITEMS));
    }

    #[test]
    fn a_call_id_that_arrives_with_the_done_item_is_used() {
        let (_, r) = run(&[
            r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","name":"f"}}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","arguments":"{}","call_id":"call_late","name":"f"}}"#,
            COMPLETED,
        ]);
        let call = &r.unwrap().tool_calls[0];
        assert_eq!(call.id, "call_late");
        assert!(!call.has_synthetic_id());
    }

    #[test]
    fn disagreeing_or_late_arguments_are_errors() {
        let delta = r#"{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{\"a\":1"}"#;
        let done = r#"{"type":"response.function_call_arguments.done","output_index":0,"arguments":"{\"b\":2}"}"#;
        let (_, r) = run(&[ADDED, delta, done]);
        let err = r.unwrap_err();
        assert!(err.to_string().contains("differ"), "{err}");
        let done = r#"{"type":"response.function_call_arguments.done","output_index":0,"arguments":"{\"a\":1}"}"#;
        let (_, r) = run(&[ADDED, delta, done, delta]);
        assert!(r.unwrap_err().to_string().contains("after the arguments"));
        let (_, r) = run(&[delta]);
        assert!(r.unwrap_err().to_string().contains("no output item"));
        // A done text that extends the deltas completes them.
        let (events, r) = run(&[ADDED, delta, done, COMPLETED]);
        assert_eq!(r.unwrap().tool_calls[0].raw_arguments, "{\"a\":1}");
        assert!(events.contains(&StreamEvent::ToolCallDelta {
            index: 0,
            fragment: "}".into()
        }));
    }

    #[test]
    fn error_events_flat_or_nested_and_failed_responses() {
        let (_, r) = run(&[
            r#"{"type":"response.output_text.delta","output_index":0,"delta":"Hi"}"#,
            r#"{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null}"#,
        ]);
        let err = r.unwrap_err();
        let api = err.api().unwrap();
        assert_eq!(
            (api.status, api.code.as_deref(), api.message.as_str()),
            (None, Some("rate_limit_exceeded"), "slow down")
        );
        assert_eq!(err.partial().unwrap().text.as_deref(), Some("Hi"));
        let (_, r) = run(&[
            r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}"#,
        ]);
        let err = r.unwrap_err();
        assert_eq!(err.api().unwrap().code.as_deref(), Some("server_error"));
        let body = br#"{"id":"r","object":"response","status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}"#;
        assert_eq!(
            decode_body(body).unwrap_err().api().unwrap().message,
            "boom"
        );
        let body = br#"{"error":{"message":"bad key","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
        assert_eq!(
            decode_body(body)
                .unwrap_err()
                .api()
                .unwrap()
                .code
                .as_deref(),
            Some("invalid_api_key")
        );
        assert!(matches!(
            decode_body(br#"{"id":"r"}"#),
            Err(Error::Decode { .. })
        ));
    }

    #[test]
    fn rate_limit_messages_carry_the_wait() {
        let ms = Duration::from_millis;
        assert_eq!(
            retry_hint("Please try again in 300ms. Visit …"),
            Some(ms(300))
        );
        assert_eq!(retry_hint("Please try again in 11.122s."), Some(ms(11_122)));
        assert_eq!(
            retry_hint("Please try again in 1m9.696s."),
            Some(ms(69_696))
        );
        assert_eq!(retry_hint("Please try again in 20s"), Some(ms(20_000)));
        assert_eq!(retry_hint("Please try again in a while."), None);
        assert_eq!(retry_hint("try again in 1e999s"), None);
        assert_eq!(retry_hint("no hint"), None);
        let body = br#"{"error":{"message":"Rate limit reached. Please try again in 1.5s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;
        assert_eq!(api_error(Some(429), body).retry_after, Some(ms(1_500)));
    }

    #[test]
    fn a_stream_of_only_its_terminal_event_decodes_its_output() {
        let (_, r) = run(&[
            r#"{"type":"response.completed","response":{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"Done."}]}]}}"#,
            "[DONE]",
            r#"{"type":"response.output_text.delta","output_index":0,"delta":"ignored after the end"}"#,
        ]);
        assert_eq!(r.unwrap().text.as_deref(), Some("Done."));
    }

    #[test]
    fn statuses_map_to_finish_reasons() {
        assert_eq!(finish_reason(Some("completed"), None), FinishReason::Stop);
        assert_eq!(finish_reason(None, None), FinishReason::Stop);
        assert_eq!(
            finish_reason(Some("incomplete"), Some("max_output_tokens")),
            FinishReason::Length
        );
        assert_eq!(
            finish_reason(Some("incomplete"), Some("content_filter")),
            FinishReason::ContentFilter
        );
        assert_eq!(
            finish_reason(Some("cancelled"), None),
            FinishReason::Other("cancelled".into())
        );
        let (_, r) = run(&[
            ADDED,
            r#"{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{\"a\""}"#,
            r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}}"#,
        ]);
        let r = r.unwrap();
        assert_eq!(r.finish_reason, FinishReason::ContentFilter);
        assert_eq!(r.raw_finish_reason.as_deref(), Some("content_filter"));
        assert_eq!(
            r.tool_calls[0].error.as_ref().unwrap().kind,
            ArgumentsErrorKind::Truncated
        );
    }

    #[test]
    fn custom_input_is_kept_as_written() {
        let (events, r) = run(&[
            r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"ctc_1","type":"custom_tool_call","call_id":"c","name":"sh","input":""}}"#,
            r#"{"type":"response.custom_tool_call_input.delta","output_index":0,"delta":"echo \"hi"}"#,
            r#"{"type":"response.custom_tool_call_input.delta","output_index":0,"delta":"\"\n"}"#,
            r#"{"type":"response.custom_tool_call_input.done","output_index":0,"input":"echo \"hi\"\n"}"#,
            COMPLETED,
        ]);
        let call = &r.unwrap().tool_calls[0];
        assert_eq!(call.raw_arguments, "echo \"hi\"\n");
        assert_eq!(call.arguments.as_ref().unwrap()["input"], "echo \"hi\"\n");
        assert_eq!(call.extra[CUSTOM_TOOL], true);
        let streamed: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallDelta { fragment, .. } => Some(fragment.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(streamed, call.raw_arguments);
        let fragments: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallDelta { fragment, .. } => Some(fragment.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(fragments, ["echo \"hi", "\"\n"]);
    }

    #[test]
    fn an_end_mark_on_cut_text_waits_for_the_finish() {
        let delta = r#"{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{\"a\":\"x"}"#;
        let done = r#"{"type":"response.function_call_arguments.done","output_index":0,"arguments":"{\"a\":\"x"}"#;
        let item = |status: &str| {
            format!(
                r#"{{"type":"response.output_item.done","output_index":0,"item":{{"id":"fc_1","type":"function_call","status":"{status}","arguments":"{{\"a\":\"x","call_id":"call_1","name":"f"}}}}"#
            )
        };
        let incomplete = r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}"#;
        let kind = |r: Result<ChatResponse>| r.unwrap().tool_calls[0].error.as_ref().unwrap().kind;
        // Cut by the token limit, whatever end marks the cut item got: truncated.
        for status in ["incomplete", "completed", "in_progress"] {
            let (events, r) = run(&[ADDED, delta, done, &item(status), incomplete]);
            assert_eq!(kind(r), ArgumentsErrorKind::Truncated, "{status}");
            let completes = events
                .iter()
                .filter(|e| matches!(e, StreamEvent::ToolCallComplete { .. }))
                .count();
            assert_eq!(completes, 1);
        }
        // The same text in a turn that ended normally is what the model wrote: malformed.
        let (_, r) = run(&[ADDED, delta, done, &item("completed"), COMPLETED]);
        assert_eq!(kind(r), ArgumentsErrorKind::Malformed);
        // A whole body: an item whose arguments are cut, whatever its status.
        for status in ["", r#""status":"completed","#, r#""status":"in_progress","#] {
            let body = format!(
                r#"{{"status":"incomplete","incomplete_details":{{"reason":"max_output_tokens"}},"output":[{{"type":"function_call",{status}"arguments":"{{\"a\":\"x","call_id":"c","name":"f"}}]}}"#
            );
            assert_eq!(
                kind(decode_body(body.as_bytes())),
                ArgumentsErrorKind::Truncated
            );
        }
    }

    #[test]
    fn custom_calls_are_their_text_in_bodies_and_cut_turns() {
        let body = br#"{"status":"completed","output":[{"id":"ctc_1","type":"custom_tool_call","call_id":"c","name":"sql","input":"SELECT \"a\"\n"}]}"#;
        let r = decode_body(body).unwrap();
        let call = &r.tool_calls[0];
        assert_eq!(call.raw_arguments, "SELECT \"a\"\n");
        assert_eq!(call.arguments.as_ref().unwrap()["input"], "SELECT \"a\"\n");
        assert!(call.is_complete() && call.is_free_form());
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        // Open when the token limit cut the turn: truncated, its text kept.
        let (_, r) = run(&[
            r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"ctc_1","type":"custom_tool_call","call_id":"c","name":"sql","input":""}}"#,
            r#"{"type":"response.custom_tool_call_input.delta","output_index":0,"delta":"SELECT na"}"#,
            r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}"#,
        ]);
        let call = &r.unwrap().tool_calls[0];
        assert_eq!(call.raw_arguments, "SELECT na");
        assert_eq!(call.arguments, None);
        assert_eq!(
            call.error.as_ref().unwrap().kind,
            ArgumentsErrorKind::Truncated
        );
    }

    /// Random Responses-shaped event sequences (announcements, deltas, `.done` events, finished
    /// items, terminal and error events, in any order, with hostile values): decoding never
    /// panics, and whatever decodes tells one story: each call's deltas add up to its
    /// `raw_arguments`, it completes once, after its last delta, and before `Finish`.
    #[test]
    fn random_event_sequences_decode_consistently() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
        use serde_json::json;

        let index = prop_oneof![
            4 => Just(json!(0)),
            4 => Just(json!(1)),
            1 => Just(json!(-1)),
            1 => Just(json!("1")),
        ];
        let text = "[{}\"\\\\a:,\u{e9}\u{4e2d} ]{0,6}".prop_map(Value::String);
        let kind = prop_oneof![
            4 => Just("function_call"),
            2 => Just("custom_tool_call"),
            1 => Just("message"),
            1 => Just("reasoning"),
            1 => Just("web_search_call"),
        ];
        let present = |v: &'static str| prop_oneof![4 => Just(Some(v)), 1 => Just(None)];
        // A final text is often absent (then nothing is checked against the deltas).
        let final_text = prop_oneof![2 => Just(Value::Null), 1 => text.clone()];
        let item = (kind, present("f"), present("c1"), final_text.clone()).prop_map(
            |(kind, name, call_id, args)| {
                json!({"type": kind, "id": "it", "name": name, "call_id": call_id,
                       "arguments": args, "input": args,
                       "content": [{"type": "output_text", "text": "t"}],
                       "summary": [{"type": "summary_text", "text": "s"}]})
            },
        );
        let ty = prop_oneof![
            3 => Just("response.output_item.added"),
            2 => Just("response.output_item.done"),
            3 => Just("response.function_call_arguments.delta"),
            2 => Just("response.function_call_arguments.done"),
            1 => Just("response.custom_tool_call_input.delta"),
            1 => Just("response.custom_tool_call_input.done"),
            1 => Just("response.output_text.delta"),
            1 => Just("response.reasoning_summary_text.delta"),
            2 => Just("response.completed"),
            1 => Just("response.incomplete"),
            1 => Just("error"),
            1 => Just("response.mystery"),
        ];
        let event = (ty, index, item, text, final_text).prop_map(|(ty, index, item, text, fin)| {
            json!({"type": ty, "output_index": index, "item_id": "it", "item": item,
                   "delta": text, "arguments": fin, "input": fin,
                   "response": {"status": "incomplete",
                                "incomplete_details": {"reason": "max_output_tokens"}},
                   "message": "boom"})
            .to_string()
        });
        let config = Config {
            cases: 1024,
            failure_persistence: None,
            ..Config::default()
        };
        let mut runner =
            TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
        runner
            .run(&prop::collection::vec(event, 0..12), |events| {
                let refs: Vec<&str> = events.iter().map(String::as_str).collect();
                let (out, result) = run(&refs);
                let Ok(r) = result else { return Ok(()) };
                let mut raw = vec![String::new(); r.tool_calls.len()];
                let mut done = vec![false; r.tool_calls.len()];
                for e in &out {
                    match e {
                        StreamEvent::ToolCallDelta { index, fragment } => {
                            prop_assert!(!done[*index], "delta after completion: {events:?}");
                            raw[*index].push_str(fragment);
                        }
                        StreamEvent::ToolCallComplete { index, call } => {
                            prop_assert!(!done[*index], "completed twice: {events:?}");
                            prop_assert_eq!(call, &r.tool_calls[*index]);
                            done[*index] = true;
                        }
                        StreamEvent::Finish { .. } => {
                            prop_assert!(done.iter().all(|d| *d), "{events:?}");
                        }
                        _ => {}
                    }
                }
                for (call, raw) in r.tool_calls.iter().zip(&raw) {
                    prop_assert_eq!(&call.raw_arguments, raw, "{:?}", events);
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
