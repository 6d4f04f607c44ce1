//! Synthetic OpenAI streams for the bench and the linear-growth test: calls whose arguments
//! are streamed in small fragments, interleaved round-robin, built in memory as SSE bytes.

use std::fmt::Write;

const ENVELOPE: &str = r#""id":"chatcmpl-bench","object":"chat.completion.chunk","created":1763700000,"model":"gpt-4o""#;

/// The argument text of call `call`: a JSON object `arg_len` bytes long (at least 16).
pub(crate) fn argument(call: usize, arg_len: usize) -> String {
    let head = format!("{{\"call\":{call},\"text\":\"");
    let tail = "\"}";
    let filler = "lorem ipsum dolor sit amet, consectetur \\\"quoted\\\" adipiscing elit; ";
    let mut text = head;
    while text.len() + tail.len() < arg_len {
        let room = arg_len - tail.len() - text.len();
        let piece = &filler[..filler.len().min(room)];
        // Never end on a lone backslash: that would escape the closing quote.
        let piece = piece.trim_end_matches('\\');
        if piece.is_empty() {
            text.push(' ');
        } else {
            text.push_str(piece);
        }
    }
    text.push_str(tail);
    text
}

/// `calls` parallel calls, each with an `arg_len`-byte argument sent in `fragment`-byte pieces;
/// the pieces of all calls are interleaved (call 0, 1, …, 0, 1, …). Ends with finish_reason
/// tool_calls, a usage chunk and `[DONE]`.
pub(crate) fn interleaved_calls(calls: usize, arg_len: usize, fragment: usize) -> Vec<u8> {
    let args: Vec<String> = (0..calls).map(|c| argument(c, arg_len)).collect();
    let mut body = String::with_capacity(calls * (arg_len / fragment.max(1) + 1) * 170);
    for c in 0..calls {
        let _ = write!(
            body,
            "data: {{{ENVELOPE},\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":{c},\"id\":\"call_bench_{c}\",\"type\":\"function\",\"function\":{{\"name\":\"write_file\",\"arguments\":\"\"}}}}]}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
        );
    }
    let mut offsets = vec![0usize; calls];
    loop {
        let mut progressed = false;
        for (c, arg) in args.iter().enumerate() {
            let start = offsets[c];
            if start >= arg.len() {
                continue;
            }
            let end = (start + fragment.max(1)).min(arg.len());
            offsets[c] = end;
            progressed = true;
            let piece = serde_json::to_string(&arg[start..end]).unwrap_or_default();
            let _ = write!(
                body,
                "data: {{{ENVELOPE},\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":{c},\"function\":{{\"arguments\":{piece}}}}}]}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
            );
        }
        if !progressed {
            break;
        }
    }
    let _ = write!(
        body,
        "data: {{{ENVELOPE},\"choices\":[{{\"index\":0,\"delta\":{{}},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}}]}}\n\ndata: {{{ENVELOPE},\"choices\":[],\"usage\":{{\"prompt_tokens\":100,\"completion_tokens\":{},\"total_tokens\":{}}}}}\n\ndata: [DONE]\n\n",
        calls * arg_len / 4,
        100 + calls * arg_len / 4
    );
    body.into_bytes()
}
