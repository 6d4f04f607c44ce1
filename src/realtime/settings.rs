//! The sampling and reasoning settings each realtime dialect's session setup takes, as data
//! ([`RealtimeSettings`], one constant per dialect, each citing the page that documents it),
//! and the one writer every dialect uses: the drop policy of the HTTP wires
//! ([`crate::providers::settings`]) applied to a [`SessionConfig`]: a setting the dialect
//! documents goes under its name, a neutral value of one it lacks is left out, any other is
//! [`Error::Unsupported`](crate::Error::Unsupported) naming it, or left out and listed when the
//! configuration sets `drop_unsupported`.

use serde_json::{Map, Value, json};

use super::model::{RealtimeKind, SessionConfig};
use crate::error::{Error, Result};
use crate::provider::Dropped;
use crate::providers::settings::{
    GEMINI_REASONING, Plan, Policy, ReasoningForm, ReasoningRule, SamplingNames, rule_for,
};
use crate::types::Effort;

/// Where a dialect puts the reasoning the model's form asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RealtimeReasoning {
    /// No reasoning setting in the session: the table's forms decide what is refused.
    None,
    /// `reasoning: {"effort": level}` in the session (OpenAI Realtime's reasoning models).
    Effort,
    /// `thinkingConfig` (`thinkingBudget`, `thinkingLevel`, `includeThoughts`) in Gemini's
    /// `generationConfig`.
    ThinkingConfig,
}

/// The settings one realtime dialect's session setup takes: each setting's name in the
/// session object (Gemini Live: in `setup.generationConfig`), or `None` when the dialect
/// documents no such setting (the drop policy applies).
///
/// Non-exhaustive: a custom dialect starts from a built-in constant and changes what differs
/// with the `const` `with_*` setters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RealtimeSettings {
    /// The output token limit's name.
    pub max_tokens: Option<&'static str>,
    /// The temperature's name.
    pub temperature: Option<&'static str>,
    /// `top_p`, `top_k`, `stop`, `seed` and the penalties.
    pub sampling: SamplingNames,
    /// The reasoning form of each model family (first matching row wins; a model no row
    /// covers takes no reasoning setting).
    pub models: &'static [ReasoningRule],
    /// Where the reasoning goes.
    pub reasoning: RealtimeReasoning,
    /// The page that documents these settings.
    pub source: &'static str,
}

impl RealtimeSettings {
    /// No setting at all.
    pub const NONE: Self = Self {
        max_tokens: None,
        temperature: None,
        sampling: SamplingNames::NONE,
        models: &[],
        reasoning: RealtimeReasoning::None,
        source: "",
    };

    /// Sets [`RealtimeSettings::max_tokens`].
    pub const fn with_max_tokens(mut self, name: Option<&'static str>) -> Self {
        self.max_tokens = name;
        self
    }

    /// Sets [`RealtimeSettings::temperature`].
    pub const fn with_temperature(mut self, name: Option<&'static str>) -> Self {
        self.temperature = name;
        self
    }

    /// Sets [`RealtimeSettings::sampling`].
    pub const fn with_sampling(mut self, sampling: SamplingNames) -> Self {
        self.sampling = sampling;
        self
    }

    /// Sets [`RealtimeSettings::models`] and [`RealtimeSettings::reasoning`].
    pub const fn with_reasoning(
        mut self,
        models: &'static [ReasoningRule],
        reasoning: RealtimeReasoning,
    ) -> Self {
        self.models = models;
        self.reasoning = reasoning;
        self
    }

    /// Sets [`RealtimeSettings::source`].
    pub const fn with_source(mut self, source: &'static str) -> Self {
        self.source = source;
        self
    }
}

const OPENAI_SESSION_PAGE: &str =
    "https://platform.openai.com/docs/api-reference/realtime-client-events/session/update";

/// `gpt-realtime-2`'s `reasoning.effort` values.
const OPENAI_REALTIME_EFFORTS: &[Effort] = &[
    Effort::Minimal,
    Effort::Low,
    Effort::Medium,
    Effort::High,
    Effort::Xhigh,
];

/// OpenAI's realtime models: the `gpt-realtime-2` family takes `reasoning.effort` (minimal to
/// xhigh, no "none"); the earlier realtime models take no reasoning setting. The first row
/// keeps `gpt-realtime`'s dated snapshots (`gpt-realtime-2025-08-28`) out of the second.
pub const OPENAI_REALTIME_REASONING: &[ReasoningRule] = &[
    ReasoningRule::new(
        &["gpt-realtime-20"],
        ReasoningForm::None,
        "https://platform.openai.com/docs/models/gpt-realtime",
    ),
    ReasoningRule::new(
        &["gpt-realtime-2"],
        ReasoningForm::Levels(OPENAI_REALTIME_EFFORTS),
        "https://developers.openai.com/api/reference/resources/realtime/subresources/calls/methods/accept",
    ),
    ReasoningRule::new(
        &["gpt-realtime", "gpt-4o-realtime", "gpt-4o-mini-realtime"],
        ReasoningForm::None,
        OPENAI_SESSION_PAGE,
    ),
];

/// OpenAI Realtime (GA session): `max_output_tokens` (1 to 4096, or `"inf"`), and
/// `reasoning.effort` on the reasoning models. The GA session documents no `temperature` (the
/// beta's `temperature` is gone) and no other sampling setting
/// (<https://platform.openai.com/docs/api-reference/realtime-client-events/session/update>).
pub const OPENAI_REALTIME_SETTINGS: RealtimeSettings = RealtimeSettings::NONE
    .with_max_tokens(Some("max_output_tokens"))
    .with_reasoning(OPENAI_REALTIME_REASONING, RealtimeReasoning::Effort)
    .with_source(OPENAI_SESSION_PAGE);

/// GLM-Realtime: `session.update` documents audio formats, instructions, `turn_detection`,
/// `beta_fields` and tools, no sampling or reasoning setting
/// (<https://docs.bigmodel.cn/cn/guide/models/sound-and-video/glm-realtime>, and the
/// field list in
/// <https://github.com/MetaGLM/glm-realtime-sdk/blob/main/GLM-Realtime-doc-for-llm.md>).
pub const GLM_REALTIME_SETTINGS: RealtimeSettings = RealtimeSettings::NONE
    .with_source("https://docs.bigmodel.cn/cn/guide/models/sound-and-video/glm-realtime");

/// Qwen-Omni-Realtime: `session.update` takes `temperature`, `top_p`, `top_k`, `max_tokens`,
/// `seed`, `presence_penalty` (and `repetition_penalty`, which has no canonical setting); no
/// stop sequences, frequency penalty or reasoning setting
/// (<https://www.alibabacloud.com/help/en/model-studio/client-events>).
pub const QWEN_REALTIME_SETTINGS: RealtimeSettings = RealtimeSettings::NONE
    .with_max_tokens(Some("max_tokens"))
    .with_temperature(Some("temperature"))
    .with_sampling(
        SamplingNames::NONE
            .with_top_p(Some("top_p"))
            .with_top_k(Some("top_k"))
            .with_seed(Some("seed"))
            .with_presence_penalty(Some("presence_penalty")),
    )
    .with_source("https://www.alibabacloud.com/help/en/model-studio/client-events");

/// StepFun realtime: `session.update` documents modalities, instructions, voice,
/// `turn_detection`, audio formats and tools, no sampling or reasoning setting
/// (<https://platform.stepfun.com/docs/api-reference/realtime/chat>).
pub const STEPFUN_REALTIME_SETTINGS: RealtimeSettings = RealtimeSettings::NONE
    .with_source("https://platform.stepfun.com/docs/api-reference/realtime/chat");

/// Gemini Live: `setup.generationConfig` takes Gemini's generation config except (among
/// others) `stopSequence`: `maxOutputTokens`, `temperature`, `topP`, `topK`, `seed`,
/// `presencePenalty`, `frequencyPenalty` (<https://ai.google.dev/api/live#bidigeneratecontentsetup>),
/// and `thinkingConfig` for the models that think, as over HTTP
/// (<https://ai.google.dev/gemini-api/docs/live-guide>, <https://ai.google.dev/gemini-api/docs/thinking>).
pub const GEMINI_LIVE_SETTINGS: RealtimeSettings = RealtimeSettings::NONE
    .with_max_tokens(Some("maxOutputTokens"))
    .with_temperature(Some("temperature"))
    .with_sampling(
        SamplingNames::NONE
            .with_top_p(Some("topP"))
            .with_top_k(Some("topK"))
            .with_seed(Some("seed"))
            .with_presence_penalty(Some("presencePenalty"))
            .with_frequency_penalty(Some("frequencyPenalty")),
    )
    .with_reasoning(GEMINI_REASONING, RealtimeReasoning::ThinkingConfig)
    .with_source("https://ai.google.dev/api/live#bidigeneratecontentsetup");

/// Writes `config`'s settings into `target` (the session object, or Gemini's
/// `generationConfig`) as `settings` says; returns what was dropped.
pub(crate) fn apply(
    kind: RealtimeKind,
    settings: &RealtimeSettings,
    config: &SessionConfig,
    target: &mut Map<String, Value>,
) -> Result<Vec<Dropped>> {
    let req = config.settings_request();
    let mut policy = Policy::new(kind.provider(), &req)?.named(kind.name());
    let lacks = format!("{kind} has no such session setting");
    if let Some(max) = req.max_tokens {
        match settings.max_tokens {
            Some(name) => {
                target.insert(name.into(), json!(max));
            }
            None => policy.cannot("max_tokens", false, &lacks)?,
        }
    }
    let rule = rule_for(settings.models, &req.model);
    if let Some(t) = req.temperature
        && policy.allowed(rule, "temperature")?
    {
        match settings.temperature {
            Some(name) => {
                target.insert(name.into(), json!(t));
            }
            None => policy.cannot("temperature", false, &lacks)?,
        }
    }
    policy.sampling(&settings.sampling, rule, target)?;
    let form = rule.map_or(ReasoningForm::None, |r| r.form);
    let plan = policy.reasoning(form)?;
    policy.no_summary()?;
    match (settings.reasoning, plan) {
        (_, Plan::Default) => {}
        (RealtimeReasoning::Effort, Plan::Level(level)) => {
            target.insert("reasoning".into(), json!({"effort": level.as_str()}));
        }
        // Reasoning on with no level asked: the model's default level.
        (RealtimeReasoning::Effort, Plan::On) => {}
        (RealtimeReasoning::ThinkingConfig, plan) => {
            let config = match plan {
                Plan::Off => json!({"thinkingBudget": 0}),
                Plan::On => json!({"includeThoughts": true}),
                Plan::Budget(b) => json!({"includeThoughts": true, "thinkingBudget": b}),
                Plan::Level(level) => {
                    json!({"includeThoughts": true, "thinkingLevel": level.as_str()})
                }
                other => return Err(no_form(kind, other)),
            };
            target.insert("thinkingConfig".into(), config);
        }
        (_, other) => return Err(no_form(kind, other)),
    }
    Ok(policy.dropped)
}

/// A reasoning plan the dialect has no place for (a table row that does not fit its dialect).
fn no_form(kind: RealtimeKind, plan: Plan) -> Error {
    Error::unsupported(
        kind.provider(),
        format!("reasoning: {plan:?} has no {kind} form"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_row_that_does_not_fit_its_dialect_is_an_error_not_a_silent_skip() {
        const BUDGETED: &[ReasoningRule] = &[ReasoningRule::new(
            &["m"],
            ReasoningForm::Budget {
                min: 1,
                max: 10,
                off: true,
            },
            "test",
        )];
        let settings = OPENAI_REALTIME_SETTINGS.with_reasoning(BUDGETED, RealtimeReasoning::Effort);
        let config = SessionConfig::new("m", vec![]).with_effort(Effort::Low);
        let err = apply(
            RealtimeKind::OpenAiRealtime,
            &settings,
            &config,
            &mut Map::new(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("openai-realtime"), "{err}");
    }

    #[test]
    fn messages_name_the_dialect_not_its_vendors_http_wire() {
        let config = SessionConfig::new("gpt-realtime", vec![]).with_temperature(0.7);
        let err = apply(
            RealtimeKind::OpenAiRealtime,
            &OPENAI_REALTIME_SETTINGS,
            &config,
            &mut Map::new(),
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("temperature"), "{text}");
        assert!(text.contains("openai-realtime has no such"), "{text}");
    }
}
