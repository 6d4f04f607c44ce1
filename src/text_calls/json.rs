//! JSON-bodied formats: a `{"name": …, "arguments" | "parameters": …}` object (Hermes bodies,
//! Mistral's `[TOOL_CALLS][…]` list, Llama's answer), Mistral's `NAME[ARGS]{…}` (with or
//! without `[CALL_ID]`), and the typing of parameter-format values by the tool's schema.

use std::collections::HashMap;

use serde_json::Value;
use serde_json::value::RawValue;

use super::{After, Piece, Recogniser, Scan, State, TextCallFormat, Until};
use crate::text_calls::Name;

/// A call object's name and argument text: the exact text of its `arguments` (or Llama's
/// `parameters`) value, the string's content when the value is a string; empty when absent.
/// `None` when `body` is not a JSON object.
fn parse_call(body: &str) -> Option<(String, String)> {
    let map: HashMap<String, Box<RawValue>> = serde_json::from_str(body).ok()?;
    let name = map
        .get("name")
        .and_then(|n| serde_json::from_str::<String>(n.get()).ok())
        .unwrap_or_default();
    let args = match map.get("arguments").or_else(|| map.get("parameters")) {
        None => String::new(),
        Some(raw) if raw.get().starts_with('"') => {
            serde_json::from_str::<String>(raw.get()).unwrap_or_else(|_| raw.get().to_owned())
        }
        Some(raw) => raw.get().to_owned(),
    };
    Some((name, args))
}

/// Whether `body` has a call's shape: an object with a string `name` and `arguments` or
/// `parameters` (a Llama answer that is other JSON stays text).
fn is_call_shape(body: &str) -> bool {
    let Ok(map) = serde_json::from_str::<HashMap<String, Box<RawValue>>>(body) else {
        return false;
    };
    map.get("name").is_some_and(|n| n.get().starts_with('"'))
        && (map.contains_key("arguments") || map.contains_key("parameters"))
}

/// The value of the first `"name": "…"` in `text`, for a call cut before its object closed.
pub(super) fn scan_name(text: &str) -> Option<&str> {
    let i = text.find("\"name\"")?;
    let rest = text[i + 6..].trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find(['"', '\\'])?;
    Some(&rest[..end])
}

/// A parameter value as the tool's schema types it: a string property stays the text; an
/// integer, number, boolean or null property takes the value the text spells (kept as a
/// string when it spells none); an object or array property takes the JSON the text holds.
/// A parameter the schema does not list stays a string; one listed without a type takes any
/// JSON the text holds.
pub(super) fn typed(schema: Option<&Value>, key: &str, raw: &str) -> Value {
    let string = || Value::String(raw.to_owned());
    let Some(property) = schema
        .and_then(|s| s.get("properties"))
        .and_then(|p| p.get(key))
    else {
        return string();
    };
    let types: Vec<&str> = match property.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.contains(&"string") {
        return string();
    }
    let text = raw.trim();
    let json = serde_json::from_str::<Value>(text).ok();
    if types.is_empty() {
        return json.unwrap_or_else(string);
    }
    for ty in types {
        let fits = match (ty, &json) {
            ("integer", Some(Value::Number(n))) => n.is_i64() || n.is_u64(),
            ("number", Some(Value::Number(_))) => true,
            ("boolean", Some(Value::Bool(_))) => true,
            ("null", Some(Value::Null)) => true,
            ("object", Some(Value::Object(_))) => true,
            ("array", Some(Value::Array(_))) => true,
            _ => false,
        };
        if fits {
            return json.unwrap_or_else(string);
        }
        if ty == "boolean" {
            match text.to_ascii_lowercase().as_str() {
                "true" => return Value::Bool(true),
                "false" => return Value::Bool(false),
                _ => {}
            }
        }
    }
    string()
}

impl Recogniser {
    /// A call whose JSON object (`body`) closed, or (`closed` false) that the text ended
    /// inside: its name and argument text, or the whole body as argument text when it does
    /// not parse (`malformed`; `truncated` when cut).
    pub(super) fn json_call(
        &mut self,
        body: &str,
        closed: bool,
        format: TextCallFormat,
        out: &mut Vec<Piece>,
    ) {
        let parsed = if closed { parse_call(body) } else { None };
        match parsed {
            Some((name, args)) => {
                self.start(&name, format, out);
                self.arguments(&args, out);
                self.end(out);
            }
            None => {
                let name = scan_name(body).unwrap_or_default().to_owned();
                self.start(&name, format, out);
                self.arguments(body, out);
                if closed {
                    self.end(out);
                } else {
                    self.cut(out);
                }
            }
        }
    }

    /// After `[TOOL_CALLS]`: a `[` list of call objects, one `{` object, or `NAME[ARGS]`
    /// (`NAME[CALL_ID]ID[ARGS]`); anything else was prose and the marker is text.
    pub(super) fn step_mistral_head(&mut self, skip: usize, out: &mut Vec<Piece>) -> bool {
        let from = self.at + skip;
        let body = &self.buf[from..];
        let blank = body.len() - body.trim_start().len();
        let Some(c) = body[blank..].chars().next() else {
            return false;
        };
        let first = from + blank;
        match c {
            '[' => {
                self.consume(first + 1);
                self.goto(State::MistralList)
            }
            '{' => {
                self.consume(first);
                self.goto(State::Object {
                    scan: Scan::default(),
                    then: After::MistralOne,
                })
            }
            _ => match self.read_name(first, &["[ARGS]", "[CALL_ID]"]) {
                Name::Need => false,
                Name::Bad => {
                    self.text_to(from, out);
                    self.goto(State::Text)
                }
                Name::Got { end, at, stop } => {
                    let name = self.buf[first..end].to_owned();
                    self.start(&name, TextCallFormat::Mistral, out);
                    self.consume(at + stop.len());
                    self.goto(if stop == "[CALL_ID]" {
                        State::MistralCallId
                    } else {
                        State::MistralArgs
                    })
                }
            },
        }
    }

    pub(super) fn step_mistral_call_id(&mut self) -> bool {
        match self.until(&["[ARGS]"]) {
            Until::Found(pos, marker) => {
                self.consume(pos + marker.len());
                self.goto(State::MistralArgs)
            }
            Until::Safe(_) => false,
        }
    }

    pub(super) fn step_mistral_args(&mut self) -> bool {
        if !self.skip_ws() {
            return false;
        }
        if self.rest().starts_with(['{', '[']) {
            self.goto(State::Streamed(Scan::default()))
        } else {
            self.goto(State::MistralRaw)
        }
    }

    /// Mistral arguments that open no JSON: up to the next `[TOOL_CALLS]` (or the end), as
    /// written (`malformed`).
    pub(super) fn step_mistral_raw(&mut self, out: &mut Vec<Piece>) -> bool {
        match self.until(&["[TOOL_CALLS]"]) {
            Until::Found(pos, _) => {
                let text = self.buf[self.at..pos].trim().to_owned();
                self.arguments(&text, out);
                self.end(out);
                self.consume(pos);
                self.goto(State::Text)
            }
            Until::Safe(_) => false,
        }
    }

    pub(super) fn step_mistral_list(&mut self) -> bool {
        let rest = self.rest();
        let skipped = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_whitespace() || c == ',')
                .len();
        self.consume(self.at + skipped);
        match self.rest().chars().next() {
            None => false,
            Some('{') => self.goto(State::Object {
                scan: Scan::default(),
                then: After::MistralList,
            }),
            Some(']') => {
                self.consume(self.at + 1);
                self.goto(State::Text)
            }
            Some(_) => self.goto(State::Text),
        }
    }

    /// A JSON value streamed as the current call's argument text; the call ends when it closes.
    pub(super) fn step_streamed(&mut self, mut scan: Scan, out: &mut Vec<Piece>) -> bool {
        let from = self.scan.max(self.at);
        match scan.advance(&self.buf.as_bytes()[from..]) {
            Some(n) => {
                let end = from + n;
                let text = self.buf[self.at..end].to_owned();
                self.arguments(&text, out);
                self.end(out);
                self.consume(end);
                self.goto(State::Text)
            }
            None => {
                let text = self.buf[self.at..].to_owned();
                self.arguments(&text, out);
                self.consume(self.buf.len());
                self.state = State::Streamed(scan);
                false
            }
        }
    }

    /// A call object, buffered until it closes (its name may come after its arguments).
    pub(super) fn step_object(
        &mut self,
        mut scan: Scan,
        then: After,
        out: &mut Vec<Piece>,
    ) -> bool {
        let from = self.scan.max(self.at);
        let Some(n) = scan.advance(&self.buf.as_bytes()[from..]) else {
            self.scan = self.buf.len();
            self.state = State::Object { scan, then };
            return false;
        };
        let end = from + n;
        let body = self.buf[self.at..end].to_owned();
        self.consume(end);
        match then {
            After::LlamaBare if !is_call_shape(&body) => {
                self.text(&body, out);
                self.goto(State::Text)
            }
            After::LlamaBare | After::LlamaTagged => {
                self.json_call(&body, true, TextCallFormat::Llama, out);
                self.goto(State::LlamaAfter)
            }
            After::MistralList => {
                self.json_call(&body, true, TextCallFormat::Mistral, out);
                self.goto(State::MistralList)
            }
            After::MistralOne => {
                self.json_call(&body, true, TextCallFormat::Mistral, out);
                self.goto(State::Text)
            }
        }
    }

    /// After `<|python_tag|>`: a JSON call object, or (a built-in tool's code) text.
    pub(super) fn step_python_tag(&mut self) -> bool {
        let rest = self.rest();
        let blank = rest.len() - rest.trim_start().len();
        if blank == rest.len() {
            return false;
        }
        if rest[blank..].starts_with('{') {
            self.consume(self.at + blank);
            self.goto(State::Object {
                scan: Scan::default(),
                then: After::LlamaTagged,
            })
        } else {
            self.goto(State::Text)
        }
    }

    /// After a Llama call: `; {…}` is the next call, anything else text.
    pub(super) fn step_llama_after(&mut self) -> bool {
        let rest = self.rest();
        let blank = rest.len() - rest.trim_start().len();
        let Some(after) = rest[blank..].strip_prefix(';') else {
            return if blank == rest.len() {
                false
            } else {
                self.goto(State::Text)
            };
        };
        let gap = after.len() - after.trim_start().len();
        if gap == after.len() {
            return false;
        }
        if after[gap..].starts_with('{') {
            self.consume(self.at + blank + 1 + gap);
            self.goto(State::Object {
                scan: Scan::default(),
                then: After::LlamaTagged,
            })
        } else {
            self.goto(State::Text)
        }
    }
}
