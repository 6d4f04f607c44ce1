//! The assembler: the state of one decoded turn (text, reasoning, tool calls, usage, finish)
//! that every provider's decoder feeds, whatever its wire.
//!
//! Every decoder translates its wire into calls on [`Assembler`], so the assembly rules
//! (`docs/assembly.md`) live in one place:
//!
//! - fragments are keyed by wire `index`; a missing or negative index falls back to a non-empty
//!   id, else to the fragment's position in its chunk (which continues the call last seen at
//!   that position without an index);
//! - a new non-empty id that comes with a name (or a different non-empty name) at a key holding
//!   another call starts a new call; a new id without a name continues the call (a server that
//!   sends a fresh id on every fragment);
//! - a call without a name is never complete (see [`ToolCall::new`]);
//! - `""`/null id and name mean absent, and a repeated id or name is never concatenated;
//! - calls are finalized at the end of the turn, never because the buffer parses; a wire that
//!   marks a call's end finalizes it there ([`Assembler::complete_call`]), so an agent can run it while
//!   the turn goes on, and a dialect whose calls end at the next index completes a call there
//!   only once its text is one complete JSON object ([`Assembler::complete_calls_before`]);
//! - argument text that arrives for a call already final makes that call's final state an
//!   error (its raw text whole), announced by a second `ToolCallComplete` at the end of the turn;
//! - argument text is appended (O(n) in total) and parsed once, at the end;
//! - `length` (or a broken stream) leaves unfinished calls `truncated`, invalid JSON is
//!   `malformed`, and `raw_arguments` is kept byte for byte either way;
//! - calls without an id get `call_<n>`, unique in the response and marked synthetic;
//! - with [`Assembler::with_explicit_call_ends`] (realtime wires, where only a call's own end event
//!   completes it), a call that never got its end is `truncated` when the turn ends, whatever
//!   its text parses to.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::text_calls::{Piece, Recogniser, TextCalls};
use crate::types::{
    ChatResponse, FinishReason, HostedCall, ProviderKind, StreamEvent, ToolCall, Usage,
};

/// One tool-call fragment as an OpenAI-style wire sends it. Empty strings mean absent.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Fragment<'a> {
    /// The wire `index`, if present.
    pub index: Option<i64>,
    /// The call id, if present.
    pub id: Option<&'a str>,
    /// The function name, if present.
    pub name: Option<&'a str>,
    /// A piece of the argument text.
    pub arguments: Option<&'a str>,
}

#[derive(Debug, Default)]
struct Slot {
    id: Option<String>,
    name: String,
    args: String,
    extra: Map<String, Value>,
    /// The call is final already (in `Assembler::early`): one flag, so a fragment's hot path
    /// asks no map.
    done: bool,
    /// Argument text arrived after the call was final (see [`Assembler::complete_call`]).
    late: bool,
    /// In [`Assembler::waiting`] already.
    waiting: bool,
    /// How far `args` reads as one JSON object (see [`Assembler::complete_calls_before`]).
    scan: ObjectScan,
    /// A call recovered from text: only its closing marker completes it, so one the text ends
    /// inside is `truncated` whatever its text parses to.
    from_text: bool,
}

/// An incremental check that a text is exactly one JSON object (surrounding whitespace
/// aside): strings, escapes and nesting are tracked, so each byte is looked at once however
/// often the question is asked. The structure says when the object closed; the text is then
/// parsed once to be sure it is valid JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum ObjectScan {
    /// Nothing but whitespace yet.
    #[default]
    Empty,
    /// Inside the object: `read` bytes looked at, nesting `depth`, inside a string, after a
    /// backslash in one.
    Open {
        read: usize,
        depth: usize,
        string: bool,
        escape: bool,
    },
    /// The object closed at `read` bytes and they parse; only whitespace may follow.
    Complete { read: usize },
    /// Not one JSON object, whatever follows (another first byte, text after the object, or
    /// an object that does not parse).
    Never,
}

impl ObjectScan {
    /// The scan advanced over the whole of `text` (which only grows).
    fn advance(self, text: &str) -> Self {
        let bytes = text.as_bytes();
        let (mut read, mut depth, mut string, mut escape) = match self {
            Self::Never => return Self::Never,
            Self::Complete { read } => {
                return if bytes[read..].iter().all(u8::is_ascii_whitespace) {
                    Self::Complete { read: bytes.len() }
                } else {
                    Self::Never
                };
            }
            Self::Empty => {
                let Some(start) = bytes.iter().position(|b| !b.is_ascii_whitespace()) else {
                    return Self::Empty;
                };
                if bytes[start] != b'{' {
                    return Self::Never;
                }
                (start + 1, 1, false, false)
            }
            Self::Open {
                read,
                depth,
                string,
                escape,
            } => (read, depth, string, escape),
        };
        while read < bytes.len() {
            let b = bytes[read];
            read += 1;
            if string {
                if escape {
                    escape = false;
                } else if b == b'\\' {
                    escape = true;
                } else if b == b'"' {
                    string = false;
                }
                continue;
            }
            match b {
                b'"' => string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        let object = &text[..read];
                        if serde_json::from_str::<serde::de::IgnoredAny>(object).is_err() {
                            return Self::Never;
                        }
                        return Self::Complete { read }.advance(text);
                    }
                }
                _ => {}
            }
        }
        Self::Open {
            read,
            depth,
            string,
            escape,
        }
    }
}

/// Where a fragment without a usable index is keyed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Index(i64),
    Id(String),
    Position(usize),
}

/// Slots by key. Small wire indexes, the key of nearly every fragment, sit in a vector, so the
/// common lookup is one bounds check; other keys are hashed.
#[derive(Debug, Default)]
struct Keys {
    small: Vec<Option<usize>>,
    other: HashMap<Key, usize>,
}

impl Keys {
    /// Indexes below this live in `small` (at most this many entries).
    const SMALL: i64 = 64;

    fn get(&self, key: &Key) -> Option<usize> {
        match key {
            Key::Index(i) if (0..Self::SMALL).contains(i) => {
                self.small.get(*i as usize).copied().flatten()
            }
            key => self.other.get(key).copied(),
        }
    }

    fn insert(&mut self, key: Key, slot: usize) {
        match key {
            Key::Index(i) if (0..Self::SMALL).contains(&i) => {
                let i = i as usize;
                if self.small.len() <= i {
                    self.small.resize(i + 1, None);
                }
                self.small[i] = Some(slot);
            }
            key => {
                self.other.insert(key, slot);
            }
        }
    }
}

/// The state of one turn: text, reasoning, tool calls, usage and finish reason.
#[derive(Debug)]
pub(crate) struct Assembler {
    provider: ProviderKind,
    text: String,
    reasoning: String,
    slots: Vec<Slot>,
    keys: Keys,
    usage: Option<Usage>,
    raw_usage: Option<Value>,
    finish: Option<FinishReason>,
    raw_finish: Option<String>,
    finalized: Option<Vec<ToolCall>>,
    extra: Map<String, Value>,
    /// Calls the provider ran itself, in wire order.
    hosted: Vec<HostedCall>,
    /// Calls the wire already marked final, by position (see [`Assembler::complete_call`]).
    early: HashMap<usize, ToolCall>,
    /// Calls below this position were offered to [`Assembler::complete_calls_before`] already.
    settled: usize,
    /// Calls below `settled`, not final yet, with argument text not looked at since: each is
    /// looked at again at the next call's start.
    waiting: Vec<usize>,
    /// Ids of the slots below `scanned` and of early calls, for minting early ids.
    seen_ids: HashSet<String>,
    scanned: usize,
    /// The next number an early call's minted id may take (minted numbers only grow).
    early_next: usize,
    /// Only [`Assembler::complete_call`] completes a call (see [`Assembler::with_explicit_call_ends`]).
    explicit_ends: bool,
    /// Tool calls written as text are recovered from the text (see [`Assembler::with_text_calls`]).
    recogniser: Option<Box<Recogniser>>,
    /// The position of the call the recogniser is in, if any.
    text_call: Option<usize>,
}

impl Assembler {
    /// A fresh turn for `provider`.
    pub(crate) fn new(provider: ProviderKind) -> Self {
        Self {
            provider,
            text: String::new(),
            reasoning: String::new(),
            slots: Vec::new(),
            keys: Keys::default(),
            usage: None,
            raw_usage: None,
            finish: None,
            raw_finish: None,
            finalized: None,
            extra: Map::new(),
            hosted: Vec::new(),
            early: HashMap::new(),
            settled: 0,
            waiting: Vec::new(),
            seen_ids: HashSet::new(),
            scanned: 0,
            early_next: 0,
            explicit_ends: false,
            recogniser: None,
            text_call: None,
        }
    }

    /// A turn whose text is read for tool calls the model wrote as text
    /// ([`crate::text_calls`]): text outside the markers stays text, each call becomes an
    /// ordinary call (completed at its closing marker, `truncated` if the text ends inside it).
    /// `None` leaves the text alone.
    pub(crate) fn with_text_calls(mut self, config: Option<&TextCalls>) -> Self {
        self.recogniser = config.map(|c| Box::new(Recogniser::new(c)));
        self
    }

    /// A turn whose wire marks each call's end (realtime `.done`): only
    /// [`Assembler::complete_call`] completes a call, and calls still open when the turn ends are
    /// `truncated` even when their text parses.
    pub(crate) fn with_explicit_call_ends(mut self) -> Self {
        self.explicit_ends = true;
        self
    }

    /// Whether the turn has ended (a finish reason arrived).
    pub(crate) fn is_finished(&self) -> bool {
        self.finalized.is_some()
    }

    /// Starts a call the provider runs itself (`blocks` its wire blocks so far): it stands
    /// after the text so far, and a [`StreamEvent::HostedCall`] says it runs. Returns its
    /// position in the response's `hosted_calls`.
    pub(crate) fn start_hosted(&mut self, call: HostedCall, out: &mut Vec<StreamEvent>) -> usize {
        let index = self.hosted.len();
        out.push(StreamEvent::HostedCall {
            index,
            name: call.name.clone(),
            status: "running".into(),
        });
        self.hosted.push(call.with_at(self.text.len()));
        index
    }

    /// The hosted call at `index`, to add its input, result or blocks.
    pub(crate) fn hosted_mut(&mut self, index: usize) -> Option<&mut HostedCall> {
        self.hosted.get_mut(index)
    }

    /// The result of the hosted call at `index` arrived (`status` the wire's word, or
    /// `completed`).
    pub(crate) fn hosted_done(
        &mut self,
        index: usize,
        result: Option<Value>,
        status: &str,
        out: &mut Vec<StreamEvent>,
    ) {
        if let Some(call) = self.hosted.get_mut(index) {
            if result.is_some() {
                call.result = result;
            }
            out.push(StreamEvent::HostedCall {
                index,
                name: call.name.clone(),
                status: status.into(),
            });
            if matches!(status, "completed" | "failed" | "incomplete") {
                out.push(StreamEvent::HostedCallComplete {
                    index,
                    call: call.clone(),
                });
            }
        }
    }

    /// Appends visible text (read for calls first, with [`Assembler::with_text_calls`]).
    pub(crate) fn text(&mut self, text: &str, out: &mut Vec<StreamEvent>) {
        if self.finalized.is_none()
            && let Some(mut r) = self.recogniser.take()
        {
            let mut pieces = Vec::new();
            r.push(text, &mut pieces);
            self.recogniser = Some(r);
            self.apply_pieces(pieces, out);
            return;
        }
        self.plain_text(text, out);
    }

    fn plain_text(&mut self, text: &str, out: &mut Vec<StreamEvent>) {
        if !text.is_empty() {
            self.text.push_str(text);
            out.push(StreamEvent::TextDelta { text: text.into() });
        }
    }

    /// The text ended: what the recogniser held back is decided before the turn's calls are
    /// finalized.
    fn end_text_calls(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some(mut r) = self.recogniser.take() {
            let mut pieces = Vec::new();
            r.finish(&mut pieces);
            self.apply_pieces(pieces, out);
        }
    }

    fn apply_pieces(&mut self, pieces: Vec<Piece>, out: &mut Vec<StreamEvent>) {
        for piece in pieces {
            match piece {
                Piece::Text(text) => self.plain_text(&text, out),
                Piece::Start { name } => {
                    let slot = self.slots.len();
                    out.push(StreamEvent::ToolCallStarted {
                        index: slot,
                        id: None,
                        name: name.clone(),
                    });
                    self.slots.push(Slot {
                        name,
                        from_text: true,
                        ..Slot::default()
                    });
                    self.text_call = Some(slot);
                }
                Piece::Arguments(text) => {
                    if let Some(slot) = self.text_call {
                        self.slots[slot].args.push_str(&text);
                        out.push(StreamEvent::ToolCallDelta {
                            index: slot,
                            fragment: text,
                        });
                    }
                }
                Piece::End => {
                    if let Some(slot) = self.text_call.take() {
                        self.complete_call(slot, out);
                    }
                }
                Piece::Cut => self.text_call = None,
            }
        }
    }

    /// Appends reasoning text.
    pub(crate) fn reasoning(&mut self, text: &str, out: &mut Vec<StreamEvent>) {
        if !text.is_empty() {
            self.reasoning.push_str(text);
            out.push(StreamEvent::ReasoningDelta { text: text.into() });
        }
    }

    /// The signature of the reasoning block in progress, as an event: the block itself is kept
    /// by the decoder (on the response's or a call's `extra`), so only the stream carries it
    /// here.
    pub(crate) fn reasoning_signature(&mut self, signature: &str, out: &mut Vec<StreamEvent>) {
        if !signature.is_empty() && self.finalized.is_none() {
            out.push(StreamEvent::ReasoningSignature {
                signature: signature.into(),
            });
        }
    }

    /// A reasoning block that arrived encrypted whole, as an event (kept like
    /// [`Assembler::reasoning_signature`]'s block).
    pub(crate) fn redacted_reasoning(&mut self, data: &str, out: &mut Vec<StreamEvent>) {
        if self.finalized.is_none() {
            out.push(StreamEvent::RedactedReasoning { data: data.into() });
        }
    }

    /// A reasoning item's opaque state, as an event (the item is kept like
    /// [`Assembler::reasoning_signature`]'s block).
    pub(crate) fn reasoning_state(
        &mut self,
        id: Option<&str>,
        encrypted_content: Option<&str>,
        out: &mut Vec<StreamEvent>,
    ) {
        let id = id.filter(|s| !s.is_empty());
        let encrypted_content = encrypted_content.filter(|s| !s.is_empty());
        if self.finalized.is_none() && (id.is_some() || encrypted_content.is_some()) {
            out.push(StreamEvent::ReasoningState {
                id: id.map(str::to_owned),
                encrypted_content: encrypted_content.map(str::to_owned),
            });
        }
    }

    /// Records usage; the last report wins (several providers repeat running totals).
    pub(crate) fn usage(&mut self, usage: Usage, out: &mut Vec<StreamEvent>) {
        if self.usage != Some(usage) {
            self.usage = Some(usage);
            out.push(StreamEvent::Usage { usage });
        }
    }

    /// Records the provider's own usage report, verbatim, beside the counts given to
    /// [`Assembler::usage`]; the last report wins, like the counts.
    pub(crate) fn raw_usage(&mut self, raw: Value) {
        self.raw_usage = Some(raw);
    }

    /// Sets a provider field on the response (e.g. a finish message).
    pub(crate) fn set_extra(&mut self, key: &str, value: Value) {
        self.extra.insert(key.to_owned(), value);
    }

    /// Appends the items of `items` (an array, or one value) to the turn's provider field
    /// `key`, a list kept verbatim in arrival order (OpenRouter's `reasoning_details`, which
    /// streams a few entries per chunk).
    pub(crate) fn extend_extra(&mut self, key: &str, items: Value) {
        let list = self
            .extra
            .entry(key.to_owned())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = list {
            match items {
                Value::Array(more) => list.extend(more),
                Value::Null => {}
                one => list.push(one),
            }
        }
    }

    /// Starts the next call (wires that number a call's block and send its id and name first:
    /// Anthropic, Bedrock, Cohere) and returns its slot for [`Assembler::append_arguments`].
    pub(crate) fn start_call(
        &mut self,
        id: Option<&str>,
        name: &str,
        out: &mut Vec<StreamEvent>,
    ) -> usize {
        let slot = self.call_count();
        self.fragment(
            0,
            Fragment {
                index: Some(i64::try_from(slot).unwrap_or(i64::MAX)),
                id,
                name: Some(name),
                arguments: None,
            },
            out,
        );
        slot
    }

    /// Argument text for the call [`Assembler::start_call`] gave `slot`.
    pub(crate) fn append_arguments(&mut self, slot: usize, text: &str, out: &mut Vec<StreamEvent>) {
        self.fragment(
            0,
            Fragment {
                index: Some(i64::try_from(slot).unwrap_or(i64::MAX)),
                id: None,
                name: None,
                arguments: Some(text),
            },
            out,
        );
    }

    /// Applies one tool-call fragment; `position` is its place in the chunk's list.
    pub(crate) fn fragment(
        &mut self,
        position: usize,
        f: Fragment<'_>,
        out: &mut Vec<StreamEvent>,
    ) {
        if self.finalized.is_some() {
            return;
        }
        let id = f.id.filter(|s| !s.is_empty());
        let name = f.name.filter(|s| !s.is_empty());
        let key = match f.index {
            Some(i) if i >= 0 => Key::Index(i),
            _ => match id {
                Some(id) => Key::Id(id.to_owned()),
                None => Key::Position(position),
            },
        };
        let indexed = matches!(key, Key::Index(_));
        let mut existing = self.keys.get(&key);
        if existing.is_none() && !indexed && id.is_some() && name.is_none() {
            // An unknown id without a name and without a usable index: a continuation carrying a
            // fresh id, like the indexed case below; it continues the call last seen here.
            existing = self.keys.get(&Key::Position(position));
        }
        let existing = existing.filter(|&slot| {
            let s = &self.slots[slot];
            // A new id starts a new call only when it comes with a name (Ollama sends each call
            // whole at index 0); without one it is a continuation that carries a fresh id
            // (GLM-4's own server sends a new id on every fragment).
            let new_id = matches!((id, &s.id), (Some(a), Some(b)) if a != b) && name.is_some();
            let new_name =
                matches!(name, Some(n) if !s.name.is_empty() && n != s.name) && id.is_none();
            !(new_id || new_name)
        });
        let slot = match existing {
            Some(slot) => slot,
            None => {
                let slot = self.slots.len();
                self.slots.push(Slot {
                    id: id.map(str::to_owned),
                    name: name.unwrap_or_default().to_owned(),
                    ..Slot::default()
                });
                if let Some(id) = id {
                    self.keys.insert(Key::Id(id.to_owned()), slot);
                }
                self.keys.insert(key, slot);
                out.push(StreamEvent::ToolCallStarted {
                    index: slot,
                    id: id.map(str::to_owned),
                    name: name.unwrap_or_default().to_owned(),
                });
                slot
            }
        };
        if !indexed {
            // Without a usable index, later id-less fragments at this position continue the
            // call that last appeared here, even when it was keyed by its id (a gateway that
            // sends `index: -1` on a call's first fragment and on every continuation).
            self.keys.insert(Key::Position(position), slot);
        }
        let s = &mut self.slots[slot];
        if s.id.is_none()
            && let Some(id) = id
        {
            s.id = Some(id.to_owned());
        }
        if s.name.is_empty()
            && let Some(name) = name
        {
            s.name = name.to_owned();
        }
        if let Some(args) = f.arguments.filter(|a| !a.is_empty()) {
            s.args.push_str(args);
            if s.done {
                // Text for a call already final: its arguments could still change, so its final
                // state is an error (see `finalize_calls`), never a silent extra.
                s.late = true;
            } else if slot < self.settled && !s.waiting {
                s.waiting = true;
                self.waiting.push(slot);
            }
            out.push(StreamEvent::ToolCallDelta {
                index: slot,
                fragment: args.to_owned(),
            });
        }
    }

    /// Adds a call that arrived whole (Gemini, a non-streamed body); returns its position.
    pub(crate) fn whole_call(
        &mut self,
        id: Option<&str>,
        name: &str,
        arguments: &str,
        extra: Map<String, Value>,
        out: &mut Vec<StreamEvent>,
    ) -> usize {
        let slot = self.slots.len();
        let id = id.filter(|s| !s.is_empty()).map(str::to_owned);
        out.push(StreamEvent::ToolCallStarted {
            index: slot,
            id: id.clone(),
            name: name.to_owned(),
        });
        if !arguments.is_empty() {
            out.push(StreamEvent::ToolCallDelta {
                index: slot,
                fragment: arguments.to_owned(),
            });
        }
        self.slots.push(Slot {
            id,
            name: name.to_owned(),
            args: arguments.to_owned(),
            extra,
            ..Slot::default()
        });
        slot
    }

    /// Announces the provider data of the call at `position` as known now, and `turn`, the
    /// turn's echoed provider data so far ([`StreamEvent::CallState`]): called by a decoder
    /// right after it started the call and set its `extra`.
    pub(crate) fn call_state(
        &mut self,
        position: usize,
        turn: Map<String, Value>,
        out: &mut Vec<StreamEvent>,
    ) {
        if self.finalized.is_none()
            && let Some(slot) = self.slots.get(position)
        {
            out.push(StreamEvent::CallState {
                index: position,
                call: slot.extra.clone(),
                turn,
            });
        }
    }

    /// Provider data for the call at `position` (echoed back on later requests).
    pub(crate) fn call_extra(&mut self, position: usize) -> Option<&mut Map<String, Value>> {
        self.slots.get_mut(position).map(|s| &mut s.extra)
    }

    /// The wire marked the end of the call at `position` (a Gemini whole call or closed
    /// streamed arguments, a dialect whose calls never continue once a later index starts): the
    /// call is finalized now and its `ToolCallComplete` emitted, so an agent can run it while
    /// the turn goes on. What "final" guarantees: the call's arguments are the text the wire
    /// gave it; however the turn ends later (even `length` or a broken stream) this call stays
    /// as it is. Argument text a misbehaving wire still sends for it is appended to its raw
    /// text and makes its final state `malformed` (announced by a second `ToolCallComplete` at
    /// the end of the turn), so a call whose arguments changed is never run again. A call without an id gets its `call_<n>` now, unique
    /// among the ids seen so far; a call without a name is final too, but never complete
    /// (`malformed`: nothing can run it). Calls already final, and unknown positions, are left
    /// alone; the result says whether the call was completed now.
    pub(crate) fn complete_call(&mut self, position: usize, out: &mut Vec<StreamEvent>) -> bool {
        if self.finalized.is_some() || self.early.contains_key(&position) {
            return false;
        }
        let Some(slot) = self.slots.get_mut(position) else {
            return false;
        };
        let args = std::mem::take(&mut slot.args);
        let (id, synthetic) = match slot.id.clone() {
            Some(id) => (id, false),
            None => {
                // Ids seen so far: each slot is scanned once over the turn (linear in total).
                for s in &self.slots[self.scanned.min(self.slots.len())..] {
                    self.seen_ids.extend(s.id.clone());
                }
                self.scanned = self.slots.len();
                // As at the end of the turn, numbers only grow, so N minted ids beside N
                // colliding natives cost O(N), not O(N²).
                let mut n = self.early_next.max(position);
                let mut id = format!("call_{n}");
                while self.seen_ids.contains(&id) {
                    probe();
                    n += 1;
                    id = format!("call_{n}");
                }
                self.early_next = n + 1;
                (id, true)
            }
        };
        self.seen_ids.insert(id.clone());
        let slot = &mut self.slots[position];
        let mut call = ToolCall::new(id, slot.name.clone(), args);
        call.extra = std::mem::take(&mut slot.extra);
        call.settle_free_form(false);
        if synthetic {
            call.extra
                .insert(ToolCall::SYNTHETIC_ID.to_owned(), Value::Bool(true));
        }
        out.push(StreamEvent::ToolCallComplete {
            index: position,
            call: call.clone(),
        });
        slot.done = true;
        self.early.insert(position, call);
        true
    }

    /// The call at `position` as [`Assembler::complete_call`] made it final, if it did.
    pub(crate) fn completed_call(&self, position: usize) -> Option<&ToolCall> {
        self.early.get(&position)
    }

    /// The name and argument text the call at `position` has accumulated so far (empty
    /// arguments once it is complete).
    pub(crate) fn call_so_far(&self, position: usize) -> Option<(&str, &str)> {
        self.slots
            .get(position)
            .map(|s| (s.name.as_str(), s.args.as_str()))
    }

    /// A later call started at `position` (a dialect whose calls are final once a later one
    /// starts): completes each call before it whose argument text is already exactly one JSON
    /// object, which no further text could change without making it invalid. A call whose text
    /// is not (empty, or cut in the middle by a server that interleaves fragments of several
    /// calls) stays open: it is looked at again at the next call's start once more of its text
    /// came, and otherwise finalized with the turn. Each position is settled once and each
    /// fragment makes its call wait once, and the text is scanned incrementally, so a turn
    /// costs time linear in its bytes.
    pub(crate) fn complete_calls_before(&mut self, position: usize, out: &mut Vec<StreamEvent>) {
        let end = position.min(self.slots.len());
        for i in self.settled..end {
            self.slots[i].waiting = true;
            self.waiting.push(i);
        }
        self.settled = self.settled.max(end);
        for i in std::mem::take(&mut self.waiting) {
            let slot = &mut self.slots[i];
            slot.waiting = false;
            slot.scan = slot.scan.advance(&slot.args);
            if matches!(slot.scan, ObjectScan::Complete { .. }) {
                self.complete_call(i, out);
            }
        }
    }

    /// Number of calls so far.
    pub(crate) fn call_count(&self) -> usize {
        self.slots.len()
    }

    /// The argument text of the call at `position` so far (its final text once completed).
    pub(crate) fn call_arguments(&self, position: usize) -> Option<&str> {
        match self.early.get(&position) {
            Some(call) => Some(&call.raw_arguments),
            None => self.slots.get(position).map(|s| s.args.as_str()),
        }
    }

    /// The turn ended with `reason`: finalizes every call (once; a repeated finish is ignored)
    /// and emits their `ToolCallComplete` events and `Finish`. `raw` is the provider's own
    /// finish value, verbatim, kept as the response's `raw_finish_reason` (`None` when the wire
    /// sent none, e.g. a turn ended by `[DONE]`).
    pub(crate) fn finish(
        &mut self,
        reason: FinishReason,
        raw: Option<&str>,
        out: &mut Vec<StreamEvent>,
    ) {
        if self.finalized.is_some() {
            return;
        }
        self.end_text_calls(out);
        self.raw_finish = raw.map(str::to_owned);
        let cut_short = !reason.is_normal_end();
        let calls = self.finalize_calls(cut_short, out);
        let mut reason = reason;
        if reason.is_normal_end() && calls.iter().any(ToolCall::is_complete) {
            reason = FinishReason::ToolCalls;
        }
        self.finalized = Some(calls);
        self.finish = Some(reason.clone());
        out.push(StreamEvent::Finish { reason });
    }

    fn finalize_calls(&mut self, cut_short: bool, out: &mut Vec<StreamEvent>) -> Vec<ToolCall> {
        let native: std::collections::HashSet<String> = (self.slots.iter())
            .filter_map(|s| s.id.clone())
            .chain(self.early.values().map(|c| c.id.clone()))
            .collect();
        // Minted numbers only grow: each call takes the first free `call_<n>` at or after both
        // its position and the last number minted, so the search never walks the same numbers
        // twice (N unnamed calls beside natives `call_0`..`call_{N-1}` cost O(N), not O(N²)).
        // Every number skipped over was taken, so this is also the first free one from `i`.
        let mut next = 0;
        let mut calls = Vec::with_capacity(self.slots.len());
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if let Some(mut call) = self.early.remove(&i) {
                // Final already (its ToolCallComplete went out). Text that came later means the
                // arguments it was completed with were not the model's: the call's final state
                // is an error with its whole text, announced with a second completion.
                if slot.late {
                    call.raw_arguments.push_str(&std::mem::take(&mut slot.args));
                    call.arguments = None;
                    call.error = Some(crate::types::ArgumentsError::new(
                        crate::types::ArgumentsErrorKind::Malformed,
                        "argument text arrived after the call was complete; the arguments it \
                         was completed with are not the model's",
                    ));
                    out.push(StreamEvent::ToolCallComplete {
                        index: i,
                        call: call.clone(),
                    });
                }
                calls.push(call);
                continue;
            }
            let args = std::mem::take(&mut slot.args);
            let (id, synthetic) = match slot.id.take() {
                Some(id) => (id, false),
                None => {
                    let mut n = next.max(i);
                    let mut id = format!("call_{n}");
                    while native.contains(&id) {
                        probe();
                        n += 1;
                        id = format!("call_{n}");
                    }
                    next = n + 1;
                    (id, true)
                }
            };
            let explicit = self.explicit_ends || slot.from_text;
            let mut call = if cut_short || explicit {
                ToolCall::new_cut_short(id, std::mem::take(&mut slot.name), args)
            } else {
                ToolCall::new(id, std::mem::take(&mut slot.name), args)
            };
            if explicit {
                // Whatever its text parses to, the wire never said the call was done.
                call.arguments = None;
                let kind = crate::types::ArgumentsErrorKind::Truncated;
                match &mut call.error {
                    Some(e) => e.kind = kind,
                    None => {
                        call.error = Some(crate::types::ArgumentsError {
                            kind,
                            message: if slot.from_text {
                                "the text ended before the call's closing marker".into()
                            } else {
                                "the turn ended before the call's end event".into()
                            },
                        });
                    }
                }
            }
            call.extra = std::mem::take(&mut slot.extra);
            call.settle_free_form(cut_short || explicit);
            if synthetic {
                call.extra
                    .insert(ToolCall::SYNTHETIC_ID.to_owned(), Value::Bool(true));
            }
            out.push(StreamEvent::ToolCallComplete {
                index: i,
                call: call.clone(),
            });
            calls.push(call);
        }
        calls
    }

    /// The response so far. Before [`Assembler::finish`] its calls are empty.
    fn response(&mut self) -> ChatResponse {
        ChatResponse {
            text: (!self.text.is_empty()).then(|| std::mem::take(&mut self.text)),
            reasoning: (!self.reasoning.is_empty()).then(|| std::mem::take(&mut self.reasoning)),
            tool_calls: self.finalized.take().unwrap_or_default(),
            hosted_calls: std::mem::take(&mut self.hosted),
            finish_reason: self.finish.take().unwrap_or(FinishReason::Error),
            raw_finish_reason: self.raw_finish.take(),
            usage: self.usage,
            raw_usage: self.raw_usage.take(),
            extra: std::mem::take(&mut self.extra),
        }
    }

    /// The stream is over. A turn that never got its finish is a broken stream: its calls are
    /// finalized as cut short and the error carries the partial response.
    pub(crate) fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<ChatResponse> {
        if self.finalized.is_some() {
            return Ok(self.response());
        }
        self.end_text_calls(out);
        let calls = self.finalize_calls(true, out);
        self.finalized = Some(calls);
        self.finish = Some(FinishReason::Error);
        let partial = self.response();
        Err(Error::Stream {
            provider: self.provider,
            reason: "stream ended before the turn finished".into(),
            partial: Some(Box::new(partial)),
        })
    }

    /// Ends the turn as if the stream was over (for providers whose end of stream is the
    /// terminal signal, e.g. Gemini): finishes with `reason` (and the wire's `raw` value) if no
    /// finish came, then ends.
    pub(crate) fn end_with(
        &mut self,
        reason: FinishReason,
        raw: Option<&str>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<ChatResponse> {
        self.finish(reason, raw, out);
        self.end(out)
    }

    /// The partial response of an interrupted turn (an error event mid-stream): unfinished calls
    /// come out `truncated`.
    pub(crate) fn interrupt(&mut self) -> ChatResponse {
        let mut sink = Vec::new();
        if self.finalized.is_none() {
            self.end_text_calls(&mut sink);
            let calls = self.finalize_calls(true, &mut sink);
            self.finalized = Some(calls);
            self.finish = Some(FinishReason::Error);
        }
        self.response()
    }
}

#[cfg(test)]
thread_local! {
    /// Taken ids looked past while minting, counted so a test can bound the work.
    static PROBES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[inline]
fn probe() {
    #[cfg(test)]
    PROBES.with(|p| p.set(p.get() + 1));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ArgumentsErrorKind;

    #[test]
    fn minting_ids_is_linear_beside_colliding_natives() {
        // N calls without ids, then N calls whose ids are `call_0`..`call_{N-1}`: every
        // minted id collides at first. The old search restarted at each call's position and
        // looked past O(N²) taken ids.
        let n = 2_000;
        let mut t = Assembler::new(ProviderKind::OpenAi);
        let mut out = Vec::new();
        for p in 0..n {
            t.fragment(0, frag(Some(p), None, Some("f"), "{}"), &mut out);
        }
        let natives: Vec<String> = (0..n).map(|k| format!("call_{k}")).collect();
        for (k, id) in natives.iter().enumerate() {
            t.fragment(
                0,
                frag(Some(n + k as i64), Some(id), Some("g"), "{}"),
                &mut out,
            );
        }
        PROBES.with(|p| p.set(0));
        t.finish(FinishReason::ToolCalls, Some("tool_calls"), &mut out);
        let probes = PROBES.with(std::cell::Cell::get);
        let r = t.end(&mut out).unwrap();
        assert!(probes <= 2 * n as usize, "{probes} probes for {n} calls");
        let ids: std::collections::HashSet<_> = r.tool_calls.iter().map(|c| &c.id).collect();
        assert_eq!(ids.len(), 2 * n as usize, "ids are unique");
        assert_eq!(r.tool_calls[0].id, format!("call_{n}"));
        assert_eq!(r.tool_calls[1].id, format!("call_{}", n + 1));
    }

    #[test]
    fn minting_ids_for_early_calls_is_linear_and_unique() {
        // N natives `call_N`..`call_{2N-1}` first, then N id-less whole calls (at positions
        // N..2N-1) each completed as it arrives (Ollama without ids): every early mint would
        // walk past the natives if it restarted at its own position.
        let n = 2_000;
        let mut t = Assembler::new(ProviderKind::Ollama);
        let mut out = Vec::new();
        for k in 0..n {
            t.whole_call(
                Some(&format!("call_{}", n + k)),
                "g",
                "{}",
                Map::new(),
                &mut out,
            );
        }
        PROBES.with(|p| p.set(0));
        for _ in 0..n {
            let slot = t.whole_call(None, "f", "{}", Map::new(), &mut out);
            t.complete_call(slot, &mut out);
        }
        let probes = PROBES.with(std::cell::Cell::get);
        t.finish(FinishReason::Stop, Some("stop"), &mut out);
        let r = t.end(&mut out).unwrap();
        assert!(probes <= 2 * n, "{probes} probes for {n} calls");
        let ids: std::collections::HashSet<_> = r.tool_calls.iter().map(|c| &c.id).collect();
        assert_eq!(ids.len(), 2 * n, "ids are unique");
        assert_eq!(r.tool_calls[n].id, format!("call_{}", 2 * n));
        assert!(r.tool_calls[n].has_synthetic_id());
    }

    fn frag<'a>(
        index: Option<i64>,
        id: Option<&'a str>,
        name: Option<&'a str>,
        args: &'a str,
    ) -> Fragment<'a> {
        Fragment {
            index,
            id,
            name,
            arguments: Some(args),
        }
    }

    #[test]
    fn index_keying_and_new_id_at_same_index() {
        let mut t = Assembler::new(ProviderKind::OpenAi);
        let mut out = Vec::new();
        t.fragment(0, frag(Some(0), Some("a"), Some("f"), "{\"x\":"), &mut out);
        t.fragment(0, frag(Some(0), Some(""), None, "1}"), &mut out);
        t.fragment(0, frag(Some(0), Some("b"), Some("g"), "{}"), &mut out);
        t.finish(FinishReason::Stop, Some("stop"), &mut out);
        let r = t.end(&mut out).unwrap();
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].raw_arguments, "{\"x\":1}");
        assert_eq!(r.tool_calls[1].name, "g");
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        assert_eq!(
            r.raw_finish_reason.as_deref(),
            Some("stop"),
            "the wire's value"
        );
    }

    #[test]
    fn a_fresh_id_without_a_name_continues_the_call() {
        // GLM-4's openai_api_server.py: index 0, the name only on the first fragment, a new id
        // on every fragment.
        let mut t = Assembler::new(ProviderKind::OpenAi);
        let mut out = Vec::new();
        t.fragment(0, frag(Some(0), Some("a"), Some("f"), "{\"x\":"), &mut out);
        t.fragment(0, frag(Some(0), Some("b"), None, "\"y"), &mut out);
        t.fragment(0, frag(Some(0), Some("c"), None, "z\"}"), &mut out);
        // Without an index the same holds at the fragment's position.
        t.fragment(1, frag(None, Some("d"), Some("g"), "{\"q\":"), &mut out);
        t.fragment(1, frag(None, Some("e"), None, "1}"), &mut out);
        // A new id that comes with a name is a new call, even with the same name (Ollama).
        t.fragment(0, frag(Some(0), Some("h"), Some("f"), "{}"), &mut out);
        t.finish(FinishReason::ToolCalls, Some("tool_calls"), &mut out);
        let r = t.end(&mut out).unwrap();
        let calls: Vec<_> = r
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.raw_arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            [
                ("a", "f", "{\"x\":\"yz\"}"),
                ("d", "g", "{\"q\":1}"),
                ("h", "f", "{}")
            ]
        );
        assert!(r.tool_calls.iter().all(ToolCall::is_complete));
    }

    #[test]
    fn a_call_without_a_name_is_never_complete() {
        let mut t = Assembler::new(ProviderKind::OpenAi);
        let mut out = Vec::new();
        t.fragment(0, frag(Some(1), None, None, "{}"), &mut out);
        t.finish(FinishReason::Stop, Some("stop"), &mut out);
        let r = t.end(&mut out).unwrap();
        let call = &r.tool_calls[0];
        assert!(!call.is_complete());
        assert_eq!(call.raw_arguments, "{}");
        assert_eq!(call.arguments, None);
        let err = call.error.as_ref().unwrap();
        assert_eq!(err.kind, ArgumentsErrorKind::Malformed);
        assert!(err.message.contains("no name"), "{err}");
        assert_eq!(r.finish_reason, FinishReason::Stop, "no runnable call");
    }

    #[test]
    fn missing_index_by_position_and_minted_ids() {
        let mut t = Assembler::new(ProviderKind::OpenAi);
        let mut out = Vec::new();
        t.fragment(0, frag(Some(-1), None, Some("f"), "{}"), &mut out);
        t.fragment(1, frag(Some(-1), None, Some("g"), "{}"), &mut out);
        t.fragment(2, frag(None, Some("call_0"), Some("h"), "{}"), &mut out);
        t.finish(FinishReason::ToolCalls, Some("tool_calls"), &mut out);
        let r = t.end(&mut out).unwrap();
        let ids: Vec<_> = r.tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["call_1", "call_2", "call_0"]);
        assert!(r.tool_calls[0].has_synthetic_id());
        assert!(!r.tool_calls[2].has_synthetic_id());
    }

    #[test]
    fn negative_index_continuations_follow_their_call() {
        // bedrock-access-gateway#203: `index: -1` on the first fragment (with id) and on every
        // id-less continuation; the next call arrives at index 0.
        let mut t = Assembler::new(ProviderKind::OpenAi);
        let mut out = Vec::new();
        t.fragment(0, frag(Some(-1), Some("a"), Some("f"), ""), &mut out);
        t.fragment(0, frag(Some(-1), None, None, "{\"x\":"), &mut out);
        t.fragment(0, frag(Some(-1), None, None, "1}"), &mut out);
        t.fragment(0, frag(Some(0), Some("b"), Some("g"), "{}"), &mut out);
        t.finish(FinishReason::ToolCalls, Some("tool_calls"), &mut out);
        let r = t.end(&mut out).unwrap();
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].id, "a");
        assert_eq!(r.tool_calls[0].raw_arguments, "{\"x\":1}");
        assert_eq!(r.tool_calls[1].id, "b");
    }

    #[test]
    fn explicit_ends_truncate_calls_that_never_ended() {
        let mut t = Assembler::new(ProviderKind::OpenAi).with_explicit_call_ends();
        let mut out = Vec::new();
        t.fragment(0, frag(None, Some("a"), Some("f"), "{\"x\":1}"), &mut out);
        t.fragment(0, frag(None, Some("b"), Some("g"), "{}"), &mut out);
        assert_eq!(t.call_so_far(1), Some(("g", "{}")));
        t.complete_call(0, &mut out);
        let done = t.completed_call(0).cloned().unwrap();
        assert!(done.is_complete());
        t.finish(FinishReason::Stop, None, &mut out);
        let r = t.end(&mut out).unwrap();
        assert_eq!(r.tool_calls[0], done);
        // `{}` parses, but call b never got its end event.
        let err = r.tool_calls[1].error.as_ref().unwrap();
        assert_eq!(err.kind, ArgumentsErrorKind::Truncated);
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    }

    #[test]
    fn length_truncates_and_eof_is_broken() {
        let mut t = Assembler::new(ProviderKind::OpenAi);
        let mut out = Vec::new();
        t.fragment(
            0,
            frag(Some(0), Some("a"), Some("f"), "{\"x\":\"ab"),
            &mut out,
        );
        t.finish(FinishReason::Length, Some("length"), &mut out);
        let r = t.end(&mut out).unwrap();
        assert_eq!(r.finish_reason, FinishReason::Length);
        let err = r.tool_calls[0].error.as_ref().unwrap();
        assert_eq!(err.kind, ArgumentsErrorKind::Truncated);

        let mut t = Assembler::new(ProviderKind::OpenAi);
        t.fragment(
            0,
            frag(Some(0), Some("a"), Some("f"), "{\"x\":1}"),
            &mut out,
        );
        let err = t.end(&mut out).unwrap_err();
        let partial = err.partial().unwrap();
        assert_eq!(partial.tool_calls[0].raw_arguments, "{\"x\":1}");
        assert_eq!(partial.raw_finish_reason, None, "the wire sent none");
    }

    #[test]
    fn a_call_completed_early_stays_as_it_was() {
        let mut t = Assembler::new(ProviderKind::OpenAi);
        let mut out = Vec::new();
        t.fragment(0, frag(Some(0), None, Some("f"), "{\"x\":1}"), &mut out);
        t.fragment(
            0,
            frag(Some(1), Some("call_0"), Some("g"), "{\"y\""),
            &mut out,
        );
        t.complete_call(0, &mut out);
        t.complete_call(0, &mut out);
        let early: Vec<_> = out
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallComplete { index, call } => Some((*index, call.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(early.len(), 1, "completed once");
        // The native `call_0` of the next call is taken: the minted id avoids it.
        assert_eq!(early[0].1.id, "call_1");
        assert!(early[0].1.is_complete());
        // The turn is cut short: the ended call stays as it was.
        t.finish(FinishReason::Length, Some("length"), &mut out);
        let r = t.end(&mut out).unwrap();
        assert_eq!(r.tool_calls[0].raw_arguments, "{\"x\":1}");
        assert!(
            r.tool_calls[0].is_complete(),
            "not made truncated by the cut"
        );
        assert_eq!(
            r.tool_calls[1].error.as_ref().unwrap().kind,
            ArgumentsErrorKind::Truncated
        );
        let completes = out
            .iter()
            .filter(|e| matches!(e, StreamEvent::ToolCallComplete { .. }))
            .count();
        assert_eq!(completes, 2, "one completion per call");
    }

    /// The `ToolCallComplete` events in `out`, as (index, call).
    fn completions(out: &[StreamEvent]) -> Vec<(usize, ToolCall)> {
        out.iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallComplete { index, call } => Some((*index, call.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn text_after_a_call_is_final_makes_it_an_error_announced_again() {
        let mut t = Assembler::new(ProviderKind::Anthropic);
        let mut out = Vec::new();
        t.fragment(
            0,
            frag(Some(0), Some("a"), Some("f"), "{\"x\":1}"),
            &mut out,
        );
        assert!(t.complete_call(0, &mut out));
        // A misbehaving wire sends more text for the ended call.
        t.fragment(0, frag(Some(0), None, None, "2}"), &mut out);
        assert!(
            out.iter().any(|e| matches!(e, StreamEvent::ToolCallDelta { index: 0, fragment } if fragment == "2}")),
            "the fragment is an event as received"
        );
        t.finish(FinishReason::Stop, Some("end_turn"), &mut out);
        let r = t.end(&mut out).unwrap();
        let call = &r.tool_calls[0];
        assert_eq!(call.raw_arguments, "{\"x\":1}2}", "the whole text");
        assert!(call.arguments.is_none());
        assert_eq!(
            call.error.as_ref().unwrap().kind,
            ArgumentsErrorKind::Malformed
        );
        let done = completions(&out);
        assert_eq!(done.len(), 2, "completed, then announced as changed");
        assert!(done[0].1.is_complete());
        assert_eq!(&done[1].1, call, "the last completion is the final state");
        assert_eq!(r.finish_reason, FinishReason::Stop, "no complete call left");
    }

    /// The OpenAI rule: a call ends when the next index starts.
    fn next_index_turn(fragments: &[(i64, &str)]) -> (Vec<StreamEvent>, ChatResponse) {
        let mut t = Assembler::new(ProviderKind::OpenAi);
        let mut out = Vec::new();
        for &(index, args) in fragments {
            let calls = t.call_count();
            let (id, name) = (format!("c{index}"), format!("f{index}"));
            let first = t.call_so_far(index as usize).is_none();
            let f = if first {
                frag(Some(index), Some(&id), Some(&name), args)
            } else {
                frag(Some(index), None, None, args)
            };
            t.fragment(0, f, &mut out);
            if t.call_count() > calls {
                t.complete_calls_before(calls, &mut out);
            }
        }
        t.finish(FinishReason::ToolCalls, Some("tool_calls"), &mut out);
        let r = t.end(&mut out).unwrap();
        (out, r)
    }

    #[test]
    fn a_call_ends_at_the_next_index_only_once_its_text_is_one_object() {
        // Interleaved: call 0 has no text when call 1 starts, then half an object.
        let (out, r) = next_index_turn(&[
            (0, ""),
            (1, "{\"b\":"),
            (0, "{\"a\""),
            (1, "2}"),
            (0, ":1}"),
            (2, "{}"),
        ]);
        for (i, raw) in ["{\"a\":1}", "{\"b\":2}", "{}"].iter().enumerate() {
            assert_eq!(&r.tool_calls[i].raw_arguments, raw);
            assert!(r.tool_calls[i].is_complete(), "call {i}");
        }
        let done = completions(&out);
        assert_eq!(done.len(), 3, "each call completed once: {done:?}");
        // Calls 0 and 1 were complete objects when call 2 started; call 2 ends with the turn.
        let finish = out
            .iter()
            .position(|e| matches!(e, StreamEvent::Finish { .. }))
            .unwrap();
        let at = |i: usize| {
            out.iter()
                .position(
                    |e| matches!(e, StreamEvent::ToolCallComplete { index, .. } if *index == i),
                )
                .unwrap()
        };
        let start2 = out
            .iter()
            .position(|e| matches!(e, StreamEvent::ToolCallStarted { index: 2, .. }))
            .unwrap();
        assert!(at(0) > start2 && at(1) > start2 && at(2) < finish);
        for (_, call) in &done {
            let last = &r.tool_calls.iter().find(|c| c.id == call.id).unwrap();
            assert_eq!(&call.raw_arguments, &last.raw_arguments);
        }
    }

    #[test]
    fn object_scan_reads_one_object_in_any_pieces() {
        let cases = [
            ("{\"a\":\"}\\\"{\",\"b\":[1,{\"c\":[]}]} \n", true),
            ("  {}", true),
            ("{\"a\":1}x", false),
            ("[1]", false),
            ("{\"a\":tru}", false),
            ("{\"a\":1", false),
            ("{\"a\":1}{}", false),
            ("", false),
            ("{]", false),
        ];
        for (text, complete) in cases {
            for cut in 0..=text.len() {
                let mut scan = ObjectScan::default();
                scan = scan.advance(&text[..cut]);
                scan = scan.advance(text);
                assert_eq!(
                    matches!(scan, ObjectScan::Complete { .. }),
                    complete,
                    "{text:?} cut at {cut}: {scan:?}"
                );
            }
        }
    }

    #[test]
    fn a_call_completed_early_stays_complete_when_the_turn_is_cut() {
        let mut t = Assembler::new(ProviderKind::OpenAiResponses);
        let mut out = Vec::new();
        t.fragment(
            0,
            frag(Some(0), Some("a"), Some("f"), "{\"x\":1}"),
            &mut out,
        );
        t.fragment(0, frag(Some(1), None, Some("g"), "{}"), &mut out);
        t.fragment(0, frag(Some(2), Some("c"), Some("h"), "{\"y\":"), &mut out);
        assert!(t.complete_call(0, &mut out));
        assert!(!t.complete_call(0, &mut out), "completed twice");
        assert!(t.complete_call(1, &mut out), "an id is minted for it now");
        t.fragment(0, frag(Some(3), None, None, ""), &mut out);
        assert!(t.complete_call(3, &mut out), "the wire ended it");
        assert!(t.completed_call(0).is_some());
        assert_eq!(t.call_arguments(0), Some("{\"x\":1}"));
        t.finish(FinishReason::Length, Some("length"), &mut out);
        let r = t.end(&mut out).unwrap();
        assert!(r.tool_calls[0].is_complete());
        assert_eq!(r.tool_calls[1].id, "call_1");
        assert!(r.tool_calls[1].is_complete(), "final before the cut");
        assert!(!r.tool_calls[3].is_complete());
        assert_eq!(
            r.tool_calls[2].error.as_ref().unwrap().kind,
            ArgumentsErrorKind::Truncated
        );
        let completions = out
            .iter()
            .filter(|e| matches!(e, StreamEvent::ToolCallComplete { index: 0, .. }))
            .count();
        assert_eq!(completions, 1);
        assert_eq!(r.finish_reason, FinishReason::Length);
    }
}
