//! What a session's codec remembers: the open response (a [`Assembler`]), the calls awaiting results,
//! results held until they may be sent, and the client events due. Shared by every dialect.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use serde_json::Value;

use super::model::{RealtimeEvent, SessionStats};
use crate::assemble::Assembler;
use crate::error::{Error, Result};
use crate::provider::NameMap;
use crate::types::{ChatResponse, FinishReason, ProviderKind, StreamEvent, ToolCall, ToolResult};

/// How many ended responses (and cancelled calls) are remembered to recognise their late
/// events.
const RECENT: usize = 256;

/// The most text and argument bytes one response may bring (plus a fixed charge per call):
/// past it the response is cut (finish reason `error`, open calls `truncated`) and its later
/// events are stale. A toolwire limit, not a provider's: it bounds memory on any input.
pub(crate) const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// What a call's start is charged against [`MAX_RESPONSE_BYTES`].
pub(crate) const CALL_CHARGE: usize = 256;

/// The most calls awaiting results at once; past it the oldest is forgotten (its result is then
/// refused as unknown), so a server that never stops calling cannot grow memory without bound.
const MAX_AWAITING: usize = 1024;

/// A bounded set of the most recent ids.
#[derive(Debug, Default)]
pub(crate) struct Recent {
    order: VecDeque<String>,
    set: HashSet<String>,
}

impl Recent {
    pub(crate) fn insert(&mut self, id: &str) {
        if self.set.insert(id.to_owned()) {
            self.order.push_back(id.to_owned());
            if self.order.len() > RECENT
                && let Some(old) = self.order.pop_front()
            {
                self.set.remove(&old);
            }
        }
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.set.contains(id)
    }
}

/// The response being generated.
#[derive(Debug)]
pub(crate) struct Open {
    /// Position in the session.
    pub index: usize,
    /// The provider's id.
    pub id: Option<String>,
    pub turn: Assembler,
    /// Call key (the call id, native or synthesized) → position in the turn.
    pub keys: HashMap<String, usize>,
    /// Item id → call key, for deltas that name only their item.
    pub items: HashMap<String, String>,
    /// Output index → call key, for events that name only their place in the response.
    pub outputs: HashMap<u64, String>,
    /// The key of the call started last (events that name no call continue it while open).
    pub last: Option<String>,
    /// Calls whose end event came with text that is empty or stops before its JSON is
    /// complete: OpenAI sends `.done` for a response cut by a token limit too, so only the
    /// response's end decides (a normal end completes them, any other leaves them `truncated`).
    pub ended: BTreeSet<usize>,
    /// The response is being cancelled: its events never complete a call.
    pub cancelled: bool,
    /// Bytes charged so far (see [`MAX_RESPONSE_BYTES`]).
    pub bytes: usize,
}

impl Open {
    /// Charges `n` bytes to the response.
    pub(crate) fn charge(&mut self, n: usize) {
        self.bytes = self.bytes.saturating_add(n);
    }
}

/// A complete call waiting for its result.
#[derive(Debug, Clone)]
pub(crate) struct Awaiting {
    pub id: String,
    pub name: String,
    pub response: usize,
    /// Gemini Live: the `toolCall` message it came in (answered together).
    pub batch: usize,
    /// The id is toolwire's, not the provider's (never sent back).
    pub synthetic: bool,
    /// Completion order in the session.
    pub seq: usize,
}

/// A result waiting for its siblings.
#[derive(Debug)]
pub(crate) struct Held {
    pub call: Awaiting,
    pub result: ToolResult,
}

/// The codec state shared by the dialects.
#[derive(Debug)]
pub(crate) struct State {
    pub provider: ProviderKind,
    pub names: NameMap,
    pub open: Option<Open>,
    closed: Recent,
    cancelled: Recent,
    pub awaiting: VecDeque<Awaiting>,
    pub held: Vec<Held>,
    seq: usize,
    /// Gemini Live `toolCall` messages seen.
    pub batches: usize,
    /// A `response.create` should be sent once no response is active.
    pub want_response: bool,
    /// A `response.create` was sent and no response began since.
    pub requested: bool,
    pub outbox: VecDeque<Value>,
    pub stats: SessionStats,
}

impl State {
    pub(crate) fn new(provider: ProviderKind) -> Self {
        Self {
            provider,
            names: NameMap::default(),
            open: None,
            closed: Recent::default(),
            cancelled: Recent::default(),
            awaiting: VecDeque::new(),
            held: Vec::new(),
            seq: 0,
            batches: 0,
            want_response: false,
            requested: false,
            outbox: VecDeque::new(),
            stats: SessionStats::default(),
        }
    }

    /// A response begins; one still open is superseded (cut: its open calls truncated).
    pub(crate) fn begin(&mut self, id: Option<String>, out: &mut Vec<RealtimeEvent>) {
        if let Some(old) = self.open.take() {
            self.close(old, None, None, out);
        }
        let index = self.stats.responses;
        self.stats.responses += 1;
        self.requested = false;
        out.push(RealtimeEvent::ResponseStarted {
            response: index,
            id: id.clone(),
        });
        self.open = Some(Open {
            index,
            id,
            turn: Assembler::new(self.provider).with_explicit_call_ends(),
            keys: HashMap::new(),
            items: HashMap::new(),
            outputs: HashMap::new(),
            last: None,
            ended: BTreeSet::new(),
            cancelled: false,
            bytes: 0,
        });
    }

    /// The open response an event of `response_id` belongs to; a response is begun for an id
    /// not seen before when none is open (servers that skip `response.created`). `None`: the
    /// event is stale (an ended or superseded response's).
    pub(crate) fn route(
        &mut self,
        response_id: Option<&str>,
        out: &mut Vec<RealtimeEvent>,
    ) -> Option<&mut Open> {
        enum Fit {
            Open,
            Begin,
            Stale,
        }
        let response_id = response_id.filter(|s| !s.is_empty());
        let fit = match &self.open {
            Some(open) => match (&open.id, response_id) {
                (Some(own), Some(id)) if own != id => Fit::Stale,
                _ => Fit::Open,
            },
            None => match response_id {
                Some(id) if self.closed.contains(id) => Fit::Stale,
                _ => Fit::Begin,
            },
        };
        match fit {
            Fit::Stale => return None,
            Fit::Begin => self.begin(response_id.map(str::to_owned), out),
            Fit::Open => {}
        }
        let open = self.open.as_mut()?;
        if open.id.is_none() {
            open.id = response_id.map(str::to_owned);
        }
        Some(open)
    }

    /// Cuts the open response if it passed [`MAX_RESPONSE_BYTES`].
    pub(crate) fn enforce_limit(&mut self, out: &mut Vec<RealtimeEvent>) {
        if let Some(open) = self.open.as_mut()
            && open.bytes > MAX_RESPONSE_BYTES
        {
            open.turn.set_extra(
                "cut",
                Value::String(format!(
                    "the response passed toolwire's limit of {MAX_RESPONSE_BYTES} bytes"
                )),
            );
            self.end(None, None, out);
        }
    }

    /// Ends the open response with `reason` (`None`: cut short, no finish came).
    /// `raw` is the provider's own finish value, verbatim (`raw_finish_reason`).
    pub(crate) fn end(
        &mut self,
        reason: Option<FinishReason>,
        raw: Option<&str>,
        out: &mut Vec<RealtimeEvent>,
    ) {
        if let Some(open) = self.open.take() {
            self.close(open, reason, raw, out);
        }
    }

    fn close(
        &mut self,
        mut open: Open,
        reason: Option<FinishReason>,
        raw: Option<&str>,
        out: &mut Vec<RealtimeEvent>,
    ) {
        let mut events = Vec::new();
        // Calls whose end event came cut off: complete (and handed out) only after a normal end.
        let mut ready = Vec::new();
        if reason.as_ref().is_some_and(FinishReason::is_normal_end) {
            for &position in &open.ended {
                if open.turn.complete_call(position, &mut events) {
                    ready.extend(open.turn.completed_call(position).cloned());
                }
            }
        }
        if let Some(reason) = reason {
            open.turn.finish(reason, raw, &mut events);
        }
        let result = match open.turn.end(&mut events) {
            Ok(r) => r,
            Err(e) => e.partial().cloned().unwrap_or_else(|| ChatResponse {
                finish_reason: FinishReason::Error,
                ..ChatResponse::default()
            }),
        };
        forward(open.index, events, out);
        for call in ready {
            self.ready(open.index, 0, call, out);
        }
        if let Some(id) = &open.id {
            self.closed.insert(id);
        }
        out.push(RealtimeEvent::ResponseDone {
            response: open.index,
            result,
        });
    }

    /// A call is complete: it now awaits its result.
    pub(crate) fn ready(
        &mut self,
        response: usize,
        batch: usize,
        call: ToolCall,
        out: &mut Vec<RealtimeEvent>,
    ) {
        self.stats.calls_ready += 1;
        self.awaiting.push_back(Awaiting {
            id: call.id.clone(),
            name: call.name.clone(),
            response,
            batch,
            synthetic: call.has_synthetic_id(),
            seq: self.seq,
        });
        self.seq += 1;
        if self.awaiting.len() > MAX_AWAITING {
            self.awaiting.pop_front();
        }
        out.push(RealtimeEvent::CallReady { response, call });
    }

    /// Calls the server cancelled: they await nothing any more; returns those that did.
    pub(crate) fn cancel_calls(&mut self, ids: &[String]) -> usize {
        let mut n = 0;
        for id in ids {
            self.cancelled.insert(id);
            if let Some(pos) = self.awaiting.iter().position(|a| &a.id == id) {
                self.awaiting.remove(pos);
                n += 1;
            }
            // A result already given for it is not sent either.
            let before = self.held.len();
            self.held.retain(|h| &h.call.id != id);
            self.stats.dropped_results += before - self.held.len();
        }
        self.stats.cancelled_calls += ids.len();
        n
    }

    /// Takes results for awaiting calls. All or nothing: a result for a call nobody awaits is
    /// an error naming it; results for calls the server cancelled are dropped (counted).
    pub(crate) fn accept(&mut self, results: &[ToolResult]) -> Result<()> {
        let mut seen = HashSet::new();
        for (i, r) in results.iter().enumerate() {
            let path = format!("results[{i}].call_id");
            if !seen.insert(r.call_id.as_str()) {
                return Err(Error::input(
                    path,
                    format!("call {:?} is answered twice", r.call_id),
                ));
            }
            if !self.awaiting.iter().any(|a| a.id == r.call_id)
                && !self.cancelled.contains(&r.call_id)
            {
                return Err(Error::input(
                    path,
                    format!(
                        "no call awaits a result with id {:?} (unknown, already answered, or \
                         from another session)",
                        r.call_id
                    ),
                ));
            }
        }
        for r in results {
            match self.awaiting.iter().position(|a| a.id == r.call_id) {
                Some(pos) => {
                    if let Some(call) = self.awaiting.remove(pos) {
                        self.held.push(Held {
                            call,
                            result: r.clone(),
                        });
                    }
                }
                None => self.stats.dropped_results += 1,
            }
        }
        Ok(())
    }

    /// A recorded client event answered the call `id` (or, without an id, the oldest awaiting
    /// call, as GLM binds results by position).
    pub(crate) fn answered(&mut self, id: Option<&str>, name: Option<&str>) {
        let pos = match (id.filter(|s| !s.is_empty()), name) {
            (Some(id), _) => self.awaiting.iter().position(|a| a.id == id),
            (None, Some(name)) => self.awaiting.iter().position(|a| a.name == name),
            (None, None) => (!self.awaiting.is_empty()).then_some(0),
        };
        if let Some(pos) = pos {
            self.awaiting.remove(pos);
        }
    }

    /// Held results whose group (by `key`: response or batch) awaits nothing more, in call
    /// order, grouped; the open response's group waits for it to end.
    pub(crate) fn releasable(&mut self, by_batch: bool) -> Vec<Vec<Held>> {
        let key = |a: &Awaiting| if by_batch { a.batch } else { a.response };
        let open = self.open.as_ref().map(|o| o.index);
        let mut groups: Vec<usize> = Vec::new();
        for h in &self.held {
            let k = key(&h.call);
            let blocked = self.awaiting.iter().any(|a| key(a) == k)
                || (!by_batch && open == Some(h.call.response));
            if !blocked && !groups.contains(&k) {
                groups.push(k);
            }
        }
        let mut out = Vec::new();
        for k in groups {
            let (mut group, rest): (Vec<Held>, Vec<Held>) = std::mem::take(&mut self.held)
                .into_iter()
                .partition(|h| key(&h.call) == k);
            self.held = rest;
            group.sort_by_key(|h| h.call.seq);
            out.push(group);
        }
        out
    }
}

/// Wraps a turn's events as session events of response `index`.
pub(crate) fn forward(index: usize, events: Vec<StreamEvent>, out: &mut Vec<RealtimeEvent>) {
    out.extend(events.into_iter().map(|event| RealtimeEvent::Model {
        response: index,
        event,
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_is_bounded() {
        let mut r = Recent::default();
        for i in 0..(RECENT + 10) {
            r.insert(&i.to_string());
        }
        assert!(!r.contains("0"));
        assert!(r.contains(&(RECENT + 9).to_string()));
        assert_eq!(r.order.len(), RECENT);
    }
}
