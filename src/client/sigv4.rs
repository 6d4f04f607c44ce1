//! AWS Signature Version 4 for Bedrock (feature `sigv4`), signed by AWS's own `aws-sigv4`
//! crate: no hand-rolled crypto.
//!
//! ```no_run
//! # fn demo() -> toolwire::Result<()> {
//! use toolwire::client::sigv4::SigV4;
//! use toolwire::{Client, ProviderKind};
//!
//! // AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, optional AWS_SESSION_TOKEN, AWS_REGION.
//! let client = Client::builder(ProviderKind::Bedrock)
//!     .signer(SigV4::from_env("bedrock")?)
//!     .build()?;
//! # let _ = client; Ok(()) }
//! ```

use std::fmt;
use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;

use super::{RequestSigner, SigningRequest};
use crate::error::{Error, Result};

/// Signs requests with AWS credentials for one region and service (`bedrock`).
#[derive(Clone)]
pub struct SigV4 {
    credentials: Credentials,
    region: String,
    service: String,
}

impl fmt::Debug for SigV4 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigV4")
            .field("access_key_id", &self.credentials.access_key_id())
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.credentials.session_token().map(|_| "<redacted>"),
            )
            .field("region", &self.region)
            .field("service", &self.service)
            .finish()
    }
}

impl SigV4 {
    /// A signer for `service` in `region` with these credentials (a session token for
    /// temporary credentials).
    pub fn new(
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
        session_token: Option<String>,
        region: impl Into<String>,
        service: impl Into<String>,
    ) -> Self {
        Self {
            credentials: Credentials::new(
                access_key_id,
                secret_access_key,
                session_token,
                None,
                "toolwire",
            ),
            region: region.into(),
            service: service.into(),
        }
    }

    /// A signer from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`
    /// (optional) and `AWS_REGION` (`us-east-1` when unset), the variables the AWS SDKs read.
    /// [`Error::Input`] names the missing variable.
    pub fn from_env(service: &str) -> Result<Self> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let need = |name: &str| {
            var(name).ok_or_else(|| {
                Error::input(
                    name,
                    format!("{name} is not set: SigV4 needs AWS credentials"),
                )
            })
        };
        Ok(Self::new(
            need("AWS_ACCESS_KEY_ID")?,
            need("AWS_SECRET_ACCESS_KEY")?,
            var("AWS_SESSION_TOKEN"),
            var("AWS_REGION").unwrap_or_else(|| "us-east-1".to_owned()),
            service,
        ))
    }

    /// The signing headers at `time` (tests pin it).
    fn sign_at(
        &self,
        request: &SigningRequest<'_>,
        time: SystemTime,
    ) -> Result<Vec<(String, String)>> {
        let failed = |e: &dyn fmt::Display| Error::input("signer", format!("SigV4: {e}"));
        let identity = self.credentials.clone().into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(&self.service)
            .time(time)
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| failed(&e))?
            .into();
        let signable = SignableRequest::new(
            request.method,
            request.url,
            request
                .headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str())),
            SignableBody::Bytes(request.body),
        )
        .map_err(|e| failed(&e))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| failed(&e))?
            .into_parts();
        Ok(instructions
            .headers()
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect())
    }
}

impl RequestSigner for SigV4 {
    fn sign(&self, request: &SigningRequest<'_>) -> Result<Vec<(String, String)>> {
        self.sign_at(request, SystemTime::now())
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn headers_carry_the_scope_and_the_session_token() {
        let signer = SigV4::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            Some("session-token".into()),
            "eu-west-3",
            "bedrock",
        );
        let headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        let request = SigningRequest {
            method: "POST",
            url: "https://bedrock-runtime.eu-west-3.amazonaws.com/model/m/converse",
            headers: &headers,
            body: b"{}",
        };
        // 2015-08-30T12:36:00Z, the date of AWS's SigV4 test suite.
        let time = UNIX_EPOCH + Duration::from_secs(1_440_938_160);
        let got = signer.sign_at(&request, time).unwrap();
        let get = |n: &str| got.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("x-amz-date"), Some("20150830T123600Z"));
        assert_eq!(get("x-amz-security-token"), Some("session-token"));
        let auth = get("authorization").unwrap();
        assert!(
            auth.starts_with(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/eu-west-3/bedrock/aws4_request, \
                 SignedHeaders="
            ),
            "{auth}"
        );
        assert!(
            auth.contains("content-type") && auth.contains("host"),
            "{auth}"
        );
        // The same request signs the same; another body signs differently.
        assert_eq!(signer.sign_at(&request, time).unwrap(), got);
        let other = SigningRequest {
            body: b"{\"a\":1}",
            ..request
        };
        assert_ne!(signer.sign_at(&other, time).unwrap(), got);
        assert!(!format!("{signer:?}").contains("wJalr"));
    }
}
