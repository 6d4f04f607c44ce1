//! One client for every provider, picked per request by a `PROVIDER/MODEL` string.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use super::{ChatStream, Client};
use crate::error::Result;
use crate::provider::ProviderKind;
use crate::providers::parse_model;
use crate::types::{ChatRequest, ChatResponse};

/// Sends each request to the provider its model names: `gemini/gemini-2.5-flash`,
/// `anthropic/claude-haiku-4-5`, `openai/gpt-4o-mini` — the strings `toolwire serve`'s gateway
/// takes. Switching provider is another string on the same router.
///
/// A provider's client is made on first use with its default settings and its key from the
/// environment ([`Client::new`]); [`Router::with_client`] supplies one with other settings (a
/// base URL, a key, time limits). Cheap to clone; clones share the clients.
///
/// ```no_run
/// use toolwire::{ChatRequest, Message, client::Router};
///
/// # async fn run() -> toolwire::Result<()> {
/// let router = Router::new();
/// for model in ["openai/gpt-4o-mini", "gemini/gemini-2.5-flash"] {
///     let reply = router.chat(&ChatRequest::new(model, vec![Message::user("Hi")])).await?;
///     println!("{model}: {}", reply.text.unwrap_or_default());
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
pub struct Router {
    clients: Arc<Mutex<HashMap<ProviderKind, Client>>>,
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("Router")
            .field("clients", &clients.values().collect::<Vec<_>>())
            .finish()
    }
}

impl Router {
    /// A router with no client yet: each is made on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses `client` for its provider instead of one with default settings.
    pub fn with_client(self, client: Client) -> Self {
        let kind = client.provider().info().kind;
        self.clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(kind, client);
        self
    }

    /// The client for `model`'s provider and the model name as that provider spells it.
    /// Errors when the string names no built-in provider, or that provider's client cannot be
    /// made (no key in the environment).
    pub fn route<'m>(&self, model: &'m str) -> Result<(Client, &'m str)> {
        let (kind, name) = parse_model(model)?;
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = clients.get(&kind) {
            return Ok((client.clone(), name));
        }
        let client = Client::new(kind)?;
        clients.insert(kind, client.clone());
        Ok((client, name))
    }

    /// [`Client::chat`] on the provider `req.model` names, with the model name alone.
    pub async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse> {
        let (client, req) = self.routed(req)?;
        client.chat(&req).await
    }

    /// [`Client::stream`] on the provider `req.model` names, with the model name alone.
    pub async fn stream(&self, req: &ChatRequest) -> Result<ChatStream> {
        let (client, req) = self.routed(req)?;
        client.stream(&req).await
    }

    fn routed(&self, req: &ChatRequest) -> Result<(Client, ChatRequest)> {
        let (client, name) = self.route(&req.model)?;
        let mut req = req.clone();
        req.model = name.to_owned();
        Ok((client, req))
    }
}
