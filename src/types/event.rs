//! Events a stream decoder emits, in wire order.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{FinishReason, HostedCall, ToolCall, Usage};

/// One step of a streamed turn.
///
/// `index` on tool-call events is the call's position in the final
/// [`crate::ChatResponse::tool_calls`], not the provider's wire index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StreamEvent {
    /// Visible text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// Reasoning text.
    ReasoningDelta {
        /// The new reasoning text.
        text: String,
    },
    /// The signature that closes the reasoning block in progress (Anthropic's
    /// `signature_delta`, a Bedrock `reasoningContent` signature): opaque, echoed back verbatim
    /// on the next turn, so a writer of a wire that has signatures forwards it exactly.
    /// Several pieces of one block concatenate. The block itself stays on the final response
    /// (its provider `extra`), as before.
    ReasoningSignature {
        /// The signature text, exactly as received.
        signature: String,
    },
    /// A reasoning block the provider sent encrypted whole (Anthropic's `redacted_thinking`):
    /// no text to show, only `data` to echo back verbatim on the next turn.
    RedactedReasoning {
        /// The opaque data, exactly as received.
        data: String,
    },
    /// The opaque state of a reasoning item (a Responses `reasoning` output item): its `id`
    /// when the item begins, then again with its `encrypted_content` when the item is done (the
    /// later event wins field by field). Reasoning text between the two belongs to this item.
    ReasoningState {
        /// The provider's item id.
        id: Option<String>,
        /// The item's `encrypted_content`, once the provider sent it.
        encrypted_content: Option<String>,
    },
    /// A call began; its id may still be unknown (minted at the end) and its name is known
    /// as far as the wire has sent it.
    ToolCallStarted {
        /// Position of the call in the response.
        index: usize,
        /// The provider's id, when it sent one.
        id: Option<String>,
        /// The tool name (canonical unless the caller maps names).
        name: String,
    },
    /// The provider data a call carries from its start, as the decoder knows it then (right
    /// after the call's `ToolCallStarted`): what a gateway packs into the call's id for the next
    /// turn to echo, so the call can reach a client as it starts even after reasoning.
    /// Data that arrives later (reasoning after the last call) is on the final response only.
    CallState {
        /// Position of the call in the response.
        index: usize,
        /// The call's own provider data so far (as its final `extra` holds it).
        call: Map<String, Value>,
        /// The turn's provider data so far that the next turn echoes (reasoning that came
        /// before any other content, as the final response's `extra` holds it).
        turn: Map<String, Value>,
    },
    /// A fragment of a call's argument text.
    ToolCallDelta {
        /// Position of the call in the response.
        index: usize,
        /// The fragment, exactly as received.
        fragment: String,
    },
    /// A call is final: complete, malformed or truncated.
    ToolCallComplete {
        /// Position of the call in the response.
        index: usize,
        /// The final call.
        call: ToolCall,
    },
    /// A call the provider runs itself started or finished (a UI shows "searching…"). Such a
    /// call is never in `tool_calls`; it ends in [`crate::ChatResponse::hosted_calls`].
    HostedCall {
        /// Position of the call in [`crate::ChatResponse::hosted_calls`].
        index: usize,
        /// What runs, as the wire names it (`web_search`, `code_execution`, …).
        name: String,
        /// `running` when the call starts, `completed` when its result arrived (or the wire's
        /// own status word: `searching`, `in_progress`, `failed`, …).
        status: String,
    },
    /// A call the provider runs itself ended (completed, failed or cut off): the call as it
    /// stands then, with its result and its wire's blocks, right after the
    /// [`StreamEvent::HostedCall`] that says so. A wire may say so more than once (a Responses
    /// item's status event, then the item); the last one holds the most. A writer of the
    /// call's wire writes it from this.
    HostedCallComplete {
        /// Position of the call in [`crate::ChatResponse::hosted_calls`].
        index: usize,
        /// The call as it stands.
        call: HostedCall,
    },
    /// Token counts so far (the last one wins).
    Usage {
        /// The counts.
        usage: Usage,
    },
    /// The turn ended.
    Finish {
        /// The canonical reason (already settled: `tool_calls` when complete calls exist).
        reason: FinishReason,
    },
}
