//! JSON Schema normalisation and per-provider lowering of tool parameter schemas.

mod strict;

pub use strict::to_strict;
