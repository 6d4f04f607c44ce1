//! Quirk settings of the OpenAI Chat Completions wire. Every OpenAI-compatible provider is one
//! [`Dialect`] value; a quirk is a documented field here before it is ever code.

use crate::provider::{Auth, ProviderInfo, ProviderKind};
use crate::providers::settings::{
    OPENAI_EFFORTS, OPENAI_REASONING, ReasoningForm, ReasoningRule, SamplingNames,
};
use crate::types::FinishReason;

/// The settings that make one OpenAI-compatible wire differ from another.
///
/// Non-exhaustive: a custom dialect starts from a built-in constant and changes what differs
/// with the `const` `with_*` setters, so it still reads like data and stays a constant:
///
/// ```
/// use toolwire::provider::{Auth, ProviderKind};
/// use toolwire::providers::openai::{Dialect, OPENAI_COMPATIBLE, OpenAi};
///
/// static MY_GATEWAY: Dialect = OPENAI_COMPATIBLE
///     .with_info(
///         OPENAI_COMPATIBLE
///             .info
///             .with_base_url("https://gateway.example/v1")
///             .with_key_vars(&["MY_GATEWAY_KEY"])
///             .with_auth(Auth::Header("x-api-key")),
///     )
///     .with_stream_usage(false);
/// let provider = OpenAi::with_dialect(&MY_GATEWAY);
/// assert_eq!(provider.dialect().info.kind, ProviderKind::OpenAi);
/// ```
///
/// Non-exhaustive: derive one from a built-in constant with the `const` `with_*` setters, as above.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Dialect {
    /// Static facts: name, base URL, key variables.
    pub info: ProviderInfo,
    /// Path of the chat endpoint below the base URL.
    pub path: &'static str,
    /// Body field for the output token limit. OpenAI's reasoning models reject `max_tokens`
    /// (their 400 `unsupported_parameter`: "Use 'max_completion_tokens' instead"); most compatible servers only know
    /// `max_tokens`.
    pub max_tokens_field: &'static str,
    /// Send `stream_options: {"include_usage": true}` when streaming, so usage arrives in a last
    /// chunk with empty `choices` (fixture `openai/quirk_usage_only_final_chunk`).
    pub stream_usage: bool,
    /// Delta and message fields read as reasoning text; the first one with text in a delta wins (`reasoning_content` on
    /// DeepSeek/GLM/Qwen, `reasoning` on StepFun and OpenRouter).
    pub reasoning_fields: &'static [ReasoningField],
    /// Field that carries the reasoning back on assistant turns with tool calls, when the
    /// provider needs it (DeepSeek-style thinking models answer 400 otherwise).
    pub echo_reasoning: Option<&'static str>,
    /// What goes in [`Dialect::echo_reasoning`] on an assistant turn with tool calls that has
    /// no reasoning (a turn made by another model), where the server requires the field on
    /// every such turn and documents a stand-in; `None` sends nothing then.
    pub reasoning_placeholder: Option<&'static str>,
    /// A message field of structured reasoning entries (`reasoning_details`: OpenRouter,
    /// MiniMax) kept verbatim on the response (in its provider data, under the same name; a
    /// stream's entries appended in order) and sent back on the assistant turn as they came.
    pub reasoning_details: Option<&'static str>,
    /// Boolean request fields sent as `true` on every request (MiniMax `reasoning_split`, which
    /// puts the reasoning in `reasoning_details` instead of `<think>` tags in the text).
    pub request_flags: &'static [&'static str],
    /// `finish_reason` values that mean "not finished yet" besides null (`""` on StepFun,
    /// `"null"` on DashScope).
    pub unfinished: &'static [&'static str],
    /// Provider-specific finish reasons and their canonical meaning (GLM `sensitive`, ...).
    pub finish_reasons: &'static [(&'static str, FinishReason)],
    /// Whether a tool name is accepted on this wire; others are mapped reversibly.
    pub valid_name: fn(&str) -> bool,
    /// Which `tool_choice` values the wire honours; others are [`crate::Error::Unsupported`]
    /// before anything is sent (GLM: only `auto`, fixture `glm/quirk_tool_choice_required`).
    pub tool_choice: ToolChoiceSupport,
    /// Which `tool_choice` values the wire honours while the model is thinking (Qwen rejects
    /// `required` and named choices in thinking mode, fixture
    /// `qwen/quirk_thinking_tool_choice_required`).
    pub thinking_tool_choice: ToolChoiceSupport,
    /// How `parallel_tool_calls` is sent (Qwen's default is off, so toolwire sends `true`
    /// unless asked otherwise; StepFun does not document the field).
    pub parallel_tool_calls: ParallelCalls,
    /// How [`crate::ChatRequest::thinking`] goes on the wire (GLM `thinking: {"type": …}`,
    /// Qwen `enable_thinking`).
    pub thinking: ThinkingSwitch,
    /// Substrings of model names that always think, whatever the request says (Qwen
    /// `qwen3-…-thinking-…`); used to apply [`Dialect::thinking_tool_choice`].
    pub thinking_models: &'static [&'static str],
    /// Models that get `tool_stream: true` when streaming with tools, so their arguments
    /// stream in fragments instead of arriving whole (GLM, fixture `glm/stream_single_call`).
    /// Matched exactly; `extra_body.tool_stream` overrides either way.
    pub tool_stream_models: &'static [&'static str],
    /// A missing assistant text is `""` rather than `null` on this wire, both in requests (GLM
    /// drops non-string content; Qwen's documented history uses `""`; fixture
    /// `glm/tool_result_roundtrip`) and in the bodies the mock provider answers with (Qwen's
    /// recorded body has `"content": ""` beside its calls, fixture `qwen/single_call`).
    pub empty_content_as_string: bool,
    /// `extra_body` flags that must not be `true` in a request with tools: the provider cannot
    /// combine them (Qwen `enable_search`, fixture `qwen/quirk_enable_search_with_tools`).
    pub exclusive_with_tools: &'static [&'static str],
    /// Property keys of tool parameter schemas must pass [`Dialect::valid_name`] too; others
    /// are [`crate::Error::Unsupported`] naming the key (StepFun, fixture
    /// `stepfun/quirk_property_key_rule`).
    pub check_property_keys: bool,
    /// A call is final once a fragment at a later `index` starts another call and its text is
    /// one complete JSON object, so its `ToolCallComplete` comes then and an agent can run it
    /// before the turn ends (a call with no text yet, or half an object, waits: fixture
    /// `openai/quirk_interleaved_indexes`); otherwise calls are final at the end of the turn. On for OpenAI's own endpoint: its SDK reports
    /// `tool_calls.function.arguments.done` ("emitted when a function tool call's arguments are
    /// complete") when the next index appears
    /// (<https://github.com/openai/openai-python/blob/e43b422412a9e96c9cc5192c61fffbe2d7e04836/src/openai/lib/streaming/chat/_completions.py#L596-L635>,
    /// `helpers.md`), fixture `openai/stream_parallel_calls`. Off where nothing says so:
    /// compatible servers interleave fragments of several indexes
    /// (<https://github.com/QwenLM/Qwen-Agent/pull/943>) or jump between indexes
    /// (<https://github.com/dirac-run/dirac/pull/215>).
    pub calls_end_at_next_index: bool,
    /// Which media parts a user message takes on this wire, and in what form; a part it
    /// cannot take is [`crate::Error::Unsupported`] naming the part and the provider. Tool
    /// messages take text only on every Chat Completions wire, so media in a tool result goes
    /// in one user message after the run of results (reported in
    /// [`crate::provider::HttpRequest::downgrades`]).
    pub media: MediaSupport,
    /// What [`crate::ChatRequest::response_format`] becomes on this wire.
    pub structured_output: StructuredOutput,
    /// The rule tool-call ids in the history must meet; ids from another provider that break
    /// it are mapped reversibly per request (Mistral: nine letters or digits, fixture
    /// `mistral/quirk_foreign_ids`).
    pub call_ids: CallIds,
    /// How `tool_choice` "required" is spelled (`"required"` on OpenAI, `"any"` in Mistral's
    /// function-calling guide, fixture `mistral/quirk_tool_choice_required`).
    pub required_tool_choice: &'static str,
    /// The wire takes OpenAI's `allowed_tools` tool choice
    /// (`{"type":"allowed_tools","allowed_tools":{"mode","tools"}}`,
    /// <https://platform.openai.com/docs/api-reference/chat/create#chat_create-tool_choice>);
    /// otherwise that choice follows the drop policy.
    pub allowed_tools_choice: bool,
    /// `content` may come as a list of typed chunks whose `thinking` chunks (each a list of
    /// text chunks) are reasoning (Mistral's Magistral models, fixture
    /// `mistral/quirk_thinking_chunks`); otherwise every part's `text` is answer text.
    pub thinking_chunks: bool,
    /// Where the sampling settings go (`top_p`, `stop`, `seed`, penalties; Mistral's
    /// `random_seed`); a setting without a name here follows the drop policy.
    pub sampling: SamplingNames,
    /// The provider's reasoning table: the form each model family takes (first match wins).
    pub reasoning: &'static [ReasoningRule],
    /// The form for models the table does not cover.
    pub reasoning_default: ReasoningForm,
}

impl Dialect {
    /// Sets [`Dialect::info`].
    pub const fn with_info(mut self, info: ProviderInfo) -> Self {
        self.info = info;
        self
    }

    /// Sets [`Dialect::path`].
    pub const fn with_path(mut self, path: &'static str) -> Self {
        self.path = path;
        self
    }

    /// Sets [`Dialect::max_tokens_field`].
    pub const fn with_max_tokens_field(mut self, max_tokens_field: &'static str) -> Self {
        self.max_tokens_field = max_tokens_field;
        self
    }

    /// Sets [`Dialect::stream_usage`].
    pub const fn with_stream_usage(mut self, stream_usage: bool) -> Self {
        self.stream_usage = stream_usage;
        self
    }

    /// Sets [`Dialect::reasoning_fields`].
    pub const fn with_reasoning_fields(
        mut self,
        reasoning_fields: &'static [ReasoningField],
    ) -> Self {
        self.reasoning_fields = reasoning_fields;
        self
    }

    /// Sets [`Dialect::echo_reasoning`].
    pub const fn with_echo_reasoning(mut self, echo_reasoning: Option<&'static str>) -> Self {
        self.echo_reasoning = echo_reasoning;
        self
    }

    /// Sets [`Dialect::reasoning_placeholder`].
    pub const fn with_reasoning_placeholder(mut self, placeholder: Option<&'static str>) -> Self {
        self.reasoning_placeholder = placeholder;
        self
    }

    /// Sets [`Dialect::reasoning_details`].
    pub const fn with_reasoning_details(mut self, field: Option<&'static str>) -> Self {
        self.reasoning_details = field;
        self
    }

    /// Sets [`Dialect::unfinished`].
    pub const fn with_unfinished(mut self, unfinished: &'static [&'static str]) -> Self {
        self.unfinished = unfinished;
        self
    }

    /// Sets [`Dialect::finish_reasons`].
    pub const fn with_finish_reasons(
        mut self,
        finish_reasons: &'static [(&'static str, FinishReason)],
    ) -> Self {
        self.finish_reasons = finish_reasons;
        self
    }

    /// Sets [`Dialect::valid_name`].
    pub const fn with_valid_name(mut self, valid_name: fn(&str) -> bool) -> Self {
        self.valid_name = valid_name;
        self
    }

    /// Sets [`Dialect::tool_choice`].
    pub const fn with_tool_choice(mut self, tool_choice: ToolChoiceSupport) -> Self {
        self.tool_choice = tool_choice;
        self
    }

    /// Sets [`Dialect::thinking_tool_choice`].
    pub const fn with_thinking_tool_choice(
        mut self,
        thinking_tool_choice: ToolChoiceSupport,
    ) -> Self {
        self.thinking_tool_choice = thinking_tool_choice;
        self
    }

    /// Sets [`Dialect::parallel_tool_calls`].
    pub const fn with_parallel_tool_calls(mut self, parallel_tool_calls: ParallelCalls) -> Self {
        self.parallel_tool_calls = parallel_tool_calls;
        self
    }

    /// Sets [`Dialect::thinking`].
    pub const fn with_thinking(mut self, thinking: ThinkingSwitch) -> Self {
        self.thinking = thinking;
        self
    }

    /// Sets [`Dialect::thinking_models`].
    pub const fn with_thinking_models(mut self, thinking_models: &'static [&'static str]) -> Self {
        self.thinking_models = thinking_models;
        self
    }

    /// Sets [`Dialect::tool_stream_models`].
    pub const fn with_tool_stream_models(
        mut self,
        tool_stream_models: &'static [&'static str],
    ) -> Self {
        self.tool_stream_models = tool_stream_models;
        self
    }

    /// Sets [`Dialect::empty_content_as_string`].
    pub const fn with_empty_content_as_string(mut self, empty_content_as_string: bool) -> Self {
        self.empty_content_as_string = empty_content_as_string;
        self
    }

    /// Sets [`Dialect::exclusive_with_tools`].
    pub const fn with_exclusive_with_tools(
        mut self,
        exclusive_with_tools: &'static [&'static str],
    ) -> Self {
        self.exclusive_with_tools = exclusive_with_tools;
        self
    }

    /// Sets [`Dialect::check_property_keys`].
    pub const fn with_check_property_keys(mut self, check_property_keys: bool) -> Self {
        self.check_property_keys = check_property_keys;
        self
    }

    /// Sets [`Dialect::calls_end_at_next_index`].
    pub const fn with_calls_end_at_next_index(mut self, calls_end_at_next_index: bool) -> Self {
        self.calls_end_at_next_index = calls_end_at_next_index;
        self
    }

    /// Sets [`Dialect::media`].
    pub const fn with_media(mut self, media: MediaSupport) -> Self {
        self.media = media;
        self
    }

    /// Sets [`Dialect::structured_output`].
    pub const fn with_structured_output(mut self, structured_output: StructuredOutput) -> Self {
        self.structured_output = structured_output;
        self
    }

    /// Sets [`Dialect::call_ids`].
    pub const fn with_call_ids(mut self, call_ids: CallIds) -> Self {
        self.call_ids = call_ids;
        self
    }

    /// Sets [`Dialect::allowed_tools_choice`].
    pub const fn with_allowed_tools_choice(mut self, allowed_tools_choice: bool) -> Self {
        self.allowed_tools_choice = allowed_tools_choice;
        self
    }

    /// Sets [`Dialect::required_tool_choice`].
    pub const fn with_required_tool_choice(mut self, required_tool_choice: &'static str) -> Self {
        self.required_tool_choice = required_tool_choice;
        self
    }

    /// Sets [`Dialect::thinking_chunks`].
    pub const fn with_thinking_chunks(mut self, thinking_chunks: bool) -> Self {
        self.thinking_chunks = thinking_chunks;
        self
    }

    /// Sets [`Dialect::sampling`].
    pub const fn with_sampling(mut self, sampling: SamplingNames) -> Self {
        self.sampling = sampling;
        self
    }

    /// Sets [`Dialect::reasoning`] and [`Dialect::reasoning_default`].
    pub const fn with_reasoning(
        mut self,
        reasoning: &'static [ReasoningRule],
        default: ReasoningForm,
    ) -> Self {
        self.reasoning = reasoning;
        self.reasoning_default = default;
        self
    }
}

/// The rule a wire puts on the tool-call ids of a history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallIds {
    /// Any non-empty text goes back as it came.
    AsGiven,
    /// Exactly this many ASCII letters or digits (Mistral: 9). An id that breaks the rule is
    /// replaced, in the call and in its results alike, by one derived from it (the same id
    /// gives the same replacement in every request) and distinct from every other id of the
    /// request; ids that meet the rule go as they are.
    Alphanumeric(usize),
}

impl CallIds {
    /// Whether `id` can go on the wire as it is.
    pub fn allows(self, id: &str) -> bool {
        match self {
            Self::AsGiven => true,
            Self::Alphanumeric(n) => id.len() == n && id.bytes().all(|b| b.is_ascii_alphanumeric()),
        }
    }
}

/// The media parts a user message takes on one wire (text parts always go as
/// `{"type": "text", "text"}`).
///
/// Non-exhaustive: take a built-in dialect's value and change it with the `const` setters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MediaSupport {
    /// How an image goes in an `image_url` part, or `None` when the wire takes no images.
    pub image: Option<InlineImage>,
    /// How a file (a PDF, a document) goes, if at all.
    pub file: FilePart,
    /// Audio as `{"type": "input_audio", "input_audio": {"data", "format"}}` (base64 only):
    /// each media type the wire takes with its `format` value. Empty: no audio.
    pub audio: &'static [(&'static str, &'static str)],
}

impl MediaSupport {
    /// Sets [`MediaSupport::image`].
    pub const fn with_image(mut self, image: Option<InlineImage>) -> Self {
        self.image = image;
        self
    }

    /// Sets [`MediaSupport::file`].
    pub const fn with_file(mut self, file: FilePart) -> Self {
        self.file = file;
        self
    }

    /// Sets [`MediaSupport::audio`].
    pub const fn with_audio(mut self, audio: &'static [(&'static str, &'static str)]) -> Self {
        self.audio = audio;
        self
    }
}

/// How inline image bytes go in `image_url.url` (a URL always goes as it is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InlineImage {
    /// A `data:<type>;base64,<data>` URL (OpenAI, Qwen, StepFun).
    DataUrl,
    /// The bare base64 text, no `data:` prefix (GLM).
    Bare,
}

/// How a file part goes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilePart {
    /// No file parts.
    None,
    /// `{"type": "file", "file": {"filename", "file_data": <data URL>}}`: inline bytes only
    /// (OpenAI; a file by URL is refused, the part takes no URL).
    FileData,
    /// `{"type": "file_url", "file_url": {"url"}}`: a URL only (GLM's vision models).
    FileUrl,
}

/// What a [`crate::types::ResponseFormat`] (an answer schema) becomes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StructuredOutput {
    /// `response_format: {"type": "json_schema", "json_schema": {"name", "description"?,
    /// "schema", "strict"?}}`, a strict schema lowered as strict tools are. Combines with tools.
    JsonSchema,
    /// As [`StructuredOutput::JsonSchema`], but not while the model thinks: the request is
    /// [`crate::Error::Unsupported`] then (Qwen documents structured output for non-thinking
    /// mode only).
    JsonSchemaNotThinking,
    /// Only `{"type": "json_object"}` is documented: an answer schema is
    /// [`crate::Error::Unsupported`] (sending it would be ignored, a silent drop).
    JsonObjectOnly,
}

/// A delta or message field that carries reasoning text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReasoningField {
    /// `reasoning_content` (DeepSeek, GLM, Qwen, vLLM).
    ReasoningContent,
    /// `reasoning` (StepFun, OpenRouter).
    Reasoning,
}

impl ReasoningField {
    /// The field's JSON name.
    pub fn name(self) -> &'static str {
        match self {
            Self::ReasoningContent => "reasoning_content",
            Self::Reasoning => "reasoning",
        }
    }
}

/// Which `tool_choice` values a wire honours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolChoiceSupport {
    /// `auto`, `none`, `required` and a named tool, in OpenAI's shapes.
    All,
    /// `auto` and `none` only.
    AutoOrNone,
    /// `auto` only.
    AutoOnly,
}

impl ToolChoiceSupport {
    /// Whether `choice` can be sent.
    pub fn allows(self, choice: &crate::types::ToolChoice) -> bool {
        use crate::types::ToolChoice;
        match self {
            Self::All => true,
            Self::AutoOrNone => matches!(choice, ToolChoice::Auto | ToolChoice::None),
            Self::AutoOnly => matches!(choice, ToolChoice::Auto),
        }
    }
}

/// How `parallel_tool_calls` goes on the wire (only ever with tools).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParallelCalls {
    /// Sent when the request sets it.
    AsAsked,
    /// Sent always: the request's value, else `true`.
    DefaultTrue,
    /// Not a documented field: never sent. `true` (permission) needs nothing; `false` cannot be
    /// promised and is [`crate::Error::Unsupported`].
    Undocumented,
}

/// How the request's reasoning (`thinking`, `reasoning`) is spelled on the wire; which values
/// a model takes is its row of [`Dialect::reasoning`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ThinkingSwitch {
    /// No setting: only models that always reason (or never do) take a reasoning request.
    NotSent,
    /// `"<field>": true | false` (Qwen `enable_thinking`).
    Flag(&'static str),
    /// `"<flag>": true | false` and a budget in `"<budget>"` (Qwen `enable_thinking` and
    /// `thinking_budget`).
    FlagBudget(&'static str, &'static str),
    /// `"<field>": {"type": "enabled" | "disabled"}` (GLM `thinking`).
    TypeObject(&'static str),
    /// `"<field>": "<level>"` (OpenAI `reasoning_effort`).
    Effort(&'static str),
    /// `"<field>": {"effort": "<level>"}` or `{"max_tokens": <budget>}` (OpenRouter's
    /// `reasoning` object).
    ReasoningObject(&'static str),
    /// `"<switch>": {"type": "enabled" | "disabled"}` and, with a level, `"<effort>": "<level>"`
    /// (DeepSeek `thinking` and `reasoning_effort`).
    TypeObjectEffort(&'static str, &'static str),
}

/// `^[a-zA-Z0-9_-]{1,64}$`: OpenAI's function-name rule (no dots).
pub fn openai_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// OpenAI itself (`api.openai.com`).
pub const OPENAI: Dialect = Dialect {
    info: ProviderInfo {
        kind: ProviderKind::OpenAi,
        base_url: "https://api.openai.com/v1",
        key_vars: &["OPENAI_API_KEY"],
        auth: Auth::Bearer,
        capabilities: "tools, parallel calls, strict schemas, streamed arguments, usage in stream",
    },
    path: "/chat/completions",
    max_tokens_field: "max_completion_tokens",
    stream_usage: true,
    reasoning_fields: &[ReasoningField::ReasoningContent, ReasoningField::Reasoning],
    echo_reasoning: None,
    reasoning_placeholder: None,
    reasoning_details: None,
    request_flags: &[],
    unfinished: &[""],
    finish_reasons: &[("function_call", FinishReason::ToolCalls)],
    valid_name: openai_name,
    tool_choice: ToolChoiceSupport::All,
    thinking_tool_choice: ToolChoiceSupport::All,
    parallel_tool_calls: ParallelCalls::AsAsked,
    // https://platform.openai.com/docs/api-reference/chat/create#chat_create-reasoning_effort
    thinking: ThinkingSwitch::Effort("reasoning_effort"),
    thinking_models: &[],
    tool_stream_models: &[],
    empty_content_as_string: false,
    exclusive_with_tools: &[],
    check_property_keys: false,
    calls_end_at_next_index: true,
    // https://platform.openai.com/docs/api-reference/chat/create (user content parts),
    // https://platform.openai.com/docs/guides/pdf-files, https://platform.openai.com/docs/guides/audio
    media: MediaSupport {
        image: Some(InlineImage::DataUrl),
        file: FilePart::FileData,
        audio: &[
            ("audio/wav", "wav"),
            ("audio/x-wav", "wav"),
            ("audio/mpeg", "mp3"),
            ("audio/mp3", "mp3"),
        ],
    },
    // https://platform.openai.com/docs/guides/structured-outputs
    structured_output: StructuredOutput::JsonSchema,
    call_ids: CallIds::AsGiven,
    required_tool_choice: "required",
    allowed_tools_choice: true,
    thinking_chunks: false,
    sampling: SamplingNames::OPENAI,
    reasoning: OPENAI_REASONING,
    reasoning_default: ReasoningForm::Levels(OPENAI_EFFORTS),
};

/// Any other OpenAI-compatible server (vLLM, Ollama, DeepSeek, a gateway): the `openai` wire
/// with the widely understood `max_tokens`, and reasoning echoed as `reasoning_content`, which
/// DeepSeek-style thinking servers require and others ignore.
pub const OPENAI_COMPATIBLE: Dialect = Dialect {
    max_tokens_field: "max_tokens",
    echo_reasoning: Some("reasoning_content"),
    calls_end_at_next_index: false,
    // No documented limit on stop sequences beyond OpenAI's own endpoint.
    sampling: SamplingNames::OPENAI.with_stop(Some("stop"), None),
    // The server's models are unknown: an effort goes as `reasoning_effort`, as asked.
    reasoning: &[],
    // An unknown server: OpenAI's allowed_tools choice is not assumed.
    allowed_tools_choice: false,
    ..OPENAI
};

/// Azure OpenAI (a deployment below `https://{resource}.openai.azure.com/openai/deployments/`):
/// OpenAI's own wire with the key in the `api-key` header, read from `AZURE_OPENAI_API_KEY`
/// (<https://learn.microsoft.com/en-us/azure/ai-services/openai/reference>, "Authentication").
/// The base URL names a deployment, so it is always given:
/// [`crate::client::Client::azure`] builds it and adds the `api-version` query parameter.
pub const AZURE_OPENAI: Dialect = Dialect {
    info: ProviderInfo {
        kind: ProviderKind::OpenAi,
        base_url: "https://{resource}.openai.azure.com/openai/deployments/{deployment}",
        key_vars: &["AZURE_OPENAI_API_KEY"],
        auth: Auth::Header("api-key"),
        capabilities: "OpenAI's wire on an Azure deployment: api-key or Entra ID bearer auth",
    },
    ..OPENAI
};
