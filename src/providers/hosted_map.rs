//! A call the provider ran ([`HostedCall`]), recorded on one wire, as the hosted items of
//! another wire that has the same kind of call: what the gateway hands a client on another
//! wire than its upstream's, and how it gets the upstream's own blocks back when the client
//! echoes those items.
//!
//! Web search is the kind every such wire has:
//!
//! - Anthropic: a `server_tool_use` block named `web_search` (input `{"query"}`) and its
//!   `web_search_tool_result`, whose `content` is a list of `web_search_result` entries (`url`,
//!   `title`, `encrypted_content`, `page_age`) or a `web_search_tool_result_error`
//!   (<https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool>);
//! - Responses: a `web_search_call` item with its `status` and an `action` of type `search`
//!   (`query`, and `sources`, each `{"type": "url", "url"}`)
//!   (<https://platform.openai.com/docs/guides/tools-web-search>);
//! - Gemini: a candidate's `groundingMetadata` (`webSearchQueries`, and `groundingChunks`
//!   whose `web` has `uri` and `title`)
//!   (<https://ai.google.dev/gemini-api/docs/google-search>); read only, Gemini takes no
//!   grounding back.
//!
//! What the other wire has no field for (a Responses source has a URL only; an Anthropic
//! result needs the `encrypted_content` only Anthropic makes) is left out, each time with a
//! note; nothing is made up. A call of a kind the other wire lacks (code execution, file
//! search, …) has no translation: the caller leaves it out with a note.
//!
//! The gateway seals the original call into the translated call's id ([`carry`]); when the
//! client sends the items back, [`open`] puts the original back, so the upstream gets its own
//! blocks byte for byte.

// Without the gateway (`server`) only the way back ([`open`]) is used.
#![cfg_attr(not(feature = "server"), allow(dead_code))]

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::providers::shared::SEP;
use crate::seal::Seal;
use crate::types::{AssistantMessage, ChatResponse, HostedCall, StreamEvent};

// The wires' names (`ProviderKind::name`), as patterns.
const ANTHROPIC: &str = "anthropic";
const RESPONSES: &str = "openai-responses";
const GEMINI: &str = "gemini";

/// The seal's kind for a hosted call carried in an id (apart from calls' `id` and items').
const KIND: &str = "hosted";

/// One search result, as far as the wire it came from has it.
#[derive(Debug, Default)]
struct Hit {
    url: String,
    title: Option<String>,
    encrypted_content: Option<String>,
    page_age: Option<String>,
}

/// A web search in no wire's shape: what it asked, and (once it ended) what it found.
#[derive(Debug, Default)]
struct Search {
    queries: Vec<String>,
    /// `None` while no result came.
    hits: Option<Vec<Hit>>,
    failed: bool,
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// The web search `call` holds, read from the wire it was made on; `None` when it is not a
/// web search (or not one this module reads).
fn search_of(call: &HostedCall) -> Option<Search> {
    match call.wire.as_str() {
        ANTHROPIC if call.name == "web_search" => {
            let mut s = Search {
                queries: text(&call.input, "query").into_iter().collect(),
                ..Search::default()
            };
            match &call.result {
                Some(Value::Array(entries)) => {
                    let hits = entries.iter().filter_map(|e| {
                        let url = text(e, "url")?;
                        Some(Hit {
                            url,
                            title: text(e, "title"),
                            encrypted_content: text(e, "encrypted_content"),
                            page_age: text(e, "page_age"),
                        })
                    });
                    s.hits = Some(hits.collect());
                }
                Some(Value::Object(_)) => {
                    // `web_search_tool_result_error`: the search failed.
                    s.failed = true;
                    s.hits = Some(Vec::new());
                }
                _ => {}
            }
            Some(s)
        }
        RESPONSES if call.name == "web_search" => {
            // The item, whole once it is done (the only block of the call).
            let item = call
                .blocks
                .iter()
                .find(|b| b.get("type").and_then(Value::as_str) == Some("web_search_call"))?;
            let action = item.get("action")?;
            if action.get("type").and_then(Value::as_str) != Some("search") {
                // `open_page` and `find_in_page` have no search to carry.
                return None;
            }
            let mut queries: Vec<String> = text(action, "query").into_iter().collect();
            let more = action.get("queries").and_then(Value::as_array);
            for q in more.into_iter().flatten().filter_map(Value::as_str) {
                if !queries.iter().any(|have| have == q) {
                    queries.push(q.to_owned());
                }
            }
            let sources = action.get("sources").and_then(Value::as_array);
            let hits = sources.into_iter().flatten().filter_map(|s| {
                Some(Hit {
                    url: text(s, "url")?,
                    title: text(s, "title"),
                    ..Hit::default()
                })
            });
            let status = text(item, "status");
            Some(Search {
                queries,
                hits: Some(hits.collect()),
                failed: status.as_deref() == Some("failed"),
            })
        }
        GEMINI if call.name == "google_search" => {
            let metadata = call.result.as_ref()?;
            let queries = metadata.get("webSearchQueries").and_then(Value::as_array);
            let chunks = metadata.get("groundingChunks").and_then(Value::as_array);
            let hits = chunks.into_iter().flatten().filter_map(|c| {
                let web = c.get("web")?;
                Some(Hit {
                    url: text(web, "uri")?,
                    title: text(web, "title"),
                    ..Hit::default()
                })
            });
            Some(Search {
                queries: (queries.into_iter().flatten())
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                hits: Some(hits.collect()),
                failed: false,
            })
        }
        _ => None,
    }
}

/// `call`, made on another wire, as the hosted call of wire `to`: the same call under `id`
/// with `to`'s blocks, standing where it stood. `None` when `to` has no such call or `call` is
/// not complete enough to be one (a search whose result has not come); what `to` cannot carry
/// is left out and said in `notes`. A call made on `to` is itself.
pub(crate) fn translate(
    call: &HostedCall,
    to: &str,
    id: &str,
    notes: &mut Vec<String>,
) -> Option<HostedCall> {
    if call.wire == to {
        return Some(call.clone());
    }
    let Some(search) = search_of(call) else {
        notes.push(format!(
            "{} ran {} on its side; {to} has no such call, so it was left out",
            call.wire, call.name
        ));
        return None;
    };
    let hits = search.hits.as_ref()?;
    let query = search.queries.first().cloned().unwrap_or_default();
    match to {
        ANTHROPIC => {
            if hits.iter().any(|h| h.encrypted_content.is_none()) {
                notes.push(format!(
                    "{} web search results have no encrypted_content or page_age: the \
                     web_search_result entries carry url and title only",
                    call.wire
                ));
            }
            if search.queries.len() > 1 {
                notes.push(format!(
                    "the search ran {} queries; server_tool_use carries the first",
                    search.queries.len()
                ));
            }
            let input = json!({"query": query});
            let result = if search.failed {
                notes.push(format!(
                    "{} said the search failed without a reason: error_code unavailable",
                    call.wire
                ));
                json!({"type": "web_search_tool_result_error", "error_code": "unavailable"})
            } else {
                Value::Array(hits.iter().map(anthropic_hit).collect())
            };
            let blocks = [
                json!({"type": "server_tool_use", "id": id, "name": "web_search",
                       "input": input}),
                json!({"type": "web_search_tool_result", "tool_use_id": id,
                       "content": result}),
            ];
            Some(
                HostedCall::new(id, "web_search", to)
                    .with_input(input)
                    .with_result(result)
                    .with_at(call.at)
                    .with_blocks(blocks),
            )
        }
        RESPONSES => {
            if hits
                .iter()
                .any(|h| h.title.is_some() || h.encrypted_content.is_some())
            {
                notes.push(format!(
                    "a web_search_call source is a url only: the titles and contents of the \
                     {} results were left out",
                    call.wire
                ));
            }
            let sources: Vec<Value> = (hits.iter())
                .map(|h| json!({"type": "url", "url": h.url}))
                .collect();
            let mut action = Map::new();
            action.insert("type".into(), json!("search"));
            action.insert("query".into(), json!(query));
            if search.queries.len() > 1 {
                action.insert("queries".into(), json!(search.queries));
            }
            action.insert("sources".into(), Value::Array(sources));
            let status = if search.failed { "failed" } else { "completed" };
            let item = json!({"type": "web_search_call", "id": id, "status": status,
                              "action": action});
            Some(
                HostedCall::new(id, "web_search", to)
                    .with_input(json!({"action": action}))
                    .with_at(call.at)
                    .with_blocks([item]),
            )
        }
        _ => {
            notes.push(format!(
                "{} ran a web search on its side; {to} takes no such call back, so it was left \
                 out",
                call.wire
            ));
            None
        }
    }
}

fn anthropic_hit(h: &Hit) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), json!("web_search_result"));
    m.insert("url".into(), json!(h.url));
    for (key, value) in [
        ("title", &h.title),
        ("encrypted_content", &h.encrypted_content),
        ("page_age", &h.page_age),
    ] {
        if let Some(v) = value {
            m.insert(key.into(), json!(v));
        }
    }
    Value::Object(m)
}

/// The id a client on wire `to` sees for the translation of `call` (the `index`th hosted call
/// of its turn): a fresh id of `to`'s form carrying `call` itself, sealed, so that [`open`]
/// can put it back (`<id>_tw2_<sealed>`, only `[A-Za-z0-9_-]`).
pub(crate) fn carry(call: &HostedCall, to: &str, index: usize, seal: &Seal) -> String {
    let head = match to {
        ANTHROPIC => format!("srvtoolu_tw{index}"),
        _ => format!("ws_tw{index}"),
    };
    let mut state = Map::new();
    if let Ok(original) = serde_json::to_value(call) {
        state.insert("call".into(), original);
    }
    format!("{head}{SEP}{}", seal.pack(KIND, &head, &state))
}

/// `call` (the `index`th hosted call of its turn) as a client on wire `to` gets it: its
/// translation, under an id carrying the original sealed with `seal`; `None` when `to` has no
/// such call (the reason in `notes`).
pub(crate) fn for_client(
    call: &HostedCall,
    to: &str,
    index: usize,
    seal: &Seal,
    notes: &mut Vec<String>,
) -> Option<HostedCall> {
    if call.wire == to {
        return Some(call.clone());
    }
    let id = carry(call, to, index, seal);
    translate(call, to, &id, notes)
}

/// A whole answer as a client on wire `to` gets it: each hosted call made on another wire
/// replaced by its translation, or left out (the reasons in `notes`).
pub(crate) fn response_for_client(
    response: &ChatResponse,
    to: &str,
    seal: &Seal,
    notes: &mut Vec<String>,
) -> Option<ChatResponse> {
    if response.hosted_calls.iter().all(|c| c.wire == to) {
        return None;
    }
    let mut out = response.clone();
    out.hosted_calls = (response.hosted_calls.iter().enumerate())
        .filter_map(|(i, c)| for_client(c, to, i, seal, notes))
        .collect();
    Some(out)
}

/// A batch of stream events as a client on wire `to` gets them: each
/// [`StreamEvent::HostedCallComplete`] of a call made on another wire carries its translation
/// instead, or is left out. A call goes out once (a wire may say a call ended twice, the
/// first time without its blocks: a Responses status event, then its item), at the first
/// such event that has what the client's wire needs: its blocks, on its own wire. `written`
/// lists the calls handed on so far. Borrows the batch when it has no such event.
pub(crate) fn events_for_client<'e>(
    events: &'e [StreamEvent],
    to: &str,
    seal: &Seal,
    written: &mut Vec<usize>,
    notes: &mut Vec<String>,
) -> std::borrow::Cow<'e, [StreamEvent]> {
    let complete = |e: &StreamEvent| matches!(e, StreamEvent::HostedCallComplete { .. });
    if !events.iter().any(complete) {
        return std::borrow::Cow::Borrowed(events);
    }
    let mut out = Vec::with_capacity(events.len());
    for e in events {
        match e {
            StreamEvent::HostedCallComplete { index, call } => {
                if written.contains(index) {
                    continue;
                }
                let mut said = Vec::new();
                let mapped =
                    for_client(call, to, *index, seal, &mut said).filter(|c| !c.blocks.is_empty());
                if let Some(mapped) = mapped {
                    written.push(*index);
                    notes.append(&mut said);
                    out.push(StreamEvent::HostedCallComplete {
                        index: *index,
                        call: mapped,
                    });
                } else if call.result.is_some() || !call.blocks.is_empty() {
                    // Final, and still nothing the client's wire can carry.
                    notes.append(&mut said);
                }
            }
            other => out.push(other.clone()),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The original call a hosted call's id carries ([`carry`]), once its seal is checked; a call
/// whose id carries none is itself. A seal that does not match is an error naming `at`.
fn opened(call: HostedCall, seal: &Seal, at: &str) -> Result<HostedCall> {
    let Some((head, packed)) = call.id.rsplit_once(SEP) else {
        return Ok(call);
    };
    let refused = |why: &str| {
        Error::input(
            at,
            format!(
                "the hosted call this id carries is refused ({why}); send it back exactly as \
                 the gateway gave it"
            ),
        )
    };
    let state = seal.open(KIND, head, packed).map_err(refused)?;
    let original = state.get("call").cloned().unwrap_or(Value::Null);
    serde_json::from_value::<HostedCall>(original).map_err(|_| refused("not a hosted call"))
}

/// Puts back, in an assistant turn a gateway client sent, the upstream's own hosted calls
/// that the gateway handed the client translated ([`for_client`]); `at` names the turn.
pub(crate) fn open(turn: &mut AssistantMessage, seal: &Seal, at: &str) -> Result<()> {
    if !turn.hosted_calls.iter().any(|c| c.id.contains(SEP)) {
        return Ok(());
    }
    let calls = std::mem::take(&mut turn.hosted_calls);
    for (i, call) in calls.into_iter().enumerate() {
        let place = call.at;
        let back = opened(call, seal, &format!("{at}.hosted_calls[{i}]"))?;
        turn.hosted_calls.push(back.with_at(place));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderKind;

    fn seal() -> Seal {
        Seal::new([7u8; 32]).unwrap()
    }

    /// The call `hosted_web_search` (fixtures/anthropic) decodes to.
    fn anthropic_search() -> HostedCall {
        let result = json!([{"type": "web_search_result", "url": "https://example.org/lumieres",
            "title": "Fete des Lumieres 2026", "encrypted_content": "RW5jcnlwdGVkUGFnZTE=",
            "page_age": "2 weeks ago"}]);
        HostedCall::new("srvtoolu_01", "web_search", ANTHROPIC)
            .with_input(json!({"query": "Fete des Lumieres 2026 dates"}))
            .with_result(result.clone())
            .with_at(38)
            .with_blocks([
                json!({"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
                       "input": {"query": "Fete des Lumieres 2026 dates"}}),
                json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
                       "content": result}),
            ])
    }

    /// The call `hosted_web_search` (fixtures/openai-responses) decodes to.
    fn responses_search() -> HostedCall {
        let action = json!({"type": "search", "query": "Fete des Lumieres 2026 dates",
            "sources": [{"type": "url", "url": "https://example.org/lumieres"}]});
        HostedCall::new("ws_01", "web_search", RESPONSES)
            .with_input(json!({"action": action}))
            .with_at(0)
            .with_blocks([json!({"id": "ws_01", "type": "web_search_call",
                                 "status": "completed", "action": action})])
    }

    #[test]
    fn the_wire_names_are_the_providers() {
        assert_eq!(ANTHROPIC, ProviderKind::Anthropic.name());
        assert_eq!(RESPONSES, ProviderKind::OpenAiResponses.name());
        assert_eq!(GEMINI, ProviderKind::Gemini.name());
    }

    #[test]
    fn an_anthropic_search_is_a_web_search_call_with_its_urls() {
        let mut notes = Vec::new();
        let got = translate(&anthropic_search(), RESPONSES, "ws_x", &mut notes).unwrap();
        assert_eq!(
            got.blocks,
            [
                json!({"type": "web_search_call", "id": "ws_x", "status": "completed",
                    "action": {"type": "search", "query": "Fete des Lumieres 2026 dates",
                               "sources": [{"type": "url", "url": "https://example.org/lumieres"}]}})
            ]
        );
        assert_eq!(
            (got.wire.as_str(), got.at, got.result),
            (RESPONSES, 38, None)
        );
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("url only"), "{notes:?}");
    }

    #[test]
    fn a_responses_search_is_a_server_tool_use_and_its_result_with_nothing_made_up() {
        let mut notes = Vec::new();
        let got = translate(&responses_search(), ANTHROPIC, "srvtoolu_x", &mut notes).unwrap();
        assert_eq!(
            got.blocks,
            [
                json!({"type": "server_tool_use", "id": "srvtoolu_x", "name": "web_search",
                       "input": {"query": "Fete des Lumieres 2026 dates"}}),
                json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_x",
                       "content": [{"type": "web_search_result",
                                    "url": "https://example.org/lumieres"}]}),
            ]
        );
        assert!(notes[0].contains("encrypted_content"), "{notes:?}");
        // A failed search is the documented error, said in a note; one still running has no
        // result to carry yet.
        let mut failed = responses_search();
        failed.blocks[0]["status"] = json!("failed");
        let got = translate(&failed, ANTHROPIC, "s", &mut notes).unwrap();
        assert_eq!(
            got.blocks[1]["content"]["type"],
            "web_search_tool_result_error"
        );
        let mut running = anthropic_search();
        running.result = None;
        assert!(translate(&running, RESPONSES, "w", &mut notes).is_none());
    }

    #[test]
    fn gemini_grounding_carries_its_queries_and_pages_and_other_kinds_have_no_translation() {
        let grounding = HostedCall::new("", "google_search", GEMINI)
            .with_input(json!({"queries": ["a", "b"]}))
            .with_result(json!({"webSearchQueries": ["a", "b"], "groundingChunks": [
                {"web": {"uri": "https://x.example/1", "title": "x.example"}}]}));
        let mut notes = Vec::new();
        let got = translate(&grounding, RESPONSES, "ws_g", &mut notes).unwrap();
        assert_eq!(
            got.blocks[0]["action"],
            json!({"type": "search", "query": "a", "queries": ["a", "b"],
                   "sources": [{"type": "url", "url": "https://x.example/1"}]})
        );
        let got = translate(&grounding, ANTHROPIC, "s", &mut notes).unwrap();
        assert_eq!(
            got.blocks[1]["content"],
            json!([{"type": "web_search_result", "url": "https://x.example/1",
                    "title": "x.example"}])
        );
        let code = HostedCall::new("srvtoolu_c", "code_execution", ANTHROPIC)
            .with_result(json!({"stdout": "4"}));
        let before = notes.len();
        assert!(translate(&code, RESPONSES, "x", &mut notes).is_none());
        assert!(notes[before].contains("code_execution"), "{notes:?}");
        // Gemini takes no search back.
        assert!(translate(&anthropic_search(), GEMINI, "x", &mut notes).is_none());
    }

    #[test]
    fn the_original_comes_back_from_the_sealed_id_and_a_forged_one_is_refused() {
        let seal = seal();
        let original = anthropic_search();
        let mut notes = Vec::new();
        let mapped = for_client(&original, RESPONSES, 0, &seal, &mut notes).unwrap();
        assert!(mapped.id.starts_with("ws_tw0_tw2_"), "{}", mapped.id);
        assert!((mapped.id.bytes()).all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
        // The client echoes the item: read back as a Responses call with that id.
        let echoed = HostedCall::new(mapped.id.clone(), "web_search", RESPONSES)
            .with_blocks(mapped.blocks.clone())
            .with_at(38);
        let mut turn = AssistantMessage::default().with_hosted_calls([echoed.clone()]);
        open(&mut turn, &seal, "messages[1]").unwrap();
        assert_eq!(turn.hosted_calls, [original]);
        let mut forged = echoed;
        forged.id.push('0');
        let mut turn = AssistantMessage::default().with_hosted_calls([forged]);
        let err = open(&mut turn, &seal, "messages[1]")
            .unwrap_err()
            .to_string();
        assert!(err.contains("messages[1].hosted_calls[0]"), "{err}");
    }

    #[test]
    fn a_stream_hands_on_each_call_once_translated() {
        let seal = seal();
        let done = |call: HostedCall| StreamEvent::HostedCallComplete { index: 0, call };
        let mut unfinished = responses_search();
        unfinished.blocks.clear();
        let events = [
            StreamEvent::TextDelta { text: "a".into() },
            done(unfinished),
            done(responses_search()),
            done(responses_search()),
        ];
        let (mut written, mut notes) = (Vec::new(), Vec::new());
        let out = events_for_client(&events, ANTHROPIC, &seal, &mut written, &mut notes);
        assert_eq!(out.len(), 2, "{out:?}");
        let StreamEvent::HostedCallComplete { call, .. } = &out[1] else {
            panic!("{out:?}")
        };
        assert_eq!(call.wire, ANTHROPIC);
        assert_eq!(call.blocks[0]["type"], "server_tool_use");
        // A call on the client's own wire goes out as it is, once, when it has its blocks.
        let mut unfinished = anthropic_search();
        unfinished.blocks.clear();
        let mut mine = anthropic_search();
        mine.id = "srvtoolu_own".into();
        let own = [
            StreamEvent::HostedCallComplete {
                index: 1,
                call: unfinished,
            },
            StreamEvent::HostedCallComplete {
                index: 1,
                call: mine.clone(),
            },
            StreamEvent::HostedCallComplete {
                index: 1,
                call: mine.clone(),
            },
        ];
        let out = events_for_client(&own, ANTHROPIC, &seal, &mut written, &mut notes);
        assert_eq!(
            *out,
            [StreamEvent::HostedCallComplete {
                index: 1,
                call: mine
            }]
        );
        // A batch without such events is borrowed as it is.
        let plain = [StreamEvent::TextDelta { text: "b".into() }];
        let out = events_for_client(&plain, ANTHROPIC, &seal, &mut written, &mut notes);
        assert!(matches!(out, std::borrow::Cow::Borrowed(_)));
    }

    /// The other direction end to end, without IO: Anthropic's answer (the fixture
    /// `anthropic/hosted_web_search`) handed to a Responses client, whose next request sends
    /// the `web_search_call` back; the Anthropic request then carries Anthropic's own two
    /// blocks, byte for byte, where they stood.
    #[test]
    fn a_responses_client_sends_back_what_anthropic_gets_as_its_own_blocks() {
        use crate::provider::Provider;
        use crate::providers::anthropic::Anthropic;
        use crate::providers::openai_responses::gateway::read;

        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/anthropic/hosted_web_search"
        );
        let body = std::fs::read(format!("{dir}/response.json")).unwrap();
        let answer = Anthropic::new().decode(&body).unwrap();
        let seal = seal();
        let mut notes = Vec::new();
        let client = response_for_client(&answer, RESPONSES, &seal, &mut notes).unwrap();
        let item = client.hosted_calls[0].blocks[0].clone();
        assert_eq!(item["type"], "web_search_call");
        assert_eq!(
            item["action"]["sources"][0]["url"],
            "https://example.org/lumieres"
        );
        let request = json!({"model": "m", "input": [
            {"role": "user", "content": "When is the festival?"},
            {"role": "assistant", "content": "I'll look up the festival dates first."},
            item,
            {"role": "assistant", "content": "The festival runs from 5 to 8 December 2026."},
            {"role": "user", "content": "Thanks."}]});
        let mut asked = read(request.to_string().as_bytes()).unwrap();
        crate::providers::seal::open_request(&mut asked.request, &seal).unwrap();
        asked.request.model = "claude-sonnet-4-5".into();
        let sent = Anthropic::new().encode(&asked.request, false).unwrap();
        let content = &sent.body["messages"][1]["content"];
        let original = &answer.hosted_calls[0].blocks;
        assert_eq!(content[1], original[0], "{content}");
        assert_eq!(content[2], original[1], "{content}");
        assert_eq!(content[0]["text"], "I'll look up the festival dates first.");
        assert!(!sent.body.to_string().contains(SEP));
    }
}
