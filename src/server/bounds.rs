//! Bounds on what one gateway request body may hold, checked in one pass over its bytes before
//! any JSON tree is built: nesting depth, the number of messages (`messages`, or the Responses
//! `input`) and tools, and top-level keys given twice (`{"model": "a", …, "model": "b"}`, which
//! a JSON parser would read last-wins). A body over a bound is refused with what and where.

use std::collections::HashSet;

/// The deepest nesting of arrays and objects a gateway body may have.
pub(crate) const MAX_DEPTH: usize = 64;

/// The most messages (`messages`, or Responses `input` items) in one gateway body.
pub(crate) const MAX_MESSAGES: usize = 20_000;

/// The most tools in one gateway body.
pub(crate) const MAX_TOOLS: usize = 1_024;

/// Why a body is refused: the HTTP status (400 or 413) and what is wrong.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    pub(crate) status: u16,
    pub(crate) message: String,
}

struct Frame {
    object: bool,
    expect_key: bool,
    /// The top-level key whose array this is, with its bound.
    counted: Option<(&'static str, usize)>,
    commas: usize,
}

/// Checks `body` against the bounds. Not a JSON validator: what is not JSON is left for the
/// reader to refuse by name; this pass only stops what would cost too much to read.
pub(crate) fn check(body: &[u8]) -> Result<(), Refused> {
    let mut frames: Vec<Frame> = Vec::new();
    let mut keys: HashSet<String> = HashSet::new();
    let mut last_key: Option<String> = None;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'"' => {
                let start = i;
                i += 1;
                let mut escaped = false;
                while i < body.len() {
                    match body[i] {
                        b'\\' => {
                            escaped = true;
                            i += 1;
                        }
                        b'"' => break,
                        _ => {}
                    }
                    i += 1;
                }
                let top_key =
                    frames.len() == 1 && frames.last().is_some_and(|f| f.object && f.expect_key);
                if top_key {
                    let raw = &body[start..(i + 1).min(body.len())];
                    let key = if escaped {
                        serde_json::from_slice::<String>(raw).unwrap_or_default()
                    } else {
                        String::from_utf8_lossy(&raw[1..raw.len().saturating_sub(1)]).into_owned()
                    };
                    if !keys.insert(key.clone()) {
                        return Err(Refused {
                            status: 400,
                            message: format!(
                                "{key}: given twice in the body (a JSON reader would take one \
                                 silently)"
                            ),
                        });
                    }
                    last_key = Some(key);
                }
            }
            open @ (b'[' | b'{') => {
                if frames.len() >= MAX_DEPTH {
                    return Err(Refused {
                        status: 400,
                        message: format!("the body nests deeper than {MAX_DEPTH} levels"),
                    });
                }
                let counted = match last_key.as_deref() {
                    _ if open != b'[' || frames.len() != 1 => None,
                    Some("messages") => Some(("messages", MAX_MESSAGES)),
                    Some("input") => Some(("input", MAX_MESSAGES)),
                    Some("tools") => Some(("tools", MAX_TOOLS)),
                    _ => None,
                };
                frames.push(Frame {
                    object: open == b'{',
                    expect_key: open == b'{',
                    counted,
                    commas: 0,
                });
            }
            b']' | b'}' => {
                frames.pop();
            }
            b':' => {
                if let Some(f) = frames.last_mut() {
                    f.expect_key = false;
                }
            }
            b',' => {
                if let Some(f) = frames.last_mut() {
                    if f.object {
                        f.expect_key = true;
                    } else {
                        f.commas += 1;
                        if let Some((key, max)) = f.counted
                            && f.commas + 1 > max
                        {
                            return Err(Refused {
                                status: 413,
                                message: format!("{key}: more than {max} entries"),
                            });
                        }
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_given_twice_is_refused_by_name_even_escaped() {
        let err = check(br#"{"model":"a","messages":[],"model":"b"}"#).unwrap_err();
        assert_eq!(err.status, 400);
        assert!(err.message.starts_with("model:"), "{}", err.message);
        let err = check(br#"{"model":"a","mod\u0065l":"b"}"#).unwrap_err();
        assert!(err.message.starts_with("model:"), "{}", err.message);
        // Nested objects may repeat top-level names, and strings hold any brackets.
        check(br#"{"model":"a","metadata":{"model":"x"},"s":"[[[{{\"model\"","t":1}"#).unwrap();
    }

    #[test]
    fn depth_messages_and_tools_are_bounded() {
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(check(deep.as_bytes()).unwrap_err().status, 400);
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        check(ok.as_bytes()).unwrap();
        for (key, max) in [
            ("messages", MAX_MESSAGES),
            ("input", MAX_MESSAGES),
            ("tools", MAX_TOOLS),
        ] {
            let items = |n: usize| vec!["{}"; n].join(",");
            let at = format!(r#"{{"model":"m","{key}":[{}]}}"#, items(max));
            check(at.as_bytes()).unwrap();
            let over = format!(r#"{{"model":"m","{key}":[{}]}}"#, items(max + 1));
            let err = check(over.as_bytes()).unwrap_err();
            assert_eq!(err.status, 413, "{key}");
            assert!(err.message.starts_with(key), "{}", err.message);
        }
        // A nested array of the same name is not the conversation.
        let nested = format!(
            r#"{{"x":{{"messages":[{}]}}}}"#,
            vec!["1"; MAX_MESSAGES + 1].join(",")
        );
        check(nested.as_bytes()).unwrap();
    }
}
