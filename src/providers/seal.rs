//! Reading back the sealed provider state of a gateway request: what the gateway packed into
//! a call id or a reasoning item it made (`carry_id`, sealed with a [`Seal`]) comes back from a
//! client, who may send anything in its place. The readers leave each sealed state unopened;
//! [`open_request`] checks each tag before anything is taken from it (a forged or altered one
//! is refused, naming the field), then keeps only an allow-listed shape: the keys the encoders
//! read, each in its documented form.

use serde_json::{Map, Value};

use super::shared::{SEALED, TURN_STATE, only, uncarry_turn};
use crate::error::{Error, Result};
use crate::seal::Seal;
use crate::types::{ChatRequest, Message};

/// Opens the sealed states a gateway reader left in `request` (on calls and on
/// assistant turns), each replaced by the allow-listed state it holds; the turn state a call
/// carried moves onto its turn. A state whose seal does not match is an error
/// naming its field.
pub fn open_request(request: &mut ChatRequest, seal: &Seal) -> Result<()> {
    for (i, message) in request.messages.iter_mut().enumerate() {
        let Message::Assistant(a) = message else {
            continue;
        };
        // Hosted calls the gateway translated for the client: the upstream's own back.
        super::hosted_map::open(a, seal, &format!("messages[{i}]"))?;
        if let Some(p) = a.extra.remove(SEALED) {
            let state = open_pending(&p, seal)?;
            a.extra.extend(state);
        }
        for call in &mut a.tool_calls {
            if let Some(p) = call.extra.remove(SEALED) {
                let state = open_pending(&p, seal)?;
                call.extra.extend(state);
            }
        }
        let mut calls = std::mem::take(&mut a.tool_calls);
        for call in &mut calls {
            uncarry_turn(call, a);
        }
        a.tool_calls = calls;
    }
    Ok(())
}

fn open_pending(p: &Value, seal: &Seal) -> Result<Map<String, Value>> {
    let text = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or_default();
    let at = text("at");
    seal.open(text("kind"), text("head"), text("packed"))
        .map(allowed)
        .map_err(|why| {
            Error::input(
                at,
                format!(
                    "the provider state this carries is refused ({why}); send it back exactly \
                     as the gateway gave it, to the gateway (or an instance sharing its key) \
                     that gave it"
                ),
            )
        })
}

/// The keys the encoders read from a call's or a turn's provider data, each kept only in its
/// documented shape; everything else is dropped. Thinking blocks keep `type`, `thinking`,
/// `signature` (or `type`, `data` when redacted:
/// <https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking>); Responses reasoning
/// items keep `type`, `id`, `summary`, `encrypted_content`, `content`, `status`
/// (<https://platform.openai.com/docs/api-reference/responses/create>); signatures and item ids
/// are strings.
pub(crate) fn allowed(map: Map<String, Value>) -> Map<String, Value> {
    use super::{anthropic, bedrock, gemini, gemini_interactions, openai_responses};
    let mut out = Map::new();
    for (key, value) in map {
        let kept = match key.as_str() {
            gemini::THOUGHT_SIGNATURE
            | gemini::REASONING_SIGNATURE
            | gemini_interactions::SIGNATURE
            | openai_responses::ITEM_ID => value.is_string().then_some(value),
            openai_responses::CUSTOM_TOOL | crate::ToolCall::SYNTHETIC_ID => {
                value.is_boolean().then_some(value)
            }
            anthropic::THINKING_BLOCKS => each(value, anthropic::gateway::thinking_block),
            anthropic::CALLER => caller(value),
            openai_responses::REASONING_ITEMS => each(value, reasoning_item),
            bedrock::REASONING_BLOCKS => each(value, reasoning_block),
            gemini_interactions::STEPS => each(value, step),
            "reasoning_details" => each(value, reasoning_detail),
            TURN_STATE => match value {
                Value::Object(inner) => {
                    // One level: a turn's state holds no further turn state.
                    let mut inner = allowed(inner);
                    inner.remove(TURN_STATE);
                    Some(Value::Object(inner))
                }
                _ => None,
            },
            _ => None,
        };
        if let Some(v) = kept {
            out.insert(key, v);
        }
    }
    out
}

/// The array `value` with each element passed through `keep` (dropped when it gives `None`).
/// A `tool_use` block's `caller` (Anthropic's programmatic tool calling,
/// <https://platform.claude.com/docs/en/agents-and-tools/tool-use/programmatic-tool-calling>):
/// its `type` and, when a tool Anthropic ran made the call, that tool's `tool_id`; strings only.
fn caller(value: Value) -> Option<Value> {
    let Value::Object(map) = value else {
        return None;
    };
    let kept: Map<String, Value> = (map.into_iter())
        .filter(|(k, v)| matches!(k.as_str(), "type" | "tool_id") && v.is_string())
        .collect();
    kept.contains_key("type").then_some(Value::Object(kept))
}

fn each(value: Value, keep: fn(&Map<String, Value>) -> Option<Value>) -> Option<Value> {
    let Value::Array(items) = value else {
        return None;
    };
    Some(Value::Array(
        items
            .iter()
            .filter_map(Value::as_object)
            .filter_map(keep)
            .collect(),
    ))
}

/// A Responses `reasoning` item with its documented keys only, its `summary` and `content`
/// parts text only.
pub(crate) fn reasoning_item(m: &Map<String, Value>) -> Option<Value> {
    if m.get("type").and_then(Value::as_str) != Some("reasoning") {
        return None;
    }
    only(
        m,
        &[
            "type",
            "id",
            "summary",
            "encrypted_content",
            "content",
            "status",
        ],
        &["type"],
        |k, v| match k {
            "summary" | "content" => v.as_array().is_some_and(|parts| {
                parts.iter().all(|p| {
                    p.as_object().is_some_and(|p| {
                        p.keys().all(|k| k == "type" || k == "text")
                            && matches!(
                                p.get("type").and_then(Value::as_str),
                                Some("summary_text" | "reasoning_text")
                            )
                            && p.get("text").is_some_and(Value::is_string)
                    })
                })
            }),
            _ => v.is_string(),
        },
    )
}

/// A Bedrock reasoning block: `reasoningText` with `text` and `signature`, or
/// `redactedContent` (base64 in JSON).
fn reasoning_block(m: &Map<String, Value>) -> Option<Value> {
    if let Some(Value::Object(r)) = m.get("reasoningText") {
        let r = only(r, &["text", "signature"], &["text"], |_, v| v.is_string())?;
        return Some(serde_json::json!({"reasoningText": r}));
    }
    m.get("redactedContent")
        .filter(|v| v.is_string())
        .map(|v| serde_json::json!({"redactedContent": v}))
}

/// A Gemini Interactions model step: `thought` (`signature`, `summary`), `model_output`
/// (`content` text blocks) or `function_call` (`id`, `name`, `arguments`, `signature`).
fn step(m: &Map<String, Value>) -> Option<Value> {
    match m.get("type").and_then(Value::as_str) {
        Some("thought") => only(m, &["type", "signature", "summary"], &["type"], |k, v| {
            k != "summary" || v.is_array()
        }),
        Some("model_output") => only(m, &["type", "content"], &["type"], |k, v| {
            k != "content"
                || v.as_array().is_some_and(|blocks| {
                    blocks.iter().all(|b| {
                        b.get("type").and_then(Value::as_str) == Some("text")
                            && b.as_object().is_some_and(|b| b.len() == 2)
                            && b.get("text").is_some_and(Value::is_string)
                    })
                })
        }),
        Some("function_call") => only(
            m,
            &["type", "id", "name", "arguments", "signature"],
            &["type"],
            |k, v| k == "arguments" || v.is_string(),
        ),
        _ => None,
    }
}

/// An OpenRouter/MiniMax `reasoning_details` entry: `reasoning.text`, `reasoning.summary` or
/// `reasoning.encrypted` with their string fields and `index`
/// (<https://openrouter.ai/docs/use-cases/reasoning-tokens>).
fn reasoning_detail(m: &Map<String, Value>) -> Option<Value> {
    match m.get("type").and_then(Value::as_str) {
        Some("reasoning.text" | "reasoning.summary" | "reasoning.encrypted") => only(
            m,
            &[
                "type",
                "id",
                "format",
                "index",
                "text",
                "summary",
                "signature",
                "data",
            ],
            &["type"],
            |k, v| match k {
                "index" => v.is_u64(),
                _ => v.is_string() || v.is_null(),
            },
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::shared::{carry_id, uncarry_id};
    use super::*;
    use crate::types::ToolCall;
    use serde_json::json;

    fn seal() -> Seal {
        Seal::new("k".repeat(32)).unwrap()
    }

    #[test]
    fn packs_only_the_anthropic_id_alphabet_and_round_trips() {
        let mut call = ToolCall::new("call_1", "f", "{}");
        call.extra
            .insert("thought_signature".into(), json!("c2ln/+=="));
        let id = carry_id(&call, Some(&seal()));
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
            "{id}"
        );
        let (head, extra) = uncarry_id(&id, "messages[1].tool_calls[0].id").unwrap();
        assert_eq!(head, "call_1");
        let p = &extra[SEALED];
        assert_eq!(open_pending(p, &seal()).unwrap(), call.extra);
        // Another key does not open it, and the error names the field.
        let other = Seal::new("j".repeat(32)).unwrap();
        let err = open_pending(p, &other).unwrap_err().to_string();
        assert!(err.contains("messages[1].tool_calls[0].id"), "{err}");
    }

    #[test]
    fn old_unsealed_ids_are_refused_and_plain_ids_pass() {
        let err = uncarry_id("call_1.tw1.eyJ9", "input[2].call_id")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("input[2].call_id") && err.contains("unsealed"),
            "{err}"
        );
        assert_eq!(
            uncarry_id("toolu_1", "x").unwrap(),
            ("toolu_1".into(), Map::new())
        );
        // Without a seal, state is not handed out.
        let mut call = ToolCall::new("call_1", "f", "{}");
        call.extra.insert("item_id".into(), json!("fc_1"));
        assert_eq!(carry_id(&call, None), "call_1");
        // An upstream id that looks packed is packed, so it reads back as itself.
        let call = ToolCall::new("a_tw2_00", "f", "{}");
        let id = carry_id(&call, Some(&seal()));
        let (head, extra) = uncarry_id(&id, "x").unwrap();
        assert_eq!(head, "a_tw2_00");
        assert!(open_pending(&extra[SEALED], &seal()).unwrap().is_empty());
    }

    #[test]
    fn only_the_allow_listed_shape_is_kept() {
        let state = json!({
            "reasoning_items": [
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e",
                 "file_id": "file_x"},
                {"type": "input_file", "file_id": "file_x"},
                {"type": "item_reference", "id": "msg_x"},
                {"type": "reasoning", "summary": [{"type": "input_file", "file_id": "f"}]}
            ],
            "thinking_blocks": [
                {"type": "thinking", "thinking": "t", "signature": "s", "cache_control": {}},
                {"type": "redacted_thinking", "data": "d"},
                {"type": "tool_use", "id": "x", "name": "n", "input": {}}
            ],
            "thought_signature": "sig",
            "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_1",
                       "container": {"id": "c"}},
            "item_id": {"not": "a string"},
            "other_items": [{"type": "computer_call_output"}],
            "toolwire_turn": {"reasoning_items": [{"type": "web_search_call"}],
                              "toolwire_turn": {}}
        });
        let Value::Object(state) = state else {
            unreachable!()
        };
        let kept = Value::Object(allowed(state));
        assert_eq!(
            kept,
            json!({
                "reasoning_items": [
                    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
                    {"type": "reasoning"}
                ],
                "thinking_blocks": [
                    {"type": "thinking", "thinking": "t", "signature": "s"},
                    {"type": "redacted_thinking", "data": "d"}
                ],
                "thought_signature": "sig",
                "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"},
                "toolwire_turn": {"reasoning_items": []}
            })
        );
    }
}
