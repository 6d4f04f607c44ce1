//! The one splitter every writer uses: a scripted answer cut into the small fragments a service
//! streams (a few characters of text or arguments at a time), so a client tested against the
//! mock meets streams the way the real services send them.
//!
//! [`pieces`] cuts one text. `events` (test builds: the writers' round-trip tests drive the
//! gateway's stream writers with it) cuts a whole answer into the canonical events a
//! [`crate::provider::StreamWriter`] writes, in the order a service streams them: reasoning,
//! text, then each call opened, its arguments in fragments, and completed.

#[cfg(test)]
use crate::types::{ChatResponse, StreamEvent};

/// Splits `text` into pieces of at most `n` characters (at least one), never inside a
/// character; the pieces concatenate to `text`, and an empty text gives none.
pub(crate) fn pieces(text: &str, n: usize) -> Vec<&str> {
    let n = n.max(1);
    let mut out = Vec::with_capacity(text.len() / n + 1);
    let mut rest = text;
    while !rest.is_empty() {
        let cut = rest.char_indices().nth(n).map_or(rest.len(), |(i, _)| i);
        let (head, tail) = rest.split_at(cut);
        out.push(head);
        rest = tail;
    }
    out
}

/// How finely [`events`] cuts: characters per text (and reasoning) fragment and per argument
/// fragment.
#[cfg(test)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cut {
    /// Characters per text or reasoning fragment.
    pub(crate) text: usize,
    /// Characters per argument fragment.
    pub(crate) arguments: usize,
}

/// About one token of text, and argument fragments as recorded OpenAI streams split them
/// (`{"`, `city`, `":"`, `New`, ` York`).
#[cfg(test)]
pub(crate) const FINE: Cut = Cut {
    text: 4,
    arguments: 5,
};

/// The events of `response` as a service streams them, cut as `cut` says. A call's arguments
/// go out as its raw text (malformed or truncated arguments stream as they are), each call
/// completed right after its last fragment; the usage, when known, comes last.
#[cfg(test)]
pub(crate) fn events(response: &ChatResponse, cut: Cut) -> Vec<StreamEvent> {
    let mut out = Vec::new();
    if let Some(reasoning) = &response.reasoning {
        out.extend(
            pieces(reasoning, cut.text)
                .into_iter()
                .map(|p| StreamEvent::ReasoningDelta { text: p.to_owned() }),
        );
    }
    if let Some(text) = &response.text {
        out.extend(
            pieces(text, cut.text)
                .into_iter()
                .map(|p| StreamEvent::TextDelta { text: p.to_owned() }),
        );
    }
    for (index, call) in response.tool_calls.iter().enumerate() {
        out.push(StreamEvent::ToolCallStarted {
            index,
            id: (!call.has_synthetic_id()).then(|| call.id.clone()),
            name: call.name.clone(),
        });
        out.extend(
            pieces(&call.raw_arguments, cut.arguments)
                .into_iter()
                .map(|p| StreamEvent::ToolCallDelta {
                    index,
                    fragment: p.to_owned(),
                }),
        );
        out.push(StreamEvent::ToolCallComplete {
            index,
            call: call.clone(),
        });
    }
    if let Some(usage) = response.usage {
        out.push(StreamEvent::Usage { usage });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{FinishReason, ToolCall, Usage};

    #[test]
    fn pieces_keep_characters_whole_and_concatenate_back() {
        let text = "杭州市大部多云，摄氏十八度，东风三级";
        let parts = pieces(text, 4);
        assert!(parts.len() > 1);
        assert!(parts.iter().all(|p| p.chars().count() <= 4));
        assert_eq!(parts.concat(), text);
        assert!(pieces("", 4).is_empty());
        assert_eq!(pieces("abc", 0), ["a", "b", "c"]);
    }

    #[test]
    fn events_carry_the_whole_answer_in_order() {
        let response = ChatResponse::default()
            .with_text("Looking it up.")
            .with_tool_calls(vec![ToolCall::new("call_1", "search", r#"{"q":"rust"}"#)])
            .with_finish_reason(FinishReason::ToolCalls)
            .with_usage(Usage::new(3, 5));
        let events = events(&response, FINE);
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Looking it up.");
        let args: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallDelta { fragment, .. } => Some(fragment.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(args, r#"{"q":"rust"}"#);
        assert!(matches!(
            events.iter().find(|e| matches!(e, StreamEvent::ToolCallStarted { .. })),
            Some(StreamEvent::ToolCallStarted { id: Some(id), .. }) if id == "call_1"
        ));
        assert!(matches!(events.last(), Some(StreamEvent::Usage { .. })));
    }
}
