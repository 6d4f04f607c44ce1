//! Python bindings of toolwire: the sans-IO core (encode, decode, replay, stream readers,
//! partial JSON, text-call recovery, schema lowering) and, for asyncio, the client, tools,
//! agent loop and mock provider. The module is `toolwire._toolwire`; the `toolwire` package
//! re-exports it.
//!
//! `unsafe` appears only inside the code PyO3's macros generate; this crate writes none.
#![deny(unsafe_code)]

use pyo3::prelude::*;

mod aio;
mod conv;
mod core;
mod errors;

#[pymodule]
fn _toolwire(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    core::register(m)?;
    aio::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
