//! Tool calls that open models write into their answer text, recovered as they stream.
//!
//! An open model served without a tool parser (or with a broken one) writes its calls as
//! text: `<tool_call>{…}</tool_call>`, `<function=NAME><parameter=K>V</parameter>`, DeepSeek's
//! and Kimi's special tokens, Mistral's `[TOOL_CALLS]`, Llama's JSON. A [`Recogniser`] takes the
//! answer's text fragments in any chunking and turns them into [`Piece`]s: text, a call's
//! start, its argument text, its end. It holds back only what may still be a marker (a
//! possible marker prefix, or a block whose kind the next bytes decide), never text it would
//! have to take back, and looks at each byte a bounded number of times, so a turn costs time
//! linear in its length whatever the chunking or the content (a million unclosed markers, deep
//! nesting). The quirk sheet `providers/text-calls.md` lists each format's markers, variants
//! and sources.
//!
//! The stream assembler (`assemble.rs`) feeds its text through a recogniser when a request asks
//! for recovery ([`crate::types::ChatRequest::with_text_calls`]); each format family has its own
//! file:
//! `tagged.rs` (`<tool_call>` blocks: Hermes, Qwen3-Coder XML, GLM), `special.rs` (DeepSeek and
//! Kimi special tokens), `json.rs` (Mistral and Llama JSON, and typing parameter values by the
//! tool's schema).
#![doc = include_str!("../../providers/text-calls.md")]

mod json;
mod special;
mod tagged;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

pub use crate::types::TextCallFormat;

/// What a turn's text calls are read with: the format, and the tools' parameter schemas by the
/// name the model sees (parameter formats type their values by them).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TextCalls {
    format: Option<TextCallFormat>,
    tools: Arc<HashMap<String, Value>>,
}

impl TextCalls {
    /// Recovery in `format`, typing parameter values by `tools` (name, parameters schema).
    pub fn new(format: TextCallFormat, tools: impl IntoIterator<Item = (String, Value)>) -> Self {
        Self {
            format: Some(format),
            tools: Arc::new(tools.into_iter().collect()),
        }
    }

    /// The format.
    pub fn format(&self) -> TextCallFormat {
        self.format.unwrap_or(TextCallFormat::Auto)
    }

    /// The parameters schema of the tool the model calls `name`, if the request had it.
    pub fn schema(&self, name: &str) -> Option<&Value> {
        self.tools.get(name)
    }
}

/// One thing a [`Recogniser`] found in the text, in order. A call is `Start`, any number of
/// `Arguments`, then `End` (its markers closed: complete, or malformed if its text is not a
/// JSON object) or `Cut` (the text ended inside it: truncated, never run).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Piece {
    /// Text outside any call.
    Text(String),
    /// A call started; `name` is what the model wrote (empty when it wrote none).
    Start {
        /// The tool name.
        name: String,
    },
    /// More of the current call's argument text.
    Arguments(String),
    /// The current call's closing marker arrived.
    End,
    /// The text ended inside the current call.
    Cut,
}

/// Longest name (tool, parameter, head) looked at before a would-be marker is taken for prose.
const MAX_NAME: usize = 256;

/// Where the recogniser is; each state's bytes start at `Recogniser::at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Outside calls, looking for a start marker.
    Text,
    /// After `<tool_call>` (its `skip` bytes at `at`): the body's first bytes say which kind.
    Tag { skip: usize },
    /// A Hermes JSON body, up to `</tool_call>`.
    HermesBody,
    /// Qwen3-Coder: the function name up to `>`; `skip` marker bytes at `at` (bare `<function=`,
    /// kept until the name proves it a call), `wrapped` inside `<tool_call>`.
    QwenName { skip: usize, wrapped: bool },
    /// Qwen3-Coder: between parameters.
    QwenBody { wrapped: bool },
    /// Qwen3-Coder: a parameter name up to `>`.
    QwenKey { wrapped: bool },
    /// Qwen3-Coder: a parameter value up to `</parameter>`.
    QwenValue { wrapped: bool },
    /// Qwen3-Coder: after `</function>`, its `</tool_call>`.
    QwenAfter { wrapped: bool },
    /// GLM: between arguments.
    GlmBody,
    /// GLM: an argument name up to `</arg_key>`.
    GlmKey,
    /// GLM: between `</arg_key>` and `<arg_value>`.
    GlmBetween,
    /// GLM: an argument value up to `</arg_value>`.
    GlmValue,
    /// DeepSeek: inside the calls section.
    DsSection,
    /// DeepSeek: a call's head up to `<｜tool▁sep｜>` (`function` in V3/R1, the name in V3.1).
    DsHead,
    /// DeepSeek V3/R1: the name after the separator, up to the line end.
    DsName,
    /// DeepSeek V3/R1: the opening fence of the arguments.
    DsFence,
    /// DeepSeek: argument text up to the fence (`fenced`) or the call's end.
    DsArgs { fenced: bool },
    /// DeepSeek V3/R1: after the closing fence, the call's end.
    DsAfter,
    /// Kimi: inside the calls section.
    KimiSection,
    /// Kimi: the call id (`functions.NAME:0`) up to the argument marker.
    KimiId,
    /// Kimi: argument text up to the call's end.
    KimiArgs,
    /// Mistral: after `[TOOL_CALLS]` (its `skip` bytes at `at`).
    MistralHead { skip: usize },
    /// Mistral: a `[CALL_ID]` value up to `[ARGS]`.
    MistralCallId,
    /// Mistral: the arguments after `[ARGS]`, first byte not seen yet.
    MistralArgs,
    /// Mistral: arguments that do not open JSON, up to the next `[TOOL_CALLS]`.
    MistralRaw,
    /// Mistral `[TOOL_CALLS][…]`: between the list's objects.
    MistralList,
    /// A JSON value streamed as argument text until it closes (Mistral `[ARGS]`).
    Streamed(Scan),
    /// A whole JSON object (`{"name": …, "arguments": …}`), buffered until it closes.
    Object { scan: Scan, then: After },
    /// Llama: after `<|python_tag|>`.
    PythonTag,
    /// Llama: after a call, a `;` and the next object.
    LlamaAfter,
}

/// What an [`State::Object`] is and where reading goes on after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    /// An object of a `[TOOL_CALLS][…]` list.
    MistralList,
    /// `[TOOL_CALLS]{…}`.
    MistralOne,
    /// A Llama object after `<|python_tag|>`: a call whatever it holds.
    LlamaTagged,
    /// A Llama object that opened the answer: a call only if it has a call's shape.
    LlamaBare,
}

/// Incremental JSON nesting: how far a value has been read, so each byte is looked at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Scan {
    depth: usize,
    string: bool,
    escape: bool,
}

impl Scan {
    /// Reads `bytes` (the value's text from where the last call stopped); the offset just past
    /// the value's closing bracket once it closed.
    fn advance(&mut self, bytes: &[u8]) -> Option<usize> {
        for (i, &b) in bytes.iter().enumerate() {
            if self.string {
                if self.escape {
                    self.escape = false;
                } else if b == b'\\' {
                    self.escape = true;
                } else if b == b'"' {
                    self.string = false;
                }
                continue;
            }
            match b {
                b'"' => self.string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

/// Whether text starting at a point matches a literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lit {
    /// It does.
    Yes,
    /// The text so far is a proper prefix of it: more bytes decide.
    Maybe,
    /// It does not.
    No,
}

fn lit(text: &str, literal: &str) -> Lit {
    if text.starts_with(literal) {
        Lit::Yes
    } else if literal.starts_with(text) {
        Lit::Maybe
    } else {
        Lit::No
    }
}

/// The literal of `literals` that `text` starts with; `Err` while more bytes decide (the text
/// so far is a proper prefix of one, which may be longer than one it already matches).
fn lit_any(text: &str, literals: &[&'static str]) -> Result<Option<&'static str>, ()> {
    let mut found = None;
    for &l in literals {
        match lit(text, l) {
            Lit::Yes => found = found.or(Some(l)),
            Lit::Maybe => return Err(()),
            Lit::No => {}
        }
    }
    Ok(found)
}

/// Where a search for end markers got to.
enum Until {
    /// `marker` starts at this offset.
    Found(usize, &'static str),
    /// None before this offset; the bytes from it on may begin one.
    Safe(usize),
}

/// A name read up to one of its stop markers.
enum Name {
    /// More bytes decide.
    Need,
    /// Not a name (white space or `<` inside, or too long): the marker was prose.
    Bad,
    /// The name ends at `end`; `stop` starts at `at`.
    Got {
        end: usize,
        at: usize,
        stop: &'static str,
    },
}

/// Start markers and the format each belongs to.
const STARTS: &[(&str, TextCallFormat)] = &[
    ("<tool_call>", TextCallFormat::Hermes),
    ("<tool_call>", TextCallFormat::QwenXml),
    ("<tool_call>", TextCallFormat::Glm),
    ("<function=", TextCallFormat::QwenXml),
    ("<｜tool▁calls▁begin｜>", TextCallFormat::Deepseek),
    ("<｜tool▁call▁begin｜>", TextCallFormat::Deepseek),
    ("[TOOL_CALLS]", TextCallFormat::Mistral),
    ("<|python_tag|>", TextCallFormat::Llama),
    ("<|tool_calls_section_begin|>", TextCallFormat::Kimi),
    ("<|tool_call_section_begin|>", TextCallFormat::Kimi),
    ("<|tool_call_begin|>", TextCallFormat::Kimi),
];

/// The incremental recogniser of one turn's text (see the module docs).
#[derive(Debug, Clone)]
pub struct Recogniser {
    config: TextCalls,
    /// The format `auto` settled on with the first call.
    chosen: Option<TextCallFormat>,
    /// Start markers in force.
    markers: Vec<&'static str>,
    buf: String,
    /// Bytes of `buf` done with; the current state's bytes start here.
    at: usize,
    /// Where the current search for markers resumes (at or after `at`).
    scan: usize,
    state: State,
    /// Non-blank text or a call came already (a Llama JSON call opens the answer).
    started: bool,
    /// The current call: its name, whether `Start` went out, parameters built, current key.
    name: String,
    open: bool,
    params: usize,
    key: String,
    /// Argument text of the current call went out already (leading blanks are left out).
    emitted: bool,
}

impl Recogniser {
    /// A recogniser for one turn read with `config`.
    pub fn new(config: &TextCalls) -> Self {
        let mut r = Self {
            config: config.clone(),
            chosen: None,
            markers: Vec::new(),
            buf: String::new(),
            at: 0,
            scan: 0,
            state: State::Text,
            started: false,
            name: String::new(),
            open: false,
            params: 0,
            key: String::new(),
            emitted: false,
        };
        r.set_markers();
        r
    }

    /// The next fragment of answer text; what it decided goes to `out`.
    pub fn push(&mut self, text: &str, out: &mut Vec<Piece>) {
        self.buf.push_str(text);
        while self.step(false, out) {}
        // Bytes before `at` are done with: dropped once they are most of the buffer, so the
        // copying stays linear in total.
        if self.at > 4096 && self.at * 2 > self.buf.len() {
            self.buf.drain(..self.at);
            self.scan -= self.at;
            self.at = 0;
        }
    }

    /// The text ended: what was held back is decided (a marker prefix is text, a call still
    /// open is `Cut`).
    pub fn finish(&mut self, out: &mut Vec<Piece>) {
        while self.step(true, out) {}
        self.flush(out);
        self.buf.clear();
        self.at = 0;
        self.scan = 0;
        self.state = State::Text;
    }

    /// Whether `format`'s markers are in force.
    fn allowed(&self, format: TextCallFormat) -> bool {
        match (self.config.format(), self.chosen) {
            // `auto` knows every marker (for Llama `<|python_tag|>`, never a bare JSON answer).
            (TextCallFormat::Auto, None) => true,
            (TextCallFormat::Auto, Some(c)) => c == format,
            (f, _) => f == format,
        }
    }

    fn set_markers(&mut self) {
        let mut markers: Vec<&'static str> = Vec::new();
        for &(m, f) in STARTS {
            if self.allowed(f) && !markers.contains(&m) {
                markers.push(m);
            }
        }
        self.markers = markers;
    }

    /// A call of `format` started: `auto` keeps to that format from now on.
    fn choose(&mut self, format: TextCallFormat) {
        if self.chosen.is_none() && self.config.format() == TextCallFormat::Auto {
            self.chosen = Some(format);
            self.set_markers();
        }
    }

    fn rest(&self) -> &str {
        &self.buf[self.at..]
    }

    /// Moves `at` (and the search) to `to`.
    fn consume(&mut self, to: usize) {
        self.at = to;
        self.scan = to;
    }

    fn goto(&mut self, state: State) -> bool {
        self.state = state;
        self.scan = self.at;
        true
    }

    fn text(&mut self, text: &str, out: &mut Vec<Piece>) {
        if text.is_empty() {
            return;
        }
        if !text.trim().is_empty() {
            self.started = true;
        }
        if let Some(Piece::Text(last)) = out.last_mut() {
            last.push_str(text);
        } else {
            out.push(Piece::Text(text.to_owned()));
        }
    }

    /// Emits `buf[at..to]` as text and moves past it.
    fn text_to(&mut self, to: usize, out: &mut Vec<Piece>) {
        let text = self.buf[self.at..to].to_owned();
        self.text(&text, out);
        self.consume(to);
    }

    fn start(&mut self, name: &str, format: TextCallFormat, out: &mut Vec<Piece>) {
        self.choose(format);
        self.started = true;
        self.name = name.to_owned();
        self.open = true;
        self.params = 0;
        self.emitted = false;
        out.push(Piece::Start {
            name: name.to_owned(),
        });
    }

    fn arguments(&mut self, text: &str, out: &mut Vec<Piece>) {
        if text.is_empty() {
            return;
        }
        if let Some(Piece::Arguments(last)) = out.last_mut() {
            last.push_str(text);
        } else {
            out.push(Piece::Arguments(text.to_owned()));
        }
    }

    fn end(&mut self, out: &mut Vec<Piece>) {
        if self.open {
            self.open = false;
            out.push(Piece::End);
        }
    }

    /// Skips white space at `at`; whether a non-blank byte follows.
    fn skip_ws(&mut self) -> bool {
        let rest = self.rest();
        let blank = rest.len() - rest.trim_start().len();
        self.consume(self.at + blank);
        self.at < self.buf.len()
    }

    /// Searches for the first of `markers` from the resume point, in one pass: each byte that
    /// may begin a marker is tried against them all, so no byte is looked at again beyond a
    /// marker's length. On a miss the resume point moves to where a marker might still begin.
    fn until(&mut self, markers: &[&'static str]) -> Until {
        let from = self.scan.max(self.at);
        let hay = &self.buf[from..];
        let bytes = hay.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            // Every marker begins with an ASCII byte, so `i` is a character boundary there.
            if !markers.iter().any(|m| m.as_bytes()[0] == b) {
                continue;
            }
            let tail = &hay[i..];
            if let Some(&m) = markers.iter().find(|m| tail.starts_with(**m)) {
                return Until::Found(from + i, m);
            }
            if markers.iter().any(|m| m.starts_with(tail)) {
                self.scan = from + i;
                return Until::Safe(from + i);
            }
        }
        self.scan = self.buf.len();
        Until::Safe(self.buf.len())
    }

    /// Reads a name from `from` up to one of `stops` (white space before a stop is allowed
    /// and left out).
    fn read_name(&self, from: usize, stops: &[&'static str]) -> Name {
        let text = &self.buf[from..];
        let mut end = None;
        for (i, c) in text.char_indices() {
            let tail = &text[i..];
            match lit_any(tail, stops) {
                Ok(Some(stop)) => {
                    let name_end = end.unwrap_or(i);
                    return if name_end == 0 {
                        Name::Bad
                    } else {
                        Name::Got {
                            end: from + name_end,
                            at: from + i,
                            stop,
                        }
                    };
                }
                Err(()) => return Name::Need,
                Ok(None) => {}
            }
            if i > MAX_NAME {
                return Name::Bad;
            }
            if c.is_whitespace() {
                end.get_or_insert(i);
            } else if end.is_some() || c == '<' || c == '>' {
                return Name::Bad;
            }
        }
        Name::Need
    }

    /// One step of the current state; whether it moved on (false: more bytes decide).
    fn step(&mut self, eof: bool, out: &mut Vec<Piece>) -> bool {
        match self.state {
            State::Text => self.step_text(out),
            State::Tag { skip } => self.step_tag(skip, eof, out),
            State::HermesBody => self.step_hermes(out),
            State::QwenName { skip, wrapped } => self.step_qwen_name(skip, wrapped, out),
            State::QwenBody { wrapped } => self.step_qwen_body(wrapped, out),
            State::QwenKey { wrapped } => self.step_qwen_key(wrapped),
            State::QwenValue { wrapped } => self.step_qwen_value(wrapped, out),
            State::QwenAfter { wrapped } => self.step_qwen_after(wrapped, eof),
            State::GlmBody => self.step_glm_body(out),
            State::GlmKey => self.step_glm_key(),
            State::GlmBetween => self.step_glm_between(),
            State::GlmValue => self.step_glm_value(out),
            State::DsSection => self.step_ds_section(eof),
            State::DsHead => self.step_ds_head(out),
            State::DsName => self.step_ds_name(out),
            State::DsFence => self.step_ds_fence(),
            State::DsArgs { fenced } => self.step_ds_args(fenced, out),
            State::DsAfter => self.step_ds_after(eof),
            State::KimiSection => self.step_kimi_section(eof),
            State::KimiId => self.step_kimi_id(out),
            State::KimiArgs => self.step_kimi_args(out),
            State::MistralHead { skip } => self.step_mistral_head(skip, out),
            State::MistralCallId => self.step_mistral_call_id(),
            State::MistralArgs => self.step_mistral_args(),
            State::MistralRaw => self.step_mistral_raw(out),
            State::MistralList => self.step_mistral_list(),
            State::Streamed(scan) => self.step_streamed(scan, out),
            State::Object { scan, then } => self.step_object(scan, then, out),
            State::PythonTag => self.step_python_tag(),
            State::LlamaAfter => self.step_llama_after(),
        }
    }

    fn step_text(&mut self, out: &mut Vec<Piece>) -> bool {
        let bare = self.config.format() == TextCallFormat::Llama && !self.started;
        if bare {
            // A Llama JSON call is the whole answer: only a `{` before any other text opens one.
            let rest = self.rest();
            let blank = rest.len() - rest.trim_start().len();
            if blank == rest.len() {
                return false;
            }
            if rest[blank..].starts_with('{') {
                self.text_to(self.at + blank, out);
                return self.goto(State::Object {
                    scan: Scan::default(),
                    then: After::LlamaBare,
                });
            }
        }
        let markers = std::mem::take(&mut self.markers);
        let found = self.until(&markers);
        self.markers = markers;
        match found {
            Until::Found(pos, marker) => {
                self.text_to(pos, out);
                self.open_marker(marker);
                true
            }
            Until::Safe(safe) => {
                if safe > self.at {
                    self.text_to(safe, out);
                }
                false
            }
        }
    }

    /// A start marker begins at `at`.
    fn open_marker(&mut self, marker: &'static str) {
        let after = self.at + marker.len();
        let state = match marker {
            "<tool_call>" => {
                return self.keep(State::Tag { skip: marker.len() });
            }
            "<function=" => {
                return self.keep(State::QwenName {
                    skip: marker.len(),
                    wrapped: false,
                });
            }
            "[TOOL_CALLS]" => return self.keep(State::MistralHead { skip: marker.len() }),
            "<｜tool▁calls▁begin｜>" => State::DsSection,
            "<｜tool▁call▁begin｜>" => State::DsHead,
            "<|python_tag|>" => State::PythonTag,
            "<|tool_call_begin|>" => State::KimiId,
            _ => State::KimiSection,
        };
        self.consume(after);
        self.goto(state);
    }

    /// Enters a deciding state whose marker stays at `at` until its body decides.
    fn keep(&mut self, state: State) {
        self.state = state;
        self.scan = self.at;
    }

    /// Everything still held back, at the end of the text.
    fn flush(&mut self, out: &mut Vec<Piece>) {
        let rest = self.rest().to_owned();
        match self.state {
            State::Text => self.text(&rest, out),
            State::Tag { skip } | State::MistralHead { skip } => {
                // A marker the text ended right after (or inside the name after it): a call
                // that was cut, never prose.
                let body = rest[skip..].trim();
                let name = body
                    .split(|c: char| c.is_whitespace() || c == '<' || c == '[')
                    .next()
                    .unwrap_or("")
                    .to_owned();
                let format = match self.state {
                    State::Tag { .. } => TextCallFormat::Glm,
                    _ => TextCallFormat::Mistral,
                };
                self.start(&name, format, out);
                out.push(Piece::Cut);
                self.open = false;
            }
            State::QwenName { skip, .. } => {
                let name = rest[skip..].trim().to_owned();
                self.start(&name, TextCallFormat::QwenXml, out);
                out.push(Piece::Cut);
                self.open = false;
            }
            State::HermesBody => {
                self.json_call(rest.trim(), false, TextCallFormat::Hermes, out);
            }
            State::Object { then, .. } => {
                let format = match then {
                    After::MistralList | After::MistralOne => TextCallFormat::Mistral,
                    After::LlamaTagged | After::LlamaBare => TextCallFormat::Llama,
                };
                if then == After::LlamaBare && json::scan_name(&rest).is_none() {
                    self.text(&rest, out);
                } else {
                    self.json_call(rest.trim(), false, format, out);
                }
            }
            State::QwenValue { .. } | State::GlmValue => {
                // The value the text stopped inside is kept as a string, so the raw text says
                // what arrived; the call is cut either way.
                let key = std::mem::take(&mut self.key);
                let value = match self.state {
                    State::QwenValue { .. } => rest.strip_prefix('\n').unwrap_or(&rest),
                    _ => &rest,
                };
                self.param(&key, Value::String(value.to_owned()), out);
                self.cut(out);
            }
            State::DsArgs { .. } | State::KimiArgs | State::Streamed(_) => {
                self.arguments(rest.trim_end(), out);
                self.cut(out);
            }
            State::MistralRaw => {
                self.arguments(rest.trim(), out);
                self.end(out);
            }
            State::DsHead | State::KimiId | State::MistralCallId => {
                if !self.open {
                    let head = rest.trim().to_owned();
                    let (name, format) = match self.state {
                        State::KimiId => (special::kimi_name(&head), TextCallFormat::Kimi),
                        State::DsHead => (head.as_str(), TextCallFormat::Deepseek),
                        _ => ("", TextCallFormat::Mistral),
                    };
                    let name = name.to_owned();
                    self.start(&name, format, out);
                }
                self.cut(out);
            }
            State::DsName => {
                let name = rest.trim().to_owned();
                self.start(&name, TextCallFormat::Deepseek, out);
                self.cut(out);
            }
            _ if self.open => {
                if matches!(self.state, State::QwenBody { .. } | State::GlmBody) {
                    // Parameters built so far stay the raw text; the object never closed.
                }
                self.cut(out);
            }
            _ => {
                // Between calls of a section: only what is not blank is text.
                if !rest.trim().is_empty() {
                    self.text(&rest, out);
                }
            }
        }
    }

    /// Streams argument text up to the first of `markers`: what cannot begin one goes out
    /// (trailing blanks wait, leading blanks of a call are left out); the marker's offset and
    /// which it is once found (the text before it sent, nothing consumed).
    fn stream_to(
        &mut self,
        markers: &[&'static str],
        out: &mut Vec<Piece>,
    ) -> Option<(usize, &'static str)> {
        match self.until(markers) {
            Until::Found(pos, marker) => {
                let text = self.buf[self.at..pos].trim_end().to_owned();
                self.args_text(&text, out);
                Some((pos, marker))
            }
            Until::Safe(safe) => {
                let chunk = &self.buf[self.at..safe];
                let keep = chunk.trim_end().len();
                let text = chunk[..keep].to_owned();
                self.args_text(&text, out);
                // The search resumes where it stopped, not at the blanks held back.
                self.at += keep;
                None
            }
        }
    }

    fn args_text(&mut self, text: &str, out: &mut Vec<Piece>) {
        let text = if self.emitted {
            text
        } else {
            text.trim_start()
        };
        if !text.is_empty() {
            self.emitted = true;
            self.arguments(text, out);
        }
    }

    fn cut(&mut self, out: &mut Vec<Piece>) {
        if self.open {
            self.open = false;
            out.push(Piece::Cut);
        }
    }

    /// Adds one built parameter to the current call's argument text (compact JSON).
    fn param(&mut self, key: &str, value: Value, out: &mut Vec<Piece>) {
        let mut text = String::from(if self.params == 0 { "{" } else { "," });
        text.push_str(&Value::String(key.to_owned()).to_string());
        text.push(':');
        text.push_str(&value.to_string());
        self.params += 1;
        self.arguments(&text, out);
    }

    /// Closes the built argument object and ends the call.
    fn close_params(&mut self, out: &mut Vec<Piece>) {
        let close = if self.params == 0 { "{}" } else { "}" };
        self.arguments(close, out);
        self.end(out);
    }

    /// A parameter value typed by the current tool's schema.
    fn typed(&self, key: &str, raw: &str) -> Value {
        json::typed(self.config.schema(&self.name), key, raw)
    }
}

#[cfg(test)]
mod tests;
