//! Checks and policies every provider's encoder shares.

use crate::error::{Error, Result};
use crate::types::{ChatRequest, Message, ToolCall, ToolChoice, parse_arguments};

/// Every tool name in the request, tools first, then history, for [`NameMap::build`].
pub(crate) fn request_names(req: &ChatRequest) -> impl Iterator<Item = &str> {
    let tools = req.tools.iter().map(|t| t.name.as_str());
    let history = req
        .messages
        .iter()
        .flat_map(|m| -> Box<dyn Iterator<Item = &str>> {
            match m {
                Message::Assistant(a) => Box::new(a.tool_calls.iter().map(|c| c.name.as_str())),
                Message::Tool(r) => Box::new(std::iter::once(r.name.as_str())),
                _ => Box::new(std::iter::empty()),
            }
        });
    tools.chain(history)
}

/// Checks what every wire needs: valid, unique tool names and a named tool_choice that exists.
pub(crate) fn check_tools(req: &ChatRequest) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for (i, tool) in req.tools.iter().enumerate() {
        crate::types::check_name(&tool.name, &format!("tools[{i}].name"))?;
        if !seen.insert(tool.name.as_str()) {
            return Err(Error::input(
                format!("tools[{i}].name"),
                format!("duplicate tool name {:?}", tool.name),
            ));
        }
    }
    if let Some(ToolChoice::Tool(name)) = &req.tool_choice
        && !seen.contains(name.as_str())
    {
        return Err(Error::input(
            "tool_choice.name",
            format!("tool_choice names {name:?}, which is not among the request's tools"),
        ));
    }
    Ok(())
}

/// The argument text to replay for a call: its raw text when that is a JSON object, `{}` when
/// it is empty, malformed or truncated (servers re-parse history and reject broken text).
pub(crate) fn replay_arguments(call: &ToolCall) -> String {
    if call.error.is_none()
        && !call.raw_arguments.trim().is_empty()
        && parse_arguments(&call.raw_arguments).is_ok()
    {
        call.raw_arguments.clone()
    } else {
        "{}".to_owned()
    }
}
