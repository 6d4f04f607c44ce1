//! Searching a registry's deferred tools by words: what the agent's `search_tools` tool runs
//! on providers without tool search of their own (see [`crate::agent::DeferredLoading`]).
//!
//! Scoring is plain and deterministic, with no pattern from the model ever compiled: the
//! query and each tool's name and description are cut into lowercase words (at every
//! character that is not a letter or digit, and between a lowercase letter or digit and an
//! uppercase one, so `getWeather` and `get_weather` both give `get`, `weather`; a final `s` is
//! dropped from words longer than three characters, so `emails` finds `email`). Each distinct
//! query word (common English words such as `the` left out) adds the best of:
//!
//! | the word …                                      | points |
//! |-------------------------------------------------|--------|
//! | is a word of the tool's name                    | 6      |
//! | begins a word of the name (3 characters or more) | 3      |
//! | is a word of the description                    | 2      |
//! | begins a word of the description (3 or more)    | 1      |
//!
//! and a query that is exactly a tool's name (letter case aside) adds 10 to that tool. Tools
//! with no points are not listed; ties keep registration order. One search reads each tool's
//! name and description once: linear in the registry's size, with the query bounded to
//! [`MAX_QUERY_BYTES`] and [`MAX_QUERY_TERMS`] words and the answer to [`MAX_SEARCH_LIMIT`]
//! tools.

use serde_json::json;

use crate::types::ToolDefinition;

/// The name of the search tool the agent offers when some tools are deferred.
pub const SEARCH_TOOL_NAME: &str = "search_tools";

/// How many tools one search lists when the model gives no `limit`.
pub const DEFAULT_SEARCH_LIMIT: usize = 5;

/// The most tools one search lists, whatever the model asks for.
pub const MAX_SEARCH_LIMIT: usize = 20;

/// The longest query read (longer queries are cut at a character boundary).
pub const MAX_QUERY_BYTES: usize = 1024;

/// The most distinct query words scored (later words are ignored).
pub const MAX_QUERY_TERMS: usize = 32;

/// The longest description a search result shows (longer ones end with `…`).
pub const MAX_LISTED_DESCRIPTION_BYTES: usize = 1024;

/// Words too common to tell tools apart; a query made only of them matches nothing.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "any", "are", "by", "can", "for", "from", "how", "i", "in", "is", "it", "me",
    "my", "of", "on", "or", "that", "the", "this", "to", "tool", "tools", "with",
];

/// One tool a search found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolMatch {
    /// The tool's name.
    pub name: String,
    /// Its description (cut to [`MAX_LISTED_DESCRIPTION_BYTES`]).
    pub description: String,
    /// Its score (see the module docs); higher is better.
    pub score: u32,
}

/// The definition of the agent's search tool: a `query` string and an optional `limit`
/// (1 to [`MAX_SEARCH_LIMIT`], [`DEFAULT_SEARCH_LIMIT`] when left out).
pub fn search_tool_definition() -> ToolDefinition {
    let parameters = json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_QUERY_BYTES,
                "description": "Words describing what the tool should do, e.g. \"send email\" or \"weather forecast\"."
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_SEARCH_LIMIT,
                "description": format!("How many tools to list at most (default {DEFAULT_SEARCH_LIMIT}).")
            }
        },
        "required": ["query"],
        "additionalProperties": false
    });
    let description = "Search the catalog of tools that are not loaded yet, by words about what \
                       they do. Lists the matching tools by name and description; the tools \
                       found can be called from the next step on.";
    // Both values are constants that satisfy the checks; a failure here is a bug in this file.
    ToolDefinition::new(SEARCH_TOOL_NAME, description)
        .and_then(|d| d.with_parameters(parameters))
        .unwrap_or_else(|e| unreachable!("the search tool's own definition is valid: {e}"))
}

/// The query's distinct words, in order, without stop words, bounded.
pub(crate) struct Query {
    terms: Vec<String>,
    whole: String,
}

impl Query {
    /// Reads `text` (cut to [`MAX_QUERY_BYTES`]).
    pub(crate) fn new(text: &str) -> Self {
        let text = &text[..super::dispatch::floor_char_boundary(text, MAX_QUERY_BYTES)];
        let mut terms: Vec<String> = Vec::new();
        for_words(text, |w| {
            if terms.len() < MAX_QUERY_TERMS
                && !STOP_WORDS.contains(&w)
                && !terms.iter().any(|t| t == w)
            {
                terms.push(w.to_owned());
            }
        });
        Self {
            terms,
            whole: text.trim().to_lowercase(),
        }
    }

    /// Whether no word is left to search for.
    pub(crate) fn is_empty(&self) -> bool {
        self.terms.is_empty() && self.whole.is_empty()
    }

    /// The score of a tool (0: no match).
    pub(crate) fn score(&self, name: &str, description: &str) -> u32 {
        // At most MAX_QUERY_TERMS terms: no allocation per tool.
        let mut best = [0u32; MAX_QUERY_TERMS];
        let mut mark = |word: &str, exact: u32, prefix: u32| {
            for (term, best) in self.terms.iter().zip(best.iter_mut()) {
                let points = if word == term {
                    exact
                } else if term.len() >= 3 && word.starts_with(term.as_str()) {
                    prefix
                } else {
                    0
                };
                *best = (*best).max(points);
            }
        };
        for_words(name, |w| mark(w, 6, 3));
        for_words(description, |w| mark(w, 2, 1));
        let mut score: u32 = best.iter().sum();
        if !self.whole.is_empty() && name.eq_ignore_ascii_case(&self.whole) {
            score += 10;
        }
        score
    }
}

/// Calls `f` with each normalised word of `text` (see the module docs), all through one
/// buffer (no allocation per word).
fn for_words(text: &str, mut f: impl FnMut(&str)) {
    let mut word = String::new();
    let mut prev_lower = false;
    let mut flush = |word: &mut String| {
        if word.is_empty() {
            return;
        }
        let w = match word.strip_suffix('s') {
            Some(stem) if word.len() > 3 => stem,
            _ => word.as_str(),
        };
        f(w);
        word.clear();
    };
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower {
                flush(&mut word);
            }
            prev_lower = c.is_lowercase() || c.is_numeric();
            word.extend(c.to_lowercase());
        } else {
            flush(&mut word);
            prev_lower = false;
        }
    }
    flush(&mut word);
}

/// The best `limit` of scored tools, kept as they come: (score, order), best first, ties in
/// order. Holds at most `limit` entries.
pub(crate) struct TopK {
    limit: usize,
    kept: Vec<(u32, usize)>,
}

impl TopK {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            kept: Vec::with_capacity(limit.min(MAX_SEARCH_LIMIT)),
        }
    }

    /// Offers the tool at `order` with `score` (0 is never kept).
    pub(crate) fn offer(&mut self, score: u32, order: usize) {
        if score == 0 || self.limit == 0 {
            return;
        }
        // Orders arrive increasing, so a tie goes after the kept ones.
        let at = self.kept.partition_point(|(s, _)| *s >= score);
        if at < self.limit {
            if self.kept.len() == self.limit {
                self.kept.pop();
            }
            self.kept.insert(at, (score, order));
        }
    }

    /// The kept (score, order) pairs, best first.
    pub(crate) fn into_sorted(self) -> Vec<(u32, usize)> {
        self.kept
    }
}

/// `text` cut to [`MAX_LISTED_DESCRIPTION_BYTES`], ending with `…` when cut.
pub(crate) fn listed_description(text: &str) -> String {
    if text.len() <= MAX_LISTED_DESCRIPTION_BYTES {
        return text.to_owned();
    }
    let keep = super::dispatch::floor_char_boundary(text, MAX_LISTED_DESCRIPTION_BYTES - 3);
    format!("{}…", &text[..keep])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_words(text, |w| out.push(w.to_owned()));
        out
    }

    #[test]
    fn words_split_at_case_changes_and_punctuation() {
        assert_eq!(words("getWeather"), ["get", "weather"]);
        assert_eq!(words("get_weather-now.v2"), ["get", "weather", "now", "v2"]);
        assert_eq!(words("Send EMAILS, fast!"), ["send", "email", "fast"]);
        assert_eq!(words("HTTPServer"), ["httpserver"]);
        assert_eq!(words(""), Vec::<String>::new());
    }

    #[test]
    fn name_words_outscore_description_words() {
        let q = Query::new("send email");
        let by_name = q.score("send_email", "Delivers a message");
        let by_description = q.score("notify", "Send an email to someone");
        assert_eq!(by_name, 12);
        assert_eq!(by_description, 4);
        assert_eq!(q.score("weather", "Forecast"), 0);
        // A prefix of three characters or more counts, less than the whole word.
        assert_eq!(Query::new("ema").score("email_send", ""), 3);
        assert_eq!(Query::new("em").score("email_send", ""), 0);
        // The exact name adds a bonus.
        assert_eq!(Query::new("Send_Email").score("send_email", ""), 22);
    }

    #[test]
    fn queries_are_bounded_and_stop_words_dropped() {
        let q = Query::new("the tool to send");
        assert_eq!(q.terms, ["send"]);
        let long: String = (0..100).map(|i| format!("w{i} ")).collect();
        assert_eq!(Query::new(&long).terms.len(), MAX_QUERY_TERMS);
        let huge = "é".repeat(MAX_QUERY_BYTES);
        assert!(Query::new(&huge).whole.len() <= MAX_QUERY_BYTES);
    }

    #[test]
    fn top_k_keeps_the_best_in_order() {
        let mut top = TopK::new(3);
        for (order, score) in [1, 5, 0, 5, 2, 9, 1].into_iter().enumerate() {
            top.offer(score, order);
        }
        assert_eq!(top.into_sorted(), [(9, 5), (5, 1), (5, 3)]);
    }

    #[test]
    fn long_descriptions_are_cut_visibly() {
        let d = listed_description(&"x".repeat(5000));
        assert!(d.len() <= MAX_LISTED_DESCRIPTION_BYTES && d.ends_with('…'));
        assert_eq!(listed_description("short"), "short");
    }
}
