//! Deferred loading with a registry of 5,000 tools: the size of one encoded request body and
//! the time to encode it (the provider's `encode`, then the body serialized to bytes, as the
//! client sends it), three ways:
//!
//! - `all`: every tool sent, none deferred;
//! - `registry`: what the agent sends with `DeferredLoading::Registry` after one search: the
//!   two always-loaded tools, `search_tools` and the three tools found;
//! - `provider`: what it sends with `DeferredLoading::Provider` on a wire with tool search
//!   (Anthropic, OpenAI Responses): every tool with `defer_loading`, plus the hosted tool search.
//!
//! Beside them, the agent's own costs per step: `registry/definitions` (the registry's offer
//! read once per step) and `registry/search` (one `search_tools` call over the 5,000 tools).
//! The sizes are printed first, as a table for `docs/hosted.md`. Run:
//! `cargo bench --bench deferred -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolwire::providers::provider_for;
use toolwire::tools::{Tool, ToolRegistry, ToolSelection, search_tool_definition};
use toolwire::{ChatRequest, HostedTool, Message, Provider, ProviderKind, ToolDefinition};

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

/// The 5,000 tools: `<service>_<verb>_<noun>`, a one-sentence description and a small schema
/// (an id, an optional free-text field and a page size), as a typical SaaS connector has.
fn catalog() -> Vec<ToolDefinition> {
    let mut out = Vec::with_capacity(5_000);
    for service in SERVICES {
        for verb in VERBS {
            for noun in NOUNS {
                let parameters = json!({
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": format!("The {noun}'s id in {service}")},
                        "query": {"type": "string", "description": "Free text to filter by"},
                        "page_size": {"type": "integer", "minimum": 1, "maximum": 100}
                    },
                    "required": ["id"]
                });
                let definition = ToolDefinition::new(
                    format!("{service}_{verb}_{noun}"),
                    format!("{verb} a {noun} in {service}, by id, with optional filters."),
                )
                .and_then(|d| d.with_parameters(parameters));
                match definition {
                    Ok(d) => out.push(d),
                    Err(e) => panic!("bench catalog: {e}"),
                }
            }
        }
    }
    out
}

fn always() -> Vec<ToolDefinition> {
    ["get_time", "ask_user"]
        .into_iter()
        .map(|n| match ToolDefinition::new(n, "Always there") {
            Ok(d) => d,
            Err(e) => panic!("bench tool: {e}"),
        })
        .collect()
}

fn request(tools: Vec<ToolDefinition>, hosted: Vec<HostedTool>) -> ChatRequest {
    let mut req = ChatRequest::new(
        "bench-model",
        vec![Message::user("Open a Jira ticket for the failing build")],
    );
    req.tools = tools;
    req.hosted_tools = hosted;
    req
}

/// The encoded body's bytes, as the client sends them.
fn encoded(provider: &dyn Provider, req: &ChatRequest) -> Vec<u8> {
    let kind = provider.info().kind;
    let request = provider
        .encode(req, true)
        .unwrap_or_else(|e| panic!("bench request does not encode on {kind}: {e}"));
    serde_json::to_vec(&request.body).unwrap_or_else(|e| panic!("{kind}: {e}"))
}

struct Setup {
    registry: ToolRegistry,
    /// (label, request) per provider.
    cases: Vec<(ProviderKind, Vec<(&'static str, ChatRequest)>)>,
}

fn setup() -> Setup {
    let registry = ToolRegistry::new();
    for d in catalog() {
        let tool = Tool::from_fn(d, |_| async { Ok(json!(null)) }).deferred();
        if let Err(e) = registry.register(tool) {
            panic!("bench registry: {e}");
        }
    }
    let found = registry.search("create jira ticket", 3, &ToolSelection::default());
    assert_eq!(found.len(), 3);
    let all = catalog();
    let mut registry_tools = always();
    registry_tools.push(search_tool_definition());
    registry_tools.extend(
        all.iter()
            .filter(|d| found.iter().any(|m| m.name == d.name))
            .cloned(),
    );
    let mut every = always();
    every.extend(all.iter().cloned());
    let mut deferred = always();
    deferred.extend(all.iter().cloned().map(|d| d.with_defer_loading(true)));

    let mut cases = Vec::new();
    for kind in [
        ProviderKind::OpenAi,
        ProviderKind::Anthropic,
        ProviderKind::OpenAiResponses,
    ] {
        let mut reqs = vec![
            ("all", request(every.clone(), Vec::new())),
            ("registry", request(registry_tools.clone(), Vec::new())),
        ];
        if kind != ProviderKind::OpenAi {
            reqs.push((
                "provider",
                request(deferred.clone(), vec![HostedTool::ToolSearch]),
            ));
        }
        cases.push((kind, reqs));
    }
    Setup { registry, cases }
}

fn bench(c: &mut Criterion) {
    let setup = setup();
    println!("\nrequest body bytes, 5,000 tools (all / registry search / provider search):");
    for (kind, reqs) in &setup.cases {
        let provider = provider_for(*kind).unwrap_or_else(|e| panic!("{e}"));
        let sizes: Vec<String> = reqs
            .iter()
            .map(|(label, req)| format!("{label} {} B", encoded(provider.as_ref(), req).len()))
            .collect();
        println!("  {:<18} {}", kind.name(), sizes.join(" | "));
    }
    println!();

    let mut group = c.benchmark_group("encode");
    group.sample_size(20);
    for (kind, reqs) in &setup.cases {
        let provider = provider_for(*kind).unwrap_or_else(|e| panic!("{e}"));
        for (label, req) in reqs {
            group.bench_with_input(BenchmarkId::new(kind.name(), label), req, |b, req| {
                b.iter(|| black_box(encoded(provider.as_ref(), black_box(req)).len()))
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("registry");
    group.sample_size(20);
    let selection = ToolSelection::default();
    group.bench_function("definitions/5000", |b| {
        b.iter(|| black_box(setup.registry.definitions(&selection).len()))
    });
    group.bench_function("search/5000", |b| {
        b.iter(|| {
            black_box(
                setup
                    .registry
                    .search(black_box("create a jira ticket"), 5, &selection)
                    .len(),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
