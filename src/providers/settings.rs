//! Sampling and reasoning settings on every wire: where each goes ([`SamplingNames`]), what
//! form of reasoning each model family takes ([`ReasoningRule`] tables, one per provider, each
//! row citing the provider's page), and the drop policy shared by every encoder: a setting a
//! wire cannot carry is left out when its value is neutral (`top_p: 1`, a penalty of 0),
//! otherwise it is [`Error::Unsupported`] naming it, unless the request sets
//! `drop_unsupported`, in which case it is left out and listed on the encoded request
//! ([`crate::provider::HttpRequest::dropped`]).

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::provider::{Dropped, ProviderKind};
use crate::types::{ChatRequest, Effort, Thinking, ToolChoice};

/// Where the sampling settings go on one wire: each setting's wire name, or `None` when the
/// wire has no such setting (then the drop policy applies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SamplingNames {
    /// `top_p`'s name (`topP` on Gemini, `p` on Cohere).
    pub top_p: Option<&'static str>,
    /// `top_k`'s name.
    pub top_k: Option<&'static str>,
    /// The stop sequences' name (`stop_sequences`, `stopSequences`, `stop`).
    pub stop: Option<&'static str>,
    /// At most this many stop sequences (GLM: one); `None` for no documented limit.
    pub stop_max: Option<usize>,
    /// The seed's name (`random_seed` on Mistral).
    pub seed: Option<&'static str>,
    /// `presence_penalty`'s name.
    pub presence_penalty: Option<&'static str>,
    /// `frequency_penalty`'s name.
    pub frequency_penalty: Option<&'static str>,
}

impl SamplingNames {
    /// No sampling setting at all.
    pub const NONE: Self = Self {
        top_p: None,
        top_k: None,
        stop: None,
        stop_max: None,
        seed: None,
        presence_penalty: None,
        frequency_penalty: None,
    };

    /// OpenAI's Chat Completions names: `top_p`, `stop` (up to 4), `seed`, both penalties; no
    /// `top_k` (<https://platform.openai.com/docs/api-reference/chat/create>).
    pub const OPENAI: Self = Self {
        top_p: Some("top_p"),
        top_k: None,
        stop: Some("stop"),
        stop_max: Some(4),
        seed: Some("seed"),
        presence_penalty: Some("presence_penalty"),
        frequency_penalty: Some("frequency_penalty"),
    };

    /// Sets [`SamplingNames::top_p`].
    pub const fn with_top_p(mut self, name: Option<&'static str>) -> Self {
        self.top_p = name;
        self
    }

    /// Sets [`SamplingNames::top_k`].
    pub const fn with_top_k(mut self, name: Option<&'static str>) -> Self {
        self.top_k = name;
        self
    }

    /// Sets [`SamplingNames::stop`] and [`SamplingNames::stop_max`].
    pub const fn with_stop(mut self, name: Option<&'static str>, max: Option<usize>) -> Self {
        self.stop = name;
        self.stop_max = max;
        self
    }

    /// Sets [`SamplingNames::seed`].
    pub const fn with_seed(mut self, name: Option<&'static str>) -> Self {
        self.seed = name;
        self
    }

    /// Sets [`SamplingNames::presence_penalty`].
    pub const fn with_presence_penalty(mut self, name: Option<&'static str>) -> Self {
        self.presence_penalty = name;
        self
    }

    /// Sets [`SamplingNames::frequency_penalty`].
    pub const fn with_frequency_penalty(mut self, name: Option<&'static str>) -> Self {
        self.frequency_penalty = name;
        self
    }
}

/// The form of reasoning control a model family takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReasoningForm {
    /// No reasoning setting: turning it on is refused by name; off (or unset) sends nothing.
    None,
    /// Always reasons, no setting: an effort means "on" and sends nothing; a budget is
    /// refused, and so is turning it off.
    Always,
    /// An on/off switch: any effort but `none` is "on"; a budget is refused.
    Switch,
    /// A token budget from `min` to `max`; an effort maps to a budget (minimal 1024, low
    /// 4096, medium 8192, high 16384, xhigh 24576, max 32768, kept inside the range);
    /// `off`: whether reasoning can be turned off.
    Budget {
        /// The smallest budget the model takes.
        min: u32,
        /// The largest budget the model takes.
        max: u32,
        /// Whether reasoning can be turned off.
        off: bool,
    },
    /// Named levels: an effort goes as the nearest level the model has (the lowest at or
    /// above it, else the highest); a budget maps to a level by the thresholds above. Off is
    /// the `none` level when the list has it, otherwise refused.
    Levels(&'static [Effort]),
    /// Adaptive thinking plus an effort level (Anthropic's newer Claude models): levels as
    /// [`ReasoningForm::Levels`]; `off`: whether reasoning can be turned off.
    Adaptive {
        /// The effort levels the model takes.
        levels: &'static [Effort],
        /// Whether reasoning can be turned off.
        off: bool,
    },
    /// Effort and budget both go as given (a router that maps them to each model itself).
    Any,
}

/// One row of a provider's reasoning table: the models it covers, the form they take, the
/// settings they refuse, and the page that says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReasoningRule {
    /// Model name patterns (case-insensitive, matched anywhere in the name so regional and
    /// vendor prefixes like `us.anthropic.` still match; `*` stands for any run of
    /// characters). The first row with a matching pattern wins.
    pub models: &'static [&'static str],
    /// The form of reasoning those models take.
    pub form: ReasoningForm,
    /// Sampling settings those models refuse (`temperature`, `top_p`, `top_k`): the drop
    /// policy applies to them.
    pub refuses: &'static [&'static str],
    /// Where the provider documents it.
    pub source: &'static str,
}

impl ReasoningRule {
    /// A row for `models` taking `form`, documented at `source`.
    pub const fn new(
        models: &'static [&'static str],
        form: ReasoningForm,
        source: &'static str,
    ) -> Self {
        Self {
            models,
            form,
            refuses: &[],
            source,
        }
    }

    /// Sets [`ReasoningRule::refuses`].
    pub const fn with_refuses(mut self, refuses: &'static [&'static str]) -> Self {
        self.refuses = refuses;
        self
    }

    /// Whether this row covers `model`.
    pub fn covers(&self, model: &str) -> bool {
        let model = model.to_ascii_lowercase();
        self.models.iter().any(|p| glob_in(p, &model))
    }
}

/// The row of `table` that covers `model`, if any.
pub fn rule_for<'t>(table: &'t [ReasoningRule], model: &str) -> Option<&'t ReasoningRule> {
    table.iter().find(|r| r.covers(model))
}

/// Whether `pattern` (with `*` for any run) occurs anywhere in `text`.
fn glob_in(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else {
        return true;
    };
    let Some(start) = text.find(first) else {
        return false;
    };
    let mut rest = &text[start + first.len()..];
    for part in parts {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// What a wire sends for the request's reasoning, once the model's form is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Nothing: the model's default.
    Default,
    /// Reasoning off, in the wire's spelling.
    Off,
    /// Reasoning on, no level or budget asked (the wire's plain "on").
    On,
    /// This budget.
    Budget(u32),
    /// This level (`Effort::None` only where the levels list it).
    Level(Effort),
    /// Adaptive thinking, at this effort if one was asked.
    Adaptive(Option<Effort>),
    /// As given (a router's object).
    Any {
        effort: Option<Effort>,
        budget: Option<u32>,
    },
}

const BUDGETS: [(Effort, u32); 6] = [
    (Effort::Minimal, 1024),
    (Effort::Low, 4096),
    (Effort::Medium, 8192),
    (Effort::High, 16384),
    (Effort::Xhigh, 24576),
    (Effort::Max, 32768),
];

/// The budget an effort maps to (before clamping to a model's range).
pub fn effort_budget(effort: Effort) -> u32 {
    BUDGETS
        .iter()
        .find(|(e, _)| *e == effort)
        .map_or(0, |(_, b)| *b)
}

/// The effort a budget maps to: the lowest level whose budget reaches it.
pub fn budget_effort(budget: u32) -> Effort {
    BUDGETS
        .iter()
        .find(|(_, b)| budget <= *b)
        .map_or(Effort::Max, |(e, _)| *e)
}

/// The level of `levels` nearest to `effort`: the lowest at or above it, else the highest
/// (never `none` unless `none` was asked).
pub fn nearest_level(levels: &[Effort], effort: Effort) -> Option<Effort> {
    let on = levels.iter().copied().filter(|l| *l != Effort::None);
    if effort == Effort::None {
        return levels.contains(&Effort::None).then_some(Effort::None);
    }
    let mut sorted: Vec<Effort> = on.collect();
    sorted.sort();
    sorted
        .iter()
        .copied()
        .find(|l| *l >= effort)
        .or_else(|| sorted.last().copied())
}

/// Which of the newer tool-definition fields and tool choices a wire carries; the rest go
/// through the drop policy ([`Policy::tool_fields`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ToolFields {
    /// `defer_loading` (with the provider's tool search).
    pub defer_loading: bool,
    /// `input_examples`.
    pub input_examples: bool,
    /// `allowed_callers`.
    pub allowed_callers: bool,
    /// `eager_input_streaming`.
    pub eager_input_streaming: bool,
    /// `cache_control` (or its wire's equivalent).
    pub cache_control: bool,
    /// The `allowed_tools` tool choice.
    pub allowed_tools: bool,
}

impl ToolFields {
    /// A wire with none of them.
    pub(crate) const NONE: Self = Self {
        defer_loading: false,
        input_examples: false,
        allowed_callers: false,
        eager_input_streaming: false,
        cache_control: false,
        allowed_tools: false,
    };
}

/// The drop policy for one request on one wire, and the list of what it dropped.
pub(crate) struct Policy<'r> {
    req: &'r ChatRequest,
    kind: ProviderKind,
    /// The wire's name in messages (the provider's, unless [`Policy::named`] set another).
    wire: String,
    /// What was left out, for [`crate::provider::HttpRequest::dropped`].
    pub dropped: Vec<Dropped>,
}

impl<'r> Policy<'r> {
    /// The policy for `req` on `kind`'s wire; checks the settings' values first.
    pub(crate) fn new(kind: ProviderKind, req: &'r ChatRequest) -> Result<Self> {
        req.check_settings()?;
        Ok(Self {
            req,
            kind,
            wire: kind.to_string(),
            dropped: Vec::new(),
        })
    }

    /// Names the wire `wire` in messages (a realtime dialect on its vendor's provider).
    pub(crate) fn named(mut self, wire: impl Into<String>) -> Self {
        self.wire = wire.into();
        self
    }

    /// `setting` cannot go on this wire (`why` says why): left out when `neutral`, listed
    /// when the request allows drops, [`Error::Unsupported`] naming it otherwise.
    pub(crate) fn cannot(&mut self, setting: &str, neutral: bool, why: &str) -> Result<()> {
        if neutral {
            return Ok(());
        }
        if self.req.drop_unsupported {
            if !self.dropped.iter().any(|d| d.setting == setting) {
                self.dropped.push(Dropped::new(setting, why));
            }
            return Ok(());
        }
        Err(Error::unsupported(
            self.kind,
            format!("{setting}: {why} (set drop_unsupported to leave it out)"),
        ))
    }

    /// Checks the tool fields and the `allowed_tools` choice against what this wire `carries`;
    /// each one it lacks goes through [`Policy::cannot`] (named `tools[i].<field>` or
    /// `tool_choice.allowed_tools`). `eager_input_streaming` and `cache_control` are hints that
    /// never change the answer: neutral, so left out silently where the wire lacks them. A dropped `allowed_tools` choice falls back to its mode
    /// ([`ToolChoice::without_allowed`]).
    pub(crate) fn tool_fields(&mut self, carries: &ToolFields) -> Result<()> {
        let req = self.req;
        let wire = self.wire.clone();
        let lacks = format!("{wire} has no such tool field");
        for (i, t) in req.tools.iter().enumerate() {
            if !t.has_extra_fields() {
                continue;
            }
            let checks = [
                ("defer_loading", carries.defer_loading, !t.defer_loading),
                (
                    "input_examples",
                    carries.input_examples,
                    t.input_examples.is_empty(),
                ),
                (
                    "allowed_callers",
                    carries.allowed_callers,
                    t.allowed_callers.is_empty(),
                ),
                // Hints that never change the answer (how arguments stream, where the prompt
                // cache breaks) are neutral: left out where the wire has no place for them.
                ("eager_input_streaming", carries.eager_input_streaming, true),
                ("cache_control", carries.cache_control, true),
            ];
            for (field, carried, neutral) in checks {
                if !carried {
                    self.cannot(&format!("tools[{i}].{field}"), neutral, &lacks)?;
                }
            }
        }
        if !carries.allowed_tools
            && let Some(ToolChoice::Allowed { .. }) = &req.tool_choice
        {
            self.cannot(
                "tool_choice.allowed_tools",
                false,
                &format!("{wire} has no allowed_tools tool choice"),
            )?;
        }
        Ok(())
    }

    /// Puts the sampling settings in `target` under `names`; those the wire lacks go through
    /// [`Policy::cannot`].
    /// `rule` (the model's row) may refuse `top_p` and `top_k` too.
    pub(crate) fn sampling(
        &mut self,
        names: &SamplingNames,
        rule: Option<&ReasoningRule>,
        target: &mut Map<String, Value>,
    ) -> Result<()> {
        let req = self.req;
        let wire = self.wire.clone();
        let lacks = format!("{wire} has no such setting");
        if let Some(p) = req.top_p
            && self.allowed(rule, "top_p")?
        {
            match names.top_p {
                Some(n) => {
                    target.insert(n.into(), json!(p));
                }
                None => self.cannot("top_p", p == 1.0, &lacks)?,
            }
        }
        if let Some(k) = req.top_k
            && self.allowed(rule, "top_k")?
        {
            match names.top_k {
                Some(n) => {
                    target.insert(n.into(), json!(k));
                }
                None => self.cannot("top_k", false, &lacks)?,
            }
        }
        if !req.stop.is_empty() {
            match (names.stop, names.stop_max) {
                (Some(_), Some(max)) if req.stop.len() > max => self.cannot(
                    "stop",
                    false,
                    &format!(
                        "{wire} takes at most {max} stop sequences, got {}",
                        req.stop.len()
                    ),
                )?,
                (Some(n), _) => {
                    target.insert(n.into(), json!(req.stop));
                }
                (None, _) => self.cannot("stop", false, &lacks)?,
            }
        }
        if let Some(seed) = req.seed {
            match names.seed {
                Some(n) => {
                    target.insert(n.into(), json!(seed));
                }
                None => self.cannot("seed", false, &lacks)?,
            }
        }
        for (setting, value, name) in [
            (
                "presence_penalty",
                req.presence_penalty,
                names.presence_penalty,
            ),
            (
                "frequency_penalty",
                req.frequency_penalty,
                names.frequency_penalty,
            ),
        ] {
            if let Some(v) = value {
                match name {
                    Some(n) => {
                        target.insert(n.into(), json!(v));
                    }
                    None => self.cannot(setting, v == 0.0, &lacks)?,
                }
            }
        }
        Ok(())
    }

    /// Settings the model refuses (a row's [`ReasoningRule::refuses`]): each one the request
    /// sets goes through [`Policy::cannot`]; returns whether `setting` may still be sent.
    pub(crate) fn allowed(&mut self, rule: Option<&ReasoningRule>, setting: &str) -> Result<bool> {
        let Some(rule) = rule.filter(|r| r.refuses.contains(&setting)) else {
            return Ok(true);
        };
        let neutral = setting == "top_p" && self.req.top_p == Some(1.0);
        let set = match setting {
            "temperature" => self.req.temperature.is_some(),
            "top_p" => self.req.top_p.is_some(),
            "top_k" => self.req.top_k.is_some(),
            _ => false,
        };
        if set {
            self.cannot(
                setting,
                neutral,
                &format!("{} refuses it ({})", self.req.model, rule.source),
            )?;
        }
        Ok(false)
    }

    /// The request's model.
    pub(crate) fn model(&self) -> &str {
        &self.req.model
    }

    /// The request's reasoning summary, if asked.
    pub(crate) fn summary(&self) -> Option<crate::types::ReasoningSummary> {
        self.req.reasoning.and_then(|r| r.summary)
    }

    /// `reasoning.summary` on a wire that has no summary setting.
    /// `auto` (the fullest summary the model offers, what a wire without the setting gives
    /// anyway) is neutral; `concise` and `detailed` follow the policy.
    pub(crate) fn no_summary(&mut self) -> Result<()> {
        if let Some(summary) = self.req.reasoning.and_then(|r| r.summary) {
            let why = format!("{} has no reasoning summary setting", self.wire);
            let neutral = summary == crate::types::ReasoningSummary::Auto;
            self.cannot("reasoning.summary", neutral, &why)?;
        }
        Ok(())
    }

    /// The request's reasoning in the model's `form`.
    pub(crate) fn reasoning(&mut self, form: ReasoningForm) -> Result<Plan> {
        let model = self.req.model.clone();
        let wanted = self.req.thinking_wanted();
        let effort_field = if self.req.reasoning.is_some_and(|r| r.effort.is_some()) {
            "reasoning.effort"
        } else {
            "thinking"
        };
        Ok(match (wanted, form) {
            (Thinking::Unset, _) => Plan::Default,
            (Thinking::Off, ReasoningForm::None) => Plan::Default,
            (Thinking::Off, ReasoningForm::Any) => Plan::Any {
                effort: Some(Effort::None),
                budget: None,
            },
            (Thinking::Off, ReasoningForm::Switch)
            | (Thinking::Off, ReasoningForm::Budget { off: true, .. })
            | (Thinking::Off, ReasoningForm::Adaptive { off: true, .. }) => Plan::Off,
            (Thinking::Off, ReasoningForm::Levels(levels)) if levels.contains(&Effort::None) => {
                Plan::Level(Effort::None)
            }
            (Thinking::Off, _) => {
                let why = format!("{model} cannot turn reasoning off");
                self.cannot(effort_field, false, &why)?;
                Plan::Default
            }
            (Thinking::On { .. }, ReasoningForm::None) => {
                let why = format!("{model} takes no reasoning setting on {}", self.wire);
                self.cannot(effort_field, false, &why)?;
                Plan::Default
            }
            (Thinking::On { effort, budget }, ReasoningForm::Any) => Plan::Any { effort, budget },
            (Thinking::On { budget, .. }, ReasoningForm::Always | ReasoningForm::Switch) => {
                if budget.is_some() {
                    let why = format!("{model} takes no reasoning budget on {}", self.wire);
                    self.cannot("reasoning.budget_tokens", false, &why)?;
                }
                if form == ReasoningForm::Always {
                    Plan::Default
                } else {
                    Plan::On
                }
            }
            (Thinking::On { effort, budget }, ReasoningForm::Budget { min, max, .. }) => {
                match (budget, effort) {
                    (Some(b), _) if b < min || b > max => {
                        return Err(Error::unsupported(
                            self.kind,
                            format!(
                                "reasoning.budget_tokens: {model} takes a budget from {min} to \
                                 {max}, got {b}"
                            ),
                        ));
                    }
                    (Some(b), _) => Plan::Budget(b),
                    (None, Some(e)) => Plan::Budget(effort_budget(e).clamp(min, max)),
                    (None, None) => Plan::On,
                }
            }
            (
                Thinking::On { effort, budget },
                ReasoningForm::Levels(levels) | ReasoningForm::Adaptive { levels, .. },
            ) => {
                let asked = effort.or(budget.map(budget_effort));
                let level = match asked {
                    Some(e) => nearest_level(levels, e),
                    None => None,
                };
                match (form, level) {
                    (ReasoningForm::Adaptive { .. }, level) => Plan::Adaptive(level),
                    (_, Some(level)) => Plan::Level(level),
                    (_, None) => Plan::On,
                }
            }
        })
    }
}

/// Levels: OpenAI's `reasoning_effort` / `reasoning.effort` values.
const OPENAI_GPT5: &[Effort] = &[Effort::Minimal, Effort::Low, Effort::Medium, Effort::High];
const OPENAI_GPT51: &[Effort] = &[Effort::None, Effort::Low, Effort::Medium, Effort::High];
const OPENAI_GPT52: &[Effort] = &[
    Effort::None,
    Effort::Low,
    Effort::Medium,
    Effort::High,
    Effort::Xhigh,
];
const OPENAI_O: &[Effort] = &[Effort::Low, Effort::Medium, Effort::High];
/// Every value OpenAI's `reasoning_effort` documents, for models the table does not know.
pub const OPENAI_EFFORTS: &[Effort] = &[
    Effort::None,
    Effort::Minimal,
    Effort::Low,
    Effort::Medium,
    Effort::High,
    Effort::Xhigh,
];

const OPENAI_REASONING_PAGE: &str = "https://platform.openai.com/docs/guides/reasoning";

/// OpenAI's models (Chat Completions `reasoning_effort`, Responses `reasoning.effort`).
pub const OPENAI_REASONING: &[ReasoningRule] = &[
    ReasoningRule::new(
        &["gpt-5.2", "gpt-5.3", "gpt-5.4", "gpt-5.5"],
        ReasoningForm::Levels(OPENAI_GPT52),
        "https://platform.openai.com/docs/api-reference/chat/create#chat_create-reasoning_effort",
    ),
    ReasoningRule::new(
        &["gpt-5.1"],
        ReasoningForm::Levels(OPENAI_GPT51),
        "https://platform.openai.com/docs/api-reference/chat/create#chat_create-reasoning_effort",
    ),
    ReasoningRule::new(
        &["gpt-5-chat"],
        ReasoningForm::None,
        "https://platform.openai.com/docs/models/gpt-5-chat-latest",
    ),
    ReasoningRule::new(
        &["gpt-5"],
        ReasoningForm::Levels(OPENAI_GPT5),
        OPENAI_REASONING_PAGE,
    ),
    ReasoningRule::new(
        &["o1", "o3", "o4-mini"],
        ReasoningForm::Levels(OPENAI_O),
        OPENAI_REASONING_PAGE,
    ),
    ReasoningRule::new(
        &["gpt-4", "gpt-3.5", "chatgpt-4o"],
        ReasoningForm::None,
        "https://platform.openai.com/docs/models",
    ),
];

const CLAUDE_ADAPTIVE_47: &[Effort] = &[
    Effort::Low,
    Effort::Medium,
    Effort::High,
    Effort::Xhigh,
    Effort::Max,
];
const CLAUDE_ADAPTIVE_46: &[Effort] = &[Effort::Low, Effort::Medium, Effort::High, Effort::Max];
const CLAUDE_ADAPTIVE_PAGE: &str =
    "https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking";
const CLAUDE_EFFORT_PAGE: &str = "https://platform.claude.com/docs/en/build-with-claude/effort";
const CLAUDE_THINKING_PAGE: &str =
    "https://platform.claude.com/docs/en/build-with-claude/extended-thinking";

/// Claude models (Anthropic Messages, and Bedrock's `additionalModelRequestFields`). Adaptive
/// thinking only on Opus 4.7 and later and Mythos (`thinking.type: "enabled"` with
/// `budget_tokens` answers 400 there); Mythos cannot turn thinking off; Opus 4.6 and Sonnet
/// 4.6 take adaptive thinking (budgets deprecated); older models a budget of at least 1024.
pub const ANTHROPIC_REASONING: &[ReasoningRule] = &[
    ReasoningRule::new(
        &["claude-mythos"],
        ReasoningForm::Adaptive {
            levels: CLAUDE_ADAPTIVE_46,
            off: false,
        },
        CLAUDE_ADAPTIVE_PAGE,
    ),
    ReasoningRule::new(
        &[
            "claude-opus-4-7",
            "claude-opus-4-8",
            "claude-opus-5",
            "claude-sonnet-5",
            "claude-fable",
        ],
        ReasoningForm::Adaptive {
            levels: CLAUDE_ADAPTIVE_47,
            off: true,
        },
        CLAUDE_ADAPTIVE_PAGE,
    )
    .with_refuses(&["temperature", "top_p", "top_k"]),
    ReasoningRule::new(
        &["claude-opus-4-6", "claude-sonnet-4-6"],
        ReasoningForm::Adaptive {
            levels: CLAUDE_ADAPTIVE_46,
            off: true,
        },
        CLAUDE_EFFORT_PAGE,
    ),
    ReasoningRule::new(
        &[
            "claude-3-5",
            "claude-3-haiku",
            "claude-3-opus",
            "claude-3-sonnet",
        ],
        ReasoningForm::None,
        CLAUDE_THINKING_PAGE,
    ),
    ReasoningRule::new(
        &["claude-"],
        ReasoningForm::Budget {
            min: 1024,
            max: 128_000,
            off: true,
        },
        CLAUDE_THINKING_PAGE,
    ),
];

const GEMINI_3_PRO: &[Effort] = &[Effort::Low, Effort::High];
const GEMINI_3_FLASH: &[Effort] = &[Effort::Minimal, Effort::Low, Effort::Medium, Effort::High];
const GEMINI_THINKING_PAGE: &str = "https://ai.google.dev/gemini-api/docs/thinking";
const GEMINI_3_PAGE: &str = "https://ai.google.dev/gemini-api/docs/gemini-3";

/// Gemini models: Gemini 3 takes `thinkingLevel` (Pro: low, high; Flash: minimal to high) and
/// cannot turn thinking off; Gemini 2.5 takes `thinkingBudget` (Pro 128 to 32768, not off;
/// Flash 0 to 24576; Flash-Lite 512 to 24576).
pub const GEMINI_REASONING: &[ReasoningRule] = &[
    ReasoningRule::new(
        &["gemini-3*flash"],
        ReasoningForm::Levels(GEMINI_3_FLASH),
        GEMINI_3_PAGE,
    ),
    ReasoningRule::new(
        &["gemini-3"],
        ReasoningForm::Levels(GEMINI_3_PRO),
        GEMINI_3_PAGE,
    ),
    ReasoningRule::new(
        &["gemini-2.5-pro"],
        ReasoningForm::Budget {
            min: 128,
            max: 32768,
            off: false,
        },
        GEMINI_THINKING_PAGE,
    ),
    ReasoningRule::new(
        &["gemini-2.5-flash-lite"],
        ReasoningForm::Budget {
            min: 512,
            max: 24576,
            off: true,
        },
        GEMINI_THINKING_PAGE,
    ),
    ReasoningRule::new(
        &["gemini-2.5"],
        ReasoningForm::Budget {
            min: 1,
            max: 24576,
            off: true,
        },
        GEMINI_THINKING_PAGE,
    ),
    ReasoningRule::new(
        &["gemini-2.0", "gemini-1.5", "gemma"],
        ReasoningForm::None,
        GEMINI_THINKING_PAGE,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_anywhere_with_stars() {
        assert!(glob_in(
            "claude-opus-4-7",
            "us.anthropic.claude-opus-4-7-v1:0"
        ));
        assert!(glob_in("gemini-3*flash", "gemini-3.1-flash-preview"));
        assert!(!glob_in("gemini-3*flash", "gemini-3-pro-preview"));
        assert!(!glob_in("gpt-5.1", "gpt-5-mini"));
    }

    #[test]
    fn first_matching_row_wins() {
        let form = |t: &[ReasoningRule], m: &str| rule_for(t, m).map(|r| r.form);
        assert_eq!(
            form(OPENAI_REASONING, "gpt-5.1-mini"),
            Some(ReasoningForm::Levels(OPENAI_GPT51))
        );
        assert_eq!(
            form(OPENAI_REASONING, "gpt-5-mini"),
            Some(ReasoningForm::Levels(OPENAI_GPT5))
        );
        assert_eq!(
            form(GEMINI_REASONING, "gemini-2.5-flash-lite"),
            Some(ReasoningForm::Budget {
                min: 512,
                max: 24576,
                off: true
            })
        );
        assert_eq!(
            form(ANTHROPIC_REASONING, "claude-sonnet-4-5"),
            Some(ReasoningForm::Budget {
                min: 1024,
                max: 128_000,
                off: true
            })
        );
        assert!(matches!(
            form(ANTHROPIC_REASONING, "claude-opus-4-7"),
            Some(ReasoningForm::Adaptive { off: true, .. })
        ));
    }

    #[test]
    fn efforts_map_to_the_nearest_level_and_to_budgets() {
        assert_eq!(
            nearest_level(GEMINI_3_PRO, Effort::Medium),
            Some(Effort::High)
        );
        assert_eq!(
            nearest_level(GEMINI_3_PRO, Effort::Minimal),
            Some(Effort::Low)
        );
        assert_eq!(nearest_level(GEMINI_3_PRO, Effort::Max), Some(Effort::High));
        assert_eq!(nearest_level(GEMINI_3_PRO, Effort::None), None);
        assert_eq!(
            nearest_level(OPENAI_GPT51, Effort::None),
            Some(Effort::None)
        );
        assert_eq!(
            nearest_level(OPENAI_GPT51, Effort::Minimal),
            Some(Effort::Low)
        );
        assert_eq!(effort_budget(Effort::Low), 4096);
        assert_eq!(budget_effort(5000), Effort::Medium);
        assert_eq!(budget_effort(100_000), Effort::Max);
    }

    #[test]
    fn the_policy_leaves_out_neutral_values_and_refuses_others() {
        let mut req = ChatRequest::new("m", vec![])
            .with_top_p(1.0)
            .with_presence_penalty(0.0);
        let mut map = Map::new();
        let mut p = Policy::new(ProviderKind::Anthropic, &req).unwrap();
        p.sampling(&SamplingNames::NONE, None, &mut map).unwrap();
        assert!(map.is_empty() && p.dropped.is_empty());

        req.top_p = Some(0.5);
        let mut p = Policy::new(ProviderKind::Anthropic, &req).unwrap();
        let err = p
            .sampling(&SamplingNames::NONE, None, &mut map)
            .unwrap_err();
        assert!(err.to_string().contains("top_p"), "{err}");

        req.drop_unsupported = true;
        let mut p = Policy::new(ProviderKind::Anthropic, &req).unwrap();
        p.sampling(&SamplingNames::NONE, None, &mut map).unwrap();
        assert_eq!(p.dropped.len(), 1);
        assert_eq!(p.dropped[0].setting, "top_p");
        assert!(map.is_empty());
    }
}
