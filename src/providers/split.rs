//! The one splitter every writer uses: a scripted answer cut into the small fragments a service
//! streams (a few characters of text or arguments at a time), so a client tested against the
//! mock meets streams the way the real services send them.
//!
//! [`pieces`] cuts one text. [`cut`] cuts a scripted answer, laid out by its wire as
//! [`Segment`]s (its own blocks or items in their places; [`plain`]: reasoning, text, then the
//! calls), into the canonical events a [`crate::provider::StreamWriter`] writes, in the order a
//! service streams them: each reasoning block with its signature, text, each call opened, its
//! arguments in fragments, and completed. The mock's streams are those events written by the
//! gateway's writer of the wire in its native mode.

use crate::types::{ChatResponse, StreamEvent, ToolCall, Usage};

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

/// How finely [`cut`] cuts: characters per text (and reasoning) fragment and per argument
/// fragment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cut {
    /// Characters per text or reasoning fragment.
    pub(crate) text: usize,
    /// Characters per argument fragment.
    pub(crate) arguments: usize,
    /// Every call starts with its id, a minted one too (a wire whose calls always carry one);
    /// else a minted id is left out, as the service that sent none did.
    pub(crate) every_id: bool,
}

/// About one token of text, and argument fragments as recorded OpenAI streams split them
/// (`{"`, `city`, `":"`, `New`, ` York`).
pub(crate) const FINE: Cut = Cut {
    text: 4,
    arguments: 5,
    every_id: false,
};

/// One piece of a scripted answer, in the order its wire streams it: what a wire's mock
/// lays out from the answer (its own blocks or items in their places) before [`cut`] cuts it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Segment<'a> {
    /// A reasoning block: its text, then its signature when it has one.
    Reasoning {
        /// The reasoning text.
        text: &'a str,
        /// The signature closing the block.
        signature: Option<&'a str>,
    },
    /// A reasoning block sent encrypted whole.
    Redacted(&'a str),
    /// The start of a reasoning item (a Responses `reasoning` output item), by its id: the
    /// reasoning text after it belongs to it.
    Item(Option<&'a str>),
    /// Visible text.
    Text(&'a str),
    /// A call the provider ran: its position in the answer's `hosted_calls` and its name.
    Hosted {
        /// Position in `hosted_calls`.
        index: usize,
        /// What ran.
        name: &'a str,
    },
    /// A call for the client: its position in `tool_calls`, and the text its arguments stream
    /// as (its raw argument text, or what the wire sends in its place).
    Call {
        /// Position in `tool_calls`.
        index: usize,
        /// The call.
        call: &'a ToolCall,
        /// The argument text streamed.
        arguments: &'a str,
    },
}

/// The events of `segments` as a service streams them, cut as `cut` says. A call's arguments
/// go out as its raw text (malformed or truncated arguments stream as they are), each call
/// completed right after its last fragment; `usage`, when known, comes last.
pub(crate) fn cut(segments: &[Segment<'_>], usage: Option<Usage>, cut: Cut) -> Vec<StreamEvent> {
    let mut out = Vec::new();
    for segment in segments {
        match *segment {
            Segment::Reasoning { text, signature } => {
                out.extend(
                    pieces(text, cut.text)
                        .into_iter()
                        .map(|p| StreamEvent::ReasoningDelta { text: p.to_owned() }),
                );
                if let Some(signature) = signature {
                    out.push(StreamEvent::ReasoningSignature {
                        signature: signature.to_owned(),
                    });
                }
            }
            Segment::Redacted(data) => out.push(StreamEvent::RedactedReasoning {
                data: data.to_owned(),
            }),
            Segment::Item(id) => out.push(StreamEvent::ReasoningState {
                id: id.map(str::to_owned),
                encrypted_content: None,
            }),
            Segment::Text(text) => out.extend(
                pieces(text, cut.text)
                    .into_iter()
                    .map(|p| StreamEvent::TextDelta { text: p.to_owned() }),
            ),
            Segment::Hosted { index, name } => out.push(StreamEvent::HostedCall {
                index,
                name: name.to_owned(),
                status: "completed".to_owned(),
            }),
            Segment::Call {
                index,
                call,
                arguments,
            } => {
                out.push(StreamEvent::ToolCallStarted {
                    index,
                    id: (cut.every_id || !call.has_synthetic_id()).then(|| call.id.clone()),
                    name: call.name.clone(),
                });
                out.extend(pieces(arguments, cut.arguments).into_iter().map(|p| {
                    StreamEvent::ToolCallDelta {
                        index,
                        fragment: p.to_owned(),
                    }
                }));
                out.push(StreamEvent::ToolCallComplete {
                    index,
                    call: call.clone(),
                });
            }
        }
    }
    if let Some(usage) = usage {
        out.push(StreamEvent::Usage { usage });
    }
    out
}

/// The plain layout of `response`: its reasoning, its text, then each call.
pub(crate) fn plain(response: &ChatResponse) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    if let Some(text) = &response.reasoning {
        out.push(Segment::Reasoning {
            text,
            signature: None,
        });
    }
    if let Some(text) = &response.text {
        out.push(Segment::Text(text));
    }
    out.extend(
        (response.tool_calls.iter().enumerate()).map(|(index, call)| Segment::Call {
            index,
            call,
            arguments: &call.raw_arguments,
        }),
    );
    out
}

/// The events of `response` laid out plainly ([`plain`]), cut as `cut` says: what the
/// gateway's writers are driven with in tests.
#[cfg(test)]
pub(crate) fn events(response: &ChatResponse, how: Cut) -> Vec<StreamEvent> {
    cut(&plain(response), response.usage, how)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::FinishReason;

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
