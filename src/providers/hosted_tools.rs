//! [`HostedTool`]s in each provider's form: the kinds each provider offers, with the options
//! that map; anything else refused by name, or left out and listed with `drop_unsupported`.

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::provider::{Dropped, ProviderKind};
use crate::types::{ChatRequest, HostedTool, SearchOptions};

/// The request's hosted tools as one provider takes them.
#[derive(Debug, Default)]
pub(crate) struct Placed {
    /// Entries for the body's tool list, in the request's order.
    pub(crate) tools: Vec<Value>,
    /// Headers the tools need (Anthropic beta flags), each once.
    pub(crate) headers: Vec<(String, String)>,
    /// Top-level body fields (Anthropic `mcp_servers`).
    pub(crate) top: Vec<(String, Value)>,
    /// Tools or options left out (with `drop_unsupported`).
    pub(crate) dropped: Vec<Dropped>,
}

impl Placed {
    fn beta(&mut self, flag: &str) {
        if let Some((_, v)) = self.headers.iter_mut().find(|(k, _)| k == "anthropic-beta") {
            if !v.split(',').any(|f| f == flag) {
                v.push(',');
                v.push_str(flag);
            }
        } else {
            self.headers.push(("anthropic-beta".into(), flag.into()));
        }
    }
}

/// One tool or option the provider lacks: refused, or left out with a note.
fn lacks(
    kind: ProviderKind,
    req: &ChatRequest,
    setting: String,
    why: &str,
    placed: &mut Placed,
) -> Result<()> {
    if req.drop_unsupported {
        placed.dropped.push(Dropped::new(setting, why));
        Ok(())
    } else {
        Err(Error::unsupported(
            kind,
            format!("{setting}: {why} (set drop_unsupported to leave it out)"),
        ))
    }
}

/// Checks that the options `kind` has no place for are unset (each refused or dropped).
fn options(
    kind: ProviderKind,
    req: &ChatRequest,
    at: &str,
    o: &SearchOptions,
    has: &[&str],
    placed: &mut Placed,
) -> Result<()> {
    let set = [
        ("max_uses", o.max_uses.is_some()),
        ("allowed_domains", !o.allowed_domains.is_empty()),
        ("blocked_domains", !o.blocked_domains.is_empty()),
        ("user_location", o.user_location.is_some()),
    ];
    for (name, is_set) in set {
        if is_set && !has.contains(&name) {
            let why = format!("{kind} has no {name} for this tool");
            lacks(kind, req, format!("{at}.{name}"), &why, placed)?;
        }
    }
    Ok(())
}

fn insert_search(t: &mut Map<String, Value>, o: &SearchOptions, location: bool) {
    if let Some(n) = o.max_uses {
        t.insert("max_uses".into(), json!(n));
    }
    if !o.allowed_domains.is_empty() {
        t.insert("allowed_domains".into(), json!(o.allowed_domains));
    }
    if !o.blocked_domains.is_empty() {
        t.insert("blocked_domains".into(), json!(o.blocked_domains));
    }
    if let (true, Some(l)) = (location, &o.user_location) {
        t.insert("user_location".into(), l.clone());
    }
}

/// The request's hosted tools for `kind` (the four providers with hosted tools; every other
/// provider refuses them, or drops them with `drop_unsupported`).
pub(crate) fn place(kind: ProviderKind, req: &ChatRequest) -> Result<Placed> {
    let mut placed = Placed::default();
    for (i, tool) in req.hosted_tools.iter().enumerate() {
        let at = format!("hosted_tools[{i}]");
        if let HostedTool::Provider { provider, tool } = tool {
            if provider == kind.name() {
                placed.tools.push(tool.clone());
            } else {
                let kind_name = tool
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("untyped");
                let why =
                    format!("a {provider} tool (type {kind_name:?}), sent to {provider} only");
                lacks(kind, req, at, &why, &mut placed)?;
            }
            continue;
        }
        let entry = match kind {
            ProviderKind::Anthropic => anthropic(req, &at, tool, &mut placed)?,
            ProviderKind::OpenAiResponses => responses(req, &at, tool, &mut placed)?,
            ProviderKind::Gemini => gemini(req, &at, tool, &mut placed)?,
            ProviderKind::Bedrock => bedrock(req, &at, tool, &mut placed)?,
            _ => None,
        };
        match entry {
            Some(Some(t)) => placed.tools.push(t),
            // Placed elsewhere than the tool list (Anthropic's MCP servers).
            Some(None) => {}
            None => {
                let why = format!("{kind} has no hosted {} tool", tool.kind());
                lacks(
                    kind,
                    req,
                    format!("{at} ({})", tool.kind()),
                    &why,
                    &mut placed,
                )?;
            }
        }
    }
    Ok(placed)
}

/// `None`: the provider has no such tool; `Some(None)`: placed outside the tool list.
type Entry = Option<Option<Value>>;

/// Anthropic: the versioned server tools, with their beta flags where they need one.
fn anthropic(req: &ChatRequest, at: &str, tool: &HostedTool, p: &mut Placed) -> Result<Entry> {
    const K: ProviderKind = ProviderKind::Anthropic;
    let mut t = Map::new();
    match tool {
        HostedTool::WebSearch(o) => {
            t.insert("type".into(), json!("web_search_20250305"));
            t.insert("name".into(), json!("web_search"));
            insert_search(&mut t, o, true);
        }
        HostedTool::WebFetch(o) => {
            options(
                K,
                req,
                at,
                o,
                &["max_uses", "allowed_domains", "blocked_domains"],
                p,
            )?;
            t.insert("type".into(), json!("web_fetch_20250910"));
            t.insert("name".into(), json!("web_fetch"));
            insert_search(&mut t, o, false);
            p.beta("web-fetch-2025-09-10");
        }
        HostedTool::CodeExecution => {
            t.insert("type".into(), json!("code_execution_20250825"));
            t.insert("name".into(), json!("code_execution"));
            p.beta("code-execution-2025-08-25");
        }
        HostedTool::ToolSearch => {
            t.insert("type".into(), json!("tool_search_tool_regex_20251119"));
            t.insert("name".into(), json!("tool_search_tool_regex"));
            p.beta("advanced-tool-use-2025-11-20");
        }
        HostedTool::Mcp {
            server_label,
            server_url,
            authorization,
            allowed_tools,
        } => {
            let mut server = Map::new();
            server.insert("type".into(), json!("url"));
            server.insert("url".into(), json!(server_url));
            server.insert("name".into(), json!(server_label));
            if let Some(token) = authorization {
                server.insert("authorization_token".into(), json!(token));
            }
            if !allowed_tools.is_empty() {
                server.insert(
                    "tool_configuration".into(),
                    json!({"enabled": true, "allowed_tools": allowed_tools}),
                );
            }
            match p.top.iter_mut().find(|(k, _)| k == "mcp_servers") {
                Some((_, Value::Array(list))) => list.push(Value::Object(server)),
                _ => p
                    .top
                    .push(("mcp_servers".into(), json!([Value::Object(server)]))),
            }
            p.beta("mcp-client-2025-04-04");
            return Ok(Some(None));
        }
        HostedTool::FileSearch { .. } | HostedTool::Provider { .. } => return Ok(None),
    }
    Ok(Some(Some(Value::Object(t))))
}

/// Responses: `web_search` (allowed domains as `filters`, user location), `file_search`,
/// `code_interpreter` (an automatic container), `mcp`, `tool_search`.
fn responses(req: &ChatRequest, at: &str, tool: &HostedTool, p: &mut Placed) -> Result<Entry> {
    const K: ProviderKind = ProviderKind::OpenAiResponses;
    Ok(Some(Some(match tool {
        HostedTool::WebSearch(o) => {
            options(K, req, at, o, &["allowed_domains", "user_location"], p)?;
            let mut t = Map::new();
            t.insert("type".into(), json!("web_search"));
            if !o.allowed_domains.is_empty() {
                t.insert(
                    "filters".into(),
                    json!({"allowed_domains": o.allowed_domains}),
                );
            }
            if let Some(l) = &o.user_location {
                t.insert("user_location".into(), l.clone());
            }
            Value::Object(t)
        }
        HostedTool::FileSearch {
            store_ids,
            max_results,
        } => {
            let mut t = Map::new();
            t.insert("type".into(), json!("file_search"));
            t.insert("vector_store_ids".into(), json!(store_ids));
            if let Some(n) = max_results {
                t.insert("max_num_results".into(), json!(n));
            }
            Value::Object(t)
        }
        HostedTool::CodeExecution => {
            json!({"type": "code_interpreter", "container": {"type": "auto"}})
        }
        HostedTool::ToolSearch => json!({"type": "tool_search"}),
        HostedTool::Mcp {
            server_label,
            server_url,
            authorization,
            allowed_tools,
        } => {
            let mut t = Map::new();
            t.insert("type".into(), json!("mcp"));
            t.insert("server_label".into(), json!(server_label));
            t.insert("server_url".into(), json!(server_url));
            if let Some(token) = authorization {
                t.insert("authorization".into(), json!(token));
            }
            if !allowed_tools.is_empty() {
                t.insert("allowed_tools".into(), json!(allowed_tools));
            }
            Value::Object(t)
        }
        HostedTool::WebFetch(_) | HostedTool::Provider { .. } => return Ok(None),
    })))
}

/// Gemini: `google_search`, `url_context`, `code_execution`, `file_search`; none of them
/// takes search options.
fn gemini(req: &ChatRequest, at: &str, tool: &HostedTool, p: &mut Placed) -> Result<Entry> {
    const K: ProviderKind = ProviderKind::Gemini;
    Ok(Some(Some(match tool {
        HostedTool::WebSearch(o) => {
            options(K, req, at, o, &[], p)?;
            json!({"google_search": {}})
        }
        HostedTool::WebFetch(o) => {
            options(K, req, at, o, &[], p)?;
            json!({"url_context": {}})
        }
        HostedTool::CodeExecution => json!({"code_execution": {}}),
        HostedTool::FileSearch {
            store_ids,
            max_results,
        } => {
            if max_results.is_some() {
                let why = "gemini's file_search has no result limit";
                lacks(K, req, format!("{at}.max_results"), why, p)?;
            }
            json!({"file_search": {"file_search_store_names": store_ids}})
        }
        _ => return Ok(None),
    })))
}

/// Bedrock: Nova's system tools, `nova_grounding` (web search) and `nova_code_interpreter`.
fn bedrock(req: &ChatRequest, at: &str, tool: &HostedTool, p: &mut Placed) -> Result<Entry> {
    const K: ProviderKind = ProviderKind::Bedrock;
    Ok(Some(Some(match tool {
        HostedTool::WebSearch(o) => {
            options(K, req, at, o, &[], p)?;
            json!({"systemTool": {"name": "nova_grounding"}})
        }
        HostedTool::CodeExecution => json!({"systemTool": {"name": "nova_code_interpreter"}}),
        _ => return Ok(None),
    })))
}

#[cfg(feature = "respond")]
/// Search options from a client's tool object (`max_uses`, `allowed_domains`,
/// `blocked_domains`, `user_location`); `None` when a field has an unexpected type.
fn read_options(tool: &Map<String, Value>, allowed: Option<&Value>) -> Option<SearchOptions> {
    let strings = |v: Option<&Value>| -> Option<Vec<String>> {
        match v {
            None | Some(Value::Null) => Some(Vec::new()),
            Some(Value::Array(list)) => {
                list.iter().map(|s| s.as_str().map(str::to_owned)).collect()
            }
            Some(_) => None,
        }
    };
    let max_uses = match tool.get("max_uses") {
        None | Some(Value::Null) => None,
        Some(v) => Some(u32::try_from(v.as_u64()?).ok()?),
    };
    Some(SearchOptions {
        max_uses,
        allowed_domains: strings(allowed.or_else(|| tool.get("allowed_domains")))?,
        blocked_domains: strings(tool.get("blocked_domains"))?,
        user_location: tool.get("user_location").filter(|v| !v.is_null()).cloned(),
    })
}

#[cfg(feature = "respond")]
/// Whether `tool` has only these keys (anything else: the tool goes verbatim, not mapped).
fn only(tool: &Map<String, Value>, keys: &[&str]) -> bool {
    tool.keys().all(|k| keys.contains(&k.as_str()))
}

#[cfg(feature = "respond")]
/// A Messages client's server tool as a [`HostedTool`]: `web_search_*`, `web_fetch_*`,
/// `code_execution_*` and `tool_search_tool_*` with the options that map; any other typed tool
/// (bash, text editor, computer, memory, or one with options toolwire has no name for) as a
/// verbatim Anthropic tool. `None` for a client tool (no type, or `custom`).
pub(crate) fn read_anthropic(tool: &Value) -> Option<HostedTool> {
    let Value::Object(t) = tool else { return None };
    let kind = t.get("type").and_then(Value::as_str)?;
    if kind == "custom" {
        return None;
    }
    let verbatim = || HostedTool::Provider {
        provider: ProviderKind::Anthropic.name().into(),
        tool: tool.clone(),
    };
    let search = [
        "type",
        "name",
        "max_uses",
        "allowed_domains",
        "blocked_domains",
    ];
    let mapped = if kind.starts_with("web_search_")
        && only(t, &[&search[..], &["user_location"]].concat())
    {
        read_options(t, None).map(HostedTool::WebSearch)
    } else if kind.starts_with("web_fetch_") && only(t, &search) {
        read_options(t, None).map(HostedTool::WebFetch)
    } else if kind.starts_with("code_execution_") && only(t, &["type", "name"]) {
        Some(HostedTool::CodeExecution)
    } else if kind.starts_with("tool_search_tool_") && only(t, &["type", "name"]) {
        Some(HostedTool::ToolSearch)
    } else {
        None
    };
    Some(mapped.unwrap_or_else(verbatim))
}

#[cfg(feature = "respond")]
/// A Responses client's hosted tool as a [`HostedTool`]: `web_search` (and
/// `web_search_preview`), `file_search`, `code_interpreter`, `mcp` and `tool_search` with the
/// options that map; any other (image generation, computer use, shell, or options toolwire has
/// no name for) as a verbatim Responses tool. `None` for a function or custom tool.
pub(crate) fn read_responses(tool: &Value) -> Option<HostedTool> {
    let Value::Object(t) = tool else { return None };
    let kind = t.get("type").and_then(Value::as_str).unwrap_or("function");
    if matches!(kind, "function" | "custom") {
        return None;
    }
    let verbatim = || HostedTool::Provider {
        provider: ProviderKind::OpenAiResponses.name().into(),
        tool: tool.clone(),
    };
    let text = |k: &str| t.get(k).and_then(Value::as_str).map(str::to_owned);
    let mapped = match kind {
        "web_search" | "web_search_preview" if only(t, &["type", "filters", "user_location"]) => {
            let filters = t.get("filters").and_then(Value::as_object);
            if filters.is_some_and(|f| !only(f, &["allowed_domains"])) {
                None
            } else {
                let allowed = filters.and_then(|f| f.get("allowed_domains"));
                read_options(t, allowed).map(HostedTool::WebSearch)
            }
        }
        "file_search" if only(t, &["type", "vector_store_ids", "max_num_results"]) => {
            let ids = t.get("vector_store_ids").and_then(Value::as_array);
            let ids: Option<Vec<String>> = ids.map(|l| {
                l.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            });
            let max = t.get("max_num_results").and_then(Value::as_u64);
            ids.map(|store_ids| HostedTool::FileSearch {
                store_ids,
                max_results: max.and_then(|n| u32::try_from(n).ok()),
            })
        }
        "code_interpreter"
            if only(t, &["type", "container"])
                && t.get("container")
                    .is_none_or(|c| c.get("type").and_then(Value::as_str) == Some("auto")) =>
        {
            Some(HostedTool::CodeExecution)
        }
        "tool_search" if only(t, &["type"]) => Some(HostedTool::ToolSearch),
        "mcp"
            if only(
                t,
                &[
                    "type",
                    "server_label",
                    "server_url",
                    "authorization",
                    "allowed_tools",
                ],
            ) =>
        {
            let allowed = t.get("allowed_tools").and_then(Value::as_array).map(|l| {
                l.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            });
            match (text("server_label"), text("server_url")) {
                (Some(server_label), Some(server_url)) => Some(HostedTool::Mcp {
                    server_label,
                    server_url,
                    authorization: text("authorization"),
                    allowed_tools: allowed.unwrap_or_default(),
                }),
                _ => None,
            }
        }
        _ => None,
    };
    Some(mapped.unwrap_or_else(verbatim))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Message;

    fn req(tools: Vec<HostedTool>) -> ChatRequest {
        ChatRequest::new("m", vec![Message::user("hi")]).with_hosted_tools(tools)
    }

    #[test]
    fn each_kind_goes_where_it_exists_and_is_refused_by_name_elsewhere() {
        let search = HostedTool::WebSearch(
            SearchOptions::default()
                .with_max_uses(3)
                .with_allowed_domains(["example.org"]),
        );
        let a = place(ProviderKind::Anthropic, &req(vec![search.clone()])).unwrap();
        assert_eq!(
            a.tools,
            [
                json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 3, "allowed_domains": ["example.org"]})
            ]
        );
        // Responses has no max_uses: refused by name, or dropped with a note.
        let err = place(ProviderKind::OpenAiResponses, &req(vec![search.clone()])).unwrap_err();
        assert!(matches!(err, Error::Unsupported { .. }), "{err}");
        assert!(
            err.to_string().contains("hosted_tools[0].max_uses"),
            "{err}"
        );
        let dropped = place(
            ProviderKind::OpenAiResponses,
            &req(vec![search.clone()]).with_drop_unsupported(true),
        )
        .unwrap();
        assert_eq!(
            dropped.tools,
            [json!({"type": "web_search", "filters": {"allowed_domains": ["example.org"]}})]
        );
        assert_eq!(dropped.dropped[0].setting, "hosted_tools[0].max_uses");
        // A provider without hosted tools refuses the tool by its kind.
        let err = place(ProviderKind::OpenAi, &req(vec![HostedTool::CodeExecution])).unwrap_err();
        assert!(err.to_string().contains("code_execution"), "{err}");
        let g = place(
            ProviderKind::Gemini,
            &req(vec![HostedTool::web_search(), HostedTool::CodeExecution]),
        )
        .unwrap();
        assert_eq!(
            g.tools,
            [json!({"google_search": {}}), json!({"code_execution": {}})]
        );
        let b = place(ProviderKind::Bedrock, &req(vec![HostedTool::CodeExecution])).unwrap();
        assert_eq!(
            b.tools,
            [json!({"systemTool": {"name": "nova_code_interpreter"}})]
        );
    }

    #[test]
    fn anthropic_beta_flags_and_mcp_servers() {
        let mcp = HostedTool::Mcp {
            server_label: "docs".into(),
            server_url: "https://mcp.example.org/sse".into(),
            authorization: None,
            allowed_tools: vec![],
        };
        let p = place(
            ProviderKind::Anthropic,
            &req(vec![HostedTool::CodeExecution, mcp, HostedTool::ToolSearch]),
        )
        .unwrap();
        assert_eq!(p.tools.len(), 2);
        assert_eq!(
            p.headers,
            [(
                "anthropic-beta".to_owned(),
                "code-execution-2025-08-25,mcp-client-2025-04-04,advanced-tool-use-2025-11-20"
                    .to_owned()
            )]
        );
        assert_eq!(p.top[0].0, "mcp_servers");
        assert_eq!(p.top[0].1[0]["url"], "https://mcp.example.org/sse");
        let verbatim = HostedTool::Provider {
            provider: "anthropic".into(),
            tool: json!({"type": "memory_20250818", "name": "memory"}),
        };
        let p = place(ProviderKind::Anthropic, &req(vec![verbatim.clone()])).unwrap();
        assert_eq!(p.tools[0]["name"], "memory");
        assert!(place(ProviderKind::Gemini, &req(vec![verbatim])).is_err());
    }

    #[cfg(feature = "respond")]
    #[test]
    fn client_tools_read_back_as_hosted_tools() {
        let search = json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 2, "blocked_domains": ["x.org"]});
        assert_eq!(
            read_anthropic(&search),
            Some(HostedTool::WebSearch(
                SearchOptions::default()
                    .with_max_uses(2)
                    .with_blocked_domains(["x.org"])
            ))
        );
        let bash = json!({"type": "bash_20250124", "name": "bash"});
        assert!(matches!(
            read_anthropic(&bash),
            Some(HostedTool::Provider { .. })
        ));
        assert_eq!(
            read_anthropic(&json!({"name": "f", "input_schema": {}})),
            None
        );
        let ws = json!({"type": "web_search", "filters": {"allowed_domains": ["a.org"]}});
        assert_eq!(
            read_responses(&ws),
            Some(HostedTool::WebSearch(
                SearchOptions::default().with_allowed_domains(["a.org"])
            ))
        );
        let ci = json!({"type": "code_interpreter", "container": {"type": "auto"}});
        assert_eq!(read_responses(&ci), Some(HostedTool::CodeExecution));
        let image = json!({"type": "image_generation"});
        assert!(matches!(
            read_responses(&image),
            Some(HostedTool::Provider { .. })
        ));
        assert_eq!(
            read_responses(&json!({"type": "function", "name": "f"})),
            None
        );
    }
}
