//! Events a stream decoder emits, in wire order.

use serde::{Deserialize, Serialize};

use super::{FinishReason, ToolCall, Usage};

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
