//! Scripting calls the provider runs itself: a [`HostedCall`] with the blocks, items or parts
//! each wire sends for it, so the mock answers with them and a client decodes them back.

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::provider::ProviderKind;
use crate::types::HostedCall;

/// A hosted call named `name` (`web_search`, `code_execution`, …) with this id, input and
/// result, as `kind`'s wire carries it; put it on a scripted response with
/// [`crate::ChatResponse::with_hosted_calls`]:
///
/// - Anthropic: a `server_tool_use` block and a `<name>_tool_result` block whose `content` is
///   the result;
/// - Bedrock: a `toolUse` of `type: server_tool_use` and a `toolResult` of type
///   `<name>_result` whose content is the result as one `json` piece;
/// - Responses: one `<name>_call` item, completed, with the input's fields (a web search's
///   `action`, the interpreter's `code`) and, for `code_interpreter`, the result as `outputs`;
/// - Gemini: `code_execution` only: an `executableCode` part (the input) and a
///   `codeExecutionResult` part (the result); the id is not kept (the parts have none).
///
/// Other wires have no hosted calls: [`Error::Unsupported`].
pub fn hosted_call(
    kind: ProviderKind,
    id: &str,
    name: &str,
    input: Value,
    result: Value,
) -> Result<HostedCall> {
    // Gemini's code parts carry no id.
    let id_kept = if kind == ProviderKind::Gemini { "" } else { id };
    let call = HostedCall::new(id_kept, name, kind.name());
    let blocks = match kind {
        ProviderKind::Anthropic => vec![
            json!({"type": "server_tool_use", "id": id, "name": name, "input": input}),
            json!({"type": format!("{name}_tool_result"), "tool_use_id": id, "content": result}),
        ],
        ProviderKind::Bedrock => vec![
            json!({"toolUse": {"toolUseId": id, "name": name, "input": input, "type": "server_tool_use"}}),
            json!({"toolResult": {"toolUseId": id, "type": format!("{name}_result"), "status": "success", "content": [{"json": result}]}}),
        ],
        ProviderKind::OpenAiResponses => {
            let mut item = Map::new();
            item.insert("id".into(), json!(id));
            item.insert("type".into(), json!(format!("{name}_call")));
            item.insert("status".into(), json!("completed"));
            if let Value::Object(fields) = &input {
                item.extend(fields.clone());
            }
            let result = match name {
                "code_interpreter" => {
                    item.insert("outputs".into(), result.clone());
                    Some(result)
                }
                _ => None,
            };
            let call = call.with_input(input).with_blocks([Value::Object(item)]);
            return Ok(match result {
                Some(r) => call.with_result(r),
                None => call,
            });
        }
        ProviderKind::Gemini if name == "code_execution" => vec![
            json!({"executableCode": input}),
            json!({"codeExecutionResult": result}),
        ],
        other => {
            return Err(Error::Unsupported {
                provider: other,
                feature: format!("a hosted {name} call: {other} has no such call on its wire"),
            });
        }
    };
    let result = match kind {
        ProviderKind::Bedrock => json!([{"json": result}]),
        _ => result,
    };
    Ok(call
        .with_input(input)
        .with_result(result)
        .with_blocks(blocks))
}
