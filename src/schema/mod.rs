//! JSON Schema normalisation and per-provider lowering of tool parameter schemas.

mod gemini;
mod strict;

pub use gemini::{MAX_DEPTH, MAX_NODES, to_gemini};
pub use strict::to_strict;
