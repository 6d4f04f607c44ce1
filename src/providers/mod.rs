//! The built-in providers: pure translation, no IO.
//!
//! One module per provider: `openai` (Chat Completions, and every OpenAI-compatible wire as an
//! [`openai::Dialect`]), `glm`, `qwen`, `stepfun` and `mistral` (dialects of it), `gemini`,
//! `dashscope`, `openai_responses`, `anthropic`, `ollama`, `cohere`, `bedrock` and
//! `gemini_interactions`; `shared` and `lenient` hold what
//! their encoders and decoders share. Each writes its own answers for the mock provider
//! (`respond.rs`, feature `respond`). [`BUILTINS`] lists them: every list of providers is read
//! from it.
//!
//! Adding a provider: its folder (or, for an OpenAI-compatible one, a file with a `Dialect`
//! and a `ResponseShape`), one [`BUILTINS`] line, its fixture cases (or `SKIP` lines) and a
//! quirk sheet `providers/<name>.md`; the checklist is in `docs/architecture.md`.

pub mod anthropic;
pub mod bedrock;
pub mod cohere;
pub mod dashscope;
pub mod deepseek;
pub mod gemini;
pub mod gemini_interactions;
pub mod glm;
pub(crate) mod hosted;
#[cfg(feature = "respond")]
pub(crate) mod hosted_map;
pub(crate) mod hosted_tools;
pub mod kimi;
pub(crate) mod lenient;
pub mod minimax;
pub mod mistral;
pub mod ollama;
pub mod openai;
pub mod openai_responses;
pub mod openrouter;
pub mod qwen;
#[cfg(all(test, feature = "respond"))]
mod round_trip;
#[cfg(feature = "respond")]
pub mod seal;
pub mod settings;
pub(crate) mod shared;
#[cfg(feature = "respond")]
pub(crate) mod split;
pub mod stepfun;

use crate::error::{Error, Result};
#[cfg(feature = "respond")]
use crate::provider::Respond;
use crate::provider::{Provider, ProviderKind};

/// One built-in provider: the one place its name, its values and its defaults are listed.
/// `provider_for`, `mock::responder_for`, [`ProviderKind::ALL`], parsing a provider name, the
/// CLI (`toolwire providers`, `--provider`, chat's default model) and the fixture tests all read
/// [`BUILTINS`].
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Builtin {
    /// Which provider; its name is [`ProviderKind::name`].
    pub kind: ProviderKind,
    /// The provider with its default settings.
    pub provider: fn() -> Box<dyn Provider>,
    /// The same wire as the mock provider's writer.
    #[cfg(feature = "respond")]
    pub responder: fn() -> Box<dyn Respond>,
    /// A model to use when none is given: small, cheap, tool-capable (`toolwire chat`).
    pub default_model: &'static str,
    /// What the provider's whole response body looks like (its `BODY`), for naming another
    /// API's body decoded under the wrong provider ([`likely_api`]); `None` when it declares
    /// none.
    pub(crate) body: Option<&'static shared::BodyShape>,
}

impl Builtin {
    /// The provider's one spelling (module, `fixtures/`, `providers/*.md`, CLI).
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }
}

/// One [`Builtin`] line: kind, default model, provider value, writer value, and the body
/// shape it declares (`body = <module>::BODY`, left out when it declares none).
macro_rules! builtin {
    ($kind:expr, $model:literal, $provider:expr, $responder:expr $(, body = $body:expr)? $(,)?) => {
        Builtin {
            kind: $kind,
            provider: || Box::new($provider),
            #[cfg(feature = "respond")]
            responder: || Box::new($responder),
            default_model: $model,
            body: builtin!(@body $($body)?),
        }
    };
    (@body $body:expr) => {
        Some(&$body)
    };
    (@body) => {
        None
    };
}

/// The built-in providers, in display order. Adding one is one line here (plus its folder,
/// its fixtures and its quirk sheet: `docs/architecture.md`, "Adding a provider").
pub const BUILTINS: &[Builtin] = &[
    builtin!(
        ProviderKind::OpenAi,
        "gpt-4o-mini",
        openai::OpenAi::new(),
        openai::OpenAiResponder::default(),
        body = openai::BODY
    ),
    builtin!(
        ProviderKind::Gemini,
        "gemini-2.5-flash",
        gemini::Gemini::new(),
        gemini::Gemini::new(),
        body = gemini::BODY
    ),
    builtin!(
        ProviderKind::Glm,
        "glm-4.5-flash",
        glm::provider(),
        glm::responder(),
        body = openai::BODY
    ),
    builtin!(
        ProviderKind::Qwen,
        "qwen-plus",
        qwen::provider(),
        qwen::responder(),
        body = openai::BODY
    ),
    builtin!(
        ProviderKind::DashScope,
        "qwen-plus",
        dashscope::DashScope::new(),
        dashscope::DashScope::new(),
        body = dashscope::BODY
    ),
    builtin!(
        ProviderKind::StepFun,
        "step-3.5-flash",
        stepfun::provider(),
        stepfun::responder(),
        body = openai::BODY
    ),
    builtin!(
        ProviderKind::OpenAiResponses,
        "gpt-5-mini",
        openai_responses::OpenAiResponses::new(),
        openai_responses::OpenAiResponses::new(),
        body = openai_responses::BODY
    ),
    builtin!(
        ProviderKind::Anthropic,
        "claude-haiku-4-5",
        anthropic::Anthropic::new(),
        anthropic::Anthropic::new(),
        body = anthropic::BODY
    ),
    builtin!(
        ProviderKind::Ollama,
        "qwen3:4b",
        ollama::Ollama::new(),
        ollama::Ollama::new(),
        body = ollama::BODY
    ),
    builtin!(
        ProviderKind::Mistral,
        "mistral-small-latest",
        mistral::provider(),
        mistral::responder(),
        body = openai::BODY
    ),
    builtin!(
        ProviderKind::Cohere,
        "command-a-03-2025",
        cohere::Cohere::new(),
        cohere::Cohere::new(),
        body = cohere::BODY
    ),
    builtin!(
        ProviderKind::Bedrock,
        "us.anthropic.claude-haiku-4-5-20251001-v1:0",
        bedrock::Bedrock::new(),
        bedrock::Bedrock::new(),
        body = bedrock::BODY
    ),
    builtin!(
        ProviderKind::GeminiInteractions,
        "gemini-3-flash-preview",
        gemini_interactions::GeminiInteractions::new(),
        gemini_interactions::GeminiInteractions::new()
    ),
];

/// The built-in provider `kind` names; `None` for a [`ProviderKind::Custom`] one.
pub fn builtin(kind: ProviderKind) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.kind == kind)
}

/// The API whose body `v` looks like, by the shapes the built-ins declare ([`Builtin`]'s
/// body, tried in their rank order), and the providers that speak it.
pub(crate) fn likely_api(v: &serde_json::Value) -> Option<(&'static str, Vec<ProviderKind>)> {
    let o = v.as_object()?;
    let mut shapes: Vec<&shared::BodyShape> = BUILTINS.iter().filter_map(|b| b.body).collect();
    shapes.sort_by_key(|s| s.rank);
    let found = shapes.into_iter().find(|s| (s.looks)(o))?;
    let speakers = (BUILTINS.iter())
        .filter(|b| b.body.is_some_and(|s| s.api == found.api))
        .map(|b| b.kind)
        .collect();
    Some((found.api, speakers))
}

/// A decode error of `kind`'s whole `body`, naming the API the body looks like when the table
/// says it is another API's ([`likely_api`]; [`shared::name_foreign`]). The turn reader's one
/// call: decoders cannot see the table.
pub(crate) fn name_foreign(kind: ProviderKind, body: &[u8], error: Error) -> Error {
    if !matches!(&error, Error::Decode { what, .. } if what.starts_with("response body")) {
        return error;
    }
    let guess = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| likely_api(&v));
    match guess {
        Some((api, speakers)) if !speakers.contains(&kind) => {
            let shape = builtin(kind).and_then(|b| b.body).map(|b| b.fields);
            shared::name_foreign(error, api, shape)
        }
        _ => error,
    }
}

/// The kinds of [`BUILTINS`], in order, as a constant array.
const fn builtin_kinds<const N: usize>() -> [ProviderKind; N] {
    let mut out = [ProviderKind::OpenAi; N];
    let mut i = 0;
    while i < N {
        out[i] = BUILTINS[i].kind;
        i += 1;
    }
    out
}

impl ProviderKind {
    /// Every built-in provider, in display order (read from [`BUILTINS`]).
    pub const ALL: [ProviderKind; BUILTINS.len()] = builtin_kinds();
}

/// Parsing a provider name reads [`BUILTINS`]: a custom provider has no name to parse.
impl std::str::FromStr for ProviderKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        BUILTINS
            .iter()
            .find(|b| b.name() == s)
            .map(|b| b.kind)
            .ok_or_else(|| {
                let names: Vec<_> = BUILTINS.iter().map(Builtin::name).collect();
                Error::input(
                    "provider",
                    format!(
                        "unknown provider {s:?}; expected one of {}",
                        names.join(", ")
                    ),
                )
            })
    }
}

/// Splits a `PROVIDER/MODEL` string (`gemini/gemini-2.5-flash`, `openai/gpt-4o-mini`) at its
/// first `/`: the built-in provider and the model name as that provider spells it (which may
/// hold more slashes: `openai/meta-llama/Llama-3.3-70B` on a compatible server). The same
/// strings pick the provider in `client::Router` and in `toolwire serve`'s gateway.
pub fn parse_model(model: &str) -> Result<(ProviderKind, &str)> {
    let Some((provider, name)) = model.split_once('/') else {
        return Err(Error::input(
            "model",
            format!(
                "{model:?} names no provider; write PROVIDER/MODEL, as in gemini/gemini-2.5-flash"
            ),
        ));
    };
    let kind = provider.parse()?;
    if name.is_empty() {
        return Err(Error::input(
            "model",
            format!("{model:?} names no model after {provider:?}/"),
        ));
    }
    Ok((kind, name))
}

/// A provider name in JSON (fixture goldens, error JSON, role files): a built-in's name.
impl<'de> serde::Deserialize<'de> for ProviderKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// The provider for `kind` with its default settings. A [`ProviderKind::Custom`] kind has no
/// default value: build the provider and hand it to `Client::builder_with`.
pub fn provider_for(kind: ProviderKind) -> Result<Box<dyn Provider>> {
    builtin(kind)
        .map(|b| (b.provider)())
        .ok_or_else(|| not_builtin(kind))
}

/// The mock provider's writer for `kind`.
#[cfg(feature = "respond")]
pub fn responder_for(kind: ProviderKind) -> Result<Box<dyn Respond>> {
    builtin(kind)
        .map(|b| (b.responder)())
        .ok_or_else(|| not_builtin(kind))
}

fn not_builtin(kind: ProviderKind) -> Error {
    Error::Unsupported {
        provider: kind,
        feature: format!(
            "{kind} is not a built-in provider: build its value and pass it (Client::builder_with, \
             MockServer::start_with)"
        ),
    }
}

/// The provider for `kind` answering at `base_url` (`None`: the provider's own endpoint).
///
/// A base URL other than OpenAI's own, for `openai`, means another OpenAI-compatible server:
/// on the host of a named dialect's documented base URL ([`COMPATIBLE_DIALECTS`]: DeepSeek,
/// Kimi, OpenRouter, MiniMax) that dialect, else (vLLM, Ollama, a gateway)
/// [`openai::OpenAi::compatible`]; every other provider speaks its own wire wherever it is
/// served. The client, its recorder and
/// [`crate::conformance`] all choose with this, so a recording is checked with the dialect that
/// produced it.
pub fn provider_for_base_url(
    kind: ProviderKind,
    base_url: Option<&str>,
) -> Result<Box<dyn Provider>> {
    let default = provider_for(kind)?;
    let elsewhere = base_url.is_some_and(|url| !is_default_base_url(default.as_ref(), url));
    if kind == ProviderKind::OpenAi
        && let Some(url) = base_url.filter(|_| elsewhere)
    {
        let named = COMPATIBLE_DIALECTS
            .iter()
            .map(|dialect| dialect())
            .find(|p| host(p.info().base_url).eq_ignore_ascii_case(host(url)));
        return Ok(Box::new(named.unwrap_or_else(openai::OpenAi::compatible)));
    }
    Ok(default)
}

/// The Chat Completions servers with a dialect of their own, picked by the host of their
/// documented base URL (see [`provider_for_base_url`]).
pub const COMPATIBLE_DIALECTS: &[fn() -> openai::OpenAi] = &[
    deepseek::provider,
    kimi::provider,
    openrouter::provider,
    minimax::provider,
];

/// The host (and port) of a URL: what sits between `scheme://` and the path.
fn host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split(['/', '?', '#']).next().unwrap_or("")
}

/// Whether `url` is `provider`'s own endpoint (a trailing `/` aside).
pub(crate) fn is_default_base_url(provider: &dyn Provider, url: &str) -> bool {
    url.trim_end_matches('/') == provider.info().base_url.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The foreign-body hint reads the shapes the built-ins declare: shapes of different APIs
    /// are tried in a strict order (no two share a rank), every provider that declares a shape
    /// is a speaker of its own API, and an API is named by the first shape that fits.
    /// A body's usage read alone is the usage of the whole decoded turn, for every fixture
    /// answer that decodes (the gateway's same-wire routes count token limits with it).
    #[test]
    fn a_bodys_usage_read_alone_is_the_decoded_turns() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let (mut checked, mut counted) = (0, 0);
        for entry in std::fs::read_dir(&root).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = name.parse::<ProviderKind>() else {
                continue;
            };
            let Ok(provider) = provider_for(kind) else {
                continue;
            };
            for case in std::fs::read_dir(entry.path()).unwrap().flatten() {
                let Ok(body) = std::fs::read(case.path().join("response.json")) else {
                    continue;
                };
                let Ok(whole) = provider.decode(&body) else {
                    continue;
                };
                let alone = provider.decode_usage(&body);
                assert_eq!(alone, whole.usage, "{}", case.path().display());
                checked += 1;
                counted += usize::from(alone.is_some());
            }
        }
        assert!(
            checked > 50 && counted > 20,
            "{checked} bodies, {counted} with usage"
        );
    }

    #[test]
    fn body_shapes_come_from_the_table() {
        let mut shapes: Vec<&shared::BodyShape> = BUILTINS.iter().filter_map(|b| b.body).collect();
        shapes.sort_by_key(|s| s.rank);
        shapes.dedup_by_key(|s| s.api);
        let mut ranks: Vec<u8> = shapes.iter().map(|s| s.rank).collect();
        ranks.dedup();
        assert_eq!(ranks.len(), shapes.len(), "two APIs share a rank");
        let converse = serde_json::json!({"output": {"message": {}}, "stopReason": "end_turn"});
        let (api, speakers) = likely_api(&converse).unwrap();
        assert!(api.contains("Bedrock Converse"), "{api}");
        assert_eq!(speakers, [ProviderKind::Bedrock]);
        let chat = serde_json::json!({"choices": []});
        let (_, speakers) = likely_api(&chat).unwrap();
        assert!(
            speakers.contains(&ProviderKind::Mistral) && speakers.contains(&ProviderKind::OpenAi)
        );
        assert!(likely_api(&serde_json::json!({"steps": []})).is_none());
        let named = name_foreign(
            ProviderKind::Anthropic,
            converse.to_string().as_bytes(),
            Error::decode(
                ProviderKind::Anthropic,
                "response body",
                "missing field `content`",
            ),
        );
        let text = named.to_string();
        assert!(
            text.contains("(it looks like an AWS Bedrock Converse body"),
            "{text}"
        );
        assert!(text.contains("it has none of `type: message`"), "{text}");
    }

    /// An `openai` base URL on a named dialect's host gets that dialect, with or without the
    /// path its documentation shows (DeepSeek documents both `https://api.deepseek.com` and
    /// `https://api.deepseek.com/v1`); any other host the generic compatible dialect.
    #[test]
    fn a_compatible_server_is_known_by_its_host() {
        let kind = |url: &str| {
            provider_for_base_url(ProviderKind::OpenAi, Some(url))
                .unwrap()
                .info()
                .kind
        };
        assert_eq!(
            kind("https://api.deepseek.com/v1"),
            ProviderKind::Custom("deepseek")
        );
        assert_eq!(
            kind("https://API.deepseek.com"),
            ProviderKind::Custom("deepseek")
        );
        assert_eq!(
            kind("https://api.moonshot.ai/v1/"),
            ProviderKind::Custom("kimi")
        );
        assert_eq!(
            kind("https://openrouter.ai/api/v1"),
            ProviderKind::Custom("openrouter")
        );
        assert_eq!(
            kind("https://api.minimax.io/v1"),
            ProviderKind::Custom("minimax")
        );
        assert_eq!(kind("http://localhost:8000/v1"), ProviderKind::OpenAi);
        assert_eq!(
            kind("https://api.deepseek.com.example.org/v1"),
            ProviderKind::OpenAi
        );
    }

    #[test]
    fn the_table_is_consistent() {
        let mut names = std::collections::BTreeSet::new();
        for b in BUILTINS {
            assert!(names.insert(b.name()), "{} twice", b.name());
            assert_eq!((b.provider)().info().kind, b.kind);
            #[cfg(feature = "respond")]
            assert_eq!((b.responder)().info().kind, b.kind);
            assert!(!b.default_model.is_empty(), "{}", b.name());
            assert_eq!(b.name().parse::<ProviderKind>().unwrap(), b.kind);
        }
        assert_eq!(ProviderKind::ALL.len(), BUILTINS.len());
        assert!(
            ProviderKind::ALL
                .iter()
                .zip(BUILTINS)
                .all(|(k, b)| *k == b.kind)
        );
    }

    /// (cached, cache creation) input counts the wire of each provider here has a field for.
    /// A provider not listed is held to what its own body carries.
    #[cfg(feature = "respond")]
    fn carries(kind: ProviderKind) -> Option<(bool, bool)> {
        use ProviderKind as K;
        match kind {
            K::Ollama => Some((false, false)),
            K::Anthropic | K::Bedrock => Some((true, true)),
            K::OpenAi
            | K::Gemini
            | K::Glm
            | K::Qwen
            | K::DashScope
            | K::StepFun
            | K::OpenAiResponses
            | K::Mistral
            | K::Cohere => Some((true, false)),
            _ => None,
        }
    }

    /// Every writer puts a response's usage where its wire does, and its own decoder reads it
    /// back, as a body and as a stream (reasoning tokens where the wire has a place for them).
    #[cfg(feature = "respond")]
    #[test]
    fn every_writer_keeps_usage() {
        use crate::types::Usage;
        let usage = Usage {
            input_tokens: 12,
            output_tokens: 30,
            reasoning_tokens: Some(4),
            cached_input_tokens: Some(8),
            cache_creation_input_tokens: Some(2),
        };
        for b in BUILTINS {
            let w = (b.responder)();
            let mut checked = 0;
            for (name, mut sample) in crate::test_support::samples() {
                sample.usage = Some(usage);
                let Ok(body) = w.encode_response(&sample, false) else {
                    continue; // a response this wire cannot send (its writer says so)
                };
                let sse = w.encode_response(&sample, true).unwrap();
                let from_body = w.decode(&body).unwrap().usage;
                let from_stream = crate::replay::replay(w.as_ref(), &sse)
                    .unwrap()
                    .response
                    .usage;
                let mut seen: Option<Usage> = None;
                for (how, got) in [("body", from_body), ("stream", from_stream)] {
                    let got = got.unwrap_or_else(|| panic!("{} {name} {how}: no usage", b.name()));
                    // A count the wire has no field for is absent; every other comes back.
                    let want = Usage {
                        reasoning_tokens: got.reasoning_tokens.and(usage.reasoning_tokens),
                        cached_input_tokens: got.cached_input_tokens.and(usage.cached_input_tokens),
                        cache_creation_input_tokens: got
                            .cache_creation_input_tokens
                            .and(usage.cache_creation_input_tokens),
                        ..usage
                    };
                    // Which counts the wire has a field for, where a provider is known not
                    // to carry one of them; a provider not listed carries what its body
                    // carries (checked: body and stream agree, every count exact).
                    if let Some(carries) = carries(b.kind) {
                        assert_eq!(
                            got.cached_input_tokens.is_some(),
                            carries.0,
                            "{} {name} {how}: cached",
                            b.name()
                        );
                        assert_eq!(
                            got.cache_creation_input_tokens.is_some(),
                            carries.1,
                            "{} {name} {how}: cache creation",
                            b.name()
                        );
                    }
                    let first = *seen.get_or_insert(got);
                    assert_eq!(
                        (
                            first.cached_input_tokens.is_some(),
                            first.cache_creation_input_tokens.is_some()
                        ),
                        (
                            got.cached_input_tokens.is_some(),
                            got.cache_creation_input_tokens.is_some()
                        ),
                        "{} {name} {how}: carries other counts than the body did",
                        b.name()
                    );
                    assert_eq!(got, want, "{} {name} {how}", b.name());
                }
                checked += 1;
            }
            assert!(checked >= 3, "{}: only {checked} samples", b.name());
        }
    }

    /// The JSON of the built-in kinds is what `#[serde(rename_all = "lowercase")]` (and
    /// `openai-responses`) wrote before `Custom` existed: goldens and error JSON hold it.
    #[test]
    fn kinds_in_json_are_their_names() {
        let json: Vec<String> = ProviderKind::ALL
            .iter()
            .map(|k| serde_json::to_string(k).unwrap())
            .collect();
        // Each built-in's JSON is its name; the names goldens already hold stay as they are.
        for (kind, text) in ProviderKind::ALL.iter().zip(&json) {
            assert_eq!(*text, format!("{:?}", kind.name()));
        }
        for name in [
            "openai",
            "gemini",
            "glm",
            "qwen",
            "dashscope",
            "stepfun",
            "openai-responses",
            "anthropic",
            "ollama",
            "mistral",
            "cohere",
            "bedrock",
        ] {
            let quoted = format!("{name:?}");
            assert!(
                json.contains(&quoted),
                "{name} is no longer a built-in's JSON"
            );
        }
        for (kind, text) in ProviderKind::ALL.iter().zip(&json) {
            assert_eq!(serde_json::from_str::<ProviderKind>(text).unwrap(), *kind);
        }
        let value: ProviderKind = serde_json::from_value(serde_json::json!("glm")).unwrap();
        assert_eq!(value, ProviderKind::Glm);
        let acme = ProviderKind::Custom("acme");
        assert_eq!(serde_json::to_string(&acme).unwrap(), r#""acme""#);
        assert_eq!(acme.to_string(), "acme");
        let err = serde_json::from_str::<ProviderKind>(r#""acme""#).unwrap_err();
        assert!(err.to_string().contains("unknown provider"), "{err}");
        assert!(provider_for(acme).is_err());
    }

    #[test]
    fn a_base_url_selects_the_compatible_dialect_only_for_openai() {
        let mut req = crate::ChatRequest::new("m", vec![crate::Message::user("hi")]);
        req.max_tokens = Some(9);
        let name_of = |kind, url| {
            let p = provider_for_base_url(kind, url).unwrap();
            p.encode(&req, false)
                .unwrap()
                .body
                .as_object()
                .unwrap()
                .keys()
                .find(|k| k.starts_with("max_"))
                .cloned()
        };
        let official = Some("max_completion_tokens".to_owned());
        let compatible = Some("max_tokens".to_owned());
        assert_eq!(name_of(ProviderKind::OpenAi, None), official);
        assert_eq!(
            name_of(ProviderKind::OpenAi, Some("https://api.openai.com/v1/")),
            official
        );
        assert_eq!(
            name_of(ProviderKind::OpenAi, Some("http://127.0.0.1:8000/v1")),
            compatible
        );
        let qwen = provider_for_base_url(ProviderKind::Qwen, Some("http://127.0.0.1:1")).unwrap();
        assert_eq!(qwen.info().kind, ProviderKind::Qwen);
        assert!(is_default_base_url(qwen.as_ref(), qwen.info().base_url));
    }

    /// The usage objects a fixture's answer sent, payload by payload: the value at `at` in
    /// each payload (a body, an SSE `data:` payload, an NDJSON line) that holds an object.
    fn sent_usage(provider: &str, case: &str, file: &str, at: &str) -> Vec<serde_json::Value> {
        let path = format!(
            "{}/fixtures/{provider}/{case}/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let payloads: Vec<&str> = if file.ends_with(".json") {
            vec![text.as_str()]
        } else if file.ends_with(".sse") {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .filter(|d| d.starts_with('{'))
                .collect()
        } else {
            text.lines().filter(|l| l.starts_with('{')).collect()
        };
        payloads
            .into_iter()
            .map(|p| serde_json::from_str::<serde_json::Value>(p).unwrap())
            .filter_map(|v| v.pointer(at).filter(|u| u.is_object()).cloned())
            .collect()
    }

    /// The `raw_usage` a fixture's answer decodes to.
    fn decoded_raw_usage(kind: ProviderKind, case: &str, file: &str) -> serde_json::Value {
        let path = format!(
            "{}/fixtures/{}/{case}/{file}",
            env!("CARGO_MANIFEST_DIR"),
            kind.name()
        );
        let body = std::fs::read(&path).unwrap();
        let provider = provider_for(kind).unwrap();
        let r = crate::replay::replay(provider.as_ref(), &body)
            .unwrap()
            .response;
        assert!(r.usage.is_some(), "{path}: counts beside the raw report");
        r.raw_usage
            .unwrap_or_else(|| panic!("{path}: no raw_usage"))
    }

    /// Each case's `raw_usage` is the last usage object its wire sent at `at` (in a body,
    /// `body_at`), as sent.
    fn assert_raw_usage_is_last_sent(kind: ProviderKind, body_at: &str, stream_at: &str) {
        for (case, file, at) in [
            ("single_call", "response.json", body_at),
            ("stream_single_call", "response.sse", stream_at),
        ] {
            let sent = sent_usage(kind.name(), case, file, at);
            let last = sent
                .last()
                .unwrap_or_else(|| panic!("{kind} {case}: no usage sent"));
            assert_eq!(&decoded_raw_usage(kind, case, file), last, "{kind} {case}");
        }
    }

    #[test]
    fn openai_style_raw_usage_is_the_usage_object() {
        for kind in [
            ProviderKind::OpenAi,
            ProviderKind::Glm,
            ProviderKind::Qwen,
            ProviderKind::StepFun,
        ] {
            assert_raw_usage_is_last_sent(kind, "/usage", "/usage");
        }
    }

    #[test]
    fn dashscope_raw_usage_is_the_usage_object() {
        assert_raw_usage_is_last_sent(ProviderKind::DashScope, "/usage", "/usage");
    }

    #[test]
    fn gemini_raw_usage_is_usage_metadata() {
        assert_raw_usage_is_last_sent(ProviderKind::Gemini, "/usageMetadata", "/usageMetadata");
    }

    #[test]
    fn interactions_raw_usage_is_the_interaction_usage() {
        assert_raw_usage_is_last_sent(
            ProviderKind::GeminiInteractions,
            "/usage",
            "/interaction/usage",
        );
    }

    #[test]
    fn responses_raw_usage_is_the_response_usage() {
        assert_raw_usage_is_last_sent(ProviderKind::OpenAiResponses, "/usage", "/response/usage");
    }

    #[test]
    fn anthropic_raw_usage_lays_message_delta_over_message_start() {
        let kind = ProviderKind::Anthropic;
        let body = sent_usage("anthropic", "single_call", "response.json", "/usage");
        assert_eq!(
            decoded_raw_usage(kind, "single_call", "response.json"),
            body[0]
        );
        let file = "response.sse";
        let start = sent_usage("anthropic", "stream_single_call", file, "/message/usage");
        let deltas = sent_usage("anthropic", "stream_single_call", file, "/usage");
        let mut expected = start[0].as_object().unwrap().clone();
        for delta in &deltas {
            for (k, v) in delta.as_object().unwrap() {
                if !v.is_null() {
                    expected.insert(k.clone(), v.clone());
                }
            }
        }
        let raw = decoded_raw_usage(kind, "stream_single_call", file);
        assert_eq!(raw, serde_json::Value::Object(expected));
        // The case shows the overlay: a field only `message_start` sent is kept.
        assert!(
            raw.get("service_tier").is_some()
                && deltas.iter().all(|d| d.get("service_tier").is_none())
        );
    }

    #[test]
    fn ollama_raw_usage_is_its_count_and_duration_fields() {
        const FIELDS: &[&str] = &[
            "total_duration",
            "load_duration",
            "prompt_eval_count",
            "prompt_eval_duration",
            "eval_count",
            "eval_duration",
        ];
        for (case, file) in [
            ("single_call", "response.json"),
            ("stream_single_call", "response.ndjson"),
        ] {
            let lines = sent_usage("ollama", case, file, "");
            let done = lines.iter().rfind(|l| l["done"] == true).unwrap();
            let expected: serde_json::Map<String, serde_json::Value> = FIELDS
                .iter()
                .filter_map(|k| Some(((*k).to_owned(), done.get(*k)?.clone())))
                .collect();
            assert!(
                expected.contains_key("eval_duration"),
                "{case}: timings sent"
            );
            assert_eq!(
                decoded_raw_usage(ProviderKind::Ollama, case, file),
                serde_json::Value::Object(expected),
                "{case}"
            );
        }
    }
}
