//! The realtime side of the CLI: provider names that may be realtime dialects, `toolwire
//! replay` of a recorded session, and `toolwire demo` over a realtime dialect.

use std::path::Path;

use toolwire::realtime::RealtimeKind;
use toolwire::{ProviderKind, realtime};

use super::CliError;

/// A `--provider` value: an HTTP provider or a realtime dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProviderArg {
    /// An HTTP provider.
    Http(ProviderKind),
    /// A realtime (WebSocket) dialect.
    Realtime(RealtimeKind),
}

impl ProviderArg {
    /// The HTTP provider, if it is one.
    pub(crate) fn http(self) -> Option<ProviderKind> {
        match self {
            Self::Http(k) => Some(k),
            Self::Realtime(_) => None,
        }
    }
}

impl std::str::FromStr for ProviderArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if let Ok(k) = s.parse::<ProviderKind>() {
            return Ok(Self::Http(k));
        }
        if let Ok(k) = s.parse::<RealtimeKind>() {
            return Ok(Self::Realtime(k));
        }
        let names: Vec<&str> = ProviderKind::ALL
            .iter()
            .map(|k| k.name())
            .chain(RealtimeKind::ALL.iter().map(|k| k.name()))
            .collect();
        Err(format!(
            "unknown provider {s:?}; expected one of {}",
            names.join(", ")
        ))
    }
}

/// `toolwire replay --provider <realtime name> FILE`: one compact canonical response per line,
/// one line per model response. Error events go to stderr; a session with error events, or one
/// that ended mid-response, exits 1 after printing everything.
pub(crate) fn replay(kind: RealtimeKind, file: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let name = file.display().to_string();
    let lines = realtime::replay::parse_session(bytes).map_err(|e| match e {
        toolwire::Error::Input { path, message } => {
            CliError::Input(format!("{name}:{path}: {message}"))
        }
        other => CliError::Input(format!("{name}: {other}")),
    })?;
    let replay = realtime::replay::replay_lines(kind, &lines);
    for response in &replay.responses {
        outln!("{}", serde_json::to_string(response).unwrap_or_default());
    }
    for e in &replay.errors {
        eprintln!("toolwire: {name}: error event: {e}");
    }
    let s = replay.stats;
    if s.unknown_events + s.stale_events > 0 {
        eprintln!(
            "toolwire: {name}: {} events of unknown type, {} of cancelled or superseded \
             responses (kept, not interpreted)",
            s.unknown_events, s.stale_events
        );
    }
    if !replay.errors.is_empty() {
        return Err(CliError::Provider(format!(
            "{name}: the session has {} error events",
            replay.errors.len()
        )));
    }
    if replay.ended_mid_response {
        return Err(CliError::Provider(format!(
            "{name}: the session ended mid-response (its open calls are truncated)"
        )));
    }
    Ok(())
}

/// `toolwire providers`: the realtime dialects.
pub(crate) fn providers() {
    outln!("\nrealtime (WebSocket):");
    for kind in RealtimeKind::ALL {
        outln!(
            "{:<17} {:<55} {}",
            kind.name(),
            short(kind.url()),
            kind.key_vars().join(" or ")
        );
    }
}

fn short(url: &str) -> String {
    match url.char_indices().nth(54) {
        Some((cut, _)) => format!("{}…", &url[..cut]),
        None => url.to_owned(),
    }
}
