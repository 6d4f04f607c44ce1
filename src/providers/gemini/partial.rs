//! Rebuilds the argument text of a call streamed as Vertex `partialArgs`
//! (`streamFunctionCallArguments`; the shapes of vercel/ai's recorded
//! `google-stream-tool-call-*.chunks.txt`).
//!
//! Each piece names a JSON path (`$.recipe.ingredients[0].amount`) and one value: a string
//! piece (more pieces for the same path follow while `willContinue` is true), or a whole number,
//! boolean or null. The writer turns the pieces into JSON text as they arrive, opening and
//! closing objects and arrays as the paths move, so the text can be streamed as argument
//! fragments and a cut-off stream leaves visibly incomplete text (the call is then
//! `truncated`). Closing the call appends what is still open; the concatenated fragments are
//! then one compact JSON object.

use super::wire::PartialArg;

/// The most array elements one piece may skip (they are written as `null`); a larger jump is
/// an error. Every piece is at least ~30 bytes of input (`{"jsonPath":"$.a[9]","nullValue":
/// null}`), and 8 skipped elements write at most 40 bytes, so the argument text stays within
/// a small constant of the bytes received: a hostile stream cannot amplify itself into
/// memory (with a gap of 1024, each 40-byte piece could write 5 KB).
const MAX_INDEX_GAP: usize = 8;

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// An open container and how many members it has so far.
#[derive(Debug)]
struct Frame {
    /// The step under which this container sits in its parent (none for the root).
    seg: Option<Seg>,
    is_array: bool,
    count: usize,
}

/// The JSON text writer of one streamed call.
#[derive(Debug)]
pub(crate) struct ArgsWriter {
    stack: Vec<Frame>,
    /// The full path of a string value still being streamed.
    open_string: Option<Vec<Seg>>,
}

impl ArgsWriter {
    /// A writer for a new call, and the text that opens it.
    pub(crate) fn open() -> (Self, &'static str) {
        let writer = Self {
            stack: vec![Frame {
                seg: None,
                is_array: false,
                count: 0,
            }],
            open_string: None,
        };
        (writer, "{")
    }

    /// Applies one piece; returns the text it adds. Errors say what is wrong with the piece.
    pub(crate) fn apply(&mut self, arg: &PartialArg) -> Result<String, String> {
        let raw_path = arg.json_path.as_deref().unwrap_or("");
        let segs = parse_path(raw_path)?;
        let mut out = String::new();
        let continues = arg.will_continue == Some(true);
        if let Some(open) = &self.open_string {
            if *open == segs {
                let Some(piece) = &arg.string_value else {
                    return Err(format!(
                        "jsonPath {raw_path:?} continues a string with a non-string value"
                    ));
                };
                push_escaped(&mut out, piece);
                if !continues {
                    out.push('"');
                    self.open_string = None;
                }
                return Ok(out);
            }
            out.push('"');
            self.open_string = None;
        }
        let Some((leaf, parent)) = segs.split_last() else {
            return Err(format!("jsonPath {raw_path:?} names no argument"));
        };
        // Close containers that are not on the new path.
        let current: Vec<&Seg> = self.stack.iter().filter_map(|f| f.seg.as_ref()).collect();
        let common = current
            .iter()
            .zip(parent)
            .take_while(|(a, b)| **a == *b)
            .count();
        while self.stack.len() > common + 1 {
            if let Some(frame) = self.stack.pop() {
                out.push(if frame.is_array { ']' } else { '}' });
            }
        }
        // Open the containers the path needs.
        for (depth, seg) in parent.iter().enumerate().skip(common) {
            self.member(seg, raw_path, &mut out)?;
            let is_array = matches!(segs.get(depth + 1), Some(Seg::Index(_)));
            out.push(if is_array { '[' } else { '{' });
            self.stack.push(Frame {
                seg: Some(seg.clone()),
                is_array,
                count: 0,
            });
        }
        self.member(leaf, raw_path, &mut out)?;
        match (
            &arg.string_value,
            &arg.number_value,
            arg.bool_value,
            &arg.null_value,
        ) {
            (Some(piece), _, _, _) => {
                out.push('"');
                push_escaped(&mut out, piece);
                if continues {
                    self.open_string = Some(segs);
                } else {
                    out.push('"');
                }
            }
            (None, Some(n), _, _) => out.push_str(&n.to_string()),
            (None, None, Some(b), _) => out.push_str(if b { "true" } else { "false" }),
            (None, None, None, Some(_)) => out.push_str("null"),
            (None, None, None, None) => {
                return Err(format!("partial argument at {raw_path:?} carries no value"));
            }
        }
        Ok(out)
    }

    /// Writes the separator and key (or checks the index) of a new member of the innermost
    /// container.
    fn member(&mut self, seg: &Seg, raw_path: &str, out: &mut String) -> Result<(), String> {
        let Some(frame) = self.stack.last_mut() else {
            return Err("argument writer has no open container".into());
        };
        match (seg, frame.is_array) {
            (Seg::Key(key), false) => {
                if frame.count > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(key).map_err(|e| e.to_string())?);
                out.push(':');
                frame.count += 1;
            }
            (Seg::Index(i), true) => {
                if *i < frame.count {
                    return Err(format!(
                        "jsonPath {raw_path:?} goes back to array element {i} after element {}",
                        frame.count - 1
                    ));
                }
                if *i - frame.count > MAX_INDEX_GAP {
                    return Err(format!(
                        "jsonPath {raw_path:?} jumps from array element {} to {i}",
                        frame.count
                    ));
                }
                // Elements never sent are null, so later indices stay where they belong.
                while frame.count < *i {
                    if frame.count > 0 {
                        out.push(',');
                    }
                    out.push_str("null");
                    frame.count += 1;
                }
                if frame.count > 0 {
                    out.push(',');
                }
                frame.count += 1;
            }
            _ => {
                return Err(format!(
                    "jsonPath {raw_path:?} treats an object as an array or an array as an object"
                ));
            }
        }
        Ok(())
    }

    /// Ends the call: closes any open string and every open container.
    pub(crate) fn close(mut self) -> String {
        let mut out = String::new();
        if self.open_string.take().is_some() {
            out.push('"');
        }
        while let Some(frame) = self.stack.pop() {
            out.push(if frame.is_array { ']' } else { '}' });
        }
        out
    }
}

/// Appends `piece` as the inside of a JSON string.
fn push_escaped(out: &mut String, piece: &str) {
    let quoted = serde_json::to_string(piece).unwrap_or_default();
    out.push_str(quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or(""));
}

/// Parses an RFC 9535 path of names and indices: `$.a.b[0]`, `$['a b']`, `$["a"][2]`.
fn parse_path(path: &str) -> Result<Vec<Seg>, String> {
    let bad = |why: &str| format!("jsonPath {path:?}: {why}");
    let Some(rest) = path.strip_prefix('$') else {
        return Err(bad("must start with $"));
    };
    let chars: Vec<char> = rest.chars().collect();
    let mut segs = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '.' => {
                let start = i + 1;
                let mut end = start;
                while end < chars.len() && chars[end] != '.' && chars[end] != '[' {
                    end += 1;
                }
                if end == start {
                    return Err(bad("empty name after '.'"));
                }
                segs.push(Seg::Key(chars[start..end].iter().collect()));
                i = end;
            }
            '[' => {
                let Some(close_rel) = find_close(&chars[i + 1..]) else {
                    return Err(bad("unclosed '['"));
                };
                let inner: String = chars[i + 1..i + 1 + close_rel].iter().collect();
                let inner = inner.trim();
                if let Some(quote) = inner.chars().next().filter(|c| *c == '\'' || *c == '"') {
                    let body = inner
                        .strip_prefix(quote)
                        .and_then(|s| s.strip_suffix(quote))
                        .ok_or_else(|| bad("unterminated quoted name"))?;
                    segs.push(Seg::Key(unescape(body)));
                } else {
                    let index = inner
                        .parse::<usize>()
                        .map_err(|_| bad("an index must be a non-negative integer"))?;
                    segs.push(Seg::Index(index));
                }
                i += close_rel + 2;
            }
            _ => return Err(bad("expected '.' or '['")),
        }
    }
    Ok(segs)
}

/// Position of the `]` closing a bracket, skipping quoted text.
fn find_close(chars: &[char]) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in chars.iter().enumerate() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if *c == '\\' {
                    escaped = true;
                } else if *c == q {
                    quote = None;
                }
            }
            None if *c == '\'' || *c == '"' => quote = Some(*c),
            None if *c == ']' => return Some(i),
            None => {}
        }
    }
    None
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn arg(v: Value) -> PartialArg {
        serde_json::from_value(v).unwrap()
    }

    fn build(args: &[Value]) -> String {
        let (mut w, open) = ArgsWriter::open();
        let mut text = open.to_owned();
        for a in args {
            text.push_str(&w.apply(&arg(a.clone())).unwrap());
        }
        text.push_str(&w.close());
        text
    }

    #[test]
    fn strings_in_pieces_numbers_whole() {
        let text = build(&[
            json!({"jsonPath": "$.location", "stringValue": "Bos", "willContinue": true}),
            json!({"jsonPath": "$.location", "stringValue": "ton \"MA\"", "willContinue": true}),
            json!({"jsonPath": "$.location", "stringValue": ""}),
            json!({"jsonPath": "$.days", "numberValue": 3}),
            json!({"jsonPath": "$.metric", "boolValue": true}),
            json!({"jsonPath": "$.note", "nullValue": "NULL_VALUE"}),
        ]);
        assert_eq!(
            text,
            r#"{"location":"Boston \"MA\"","days":3,"metric":true,"note":null}"#
        );
    }

    #[test]
    fn nested_paths_and_arrays() {
        let text = build(&[
            json!({"jsonPath": "$.recipe.name", "stringValue": "soup"}),
            json!({"jsonPath": "$.recipe.ingredients[0].item", "stringValue": "leek"}),
            json!({"jsonPath": "$.recipe.ingredients[0].amount", "numberValue": 2}),
            json!({"jsonPath": "$.recipe.ingredients[1].item", "stringValue": "salt"}),
            json!({"jsonPath": "$.tags[0]", "stringValue": "warm"}),
            json!({"jsonPath": "$.tags[1]", "stringValue": "ea", "willContinue": true}),
        ]);
        let parsed: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            parsed,
            json!({"recipe": {"name": "soup", "ingredients": [{"item": "leek", "amount": 2}, {"item": "salt"}]}, "tags": ["warm", "ea"]})
        );
    }

    #[test]
    fn unfinished_text_is_not_json() {
        let (mut w, open) = ArgsWriter::open();
        let mut text = open.to_owned();
        text.push_str(
            &w.apply(&arg(
                json!({"jsonPath": "$.a.b", "stringValue": "x", "willContinue": true}),
            ))
            .unwrap(),
        );
        assert!(serde_json::from_str::<Value>(&text).is_err());
        assert_eq!(text, r#"{"a":{"b":"x"#);
    }

    #[test]
    fn bad_paths_are_errors() {
        let (mut w, _) = ArgsWriter::open();
        assert!(
            w.apply(&arg(
                json!({"jsonPath": "$.a[999999999999]", "numberValue": 1})
            ))
            .is_err()
        );
        for p in ["location", "$", "$.", "$[x]", "$[0", "$..a"] {
            assert!(
                w.apply(&arg(json!({"jsonPath": p, "numberValue": 1})))
                    .is_err(),
                "{p}"
            );
        }
        assert_eq!(
            parse_path("$['a b'][2].c").unwrap(),
            vec![Seg::Key("a b".into()), Seg::Index(2), Seg::Key("c".into())]
        );
    }
}
