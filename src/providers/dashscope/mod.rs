//! DashScope's native protocol (`dashscope`): Alibaba Cloud Model Studio's own generation API,
//! not the OpenAI-compatible mode (that is `qwen`).
//!
//! Its own wire, so its own code: the request nests messages under `input` and every option
//! under `parameters`, streams are SSE with `id:`/`event:` lines and no `[DONE]`, and errors
//! inside a stream arrive as an `event:error` event with HTTP 200. Tool-call fragments follow
//! the Chat Completions shape, so the shared stream assembler assembles them. The
//! quirk sheet follows.
#![doc = include_str!("../../../providers/dashscope.md")]

mod decode;
mod encode;
#[cfg(feature = "respond")]
mod respond;
mod wire;

use serde_json::Value;

use crate::error::Result;
use crate::provider::{Auth, HttpRequest, Provider, ProviderInfo, ProviderKind, StreamDecoder};
use crate::types::{ChatRequest, ChatResponse, SchemaMode, ToolDefinition};

/// Path of the text generation endpoint below the base URL.
pub const TEXT_PATH: &str = "/api/v1/services/aigc/text-generation/generation";

/// Path of the multimodal generation endpoint below the base URL.
pub const MULTIMODAL_PATH: &str = "/api/v1/services/aigc/multimodal-generation/generation";

/// Which generation endpoint requests go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Endpoint {
    /// Chosen per request by [`is_multimodal_model`].
    #[default]
    Auto,
    /// Always `text-generation` (message content as strings).
    Text,
    /// Always `multimodal-generation` (message content as `[{"text": …}]` arrays).
    Multimodal,
}

impl Endpoint {
    /// Whether a request for `model` goes to the multimodal endpoint.
    pub fn is_multimodal(self, model: &str) -> bool {
        match self {
            Self::Auto => is_multimodal_model(model),
            Self::Text => false,
            Self::Multimodal => true,
        }
    }

    /// The path a request for `model` is sent to.
    pub fn path(self, model: &str) -> &'static str {
        if self.is_multimodal(model) {
            MULTIMODAL_PATH
        } else {
            TEXT_PATH
        }
    }
}

/// Whether `model` is served only by the multimodal endpoint: the vision and audio families
/// (`qwen-vl-*`, `qwen2.5-vl-*`, `qwen3-vl-*`, `qvq-*`, `qwen-audio-*`, `qwen2-audio-*`).
///
/// DashScope's API reference sends "Qwen-VL models" to `multimodal-generation` and plain text
/// models to `text-generation`; the natively multimodal `qwen3.x-plus` models are also served
/// by `text-generation` for text input (the reference calls `qwen3.6-plus` through
/// `Generation`), and toolwire's messages are text, so they stay there. Use
/// [`DashScope::with_endpoint`] to force either endpoint.
pub fn is_multimodal_model(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    m.contains("-vl") || m.starts_with("qvq") || m.contains("-audio")
}

/// What this API's whole response body looks like, for the foreign-body error
/// (`providers::BUILTINS` collects it).
pub(crate) const BODY: crate::providers::shared::BodyShape = crate::providers::shared::BodyShape {
    api: "a DashScope body: `output.choices`",
    fields: "`output.choices`, `output.text`, `output.finish_reason`, an error `code`",
    rank: 5,
    looks: |o| {
        o.get("output")
            .is_some_and(|x| x.get("choices").is_some() || x.get("text").is_some())
    },
};
/// Static facts about DashScope's native API.
const INFO: ProviderInfo = ProviderInfo {
    kind: ProviderKind::DashScope,
    base_url: "https://dashscope.aliyuncs.com",
    key_vars: &["DASHSCOPE_API_KEY"],
    auth: Auth::Bearer,
    capabilities: "tools, parallel calls, streamed arguments, reasoning, text and multimodal endpoints",
};

/// The DashScope native provider.
#[derive(Debug, Clone, Copy, Default)]
pub struct DashScope {
    endpoint: Endpoint,
}

impl DashScope {
    /// The provider with the endpoint chosen per model ([`Endpoint::Auto`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// The provider sending every request to `endpoint`.
    pub fn with_endpoint(endpoint: Endpoint) -> Self {
        Self { endpoint }
    }

    /// The endpoint setting in use.
    pub fn endpoint(&self) -> Endpoint {
        self.endpoint
    }
}

impl Provider for DashScope {
    fn info(&self) -> &ProviderInfo {
        &INFO
    }

    fn encode(&self, req: &ChatRequest, stream: bool) -> Result<HttpRequest> {
        encode::encode(req, stream, self.endpoint)
    }

    fn decode(&self, body: &[u8]) -> Result<ChatResponse> {
        decode::decode_body(body)
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(decode::Decoder::new(None))
    }

    /// The request says which form the stream takes (`parameters.incremental_output`), so no
    /// guessing is needed: an incremental stream whose pieces repeat (`"ha"`, `"ha"`) is never
    /// mistaken for a cumulative one.
    fn decoder_for(&self, request: &HttpRequest) -> Box<dyn StreamDecoder> {
        let incremental = request
            .body
            .pointer("/parameters/incremental_output")
            .and_then(serde_json::Value::as_bool);
        Box::new(decode::Decoder::new(incremental))
    }

    /// DashScope takes JSON Schema as is and has no strict mode: the schema goes unchanged and
    /// `strict` is not sent.
    fn encode_parameters(&self, tool: &ToolDefinition, _mode: Option<SchemaMode>) -> Result<Value> {
        Ok(encode::parameters(tool))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Message, ToolChoice};
    use serde_json::json;

    fn request(model: &str) -> ChatRequest {
        let tool: ToolDefinition = serde_json::from_value(json!({
            "name": "weather.get",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}
        }))
        .unwrap();
        ChatRequest::new(model, vec![Message::user("杭州天气？")]).with_tools([tool])
    }

    #[test]
    fn endpoint_follows_the_model_family() {
        for model in [
            "qwen-vl-max",
            "qwen2.5-vl-72b-instruct",
            "Qwen3-VL-Plus",
            "qvq-max",
            "qwen-audio-turbo",
        ] {
            assert!(is_multimodal_model(model), "{model}");
        }
        for model in [
            "qwen-plus",
            "qwen3-max",
            "qwen3.6-plus",
            "qwen-turbo",
            "deepseek-v3.2",
        ] {
            assert!(!is_multimodal_model(model), "{model}");
        }
        let p = DashScope::new();
        assert_eq!(
            p.encode(&request("qwen-plus"), false).unwrap().path,
            TEXT_PATH
        );
        let http = p.encode(&request("qwen3-vl-plus"), false).unwrap();
        assert_eq!(http.path, MULTIMODAL_PATH);
        assert_eq!(
            http.body["input"]["messages"][0]["content"],
            json!([{"text": "杭州天气？"}])
        );
        let forced = DashScope::with_endpoint(Endpoint::Multimodal);
        assert_eq!(
            forced.encode(&request("qwen3.6-plus"), false).unwrap().path,
            MULTIMODAL_PATH
        );
        let forced = DashScope::with_endpoint(Endpoint::Text);
        assert_eq!(
            forced.encode(&request("qwen-vl-max"), false).unwrap().path,
            TEXT_PATH
        );
    }

    #[test]
    fn streaming_sets_the_sse_header_and_incremental_output() {
        let p = DashScope::new();
        let http = p.encode(&request("qwen-plus"), true).unwrap();
        assert_eq!(
            http.headers,
            vec![("X-DashScope-SSE".to_owned(), "enable".to_owned())]
        );
        assert_eq!(http.body["parameters"]["incremental_output"], json!(true));
        let http = p.encode(&request("qwen-plus"), false).unwrap();
        assert!(http.headers.is_empty());
        assert!(http.body["parameters"].get("incremental_output").is_none());
    }

    #[test]
    fn names_are_mapped_and_restored() {
        let p = DashScope::new();
        let http = p.encode(&request("qwen-plus"), false).unwrap();
        let wire = http.body["parameters"]["tools"][0]["function"]["name"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_ne!(wire, "weather.get");
        assert_eq!(http.names.canonical(&wire), "weather.get");
    }

    #[test]
    fn extra_body_goes_to_parameters() {
        let mut req = request("qwen-plus");
        req.extra_body.insert("enable_search".into(), json!(false));
        req.extra_body.insert("seed".into(), json!(7));
        let http = DashScope::new().encode(&req, false).unwrap();
        assert_eq!(http.body["parameters"]["enable_search"], json!(false));
        assert_eq!(http.body["parameters"]["seed"], json!(7));
        assert!(http.body.get("seed").is_none());
    }

    #[test]
    fn forced_choice_in_thinking_mode_is_refused() {
        let mut req = request("qwen-plus").with_tool_choice(ToolChoice::Required);
        req.thinking = Some(true);
        let err = DashScope::new().encode(&req, true).unwrap_err();
        assert!(matches!(err, crate::Error::Unsupported { .. }), "{err}");
        req.tool_choice = Some(ToolChoice::Auto);
        assert!(DashScope::new().encode(&req, true).is_ok());
    }
}
