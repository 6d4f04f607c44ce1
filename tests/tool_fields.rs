//! The newer tool-definition fields and the `allowed_tools` choice on every built-in wire:
//! carried where the wire documents them, otherwise refused by name or dropped and listed.

use serde_json::{Value, json};

use toolwire::ProviderKind;
use toolwire::error::Error;
use toolwire::provider::HttpRequest;
use toolwire::providers::{BUILTINS, builtin};
use toolwire::types::{AllowedMode, ChatRequest, Message, ToolChoice, ToolDefinition};

/// Each field, a tool with only it set, and the wires that carry it.
fn cases() -> Vec<(&'static str, ToolDefinition, &'static [ProviderKind])> {
    let base = || ToolDefinition::new("get_weather", "w").unwrap();
    vec![
        (
            "defer_loading",
            base().with_defer_loading(true),
            &[ProviderKind::Anthropic, ProviderKind::OpenAiResponses],
        ),
        (
            "input_examples",
            base().with_input_examples(vec![json!({"city": "Oslo"})]),
            &[ProviderKind::Anthropic],
        ),
        (
            "allowed_callers",
            base().with_allowed_callers(vec!["code_execution_20250825".into()]),
            &[ProviderKind::Anthropic],
        ),
        (
            "eager_input_streaming",
            base().with_eager_input_streaming(true),
            &[ProviderKind::Anthropic],
        ),
        (
            "cache_control",
            base().with_cache_control(json!({"type": "ephemeral"})),
            &[ProviderKind::Anthropic, ProviderKind::Bedrock],
        ),
    ]
}

fn encode(kind: ProviderKind, req: &ChatRequest) -> toolwire::error::Result<HttpRequest> {
    let b = builtin(kind).unwrap();
    (b.provider)().encode(req, false)
}

fn request(kind: ProviderKind, tool: ToolDefinition) -> ChatRequest {
    let model = builtin(kind).unwrap().default_model;
    ChatRequest::new(model, vec![Message::user("weather?")]).with_tools([tool])
}

/// Whether `key` appears anywhere in the body.
fn contains_key(v: &Value, key: &str) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, v)| k == key || contains_key(v, key)),
        Value::Array(a) => a.iter().any(|v| contains_key(v, key)),
        _ => false,
    }
}

#[test]
fn each_field_is_carried_or_refused_by_name_or_dropped() {
    for (field, tool, carriers) in cases() {
        for b in BUILTINS {
            let kind = b.kind;
            let req = request(kind, tool.clone());
            if carriers.contains(&kind) {
                let http = encode(kind, &req).unwrap_or_else(|e| panic!("{kind} {field}: {e}"));
                let wire_key = if kind == ProviderKind::Bedrock {
                    "cachePoint"
                } else {
                    field
                };
                assert!(
                    contains_key(&http.body, wire_key),
                    "{kind} {field}: {}",
                    http.body
                );
                assert!(http.dropped.is_empty(), "{kind} {field}");
                continue;
            }
            let setting = format!("tools[0].{field}");
            if matches!(field, "eager_input_streaming" | "cache_control") {
                // Hints only: left out silently, never refused.
                let http = encode(kind, &req).unwrap_or_else(|e| panic!("{kind} {field}: {e}"));
                assert!(http.dropped.is_empty(), "{kind} {field}");
                assert!(!contains_key(&http.body, field), "{kind} {field}");
                continue;
            }
            match encode(kind, &req) {
                Err(Error::Unsupported { feature, .. }) => {
                    assert!(
                        feature.contains(&setting) && feature.contains("drop_unsupported"),
                        "{kind}: {feature}"
                    );
                }
                other => panic!("{kind} {field}: expected a refusal, got {other:?}"),
            }
            let http = encode(kind, &req.clone().with_drop_unsupported(true))
                .unwrap_or_else(|e| panic!("{kind} {field} dropped: {e}"));
            assert!(
                http.dropped.iter().any(|d| d.setting == setting),
                "{kind} {field}: {:?}",
                http.dropped
            );
            assert!(!contains_key(&http.body, field), "{kind} {field}");
        }
    }
}

#[test]
fn neutral_values_go_nowhere_and_change_nothing() {
    let tool = ToolDefinition::new("get_weather", "w")
        .unwrap()
        .with_eager_input_streaming(false);
    for b in BUILTINS {
        let req = request(b.kind, tool.clone());
        let http = encode(b.kind, &req).unwrap_or_else(|e| panic!("{}: {e}", b.kind));
        assert!(http.dropped.is_empty(), "{}", b.kind);
    }
}

#[test]
fn anthropic_tool_carries_every_field() {
    let tool = ToolDefinition::new("get_weather", "w")
        .unwrap()
        .with_defer_loading(true)
        .with_input_examples(vec![json!({"city": "Oslo"})])
        .with_allowed_callers(vec!["code_execution_20250825".into()])
        .with_eager_input_streaming(true)
        .with_cache_control(json!({"type": "ephemeral"}));
    let http = encode(
        ProviderKind::Anthropic,
        &request(ProviderKind::Anthropic, tool),
    )
    .unwrap();
    let t = &http.body["tools"][0];
    assert_eq!(t["defer_loading"], true);
    assert_eq!(t["input_examples"], json!([{"city": "Oslo"}]));
    assert_eq!(t["allowed_callers"], json!(["code_execution_20250825"]));
    assert_eq!(t["eager_input_streaming"], true);
    assert_eq!(t["cache_control"], json!({"type": "ephemeral"}));
}

#[test]
fn bedrock_cache_control_is_a_cache_point_after_the_tool() {
    let tool = ToolDefinition::new("get_weather", "w")
        .unwrap()
        .with_cache_control(json!({"type": "ephemeral"}));
    let http = encode(ProviderKind::Bedrock, &request(ProviderKind::Bedrock, tool)).unwrap();
    let tools = &http.body["toolConfig"]["tools"];
    assert_eq!(tools[0]["toolSpec"]["name"], "get_weather");
    assert_eq!(tools[1], json!({"cachePoint": {"type": "default"}}));
}

#[test]
fn allowed_tools_choice_on_openai_wires_and_the_policy_elsewhere() {
    let choice = ToolChoice::Allowed {
        mode: AllowedMode::Required,
        tools: vec!["get_weather".into()],
    };
    let tool = ToolDefinition::new("get_weather", "w").unwrap();
    let chat = encode(
        ProviderKind::OpenAi,
        &request(ProviderKind::OpenAi, tool.clone()).with_tool_choice(choice.clone()),
    )
    .unwrap();
    assert_eq!(
        chat.body["tool_choice"],
        json!({"type": "allowed_tools", "allowed_tools": {"mode": "required",
            "tools": [{"type": "function", "function": {"name": "get_weather"}}]}})
    );
    let responses = encode(
        ProviderKind::OpenAiResponses,
        &request(ProviderKind::OpenAiResponses, tool.clone()).with_tool_choice(choice.clone()),
    )
    .unwrap();
    assert_eq!(
        responses.body["tool_choice"],
        json!({"type": "allowed_tools", "mode": "required",
            "tools": [{"type": "function", "name": "get_weather"}]})
    );
    for kind in [
        ProviderKind::Anthropic,
        ProviderKind::Gemini,
        ProviderKind::Bedrock,
    ] {
        let req = request(kind, tool.clone()).with_tool_choice(choice.clone());
        match encode(kind, &req) {
            Err(Error::Unsupported { feature, .. }) => {
                assert!(feature.contains("tool_choice.allowed_tools"), "{feature}")
            }
            other => panic!("{kind}: expected a refusal, got {other:?}"),
        }
        let http = encode(kind, &req.with_drop_unsupported(true)).unwrap();
        assert_eq!(http.dropped[0].setting, "tool_choice.allowed_tools");
    }
    // Dropped on Anthropic: its mode, "required", is kept as `any`.
    let http = encode(
        ProviderKind::Anthropic,
        &request(ProviderKind::Anthropic, tool)
            .with_tool_choice(choice)
            .with_drop_unsupported(true),
    )
    .unwrap();
    assert_eq!(http.body["tool_choice"]["type"], "any");
}

mod gateway_readers {
    use serde_json::json;

    use super::*;
    use toolwire::providers::{anthropic, openai, openai_responses};

    fn chat(body: Value) -> toolwire::error::Result<ChatRequest> {
        openai::gateway::decode_request(body.to_string().as_bytes()).map(|r| r.request)
    }

    fn responses(body: Value) -> toolwire::error::Result<ChatRequest> {
        openai_responses::gateway::decode_request(body.to_string().as_bytes()).map(|r| r.request)
    }

    fn messages(body: Value) -> toolwire::error::Result<ChatRequest> {
        anthropic::gateway::decode_request(body.to_string().as_bytes()).map(|r| r.request)
    }

    #[test]
    fn chat_reads_the_allowed_tools_choice() {
        let req = chat(json!({
            "model": "m", "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "a"}},
                      {"type": "function", "function": {"name": "b"}}],
            "tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "required",
                "tools": [{"type": "function", "function": {"name": "b"}}]}}
        }))
        .unwrap();
        assert_eq!(
            req.tool_choice,
            Some(ToolChoice::Allowed {
                mode: AllowedMode::Required,
                tools: vec!["b".into()]
            })
        );
        let err = chat(json!({
            "model": "m", "messages": [{"role": "user", "content": "hi"}],
            "tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "sometimes"}}
        }))
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("tool_choice.allowed_tools.mode") && err.contains("\"sometimes\""),
            "{err}"
        );
    }

    #[test]
    fn responses_reads_custom_tools_defer_loading_and_allowed_tools() {
        let req = responses(json!({
            "model": "m", "input": "hi",
            "tools": [
                {"type": "function", "name": "lookup", "parameters": {"type": "object"},
                 "defer_loading": true},
                {"type": "custom", "name": "apply_patch", "description": "Patch files",
                 "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}}
            ],
            "tool_choice": {"type": "allowed_tools", "mode": "auto",
                "tools": [{"type": "custom", "name": "apply_patch"}]}
        }))
        .unwrap();
        assert!(req.tools[0].defer_loading);
        let custom = &req.tools[1];
        assert_eq!(custom.parameters["properties"]["input"]["type"], "string");
        assert_eq!(
            custom.parameters[openai_responses::CUSTOM_FORMAT]["syntax"],
            "lark"
        );
        assert_eq!(
            req.tool_choice,
            Some(ToolChoice::Allowed {
                mode: AllowedMode::Auto,
                tools: vec!["apply_patch".into()]
            })
        );
        // Across wires: the custom tool is a one-string function on Anthropic, and back on
        // Responses it is a custom tool with its grammar again.
        let mut anthropic_req = req.clone();
        anthropic_req.model = builtin(ProviderKind::Anthropic)
            .unwrap()
            .default_model
            .into();
        anthropic_req.tool_choice = None;
        anthropic_req.tools[0].defer_loading = false;
        let http = encode(ProviderKind::Anthropic, &anthropic_req).unwrap();
        assert_eq!(http.body["tools"][1]["name"], "apply_patch");
        assert_eq!(
            http.body["tools"][1]["input_schema"]["properties"]["input"]["type"],
            "string"
        );
        let http = encode(ProviderKind::OpenAiResponses, &req).unwrap();
        assert_eq!(http.body["tools"][0]["defer_loading"], true);
        assert_eq!(http.body["tools"][1]["type"], "custom");
        assert_eq!(http.body["tools"][1]["format"]["syntax"], "lark");
    }

    /// A Responses `namespace` tool is flattened by the reader: each function in it is a tool
    /// of its own under `{namespace}__{name}`, encoded as a function on every wire.
    #[test]
    fn a_namespace_is_flattened_for_every_wire() {
        let mut req = responses(json!({
            "model": "m", "input": "hi",
            "tools": [{"type": "function", "name": "a"},
                      {"type": "namespace", "name": "crm", "description": "The CRM.",
                       "tools": [{"type": "function", "name": "find", "description": "Finds.",
                                  "parameters": {"type": "object"}}]}]
        }))
        .unwrap();
        let names: Vec<&str> = req.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "crm__find"]);
        assert!(req.hosted_tools.is_empty());
        for kind in [ProviderKind::OpenAiResponses, ProviderKind::Anthropic] {
            req.model = builtin(kind).unwrap().default_model.into();
            let http = encode(kind, &req).unwrap();
            assert!(
                http.body["tools"].to_string().contains("\"crm__find\""),
                "{kind}: {}",
                http.body
            );
        }
    }

    #[test]
    fn messages_reads_every_tool_field() {
        let req = messages(json!({
            "model": "m", "max_tokens": 10,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "get_weather", "input_schema": {"type": "object"},
                "defer_loading": true, "input_examples": [{"city": "Oslo"}],
                "allowed_callers": ["code_execution_20250825"],
                "eager_input_streaming": true, "cache_control": {"type": "ephemeral"}}]
        }))
        .unwrap();
        let t = &req.tools[0];
        assert!(t.defer_loading);
        assert_eq!(t.input_examples, vec![json!({"city": "Oslo"})]);
        assert_eq!(
            t.allowed_callers,
            vec!["code_execution_20250825".to_owned()]
        );
        assert_eq!(t.eager_input_streaming, Some(true));
        assert_eq!(t.cache_control, Some(json!({"type": "ephemeral"})));
        // To OpenAI Chat: the hints go silently, defer_loading and the rest are refused by
        // name with the setting that lets them through.
        let mut to_chat = req.clone();
        to_chat.model = "gpt-4.1".into();
        let err = encode(ProviderKind::OpenAi, &to_chat)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("tools[0].defer_loading") && err.contains("drop_unsupported"),
            "{err}"
        );
        let http = encode(ProviderKind::OpenAi, &to_chat.with_drop_unsupported(true)).unwrap();
        let dropped: Vec<&str> = http.dropped.iter().map(|d| d.setting.as_str()).collect();
        assert_eq!(
            dropped,
            [
                "tools[0].defer_loading",
                "tools[0].input_examples",
                "tools[0].allowed_callers"
            ]
        );
    }
}
