//! The sans-IO codec of one realtime session: canonical configuration, text and results in,
//! client events out; server events in, [`RealtimeEvent`]s out. No IO: the
//! [`session`](super::session) (or a replay, or a test) moves the events.

use serde_json::Value;

use super::dialect::{self, RealtimeDialect};
use super::gemini_live;
use super::model::{RealtimeEvent, RealtimeKind, SessionConfig, SessionStats};
use super::state::State;
use crate::error::{Error, Result};
use crate::provider::Dropped;
use crate::types::{ToolChoice, ToolDefinition, ToolResult};

/// Close codes that end a session normally (not an error): normal closure, going away, no
/// status given.
const NORMAL_CLOSES: [u16; 3] = [1000, 1001, 1005];

/// One realtime session's translation state.
///
/// Every method that produces client events returns the events due now; feeding a server
/// event can make more due (held results, a deferred `response.create`), which
/// [`RealtimeCodec::take_outgoing`] returns. Only one response is active at a time: results
/// wait until the response that made their calls is done and all its calls are answered, then
/// go out together, followed by one `response.create` when no response is active.
///
/// ```
/// use serde_json::json;
/// use toolwire::realtime::{RealtimeCodec, RealtimeEvent, RealtimeKind, SessionConfig};
/// use toolwire::{ToolDefinition, ToolResult};
///
/// let mut codec = RealtimeCodec::new(RealtimeKind::OpenAiRealtime);
/// let tool = ToolDefinition::new("get_weather", "Weather in a city")?;
/// let setup = codec.configure(&SessionConfig::new("gpt-realtime", vec![tool]))?;
/// assert_eq!(setup[0]["session"]["tools"][0]["name"], "get_weather");
///
/// let mut out = Vec::new();
/// for event in [
///     json!({"type": "response.created", "response": {"id": "resp_1"}}),
///     json!({"type": "response.function_call_arguments.delta", "response_id": "resp_1",
///            "call_id": "call_1", "delta": "{\"city\":"}),
///     json!({"type": "response.function_call_arguments.delta", "response_id": "resp_1",
///            "call_id": "call_1", "delta": "\"Paris\"}"}),
///     json!({"type": "response.function_call_arguments.done", "response_id": "resp_1",
///            "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}),
/// ] {
///     codec.feed(event, &mut out);
/// }
/// let call = out.iter().find_map(|e| match e {
///     RealtimeEvent::CallReady { call, .. } => Some(call.clone()),
///     _ => None,
/// }).unwrap();
/// assert_eq!(call.arguments, Some(json!({"city": "Paris"})));
///
/// // The result waits for the response to end, then goes out with one `response.create`.
/// assert!(codec.results(&[ToolResult::ok(&call, json!({"temp_c": 18}))])?.is_empty());
/// codec.feed(json!({"type": "response.done", "response": {"id": "resp_1", "status": "completed"}}), &mut out);
/// let sent = codec.take_outgoing();
/// assert_eq!(sent[0]["item"]["call_id"], "call_1");
/// assert_eq!(sent[1]["type"], "response.create");
/// # Ok::<(), toolwire::Error>(())
/// ```
#[derive(Debug)]
pub struct RealtimeCodec {
    kind: RealtimeKind,
    dialect: Option<&'static RealtimeDialect>,
    config: SessionConfig,
    /// The session's instructions as sent so far (dialects that take user text there).
    instructions: String,
    state: State,
    closed: bool,
    /// Gemini Live: the setup went out and `setupComplete` has not come back; other client
    /// events wait (the Live API asks clients to wait for it).
    awaiting_setup: bool,
    /// The settings the last configuration left out (it allowed drops).
    dropped: Vec<Dropped>,
}

impl RealtimeCodec {
    /// A codec for `kind`.
    pub fn new(kind: RealtimeKind) -> Self {
        Self {
            kind,
            dialect: kind.dialect(),
            config: SessionConfig::default(),
            instructions: String::new(),
            state: State::new(kind.provider()),
            closed: false,
            awaiting_setup: false,
            dropped: Vec::new(),
        }
    }

    /// A codec for a custom OpenAI-like dialect (say, OpenAI's with one field changed).
    pub fn with_dialect(dialect: &'static RealtimeDialect) -> Self {
        Self {
            dialect: Some(dialect),
            ..Self::new(dialect.kind)
        }
    }

    /// Which dialect.
    pub fn kind(&self) -> RealtimeKind {
        self.kind
    }

    /// The configuration last sent.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    /// The settings the last [`RealtimeCodec::configure`] left out because the dialect cannot
    /// carry them and the configuration allowed drops (`drop_unsupported`), each with why;
    /// empty when nothing was dropped.
    pub fn dropped(&self) -> &[Dropped] {
        &self.dropped
    }

    /// The events that configure the session (`session.update`, Gemini's `setup`).
    pub fn configure(&mut self, config: &SessionConfig) -> Result<Vec<Value>> {
        let ((event, dropped), names) = match self.dialect {
            Some(d) => {
                let names = dialect::names(d, &config.tools)?;
                (dialect::configure(d, config, &names)?, names)
            }
            None => {
                let names = gemini_live::names(&config.tools)?;
                (gemini_live::configure(config, &names)?, names)
            }
        };
        self.dropped = dropped;
        self.config = config.clone();
        self.instructions = config.instructions.clone().unwrap_or_default();
        self.state.names = names;
        self.state.outbox.push_front(event);
        let due = self.take_outgoing();
        self.awaiting_setup = self.dialect.is_none();
        Ok(due)
    }

    /// The event that replaces the tools mid-session. Gemini Live cannot
    /// ([`Error::Unsupported`]): its tools are fixed at setup.
    pub fn update_tools(
        &mut self,
        tools: Vec<ToolDefinition>,
        choice: Option<ToolChoice>,
    ) -> Result<Vec<Value>> {
        let Some(d) = self.dialect else {
            return Err(Error::unsupported(
                self.kind.provider(),
                "Gemini Live fixes its tools at setup; they cannot change mid-session",
            ));
        };
        let mut config = self.config.clone();
        config.tools = tools;
        config.tool_choice = choice;
        let names = dialect::names(d, &config.tools)?;
        let event = dialect::update_tools(d, &config, &names)?;
        self.config = config;
        self.state.names = names;
        self.state.outbox.push_back(event);
        Ok(self.take_outgoing())
    }

    /// The events that send a user's text and ask for a response.
    pub fn user_text(&mut self, text: &str) -> Result<Vec<Value>> {
        match self.dialect {
            Some(d) => {
                if d.text_input == dialect::TextInput::Instructions {
                    if !self.instructions.is_empty() {
                        self.instructions.push_str("\n\n");
                    }
                    self.instructions.push_str(text);
                }
                let event = dialect::user_text(d, text, &self.instructions);
                self.state.outbox.push_back(event);
                self.state.want_response = true;
            }
            None => self.state.outbox.push_back(gemini_live::user_text(text)),
        }
        Ok(self.take_outgoing())
    }

    /// The event that cancels the active response (none when no response is active); its
    /// later events never complete a call. Gemini Live has no such event
    /// ([`Error::Unsupported`]).
    pub fn cancel_response(&mut self) -> Result<Vec<Value>> {
        if self.dialect.is_none() {
            return Err(Error::unsupported(
                self.kind.provider(),
                "Gemini Live has no event to cancel a response",
            ));
        }
        if let Some(open) = self.state.open.as_mut() {
            open.cancelled = true;
            self.state
                .outbox
                .push_back(serde_json::json!({"type": "response.cancel"}));
        }
        Ok(self.take_outgoing())
    }

    /// Results for calls handed out as [`RealtimeEvent::CallReady`]; returns the events due
    /// now (results are held until their siblings are answered and their response is done).
    /// A result for a call that awaits none is an [`Error::Input`] naming it, and nothing is
    /// taken; results for calls the server cancelled are dropped.
    pub fn results(&mut self, results: &[ToolResult]) -> Result<Vec<Value>> {
        self.state.accept(results)?;
        self.release();
        Ok(self.take_outgoing())
    }

    /// One server event (a JSON object).
    pub fn feed(&mut self, event: Value, out: &mut Vec<RealtimeEvent>) {
        if self.closed {
            return;
        }
        self.state.stats.server_events += 1;
        match self.dialect {
            Some(d) => dialect::feed(d, &mut self.state, event, out),
            None => {
                if event.get("setupComplete").is_some() {
                    self.awaiting_setup = false;
                }
                gemini_live::feed(&mut self.state, event, out);
            }
        }
        self.state.enforce_limit(out);
        self.release();
    }

    /// One server frame as received: a JSON object is fed as an event; anything else is kept
    /// as [`RealtimeEvent::Bytes`] and counted.
    pub fn feed_frame(&mut self, frame: &[u8], out: &mut Vec<RealtimeEvent>) {
        match serde_json::from_slice::<Value>(frame) {
            Ok(v @ Value::Object(_)) => self.feed(v, out),
            _ => {
                self.state.stats.raw_frames += 1;
                out.push(RealtimeEvent::Bytes(frame.to_vec()));
            }
        }
    }

    /// A client event sent by someone else (a recorded session being replayed): what it does
    /// to the session (a cancel, a result, a response request) is taken into account.
    pub fn observe_client(&mut self, event: &Value) {
        self.state.stats.client_events += 1;
        let state = &mut self.state;
        if self.dialect.is_none() {
            let responses = event
                .get("toolResponse")
                .and_then(|t| t.get("functionResponses"))
                .and_then(Value::as_array);
            for r in responses.into_iter().flatten() {
                let id = r.get("id").and_then(Value::as_str);
                let name = r.get("name").and_then(Value::as_str);
                state.answered(id, name);
            }
            return;
        }
        match event.get("type").and_then(Value::as_str) {
            Some("response.cancel") => {
                if let Some(open) = state.open.as_mut() {
                    open.cancelled = true;
                }
            }
            Some("response.create") => {
                state.requested = true;
                state.want_response = false;
            }
            Some("conversation.item.create") => {
                let item = event.get("item").unwrap_or(&Value::Null);
                if item.get("type").and_then(Value::as_str) == Some("function_call_output") {
                    state.answered(item.get("call_id").and_then(Value::as_str), None);
                }
            }
            _ => {}
        }
    }

    /// The socket closed: an open response is cut (its open calls `truncated`, never run); a
    /// close code other than a normal one is an error (Gemini Live reports errors this way).
    pub fn close(&mut self, code: Option<u16>, reason: &str, out: &mut Vec<RealtimeEvent>) {
        if self.closed {
            return;
        }
        self.closed = true;
        if let Some(code) = code.filter(|c| !NORMAL_CLOSES.contains(c)) {
            self.state.stats.error_events += 1;
            out.push(RealtimeEvent::Error(gemini_live::close_error(
                self.kind, code, reason,
            )));
        }
        self.state.end(None, None, out);
        out.push(RealtimeEvent::Closed {
            code,
            reason: reason.to_owned(),
        });
    }

    /// Client events due now, in order.
    pub fn take_outgoing(&mut self) -> Vec<Value> {
        if self.awaiting_setup {
            return Vec::new();
        }
        let state = &mut self.state;
        let mut due: Vec<Value> = state.outbox.drain(..).collect();
        if self.dialect.is_some() && state.want_response && state.open.is_none() && !state.requested
        {
            due.push(serde_json::json!({"type": "response.create"}));
            state.want_response = false;
            state.requested = true;
        }
        state.stats.client_events += due.len();
        due
    }

    /// What the session saw so far.
    pub fn stats(&self) -> SessionStats {
        self.state.stats
    }

    /// Ids of the calls waiting for their results, in the order they completed.
    pub fn awaiting(&self) -> Vec<String> {
        self.state.awaiting.iter().map(|a| a.id.clone()).collect()
    }

    /// Whether a response is being generated.
    pub fn is_responding(&self) -> bool {
        self.state.open.is_some()
    }

    /// Whether the socket closed.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Moves held results whose group is complete to the outbox.
    fn release(&mut self) {
        let by_batch = self.dialect.is_none();
        for group in self.state.releasable(by_batch) {
            match self.dialect {
                Some(d) => {
                    for held in &group {
                        self.state.outbox.push_back(dialect::result_item(d, held));
                    }
                    self.state.want_response = true;
                }
                None => self
                    .state
                    .outbox
                    .push_back(gemini_live::tool_response(&group)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::types::{ArgumentsErrorKind, ChatResponse, FinishReason, ToolCall};

    fn ready(out: &[RealtimeEvent]) -> Vec<ToolCall> {
        out.iter()
            .filter_map(|e| match e {
                RealtimeEvent::CallReady { call, .. } => Some(call.clone()),
                _ => None,
            })
            .collect()
    }

    fn types(events: &[Value]) -> Vec<&str> {
        events
            .iter()
            .map(|e| e["type"].as_str().unwrap_or("?"))
            .collect()
    }

    #[test]
    fn response_create_waits_for_the_active_response() {
        let mut c = RealtimeCodec::new(RealtimeKind::OpenAiRealtime);
        let mut out = Vec::new();
        c.feed(
            json!({"type": "response.created", "response": {"id": "r1"}}),
            &mut out,
        );
        let sent = c.user_text("and now?").unwrap();
        assert_eq!(
            types(&sent),
            ["conversation.item.create"],
            "no response.create yet"
        );
        c.feed(
            json!({"type": "response.done", "response": {"id": "r1"}}),
            &mut out,
        );
        assert_eq!(types(&c.take_outgoing()), ["response.create"]);
        assert!(c.take_outgoing().is_empty(), "requested once");
        // A refused request does not block the next one.
        c.feed(
            json!({"type": "error", "error": {"code": "x", "message": "no"}}),
            &mut out,
        );
        let sent = c.user_text("retry").unwrap();
        assert_eq!(
            types(&sent),
            ["conversation.item.create", "response.create"]
        );
    }

    #[test]
    fn glm_results_go_back_in_call_order_without_ids() {
        let mut c = RealtimeCodec::new(RealtimeKind::GlmRealtime);
        let mut out = Vec::new();
        c.feed(
            json!({"type": "response.created", "response": {"id": "r1"}}),
            &mut out,
        );
        for (i, city) in ["A", "B"].iter().enumerate() {
            c.feed(
                json!({"type": "response.function_call_arguments.done", "response_id": "r1",
                       "output_index": i, "name": "w", "arguments": json!({"city": city}).to_string()}),
                &mut out,
            );
        }
        let calls = ready(&out);
        assert_eq!(calls[0].id, "glm_r1_0");
        assert!(calls[1].has_synthetic_id());
        let second = ToolResult::ok(&calls[1], json!("b"));
        assert!(
            c.results(&[second]).unwrap().is_empty(),
            "waits for its sibling"
        );
        assert!(
            c.results(&[ToolResult::ok(&calls[0], json!("a"))])
                .unwrap()
                .is_empty(),
            "and for the response"
        );
        c.feed(
            json!({"type": "response.done", "response": {"id": "r1"}}),
            &mut out,
        );
        let sent = c.take_outgoing();
        assert_eq!(
            sent[0]["item"],
            json!({"type": "function_call_output", "output": "a"})
        );
        assert_eq!(
            sent[1]["item"],
            json!({"type": "function_call_output", "output": "b"})
        );
        assert_eq!(sent[2]["type"], "response.create");
    }

    #[test]
    fn gemini_answers_a_tool_call_once_all_its_calls_are_answered_or_cancelled() {
        let mut c = RealtimeCodec::new(RealtimeKind::GeminiLive);
        let mut out = Vec::new();
        c.feed(
            json!({"toolCall": {"functionCalls": [
                {"id": "a", "name": "w", "args": {}}, {"id": "b", "name": "w", "args": {}},
                {"id": "c", "name": "w", "args": {}}]}}),
            &mut out,
        );
        let calls = ready(&out);
        assert!(
            c.results(&[ToolResult::ok(&calls[0], json!({}))])
                .unwrap()
                .is_empty()
        );
        c.feed(json!({"toolCallCancellation": {"ids": ["b"]}}), &mut out);
        // A result racing the cancellation is dropped, not an error.
        assert!(
            c.results(&[ToolResult::ok(&calls[1], json!({}))])
                .unwrap()
                .is_empty()
        );
        assert_eq!(c.stats().dropped_results, 1);
        let sent = c
            .results(&[ToolResult::ok(&calls[2], json!({"x": 1}))])
            .unwrap();
        assert_eq!(sent.len(), 1);
        let ids: Vec<&str> = sent[0]["toolResponse"]["functionResponses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["a", "c"]);
    }

    #[test]
    fn results_are_all_or_nothing() {
        let mut c = RealtimeCodec::new(RealtimeKind::StepFunRealtime);
        let mut out = Vec::new();
        c.feed(
            json!({"type": "response.function_call_arguments.done", "response_id": "r",
                      "call_id": "c1", "name": "w", "arguments": "{}"}),
            &mut out,
        );
        let call = ready(&out).remove(0);
        let ok = ToolResult::ok(&call, json!(1));
        let err = c.results(&[ok.clone(), ok.clone()]).unwrap_err();
        assert!(err.to_string().contains("answered twice"), "{err}");
        assert_eq!(c.awaiting(), ["c1"], "nothing was taken");
        let unknown = ToolResult::ok(&ToolCall::new("zz", "w", "{}"), json!(1));
        assert!(c.results(&[ok.clone(), unknown]).is_err());
        assert_eq!(c.awaiting(), ["c1"]);
        c.results(&[ok]).unwrap();
        assert!(c.awaiting().is_empty());
    }

    #[test]
    fn a_cancelled_response_completes_no_call() {
        let mut c = RealtimeCodec::new(RealtimeKind::QwenRealtime);
        let mut out = Vec::new();
        c.feed(
            json!({"type": "response.created", "response": {"id": "r1"}}),
            &mut out,
        );
        c.feed(
            json!({"type": "response.function_call_arguments.delta", "response_id": "r1",
                      "call_id": "c1", "delta": "{}"}),
            &mut out,
        );
        assert_eq!(types(&c.cancel_response().unwrap()), ["response.cancel"]);
        c.feed(
            json!({"type": "response.function_call_arguments.done", "response_id": "r1",
                      "call_id": "c1", "name": "w", "arguments": "{}"}),
            &mut out,
        );
        c.feed(
            json!({"type": "response.done", "response": {"id": "r1", "status": "cancelled"}}),
            &mut out,
        );
        assert!(ready(&out).is_empty());
        assert_eq!(c.stats().stale_events, 1);
        let Some(RealtimeEvent::ResponseDone { result, .. }) = out.last() else {
            panic!("{out:?}")
        };
        assert_eq!(result.finish_reason.as_str(), "cancelled");
        assert!(!result.tool_calls[0].is_complete());
    }

    #[test]
    fn qwen_text_goes_through_the_instructions() {
        let mut c = RealtimeCodec::new(RealtimeKind::QwenRealtime);
        c.configure(&SessionConfig::new("m", vec![]).with_instructions("Be brief."))
            .unwrap();
        let sent = c.user_text("hi").unwrap();
        assert_eq!(sent[0]["session"]["instructions"], "Be brief.\n\nhi");
        assert_eq!(sent[1]["type"], "response.create");
    }

    #[test]
    fn gemini_waits_for_setup_complete() {
        let mut c = RealtimeCodec::new(RealtimeKind::GeminiLive);
        let sent = c.configure(&SessionConfig::new("m", vec![])).unwrap();
        assert!(sent[0].get("setup").is_some());
        assert!(
            c.user_text("hi").unwrap().is_empty(),
            "held until setupComplete"
        );
        let mut out = Vec::new();
        c.feed(json!({"setupComplete": {}}), &mut out);
        let sent = c.take_outgoing();
        assert!(sent[0].get("clientContent").is_some(), "{sent:?}");
    }

    #[test]
    fn a_response_past_the_size_limit_is_cut() {
        let mut c = RealtimeCodec::new(RealtimeKind::OpenAiRealtime);
        let mut out = Vec::new();
        c.feed(
            json!({"type": "response.created", "response": {"id": "r1"}}),
            &mut out,
        );
        let piece = "x".repeat(1 << 20);
        for _ in 0..17 {
            c.feed(
                json!({"type": "response.output_text.delta", "response_id": "r1", "delta": piece}),
                &mut out,
            );
        }
        assert!(!c.is_responding(), "cut at the limit");
        let done = out
            .iter()
            .find_map(|e| match e {
                RealtimeEvent::ResponseDone { result, .. } => Some(result),
                _ => None,
            })
            .unwrap();
        assert_eq!(done.finish_reason, crate::types::FinishReason::Error);
        assert!(done.extra["cut"].as_str().unwrap().contains("limit"));
        let before = c.stats().stale_events;
        c.feed(
            json!({"type": "response.output_text.delta", "response_id": "r1", "delta": "more"}),
            &mut out,
        );
        assert_eq!(c.stats().stale_events, before + 1, "later events are stale");
    }

    #[test]
    fn closes_report_errors_only_for_abnormal_codes() {
        for (code, errors) in [(Some(1000), 0), (None, 0), (Some(1011), 1)] {
            let mut c = RealtimeCodec::new(RealtimeKind::GeminiLive);
            let mut out = Vec::new();
            c.close(code, "bye", &mut out);
            c.close(code, "again", &mut out);
            let n = out
                .iter()
                .filter(|e| matches!(e, RealtimeEvent::Error(_)))
                .count();
            assert_eq!(n, errors, "{code:?}");
            assert_eq!(
                out.iter()
                    .filter(|e| matches!(e, RealtimeEvent::Closed { .. }))
                    .count(),
                1
            );
        }
    }

    /// Feeds `events` to a fresh codec of `kind`; the calls handed out and the responses.
    fn session(kind: RealtimeKind, events: &[Value]) -> (Vec<ToolCall>, Vec<ChatResponse>) {
        let mut c = RealtimeCodec::new(kind);
        let mut out = Vec::new();
        for e in events {
            c.feed(e.clone(), &mut out);
        }
        let responses = out
            .iter()
            .filter_map(|e| match e {
                RealtimeEvent::ResponseDone { result, .. } => Some(result.clone()),
                _ => None,
            })
            .collect();
        (ready(&out), responses)
    }

    const OPENAI_LIKE: [RealtimeKind; 4] = [
        RealtimeKind::OpenAiRealtime,
        RealtimeKind::GlmRealtime,
        RealtimeKind::QwenRealtime,
        RealtimeKind::StepFunRealtime,
    ];

    /// One call whose `.done` carries `done_text`, then `response.done` with `status`.
    fn cut_call(done_text: &str, status: Value) -> Vec<Value> {
        vec![
            json!({"type": "response.created", "response": {"id": "r1"}}),
            json!({"type": "response.function_call_arguments.done", "response_id": "r1",
                   "call_id": "c1", "name": "w", "arguments": done_text}),
            json!({"type": "response.done", "response": status}),
        ]
    }

    #[test]
    fn a_call_cut_by_a_token_limit_is_truncated_on_every_dialect() {
        // OpenAI sends `.done` for a response cut short too: whether its text was cut shows
        // only at `response.done`.
        let incomplete = json!({"id": "r1", "status": "incomplete",
            "status_details": {"type": "incomplete", "reason": "max_output_tokens"}});
        for kind in OPENAI_LIKE {
            for text in ["{\"city\":\"Par", ""] {
                let (ready, responses) = session(kind, &cut_call(text, incomplete.clone()));
                assert!(ready.is_empty(), "{kind} {text:?}: never handed out");
                let call = &responses[0].tool_calls[0];
                assert_eq!(call.raw_arguments, text, "{kind}");
                assert_eq!(
                    call.error.as_ref().map(|e| e.kind),
                    Some(ArgumentsErrorKind::Truncated),
                    "{kind} {text:?}"
                );
                assert_eq!(responses[0].finish_reason, FinishReason::Length, "{kind}");
            }
        }
    }

    #[test]
    fn a_cut_off_done_in_a_completed_response_is_decided_at_its_end() {
        let completed = json!({"id": "r1", "status": "completed"});
        for kind in OPENAI_LIKE {
            // Text that stops early, in a response that ended normally: malformed, handed out
            // (the agent answers it with an error result).
            let (ready, responses) = session(kind, &cut_call("{\"city\":", completed.clone()));
            let call = &responses[0].tool_calls[0];
            assert_eq!(
                call.error.as_ref().map(|e| e.kind),
                Some(ArgumentsErrorKind::Malformed),
                "{kind}"
            );
            assert_eq!(ready, std::slice::from_ref(call), "{kind}");
            // No text at all: a zero-argument call, complete once the response ends well.
            let (ready, responses) = session(kind, &cut_call("", completed.clone()));
            let call = &responses[0].tool_calls[0];
            assert!(call.is_complete(), "{kind}: {call:?}");
            assert_eq!(ready, std::slice::from_ref(call), "{kind}");
            assert_eq!(responses[0].finish_reason, FinishReason::ToolCalls);
        }
    }

    #[test]
    fn events_naming_no_call_continue_the_open_one() {
        // Deltas with neither call_id, item_id nor output_index: one call, not one per delta.
        for kind in OPENAI_LIKE {
            let delta = |d: &str| {
                json!({"type": "response.function_call_arguments.delta", "response_id": "r1",
                       "delta": d})
            };
            let (_, responses) = session(
                kind,
                &[
                    json!({"type": "response.created", "response": {"id": "r1"}}),
                    delta("{\"a\":"),
                    delta("1}"),
                    json!({"type": "response.function_call_arguments.done", "response_id": "r1",
                           "name": "w", "arguments": "{\"a\":1}"}),
                    // After the first call ended, the next one is a new call.
                    json!({"type": "response.function_call_arguments.done", "response_id": "r1",
                           "name": "v", "arguments": "{}"}),
                    json!({"type": "response.done", "response": {"id": "r1"}}),
                ],
            );
            let calls: Vec<_> = responses[0]
                .tool_calls
                .iter()
                .map(|c| (c.name.as_str(), c.raw_arguments.as_str(), c.is_complete()))
                .collect();
            assert_eq!(
                calls,
                [("w", "{\"a\":1}", true), ("v", "{}", true)],
                "{kind}"
            );
        }
    }

    #[test]
    fn gemini_live_reads_missing_args_as_http_gemini_does() {
        // The same functionCall part through the gemini provider's HTTP decoder and through
        // Gemini Live gives the same raw_arguments.
        for part in [
            json!({"name": "w"}),
            json!({"name": "w", "args": null}),
            json!({"name": "w", "args": {}}),
            json!({"name": "w", "args": {"a": [1, "x"]}}),
        ] {
            let body = json!({"candidates": [{"content": {"role": "model",
                "parts": [{"functionCall": part}]}, "finishReason": "STOP"}]});
            let http = crate::provider::Provider::decode(
                &crate::providers::gemini::Gemini::new(),
                body.to_string().as_bytes(),
            )
            .unwrap();
            let mut fc = part.clone();
            fc["id"] = json!("fc1");
            let (_, live) = session(
                RealtimeKind::GeminiLive,
                &[json!({"toolCall": {"functionCalls": [fc]}})],
            );
            assert_eq!(
                live[0].tool_calls[0].raw_arguments, http.tool_calls[0].raw_arguments,
                "{part}"
            );
            assert!(live[0].tool_calls[0].is_complete());
        }
    }
}
