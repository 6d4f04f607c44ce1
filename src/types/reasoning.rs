//! Reasoning settings of a request: how hard the model thinks, with what budget, and what
//! summary of its thinking comes back.

use serde::{Deserialize, Serialize};

/// How hard a model reasons before answering, from `none` (no reasoning) to `max`. Each wire
/// gets it in the form the target model takes: a level of its own, a token budget, or an
/// on/off switch (see the reasoning table of each provider's quirk sheet). JSON and the CLI
/// spell each value as [`Effort::as_str`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Effort {
    /// No reasoning: turned off where the model allows it, refused by name where it does not.
    None,
    /// The least reasoning short of none.
    Minimal,
    /// Little reasoning.
    Low,
    /// Balanced.
    Medium,
    /// Much reasoning.
    High,
    /// More than high, where the model has such a level.
    Xhigh,
    /// The most the model offers.
    Max,
}

impl Effort {
    /// Every level, lowest first.
    pub const ALL: [Self; 7] = [
        Self::None,
        Self::Minimal,
        Self::Low,
        Self::Medium,
        Self::High,
        Self::Xhigh,
        Self::Max,
    ];

    /// The level's name, as JSON and `--effort` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
            Self::Max => "max",
        }
    }
}

impl std::fmt::Display for Effort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Effort {
    type Err = crate::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|e| e.as_str()).collect();
                crate::Error::input(
                    "reasoning.effort",
                    format!("unknown effort {s:?}; one of {}", names.join(", ")),
                )
            })
    }
}

/// How much of the model's reasoning comes back as a summary, on wires that summarise it
/// (OpenAI Responses `reasoning.summary`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ReasoningSummary {
    /// The most detailed summary the model offers.
    Auto,
    /// A short summary.
    Concise,
    /// A long summary.
    Detailed,
}

impl ReasoningSummary {
    /// The value's name, as JSON spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Concise => "concise",
            Self::Detailed => "detailed",
        }
    }
}

/// The reasoning settings of a request. JSON:
/// `{"effort": "high", "budget_tokens": 4096, "summary": "auto"}`, each optional.
///
/// `effort` and `budget_tokens` may be given together: a wire that takes a level gets the
/// level, one that takes a budget gets the budget (or the effort mapped to its documented
/// budgets when no budget is given). `effort: "none"` with a budget is an input error.
///
/// Non-exhaustive: build it with [`Reasoning::effort`] or [`Reasoning::budget`] and the
/// `with_*` setters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Reasoning {
    /// How hard the model reasons; `None` leaves the model's default (or the budget decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// A token budget for the reasoning, on wires that take one (at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u32>,
    /// What summary of the reasoning comes back, on wires that summarise it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<ReasoningSummary>,
}

impl Reasoning {
    /// Reasoning at `effort`.
    pub fn effort(effort: Effort) -> Self {
        Self {
            effort: Some(effort),
            ..Self::default()
        }
    }

    /// Reasoning with a token budget.
    pub fn budget(budget_tokens: u32) -> Self {
        Self {
            budget_tokens: Some(budget_tokens),
            ..Self::default()
        }
    }

    /// Sets the effort.
    pub fn with_effort(mut self, effort: Effort) -> Self {
        self.effort = Some(effort);
        self
    }

    /// Sets the token budget.
    pub fn with_budget_tokens(mut self, budget_tokens: u32) -> Self {
        self.budget_tokens = Some(budget_tokens);
        self
    }

    /// Sets the summary.
    pub fn with_summary(mut self, summary: ReasoningSummary) -> Self {
        self.summary = Some(summary);
        self
    }
}
