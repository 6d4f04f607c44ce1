//! What every area of the server shares: the roles, the registrations (ledger and store), the
//! live state, and how a request names a role.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio::sync::{Mutex, watch};

use super::body::{Problem, Reject};
use super::config::RoleConfig;
use super::ledger::{Ledger, Op, Outcome};
use super::live::Live;
use super::store::Store;
use crate::client::Client;
use crate::error::Error;
use crate::tools::ToolRegistry;

/// One role as the server runs it.
pub(crate) struct Role {
    pub config: RoleConfig,
    /// The live client; `None` runs the role on the offline mock provider.
    pub client: Option<Client>,
    /// The tools registered for this role (including those registered for every role).
    pub registry: ToolRegistry,
}

/// What every request shares.
pub(crate) struct App {
    pub roles: Vec<Role>,
    /// The registrations; held while a change is written to the store, so changes apply one
    /// at a time, in order, and none is lost.
    pub ledger: Mutex<Ledger>,
    pub store: Option<Arc<Store>>,
    pub live: Live,
    pub(super) shutdown: watch::Receiver<bool>,
}

impl App {
    pub(super) fn role(&self, name: &str) -> Option<&Role> {
        self.roles.iter().find(|r| r.config.name == name)
    }

    pub(super) fn has_role(&self, name: &str) -> bool {
        self.role(name).is_some()
    }

    /// Resolves when the server begins shutting down (ends long-lived streams).
    pub(super) fn shutdown_signal(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.shutdown.clone();
        async move {
            let _ = rx.wait_for(|stop| *stop).await;
        }
    }

    /// Applies a change: to the store (one transaction), and only when that is committed, to
    /// the ledger and the roles' registries, in place. A store that cannot be written leaves
    /// everything as it was (500).
    pub(super) async fn change(&self, op: Op) -> std::result::Result<Outcome, Reject> {
        let mut ledger = self.ledger.lock().await;
        if let Some(store) = &self.store {
            let targets: Vec<String> = self
                .roles
                .iter()
                .map(|r| r.config.name.clone())
                .filter(|name| op.role().is_none_or(|x| x == name))
                .collect();
            let store = Arc::clone(store);
            let write = op.clone();
            let written = tokio::task::spawn_blocking(move || store.apply(&write, &targets))
                .await
                .unwrap_or_else(|e| Err(Error::input("state", e.to_string())));
            if let Err(e) = written {
                return Err(Reject::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    e.to_string(),
                ));
            }
        }
        let mut outcome = ledger.apply(&op);
        outcome.failed = self.apply_to_registries(&op);
        drop(ledger);
        // Only a removal can leave statistics of a tool that is gone (and the check looks up
        // every tool with statistics, so a registration does not pay for it).
        if outcome.removed > 0 {
            self.live.retain_stats(|role, name| {
                self.role(role).is_some_and(|r| r.registry.contains(name))
            });
        }
        self.live.tools_changed();
        Ok(outcome)
    }

    /// Mirrors a change in the roles' registries; returns the roles that refused it.
    fn apply_to_registries(&self, op: &Op) -> Vec<serde_json::Value> {
        let mut failed = Vec::new();
        let targets = |role: &Option<String>| -> Vec<&Role> {
            self.roles
                .iter()
                .filter(|r| role.as_ref().is_none_or(|x| *x == r.config.name))
                .collect()
        };
        match op {
            Op::Register(entry) => {
                for r in targets(&entry.scope) {
                    if let Err(e) = entry.tool().and_then(|t| r.registry.register(t)) {
                        failed.push(json!({"role": r.config.name, "error": e.to_string()}));
                    }
                }
            }
            Op::Unregister { name, role } => {
                for r in targets(role) {
                    r.registry.unregister(name);
                }
            }
            Op::Clear { source, role } => {
                for r in targets(role) {
                    r.registry.clear_source(source);
                }
            }
        }
        failed
    }
}

/// 404 for a role the server does not have, worded as N.E.K.O. words it.
pub(crate) fn unknown_role(role: &str) -> Response {
    Reject::new(StatusCode::NOT_FOUND, format!("unknown role: {role}")).into_response()
}

/// The only query parameter `GET /api/tools` takes is `role`.
pub(crate) fn role_query(query: Option<&str>) -> Result<Option<String>, Reject> {
    let mut role = None;
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = percent_decode(key);
        if key != "role" {
            return Err(Reject::invalid(vec![Problem {
                field: key.clone(),
                message: "unknown query parameter (only role is accepted)".to_owned(),
                kind: "extra_forbidden",
            }]));
        }
        let value = percent_decode(value);
        role = if value.is_empty() { None } else { Some(value) };
    }
    Ok(role)
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a byte; bad escapes
/// stay as they are.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries() {
        assert_eq!(role_query(None).unwrap(), None);
        assert_eq!(
            role_query(Some("role=Lan+lan")).unwrap().as_deref(),
            Some("Lan lan")
        );
        assert_eq!(
            role_query(Some("role=%E5%B0%8F")).unwrap().as_deref(),
            Some("小")
        );
        assert_eq!(role_query(Some("role=")).unwrap(), None);
        assert_eq!(
            role_query(Some("role=%zz%")).unwrap().as_deref(),
            Some("%zz%")
        );
        assert!(role_query(Some("rol=x")).is_err());
    }
}
