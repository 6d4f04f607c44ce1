//! The canonical request → a Messages API body.

use serde_json::{Map, Value, json};

use super::{API_VERSION, CALLER, TEXT_CITATIONS, THINKING_BLOCKS, anthropic_name};
use crate::error::{Error, Result};
use crate::provider::{HttpRequest, NameMap, ProviderKind};
use crate::providers::hosted::{Piece, foreign_as_text, interleave};
use crate::providers::settings::{
    ANTHROPIC_REASONING, Plan, Policy, ReasoningForm, SamplingNames, rule_for,
};
use crate::providers::shared::{
    Answer, Pairing, ToolResultRun, check_tools, encode_parts, replay_arguments, request_names,
    tool_result_run,
};
use crate::types::{
    AssistantMessage, ChatRequest, Content, Message, Part, ResponseFormat, Source, ToolCall,
    ToolChoice, ToolDefinition, ToolResult,
};

/// Image media types the Messages API takes inline (vision guide).
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// Whether a URL is one Anthropic fetches itself (`http`/`https`); anything else (`gs://`, a
/// provider's file URI, a `data:` URL) is refused rather than guessed at.
fn fetchable(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://")
}

/// One content part as a Messages API block: `text`, `image` (base64 or URL source) or
/// `document` (a PDF, base64 or URL, titled with its file name). `place` names the part in
/// errors (`messages[2].content[1]`). Audio has no block and is refused, as are media types
/// and URLs the API does not take.
fn part_block(part: &Part, place: &str) -> Result<Value> {
    let refuse = |what: String| Err(Error::unsupported(ProviderKind::Anthropic, what));
    let url_source = |url: &str| -> Result<Value> {
        if fetchable(url) {
            Ok(json!({"type": "url", "url": url}))
        } else {
            refuse(format!(
                "the {} at {place}: Anthropic fetches only http(s) URLs, not {url:?}; send the \
                 bytes as data instead",
                part.kind()
            ))
        }
    };
    match part {
        Part::Text { text } => Ok(json!({"type": "text", "text": text})),
        Part::Image { source } => {
            let source = match source {
                Source::Data { media_type, data } if IMAGE_TYPES.contains(&media_type.as_str()) => {
                    json!({"type": "base64", "media_type": media_type, "data": data})
                }
                Source::Data { media_type, .. } => {
                    return refuse(format!(
                        "an image of type {media_type:?} at {place}: Anthropic takes {}",
                        IMAGE_TYPES.join(", ")
                    ));
                }
                Source::Url { url, .. } => url_source(url)?,
            };
            Ok(json!({"type": "image", "source": source}))
        }
        Part::File { source, filename } => {
            let source = match source {
                Source::Data { media_type, data } if media_type == "application/pdf" => {
                    json!({"type": "base64", "media_type": media_type, "data": data})
                }
                // A plain-text document's source is the text itself.
                Source::Data { media_type, data } if media_type == "text/plain" => {
                    let Some(text) = decode_base64(data).and_then(|b| String::from_utf8(b).ok())
                    else {
                        return Err(Error::input(
                            place,
                            "a text/plain file whose data is not base64 of UTF-8 text",
                        ));
                    };
                    json!({"type": "text", "media_type": "text/plain", "data": text})
                }
                Source::Url { url, media_type }
                    if media_type.as_deref().is_none_or(|t| t == "application/pdf") =>
                {
                    url_source(url)?
                }
                other => {
                    return refuse(format!(
                        "a file of type {:?} at {place}: Anthropic document blocks take PDFs \
                         (application/pdf, as data or by URL) and plain text (text/plain, as data)",
                        other.media_type().unwrap_or("unknown")
                    ));
                }
            };
            let mut block = Map::new();
            block.insert("type".into(), json!("document"));
            block.insert("source".into(), source);
            if let Some(name) = filename.as_deref().filter(|n| !n.is_empty()) {
                block.insert("title".into(), json!(name));
            }
            Ok(Value::Object(block))
        }
        Part::Audio { .. } => refuse(format!(
            "audio at {place}: the Messages API has no audio input"
        )),
    }
}

/// Standard base64 (padding optional, no whitespace) to bytes; `None` when it is not.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let digits = text.trim_end_matches('=').as_bytes();
    if text.len() - digits.len() > 2 || digits.len() % 4 == 1 {
        return None;
    }
    let value = |c: u8| -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    };
    let mut out = Vec::with_capacity(digits.len() / 4 * 3 + 2);
    for chunk in digits.chunks(4) {
        let mut n = 0u32;
        for (k, &c) in chunk.iter().enumerate() {
            n |= value(c)? << (18 - 6 * k);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

/// The blocks of a list of parts; empty text parts are left out (the API rejects empty text
/// blocks, and they carry nothing).
fn part_blocks(parts: &[Part], place: &str) -> Result<Vec<Value>> {
    encode_parts(parts, place, part_block)
}

/// The smallest `budget_tokens` Anthropic accepts for extended thinking.
const MIN_THINKING_BUDGET: u32 = 1024;

/// Nesting depth past which [`close_objects`] stops, so a hostile schema cannot overflow the
/// stack.
const MAX_SCHEMA_DEPTH: usize = 128;

/// Whether Anthropic accepts a `tool_use` id: `^[a-zA-Z0-9_-]+$`. Ids made by other providers
/// that break it (`functions.get_weather:0`) are mapped, the same way in calls and results.
fn anthropic_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// Every call id in the history, calls first, for the id map.
fn history_ids(messages: &[Message]) -> impl Iterator<Item = &str> {
    messages
        .iter()
        .flat_map(|m| -> Box<dyn Iterator<Item = &str>> {
            match m {
                Message::Assistant(a) => Box::new(a.tool_calls.iter().map(|c| c.id.as_str())),
                Message::Tool(r) => Box::new(std::iter::once(r.call_id.as_str())),
                _ => Box::new(std::iter::empty()),
            }
        })
}

/// The `input_schema` of a tool (see [`super::Anthropic`]'s `encode_parameters`).
pub(crate) fn input_schema(tool: &ToolDefinition) -> Value {
    let mut schema = match &tool.parameters {
        Value::Object(m) if !m.contains_key("type") => {
            let mut typed = Map::new();
            typed.insert("type".into(), json!("object"));
            typed.extend(m.iter().map(|(k, v)| (k.clone(), v.clone())));
            Value::Object(typed)
        }
        other => other.clone(),
    };
    if tool.strict {
        close_objects(&mut schema, 0);
    }
    schema
}

/// Adds `additionalProperties: false` to every object schema that does not set it, as strict
/// tool use requires; optional properties stay optional (Anthropic, unlike OpenAI, allows
/// them).
fn close_objects(schema: &mut Value, depth: usize) {
    let Value::Object(map) = schema else { return };
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    let is_object = map.get("type").is_some_and(|t| {
        t == "object"
            || t.as_array()
                .is_some_and(|a| a.iter().any(|x| x == "object"))
    }) || map.contains_key("properties");
    if is_object && !map.contains_key("additionalProperties") {
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    for key in ["properties", "$defs", "definitions", "patternProperties"] {
        if let Some(Value::Object(children)) = map.get_mut(key) {
            for child in children.values_mut() {
                close_objects(child, depth + 1);
            }
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(child) = map.get_mut(key) {
            close_objects(child, depth + 1);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(children)) = map.get_mut(key) {
            for child in children {
                close_objects(child, depth + 1);
            }
        }
    }
}

fn tool(tool: &ToolDefinition, names: &NameMap) -> Value {
    let mut t = Map::new();
    t.insert("name".into(), json!(names.wire(&tool.name)));
    if !tool.description.is_empty() {
        t.insert("description".into(), json!(tool.description));
    }
    t.insert("input_schema".into(), input_schema(tool));
    if tool.strict {
        t.insert("strict".into(), Value::Bool(true));
    }
    if tool.defer_loading {
        t.insert("defer_loading".into(), Value::Bool(true));
    }
    if !tool.input_examples.is_empty() {
        t.insert("input_examples".into(), json!(tool.input_examples));
    }
    if !tool.allowed_callers.is_empty() {
        t.insert("allowed_callers".into(), json!(tool.allowed_callers));
    }
    if let Some(eager) = tool.eager_input_streaming {
        t.insert("eager_input_streaming".into(), Value::Bool(eager));
    }
    if let Some(cache) = &tool.cache_control {
        t.insert("cache_control".into(), cache.clone());
    }
    Value::Object(t)
}

/// The thinking blocks kept in `extra` (only `thinking` and `redacted_thinking` objects).
fn thinking_blocks(extra: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    extra
        .get(THINKING_BLOCKS)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| {
            matches!(
                b.get("type").and_then(Value::as_str),
                Some("thinking" | "redacted_thinking")
            )
        })
}

/// A call's `input` object: its arguments, or `{}` when they are malformed or truncated (the
/// API takes only an object, and a broken call was never run).
fn call_input(call: &ToolCall) -> Value {
    match (&call.error, &call.arguments) {
        (None, Some(v @ Value::Object(_))) => v.clone(),
        _ => serde_json::from_str(&replay_arguments(call)).unwrap_or_else(|_| json!({})),
    }
}

/// An assistant turn's content blocks: its opening thinking blocks, its text (with the server
/// tool blocks in place), then each call
/// (after the thinking blocks that preceded it). Reasoning without blocks (from another
/// provider) cannot be sent: Anthropic only takes signed thinking.
fn assistant_blocks(a: &AssistantMessage, names: &NameMap, ids: &NameMap) -> Vec<Value> {
    let mut blocks: Vec<Value> = thinking_blocks(&a.extra).cloned().collect();
    // Text, with the server tool blocks Anthropic sent (only its own: `history` turned other
    // wires' calls into text) back in their places, verbatim; each span that had citations is
    // its own text block with them.
    let spans = cited_spans(&a.extra);
    let mut from = 0;
    for piece in interleave(a.content.as_deref(), &a.hosted_calls) {
        match piece {
            Piece::Text(text) => {
                text_blocks(text, from, &spans, &mut blocks);
                from += text.len();
            }
            Piece::Hosted(call) => blocks.extend(call.blocks.iter().cloned()),
        }
    }
    for call in &a.tool_calls {
        blocks.extend(thinking_blocks(&call.extra).cloned());
        let mut block = json!({
            "type": "tool_use",
            "id": ids.wire(&call.id),
            "name": names.wire(&call.name),
            "input": call_input(call),
        });
        if let Some(caller) = call.extra.get(CALLER).filter(|c| c.is_object()) {
            block[CALLER] = caller.clone();
        }
        blocks.push(block);
    }
    blocks
}

/// The cited spans kept on a turn ([`TEXT_CITATIONS`]): `(start, end, citations)` each, in
/// order; a span that is not two counts and a list of objects, or that overlaps the one
/// before, is left out (the turn may come from a user's file).
fn cited_spans(extra: &Map<String, Value>) -> Vec<(usize, usize, &Vec<Value>)> {
    let list = extra.get(TEXT_CITATIONS).and_then(Value::as_array);
    let mut out: Vec<(usize, usize, &Vec<Value>)> = Vec::new();
    for span in list.into_iter().flatten() {
        let count = |k: &str| {
            span.get(k)
                .and_then(Value::as_u64)
                .and_then(|n| usize::try_from(n).ok())
        };
        let citations = span.get("citations").and_then(Value::as_array);
        let (Some(at), Some(len), Some(citations)) = (count("at"), count("len"), citations) else {
            continue;
        };
        let after = out.last().map_or(0, |(_, end, _)| *end);
        if let Some(end) = at.checked_add(len)
            && at >= after
            && len > 0
            && citations.iter().all(Value::is_object)
        {
            out.push((at, end, citations));
        }
    }
    out
}

/// `text` (standing at byte `from` of the turn's text) as text blocks: each cited span that
/// lies whole inside it on character boundaries a block with its citations, the text around
/// them plain blocks.
fn text_blocks(
    text: &str,
    from: usize,
    spans: &[(usize, usize, &Vec<Value>)],
    out: &mut Vec<Value>,
) {
    let mut done = 0;
    for (at, end, citations) in spans {
        let (Some(start), Some(end)) = (at.checked_sub(from), end.checked_sub(from)) else {
            continue;
        };
        if start < done
            || end > text.len()
            || !text.is_char_boundary(start)
            || !text.is_char_boundary(end)
        {
            continue;
        }
        if start > done {
            out.push(json!({"type": "text", "text": &text[done..start]}));
        }
        out.push(json!({"type": "text", "text": &text[start..end], "citations": citations}));
        done = end;
    }
    if done < text.len() || text.is_empty() {
        out.push(json!({"type": "text", "text": &text[done..]}));
    }
}

/// A result's `content`: a string output as is, other JSON as its text; a failure leads with
/// its message (`is_error` says it failed). `None` when there is nothing to say.
fn result_content(r: &ToolResult) -> Option<String> {
    let output = match &r.output {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let failed = r.is_error || r.error.is_some();
    let text = match &r.error {
        Some(message) if output.is_empty() => message.clone(),
        Some(message) => format!("{message}\n{output}"),
        None if failed && output.is_empty() => "the tool call failed".to_owned(),
        None => output,
    };
    (!text.is_empty()).then_some(text)
}

/// How Anthropic pairs results with calls.
const PAIRING: Pairing = Pairing {
    wire: "Anthropic",
    call: "tool_use",
    result: "tool_result",
    same_name: false,
};

/// The user message answering a call turn: one `tool_result` block per call, in call order,
/// all in this one message.
fn tool_results(run: &ToolResultRun, ids: &NameMap) -> Result<Vec<Value>> {
    let answers = run.paired(&PAIRING)?;
    let mut blocks = Vec::with_capacity(answers.len());
    for Answer { call, at, result } in answers {
        let mut block = Map::new();
        block.insert("type".into(), json!("tool_result"));
        block.insert("tool_use_id".into(), json!(ids.wire(&call.id)));
        if !result.content.is_empty() {
            let mut content = Vec::new();
            if let Some(message) = result.error.as_deref().filter(|m| !m.is_empty()) {
                content.push(json!({"type": "text", "text": message}));
            }
            let place = format!("messages[{at}].content");
            content.extend(part_blocks(&result.content, &place)?);
            block.insert("content".into(), Value::Array(content));
        } else if let Some(content) = result_content(result) {
            block.insert("content".into(), json!(content));
        }
        if result.is_error || result.error.is_some() {
            block.insert("is_error".into(), Value::Bool(true));
        }
        blocks.push(Value::Object(block));
    }
    Ok(blocks)
}

/// The system texts and the `messages`.
fn history(
    messages: &[Message],
    names: &NameMap,
    ids: &NameMap,
) -> Result<(Vec<String>, Vec<Value>)> {
    let mut system = Vec::new();
    let mut out: Vec<Value> = Vec::new();
    // The message answering the last call turn, while a user text may still join it.
    let mut results_open = false;
    let mut i = 0;
    while i < messages.len() {
        match &messages[i] {
            Message::System { content } => system.push(content.clone()),
            Message::User { content } => {
                let blocks = match content {
                    Content::Text(text) => vec![json!({"type": "text", "text": text})],
                    Content::Parts(parts) => part_blocks(parts, &format!("messages[{i}].content"))?,
                };
                let open = if results_open {
                    out.last_mut()
                        .and_then(|m| m.get_mut("content"))
                        .and_then(Value::as_array_mut)
                } else {
                    None
                };
                match (open, content) {
                    (Some(results), _) => results.extend(blocks),
                    (None, Content::Text(text)) => {
                        out.push(json!({"role": "user", "content": text}));
                    }
                    (None, Content::Parts(_)) => {
                        out.push(json!({"role": "user", "content": blocks}));
                    }
                }
                results_open = false;
            }
            Message::Assistant(a) => {
                results_open = false;
                if !a.tool_calls.is_empty()
                    && !matches!(messages.get(i + 1), Some(Message::Tool(_)) | None)
                {
                    return Err(Error::input(
                        format!("messages[{}]", i + 1),
                        format!(
                            "the assistant turn at messages[{i}] called tools, so the next \
                             message must hold their results (Anthropic needs each tool_result \
                             right after its tool_use)"
                        ),
                    ));
                }
                let blocks = assistant_blocks(a, names, ids);
                // An empty turn cannot be sent: only the final assistant message may be empty.
                if !blocks.is_empty() {
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            Message::Tool(_) => {
                let run = tool_result_run(
                    messages,
                    i,
                    "Anthropic answers all calls of a turn in the next user message",
                )?;
                let blocks = tool_results(&run, ids)?;
                let end = run.end;
                out.push(json!({"role": "user", "content": blocks}));
                results_open = true;
                i = end;
                continue;
            }
        }
        i += 1;
    }
    if out.is_empty() {
        return Err(Error::input(
            "messages",
            "Anthropic needs at least one user or assistant message besides system messages",
        ));
    }
    Ok((system, out))
}

fn tool_choice(req: &ChatRequest, names: &NameMap) -> Result<Option<Value>> {
    if req.tools.is_empty() {
        if req.tool_choice == Some(ToolChoice::Required) {
            return Err(Error::input(
                "tool_choice",
                "tool_choice \"required\" needs at least one tool",
            ));
        }
        return Ok(None);
    }
    // `allowed_tools` has no place here: the policy refused it or it falls back to its mode.
    let plain = req.tool_choice.as_ref().map(ToolChoice::without_allowed);
    let mut choice = match (&plain, req.parallel_tool_calls) {
        (None, None) => return Ok(None),
        (None | Some(ToolChoice::Auto), _) => json!({"type": "auto"}),
        (Some(ToolChoice::None), _) => return Ok(Some(json!({"type": "none"}))),
        (Some(ToolChoice::Required), _) => json!({"type": "any"}),
        (Some(ToolChoice::Tool(name)), _) => json!({"type": "tool", "name": names.wire(name)}),
        (Some(ToolChoice::Allowed { .. }), _) => json!({"type": "auto"}),
    };
    if let (Some(parallel), Value::Object(m)) = (req.parallel_tool_calls, &mut choice) {
        m.insert("disable_parallel_tool_use".into(), Value::Bool(!parallel));
    }
    Ok(Some(choice))
}

/// `output_config`: structured outputs, `{"format": {"type": "json_schema", "schema"}}` (no
/// beta header since the feature became generally available). The schema's objects are
/// closed (`additionalProperties: false`), as the API requires; the format has no name or
/// description field, so those stay behind (quirk sheet).
fn output_config(format: &ResponseFormat) -> Value {
    let mut schema = format.schema.clone();
    close_objects(&mut schema, 0);
    json!({"format": {"type": "json_schema", "schema": schema}})
}

/// What a Claude model is sent for the request's reasoning: the `thinking` object and the
/// `output_config.effort` level, each when there is one. The form is the model's row of
/// [`ANTHROPIC_REASONING`] (an unknown model takes a budget, as Claude models before 4.6 do):
/// a model that takes only adaptive thinking never gets `budget_tokens` or `"enabled"`. Shared
/// with Bedrock, which carries both in `additionalModelRequestFields`.
pub(crate) fn claude_reasoning(
    req: &ChatRequest,
    max_tokens: u32,
    kind: ProviderKind,
    policy: &mut Policy<'_>,
    strip: &mut Vec<&'static str>,
) -> Result<(Option<Value>, Option<&'static str>)> {
    let rule = rule_for(ANTHROPIC_REASONING, &req.model);
    let form = rule.map_or(
        ReasoningForm::Budget {
            min: MIN_THINKING_BUDGET,
            max: u32::MAX,
            off: true,
        },
        |r| r.form,
    );
    let plan = policy.reasoning(form)?;
    let thinking = match plan {
        Plan::Default => return Ok((None, None)),
        // Adaptive models think only when asked: off is no `thinking` at all.
        Plan::Off if matches!(form, ReasoningForm::Adaptive { .. }) => return Ok((None, None)),
        Plan::Off => return Ok((Some(json!({"type": "disabled"})), None)),
        Plan::Adaptive(level) => {
            check_while_thinking(req, kind, policy, strip)?;
            return Ok((Some(json!({"type": "adaptive"})), level.map(|l| l.as_str())));
        }
        Plan::Budget(b) => Some(b),
        Plan::On => None,
        other => {
            return Err(Error::unsupported(
                kind,
                format!("reasoning: {other:?} has no Claude form"),
            ));
        }
    };
    if max_tokens <= MIN_THINKING_BUDGET {
        return Err(Error::input(
            "max_tokens",
            format!(
                "thinking needs max_tokens above {MIN_THINKING_BUDGET} (the smallest \
                 thinking budget), got {max_tokens}"
            ),
        ));
    }
    check_while_thinking(req, kind, policy, strip)?;
    let asked_budget = req.reasoning.and_then(|r| r.budget_tokens).is_some();
    let budget = match thinking {
        // A budget mapped from an effort stays below max_tokens, as the API requires.
        Some(b) if !asked_budget && b >= max_tokens => (max_tokens / 2).max(MIN_THINKING_BUDGET),
        Some(b) if b >= max_tokens => {
            return Err(Error::input(
                "reasoning.budget_tokens",
                format!("the thinking budget ({b}) must be below max_tokens ({max_tokens})"),
            ));
        }
        Some(b) => b,
        None => (max_tokens / 2).max(MIN_THINKING_BUDGET),
    };
    Ok((
        Some(json!({"type": "enabled", "budget_tokens": budget})),
        None,
    ))
}

/// What Claude refuses while thinking: a forced tool choice, a changed temperature, `top_k`,
/// `top_p` below 0.95
/// (<https://platform.claude.com/docs/en/build-with-claude/extended-thinking>, "Feature
/// compatibility").
fn check_while_thinking(
    req: &ChatRequest,
    kind: ProviderKind,
    policy: &mut Policy<'_>,
    strip: &mut Vec<&'static str>,
) -> Result<()> {
    if matches!(
        req.tool_choice,
        Some(ToolChoice::Required | ToolChoice::Tool(_))
    ) {
        return Err(Error::unsupported(
            kind,
            "a forced tool_choice (\"required\" or a named tool) with thinking: Anthropic \
             allows only auto or none while thinking",
        ));
    }
    // Sampling settings Claude refuses while thinking follow the drop policy.
    if req.temperature.is_some() {
        policy.cannot(
            "temperature",
            false,
            "Anthropic does not allow changing the temperature while thinking",
        )?;
        strip.push("temperature");
    }
    if req.top_k.is_some() {
        policy.cannot(
            "top_k",
            false,
            "Anthropic does not allow top_k while thinking",
        )?;
        strip.push("top_k");
    }
    if req.top_p.is_some_and(|p| p < 0.95) {
        policy.cannot(
            "top_p",
            false,
            "Anthropic takes top_p from 0.95 to 1 while thinking",
        )?;
        strip.push("top_p");
    }
    Ok(())
}

/// Where the sampling settings go on the Messages wire: `top_p`, `top_k`, `stop_sequences`;
/// no seed and no penalties (<https://platform.claude.com/docs/en/api/messages/create>).
pub(crate) const ANTHROPIC_SAMPLING: SamplingNames = SamplingNames::NONE
    .with_top_p(Some("top_p"))
    .with_top_k(Some("top_k"))
    .with_stop(Some("stop_sequences"), None);

/// The wire name hosted calls made here carry.
const KIND_NAME: &str = "anthropic";

/// The whole request.
pub(crate) fn encode(
    req: &ChatRequest,
    stream: bool,
    default_max_tokens: u32,
) -> Result<HttpRequest> {
    check_tools(req)?;
    crate::providers::shared::refuse_text_calls(req, ProviderKind::Anthropic)?;
    if req.model.trim().is_empty() {
        return Err(Error::input("model", "the model name is empty"));
    }
    let names = NameMap::build(request_names(req), anthropic_name)?;
    let ids = NameMap::build(history_ids(&req.messages), anthropic_id)?;
    let mut downgrades = Vec::new();
    let turns = foreign_as_text(&req.messages, KIND_NAME, &mut downgrades);
    let (system, messages) = history(&turns, &names, &ids)?;
    let max_tokens = req.max_tokens.unwrap_or(default_max_tokens);

    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert("max_tokens".into(), json!(max_tokens));
    match system.as_slice() {
        [] => {}
        [one] => {
            body.insert("system".into(), json!(one));
        }
        many => {
            let blocks: Vec<Value> = many
                .iter()
                .map(|s| json!({"type": "text", "text": s}))
                .collect();
            body.insert("system".into(), Value::Array(blocks));
        }
    }
    body.insert("messages".into(), Value::Array(messages));
    let hosted = crate::providers::hosted_tools::place(ProviderKind::Anthropic, req)?;
    if !req.tools.is_empty() || !hosted.tools.is_empty() {
        let mut tools: Vec<Value> = req.tools.iter().map(|t| tool(t, &names)).collect();
        tools.extend(hosted.tools);
        body.insert("tools".into(), Value::Array(tools));
    }
    for (key, value) in hosted.top {
        body.insert(key, value);
    }
    if let Some(choice) = tool_choice(req, &names)? {
        body.insert("tool_choice".into(), choice);
    }
    let mut policy = Policy::new(ProviderKind::Anthropic, req)?;
    // https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/tool-search-tool,
    // .../programmatic-tool-calling, .../fine-grained-tool-streaming,
    // https://docs.anthropic.com/en/api/messages (tools[].input_examples, cache_control).
    policy.tool_fields(&crate::providers::settings::ToolFields {
        defer_loading: true,
        input_examples: true,
        allowed_callers: true,
        eager_input_streaming: true,
        cache_control: true,
        allowed_tools: false,
    })?;
    let rule = rule_for(ANTHROPIC_REASONING, &req.model);
    if let Some(t) = req.temperature
        && policy.allowed(rule, "temperature")?
    {
        body.insert("temperature".into(), json!(t));
    }
    policy.sampling(&ANTHROPIC_SAMPLING, rule, &mut body)?;
    let mut strip = Vec::new();
    let (thinking, effort) = claude_reasoning(
        req,
        max_tokens,
        ProviderKind::Anthropic,
        &mut policy,
        &mut strip,
    )?;
    for setting in strip {
        body.remove(setting);
    }
    policy.no_summary()?;
    if let Some(thinking) = thinking {
        body.insert("thinking".into(), thinking);
    }
    let mut config = match &req.response_format {
        Some(format) => output_config(format),
        None => json!({}),
    };
    if let Some(effort) = effort {
        config["effort"] = json!(effort);
    }
    if config.as_object().is_some_and(|c| !c.is_empty()) {
        body.insert("output_config".into(), config);
    }
    if stream {
        body.insert("stream".into(), Value::Bool(true));
    }
    crate::providers::shared::merge_extra_body(&mut body, &req.extra_body);
    Ok(HttpRequest {
        path: "/v1/messages".into(),
        headers: std::iter::once(("anthropic-version".into(), API_VERSION.into()))
            .chain(hosted.headers)
            .collect(),
        body: Value::Object(body),
        names,
        downgrades,
        dropped: policy.dropped.into_iter().chain(hosted.dropped).collect(),
        text_calls: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall::new(id, "f", "{}")
    }

    #[test]
    fn turn_rules_are_input_errors_with_paths() {
        let turn = Message::Assistant(AssistantMessage {
            tool_calls: vec![call("toolu_a"), call("toolu_b")],
            ..AssistantMessage::default()
        });
        let result = |id: &str| Message::Tool(ToolResult::ok(&call(id), json!(1)));
        let cases = [
            (vec![Message::user("q"), result("toolu_a")], "messages[1]"),
            (
                vec![Message::user("q"), turn.clone(), result("toolu_x")],
                "messages[2].call_id",
            ),
            (
                vec![Message::user("q"), turn.clone(), result("toolu_a")],
                "messages[1].tool_calls[1]",
            ),
            (
                vec![Message::user("q"), turn.clone(), Message::user("go on")],
                "messages[2]",
            ),
            (vec![Message::system("s")], "messages"),
        ];
        for (messages, want) in cases {
            let req = ChatRequest::new("claude-sonnet-4-5", messages);
            match encode(&req, false, 4096) {
                Err(Error::Input { path, .. }) => assert_eq!(path, want),
                other => panic!("{want}: {other:?}"),
            }
        }
    }

    #[test]
    fn results_share_one_user_message_and_a_user_text_joins_it() {
        let turn = Message::Assistant(AssistantMessage {
            tool_calls: vec![call("functions.f:0"), call("toolu_b")],
            ..AssistantMessage::default()
        });
        let req = ChatRequest::new(
            "claude-sonnet-4-5",
            vec![
                Message::user("q"),
                turn,
                Message::Tool(ToolResult::ok(&call("toolu_b"), json!("two"))),
                Message::Tool(ToolResult::error(&call("functions.f:0"), "boom")),
                Message::user("and now?"),
            ],
        );
        let body = encode(&req, false, 4096).unwrap().body;
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        let mapped = messages[1]["content"][0]["id"].as_str().unwrap();
        assert!(anthropic_id(mapped), "{mapped}");
        let results = messages[2]["content"].as_array().unwrap();
        assert_eq!(results[0]["tool_use_id"], mapped);
        assert_eq!(results[0]["is_error"], true);
        assert_eq!(results[0]["content"], "boom");
        assert_eq!(results[1]["content"], "two");
        assert_eq!(results[2], json!({"type": "text", "text": "and now?"}));
        assert_eq!(body["max_tokens"], 4096);
    }

    #[test]
    fn strict_schemas_close_objects() {
        let t = ToolDefinition::new("f", "")
            .unwrap()
            .with_parameters(json!({"properties": {"a": {"type": "object", "properties": {}}}}))
            .unwrap()
            .with_strict(true);
        assert_eq!(
            input_schema(&t),
            json!({"type": "object", "properties": {"a": {"type": "object", "properties": {},
                "additionalProperties": false}}, "additionalProperties": false})
        );
    }

    #[test]
    fn parts_the_api_cannot_take_are_refused_by_name_and_place() {
        let cases = [
            (
                Part::image("image/bmp", "Qk0="),
                "an image of type \"image/bmp\" at messages[0].content[1]",
            ),
            (Part::image_url("gs://bucket/a.png"), "only http(s) URLs"),
            (
                Part::file("text/csv", "YSxi", "a.csv"),
                "a file of type \"text/csv\"",
            ),
            (
                Part::audio("audio/wav", "UklGRg=="),
                "audio at messages[0].content[1]",
            ),
        ];
        for (part, want) in cases {
            let req = ChatRequest::new(
                "claude-sonnet-4-5",
                vec![Message::user(vec![Part::text("look"), part])],
            );
            match encode(&req, false, 4096) {
                Err(Error::Unsupported { provider, feature }) => {
                    assert_eq!(provider, ProviderKind::Anthropic);
                    assert!(feature.contains(want), "{feature}");
                }
                other => panic!("{want}: {other:?}"),
            }
        }
        // In a tool result too, with the tool message's own index.
        let turn = Message::Assistant(AssistantMessage {
            tool_calls: vec![call("toolu_a")],
            ..AssistantMessage::default()
        });
        let result = ToolResult::ok(&call("toolu_a"), json!(null))
            .with_content([Part::audio("audio/wav", "UklGRg==")]);
        let req = ChatRequest::new(
            "claude-sonnet-4-5",
            vec![Message::user("q"), turn, Message::Tool(result)],
        );
        let err = encode(&req, false, 4096).unwrap_err().to_string();
        assert!(err.contains("audio at messages[2].content[0]"), "{err}");
    }

    #[test]
    fn plain_text_documents_carry_their_text() {
        assert_eq!(decode_base64("aGVsbG8=").as_deref(), Some(&b"hello"[..]));
        assert_eq!(decode_base64("aGk").as_deref(), Some(&b"hi"[..]));
        assert_eq!(decode_base64("").as_deref(), Some(&b""[..]));
        assert!(decode_base64("a").is_none());
        assert!(decode_base64("aGk*").is_none());
        assert!(decode_base64("aG===").is_none());
        let block = part_block(&Part::file("text/plain", "aGVsbG8=", "note.txt"), "p").unwrap();
        assert_eq!(
            block,
            json!({"type": "document", "source": {"type": "text", "media_type": "text/plain",
                   "data": "hello"}, "title": "note.txt"})
        );
        let err = part_block(&Part::file("text/plain", "//8=", "bin.txt"), "p").unwrap_err();
        assert!(matches!(err, Error::Input { .. }), "{err:?}");
    }

    #[test]
    fn cited_spans_split_the_text_and_odd_spans_are_left_out() {
        let c = json!([{"type": "char_location", "cited_text": "x"}]);
        let turn = AssistantMessage::default()
            .with_content("héllo world")
            .with_extra(
                TEXT_CITATIONS,
                json!([
                    {"at": 0, "len": 3, "citations": c},
                    // Overlaps the one before: left out.
                    {"at": 1, "len": 2, "citations": c},
                    // Ends inside nothing valid (past the text): left out.
                    {"at": 6, "len": 99, "citations": c},
                    {"at": usize::MAX, "len": 5, "citations": c},
                    // Not a list of objects: left out.
                    {"at": 7, "len": 2, "citations": [1]},
                ]),
            );
        let names = NameMap::default();
        let blocks = assistant_blocks(&turn, &names, &names);
        assert_eq!(
            blocks,
            [
                json!({"type": "text", "text": "hé", "citations": c}),
                json!({"type": "text", "text": "llo world"}),
            ]
        );
        // A span that cuts a character is left out; the text stays whole.
        let turn = turn.with_extra(TEXT_CITATIONS, json!([{"at": 0, "len": 2, "citations": c}]));
        let blocks = assistant_blocks(&turn, &names, &names);
        assert_eq!(blocks, [json!({"type": "text", "text": "héllo world"})]);
    }
}
