//! `toolwire::Error` as Python exceptions: one base class, one subclass per kind, each carrying
//! the fields the Rust variant has.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use toolwire::Error;

use crate::conv;

create_exception!(
    _toolwire,
    ToolwireError,
    PyException,
    "Base class of every toolwire error."
);
create_exception!(
    _toolwire,
    ApiError,
    ToolwireError,
    "The provider answered with an error (status, code, message)."
);
create_exception!(
    _toolwire,
    TransportError,
    ToolwireError,
    "The connection failed or broke."
);
create_exception!(
    _toolwire,
    TimeoutError,
    ToolwireError,
    "A connect, first-byte, idle or total timeout."
);
create_exception!(
    _toolwire,
    DecodeError,
    ToolwireError,
    "A body or event that cannot be decoded."
);
create_exception!(
    _toolwire,
    StreamError,
    ToolwireError,
    "The stream broke (cut, over a limit)."
);
create_exception!(
    _toolwire,
    UnsupportedError,
    ToolwireError,
    "The provider cannot carry something the request asks for."
);
create_exception!(
    _toolwire,
    InputError,
    ToolwireError,
    "Invalid input, with where (path) and what."
);
create_exception!(
    _toolwire,
    MaxTurnsError,
    ToolwireError,
    "The agent stopped after max_turns turns."
);
create_exception!(_toolwire, McpError, ToolwireError, "An MCP server failed.");

/// Registers the classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("ToolwireError", py.get_type::<ToolwireError>())?;
    m.add("ApiError", py.get_type::<ApiError>())?;
    m.add("TransportError", py.get_type::<TransportError>())?;
    m.add("TimeoutError", py.get_type::<TimeoutError>())?;
    m.add("DecodeError", py.get_type::<DecodeError>())?;
    m.add("StreamError", py.get_type::<StreamError>())?;
    m.add("UnsupportedError", py.get_type::<UnsupportedError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("MaxTurnsError", py.get_type::<MaxTurnsError>())?;
    m.add("McpError", py.get_type::<McpError>())?;
    Ok(())
}

/// An input error raised from the binding itself (bad provider name, bad argument).
pub fn input(path: &str, message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| {
        let err = InputError::new_err(format!("invalid input at {path}: {message}"));
        let v = err.value(py);
        let _ = v.setattr("kind", "input");
        let _ = v.setattr("path", path);
        let _ = v.setattr("message", &message);
        let _ = v.setattr("provider", py.None());
        let _ = v.setattr("status", py.None());
        let _ = v.setattr("code", py.None());
        let _ = v.setattr("partial", py.None());
        let _ = v.setattr("retryable", false);
        err
    })
}

/// The Python exception for `e`.
pub fn to_py(e: &Error) -> PyErr {
    Python::attach(|py| match build(py, e) {
        Ok(err) => err,
        Err(err) => err,
    })
}

fn build(py: Python<'_>, e: &Error) -> PyResult<PyErr> {
    let text = e.to_string();
    let err = match e {
        Error::Api(_) => ApiError::new_err(text),
        Error::Transport { .. } => TransportError::new_err(text),
        Error::Timeout { .. } => TimeoutError::new_err(text),
        Error::Decode { .. } => DecodeError::new_err(text),
        Error::Stream { .. } => StreamError::new_err(text),
        Error::Unsupported { .. } => UnsupportedError::new_err(text),
        Error::Input { .. } => InputError::new_err(text),
        Error::MaxTurns(_) => MaxTurnsError::new_err(text),
        Error::Mcp { .. } => McpError::new_err(text),
        _ => ToolwireError::new_err(text),
    };
    let v = err.value(py);
    let kind = match e {
        Error::Api(_) => "api",
        Error::Transport { .. } => "transport",
        Error::Timeout { .. } => "timeout",
        Error::Decode { .. } => "decode",
        Error::Stream { .. } => "stream",
        Error::Unsupported { .. } => "unsupported",
        Error::Input { .. } => "input",
        Error::MaxTurns(_) => "max_turns",
        Error::Mcp { .. } => "mcp",
        _ => "other",
    };
    v.setattr("kind", kind)?;
    v.setattr("provider", e.provider().map(|p| p.name()))?;
    v.setattr("status", e.status())?;
    v.setattr("retryable", e.is_retryable())?;
    let partial = match e.partial() {
        Some(p) => conv::ser_to_py(py, p)?.unbind(),
        None => py.None(),
    };
    v.setattr("partial", partial)?;
    let none = py.None();
    v.setattr("code", &none)?;
    v.setattr("message", e.to_string())?;
    match e {
        Error::Api(api) => {
            v.setattr("code", api.code.as_deref())?;
            v.setattr("message", &api.message)?;
            v.setattr("body", &api.body)?;
            v.setattr("retry_after", api.retry_after.map(|d| d.as_secs_f64()))?;
        }
        Error::Transport {
            message, connect, ..
        } => {
            v.setattr("message", message)?;
            v.setattr("connect", *connect)?;
        }
        Error::Timeout { phase, limit, .. } => {
            v.setattr("phase", phase.to_string())?;
            v.setattr("limit", limit.as_secs_f64())?;
        }
        Error::Decode { what, message, .. } => {
            v.setattr("what", what)?;
            v.setattr("message", message)?;
        }
        Error::Stream { reason, .. } => {
            v.setattr("reason", reason)?;
            v.setattr("message", reason)?;
        }
        Error::Unsupported { feature, .. } => {
            v.setattr("feature", feature)?;
            v.setattr("message", feature)?;
        }
        Error::Input { path, message } => {
            v.setattr("path", path)?;
            v.setattr("message", message)?;
        }
        Error::MaxTurns(n) => v.setattr("turns", *n)?,
        Error::Mcp { server, message } => {
            v.setattr("server", server)?;
            v.setattr("message", message)?;
        }
        _ => {}
    }
    Ok(err)
}
