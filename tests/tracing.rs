//! `tracing` spans over the mock: a chat, a tool run and an agent turn carry the OpenTelemetry
//! GenAI field names, and never the key or a header value. A small capturing subscriber of our
//! own records every span's name and fields.
#![cfg(feature = "mock")]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::json;
use toolwire::agent::Agent;
use toolwire::mock::{MockReply, MockServer, Script};
use toolwire::tools::ToolRegistry;
use toolwire::{
    ChatRequest, ChatResponse, Client, FinishReason, Message, ProviderKind, ToolCall, Usage,
};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One span as seen: its name, parent and fields (values as text).
#[derive(Debug, Clone, Default)]
struct Seen {
    name: String,
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
}

#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<Vec<Seen>>>,
    stack: Arc<Mutex<Vec<u64>>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(
            field.name().to_owned(),
            format!("{value:?}").trim_matches('"').to_owned(),
        );
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let mut seen = Seen {
            name: attrs.metadata().name().to_owned(),
            ..Seen::default()
        };
        // Declared fields appear even before they get a value.
        for field in attrs.metadata().fields() {
            seen.fields.insert(field.name().to_owned(), String::new());
        }
        attrs.record(&mut Fields(&mut seen.fields));
        seen.parent = if let Some(p) = attrs.parent() {
            Some(p.into_u64())
        } else if attrs.is_contextual() {
            self.stack.lock().unwrap().last().copied()
        } else {
            None
        };
        let mut spans = self.spans.lock().unwrap();
        spans.push(seen);
        Id::from_u64(spans.len() as u64)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut spans = self.spans.lock().unwrap();
        let seen = &mut spans[span.into_u64() as usize - 1];
        values.record(&mut Fields(&mut seen.fields));
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, span: &Id) {
        self.stack.lock().unwrap().push(span.into_u64());
    }
    fn exit(&self, span: &Id) {
        let mut stack = self.stack.lock().unwrap();
        if let Some(at) = stack.iter().rposition(|s| *s == span.into_u64()) {
            stack.remove(at);
        }
    }
}

impl Capture {
    fn named(&self, name: &str) -> Vec<(usize, Seen)> {
        let spans = self.spans.lock().unwrap();
        spans
            .iter()
            .enumerate()
            .filter(|(_, s)| s.name == name)
            .map(|(i, s)| (i + 1, s.clone()))
            .collect()
    }
    fn all_text(&self) -> String {
        format!("{:?}", self.spans.lock().unwrap())
    }
}

fn usage(input: u64, output: u64) -> Usage {
    Usage::new(input, output)
}

fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry
        .register_fn(
            "get_weather",
            "Current weather",
            json!({"type": "object", "properties": {"city": {"type": "string"}}}),
            |_| async { Ok(json!({"forecast": "sunny"})) },
        )
        .unwrap();
    registry
}

#[tokio::test]
async fn chat_tool_and_agent_turn_spans_carry_the_gen_ai_fields() {
    let capture = Capture::default();
    let _default = tracing::subscriber::set_default(capture.clone());

    let script = Script::new()
        .then(
            ChatResponse::default()
                .with_text("Hi.")
                .with_finish_reason(FinishReason::Stop)
                .with_usage(usage(11, 3)),
        )
        .then(MockReply::tool_calls([ToolCall::new(
            "call_tw_1",
            "get_weather",
            r#"{"city":"Oslo"}"#,
        )]))
        .then(
            ChatResponse::default()
                .with_text("Sunny.")
                .with_finish_reason(FinishReason::Stop)
                .with_usage(usage(30, 4)),
        );
    let server = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .api_key("sk-trace-SECRET")
        .header("x-gateway", "hdr-SECRET-value")
        .build()
        .unwrap();
    let req = ChatRequest::new("tw-trace-model", vec![Message::user("Hi")]);
    client.chat(&req).await.unwrap();

    let chats = capture.named("gen_ai.chat");
    assert_eq!(chats.len(), 1, "{}", capture.all_text());
    let f = &chats[0].1.fields;
    assert_eq!(f["gen_ai.operation.name"], "chat");
    assert_eq!(f["gen_ai.provider.name"], "openai");
    assert_eq!(f["gen_ai.request.model"], "tw-trace-model");
    assert_eq!(f["gen_ai.response.finish_reasons"], "stop");
    assert_eq!(f["gen_ai.usage.input_tokens"], "11");
    assert_eq!(f["gen_ai.usage.output_tokens"], "3");
    assert!(f.contains_key("gen_ai.response.model"));

    let agent = Agent::new(client.clone(), registry());
    let outcome = agent.run(req.clone()).finish().await.unwrap();
    assert_eq!(outcome.turns, 2);

    let turns = capture.named("toolwire.agent.turn");
    assert_eq!(turns.len(), 2, "{}", capture.all_text());
    let first = &turns[0].1.fields;
    assert_eq!(first["toolwire.agent.turn"], "1");
    assert_eq!(first["gen_ai.provider.name"], "openai");
    assert_eq!(first["gen_ai.request.model"], "tw-trace-model");
    assert_eq!(first["gen_ai.response.finish_reasons"], "tool_calls");
    assert_eq!(turns[1].1.fields["gen_ai.usage.input_tokens"], "30");

    let tools = capture.named("gen_ai.execute_tool");
    assert_eq!(tools.len(), 1, "{}", capture.all_text());
    let t = &tools[0].1;
    assert_eq!(t.fields["gen_ai.operation.name"], "execute_tool");
    assert_eq!(t.fields["gen_ai.tool.name"], "get_weather");
    assert_eq!(t.fields["gen_ai.tool.call.id"], "call_tw_1");
    assert_eq!(t.fields["error.type"], "", "a successful run has no error");
    // The tool run and the turn's request happen inside the first turn's span.
    assert_eq!(t.parent, Some(turns[0].0 as u64));
    let chats = capture.named("gen_ai.chat");
    assert_eq!(chats.len(), 3);
    assert_eq!(chats[1].1.parent, Some(turns[0].0 as u64));

    assert!(!capture.all_text().contains("SECRET"));
}

#[tokio::test]
async fn a_failed_request_records_its_error_type() {
    let capture = Capture::default();
    let _default = tracing::subscriber::set_default(capture.clone());
    let server = MockServer::start(ProviderKind::OpenAi, Script::new())
        .await
        .unwrap();
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .build()
        .unwrap();
    let req = ChatRequest::new("m", vec![Message::user("Hi")]);
    client.chat(&req).await.unwrap_err();
    let chats = capture.named("gen_ai.chat");
    assert_eq!(chats[0].1.fields["error.type"], "api");
}
