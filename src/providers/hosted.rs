//! Calls the provider ran itself ([`HostedCall`]) in a history: each wire sends its own
//! calls' blocks back verbatim, in place; a call made on another wire goes as text.

use std::borrow::Cow;

use crate::provider::Downgrade;
use crate::types::{AssistantMessage, HostedCall, Message};

/// The most input text one hosted call may stream, in bytes: past it the stream is refused
/// (a search query or a program is far smaller; memory stays bounded on hostile input).
pub(crate) const MAX_INPUT: usize = 4 << 20;

/// One piece of an assistant turn: text, or a hosted call standing between texts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Piece<'a> {
    /// Visible text (never empty).
    Text(&'a str),
    /// A call the provider ran, at its place in the text.
    Hosted(&'a HostedCall),
}

/// The turn's text cut at each hosted call's `at`, the calls in between, in order. An `at`
/// beyond the text, or inside a character, or before an earlier call's, moves forward to the
/// next place that is valid, so any input gives every call and all the text once.
pub(crate) fn interleave<'a>(text: Option<&'a str>, calls: &'a [HostedCall]) -> Vec<Piece<'a>> {
    let text = text.unwrap_or("");
    let mut out = Vec::with_capacity(calls.len() * 2 + 1);
    let mut from = 0;
    for call in calls {
        let mut at = call.at.clamp(from, text.len());
        while !text.is_char_boundary(at) {
            at += 1;
        }
        if at > from {
            out.push(Piece::Text(&text[from..at]));
        }
        out.push(Piece::Hosted(call));
        from = at;
    }
    if from < text.len() {
        out.push(Piece::Text(&text[from..]));
    }
    out
}

/// The history as `wire` can take it: the hosted calls of each assistant turn made on another
/// wire go into its text, in place ([`HostedCall::as_text`]), each listed in `downgrades`
/// (`part` is the call's position in the turn's `hosted_calls`). Calls made on `wire` stay.
/// Borrows the history when there is nothing to move.
pub(crate) fn foreign_as_text<'a>(
    messages: &'a [Message],
    wire: &str,
    downgrades: &mut Vec<Downgrade>,
) -> Cow<'a, [Message]> {
    let foreign = |a: &AssistantMessage| a.hosted_calls.iter().any(|c| c.wire != wire);
    if !messages
        .iter()
        .any(|m| matches!(m, Message::Assistant(a) if foreign(a)))
    {
        return Cow::Borrowed(messages);
    }
    let mut out = messages.to_vec();
    for (i, m) in out.iter_mut().enumerate() {
        let Message::Assistant(a) = m else { continue };
        if !foreign(a) {
            continue;
        }
        let mut text = String::new();
        let mut kept = Vec::new();
        for piece in interleave(a.content.as_deref(), &a.hosted_calls) {
            match piece {
                Piece::Text(t) => text.push_str(t),
                Piece::Hosted(call) if call.wire == wire => {
                    kept.push(call.clone().with_at(text.len()));
                }
                Piece::Hosted(call) => {
                    let part = a.hosted_calls.iter().position(|c| std::ptr::eq(c, call));
                    downgrades.push(Downgrade::new(
                        i,
                        part.unwrap_or(0),
                        format!(
                            "{} ran {} on its side; {wire} cannot take that call back, so it \
                             went as text in the assistant turn",
                            call.wire, call.name
                        ),
                    ));
                    text.push_str(&call.as_text());
                }
            }
        }
        a.content = (!text.is_empty()).then_some(text);
        a.hosted_calls = kept;
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(name: &str, wire: &str, at: usize) -> HostedCall {
        HostedCall::new("h1", name, wire)
            .with_input(json!({"query": "q"}))
            .with_result(json!("found"))
            .with_at(at)
    }

    #[test]
    fn text_is_cut_at_each_call_and_odd_offsets_move_forward() {
        let calls = [call("a", "x", 3), call("b", "x", 1), call("c", "x", 99)];
        let pieces = interleave(Some("héllo"), &calls);
        let shape: Vec<String> = pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => format!("T:{t}"),
                Piece::Hosted(c) => format!("H:{}", c.name),
            })
            .collect();
        // 3 is a character boundary after "hé"; `b` cannot go back before `a`.
        assert_eq!(shape, ["T:hé", "H:a", "H:b", "T:llo", "H:c"]);
        let cut = [call("a", "x", 2)];
        // Byte 2 is inside `é`: the cut moves to 3.
        let pieces = interleave(Some("héllo"), &cut);
        assert!(matches!(pieces[0], Piece::Text("hé")), "{pieces:?}");
    }

    #[test]
    fn a_call_from_another_wire_goes_as_text_with_a_note() {
        let turn = AssistantMessage::default()
            .with_content("Let me look. Found it.")
            .with_hosted_calls([call("web_search", "anthropic", 13), call("x", "gemini", 22)]);
        let messages = vec![Message::user("hi"), Message::Assistant(turn)];
        let mut notes = Vec::new();
        let out = foreign_as_text(&messages, "gemini", &mut notes);
        let Message::Assistant(a) = &out[1] else {
            panic!("not assistant")
        };
        let text = a.content.as_deref().unwrap();
        assert!(
            text.starts_with("Let me look. [anthropic ran web_search {\"query\":\"q\"}]\nfound\n"),
            "{text}"
        );
        assert_eq!(a.hosted_calls.len(), 1);
        assert_eq!(a.hosted_calls[0].wire, "gemini");
        assert_eq!(a.hosted_calls[0].at, text.len());
        assert_eq!((notes.len(), notes[0].message, notes[0].part), (1, 1, 0));
        let mut none = Vec::new();
        assert!(matches!(
            foreign_as_text(&messages[..1], "gemini", &mut none),
            Cow::Borrowed(_)
        ));
    }
}
