//! Deferred loading on the loopback mock: a registry of thousands of deferred tools sends only
//! the tools the model found with the agent's `search_tools` (on any provider), or, in the
//! provider mode, every tool with `defer_loading` and the provider's own tool search where the
//! provider has one. Every assertion is on the requests the mock received.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use toolwire::agent::{Agent, DeferredLoading};
use toolwire::mock::{MockReply, MockServer, RecordedRequest, Script};
use toolwire::tools::{MAX_SEARCH_LIMIT, SEARCH_TOOL_NAME, Tool, ToolRegistry, ToolSelection};
use toolwire::{ChatRequest, Client, Error, Message, ProviderKind, ToolCall, ToolDefinition};

const SERVICES: [&str; 25] = [
    "jira",
    "github",
    "gitlab",
    "slack",
    "stripe",
    "zendesk",
    "hubspot",
    "notion",
    "asana",
    "trello",
    "dropbox",
    "box",
    "salesforce",
    "shopify",
    "twilio",
    "sendgrid",
    "airtable",
    "linear",
    "figma",
    "okta",
    "pagerduty",
    "datadog",
    "sentry",
    "calendly",
    "zoom",
];
const VERBS: [&str; 8] = [
    "list", "create", "delete", "update", "get", "archive", "export", "sync",
];
const NOUNS: [&str; 25] = [
    "ticket", "issue", "comment", "user", "invoice", "payment", "channel", "message", "page",
    "task", "board", "file", "folder", "lead", "order", "product", "call", "record", "project",
    "design", "group", "incident", "metric", "event", "meeting",
];

/// 25 × 8 × 25 = 5,000 deferred tools, `<service>_<verb>_<noun>`, each counting its calls.
fn catalog(registry: &ToolRegistry, calls: &Arc<AtomicUsize>) {
    for service in SERVICES {
        for verb in VERBS {
            for noun in NOUNS {
                let name = format!("{service}_{verb}_{noun}");
                let description = format!("{verb} a {noun} in {service}");
                let parameters = json!({
                    "type": "object",
                    "properties": {"id": {"type": "string"}},
                    "required": ["id"]
                });
                let definition = ToolDefinition::new(&name, description)
                    .unwrap()
                    .with_parameters(parameters)
                    .unwrap();
                let calls = Arc::clone(calls);
                let tool = Tool::from_fn(definition, move |args: Value| {
                    calls.fetch_add(1, Ordering::SeqCst);
                    let name = name.clone();
                    async move { Ok(json!({"done": name, "id": args["id"]})) }
                });
                registry.register(tool.deferred()).unwrap();
            }
        }
    }
}

/// Two tools that are always sent.
fn always_loaded(registry: &ToolRegistry) {
    for name in ["get_time", "ask_user"] {
        registry
            .register_fn(name, "Always there", json!({"type": "object"}), |_| async {
                Ok(json!("ok"))
            })
            .unwrap();
    }
}

/// The function tools' names a request carried, in order, on each wire's tool list.
fn tool_names(r: &RecordedRequest) -> Vec<String> {
    let tools = r.body["tools"].as_array().cloned().unwrap_or_default();
    tools
        .iter()
        .filter_map(|t| {
            t["function"]["name"]
                .as_str()
                .or_else(|| {
                    t["type"]
                        .as_str()
                        .is_none_or(|k| k == "function")
                        .then(|| t["name"].as_str())
                        .flatten()
                })
                .map(str::to_owned)
        })
        .collect()
}

async fn agent_on(
    kind: ProviderKind,
    script: Script,
    registry: ToolRegistry,
) -> (Agent, MockServer) {
    let server = MockServer::start(kind, script).await.unwrap();
    let client = Client::builder(kind)
        .base_url(server.url())
        .build()
        .unwrap();
    (Agent::new(client, registry), server)
}

fn request() -> ChatRequest {
    ChatRequest::new(
        "tw-deferred-model",
        vec![Message::user("Open a Jira ticket")],
    )
}

#[tokio::test]
async fn five_thousand_deferred_tools_send_only_what_the_model_searched_for() {
    let registry = ToolRegistry::new();
    let calls = Arc::new(AtomicUsize::new(0));
    always_loaded(&registry);
    catalog(&registry, &calls);
    assert_eq!(registry.list().len(), 5_002);
    let script = Script::new()
        .then(MockReply::tool_calls([ToolCall::new(
            "call_s",
            SEARCH_TOOL_NAME,
            r#"{"query":"create a Jira ticket","limit":3}"#,
        )]))
        .then(MockReply::tool_calls([ToolCall::new(
            "call_c",
            "jira_create_ticket",
            r#"{"id":"T-1"}"#,
        )]))
        .then(MockReply::text("Ticket created."));
    let (agent, server) = agent_on(ProviderKind::OpenAi, script, registry).await;
    let outcome = agent.run(request()).finish().await.unwrap();
    assert_eq!(outcome.response.text.as_deref(), Some("Ticket created."));
    assert_eq!(outcome.turns, 3);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the found tool ran once");

    // The search's result lists the tools found, best first.
    let Message::Tool(searched) = &outcome.messages[2] else {
        panic!(
            "the search result follows the call: {:?}",
            outcome.messages[2]
        )
    };
    assert!(!searched.is_error, "{searched:?}");
    let found: Vec<String> = searched.output["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(found.len(), 3, "{:?}", searched.output);
    assert_eq!(found[0], "jira_create_ticket");
    assert_eq!(
        searched.output["tools"][0]["description"],
        "create a ticket in jira"
    );
    let Message::Tool(ran) = &outcome.messages[4] else {
        panic!("the call's result: {:?}", outcome.messages[4])
    };
    assert_eq!(
        ran.output,
        json!({"done": "jira_create_ticket", "id": "T-1"})
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let first = tool_names(&requests[0]);
    assert_eq!(first, ["get_time", "ask_user", SEARCH_TOOL_NAME]);
    let mut expected = first.clone();
    expected.extend(found.iter().cloned());
    assert_eq!(
        tool_names(&requests[1]),
        expected,
        "exactly the found tools join"
    );
    assert_eq!(tool_names(&requests[2]), expected, "and stay for the run");
    // Loaded tools are sent as plain tools: no request carries `defer_loading`.
    for r in &requests {
        assert!(!r.body.to_string().contains("defer_loading"));
        assert!(
            r.body.to_string().len() < 8_000,
            "{}",
            r.body.to_string().len()
        );
    }
}

#[tokio::test]
async fn a_deferred_tool_called_without_a_search_runs_and_is_sent_from_then_on() {
    let registry = ToolRegistry::new();
    let calls = Arc::new(AtomicUsize::new(0));
    catalog(&registry, &calls);
    let script = Script::new()
        .then(MockReply::tool_calls([ToolCall::new(
            "call_1",
            "slack_get_message",
            r#"{"id":"M-9"}"#,
        )]))
        .then(MockReply::text("Done."));
    let (agent, server) = agent_on(ProviderKind::Anthropic, script, registry).await;
    let outcome = agent.run(request()).finish().await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let Message::Tool(ran) = &outcome.messages[2] else {
        panic!("{:?}", outcome.messages[2])
    };
    assert!(!ran.is_error, "{ran:?}");
    let requests = server.requests();
    assert_eq!(tool_names(&requests[0]), [SEARCH_TOOL_NAME]);
    assert_eq!(
        tool_names(&requests[1]),
        [SEARCH_TOOL_NAME, "slack_get_message"]
    );
}

#[tokio::test]
async fn a_continued_conversation_loads_the_deferred_tools_it_already_called() {
    let registry = ToolRegistry::new();
    catalog(&registry, &Arc::new(AtomicUsize::new(0)));
    let script = Script::new().then(MockReply::text("Anything else?"));
    let (agent, server) = agent_on(ProviderKind::OpenAi, script, registry).await;
    let call = ToolCall::new("call_0", "zoom_create_meeting", r#"{"id":"Z"}"#);
    let mut req = request();
    req.messages.push(Message::Assistant(
        toolwire::AssistantMessage::default().with_tool_calls([call.clone()]),
    ));
    req.messages
        .push(Message::Tool(toolwire::ToolResult::ok(&call, json!("ok"))));
    agent.run(req).finish().await.unwrap();
    assert_eq!(
        tool_names(&server.requests()[0]),
        [SEARCH_TOOL_NAME, "zoom_create_meeting"]
    );
}

#[tokio::test]
async fn bad_search_arguments_are_an_error_result_and_the_run_goes_on() {
    let registry = ToolRegistry::new();
    catalog(&registry, &Arc::new(AtomicUsize::new(0)));
    let script = Script::new()
        .then(MockReply::tool_calls([ToolCall::new(
            "call_1",
            SEARCH_TOOL_NAME,
            r#"{"query":"jira","limit":500}"#,
        )]))
        .then(MockReply::tool_calls([ToolCall::new(
            "call_2",
            SEARCH_TOOL_NAME,
            r#"{"query":"xylophone"}"#,
        )]))
        .then(MockReply::text("Nothing."));
    let (agent, server) = agent_on(ProviderKind::OpenAi, script, registry).await;
    let outcome = agent.run(request()).finish().await.unwrap();
    let Message::Tool(bad) = &outcome.messages[2] else {
        panic!("{:?}", outcome.messages[2])
    };
    assert!(bad.is_error, "{bad:?}");
    assert!(bad.error.as_deref().unwrap().contains("limit"), "{bad:?}");
    let Message::Tool(none) = &outcome.messages[4] else {
        panic!("{:?}", outcome.messages[4])
    };
    assert_eq!(none.output["tools"], json!([]));
    assert!(
        none.output["message"]
            .as_str()
            .unwrap()
            .contains("xylophone")
    );
    for r in server.requests() {
        assert_eq!(tool_names(&r), [SEARCH_TOOL_NAME], "nothing was loaded");
    }
}

#[tokio::test]
async fn a_registered_search_tools_beside_deferred_tools_is_refused_by_name() {
    let registry = ToolRegistry::new();
    catalog(&registry, &Arc::new(AtomicUsize::new(0)));
    registry
        .register_fn(
            SEARCH_TOOL_NAME,
            "Mine",
            json!({"type": "object"}),
            |_| async { Ok(json!(null)) },
        )
        .unwrap();
    let (agent, server) = agent_on(ProviderKind::OpenAi, Script::new(), registry).await;
    let err = agent.run(request()).finish().await.unwrap_err();
    assert!(matches!(err, Error::Input { .. }), "{err:?}");
    assert!(err.to_string().contains("search_tools"), "{err}");
    assert!(server.requests().is_empty());
}

/// A smaller catalog for the provider mode, which sends every tool.
fn small_catalog(registry: &ToolRegistry) {
    for noun in NOUNS {
        let definition =
            ToolDefinition::new(format!("jira_get_{noun}"), format!("get a {noun}")).unwrap();
        let tool = Tool::from_fn(definition, |_| async { Ok(json!("ok")) });
        registry.register(tool.deferred()).unwrap();
    }
}

#[tokio::test]
async fn the_provider_mode_sends_defer_loading_and_the_providers_tool_search() {
    for (kind, search) in [
        (ProviderKind::Anthropic, "tool_search_tool_regex_20251119"),
        (ProviderKind::OpenAiResponses, "tool_search"),
    ] {
        let registry = ToolRegistry::new();
        always_loaded(&registry);
        small_catalog(&registry);
        let id = if kind == ProviderKind::Anthropic {
            "toolu_1"
        } else {
            "call_1"
        };
        let script = Script::new()
            .then(MockReply::tool_calls([ToolCall::new(
                id,
                "jira_get_ticket",
                "{}",
            )]))
            .then(MockReply::text("Done."));
        let (agent, server) = agent_on(kind, script, registry).await;
        let agent = agent.with_deferred_loading(DeferredLoading::Provider);
        let outcome = agent.run(request()).finish().await.unwrap();
        let Message::Tool(ran) = &outcome.messages[2] else {
            panic!("{kind}: {:?}", outcome.messages[2])
        };
        assert!(!ran.is_error, "{kind}: {ran:?}");
        for r in server.requests() {
            let tools = r.body["tools"].as_array().unwrap();
            assert_eq!(
                tools.len(),
                2 + NOUNS.len() + 1,
                "{kind}: every tool and the search"
            );
            let hosted: Vec<&Value> = tools.iter().filter(|t| t["type"] == search).collect();
            assert_eq!(hosted.len(), 1, "{kind}: {tools:?}");
            for t in tools.iter().filter(|t| t["type"] != search) {
                let name = t["name"].as_str().unwrap();
                let deferred = name.starts_with("jira_");
                assert_eq!(
                    t.get("defer_loading"),
                    deferred.then_some(&json!(true)),
                    "{kind}: {t}"
                );
            }
            assert!(
                !tool_names(&r).contains(&SEARCH_TOOL_NAME.to_owned()),
                "{kind}"
            );
        }
    }
}

#[tokio::test]
async fn the_provider_mode_falls_back_to_the_registry_search_without_provider_tool_search() {
    let registry = ToolRegistry::new();
    small_catalog(&registry);
    let script = Script::new().then(MockReply::text("Hello."));
    for kind in [ProviderKind::OpenAi, ProviderKind::Gemini] {
        let (agent, server) = agent_on(kind, script.clone(), registry.clone()).await;
        let agent = agent.with_deferred_loading(DeferredLoading::Provider);
        agent.run(request()).finish().await.unwrap();
        let body = &server.requests()[0].body;
        assert!(
            body.to_string().contains(SEARCH_TOOL_NAME),
            "{kind}: {body}"
        );
        assert!(!body.to_string().contains("jira_get_"), "{kind}: {body}");
        assert!(
            !body.to_string().contains("defer_loading"),
            "{kind}: {body}"
        );
    }
}

#[test]
fn the_registry_searches_only_deferred_tools_with_a_bounded_answer() {
    let registry = ToolRegistry::new();
    catalog(&registry, &Arc::new(AtomicUsize::new(0)));
    registry
        .register_fn(
            "jira_create_ticket_now",
            "create a ticket in jira",
            json!({"type": "object"}),
            |_| async { Ok(json!(null)) },
        )
        .unwrap();
    let all = ToolSelection::default();
    let found = registry.search("jira create ticket", 5, &all);
    assert_eq!(found[0].name, "jira_create_ticket");
    assert!(
        found.iter().all(|m| m.name != "jira_create_ticket_now"),
        "not deferred"
    );
    assert!(found.windows(2).all(|w| w[0].score >= w[1].score));
    assert_eq!(
        registry.search("jira", 10_000, &all).len(),
        MAX_SEARCH_LIMIT
    );
    assert!(registry.search("", 5, &all).is_empty());
    assert!(registry.search("the of to", 5, &all).is_empty());
    assert!(registry.search("(a+)+$[", 5, &all).is_empty());
    // The same query gives the same answer.
    assert_eq!(
        registry.search("export order", 7, &all),
        registry.search("export order", 7, &all)
    );
}

#[test]
fn a_deferred_toolset_defers_its_tools_in_the_selection_only() {
    let registry = ToolRegistry::new();
    for (name, set) in [
        ("crm_find_lead", "crm"),
        ("crm_add_note", "crm"),
        ("local_echo", "base"),
    ] {
        let definition = ToolDefinition::new(name, format!("{name} tool")).unwrap();
        let tool = Tool::from_fn(definition, |_| async { Ok(json!(null)) }).with_toolset(set);
        registry.register(tool).unwrap();
    }
    let selection = ToolSelection::new()
        .with_toolset("base")
        .with_deferred_toolset("crm");
    let defs = registry.definitions(&selection);
    let flags: Vec<(&str, bool)> = defs
        .iter()
        .map(|d| (d.name.as_str(), d.defer_loading))
        .collect();
    assert_eq!(
        flags,
        [
            ("crm_find_lead", true),
            ("crm_add_note", true),
            ("local_echo", false)
        ]
    );
    assert_eq!(
        registry.search("lead", 5, &selection)[0].name,
        "crm_find_lead"
    );
    assert!(registry.search("echo", 5, &selection).is_empty());
    // Enabled as a plain toolset, the same tools are not deferred.
    let plain = ToolSelection::new().with_toolset("crm");
    assert!(
        registry
            .definitions(&plain)
            .iter()
            .all(|d| !d.defer_loading)
    );
}
