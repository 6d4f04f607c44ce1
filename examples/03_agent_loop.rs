//! The agent loop with a typed tool, then the same conversation continued on another provider.
//! Both providers are loopback mocks speaking their real wire formats, so this runs offline.
//!
//! `cargo run --example 03_agent_loop -- openai glm`

use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolwire::agent::{Agent, AgentEvent};
use toolwire::mock::{MockReply, MockServer, Script};
use toolwire::tools::{ToolError, ToolRegistry, TypedTool};
use toolwire::{ChatRequest, Client, Message, ProviderKind, ToolCall};

/// Arguments of `add`.
#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// First number.
    a: f64,
    /// Second number.
    b: f64,
}

struct Add;

impl TypedTool for Add {
    type Args = AddArgs;
    type Output = Value;

    fn name(&self) -> &str {
        "add"
    }

    fn description(&self) -> &str {
        "Adds two numbers"
    }

    async fn call(&self, args: AddArgs) -> Result<Value, ToolError> {
        Ok(json!({"sum": args.a + args.b}))
    }
}

/// An agent on a mock of `kind` that calls `add` once, then answers `answer`.
async fn agent(
    kind: ProviderKind,
    registry: &ToolRegistry,
    call: ToolCall,
    answer: &str,
) -> toolwire::Result<(MockServer, Agent)> {
    let script = Script::new()
        .then(MockReply::tool_calls([call]))
        .then(MockReply::text(answer));
    let server = MockServer::start(kind, script).await?;
    let client = Client::builder(kind).base_url(server.url()).build()?;
    Ok((server, Agent::new(client, registry.clone())))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> toolwire::Result<()> {
    let mut args = std::env::args().skip(1);
    let first: ProviderKind = args.next().as_deref().unwrap_or("openai").parse()?;
    let second: ProviderKind = args.next().as_deref().unwrap_or("glm").parse()?;
    let registry = ToolRegistry::new();
    registry.register_typed(Add)?;

    let (_a, agent_a) = agent(
        first,
        &registry,
        ToolCall::new("call_1", "add", r#"{"a":2,"b":3}"#),
        "2 + 3 = 5.",
    )
    .await?;
    let request = ChatRequest::new("mock-model", vec![Message::user("What is 2 + 3?")]);
    let mut run = agent_a.run(request);
    while let Some(event) = run.next().await {
        match event? {
            AgentEvent::ToolFinished(r) => println!("[{first}] {} -> {}", r.name, r.output),
            AgentEvent::TurnDone { turn, response, .. } => {
                if let Some(text) = response.text {
                    println!("[{first}] turn {turn}: {text}");
                }
            }
            _ => {}
        }
    }
    let outcome = run.finish().await?;

    // The same conversation continues on another provider: re-encoded for its wire.
    let (_b, agent_b) = agent(
        second,
        &registry,
        ToolCall::new("call_2", "add", r#"{"a":5,"b":10}"#),
        "5 + 10 = 15.",
    )
    .await?;
    let mut messages = outcome.messages;
    messages.push(Message::user("And that plus 10?"));
    let outcome = agent_b
        .run(ChatRequest::new("mock-model", messages))
        .finish()
        .await?;
    println!(
        "[{second}] {} ({} messages in the conversation)",
        outcome.response.text.unwrap_or_default(),
        outcome.messages.len()
    );
    Ok(())
}
