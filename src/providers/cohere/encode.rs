//! The canonical request → a Cohere v2 `/v2/chat` body.

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::provider::{HttpRequest, NameMap, ProviderKind};
use crate::providers::openai::openai_name;
use crate::providers::settings::{
    Plan, Policy, ReasoningForm, ReasoningRule, SamplingNames, rule_for,
};
use crate::providers::shared::{
    check_tools, encode_parts, history_call, merge_extra_body, request_names, tool_media_after_runs,
};
use crate::schema;
use crate::types::{ChatRequest, Content, Message, Part, ToolChoice, ToolDefinition};

const KIND: ProviderKind = ProviderKind::Cohere;

/// A tool as `{"type": "function", "function": {"name", "description"?, "parameters"}}`.
pub(crate) fn tool_json(tool: &ToolDefinition, names: &NameMap) -> Value {
    let mut function = Map::new();
    function.insert("name".into(), json!(names.wire(&tool.name)));
    if !tool.description.is_empty() {
        function.insert("description".into(), json!(tool.description));
    }
    function.insert("parameters".into(), parameters(tool));
    json!({"type": "function", "function": function})
}

/// The `parameters` a tool is sent with: its schema as it is (strict tools get the strict
/// form, since `strict_tools` makes the server enforce it).
pub(crate) fn parameters(tool: &ToolDefinition) -> Value {
    if tool.strict {
        schema::to_strict(&tool.parameters)
    } else {
        tool.parameters.clone()
    }
}

/// One user content part: text, or an image by URL or data URL (`image_url`); documents and
/// audio have no user content part on the chat endpoint.
fn part_json(part: &Part, at: &str) -> Result<Value> {
    match part {
        Part::Text { text } => Ok(json!({"type": "text", "text": text})),
        Part::Image { source } => {
            Ok(json!({"type": "image_url", "image_url": {"url": source.as_url()}}))
        }
        other => Err(Error::unsupported(
            KIND,
            format!(
                "{at}: a {} part: cohere's user content takes text and images only (documents go \
                 in the request's documents field, as text)",
                other.kind()
            ),
        )),
    }
}

fn user_content(content: &Content, at: &str) -> Result<Value> {
    match content {
        Content::Text(text) => Ok(json!(text)),
        Content::Parts(parts) => {
            let place = format!("{at}.content");
            Ok(Value::Array(encode_parts(parts, &place, part_json)?))
        }
    }
}

fn message_json(i: usize, m: &Message, names: &NameMap) -> Result<Value> {
    Ok(match m {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({
            "role": "user",
            "content": user_content(content, &format!("messages[{i}]"))?,
        }),
        Message::Assistant(a) => {
            let mut msg = Map::new();
            msg.insert("role".into(), json!("assistant"));
            if !a.tool_calls.is_empty() {
                // The reasoning before the calls goes back as the tool plan it came as.
                if let Some(plan) = a.reasoning.as_ref().filter(|r| !r.is_empty()) {
                    msg.insert("tool_plan".into(), json!(plan));
                }
                let calls = a.tool_calls.iter().map(|c| history_call(c, names, None));
                msg.insert("tool_calls".into(), Value::Array(calls.collect()));
            }
            if let Some(text) = a.content.as_ref().filter(|t| !t.is_empty()) {
                msg.insert("content".into(), json!(text));
            } else if a.tool_calls.is_empty() {
                msg.insert("content".into(), json!(""));
            }
            Value::Object(msg)
        }
        // The result as one document whose data is its text (the tool-use guide's form);
        // media in it moved to a user message after the run.
        Message::Tool(r) => json!({
            "role": "tool",
            "tool_call_id": r.call_id,
            "content": [{"type": "document", "document": {"data": r.content_text()}}],
        }),
    })
}

/// What the wire cannot express, refused before anything is sent.
fn check(req: &ChatRequest) -> Result<()> {
    if let Some(ToolChoice::Tool(name)) = &req.tool_choice {
        return Err(Error::unsupported(
            KIND,
            format!(
                "tool_choice {{\"name\": {name:?}}}: cohere's tool_choice is REQUIRED or NONE, it \
                 cannot name a tool; send only that tool with tool_choice \"required\""
            ),
        ));
    }
    if req.parallel_tool_calls == Some(false) && !req.tools.is_empty() {
        return Err(Error::unsupported(
            KIND,
            "parallel_tool_calls false: cohere documents no switch for parallel calls, so one \
             call per turn cannot be promised; leave it unset",
        ));
    }
    let strict = req.tools.iter().filter(|t| t.strict).count();
    if strict > 0 && strict < req.tools.len() {
        return Err(Error::unsupported(
            KIND,
            "strict on some tools only: cohere's strict_tools applies to every tool of the \
             request; make all tools strict or none",
        ));
    }
    Ok(())
}

/// The whole request body.
pub(crate) fn encode(req: &ChatRequest, stream: bool) -> Result<HttpRequest> {
    check_tools(req)?;
    // No hosted tools on this wire: each is refused by name (or left out and listed).
    let hosted_dropped = crate::providers::hosted_tools::place(KIND, req)?.dropped;
    crate::providers::shared::refuse_text_calls(req, ProviderKind::Cohere)?;
    check(req)?;
    let names = NameMap::build(request_names(req), openai_name)?;
    let mut downgrades = Vec::new();
    // Calls another wire's provider ran go as text, each with a note.
    let turns =
        crate::providers::hosted::foreign_as_text(&req.messages, KIND.name(), &mut downgrades);
    let moved = tool_media_after_runs(&req.messages, KIND.name(), &mut downgrades);
    let mut messages = Vec::with_capacity(req.messages.len() + moved.len());
    for (i, m) in turns.iter().enumerate() {
        messages.push(message_json(i, m, &names)?);
        if let Some(parts) = moved.get(&i) {
            let at = format!("messages[{i}] (tool result media)");
            let content = encode_parts(parts, &at, part_json)?;
            messages.push(json!({"role": "user", "content": content}));
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        let tools = req.tools.iter().map(|t| tool_json(t, &names));
        body.insert("tools".into(), Value::Array(tools.collect()));
        if req.tools.iter().all(|t| t.strict) {
            body.insert("strict_tools".into(), json!(true));
        }
    }
    match req.tool_choice.as_ref().map(ToolChoice::without_allowed) {
        // Auto is the default and has no spelling on this wire.
        None | Some(ToolChoice::Auto | ToolChoice::Allowed { .. }) => {}
        Some(ToolChoice::None) => {
            body.insert("tool_choice".into(), json!("NONE"));
        }
        Some(ToolChoice::Required) => {
            body.insert("tool_choice".into(), json!("REQUIRED"));
        }
        Some(ToolChoice::Tool(_)) => {}
    }
    if let Some(format) = &req.response_format {
        let schema = if format.strict == Some(true) {
            schema::to_strict(&format.schema)
        } else {
            format.schema.clone()
        };
        body.insert(
            "response_format".into(),
            json!({"type": "json_object", "json_schema": schema}),
        );
    }
    if let Some(max) = req.max_tokens {
        body.insert("max_tokens".into(), json!(max));
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    let mut policy = Policy::new(ProviderKind::Cohere, req)?;
    policy.tool_fields(&crate::providers::settings::ToolFields::NONE)?;
    let rule = rule_for(COHERE_REASONING, &req.model);
    policy.sampling(&COHERE_SAMPLING, rule, &mut body)?;
    match policy.reasoning(rule.map_or(ReasoningForm::Switch, |r| r.form))? {
        Plan::Default => {}
        Plan::Off => {
            body.insert("thinking".into(), json!({"type": "disabled"}));
        }
        Plan::Budget(b) => {
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "token_budget": b}),
            );
        }
        _ => {
            body.insert("thinking".into(), json!({"type": "enabled"}));
        }
    }
    policy.no_summary()?;
    if stream {
        body.insert("stream".into(), json!(true));
    }
    merge_extra_body(&mut body, &req.extra_body);
    Ok(HttpRequest {
        path: "/v2/chat".to_owned(),
        headers: Vec::new(),
        body: Value::Object(body),
        names,
        downgrades,
        dropped: policy.dropped.into_iter().chain(hosted_dropped).collect(),
        text_calls: None,
    })
}

/// Where the sampling settings go on Cohere's v2 chat: `p`, `k`, `stop_sequences` (up to 5),
/// `seed`, `presence_penalty`, `frequency_penalty` (<https://docs.cohere.com/reference/chat>).
const COHERE_SAMPLING: SamplingNames = SamplingNames::NONE
    .with_top_p(Some("p"))
    .with_top_k(Some("k"))
    .with_stop(Some("stop_sequences"), Some(5))
    .with_seed(Some("seed"))
    .with_presence_penalty(Some("presence_penalty"))
    .with_frequency_penalty(Some("frequency_penalty"));

/// Cohere's reasoning table: the reasoning models take `thinking: {"type": "enabled",
/// "token_budget": N}` or `{"type": "disabled"}`; other models take the switch as sent
/// (<https://docs.cohere.com/docs/reasoning>).
pub(super) const COHERE_REASONING: &[ReasoningRule] = &[ReasoningRule::new(
    &["reasoning"],
    ReasoningForm::Budget {
        min: 1,
        max: u32::MAX,
        off: true,
    },
    "https://docs.cohere.com/docs/reasoning",
)];
