//! The canonical request → a Chat Completions body.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

use super::Dialect;
use super::dialect::{
    CallIds, FilePart, InlineImage, ParallelCalls, StructuredOutput, ThinkingSwitch,
};
use crate::error::{Error, Result};
use crate::provider::{HttpRequest, NameMap};
use crate::providers::settings::{Plan, Policy, rule_for};
use crate::providers::shared::{
    check_tools, history_call, invalid_property_key, json_schema_format, request_names,
    tool_media_after_runs,
};
use crate::schema;
use crate::text_calls::TextCalls;
use crate::types::{
    ChatRequest, Content, Effort, Message, Part, ResponseFormat, Source, Thinking, ToolChoice,
    ToolDefinition,
};

pub(crate) fn tool_json(dialect: &Dialect, tool: &ToolDefinition, names: &NameMap) -> Value {
    let mut function = Map::new();
    function.insert("name".into(), json!(names.wire(&tool.name)));
    if !tool.description.is_empty() {
        function.insert("description".into(), json!(tool.description));
    }
    function.insert("parameters".into(), parameters(tool));
    if tool.strict {
        function.insert("strict".into(), json!(true));
    }
    let _ = dialect;
    json!({"type": "function", "function": function})
}

/// The `parameters` schema a tool is sent with (strict tools get the strict form). The one
/// lowering both `encode` and [`crate::Provider::encode_parameters`] use.
pub(crate) fn parameters(tool: &ToolDefinition) -> Value {
    if tool.strict {
        schema::to_strict(&tool.parameters)
    } else {
        tool.parameters.clone()
    }
}

/// One content part in the wire's shape (`at` names it for errors), or
/// [`Error::Unsupported`] when the wire cannot carry it: never dropped, never made text.
fn part_json(dialect: &Dialect, part: &Part, at: &str) -> Result<Value> {
    let kind = dialect.info.kind;
    let refuse = |why: String| Err(Error::unsupported(kind, format!("{at}: {why}")));
    match part {
        Part::Text { text } => Ok(json!({"type": "text", "text": text})),
        Part::Image { source } => {
            let url = match (dialect.media.image, source) {
                (None, _) => {
                    return refuse(format!(
                        "an image part: {kind}'s user content takes no images"
                    ));
                }
                (Some(_), Source::Url { url, .. }) => url.clone(),
                (Some(InlineImage::DataUrl), data) => data.as_url(),
                (Some(InlineImage::Bare), Source::Data { data, .. }) => data.clone(),
            };
            Ok(json!({"type": "image_url", "image_url": {"url": url}}))
        }
        Part::File { source, filename } => match (dialect.media.file, source) {
            (FilePart::FileData, Source::Data { .. }) => {
                let mut file = Map::new();
                if let Some(name) = filename {
                    file.insert("filename".into(), json!(name));
                }
                file.insert("file_data".into(), json!(source.as_url()));
                Ok(json!({"type": "file", "file": file}))
            }
            (FilePart::FileData, _) => refuse(format!(
                "a file part by URL: {kind}'s file part takes inline data (file_data) or an \
                 uploaded file_id, not a URL; send the bytes as data"
            )),
            (FilePart::FileUrl, Source::Url { url, .. }) => {
                Ok(json!({"type": "file_url", "file_url": {"url": url}}))
            }
            (FilePart::FileUrl, _) => refuse(format!(
                "a file part with inline data: {kind} takes documents by URL only (file_url); \
                 give the file a URL"
            )),
            _ => refuse(format!(
                "a file part: {kind}'s user content takes no files (documents); send their text"
            )),
        },
        Part::Audio { source } => {
            if dialect.media.audio.is_empty() {
                return refuse(format!(
                    "an audio part: {kind}'s user content takes no audio"
                ));
            }
            let Source::Data { media_type, data } = source else {
                return refuse(format!(
                    "an audio part by URL: {kind}'s input_audio takes base64 data only"
                ));
            };
            match dialect.media.audio.iter().find(|(t, _)| t == media_type) {
                Some((_, format)) => Ok(
                    json!({"type": "input_audio", "input_audio": {"data": data, "format": format}}),
                ),
                None => refuse(format!(
                    "audio of type {media_type:?}: {kind}'s input_audio takes {}",
                    dialect
                        .media
                        .audio
                        .iter()
                        .map(|(t, _)| *t)
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
    }
}

/// Parts as a content array; `at` is the message's path (`messages[2]`).
fn parts_json(dialect: &Dialect, parts: &[Part], at: &str) -> Result<Value> {
    parts
        .iter()
        .enumerate()
        .map(|(j, p)| part_json(dialect, p, &format!("{at}.content[{j}]")))
        .collect::<Result<Vec<_>>>()
        .map(Value::Array)
}

/// A user message's content: a plain text stays a string, exactly as before parts existed.
fn user_content(dialect: &Dialect, content: &Content, at: &str) -> Result<Value> {
    match content {
        Content::Text(text) => Ok(json!(text)),
        Content::Parts(parts) => parts_json(dialect, parts, at),
    }
}

/// The answer schema as the wire takes it, or the refusal when it cannot.
fn response_format_json(
    dialect: &Dialect,
    req: &ChatRequest,
    format: &ResponseFormat,
) -> Result<Value> {
    let kind = dialect.info.kind;
    match dialect.structured_output {
        StructuredOutput::JsonObjectOnly => {
            return Err(Error::unsupported(
                kind,
                format!(
                    "response_format (an answer schema): {kind} documents only \
                     {{\"type\": \"json_object\"}}, which does not enforce a schema; set that \
                     in extra_body.response_format and describe the schema in the prompt"
                ),
            ));
        }
        StructuredOutput::JsonSchemaNotThinking if thinking_on(dialect, req) => {
            return Err(Error::unsupported(
                kind,
                format!(
                    "response_format in thinking mode: {kind} documents structured output for \
                     non-thinking mode only; turn thinking off"
                ),
            ));
        }
        _ => {}
    }
    let spec = json_schema_format(format, super::openai_name)?;
    Ok(json!({"type": "json_schema", "json_schema": spec}))
}

/// History call ids the wire's [`CallIds`] rule would refuse, and what goes instead: empty when
/// every id meets the rule. Deterministic (the same history gives the same ids in every request,
/// so a conversation's turns agree) and collision-checked against every other id of the request.
pub(crate) fn wire_call_ids(rule: CallIds, messages: &[Message]) -> HashMap<String, String> {
    let CallIds::Alphanumeric(len) = rule else {
        return HashMap::new();
    };
    if len == 0 {
        return HashMap::new(); // no id can be made: the wire's own error says so
    }
    let ids = messages.iter().flat_map(|m| -> Vec<&str> {
        match m {
            Message::Assistant(a) => a.tool_calls.iter().map(|c| c.id.as_str()).collect(),
            Message::Tool(r) => vec![r.call_id.as_str()],
            _ => Vec::new(),
        }
    });
    let (kept, foreign): (Vec<&str>, Vec<&str>) = ids.partition(|id| rule.allows(id));
    let mut taken: HashSet<String> = kept.into_iter().map(str::to_owned).collect();
    let mut map = HashMap::new();
    for id in foreign {
        if map.contains_key(id) {
            continue;
        }
        // FNV-1a of the id and a salt, drawn into letters and digits; the next salt on a collision.
        let wire = (0u64..)
            .map(|salt| derived_id(id, salt, len))
            .find(|candidate| !taken.contains(candidate))
            .unwrap_or_default();
        taken.insert(wire.clone());
        map.insert(id.to_owned(), wire);
    }
    map
}

/// `len` letters and digits derived from `id` and `salt`.
fn derived_id(id: &str, salt: u64, len: usize) -> String {
    const DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut state: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes().chain(salt.to_le_bytes()) {
        state ^= u64::from(b);
        state = state.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // One splitmix64 step per character, so every length draws on the whole hash.
    (0..len)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            char::from(DIGITS[(z % 62) as usize])
        })
        .collect()
}

fn message_json(
    dialect: &Dialect,
    i: usize,
    m: &Message,
    names: &NameMap,
    ids: &HashMap<String, String>,
) -> Result<Value> {
    let id = |id: &str| ids.get(id).cloned().unwrap_or_else(|| id.to_owned());
    Ok(match m {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({
            "role": "user",
            "content": user_content(dialect, content, &format!("messages[{i}]"))?,
        }),
        Message::Assistant(a) => {
            let mut msg = Map::new();
            msg.insert("role".into(), json!("assistant"));
            let content = match &a.content {
                None if dialect.empty_content_as_string => json!(""),
                other => json!(other),
            };
            msg.insert("content".into(), content);
            if let Some(field) = dialect.echo_reasoning
                && !a.tool_calls.is_empty()
            {
                // A turn made by another model may have no reasoning: the dialect's
                // placeholder then, where the server documents one.
                match (&a.reasoning, dialect.reasoning_placeholder) {
                    (Some(reasoning), _) => {
                        msg.insert(field.into(), json!(reasoning));
                    }
                    (None, Some(placeholder)) => {
                        msg.insert(field.into(), json!(placeholder));
                    }
                    (None, None) => {}
                }
            }
            if let Some(field) = dialect.reasoning_details
                && let Some(details) = a.extra.get(field)
            {
                msg.insert(field.into(), details.clone());
            }
            if !a.tool_calls.is_empty() {
                let calls: Vec<Value> = a
                    .tool_calls
                    .iter()
                    .map(|c| {
                        let mut call = history_call(c, names, None);
                        call["id"] = json!(id(&c.id));
                        call
                    })
                    .collect();
                msg.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(msg)
        }
        // Text only: media in the result moved to a user message after the run.
        Message::Tool(r) => json!({
            "role": "tool",
            "tool_call_id": id(&r.call_id),
            "content": r.content_text(),
        }),
    })
}

/// The choice in OpenAI's shapes, "required" spelled `required` (Mistral: `any`).
fn tool_choice_json(dialect: &Dialect, choice: &ToolChoice, names: &NameMap) -> Value {
    let required = dialect.required_tool_choice;
    match choice {
        ToolChoice::Allowed { mode, tools } if dialect.allowed_tools_choice => {
            let tools: Vec<Value> = tools
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": names.wire(t)}}))
                .collect();
            json!({"type": "allowed_tools", "allowed_tools": {"mode": mode.as_str(), "tools": tools}})
        }
        // Refused or dropped by the policy: the mode alone.
        ToolChoice::Allowed { mode, .. } => match mode {
            crate::types::AllowedMode::Required => json!(required),
            _ => json!("auto"),
        },
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!(required),
        ToolChoice::Tool(name) => {
            json!({"type": "function", "function": {"name": names.wire(name)}})
        }
    }
}

/// Whether the request runs the model in thinking mode: the wire switch in `extra_body` if
/// set there, else [`ChatRequest::thinking`], else whether the model always thinks.
pub(crate) fn thinking_on(dialect: &Dialect, req: &ChatRequest) -> bool {
    let from_extra = match dialect.thinking {
        ThinkingSwitch::NotSent
        | ThinkingSwitch::Effort(_)
        | ThinkingSwitch::ReasoningObject(_) => None,
        ThinkingSwitch::Flag(field) | ThinkingSwitch::FlagBudget(field, _) => {
            req.extra_body.get(field).and_then(Value::as_bool)
        }
        ThinkingSwitch::TypeObject(field) | ThinkingSwitch::TypeObjectEffort(field, _) => req
            .extra_body
            .get(field)
            .and_then(|v| v.get("type"))
            .and_then(Value::as_str)
            .map(|t| t == "enabled"),
    };
    let asked = match req.thinking_wanted() {
        Thinking::Unset => None,
        Thinking::Off => Some(false),
        Thinking::On { .. } => Some(true),
    };
    from_extra.or(asked).unwrap_or(false)
        || dialect
            .thinking_models
            .iter()
            .any(|m| req.model.contains(m))
}

/// The choice as the canonical JSON spells it: `"required"`, `{"name":"f"}`.
fn choice_text(choice: &ToolChoice) -> String {
    serde_json::to_string(choice).unwrap_or_default()
}

/// The dialect's rules a request must meet before anything is sent: each one a typed
/// [`Error::Unsupported`] saying what cannot be sent and what to do instead.
fn check_dialect(dialect: &Dialect, req: &ChatRequest) -> Result<()> {
    let kind = dialect.info.kind;
    if let Some(choice) = &req.tool_choice {
        if !dialect.tool_choice.allows(choice) {
            return Err(Error::unsupported(
                kind,
                format!(
                    "tool_choice {}: {kind} only honours tool_choice \"auto\"; leave it unset or \
                     \"auto\" (to rule out tool calls, send the request without tools)",
                    choice_text(choice)
                ),
            ));
        }
        if !dialect.thinking_tool_choice.allows(choice) && thinking_on(dialect, req) {
            return Err(Error::unsupported(
                kind,
                format!(
                    "tool_choice {} in thinking mode: {kind} accepts only \"auto\" or \"none\" \
                     while the model thinks; turn thinking off or use \"auto\"",
                    choice_text(choice)
                ),
            ));
        }
    }
    if dialect.parallel_tool_calls == ParallelCalls::Undocumented
        && req.parallel_tool_calls == Some(false)
        && !req.tools.is_empty()
    {
        return Err(Error::unsupported(
            kind,
            format!(
                "parallel_tool_calls false: {kind} documents no parallel_tool_calls field, so \
                 one call per turn cannot be promised; leave it unset"
            ),
        ));
    }
    if !req.tools.is_empty() {
        for flag in dialect.exclusive_with_tools {
            if req.extra_body.get(*flag) == Some(&Value::Bool(true)) {
                return Err(Error::unsupported(
                    kind,
                    format!(
                        "extra_body.{flag} true together with tools: {kind} cannot combine \
                         them; drop {flag} or the tools"
                    ),
                ));
            }
        }
    }
    if dialect.check_property_keys {
        for (i, tool) in req.tools.iter().enumerate() {
            check_keys(dialect, tool).map_err(|e| match e {
                Error::Unsupported { provider, feature } => Error::Unsupported {
                    provider,
                    feature: format!("tools[{i}] ({}): {feature}", tool.name),
                },
                other => other,
            })?;
        }
    }
    Ok(())
}

/// Checks the parameter keys of one tool against the dialect's name rule.
pub(crate) fn check_keys(dialect: &Dialect, tool: &ToolDefinition) -> Result<()> {
    if !dialect.check_property_keys {
        return Ok(());
    }
    match invalid_property_key(&tool.parameters, dialect.valid_name) {
        None => Ok(()),
        Some((path, key)) => Err(Error::unsupported(
            dialect.info.kind,
            format!(
                "parameter key {key:?} at parameters.{path} breaks {}'s key rule (letters, \
                 digits, '-' and '_', at most 64 characters); rename the property",
                dialect.info.kind
            ),
        )),
    }
}

/// The whole request body.
pub(crate) fn encode(dialect: &Dialect, req: &ChatRequest, stream: bool) -> Result<HttpRequest> {
    check_tools(req)?;
    // No hosted tools on this wire: each is refused by name (or left out and listed).
    let hosted_dropped = crate::providers::hosted_tools::place(dialect.info.kind, req)?.dropped;
    check_dialect(dialect, req)?;
    let names = NameMap::build(request_names(req), dialect.valid_name)?;
    let mut downgrades = Vec::new();
    // Calls another wire's provider ran go as text, each with a note.
    let turns = crate::providers::hosted::foreign_as_text(
        &req.messages,
        dialect.info.kind.name(),
        &mut downgrades,
    );
    let moved = tool_media_after_runs(&req.messages, dialect.info.kind.name(), &mut downgrades);
    let ids = wire_call_ids(dialect.call_ids, &req.messages);
    let mut messages = Vec::with_capacity(req.messages.len() + moved.len());
    for (i, m) in turns.iter().enumerate() {
        messages.push(message_json(dialect, i, m, &names, &ids)?);
        if let Some(parts) = moved.get(&i) {
            let at = format!("messages[{i}] (tool result media)");
            messages.push(json!({"role": "user", "content": parts_json(dialect, parts, &at)?}));
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(
                req.tools
                    .iter()
                    .map(|t| tool_json(dialect, t, &names))
                    .collect(),
            ),
        );
    }
    if let Some(choice) = &req.tool_choice {
        body.insert(
            "tool_choice".into(),
            tool_choice_json(dialect, choice, &names),
        );
    }
    if !req.tools.is_empty() {
        let parallel = match dialect.parallel_tool_calls {
            ParallelCalls::AsAsked => req.parallel_tool_calls,
            ParallelCalls::DefaultTrue => Some(req.parallel_tool_calls.unwrap_or(true)),
            ParallelCalls::Undocumented => None,
        };
        if let Some(parallel) = parallel {
            body.insert("parallel_tool_calls".into(), json!(parallel));
        }
    }
    if let Some(format) = &req.response_format {
        body.insert(
            "response_format".into(),
            response_format_json(dialect, req, format)?,
        );
    }
    if let Some(max) = req.max_tokens {
        body.insert(dialect.max_tokens_field.into(), json!(max));
    }
    let mut policy = Policy::new(dialect.info.kind, req)?;
    policy.tool_fields(&crate::providers::settings::ToolFields {
        allowed_tools: dialect.allowed_tools_choice,
        ..crate::providers::settings::ToolFields::NONE
    })?;
    let rule = rule_for(dialect.reasoning, &req.model);
    if let Some(t) = req.temperature
        && policy.allowed(rule, "temperature")?
    {
        body.insert("temperature".into(), json!(t));
    }
    policy.sampling(&dialect.sampling, rule, &mut body)?;
    let form = rule.map_or(dialect.reasoning_default, |r| r.form);
    let plan = policy.reasoning(form)?;
    reasoning_json(dialect, plan, &mut policy, &mut body)?;
    policy.no_summary()?;
    for flag in dialect.request_flags {
        body.insert((*flag).into(), json!(true));
    }
    if stream {
        body.insert("stream".into(), json!(true));
        if dialect.stream_usage {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        if !req.tools.is_empty() && dialect.tool_stream_models.contains(&req.model.as_str()) {
            body.insert("tool_stream".into(), json!(true));
        }
    }
    for (k, v) in &req.extra_body {
        body.insert(k.clone(), v.clone());
    }
    let text_calls = req.text_calls.map(|format| {
        let tools = req.tools.iter();
        TextCalls::new(
            format,
            tools.map(|t| (names.wire(&t.name).to_owned(), t.parameters.clone())),
        )
    });
    Ok(HttpRequest {
        path: dialect.path.to_owned(),
        headers: Vec::new(),
        body: Value::Object(body),
        names,
        downgrades,
        dropped: policy.dropped.into_iter().chain(hosted_dropped).collect(),
        text_calls,
    })
}

/// The reasoning plan in the dialect's spelling ([`Dialect::thinking`]).
fn reasoning_json(
    dialect: &Dialect,
    plan: Plan,
    policy: &mut Policy<'_>,
    body: &mut Map<String, Value>,
) -> Result<()> {
    let mut put = |k: &str, v: Value| {
        body.insert(k.into(), v);
    };
    match (dialect.thinking, plan) {
        (_, Plan::Default) => {}
        (ThinkingSwitch::Flag(f) | ThinkingSwitch::FlagBudget(f, _), Plan::Off) => {
            put(f, json!(false));
        }
        (ThinkingSwitch::FlagBudget(f, b), Plan::Budget(n)) => {
            put(f, json!(true));
            put(b, json!(n));
        }
        (ThinkingSwitch::Flag(f) | ThinkingSwitch::FlagBudget(f, _), _) => put(f, json!(true)),
        (ThinkingSwitch::TypeObject(f), Plan::Off) => put(f, json!({"type": "disabled"})),
        (ThinkingSwitch::TypeObject(f), _) => put(f, json!({"type": "enabled"})),
        (ThinkingSwitch::Effort(f), Plan::Level(level)) => put(f, json!(level.as_str())),
        (ThinkingSwitch::TypeObjectEffort(f, _), Plan::Off | Plan::Level(Effort::None)) => {
            put(f, json!({"type": "disabled"}));
        }
        (ThinkingSwitch::TypeObjectEffort(f, e), Plan::Level(level)) => {
            put(f, json!({"type": "enabled"}));
            put(e, json!(level.as_str()));
        }
        (ThinkingSwitch::TypeObjectEffort(f, _), Plan::On) => put(f, json!({"type": "enabled"})),
        // On at the model's default level: nothing to say.
        (ThinkingSwitch::Effort(_), Plan::On) => {}
        (ThinkingSwitch::ReasoningObject(f), Plan::Any { effort, budget }) => {
            let mut o = Map::new();
            if let Some(e) = effort {
                o.insert("effort".into(), json!(e.as_str()));
            }
            if let Some(b) = budget {
                o.insert("max_tokens".into(), json!(b));
            }
            if o.is_empty() {
                o.insert("enabled".into(), json!(true));
            }
            put(f, Value::Object(o));
        }
        (_, plan) => {
            let why = format!(
                "{} cannot send {plan:?} for {}",
                dialect.info.kind,
                policy.model()
            );
            policy.cannot("reasoning", false, &why)?;
        }
    }
    Ok(())
}
