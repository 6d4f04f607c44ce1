//! The writers against the fixture corpus: every recorded answer (`fixtures/<provider>/<case>/`
//! with its `expected.json`), written by its wire's writer as a body and as a stream and read
//! back by that wire's decoder, is the answer it was.

use std::path::Path;

use serde_json::Value;

use crate::error::Error;
use crate::provider::ProviderKind;
use crate::providers::responder_for;
use crate::replay::replay;
use crate::types::{ChatResponse, FinishReason};

/// What a writer must carry across: text, reasoning, each call (its id unless minted, name and
/// arguments), the finish reason and the counts.
fn canonical(r: &ChatResponse) -> Value {
    let calls: Vec<Value> = r
        .tool_calls
        .iter()
        .map(|c| {
            let arguments = match &c.arguments {
                Some(parsed) if c.is_complete() => parsed.clone(),
                _ => Value::String(c.raw_arguments.clone()),
            };
            let id = (!c.has_synthetic_id()).then(|| c.id.clone());
            serde_json::json!({"id": id, "name": c.name, "arguments": arguments})
        })
        .collect();
    serde_json::json!({
        "text": r.text.as_deref().filter(|t| !t.is_empty()),
        "reasoning": r.reasoning.as_deref().filter(|t| !t.is_empty()),
        "calls": calls,
        "finish": r.finish_reason,
        "usage": r.usage.map(|u| (u.input_tokens, u.output_tokens, u.cached_input_tokens)),
    })
}

#[test]
fn every_fixture_answer_round_trips_through_its_writer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut checked = Vec::new();
    let mut refused = Vec::new();
    let mut failures = Vec::new();
    let mut providers: Vec<_> = std::fs::read_dir(&root).unwrap().flatten().collect();
    providers.sort_by_key(|e| e.file_name());
    for entry in providers {
        let name = entry.file_name().to_string_lossy().into_owned();
        // Realtime folders and anything else that is not a built-in HTTP wire has no writer here.
        let Ok(kind) = name.parse::<ProviderKind>() else {
            continue;
        };
        let Ok(writer) = responder_for(kind) else {
            continue;
        };
        let mut cases: Vec<_> = std::fs::read_dir(entry.path()).unwrap().flatten().collect();
        cases.sort_by_key(|e| e.file_name());
        for case in cases {
            let dir = case.path();
            let expected = dir.join("expected.json");
            let Ok(text) = std::fs::read_to_string(&expected) else {
                continue;
            };
            // Errors and cut-short streams are not answers a writer writes as one.
            let Ok(answer) = serde_json::from_str::<ChatResponse>(&text) else {
                continue;
            };
            if answer.finish_reason == FinishReason::Error {
                continue;
            }
            let at = format!("{name}/{}", case.file_name().to_string_lossy());
            let want = canonical(&answer);
            for stream in [false, true] {
                let what = if stream { "stream" } else { "body" };
                let bytes = match writer.encode_response(&answer, stream) {
                    Ok(b) => b,
                    // A wire with no form for this answer says so (a whole Messages body
                    // cannot carry arguments that are not an object).
                    Err(Error::Unsupported { .. }) => {
                        refused.push(format!("{at} {what}"));
                        continue;
                    }
                    Err(e) => {
                        failures.push(format!("{at} {what}: {e}"));
                        continue;
                    }
                };
                let back = if stream {
                    replay(writer.as_ref(), &bytes).map(|r| r.response)
                } else {
                    writer.decode(&bytes)
                };
                match back {
                    Ok(back) if canonical(&back) == want => checked.push(format!("{at} {what}")),
                    Ok(back) => failures.push(format!(
                        "{at} {what}:\n  wrote {want}\n  read  {}",
                        canonical(&back)
                    )),
                    Err(e) => failures.push(format!("{at} {what}: does not decode: {e}")),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        checked.len() > 100,
        "only {} answers round-tripped; refused: {refused:?}",
        checked.len()
    );
}
