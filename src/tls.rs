//! TLS set-up shared by every HTTP client toolwire builds.

/// A reqwest client builder whose TLS works in every feature set: start from this one (not
/// `reqwest::Client::builder()`) when you build your own client for
/// [`ClientBuilder::http_client`](crate::client::ClientBuilder::http_client).
///
/// With `rustls`, ring is first installed as the process's default rustls crypto provider unless
/// one is installed already (then that one is kept): reqwest is built without a provider of its
/// own, so that the default build does not compile aws-lc, and needs a default one.
pub fn http_client_builder() -> reqwest::ClientBuilder {
    #[cfg(feature = "rustls")]
    {
        // An error only means another provider was installed first; that one is used.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    reqwest::Client::builder()
}
