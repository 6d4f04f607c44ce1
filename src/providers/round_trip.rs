//! The writers against the fixture corpus: every recorded answer (`fixtures/<provider>/<case>/`
//! with its `expected.json`), written by its wire's writer as a body and as a stream and read
//! back by that wire's decoder, is the answer it was.

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::Value;

    use crate::error::Error;
    use crate::provider::{Answer, ProviderKind, StreamWriter};
    use crate::providers::responder_for;
    use crate::providers::shared::uncarry_id;
    use crate::providers::split;
    use crate::replay::replay;
    use crate::types::{ChatResponse, FinishReason};

    /// Answers the gateway's writers of a wire do not carry yet, each with why: checked to still
    /// differ, so a fix shows here (remove the line) and nothing else slips in beside them.
    const GATEWAY_GAPS: &[(&str, &str)] = &[(
        "openai-responses/quirk_custom_tool",
        "a custom tool call goes out as a function call with its raw input as arguments",
    )];

    /// The gateway's writers of a client wire: its whole body and its stream writer.
    type GatewayWriters = (
        fn(&ChatResponse, &Answer<'_>) -> Vec<u8>,
        fn(&Answer<'_>) -> Box<dyn StreamWriter>,
    );

    /// The client wires' writers, by the provider whose decoder reads them.
    fn gateway_writers(kind: ProviderKind) -> Option<GatewayWriters> {
        use crate::providers::{anthropic, openai, openai_responses};
        match kind {
            ProviderKind::OpenAi => Some((openai::gateway::body, openai::gateway::writer)),
            ProviderKind::Anthropic => Some((anthropic::gateway::body, anthropic::gateway::writer)),
            ProviderKind::OpenAiResponses => Some((
                openai_responses::gateway::body,
                openai_responses::gateway::writer,
            )),
            _ => None,
        }
    }

    /// What a writer must carry across: text, reasoning, each call (its id unless minted, name and
    /// arguments), the finish reason and the counts. A call id the gateway wrote with provider
    /// state carried along is read without it; `minted` compares minted ids too (the gateway
    /// writes every id: its client must answer each call by one).
    fn canonical(r: &ChatResponse, minted: bool) -> Value {
        let calls: Vec<Value> = r
            .tool_calls
            .iter()
            .map(|c| {
                let arguments = match &c.arguments {
                    Some(parsed) if c.is_complete() => parsed.clone(),
                    _ => Value::String(c.raw_arguments.clone()),
                };
                let id = (minted || !c.has_synthetic_id())
                    .then(|| uncarry_id(&c.id, "id").map_or_else(|_| c.id.clone(), |(id, _)| id));
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
                let want = canonical(&answer, false);
                let mut whole_refused = false;
                for stream in [false, true] {
                    let what = if stream { "stream" } else { "body" };
                    let bytes = match writer.encode_response(&answer, stream) {
                        Ok(b) => b,
                        // A wire with no form for this answer says so (a whole Messages body
                        // cannot carry arguments that are not an object).
                        Err(Error::Unsupported { .. }) => {
                            refused.push(format!("{at} {what}"));
                            whole_refused |= !stream;
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
                        Ok(back) if canonical(&back, false) == want => {
                            checked.push(format!("{at} {what}"))
                        }
                        Ok(back) => failures.push(format!(
                            "{at} {what}:\n  wrote {want}\n  read  {}",
                            canonical(&back, false)
                        )),
                        Err(e) => failures.push(format!("{at} {what}: does not decode: {e}")),
                    }
                }
                // The gateway's writers of this wire, from the same answer cut into events.
                let Some((body, stream_writer)) = gateway_writers(kind) else {
                    continue;
                };
                let gap = GATEWAY_GAPS.iter().any(|(case, _)| *case == at);
                let want = canonical(&answer, true);
                let seal = crate::seal::Seal::new([3_u8; 32]).unwrap();
                let answer_of = Answer::new("id_1", "m", 0).with_seal(&seal);
                let whole = body(&answer, &answer_of);
                let mut w = stream_writer(&answer_of);
                let mut streamed = Vec::new();
                w.start(&mut streamed);
                w.events(&split::events(&answer, split::FINE), &mut streamed);
                w.finish(&answer, &mut streamed);
                // A body this wire cannot carry (the mock's writer refused it above) is not checked.
                let bodies = (!whole_refused).then(|| ("gateway body", writer.decode(&whole)));
                for (what, back) in bodies.into_iter().chain([(
                    "gateway stream",
                    replay(writer.as_ref(), &streamed).map(|r| r.response),
                )]) {
                    match back {
                        Ok(back) if canonical(&back, true) == want && !gap => {
                            checked.push(format!("{at} {what}"));
                        }
                        Ok(back) if canonical(&back, true) == want => {
                            failures
                                .push(format!("{at} {what}: passes now; take it off GATEWAY_GAPS"));
                        }
                        Ok(_) if gap => {}
                        Ok(back) => failures.push(format!(
                            "{at} {what}:\n  wrote {want}\n  read  {}",
                            canonical(&back, true)
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
}
