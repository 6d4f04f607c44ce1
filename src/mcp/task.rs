//! Tool calls a server runs as a task (the MCP Tasks extension, `io.modelcontextprotocol/tasks`,
//! as in the 2026-07-28 revision; SEP-2663): the server answers `tools/call` with a task
//! (`resultType: "task"`) and the client follows it with `tasks/get` until it ends, answers
//! the task's input requests with `tasks/update`, and sends `tasks/cancel` when the caller gives
//! up.

use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    CallToolResult, CancelTaskParams, CreateTaskResult, GetTaskParams, TaskPayload,
    UpdateTaskParams,
};
use rmcp::service::Peer;
use serde_json::Value;

use super::{McpResult, Watched, tidy};
use crate::tools::Reporter;

/// The poll interval when the server suggests none.
const DEFAULT_POLL: Duration = Duration::from_secs(1);
/// The shortest poll interval toolwire keeps to (a server's `0` is not a busy loop).
const MIN_POLL: Duration = Duration::from_millis(10);
/// The longest: a server's huge interval does not leave a finished task unread for hours.
const MAX_POLL: Duration = Duration::from_secs(30);

fn interval(suggested: Option<u64>) -> Duration {
    suggested
        .map_or(DEFAULT_POLL, Duration::from_millis)
        .clamp(MIN_POLL, MAX_POLL)
}

/// A task being followed: dropped before it ends (a timeout, a dropped run, a cancel), it
/// sends `tasks/cancel`, so the server stops working on a result nobody will read.
struct Following {
    peer: Peer<RoleClient>,
    task_id: Option<String>,
}

impl Drop for Following {
    fn drop(&mut self) {
        let Some(task_id) = self.task_id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            if let Err(e) = peer.cancel_task(CancelTaskParams::new(task_id)).await {
                tracing::debug!(error = %e, "MCP tasks/cancel failed");
            }
        });
    }
}

/// Follows the task `created` (the answer to `tools/call` of tool `name`) to its end: polls
/// `tasks/get` at the server's suggested interval, puts each new status message into
/// `progress` as the call's summary (the server's `notifications/progress` for the call's
/// token keep going there too), answers input requests through `watched`'s routing, and
/// returns the task's result as the call's result.
pub(super) async fn follow(
    peer: &Peer<RoleClient>,
    watched: &Watched,
    label: &str,
    created: CreateTaskResult,
    asking: (String, Option<String>, Reporter),
) -> std::result::Result<McpResult, String> {
    let (name, progress) = (asking.0.as_str(), &asking.2);
    let id = created.task.task_id.clone();
    let mut following = Following {
        peer: peer.clone(),
        task_id: Some(id.clone()),
    };
    let mut every = interval(created.task.poll_interval_ms);
    let mut said = created.task.status_message.clone();
    if let Some(message) = &said {
        progress.summary(message.clone());
    }
    let mut answered: std::collections::HashSet<String> = std::collections::HashSet::new();
    loop {
        tokio::time::sleep(every).await;
        let got = peer
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .map_err(|e| format!("tasks/get for task {id:?} of {name:?}: {}", tidy(&e)))?;
        let task = got.task;
        every = interval(task.task.poll_interval_ms);
        if task.task.status_message.is_some() && task.task.status_message != said {
            said.clone_from(&task.task.status_message);
            if let Some(message) = &said {
                progress.summary(message.clone());
            }
        }
        match task.payload {
            TaskPayload::Completed { result } => {
                following.task_id = None;
                let result: CallToolResult = serde_json::from_value(Value::Object(result))
                    .map_err(|e| {
                        format!("the result of task {id:?} of {name:?} is not a tool result: {e}")
                    })?;
                return Ok(McpResult::from_wire(name, result));
            }
            TaskPayload::Failed { error } => {
                following.task_id = None;
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .map_or_else(|| Value::Object(error.clone()).to_string(), str::to_owned);
                return Err(format!("task {id:?} of {name:?} failed: {message}"));
            }
            TaskPayload::Cancelled => {
                following.task_id = None;
                return Err(format!("the server cancelled task {id:?} of {name:?}"));
            }
            TaskPayload::InputRequired { input_requests } => {
                let responses = watched
                    .answer_all(label, input_requests, &asking, &mut answered)
                    .await?;
                if !responses.is_empty() {
                    peer.update_task(UpdateTaskParams::new(id.clone(), responses))
                        .await
                        .map_err(|e| {
                            format!("tasks/update for task {id:?} of {name:?}: {}", tidy(&e))
                        })?;
                }
            }
            // Working, or a status this version does not know: poll again.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_poll_interval_follows_the_server_within_bounds() {
        assert_eq!(interval(None), DEFAULT_POLL);
        assert_eq!(interval(Some(250)), Duration::from_millis(250));
        assert_eq!(interval(Some(0)), MIN_POLL);
        assert_eq!(interval(Some(u64::MAX)), MAX_POLL);
    }
}
