//! The canonical chat request.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Effort, Message, Reasoning, ToolChoice, ToolDefinition};

/// How tool parameter schemas go on the wire, for providers that offer a choice (Gemini).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SchemaMode {
    /// Lowered to the provider's own schema subset.
    Lowered,
    /// Sent as JSON Schema unchanged.
    JsonSchema,
}

/// The format an open model writes its tool calls in when they arrive as answer text (served
/// without a tool parser, or with a broken one); set on a request to recover them as calls
/// ([`ChatRequest::with_text_calls`]). JSON and the CLI spell each value as `as_str` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum TextCallFormat {
    /// Whichever format the first marker in the text belongs to.
    Auto,
    /// Hermes / Qwen2.5: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`.
    Hermes,
    /// Qwen3-Coder: `<tool_call><function=NAME><parameter=K>V</parameter></function></tool_call>`.
    QwenXml,
    /// DeepSeek V3, R1 and V3.1 special-token blocks (`<｜tool▁calls▁begin｜>` …).
    Deepseek,
    /// Mistral `[TOOL_CALLS]`, as a JSON list or `NAME[ARGS]{…}` (with or without `[CALL_ID]`).
    Mistral,
    /// Llama 3.x: a `{"name": …, "parameters": {…}}` answer, optionally after `<|python_tag|>`.
    Llama,
    /// GLM-4.5 and later: `<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>`.
    Glm,
    /// Kimi K2: `<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{…}<|tool_call_end|>…`.
    Kimi,
}

impl TextCallFormat {
    /// Every format, `auto` first.
    pub const ALL: [Self; 8] = [
        Self::Auto,
        Self::Hermes,
        Self::QwenXml,
        Self::Deepseek,
        Self::Mistral,
        Self::Llama,
        Self::Glm,
        Self::Kimi,
    ];

    /// The format's name, as JSON and `--text-calls` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Hermes => "hermes",
            Self::QwenXml => "qwen-xml",
            Self::Deepseek => "deepseek",
            Self::Mistral => "mistral",
            Self::Llama => "llama",
            Self::Glm => "glm",
            Self::Kimi => "kimi",
        }
    }
}

impl std::fmt::Display for TextCallFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for TextCallFormat {
    type Err = crate::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|f| f.as_str()).collect();
                crate::Error::input(
                    "text_calls",
                    format!(
                        "unknown text-call format {s:?}; one of {}",
                        names.join(", ")
                    ),
                )
            })
    }
}

/// A JSON Schema the model's final answer must follow (structured output), beside or instead
/// of tools. JSON: `{"name": "weather_report", "schema": {...}, "strict": true}`.
///
/// Non-exhaustive: build it with [`ResponseFormat::json_schema`] and the `with_*` setters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ResponseFormat {
    /// A name for the schema (wires that require one get it; `^[A-Za-z0-9_-]{1,64}$`).
    pub name: String,
    /// What the answer is, for wires that carry a description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of the answer (an object schema).
    pub schema: Value,
    /// Ask for strict schema adherence where the wire offers it; `None` leaves its default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

impl ResponseFormat {
    /// An answer that follows `schema`, named `name`.
    pub fn json_schema(name: impl Into<String>, schema: Value) -> Self {
        Self {
            name: name.into(),
            description: None,
            schema,
            strict: None,
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets strict adherence.
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = Some(strict);
        self
    }
}

/// One request to a model: the conversation, the tools and the sampling settings.
///
/// Non-exhaustive: build it with [`ChatRequest::new`] and the `with_*` setters (or set the
/// public fields), so a new setting is not a breaking change.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ChatRequest {
    /// The model name, as the provider spells it.
    pub model: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    /// Tools the provider runs itself (web search, code execution, …), offered beside
    /// `tools`; their calls come back as the response's `hosted_calls`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosted_tools: Vec<super::HostedTool>,
    /// Which tools the model may or must call; `None` leaves the provider's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may call several tools in one turn; `None` leaves the provider's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Maximum output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Turn the model's thinking mode on or off where the provider has one; `None` leaves the
    /// provider's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<bool>,
    /// How the model reasons: effort, token budget, summary (each wire gets it in the form
    /// the target model takes). `thinking` is the short form; both may be given when they
    /// agree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// Nucleus sampling: the probability mass the next token is drawn from, in `[0, 1]`
    /// (`1` is every wire's default, so a wire without it leaves `1` out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Draw the next token from the `top_k` most likely ones (at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// Texts that end the answer when the model writes them (each non-empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// A seed for sampling, for repeatable answers where the provider offers them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Penalty on tokens that already appeared, in `[-2, 2]` (`0` is neutral).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// Penalty on tokens by how often they appeared, in `[-2, 2]` (`0` is neutral).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    /// A setting the target wire cannot carry is left out (and listed on the encoded request,
    /// [`crate::provider::HttpRequest::dropped`]) instead of failing with
    /// `Error::Unsupported`. Neutral values (`top_p: 1`, a penalty of 0) are always left out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drop_unsupported: bool,
    /// How schemas go on the wire where a provider offers a choice; `None` is its default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_mode: Option<SchemaMode>,
    /// A JSON Schema the final answer must follow (structured output); `None` for free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// Recover tool calls the model writes into its answer text, in this format (`openai` and
    /// compatible wires, `ollama`); `None` leaves the text as it came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_calls: Option<TextCallFormat>,
    /// Fields merged into the top level of the wire body last, for provider options toolwire
    /// has no name for.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra_body: Map<String, Value>,
}

impl ChatRequest {
    /// A request for `model` with these messages.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        Self {
            model: model.into(),
            messages,
            ..Self::default()
        }
    }

    /// Adds tools.
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = ToolDefinition>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Asks for an answer that follows a JSON Schema (structured output).
    pub fn with_response_format(mut self, format: ResponseFormat) -> Self {
        self.response_format = Some(format);
        self
    }

    /// Sets the tool choice.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Allows or forbids several tool calls in one turn.
    pub fn with_parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.parallel_tool_calls = Some(parallel);
        self
    }

    /// Sets the output token limit.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets the sampling temperature.
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Turns the model's thinking mode on or off.
    pub fn with_thinking(mut self, thinking: bool) -> Self {
        self.thinking = Some(thinking);
        self
    }

    /// Sets the reasoning settings.
    pub fn with_reasoning(mut self, reasoning: Reasoning) -> Self {
        self.reasoning = Some(reasoning);
        self
    }

    /// Sets the reasoning effort (keeping any budget or summary already set).
    pub fn with_effort(mut self, effort: Effort) -> Self {
        self.reasoning = Some(self.reasoning.unwrap_or_default().with_effort(effort));
        self
    }

    /// Sets nucleus sampling's `top_p`.
    pub fn with_top_p(mut self, top_p: f64) -> Self {
        self.top_p = Some(top_p);
        self
    }

    /// Sets `top_k`.
    pub fn with_top_k(mut self, top_k: u32) -> Self {
        self.top_k = Some(top_k);
        self
    }

    /// Adds stop sequences.
    pub fn with_stop(mut self, stop: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.stop.extend(stop.into_iter().map(Into::into));
        self
    }

    /// Sets the sampling seed.
    pub fn with_seed(mut self, seed: i64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Sets the presence penalty.
    pub fn with_presence_penalty(mut self, penalty: f64) -> Self {
        self.presence_penalty = Some(penalty);
        self
    }

    /// Sets the frequency penalty.
    pub fn with_frequency_penalty(mut self, penalty: f64) -> Self {
        self.frequency_penalty = Some(penalty);
        self
    }

    /// Adds tools the provider runs itself.
    pub fn with_hosted_tools(mut self, tools: impl IntoIterator<Item = super::HostedTool>) -> Self {
        self.hosted_tools.extend(tools);
        self
    }

    /// Leaves out (and lists) settings the wire cannot carry instead of failing.
    pub fn with_drop_unsupported(mut self, drop: bool) -> Self {
        self.drop_unsupported = drop;
        self
    }

    /// Checks the sampling and reasoning settings: each value in its range, `thinking` and
    /// `reasoning` in agreement. A bad value is `Error::Input` naming the field. Every
    /// provider's `encode` runs it first.
    pub fn check_settings(&self) -> crate::Result<()> {
        use crate::Error;
        let range = |field: &str, v: Option<f64>, lo: f64, hi: f64| match v {
            Some(x) if !(x.is_finite() && (lo..=hi).contains(&x)) => Err(Error::input(
                field,
                format!("{x} is out of range: {field} takes {lo} to {hi}"),
            )),
            _ => Ok(()),
        };
        range("temperature", self.temperature, 0.0, 2.0)?;
        range("top_p", self.top_p, 0.0, 1.0)?;
        range("presence_penalty", self.presence_penalty, -2.0, 2.0)?;
        range("frequency_penalty", self.frequency_penalty, -2.0, 2.0)?;
        if self.top_k == Some(0) {
            return Err(Error::input(
                "top_k",
                "0 is out of range: top_k is at least 1",
            ));
        }
        if let Some(i) = self.stop.iter().position(String::is_empty) {
            return Err(Error::input(
                format!("stop[{i}]"),
                "an empty stop sequence would end every answer at once",
            ));
        }
        if let Some(r) = &self.reasoning {
            if r.budget_tokens == Some(0) {
                return Err(Error::input(
                    "reasoning.budget_tokens",
                    "0 is out of range: a budget is at least 1 (use effort \"none\" to turn \
                     reasoning off)",
                ));
            }
            if r.effort == Some(Effort::None) && r.budget_tokens.is_some() {
                return Err(Error::input(
                    "reasoning.budget_tokens",
                    "a budget with effort \"none\": reasoning cannot be off and budgeted",
                ));
            }
            let on = r.effort.is_some_and(|e| e != Effort::None) || r.budget_tokens.is_some();
            let off = r.effort == Some(Effort::None);
            match self.thinking {
                Some(false) if on => {
                    return Err(Error::input(
                        "thinking",
                        "thinking: false with a reasoning effort or budget; give one of them",
                    ));
                }
                Some(true) if off => {
                    return Err(Error::input(
                        "thinking",
                        "thinking: true with reasoning effort \"none\"; give one of them",
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// What the request asks of the model's reasoning, `reasoning` and `thinking` together.
    pub(crate) fn thinking_wanted(&self) -> Thinking {
        let r = self.reasoning.unwrap_or_default();
        match (r.effort, r.budget_tokens, self.thinking) {
            (Some(Effort::None), _, _) | (None, None, Some(false)) => Thinking::Off,
            (Some(effort), budget, _) => Thinking::On {
                effort: Some(effort),
                budget,
            },
            (None, Some(budget), _) => Thinking::On {
                effort: None,
                budget: Some(budget),
            },
            (None, None, Some(true)) => Thinking::On {
                effort: None,
                budget: None,
            },
            (None, None, None) => Thinking::Unset,
        }
    }

    /// Sets how schemas go on the wire.
    pub fn with_schema_mode(mut self, mode: SchemaMode) -> Self {
        self.schema_mode = Some(mode);
        self
    }

    /// Recovers tool calls the model writes as text, in `format` (see [`TextCallFormat`]):
    /// they come back as ordinary calls, never as text. Only wires that carry open models
    /// (`openai` and compatible, `ollama`) take it; others refuse it with `Error::Unsupported`.
    pub fn with_text_calls(mut self, format: TextCallFormat) -> Self {
        self.text_calls = Some(format);
        self
    }

    /// Adds one field to merge into the top level of the wire body.
    pub fn with_extra_body(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extra_body.insert(key.into(), value);
        self
    }
}

/// What a request asks of the model's reasoning (`reasoning` and `thinking` together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Thinking {
    /// Nothing asked: the model's default.
    Unset,
    /// Reasoning off (`effort: "none"` or `thinking: false`).
    Off,
    /// Reasoning on, at this effort and/or budget (both `None`: on, at the default).
    On {
        effort: Option<Effort>,
        budget: Option<u32>,
    },
}
