//! Tool calls run as tasks (the MCP Tasks extension, `io.modelcontextprotocol/tasks`) against a
//! real task server: the official Rust SDK's (`rmcp`) `TaskManager` behind its streamable HTTP
//! server on loopback, built here (the official Python SDK has no task server). Its tool
//! `crunch` runs as a task for a client that declares the extension, reporting each step as the
//! task's status message and as `notifications/progress` (and fails for 0 steps); `pick` asks
//! for input inside its task. The server records the `tasks/cancel` it receives and the task
//! that stopped because of it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, CreateTaskResult,
    GetTaskParams, GetTaskResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use serde_json::{Value, json};
use toolwire::ToolCall;
use toolwire::mcp::{Connection, Endpoint, Mount};
use toolwire::tools::{Reporter, ToolRegistry, ToolSelection};

use crate::mcp::runtime;

/// What the server saw.
#[derive(Default)]
struct Seen {
    /// Task ids of the `tasks/cancel` requests received.
    cancels: Mutex<Vec<String>>,
    /// Task ids of the tasks that stopped because they were cancelled.
    stopped: Mutex<Vec<String>>,
    /// Whether each `tools/call` came from a client that declared the tasks extension.
    declared: Mutex<Vec<bool>>,
}

#[derive(Clone)]
struct TaskServer {
    tasks: TaskManager,
    seen: Arc<Seen>,
}

fn wire<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a valid MCP value")
}

impl rmcp::ServerHandler for TaskServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(wire(json!({"tools": [{
            "name": "pick",
            "description": "Asks which colour, inside its task",
            "inputSchema": {"type": "object"}
        }, {
            "name": "crunch",
            "description": "Crunches in steps, as a task",
            "inputSchema": {
                "type": "object",
                "properties": {"steps": {"type": "integer"}, "step_ms": {"type": "integer"}},
                "required": ["steps", "step_ms"]
            }
        }]})))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let declared = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        self.seen.declared.lock().unwrap().push(declared);
        let arguments = request.arguments.unwrap_or_default();
        let number = |k: &str| arguments.get(k).and_then(Value::as_u64).unwrap_or(0);
        let (steps, step) = (number("steps"), Duration::from_millis(number("step_ms")));
        let done = move || -> CallToolResult {
            wire(json!({
                "content": [{"type": "text", "text": format!("crunched {steps} steps")}],
                "structuredContent": {"steps": steps}
            }))
        };
        if !declared {
            return Ok(CallToolResponse::Complete(done()));
        }
        if request.name == "pick" {
            let task = self.tasks.spawn(TaskOptions::new().with_poll_interval_ms(20), |ctx| {
                Box::pin(async move {
                    let asked: rmcp::model::InputRequest = wire(json!({
                        "method": "elicitation/create",
                        "params": {
                            "mode": "form",
                            "message": "Which colour?",
                            "requestedSchema": {
                                "type": "object",
                                "properties": {"colour": {"type": "string", "enum": ["red", "blue"]}},
                                "required": ["colour"]
                            }
                        }
                    }));
                    let answer = ctx.request_input("colour", asked).await?;
                    Ok(wire::<CallToolResult>(json!({
                        "content": [{"type": "text", "text": answer.to_string()}]
                    })))
                })
            });
            return Ok(CallToolResponse::Task(CreateTaskResult::new(task)));
        }
        let token = context.meta.get_progress_token();
        let peer = context.peer.clone();
        let seen = Arc::clone(&self.seen);
        let options = TaskOptions::new()
            .with_poll_interval_ms(20)
            .with_status_message("starting");
        let task = self.tasks.spawn(options, move |ctx| {
            Box::pin(async move {
                if steps == 0 {
                    let e = ErrorData::invalid_params("nothing to crunch: steps is 0", None);
                    return Err(TaskExit::Error(e));
                }
                for i in 1..=steps {
                    tokio::select! {
                        () = ctx.cancelled() => {
                            seen.stopped.lock().unwrap().push(ctx.task_id().to_owned());
                            return Err(TaskExit::Cancelled);
                        }
                        () = tokio::time::sleep(step) => {}
                    }
                    ctx.set_status_message(format!("step {i} of {steps}"));
                    if let Some(token) = token.clone() {
                        let params: ProgressNotificationParam = wire(json!({
                            "progressToken": token,
                            "progress": i,
                            "total": steps,
                            "message": format!("step {i} of {steps}")
                        }));
                        let _ = peer.notify_progress(params).await;
                    }
                }
                Ok(done())
            })
        });
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.seen
            .cancels
            .lock()
            .unwrap()
            .push(request.task_id.clone());
        self.tasks.cancel_task(&request.task_id)
    }
}

/// Starts the task server on a loopback port; returns its URL and what it sees.
async fn serve() -> (String, Arc<Seen>) {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let seen = Arc::new(Seen::default());
    let server = TaskServer {
        tasks: TaskManager::new(),
        seen: Arc::clone(&seen),
    };
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, seen)
}

async fn connect(url: &str) -> Connection {
    let endpoint = Endpoint::url(url).unwrap();
    Connection::connect_with_timeout(&endpoint, Duration::from_secs(20))
        .await
        .unwrap()
}

/// Waits (at most 10 s) until `check` holds.
async fn eventually(what: &str, check: impl Fn() -> bool) {
    for _ in 0..500 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what} did not happen within 10 s");
}

/// A task-based call is followed to its end: the result is the call's result, and the steps
/// reach the caller's reporter while it runs.
#[test]
fn a_task_call_reports_progress_and_returns_its_result() {
    runtime().block_on(async {
        let (url, seen) = serve().await;
        let connection = connect(&url).await;
        let (reporter, mut reports) = Reporter::channel();
        let mut updates = Vec::new();
        let result = {
            let arguments = json!({"steps": 4, "step_ms": 150});
            let call = connection.call_reporting("crunch", arguments, reporter);
            let mut call = std::pin::pin!(call);
            loop {
                tokio::select! {
                    result = &mut call => break result.unwrap(),
                    update = reports.next() => updates.push(update),
                }
            }
        };
        updates.push(reports.take());
        assert_eq!(*seen.declared.lock().unwrap(), [true]);
        assert!(!result.is_error, "{result:?}");
        assert_eq!(result.output, json!({"steps": 4}));
        assert_eq!(result.content[0].as_text(), Some("crunched 4 steps"));
        let summaries: Vec<&str> = updates
            .iter()
            .filter_map(|u| u.summary.as_deref())
            .collect();
        assert!(
            summaries.iter().any(|s| s.starts_with("step ")),
            "no step reached the reporter: {updates:?}"
        );
        let progress: Vec<_> = updates.iter().filter_map(|u| u.progress.as_ref()).collect();
        assert!(
            progress.iter().any(|p| p.total == Some(4.0)
                && p.message.as_deref().is_some_and(|m| m.starts_with("step "))),
            "no notifications/progress reached the reporter: {updates:?}"
        );
        assert!(seen.cancels.lock().unwrap().is_empty());
        connection.close().await;
    });
}

/// The caller gives up (the call's future dropped): the task is cancelled on the server.
#[test]
fn dropping_a_task_call_cancels_the_task() {
    runtime().block_on(async {
        let (url, seen) = serve().await;
        let connection = connect(&url).await;
        let (reporter, mut reports) = Reporter::channel();
        {
            let arguments = json!({"steps": 100, "step_ms": 100});
            let call = connection.call_reporting("crunch", arguments, reporter);
            let mut call = std::pin::pin!(call);
            // Runs until the first step is reported, then the caller stops waiting.
            loop {
                tokio::select! {
                    result = &mut call => panic!("the task ended: {result:?}"),
                    update = reports.next() => if update.progress.is_some() { break },
                }
            }
        }
        eventually("the server's tasks/cancel", || {
            !seen.stopped.lock().unwrap().is_empty()
        })
        .await;
        let cancels = seen.cancels.lock().unwrap().clone();
        assert_eq!(cancels, *seen.stopped.lock().unwrap());
        assert_eq!(cancels.len(), 1);
        connection.close().await;
    });
}

/// From a registry: the mount's timeout stops the call and cancels the task; and an agent run
/// dropped while the task runs (after its progress arrived as events) cancels it too.
#[test]
fn a_timeout_or_a_dropped_agent_run_cancels_the_task() {
    use toolwire::agent::AgentEvent;
    use toolwire::{ChatRequest, Message};

    runtime().block_on(async {
        let (url, seen) = serve().await;
        let connection = connect(&url).await;
        let registry = ToolRegistry::new();
        let mount = Mount::new("t").with_timeout(Duration::from_millis(400));
        connection.register(&registry, &mount).await.unwrap();
        let call = ToolCall::new("c1", "t_crunch", r#"{"steps":100,"step_ms":100}"#);
        let result = registry.dispatch(&call, &ToolSelection::default()).await;
        assert!(result.is_error, "{result:?}");
        assert!(
            result
                .error
                .as_deref()
                .unwrap_or_default()
                .contains("timed out"),
            "{result:?}"
        );
        eventually("the cancel after the timeout", || {
            seen.stopped.lock().unwrap().len() == 1
        })
        .await;
        assert_eq!(seen.cancels.lock().unwrap().len(), 1);

        let call = ToolCall::new("call_1", "t_crunch", r#"{"steps":100,"step_ms":50}"#);
        let (agent, _mock) = crate::mcp::agent_calling(&connection, "t", call, "done").await;
        let mut run = agent.run(ChatRequest::new("gpt-4.1", vec![Message::user("go")]));
        let (mut progress, mut summaries) = (0, 0);
        while let Some(event) = run.next().await {
            match event.unwrap() {
                AgentEvent::ToolProgress {
                    call_id,
                    progress: p,
                    ..
                } => {
                    assert_eq!(call_id, "call_1");
                    assert_eq!(p.total, Some(100.0));
                    progress += 1;
                }
                AgentEvent::ToolSummary { summary, .. } if summary.starts_with("step ") => {
                    summaries += 1;
                }
                AgentEvent::ToolFinished(result) => panic!("the task ended: {result:?}"),
                _ => {}
            }
            if progress >= 2 && summaries >= 1 {
                break;
            }
        }
        drop(run);
        eventually("the cancel after the dropped run", || {
            seen.stopped.lock().unwrap().len() == 2
        })
        .await;
        assert_eq!(seen.cancels.lock().unwrap().len(), 2);
        connection.close().await;
    });
}

/// A task that needs input (`input_required`, answered with `tasks/update`): the question
/// reaches the agent's caller as `InputRequested` for the call, and the answer reaches the
/// task; without anyone to ask, it is declined.
#[test]
fn a_task_asks_for_input_and_the_answer_reaches_it() {
    use toolwire::agent::AgentEvent;
    use toolwire::{ChatRequest, Message};

    runtime().block_on(async {
        let (url, _seen) = serve().await;
        let connection = connect(&url).await;
        // Nobody to ask: declined.
        let result = connection.call("pick", json!({})).await.unwrap();
        let said: Value = serde_json::from_str(result.content[0].as_text().unwrap()).unwrap();
        assert_eq!(said["action"], "decline", "{said}");

        let call = ToolCall::new("call_9", "t_pick", "{}");
        let (agent, _mock) = crate::mcp::agent_calling(&connection, "t", call, "picked").await;
        let mut run = agent.run(ChatRequest::new("gpt-4.1", vec![Message::user("go")]));
        let mut asked = 0;
        while let Some(event) = run.next().await {
            if let AgentEvent::InputRequested {
                call_id,
                request,
                reply,
                ..
            } = event.unwrap()
            {
                asked += 1;
                assert_eq!(call_id, "call_9");
                assert_eq!(request.message, "Which colour?");
                assert_eq!(request.tool.as_deref(), Some("pick"));
                let e = reply.accept(json!({"colour": "green"})).unwrap_err();
                assert!(e.to_string().contains("\"colour\""), "{e}");
                reply.accept(json!({"colour": "blue"})).unwrap();
            }
        }
        assert_eq!(asked, 1);
        let outcome = run.finish().await.unwrap();
        let said = crate::mcp::first_result_json(&outcome);
        assert_eq!(
            said,
            json!({"action": "accept", "content": {"colour": "blue"}})
        );
        connection.close().await;
    });
}

/// `toolwire mcp call` follows a task too: the result on stdout, the steps on stderr.
#[test]
fn mcp_call_follows_a_task() {
    runtime().block_on(async {
        let (url, seen) = serve().await;
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolwire"))
            .args([
                "mcp",
                "call",
                "crunch",
                r#"{"steps":3,"step_ms":100}"#,
                "--url",
            ])
            .arg(&url)
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let result = crate::mcp::json_out(&out);
        assert_eq!(result["output"], json!({"steps": 3}), "{stderr}");
        assert_eq!(result["is_error"], false);
        assert!(stderr.contains("toolwire: progress"), "{stderr}");
        assert!(stderr.contains("step "), "{stderr}");
        assert_eq!(*seen.declared.lock().unwrap(), [true]);
    });
}

/// A task that fails on the server is an error of the call, with the server's message.
#[test]
fn a_failed_task_is_an_error_with_its_message() {
    runtime().block_on(async {
        let (url, seen) = serve().await;
        let connection = connect(&url).await;
        let e = connection
            .call("crunch", json!({"steps": 0, "step_ms": 1}))
            .await
            .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("failed: nothing to crunch: steps is 0"),
            "{text}"
        );
        assert!(seen.cancels.lock().unwrap().is_empty());
        connection.close().await;
    });
}
