//! Structured partial arguments: an incremental JSON reader that turns argument fragments into
//! path-addressed events as they stream, in time linear in the text.
//!
//! A UI that shows a call's arguments while they form (a code edit, a form filling in) would
//! otherwise re-parse the whole buffer on every fragment, which is quadratic in the argument
//! size. [`PartialJson`] reads each fragment once and says what changed:
//!
//! - [`PartialEvent::Started`]: a value began at a JSON pointer (the root is `""`, a member
//!   `/name`, an element `/items/0`), with its kind;
//! - [`PartialEvent::Text`]: string text appended at a pointer (escapes already decoded);
//! - [`PartialEvent::Scalar`]: a number, `true`, `false` or `null` completed;
//! - [`PartialEvent::Closed`]: a string, object or array ended;
//! - [`PartialEvent::Invalid`]: the text is not JSON from this byte on; the reader stops there
//!   (the caller still has the raw text, as [`crate::ToolCall::raw_arguments`] always does).
//!
//! [`PartialValue`] applies the events to a [`serde_json::Value`] that grows with the text.
//! [`CallArguments`] runs one reader per call of a stream, fed with its [`StreamEvent`]s: it is
//! opt-in, since most callers only want the final call.
//!
//! Bounds: containers may nest [`DEFAULT_MAX_DEPTH`] deep (beyond is `Invalid`); memory is the
//! open containers and the key or number being read; pointers share their parents, so a
//! deep or long path costs nothing per event. Nothing here panics on any input.
//!
//! ```
//! use toolwire::partial_json::{PartialJson, PartialValue};
//!
//! let mut reader = PartialJson::new();
//! let mut value = PartialValue::new();
//! let mut events = Vec::new();
//! for fragment in [r#"{"path": "src/ma"#, r#"in.rs", "lines": [1"#, r#"2, 40]}"#] {
//!     reader.feed(fragment, &mut events);
//!     events.drain(..).for_each(|e| value.apply(&e));
//!     println!("{}", value.value().unwrap()); // {"path":"src/ma"}, then more
//! }
//! assert!(reader.is_complete());
//! assert_eq!(value.value().unwrap()["lines"][0], 12);
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::types::StreamEvent;

/// How deep containers may nest before the reader stops (serde_json's own recursion limit).
pub const DEFAULT_MAX_DEPTH: usize = 128;

/// One step of a JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    /// An object member.
    Key(Arc<str>),
    /// An array element.
    Index(usize),
}

#[derive(Debug, PartialEq, Eq)]
struct Node {
    parent: Pointer,
    segment: Segment,
}

/// A JSON pointer (RFC 6901) whose segments are shared with its parent's: extending one is
/// O(1), so events at deep or long paths cost the same as at the root. Shown and serialized
/// as the pointer text (`/items/0/name`).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Pointer(Option<Arc<Node>>);

impl Pointer {
    /// The root (`""`).
    pub fn root() -> Self {
        Self(None)
    }

    /// Whether this is the root.
    pub fn is_root(&self) -> bool {
        self.0.is_none()
    }

    fn child(&self, segment: Segment) -> Self {
        Self(Some(Arc::new(Node {
            parent: self.clone(),
            segment,
        })))
    }

    /// The segments from the root down.
    pub fn segments(&self) -> Vec<Segment> {
        let mut out = Vec::new();
        let mut at = &self.0;
        while let Some(node) = at {
            out.push(node.segment.clone());
            at = &node.parent.0;
        }
        out.reverse();
        out
    }
}

impl fmt::Display for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for segment in self.segments() {
            match segment {
                Segment::Index(i) => write!(f, "/{i}")?,
                Segment::Key(key) => {
                    f.write_str("/")?;
                    for c in key.chars() {
                        match c {
                            '~' => f.write_str("~0")?,
                            '/' => f.write_str("~1")?,
                            c => write!(f, "{c}")?,
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_string())
    }
}

impl Serialize for Pointer {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What kind of value began.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `{…}`
    Object,
    /// `[…]`
    Array,
    /// `"…"`
    String,
    /// A number.
    Number,
    /// `true` or `false`.
    Bool,
    /// `null`.
    Null,
}

/// What the reader saw in a fragment.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PartialEvent {
    /// A value began at `pointer`.
    Started {
        /// Where.
        pointer: Pointer,
        /// Its kind.
        kind: Kind,
    },
    /// Text was appended to the string at `pointer`.
    Text {
        /// Where.
        pointer: Pointer,
        /// The new text, escapes decoded.
        text: String,
    },
    /// The number, boolean or null at `pointer` is complete.
    Scalar {
        /// Where.
        pointer: Pointer,
        /// The value.
        value: Value,
    },
    /// The string, object or array at `pointer` ended.
    Closed {
        /// Where.
        pointer: Pointer,
    },
    /// The text is not JSON from byte `offset` (counted over all fragments) on; nothing
    /// follows this event.
    Invalid {
        /// Byte offset of the first byte that cannot be read.
        offset: usize,
        /// Why.
        reason: String,
    },
}

#[derive(Debug)]
enum Frame {
    Object(Pointer),
    Array(Pointer, usize),
}

/// What a string being read is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Key,
    Value,
}

/// Where an escape is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    None,
    /// After `\`.
    Start,
    /// Inside `\uXXXX`: digits read so far and their value; `high` is a pending high
    /// surrogate this escape must complete.
    Hex {
        digits: u8,
        value: u32,
        high: Option<u32>,
    },
    /// A high surrogate was read: `\` must follow.
    LowBackslash(u32),
    /// `\` after a high surrogate: `u` must follow.
    LowU(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NumberState {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    E,
    ESign,
    Exp,
}

impl NumberState {
    fn can_end(self) -> bool {
        matches!(self, Self::Zero | Self::Int | Self::Frac | Self::Exp)
    }

    fn next(self, b: u8) -> Option<Self> {
        use NumberState::*;
        Some(match (self, b) {
            (Minus, b'0') => Zero,
            (Minus, b'1'..=b'9') => Int,
            (Int, b'0'..=b'9') => Int,
            (Zero | Int, b'.') => Dot,
            (Zero | Int | Frac, b'e' | b'E') => E,
            (Dot | Frac, b'0'..=b'9') => Frac,
            (E, b'+' | b'-') => ESign,
            (E | ESign | Exp, b'0'..=b'9') => Exp,
            _ => return None,
        })
    }
}

#[derive(Debug)]
enum State {
    /// A value must come (root, after `:`, after `,` in an array).
    Value,
    /// After `[`: a value or `]`.
    ArrayStart,
    /// After `{`: a key or `}`.
    ObjectStart,
    /// After `,` in an object: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// After a value inside a container: `,` or its closer.
    AfterValue,
    /// Inside a string.
    Str(Role, Escape),
    /// Inside a number.
    Number(NumberState),
    /// Inside `true`, `false` or `null`: the literal and how much of it was matched.
    Literal(&'static [u8], usize),
    /// The root value is complete: only whitespace may follow.
    End,
    /// Invalid text was found: nothing more is read.
    Stopped,
}

/// An incremental JSON reader: feed it fragments, get [`PartialEvent`]s. Each byte is looked
/// at once; see the module docs.
#[derive(Debug)]
pub struct PartialJson {
    state: State,
    stack: Vec<Frame>,
    /// The pointer of the string, number or literal being read.
    at: Pointer,
    /// The key being read, or the last key read (until its value starts).
    key: String,
    /// The number being read.
    number: String,
    /// Text of the current string read in this fragment, not yet emitted.
    text: String,
    offset: usize,
    max_depth: usize,
    invalid: Option<(usize, String)>,
}

impl Default for PartialJson {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialJson {
    /// A reader for one JSON text, nesting up to [`DEFAULT_MAX_DEPTH`].
    pub fn new() -> Self {
        Self::with_max_depth(DEFAULT_MAX_DEPTH)
    }

    /// A reader that stops at containers nested deeper than `max_depth`.
    pub fn with_max_depth(max_depth: usize) -> Self {
        Self {
            state: State::Value,
            stack: Vec::new(),
            at: Pointer::root(),
            key: String::new(),
            number: String::new(),
            text: String::new(),
            offset: 0,
            max_depth,
            invalid: None,
        }
    }

    /// Bytes read so far (over all fragments).
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Whether one whole JSON value has been read (trailing whitespace aside). A number at the
    /// root is complete only at [`PartialJson::finish`], since more digits could follow.
    pub fn is_complete(&self) -> bool {
        matches!(self.state, State::End)
    }

    /// Where and why the text stopped being JSON, if it did.
    pub fn invalid(&self) -> Option<(usize, &str)> {
        self.invalid.as_ref().map(|(o, r)| (*o, r.as_str()))
    }

    /// Reads one fragment, appending what it completed or began to `out`.
    pub fn feed(&mut self, fragment: &str, out: &mut Vec<PartialEvent>) {
        let bytes = fragment.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if matches!(self.state, State::Stopped) {
                break;
            }
            if let State::Str(_, Escape::None) = self.state {
                // The fast path: a run of plain string bytes at once.
                let run = bytes[i..]
                    .iter()
                    .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                    .map_or(bytes.len(), |n| i + n);
                if run > i {
                    // `run` and `i` are at ASCII bytes or the fragment's ends: char boundaries.
                    let piece = fragment.get(i..run).unwrap_or_default();
                    self.push_text(piece);
                    i = run;
                    continue;
                }
            }
            i += self.byte(bytes[i], self.offset + i, out);
        }
        self.offset += bytes.len();
        self.flush_text(out);
    }

    /// The text is over: a number at the root completes now. Returns whether one whole value
    /// was read.
    pub fn finish(&mut self, out: &mut Vec<PartialEvent>) -> bool {
        if let State::Number(n) = self.state
            && self.stack.is_empty()
            && n.can_end()
        {
            self.end_number(self.offset, out);
        }
        self.is_complete()
    }

    fn push_text(&mut self, piece: &str) {
        match self.state {
            State::Str(Role::Key, _) => self.key.push_str(piece),
            _ => self.text.push_str(piece),
        }
    }

    fn push_char(&mut self, c: char) {
        match self.state {
            State::Str(Role::Key, _) => self.key.push(c),
            _ => self.text.push(c),
        }
    }

    fn flush_text(&mut self, out: &mut Vec<PartialEvent>) {
        if !self.text.is_empty() {
            out.push(PartialEvent::Text {
                pointer: self.at.clone(),
                text: std::mem::take(&mut self.text),
            });
        }
    }

    fn stop(&mut self, offset: usize, reason: impl Into<String>, out: &mut Vec<PartialEvent>) {
        self.flush_text(out);
        let reason = reason.into();
        out.push(PartialEvent::Invalid {
            offset,
            reason: reason.clone(),
        });
        self.invalid = Some((offset, reason));
        self.state = State::Stopped;
    }

    /// The pointer of a value starting now.
    fn next_pointer(&mut self) -> Pointer {
        match self.stack.last_mut() {
            None => Pointer::root(),
            Some(Frame::Object(p)) => p.child(Segment::Key(Arc::from(self.key.as_str()))),
            Some(Frame::Array(p, next)) => {
                let pointer = p.child(Segment::Index(*next));
                *next += 1;
                pointer
            }
        }
    }

    /// After a value ended: the container goes on, or the root is done.
    fn value_done(&mut self) {
        self.state = if self.stack.is_empty() {
            State::End
        } else {
            State::AfterValue
        };
    }

    fn end_number(&mut self, offset: usize, out: &mut Vec<PartialEvent>) {
        let text = std::mem::take(&mut self.number);
        match serde_json::from_str::<Value>(&text) {
            Ok(value) => {
                out.push(PartialEvent::Scalar {
                    pointer: self.at.clone(),
                    value,
                });
                self.value_done();
            }
            Err(e) => self.stop(offset, format!("invalid number {text:?}: {e}"), out),
        }
    }

    /// Handles one byte at `offset`; returns how many bytes it consumed (0: look at it again
    /// in the new state).
    fn byte(&mut self, b: u8, offset: usize, out: &mut Vec<PartialEvent>) -> usize {
        let space = matches!(b, b' ' | b'\t' | b'\n' | b'\r');
        match self.state {
            State::Stopped => {}
            State::Value | State::ArrayStart if space => {}
            State::ArrayStart if b == b']' => self.close(b, offset, out),
            State::Value | State::ArrayStart => self.start_value(b, offset, out),
            State::ObjectStart | State::Key | State::Colon | State::AfterValue | State::End
                if space => {}
            State::ObjectStart if b == b'}' => self.close(b, offset, out),
            State::ObjectStart | State::Key if b == b'"' => {
                self.key.clear();
                self.state = State::Str(Role::Key, Escape::None);
            }
            State::ObjectStart | State::Key => {
                self.stop(offset, "expected a member name in double quotes", out);
            }
            State::Colon if b == b':' => self.state = State::Value,
            State::Colon => self.stop(offset, "expected ':' after a member name", out),
            State::AfterValue => match (b, self.stack.last()) {
                (b',', Some(Frame::Object(_))) => self.state = State::Key,
                (b',', Some(Frame::Array(..))) => self.state = State::Value,
                (b'}', Some(Frame::Object(_))) | (b']', Some(Frame::Array(..))) => {
                    self.close(b, offset, out)
                }
                _ => self.stop(offset, "expected ',' or the end of the container", out),
            },
            State::End => self.stop(offset, "trailing characters after the value", out),
            State::Str(role, escape) => self.string_byte(role, escape, b, offset, out),
            State::Number(n) => match n.next(b) {
                Some(next) => {
                    self.number.push(char::from(b));
                    self.state = State::Number(next);
                }
                None if n.can_end() => {
                    self.end_number(offset, out);
                    return 0;
                }
                None => self.stop(offset, "invalid number", out),
            },
            State::Literal(word, matched) => {
                if word.get(matched) == Some(&b) {
                    if matched + 1 == word.len() {
                        let value = match word {
                            b"true" => Value::Bool(true),
                            b"false" => Value::Bool(false),
                            _ => Value::Null,
                        };
                        out.push(PartialEvent::Scalar {
                            pointer: self.at.clone(),
                            value,
                        });
                        self.value_done();
                    } else {
                        self.state = State::Literal(word, matched + 1);
                    }
                } else {
                    self.stop(offset, "invalid literal", out);
                }
            }
        }
        1
    }

    fn start_value(&mut self, b: u8, offset: usize, out: &mut Vec<PartialEvent>) {
        let kind = match b {
            b'{' => Kind::Object,
            b'[' => Kind::Array,
            b'"' => Kind::String,
            b'-' | b'0'..=b'9' => Kind::Number,
            b't' | b'f' => Kind::Bool,
            b'n' => Kind::Null,
            _ => return self.stop(offset, "expected a value", out),
        };
        if matches!(kind, Kind::Object | Kind::Array) && self.stack.len() >= self.max_depth {
            return self.stop(
                offset,
                format!("containers nested deeper than {}", self.max_depth),
                out,
            );
        }
        let pointer = self.next_pointer();
        out.push(PartialEvent::Started {
            pointer: pointer.clone(),
            kind,
        });
        match b {
            b'{' => {
                self.stack.push(Frame::Object(pointer));
                self.state = State::ObjectStart;
            }
            b'[' => {
                self.stack.push(Frame::Array(pointer, 0));
                self.state = State::ArrayStart;
            }
            b'"' => {
                self.at = pointer;
                self.state = State::Str(Role::Value, Escape::None);
            }
            b't' | b'f' | b'n' => {
                self.at = pointer;
                let word: &'static [u8] = match b {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                self.state = State::Literal(word, 1);
            }
            _ => {
                self.at = pointer;
                self.number.clear();
                self.number.push(char::from(b));
                let n = match b {
                    b'-' => NumberState::Minus,
                    b'0' => NumberState::Zero,
                    _ => NumberState::Int,
                };
                self.state = State::Number(n);
            }
        }
    }

    fn close(&mut self, b: u8, offset: usize, out: &mut Vec<PartialEvent>) {
        match (self.stack.pop(), b) {
            (Some(Frame::Object(pointer)), b'}') | (Some(Frame::Array(pointer, _)), b']') => {
                out.push(PartialEvent::Closed { pointer });
                self.value_done();
            }
            _ => self.stop(offset, "mismatched closing bracket", out),
        }
    }

    fn string_byte(
        &mut self,
        role: Role,
        escape: Escape,
        b: u8,
        offset: usize,
        out: &mut Vec<PartialEvent>,
    ) {
        let set = |this: &mut Self, e: Escape| this.state = State::Str(role, e);
        match escape {
            Escape::None => match b {
                b'"' => match role {
                    Role::Key => self.state = State::Colon,
                    Role::Value => {
                        self.flush_text(out);
                        out.push(PartialEvent::Closed {
                            pointer: self.at.clone(),
                        });
                        self.value_done();
                    }
                },
                b'\\' => set(self, Escape::Start),
                _ => self.stop(offset, "control character in a string", out),
            },
            Escape::Start => {
                let c = match b {
                    b'"' => '"',
                    b'\\' => '\\',
                    b'/' => '/',
                    b'b' => '\u{8}',
                    b'f' => '\u{c}',
                    b'n' => '\n',
                    b'r' => '\r',
                    b't' => '\t',
                    b'u' => {
                        let hex = Escape::Hex {
                            digits: 0,
                            value: 0,
                            high: None,
                        };
                        return set(self, hex);
                    }
                    _ => return self.stop(offset, "invalid escape", out),
                };
                set(self, Escape::None);
                self.push_char(c);
            }
            Escape::Hex {
                digits,
                value,
                high,
            } => {
                let Some(digit) = char::from(b).to_digit(16) else {
                    return self.stop(offset, "invalid \\u escape", out);
                };
                let value = value * 16 + digit;
                if digits < 3 {
                    let hex = Escape::Hex {
                        digits: digits + 1,
                        value,
                        high,
                    };
                    return set(self, hex);
                }
                let low = (0xDC00..=0xDFFF).contains(&value);
                let code = match high {
                    None if (0xD800..=0xDBFF).contains(&value) => {
                        return set(self, Escape::LowBackslash(value));
                    }
                    None if low => {
                        return self.stop(offset, "lone low surrogate in \\u escape", out);
                    }
                    None => value,
                    Some(high) if low => 0x10000 + ((high - 0xD800) << 10) + (value - 0xDC00),
                    Some(_) => {
                        return self.stop(
                            offset,
                            "a high surrogate not followed by a low one",
                            out,
                        );
                    }
                };
                match char::from_u32(code) {
                    Some(c) => {
                        set(self, Escape::None);
                        self.push_char(c);
                    }
                    None => self.stop(offset, "invalid \\u escape", out),
                }
            }
            Escape::LowBackslash(high) if b == b'\\' => set(self, Escape::LowU(high)),
            Escape::LowU(high) if b == b'u' => {
                let hex = Escape::Hex {
                    digits: 0,
                    value: 0,
                    high: Some(high),
                };
                set(self, hex);
            }
            Escape::LowBackslash(_) | Escape::LowU(_) => {
                self.stop(offset, "a high surrogate not followed by a low one", out);
            }
        }
    }
}

/// A [`serde_json::Value`] built from [`PartialEvent`]s: what the text says so far. Strings
/// grow as their text arrives; numbers, booleans and null appear once complete; objects and
/// arrays appear when they open.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PartialValue {
    root: Option<Value>,
}

impl PartialValue {
    /// Nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value so far (`None` before the first value began).
    pub fn value(&self) -> Option<&Value> {
        self.root.as_ref()
    }

    /// Applies one event (in order; events from one reader always fit together).
    pub fn apply(&mut self, event: &PartialEvent) {
        match event {
            PartialEvent::Started { pointer, kind } => {
                let fresh = match kind {
                    Kind::Object => Value::Object(Map::new()),
                    Kind::Array => Value::Array(Vec::new()),
                    Kind::String => Value::String(String::new()),
                    Kind::Number | Kind::Bool | Kind::Null => return,
                };
                self.set(pointer, fresh);
            }
            PartialEvent::Text { pointer, text } => {
                if let Some(Value::String(s)) = self.get_mut(&pointer.segments()) {
                    s.push_str(text);
                }
            }
            PartialEvent::Scalar { pointer, value } => self.set(pointer, value.clone()),
            PartialEvent::Closed { .. } | PartialEvent::Invalid { .. } => {}
        }
    }

    fn get_mut(&mut self, segments: &[Segment]) -> Option<&mut Value> {
        let mut at = self.root.as_mut()?;
        for segment in segments {
            at = match (at, segment) {
                (Value::Object(map), Segment::Key(key)) => map.get_mut(&**key)?,
                (Value::Array(items), Segment::Index(i)) => items.get_mut(*i)?,
                _ => return None,
            };
        }
        Some(at)
    }

    fn set(&mut self, pointer: &Pointer, value: Value) {
        let mut segments = pointer.segments();
        let Some(last) = segments.pop() else {
            self.root = Some(value);
            return;
        };
        match (self.get_mut(&segments), last) {
            (Some(Value::Object(map)), Segment::Key(key)) => {
                map.insert(key.to_string(), value);
            }
            (Some(Value::Array(items)), Segment::Index(i)) => match items.get_mut(i) {
                Some(slot) => *slot = value,
                None => items.push(value),
            },
            _ => {}
        }
    }
}

/// One [`PartialEvent`] of the call at `index` (its position in the response).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ArgumentEvent {
    /// The call's position in the response.
    pub index: usize,
    /// What its arguments did.
    #[serde(flatten)]
    pub event: PartialEvent,
}

/// Structured partial arguments for every call of one stream: give it the stream's events in
/// order, get each call's [`PartialEvent`]s. Opt-in: create one for a stream whose arguments
/// you want to show as they form.
#[derive(Debug, Default)]
pub struct CallArguments {
    readers: HashMap<usize, PartialJson>,
}

impl CallArguments {
    /// No calls yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads `event`: a call's start opens its reader, its argument fragments feed it, its
    /// completion finishes and drops it.
    pub fn observe(&mut self, event: &StreamEvent, out: &mut Vec<ArgumentEvent>) {
        let mut events = Vec::new();
        let index = match event {
            StreamEvent::ToolCallStarted { index, .. } => {
                self.readers.insert(*index, PartialJson::new());
                return;
            }
            StreamEvent::ToolCallDelta { index, fragment } => {
                self.readers
                    .entry(*index)
                    .or_default()
                    .feed(fragment, &mut events);
                *index
            }
            StreamEvent::ToolCallComplete { index, .. } => {
                if let Some(mut reader) = self.readers.remove(index) {
                    reader.finish(&mut events);
                }
                *index
            }
            _ => return,
        };
        out.extend(
            events
                .into_iter()
                .map(|event| ArgumentEvent { index, event }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(fragments: &[&str]) -> (Vec<String>, PartialJson) {
        let mut reader = PartialJson::new();
        let mut out = Vec::new();
        for f in fragments {
            reader.feed(f, &mut out);
        }
        reader.finish(&mut out);
        let lines = out
            .iter()
            .map(|e| serde_json::to_string(e).unwrap())
            .collect();
        (lines, reader)
    }

    fn build(fragments: &[&str]) -> Option<Value> {
        let mut reader = PartialJson::new();
        let mut value = PartialValue::new();
        let mut out = Vec::new();
        for f in fragments {
            reader.feed(f, &mut out);
        }
        reader.finish(&mut out);
        out.iter().for_each(|e| value.apply(e));
        value.value().cloned()
    }

    #[test]
    fn events_name_their_pointers() {
        let (lines, reader) = read(&[r#"{"a/b": ["x"#, r#"y", 1.5e3, true], "~": null}"#]);
        assert!(reader.is_complete());
        assert_eq!(
            lines,
            [
                r#"{"event":"started","pointer":"","kind":"object"}"#,
                r#"{"event":"started","pointer":"/a~1b","kind":"array"}"#,
                r#"{"event":"started","pointer":"/a~1b/0","kind":"string"}"#,
                r#"{"event":"text","pointer":"/a~1b/0","text":"x"}"#,
                r#"{"event":"text","pointer":"/a~1b/0","text":"y"}"#,
                r#"{"event":"closed","pointer":"/a~1b/0"}"#,
                r#"{"event":"started","pointer":"/a~1b/1","kind":"number"}"#,
                r#"{"event":"scalar","pointer":"/a~1b/1","value":1500.0}"#,
                r#"{"event":"started","pointer":"/a~1b/2","kind":"bool"}"#,
                r#"{"event":"scalar","pointer":"/a~1b/2","value":true}"#,
                r#"{"event":"closed","pointer":"/a~1b"}"#,
                r#"{"event":"started","pointer":"/~0","kind":"null"}"#,
                r#"{"event":"scalar","pointer":"/~0","value":null}"#,
                r#"{"event":"closed","pointer":""}"#,
            ]
        );
    }

    #[test]
    fn escapes_split_anywhere_decode() {
        let text = r#"{"k\"ey": "a\n\u00e9\ud83d\ude00\\/", "n": -0.5}"#;
        let full: Value = serde_json::from_str(text).unwrap();
        for cut in 0..=text.len() {
            for cut2 in cut..=text.len() {
                let parts = [&text[..cut], &text[cut..cut2], &text[cut2..]];
                assert_eq!(build(&parts), Some(full.clone()), "cuts {cut} {cut2}");
            }
        }
    }

    #[test]
    fn invalid_text_stops_with_its_offset() {
        for (text, offset) in [
            (r#"{"a": tru "#, 9),
            (r#"{"a" 1}"#, 5),
            (r#"{"a": [1,]}"#, 9),
            (r#"{"a": 01}"#, 7),
            (r#"{"a": "\x"}"#, 8),
            (r#"{"a": "\udc00"}"#, 12),
            (r#"{"a": "\ud800x"}"#, 13),
            ("{\"a\": \"\u{1}\"}", 7),
            (r#"{} {}"#, 3),
            (r#"{"a": 1]"#, 7),
            (r#"-"#, usize::MAX),
        ] {
            let (lines, reader) = read(&[text]);
            match reader.invalid() {
                Some((at, _)) => assert_eq!(at, offset, "{text}: {lines:?}"),
                None => assert_eq!(offset, usize::MAX, "{text}: not invalid"),
            }
            assert!(!reader.is_complete(), "{text}");
            assert!(serde_json::from_str::<Value>(text).is_err(), "{text}");
            // Nothing after the Invalid event.
            if offset != usize::MAX {
                assert!(lines.last().unwrap().contains("\"invalid\""), "{lines:?}");
            }
        }
        // Stopped: later fragments add nothing.
        let mut reader = PartialJson::new();
        let mut out = Vec::new();
        reader.feed("{x", &mut out);
        let n = out.len();
        reader.feed(r#""a": 1}"#, &mut out);
        assert_eq!(out.len(), n);
    }

    #[test]
    fn depth_is_bounded() {
        let deep = "[".repeat(200);
        let mut reader = PartialJson::with_max_depth(16);
        let mut out = Vec::new();
        reader.feed(&deep, &mut out);
        assert_eq!(reader.invalid().map(|(o, _)| o), Some(16));
        let ok = format!("{}{}", "[".repeat(16), "]".repeat(16));
        let mut reader = PartialJson::with_max_depth(16);
        reader.feed(&ok, &mut out);
        assert!(reader.is_complete());
    }

    #[test]
    fn numbers_at_the_root_complete_at_finish() {
        let mut reader = PartialJson::new();
        let mut out = Vec::new();
        reader.feed("12", &mut out);
        reader.feed("3", &mut out);
        assert!(!reader.is_complete());
        assert!(reader.finish(&mut out));
        assert!(out.contains(&PartialEvent::Scalar {
            pointer: Pointer::root(),
            value: json!(123)
        }));
    }

    #[test]
    fn call_arguments_follow_each_call() {
        let mut calls = CallArguments::new();
        let mut out = Vec::new();
        let events = [
            StreamEvent::ToolCallStarted {
                index: 0,
                id: None,
                name: "f".into(),
            },
            StreamEvent::ToolCallStarted {
                index: 1,
                id: None,
                name: "g".into(),
            },
            StreamEvent::ToolCallDelta {
                index: 1,
                fragment: r#"{"b":"#.into(),
            },
            StreamEvent::ToolCallDelta {
                index: 0,
                fragment: r#"{"a":7}"#.into(),
            },
            StreamEvent::ToolCallDelta {
                index: 1,
                fragment: "2}".into(),
            },
        ];
        for e in &events {
            calls.observe(e, &mut out);
        }
        let scalars: Vec<(usize, String)> = out
            .iter()
            .filter_map(|e| match &e.event {
                PartialEvent::Scalar { pointer, value } => {
                    Some((e.index, format!("{pointer}={value}")))
                }
                _ => None,
            })
            .collect();
        assert_eq!(scalars, [(0, "/a=7".to_owned()), (1, "/b=2".to_owned())]);
    }
}
