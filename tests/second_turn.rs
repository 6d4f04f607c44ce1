//! The second turn: a history made on one wire, continued on another.
//!
//! Most tool-calling failures users report appear on the *next* request: the calls of a turn
//! (native or minted ids, Gemini thought signatures, Responses reasoning items, Anthropic
//! thinking blocks, nameless or malformed calls) are sent back with their results, and the
//! provider refuses the history. For every ordered pair of built-in wires, each fixture
//! response of the source wire that has tool calls becomes an assistant turn followed by one
//! result per call (an error result for a call that cannot run, as the agent sends), and the
//! target wire's encoded request is checked against that wire's own rules: every call sent back
//! with its result and the ids matched, arguments in the form the wire takes, provider data
//! echoed where the wire requires it, and nothing the wire refuses.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};
use toolwire::conformance;
use toolwire::providers::{anthropic, bedrock, gemini, gemini_interactions, openai_responses};
use toolwire::types::AssistantMessage;
use toolwire::{
    ChatRequest, ChatResponse, Message, ProviderKind, ToolDefinition, ToolResult, provider_for,
};

/// A source turn: where it came from and the response the wire gave.
struct Source {
    case: String,
    response: ChatResponse,
}

/// Every fixture response (stream or body) that decodes to at least one call.
fn sources() -> Vec<(ProviderKind, Source)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut out = Vec::new();
    for case in conformance::case_dirs(&root).expect("fixtures/ is readable") {
        let Ok(text) = std::fs::read_to_string(case.join("expected.json")) else {
            continue;
        };
        let meta = conformance::load_meta(&case).ok();
        let Some(kind) = conformance::case_provider(&case, meta.as_ref()) else {
            continue;
        };
        let Ok(response) = serde_json::from_str::<ChatResponse>(&text) else {
            continue; // an expected error
        };
        if response.tool_calls.is_empty() {
            continue;
        }
        let name = case
            .strip_prefix(&root)
            .unwrap_or(&case)
            .display()
            .to_string();
        out.push((
            kind,
            Source {
                case: name,
                response,
            },
        ));
    }
    assert!(out.len() > 20, "too few source turns: {}", out.len());
    out
}

/// The request of the second turn: the question, the source's assistant turn, one result per
/// call (an error result for a call that cannot run), and the tools it called.
fn second_turn(model: &str, response: &ChatResponse) -> ChatRequest {
    let mut messages = vec![Message::user("What is the weather in Paris and in 北京?")];
    messages.push(Message::Assistant(AssistantMessage::from(response.clone())));
    let mut names = BTreeSet::new();
    for call in &response.tool_calls {
        let result = if call.is_complete() {
            ToolResult::ok(call, json!({"ok": true, "city": "Paris"}))
        } else {
            ToolResult::error(call, "the arguments could not be read; nothing was run")
        };
        messages.push(Message::Tool(result));
        if !call.name.is_empty() {
            names.insert(call.name.clone());
        }
    }
    let tools = names
        .into_iter()
        .filter_map(|name| {
            let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
            ToolDefinition::new(&name, "a tool the first turn called")
                .ok()?
                .with_parameters(schema)
                .ok()
        })
        .collect();
    let mut req = ChatRequest::new(model, messages);
    req.tools = tools;
    req
}

/// Every built-in wire, as a target: the provider table's list, so a new built-in joins the
/// matrix by itself.
const TARGETS: &[ProviderKind] = &ProviderKind::ALL;

/// A model name each target's rules are the strictest for (Gemini 3 requires thought
/// signatures on function calls of the current turn).
fn model_for(target: ProviderKind) -> &'static str {
    match target {
        ProviderKind::Gemini => "gemini-3-pro-preview",
        ProviderKind::GeminiInteractions => "gemini-3-flash-preview",
        ProviderKind::Anthropic => "claude-sonnet-4-5",
        ProviderKind::OpenAiResponses => "gpt-5-mini",
        _ => "test-model",
    }
}

/// What a rule found wrong, collected so one run lists every failing pair.
type Problems = Vec<String>;

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// OpenAI's, Anthropic's and the compatible wires' tool names: `^[A-Za-z0-9_-]{1,64}$`.
fn tool_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// Gemini's function names: a letter or `_` first, then letters, digits, `_ . : -`, 64 at most.
fn gemini_name_ok(name: &str) -> bool {
    name.len() <= 64
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

/// The text a call's arguments go back as on a wire that carries text: the model's own text
/// when it is a JSON object, `{}` for a call without arguments (empty text or JSON `null`), the
/// canonical arguments for a free-form call (its text is no JSON: `{"input": "<text>"}`).
fn expected_text(call: &toolwire::ToolCall) -> Option<String> {
    let raw = call.raw_arguments.trim();
    if raw.is_empty() || raw == "null" {
        Some("{}".into())
    } else if !call.is_complete() {
        None
    } else if call.is_free_form() {
        call.arguments.as_ref().map(Value::to_string)
    } else {
        Some(call.raw_arguments.clone())
    }
}

/// Ids are present, unique, and as many as the calls.
fn check_ids(ids: &[String], calls: usize, what: &str, out: &mut Problems) {
    if ids.len() != calls {
        out.push(format!(
            "{what}: {} calls sent back, {calls} made",
            ids.len()
        ));
    }
    if ids.iter().any(String::is_empty) {
        out.push(format!("{what}: an empty id"));
    }
    if ids.iter().collect::<BTreeSet<_>>().len() != ids.len() {
        out.push(format!("{what}: ids repeat: {ids:?}"));
    }
}

/// Chat Completions (OpenAI and the compatible providers, DashScope's native messages): the
/// assistant message's `tool_calls` (id, type, name, string arguments: the model's text for a
/// call that could run), then one `tool` message per call, in order, with its `tool_call_id`.
fn check_chat(messages: &[Value], response: &ChatResponse, out: &mut Problems) {
    let Some(at) = messages.iter().position(|m| m.get("tool_calls").is_some()) else {
        out.push("no assistant message with tool_calls".into());
        return;
    };
    let calls = messages[at]["tool_calls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ids: Vec<String> = calls
        .iter()
        .map(|c| str_of(c, "id").unwrap_or_default().to_owned())
        .collect();
    check_ids(&ids, response.tool_calls.len(), "tool_calls", out);
    for (call, sent) in response.tool_calls.iter().zip(&calls) {
        let function = &sent["function"];
        if !str_of(function, "name").is_some_and(tool_name_ok) {
            out.push(format!(
                "call {}: function name {}",
                call.id, function["name"]
            ));
        }
        match str_of(function, "arguments") {
            None => out.push(format!("call {}: arguments are not a string", call.id)),
            Some(text) => {
                if let Some(expected) = expected_text(call)
                    && text != expected
                {
                    out.push(format!(
                        "call {}: arguments {text:?} are not the model's text {expected:?}",
                        call.id
                    ));
                }
                if !matches!(serde_json::from_str::<Value>(text), Ok(Value::Object(_))) {
                    out.push(format!(
                        "call {}: arguments {text:?} are no JSON object",
                        call.id
                    ));
                }
            }
        }
    }
    let results: Vec<String> = messages[at + 1..]
        .iter()
        .take_while(|m| str_of(m, "role") == Some("tool"))
        .map(|m| str_of(m, "tool_call_id").unwrap_or_default().to_owned())
        .collect();
    if results != ids {
        out.push(format!(
            "tool messages answer {results:?}, the calls are {ids:?}"
        ));
    }
}

/// Anthropic Messages: roles alternate; the assistant's `tool_use` blocks (ids of
/// `[A-Za-z0-9_-]`, object input) are all answered by `tool_result` blocks at the start of the
/// next user message; every thinking block carries its signature.
fn check_anthropic(messages: &[Value], response: &ChatResponse, own: bool, out: &mut Problems) {
    for pair in messages.windows(2) {
        if str_of(&pair[0], "role") == str_of(&pair[1], "role") {
            out.push("two messages of the same role in a row".into());
        }
    }
    let Some(at) = messages
        .iter()
        .position(|m| str_of(m, "role") == Some("assistant"))
    else {
        out.push("no assistant message".into());
        return;
    };
    let blocks = messages[at]["content"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let uses: Vec<&Value> = blocks
        .iter()
        .filter(|b| str_of(b, "type") == Some("tool_use"))
        .collect();
    let ids: Vec<String> = uses
        .iter()
        .map(|b| str_of(b, "id").unwrap_or_default().to_owned())
        .collect();
    check_ids(&ids, response.tool_calls.len(), "tool_use blocks", out);
    for (id, block) in ids.iter().zip(&uses) {
        if !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
        {
            out.push(format!("tool_use id {id:?} is outside [A-Za-z0-9_-]"));
        }
        if !block["input"].is_object() {
            out.push(format!("tool_use {id}: input is not an object"));
        }
        if !str_of(block, "name").is_some_and(tool_name_ok) {
            out.push(format!("tool_use {id}: name {}", block["name"]));
        }
    }
    // The wire's own thinking blocks go back exactly (signatures are checked by the API).
    if own {
        for block in provider_items(response, anthropic::THINKING_BLOCKS) {
            if !blocks.contains(&block) {
                out.push(format!("thinking block {block} is not sent back"));
            }
        }
    }
    for block in &blocks {
        match str_of(block, "type") {
            Some("thinking") if str_of(block, "signature").is_none_or(str::is_empty) => {
                out.push("a thinking block without its signature".into())
            }
            Some("redacted_thinking") if str_of(block, "data").is_none_or(str::is_empty) => {
                out.push("a redacted_thinking block without its data".into())
            }
            _ => {}
        }
    }
    let next = messages.get(at + 1).map(|m| &m["content"]);
    let results: Vec<String> = next
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .take_while(|b| str_of(b, "type") == Some("tool_result"))
                .map(|b| str_of(b, "tool_use_id").unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default();
    if results.iter().collect::<BTreeSet<_>>() != ids.iter().collect::<BTreeSet<_>>() {
        out.push(format!(
            "tool_result blocks answer {results:?}, the calls are {ids:?}"
        ));
    }
}

/// Gemini: the model turn's `functionCall` parts (object `args`; on Gemini 3 the first one
/// carries a thought signature) are answered by as many `functionResponse` parts, in order, by
/// name (and id when the call has one), in the next user turn.
fn check_gemini(contents: &[Value], response: &ChatResponse, out: &mut Problems) {
    let Some(at) = contents
        .iter()
        .position(|c| str_of(c, "role") == Some("model"))
    else {
        out.push("no model turn".into());
        return;
    };
    let parts = contents[at]["parts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let calls: Vec<&Value> = parts
        .iter()
        .filter(|p| p.get("functionCall").is_some())
        .collect();
    if calls.len() != response.tool_calls.len() {
        out.push(format!(
            "{} functionCall parts, {} calls made",
            calls.len(),
            response.tool_calls.len()
        ));
    }
    match calls.first() {
        Some(first) if str_of(first, "thoughtSignature").is_none_or(str::is_empty) => out
            .push("the first functionCall part has no thoughtSignature (Gemini 3 refuses)".into()),
        _ => {}
    }
    for (call, part) in response.tool_calls.iter().zip(&calls) {
        let sent = &part["functionCall"];
        if !sent["args"].is_object() {
            out.push(format!("call {}: args is not an object", call.id));
        }
        if !str_of(sent, "name").is_some_and(gemini_name_ok) {
            out.push(format!("call {}: name {}", call.id, sent["name"]));
        }
        if call.is_complete() && call.arguments.as_ref() != Some(&sent["args"]) {
            out.push(format!("call {}: args differ from the model's", call.id));
        }
        // A signature the wire gave is echoed exactly.
        if let Some(signature) = call.extra.get(gemini::THOUGHT_SIGNATURE)
            && part.get("thoughtSignature") != Some(signature)
        {
            out.push(format!(
                "call {}: its thought signature is not echoed",
                call.id
            ));
        }
    }
    let answers: Vec<&Value> = contents
        .get(at + 1)
        .and_then(|c| c["parts"].as_array())
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p.get("functionResponse"))
                .collect()
        })
        .unwrap_or_default();
    if answers.len() != calls.len() {
        out.push(format!(
            "{} functionResponse parts for {} functionCall parts",
            answers.len(),
            calls.len()
        ));
    }
    for (part, answer) in calls.iter().zip(&answers) {
        let sent = &part["functionCall"];
        if sent["name"] != answer["name"] || sent.get("id") != answer.get("id") {
            out.push(format!("functionResponse {answer} does not answer {sent}"));
        }
    }
}

/// Responses: each `function_call` (or `custom_tool_call`) item has a `call_id`, item ids
/// that are the wire's own (`fc_`/`ctc_`), string arguments, and exactly one output with its
/// `call_id` after it; a reasoning item is followed by the item it belongs to.
fn check_responses(input: &[Value], response: &ChatResponse, own: bool, out: &mut Problems) {
    let is_call = |v: &Value| {
        matches!(
            str_of(v, "type"),
            Some("function_call") | Some("custom_tool_call")
        )
    };
    let calls: Vec<(usize, &Value)> = input
        .iter()
        .enumerate()
        .filter(|(_, v)| is_call(v))
        .collect();
    let ids: Vec<String> = calls
        .iter()
        .map(|(_, c)| str_of(c, "call_id").unwrap_or_default().to_owned())
        .collect();
    check_ids(&ids, response.tool_calls.len(), "function_call items", out);
    for (n, (at, item)) in calls.iter().enumerate() {
        // An item id goes back only as the wire gave it (another wire's ids are refused).
        let given = response
            .tool_calls
            .get(n)
            .and_then(|c| c.extra.get("item_id"));
        if let Some(id) = item.get("id")
            && !(own && given == Some(id))
        {
            out.push(format!("item id {id} is not one the wire gave"));
        }
        if !str_of(item, "name").is_some_and(tool_name_ok) {
            out.push(format!("item {at}: name {}", item["name"]));
        }
        let text = if str_of(item, "type") == Some("custom_tool_call") {
            "input"
        } else {
            "arguments"
        };
        if str_of(item, text).is_none() {
            out.push(format!("item {at}: {text} is not a string"));
        }
        let call_id = str_of(item, "call_id");
        let outputs = input
            .iter()
            .enumerate()
            .filter(|(_, v)| {
                matches!(
                    str_of(v, "type"),
                    Some("function_call_output") | Some("custom_tool_call_output")
                ) && str_of(v, "call_id") == call_id
            })
            .map(|(i, _)| i)
            .collect::<Vec<_>>();
        if outputs.len() != 1 || outputs[0] < *at {
            out.push(format!(
                "call {call_id:?}: outputs at {outputs:?}, the call at {at}"
            ));
        }
    }
    // Reasoning items go back only to the wire that made them, each followed by the item it
    // led to (the API refuses a reasoning item "without its required following item").
    for (i, item) in input.iter().enumerate() {
        if str_of(item, "type") != Some("reasoning") {
            continue;
        }
        if !own {
            out.push(format!(
                "reasoning item {i} sent to a wire that did not make it"
            ));
        }
        let next = input.get(i + 1).and_then(|next| str_of(next, "type"));
        if matches!(
            next,
            None | Some("function_call_output") | Some("custom_tool_call_output")
        ) {
            out.push(format!("reasoning item {i} is followed by {next:?}"));
        }
    }
    if own {
        let sent: BTreeSet<&str> = input.iter().filter_map(|i| str_of(i, "id")).collect();
        for item in provider_items(response, openai_responses::REASONING_ITEMS) {
            if let Some(id) = str_of(&item, "id")
                && !sent.contains(id)
            {
                out.push(format!("reasoning item {id} is not sent back"));
            }
        }
    }
}

/// Provider items kept under `key` on the response and on each of its calls.
fn provider_items(response: &ChatResponse, key: &str) -> Vec<Value> {
    let lists = std::iter::once(response.extra.get(key))
        .chain(response.tool_calls.iter().map(|c| c.extra.get(key)));
    lists
        .flatten()
        .filter_map(Value::as_array)
        .flatten()
        .cloned()
        .collect()
}

/// Gemini Interactions: the `input` steps hold one `function_call` step per call (its id, a
/// Gemini-valid name, object arguments), each answered by a `function_result` step naming the
/// call's id and tool; no server-tool step of the history became a function call; on its own
/// wire, each kept step (thoughts with their signatures, server-tool steps) goes back verbatim,
/// before the call it preceded, and each call's own signature rides on its step.
fn check_interactions(input: &[Value], response: &ChatResponse, own: bool, out: &mut Problems) {
    let calls: Vec<(usize, &Value)> = input
        .iter()
        .enumerate()
        .filter(|(_, s)| str_of(s, "type") == Some("function_call"))
        .collect();
    let ids: Vec<String> = calls
        .iter()
        .map(|(_, c)| str_of(c, "id").unwrap_or_default().to_owned())
        .collect();
    check_ids(&ids, response.tool_calls.len(), "function_call steps", out);
    for (at, step) in &calls {
        if !str_of(step, "name").is_some_and(gemini_name_ok) {
            out.push(format!("step {at}: name {}", step["name"]));
        }
        if !step["arguments"].is_object() {
            out.push(format!("step {at}: arguments are not an object"));
        }
    }
    let results: Vec<(usize, &Value)> = input
        .iter()
        .enumerate()
        .filter(|(_, s)| str_of(s, "type") == Some("function_result"))
        .collect();
    let answered: BTreeSet<String> = results
        .iter()
        .map(|(_, r)| str_of(r, "call_id").unwrap_or_default().to_owned())
        .collect();
    if answered != ids.iter().cloned().collect::<BTreeSet<_>>() || results.len() != ids.len() {
        out.push(format!(
            "function_result steps answer {answered:?}, the calls are {ids:?}"
        ));
    }
    for (at, r) in &results {
        let by_id = calls
            .iter()
            .find(|(_, c)| c.get("id") == r.get("call_id"))
            .map(|(i, c)| (*i, str_of(c, "name")));
        match by_id {
            Some((call_at, name)) if call_at < *at && name == str_of(r, "name") => {}
            other => out.push(format!(
                "function_result at {at} does not follow its call by id and name: {other:?}"
            )),
        }
        if r.get("result").is_none() {
            out.push(format!("function_result at {at} has no result"));
        }
    }
    if own {
        let kept = response
            .extra
            .get(gemini_interactions::STEPS)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for step in kept
            .iter()
            .filter(|s| !matches!(str_of(s, "type"), Some("function_call" | "model_output")))
        {
            if !input.contains(step) {
                out.push(format!("kept step {step} is not sent back"));
            }
        }
        for (call, (_, step)) in response.tool_calls.iter().zip(&calls) {
            if let Some(sig) = call.extra.get(gemini_interactions::SIGNATURE)
                && step.get("signature") != Some(sig)
            {
                out.push(format!("call {}: its signature is not echoed", call.id));
            }
        }
    }
}

/// Ollama: the assistant's `tool_calls` (named, object arguments), then one `tool` message
/// per call, in order, naming its tool.
fn check_ollama(messages: &[Value], response: &ChatResponse, out: &mut Problems) {
    let Some(at) = messages.iter().position(|m| m.get("tool_calls").is_some()) else {
        out.push("no assistant message with tool_calls".into());
        return;
    };
    let calls = messages[at]["tool_calls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if calls.len() != response.tool_calls.len() {
        out.push(format!(
            "{} calls sent back, {} made",
            calls.len(),
            response.tool_calls.len()
        ));
    }
    let names: Vec<String> = calls
        .iter()
        .map(|c| {
            str_of(&c["function"], "name")
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    for (call, sent) in response.tool_calls.iter().zip(&calls) {
        if !sent["function"]["arguments"].is_object() {
            out.push(format!("call {}: arguments are not an object", call.id));
        }
        if call.is_complete() && call.arguments.as_ref() != Some(&sent["function"]["arguments"]) {
            out.push(format!(
                "call {}: arguments differ from the model's",
                call.id
            ));
        }
    }
    if names.iter().any(String::is_empty) {
        out.push(format!("tool call names {names:?}"));
    }
    let results: Vec<String> = messages[at + 1..]
        .iter()
        .take_while(|m| str_of(m, "role") == Some("tool"))
        .map(|m| str_of(m, "tool_name").unwrap_or_default().to_owned())
        .collect();
    if results != names {
        out.push(format!(
            "tool messages name {results:?}, the calls are {names:?}"
        ));
    }
}

/// Bedrock Converse: roles alternate starting with the user; the assistant message's `toolUse`
/// blocks (ids and names in `[A-Za-z0-9_-]`, at most 64; `input` an object) are answered by as
/// many `toolResult` blocks (non-empty content, a status) in the next user message; no text
/// block is blank; `toolConfig` declares every tool the history used (Converse refuses tool
/// blocks without it); the wire's own reasoning blocks go back exactly, signed or redacted.
fn check_bedrock(body: &Value, response: &ChatResponse, own: bool, out: &mut Problems) {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if messages.first().and_then(|m| str_of(m, "role")) != Some("user") {
        out.push("the first message is not the user's".into());
    }
    for pair in messages.windows(2) {
        if str_of(&pair[0], "role") == str_of(&pair[1], "role") {
            out.push("two messages of the same role in a row".into());
        }
    }
    let blocks_of = |m: &Value| m["content"].as_array().cloned().unwrap_or_default();
    for m in &messages {
        for b in blocks_of(m) {
            if b.get("text")
                .is_some_and(|t| t.as_str().is_none_or(|t| t.trim().is_empty()))
            {
                out.push(format!("a blank text block in a {} message", m["role"]));
            }
        }
    }
    let Some(at) = messages
        .iter()
        .position(|m| str_of(m, "role") == Some("assistant"))
    else {
        out.push("no assistant message".into());
        return;
    };
    let blocks = blocks_of(&messages[at]);
    // A `toolUse` Bedrock ran itself (`type: server_tool_use`, Nova's built-in tools) is not
    // a client call: it goes back as it came, with its `toolResult`.
    let uses: Vec<&Value> = blocks
        .iter()
        .filter_map(|b| b.get("toolUse"))
        .filter(|u| str_of(u, "type") != Some("server_tool_use"))
        .collect();
    let ids: Vec<String> = uses
        .iter()
        .map(|u| str_of(u, "toolUseId").unwrap_or_default().to_owned())
        .collect();
    check_ids(&ids, response.tool_calls.len(), "toolUse blocks", out);
    let declared: BTreeSet<&str> = body["toolConfig"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["toolSpec"]["name"].as_str())
        .collect();
    for (id, u) in ids.iter().zip(&uses) {
        if !tool_name_ok(id) {
            out.push(format!("toolUseId {id:?} is outside [A-Za-z0-9_-]{{1,64}}"));
        }
        if !u["input"].is_object() {
            out.push(format!("toolUse {id}: input is not an object"));
        }
        match str_of(u, "name") {
            Some(name) if tool_name_ok(name) && declared.contains(name) => {}
            other => out.push(format!(
                "toolUse {id}: name {other:?} invalid or not declared in toolConfig {declared:?}"
            )),
        }
    }
    let reasoning: Vec<&Value> = blocks
        .iter()
        .filter_map(|b| b.get("reasoningContent"))
        .collect();
    for r in &reasoning {
        let signed = r["reasoningText"]["signature"]
            .as_str()
            .is_some_and(|s| !s.is_empty());
        if !signed && r.get("redactedContent").is_none() {
            out.push(format!(
                "a reasoning block neither signed nor redacted: {r}"
            ));
        }
    }
    if own {
        for block in provider_items(response, bedrock::REASONING_BLOCKS) {
            if !reasoning.contains(&&block) {
                out.push(format!("reasoning block {block} is not sent back"));
            }
        }
    }
    let results: Vec<&Value> = messages
        .get(at + 1)
        .map(|m| &m["content"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|b| b.get("toolResult"))
        .collect();
    let answered: Vec<String> = results
        .iter()
        .map(|r| str_of(r, "toolUseId").unwrap_or_default().to_owned())
        .collect();
    if answered.iter().collect::<BTreeSet<_>>() != ids.iter().collect::<BTreeSet<_>>() {
        out.push(format!(
            "toolResult blocks answer {answered:?}, the calls are {ids:?}"
        ));
    }
    for r in results {
        if r["content"].as_array().is_none_or(Vec::is_empty) {
            out.push(format!("toolResult {} has no content", r["toolUseId"]));
        }
        if !matches!(str_of(r, "status"), Some("success" | "error")) {
            out.push(format!("toolResult {} has no status", r["toolUseId"]));
        }
    }
}

/// The target wire's rules for the encoded second turn.
fn check(
    source: ProviderKind,
    target: ProviderKind,
    body: &Value,
    response: &ChatResponse,
) -> Problems {
    let mut out = Vec::new();
    let list = |key: &str| body[key].as_array().cloned().unwrap_or_default();
    match target {
        ProviderKind::Gemini => check_gemini(&list("contents"), response, &mut out),
        ProviderKind::GeminiInteractions => {
            check_interactions(&list("input"), response, source == target, &mut out)
        }
        ProviderKind::Anthropic => {
            check_anthropic(&list("messages"), response, source == target, &mut out)
        }
        ProviderKind::OpenAiResponses => {
            check_responses(&list("input"), response, source == target, &mut out)
        }
        ProviderKind::Ollama => check_ollama(&list("messages"), response, &mut out),
        ProviderKind::Bedrock => check_bedrock(body, response, source == target, &mut out),
        ProviderKind::DashScope => {
            let messages = body["input"]["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            check_chat(&messages, response, &mut out)
        }
        ProviderKind::Cohere => {
            check_chat(&list("messages"), response, &mut out);
            check_cohere_results(&list("messages"), &mut out);
        }
        ProviderKind::Mistral => {
            check_chat(&list("messages"), response, &mut out);
            check_mistral_ids(&list("messages"), &mut out);
        }
        _ => check_chat(&list("messages"), response, &mut out),
    }
    out
}

/// Cohere: every tool message's content is a list of documents, each with its data as text
/// (the tool-use guide's `{"type": "document", "document": {"data": ...}}`).
fn check_cohere_results(messages: &[Value], out: &mut Problems) {
    for m in messages
        .iter()
        .filter(|m| str_of(m, "role") == Some("tool"))
    {
        let docs = m["content"].as_array().cloned().unwrap_or_default();
        let ok = !docs.is_empty()
            && docs.iter().all(|d| {
                str_of(d, "type") == Some("document") && d["document"]["data"].is_string()
            });
        if !ok {
            out.push(format!(
                "tool message content is not documents: {}",
                m["content"]
            ));
        }
    }
}

/// Mistral: every call id and tool_call_id is exactly nine letters or digits (its 400 otherwise:
/// "must be a-z, A-Z, 0-9, with a length of 9", karthink/gptel#1203).
fn check_mistral_ids(messages: &[Value], out: &mut Problems) {
    let nine = |id: &str| id.len() == 9 && id.bytes().all(|b| b.is_ascii_alphanumeric());
    for m in messages {
        let calls = m["tool_calls"].as_array().into_iter().flatten();
        let ids = calls
            .filter_map(|c| str_of(c, "id"))
            .chain(str_of(m, "tool_call_id"));
        for id in ids {
            if !nine(id) {
                out.push(format!("id {id:?} is not nine letters or digits"));
            }
        }
    }
}

#[test]
fn every_wire_continues_every_wires_history() {
    let mut failures = Vec::new();
    let mut pairs = BTreeSet::new();
    for (source_kind, source) in sources() {
        for &target in TARGETS {
            pairs.insert((source_kind.name(), target.name()));
            let provider = provider_for(target).expect("a built-in provider");
            let req = second_turn(model_for(target), &source.response);
            for stream in [false, true] {
                match provider.encode(&req, stream) {
                    Ok(http) => {
                        for problem in check(source_kind, target, &http.body, &source.response) {
                            failures.push(format!(
                                "{} -> {} (stream {stream}): {problem}",
                                source.case,
                                target.name()
                            ));
                        }
                    }
                    Err(e) => failures.push(format!(
                        "{} -> {}: the second turn does not encode: {e}",
                        source.case,
                        target.name()
                    )),
                }
            }
        }
    }
    assert_eq!(
        pairs.len(),
        TARGETS.len() * TARGETS.len(),
        "every ordered pair: {pairs:?}"
    );
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
