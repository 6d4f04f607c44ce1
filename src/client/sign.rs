//! The per-request signing hook: what a signer (AWS SigV4 for Bedrock) sees of a request and
//! gives back.

use std::fmt;

use crate::error::Result;

/// A request about to be sent, for a [`RequestSigner`].
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct SigningRequest<'a> {
    /// The HTTP method.
    pub method: &'a str,
    /// The full URL, query included.
    pub url: &'a str,
    /// The headers set so far (content type, accept, the provider's own), lowercase names.
    pub headers: &'a [(String, String)],
    /// The exact body bytes.
    pub body: &'a [u8],
}

/// Signs each request just before it is sent: headers in, headers to add out. Called once per
/// attempt, so a retried request carries a fresh signature. Set with
/// [`ClientBuilder::signer`](super::ClientBuilder::signer).
pub trait RequestSigner: Send + Sync + fmt::Debug {
    /// The headers to add to `request` (`authorization`, `x-amz-date`, …). An error stops
    /// the request before it is sent.
    fn sign(&self, request: &SigningRequest<'_>) -> Result<Vec<(String, String)>>;
}
