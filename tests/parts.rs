//! Content parts, answer schemas and their refusals on the Chat Completions wires, DashScope
//! native and Ollama: what the fixture goldens cannot show (the downgrades reported on the
//! encoded request, and each refusal naming the part, the place and the provider).

use serde_json::{Value, json};
use toolwire::provider::Provider;
use toolwire::providers::dashscope::{DashScope, Endpoint};
use toolwire::providers::ollama::Ollama;
use toolwire::providers::openai::OpenAi;
use toolwire::providers::{glm, qwen, stepfun};
use toolwire::types::{Part, ResponseFormat};
use toolwire::{ChatRequest, Error, Message, ToolCall, ToolResult};

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

fn user(parts: Vec<Part>) -> ChatRequest {
    ChatRequest::new("m-vl", vec![Message::user(parts)])
}

/// Two tool results in one run, each with media, then a plain user turn.
fn tool_media() -> ChatRequest {
    let call = |id: &str| ToolCall::new(id, "shot", "{}");
    let mut turn = toolwire::AssistantMessage::default();
    turn.tool_calls = vec![call("c1"), call("c2")];
    ChatRequest::new(
        "m-vl",
        vec![
            Message::user("look"),
            Message::Assistant(turn),
            Message::Tool(
                ToolResult::new("c1", "shot", json!(null))
                    .with_content([Part::text("first"), Part::image("image/png", PNG)]),
            ),
            Message::Tool(
                ToolResult::new("c2", "shot", json!(null))
                    .with_content([Part::image_url("https://example.com/b.png")]),
            ),
            Message::user("and now?"),
        ],
    )
}

fn unsupported(result: toolwire::Result<toolwire::HttpRequest>) -> String {
    match result {
        Err(Error::Unsupported { feature, .. }) => feature,
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

fn providers() -> Vec<Box<dyn Provider>> {
    vec![
        Box::new(OpenAi::new()),
        Box::new(glm::provider()),
        Box::new(qwen::provider()),
        Box::new(stepfun::provider()),
        Box::new(DashScope::with_endpoint(Endpoint::Multimodal)),
        Box::new(Ollama::new()),
    ]
}

#[test]
fn tool_media_moves_after_the_run_and_is_reported() {
    for p in providers() {
        let http = p.encode(&tool_media(), false).unwrap_or_else(|e| {
            // Ollama takes no image by URL: the refusal names the moved part's place.
            assert!(
                e.to_string().contains("messages[3] (tool result media)"),
                "{e}"
            );
            p.encode(&without_url_image(tool_media()), false).unwrap()
        });
        let where_ = |d: &toolwire::provider::Downgrade| (d.message, d.part);
        let moved: Vec<_> = http.downgrades.iter().map(where_).collect();
        assert!(moved.starts_with(&[(2, 1)]), "{}: {moved:?}", p.info().kind);
        assert!(
            http.downgrades[0]
                .note
                .contains("tool messages carry text only"),
            "{}",
            http.downgrades[0].note
        );
        let messages = messages(&http.body);
        // user, assistant, tool, tool, the moved media, user: one message after the run.
        assert_eq!(messages.len(), 6, "{}: {messages:#?}", p.info().kind);
        assert_eq!(messages[4]["role"], "user");
        assert_eq!(messages[5]["role"], "user");
        let tool_text = serde_json::to_string(&messages[2]).unwrap();
        assert!(tool_text.contains("first"), "{tool_text}");
        assert!(
            !tool_text.contains(PNG),
            "media never goes in a tool message as text"
        );
    }
}

fn without_url_image(mut req: ChatRequest) -> ChatRequest {
    if let Message::Tool(r) = &mut req.messages[3] {
        r.content = vec![Part::text("second")];
    }
    req
}

fn messages(body: &Value) -> Vec<Value> {
    body.get("messages")
        .or_else(|| body["input"].get("messages"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

#[test]
fn plain_requests_report_no_downgrades() {
    let req = ChatRequest::new("m", vec![Message::user("hi")]);
    for p in providers() {
        assert!(p.encode(&req, false).unwrap().downgrades.is_empty());
    }
}

#[test]
fn refusals_name_the_part_the_place_and_the_provider() {
    let openai = OpenAi::new();
    let pdf_url = user(vec![Part::file_url("https://x/a.pdf", "application/pdf")]);
    let e = unsupported(openai.encode(&pdf_url, false));
    assert!(
        e.contains("messages[0].content[0]: a file part by URL"),
        "{e}"
    );
    let ogg = user(vec![Part::audio("audio/ogg", "T2dnUw==")]);
    let e = unsupported(openai.encode(&ogg, false));
    assert!(e.contains("audio of type \"audio/ogg\""), "{e}");
    let wav = user(vec![Part::audio("audio/wav", "UklGRg==")]);
    let body = openai.encode(&wav, false).unwrap().body;
    assert_eq!(
        body["messages"][0]["content"][0],
        json!({"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}})
    );

    let pdf = user(vec![Part::file("application/pdf", "JVBERi0xLjQK", "a.pdf")]);
    let e = unsupported(glm::provider().encode(&pdf, false));
    assert!(
        e.contains("messages[0].content[0]: a file part with inline data"),
        "{e}"
    );
    for p in [qwen::provider(), stepfun::provider(), glm::provider()] {
        let e = unsupported(p.encode(&wav, false));
        assert!(e.contains("an audio part"), "{e}");
    }

    let image = user(vec![Part::image_url("https://x/a.png")]);
    assert!(
        DashScope::new().encode(&image, false).is_ok(),
        "m-vl is multimodal"
    );
    let e = unsupported(DashScope::with_endpoint(Endpoint::Text).encode(&image, false));
    assert!(e.contains("text-generation endpoint"), "{e}");
    let e = unsupported(
        DashScope::new().encode(&user(vec![Part::audio("audio/wav", "UklGRg==")]), false),
    );
    assert!(e.contains("audio by URL only"), "{e}");

    let e =
        unsupported(Ollama::new().encode(&user(vec![Part::image_url("https://x/a.png")]), false));
    assert!(e.contains("an image by URL"), "{e}");
    let e = unsupported(Ollama::new().encode(&wav, false));
    assert!(e.contains("an audio part"), "{e}");
}

#[test]
fn answer_schemas_are_refused_where_the_wire_cannot_keep_them() {
    let format = ResponseFormat::json_schema("report", json!({"type": "object"}));
    let req = ChatRequest::new("qwen-plus", vec![Message::user("hi")])
        .with_response_format(format.clone());
    assert!(qwen::provider().encode(&req, false).is_ok());
    assert!(DashScope::new().encode(&req, false).is_ok());
    let mut thinking = req.clone();
    thinking.thinking = Some(true);
    assert!(unsupported(qwen::provider().encode(&thinking, false)).contains("thinking mode"));
    assert!(unsupported(DashScope::new().encode(&thinking, false)).contains("thinking mode"));
    assert!(unsupported(glm::provider().encode(&req, false)).contains("json_object"));
    assert!(unsupported(stepfun::provider().encode(&req, false)).contains("json_object"));

    let bad = ChatRequest::new("gpt-4o", vec![Message::user("hi")]).with_response_format(
        ResponseFormat::json_schema("a report", json!({"type": "object"})),
    );
    assert!(matches!(
        OpenAi::new().encode(&bad, false),
        Err(Error::Input { .. })
    ));
}

#[test]
fn an_answer_schema_name_follows_the_name_rule_on_every_openai_wire() {
    use toolwire::providers::openai_responses::OpenAiResponses;
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let req = ChatRequest::new("m", vec![Message::user("hi")])
        .with_response_format(ResponseFormat::json_schema("not a name!", schema));
    let wires: Vec<Box<dyn Provider>> = vec![
        Box::new(OpenAi::new()),
        Box::new(OpenAiResponses::new()),
        Box::new(DashScope::new()),
    ];
    for wire in wires {
        match wire.encode(&req, false) {
            Err(Error::Input { path, .. }) => assert_eq!(path, "response_format.name"),
            other => panic!("{:?}: {other:?}", wire.info().kind),
        }
    }
}
