//! Stream a turn from the loopback mock provider, as a test of your own agent would: the mock
//! speaks the real OpenAI wire, slowly and in 7-byte pieces, and the client yields each event as
//! its bytes arrive.
//!
//! `cargo run --example 02_mock_stream`

use std::time::Duration;

use futures::StreamExt;
use toolwire::mock::{MockReply, MockServer, Script};
use toolwire::{ChatRequest, Client, Message, ProviderKind, StreamEvent, ToolCall};

#[tokio::main(flavor = "current_thread")]
async fn main() -> toolwire::Result<()> {
    let reply = MockReply::tool_calls([ToolCall::new(
        "call_demo_1",
        "get_weather",
        r#"{"city":"Paris"}"#,
    )])
    .chunk_size(7)
    .delay(Duration::from_millis(5));
    let server = MockServer::start(ProviderKind::OpenAi, Script::new().then(reply)).await?;
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .build()?;

    let req = ChatRequest::new("demo-model", vec![Message::user("Weather in Paris?")]);
    let mut stream = client.stream(&req).await?;
    while let Some(event) = stream.next().await {
        match event? {
            StreamEvent::ToolCallStarted { name, .. } => print!("{name}("),
            StreamEvent::ToolCallDelta { fragment, .. } => print!("{fragment}"),
            StreamEvent::ToolCallComplete { .. } => println!(")"),
            StreamEvent::Finish { reason } => println!("finish: {reason}"),
            _ => {}
        }
    }
    let response = stream.finish().await?;
    println!(
        "{} call(s); the mock saw {} request(s)",
        response.tool_calls.len(),
        server.requests().len()
    );
    Ok(())
}
