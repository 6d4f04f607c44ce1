//! Realtime fixtures (one test per case folder, plus a completeness check) and the realtime
//! property tests: replaying a session gives the same calls however its argument deltas are
//! split, and no event sequence makes a codec panic.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Value, json};
use toolwire::conformance::realtime::REALTIME_CASES;
use toolwire::conformance::{self, Mode};
use toolwire::realtime::replay::{Direction, SessionLine, parse_session, replay_lines};
use toolwire::realtime::{RealtimeCodec, RealtimeKind};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn run(dialect: &str, case: &str) {
    let dir = fixtures().join(dialect).join(case);
    assert!(dir.is_dir(), "{} is missing", dir.display());
    let report = conformance::run_case(&dir, Mode::Check);
    assert!(
        report.passed(),
        "{dialect}/{case} failed:\n{}",
        report.failures().join("\n")
    );
    assert_eq!(report.realtime.map(|k| k.name()), Some(dialect));
}

/// `cases!(module = "folder": case, ...)` registers one `#[test]` per case folder.
macro_rules! cases {
    ($module:ident = $dir:literal: $($case:ident),* $(,)?) => {
        mod $module {
            $(
                #[test]
                fn $case() {
                    super::run($dir, stringify!($case));
                }
            )*
            pub(crate) const CASES: &[&str] = &[$(stringify!($case)),*];
        }
    };
}

cases!(openai_realtime = "openai-realtime": cancellation, closed_mid_call, error_event,
    quirk_calls_without_item_id, quirk_done_disagrees_with_deltas, quirk_done_without_name,
    quirk_incomplete_max_output_tokens, quirk_item_done_without_arguments_done, quirk_session_settings,
    quirk_settings_refused, quirk_superseded_response, quirk_tool_choice_named,
    result_unknown_call, session_configuration, stream_parallel_calls, stream_single_call,
    stream_text_then_call, tool_result_roundtrip, unknown_event);
cases!(glm_realtime = "glm-realtime": cancellation, closed_mid_call, error_event,
    quirk_done_without_response_id, quirk_settings_refused, quirk_tool_choice_required,
    quirk_tools_need_audio,
    result_unknown_call, session_configuration, stream_parallel_calls, stream_single_call,
    stream_text_then_call, tool_result_roundtrip, unknown_event);
cases!(qwen_realtime = "qwen-realtime": cancellation, closed_mid_call, error_event,
    quirk_enable_search_with_tools, quirk_session_settings, result_unknown_call, session_configuration,
    stream_parallel_calls, stream_single_call, stream_text_then_call, tool_result_roundtrip,
    unknown_event);
cases!(stepfun_realtime = "stepfun-realtime": cancellation, closed_mid_call, error_event,
    quirk_settings_refused, quirk_tools_always_present, result_unknown_call, session_configuration,
    stream_parallel_calls, stream_single_call, stream_text_then_call, tool_result_roundtrip,
    unknown_event);
cases!(gemini_live = "gemini-live": cancellation, closed_mid_call, error_event,
    quirk_call_without_args, quirk_call_without_id, quirk_session_settings, quirk_thought_parts,
    result_unknown_call, session_configuration,
    stream_parallel_calls, stream_single_call, stream_text_then_call, tool_result_roundtrip,
    unknown_event);

const REGISTERED: &[(&str, &[&str])] = &[
    ("openai-realtime", openai_realtime::CASES),
    ("glm-realtime", glm_realtime::CASES),
    ("qwen-realtime", qwen_realtime::CASES),
    ("stepfun-realtime", stepfun_realtime::CASES),
    ("gemini-live", gemini_live::CASES),
];

#[test]
fn every_realtime_fixture_is_registered() {
    let mut problems = Vec::new();
    for kind in RealtimeKind::ALL {
        let dir = fixtures().join(kind.name());
        let registered = REGISTERED
            .iter()
            .find(|(d, _)| *d == kind.name())
            .map_or(&[][..], |(_, c)| *c);
        if !dir.is_dir() {
            problems.push(format!("fixtures/{kind} is missing"));
            continue;
        }
        for case in std::fs::read_dir(&dir).unwrap() {
            let case = case.unwrap().path();
            let name = case.file_name().unwrap().to_string_lossy().into_owned();
            if case.is_dir() && !registered.contains(&name.as_str()) {
                problems.push(format!("{kind}/{name} has no test (add it to cases!)"));
            }
        }
        let skip = std::fs::read_to_string(dir.join("SKIP")).unwrap_or_default();
        for case in REALTIME_CASES {
            let skipped = skip.lines().any(|l| {
                l.split_once(':')
                    .is_some_and(|(c, why)| c.trim() == case && !why.trim().is_empty())
            });
            if !registered.contains(&case) && !skipped {
                problems.push(format!("{kind}/{case}: canonical realtime case missing"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn runner(cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

/// Every recorded session of a dialect that streams argument deltas.
fn delta_sessions() -> Vec<(RealtimeKind, PathBuf, Vec<SessionLine>)> {
    let mut out = Vec::new();
    for kind in [
        RealtimeKind::OpenAiRealtime,
        RealtimeKind::QwenRealtime,
        RealtimeKind::StepFunRealtime,
    ] {
        for case in conformance::case_dirs(&fixtures().join(kind.name())).unwrap() {
            let path = case.join("session.jsonl");
            if let Ok(bytes) = std::fs::read(&path) {
                let lines = parse_session(&bytes).unwrap();
                let has_deltas = lines.iter().any(|l| {
                    l.event.as_ref().and_then(|e| e["type"].as_str())
                        == Some("response.function_call_arguments.delta")
                });
                if has_deltas {
                    out.push((kind, path, lines));
                }
            }
        }
    }
    assert!(out.len() >= 15, "too few delta sessions: {}", out.len());
    out
}

/// The session with each run of consecutive deltas of one call replaced by other pieces of the
/// same text, cut at character boundaries as `cuts` says (0 makes an empty piece).
fn resplit(lines: &[SessionLine], cuts: &[usize]) -> Vec<SessionLine> {
    let delta_key = |l: &SessionLine| {
        let e = l.event.as_ref()?;
        (l.dir == Direction::Server
            && e["type"].as_str() == Some("response.function_call_arguments.delta"))
        .then(|| (e["response_id"].clone(), e["call_id"].clone()))
    };
    let mut out = Vec::new();
    let mut cut = cuts.iter().cycle();
    let mut i = 0;
    while i < lines.len() {
        let Some(key) = delta_key(&lines[i]) else {
            out.push(lines[i].clone());
            i += 1;
            continue;
        };
        let first = lines[i].event.clone().unwrap();
        let mut text = String::new();
        while i < lines.len() && delta_key(&lines[i]).as_ref() == Some(&key) {
            text.push_str(lines[i].event.as_ref().unwrap()["delta"].as_str().unwrap());
            i += 1;
        }
        let bounds: Vec<usize> = text
            .char_indices()
            .map(|(b, _)| b)
            .chain(std::iter::once(text.len()))
            .collect();
        let mut p = 0;
        while p + 1 < bounds.len() {
            let mut step = *cut.next().unwrap() % 5;
            if step == 0 {
                let mut e = first.clone();
                e["delta"] = json!("");
                out.push(SessionLine::event(Direction::Server, e));
                step = 1;
            }
            let q = (p + step).min(bounds.len() - 1);
            let mut e = first.clone();
            e["delta"] = json!(&text[bounds[p]..bounds[q]]);
            out.push(SessionLine::event(Direction::Server, e));
            p = q;
        }
    }
    out
}

fn calls_of(kind: RealtimeKind, lines: &[SessionLine]) -> Value {
    let replay = replay_lines(kind, lines);
    json!({
        "responses": replay.responses,
        "summary": {
            "calls": replay.summary()["calls_ready"],
            "awaiting": replay.awaiting,
            "ended": replay.ended_mid_response,
        }
    })
}

#[test]
fn argument_delta_splits_never_change_the_calls() {
    let sessions = delta_sessions();
    let mut runner = runner(64);
    runner
        .run(&proptest::collection::vec(0usize..64, 1..12), |cuts| {
            for (kind, path, lines) in &sessions {
                let expected = calls_of(*kind, lines);
                let actual = calls_of(*kind, &resplit(lines, &cuts));
                prop_assert_eq!(
                    &actual,
                    &expected,
                    "{} with cuts {:?}",
                    path.display(),
                    cuts
                );
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn resplitting_really_changes_the_deltas() {
    // The property above is only worth something if resplit produces other deltas.
    let (_, _, lines) = &delta_sessions()[0];
    let count = |ls: &[SessionLine]| {
        ls.iter()
            .filter(|l| {
                l.event.as_ref().and_then(|e| e["type"].as_str())
                    == Some("response.function_call_arguments.delta")
            })
            .count()
    };
    assert_ne!(count(lines), count(&resplit(lines, &[1])));
}

/// Event types and fields that steer the codecs, mixed at random with junk.
fn arbitrary_event() -> impl Strategy<Value = Value> {
    let kinds = prop::sample::select(vec![
        "response.created",
        "response.done",
        "response.output_item.added",
        "response.output_item.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_audio_transcript.delta",
        "input_audio_buffer.speech_started",
        "error",
        "what.is.this",
    ]);
    let ids = prop::sample::select(vec!["", "r1", "r2", "c1", "c2", "i1"]);
    let text = prop::sample::select(vec!["", "{", "}", "{\"a\":1}", "\"x", "é", "null"]);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        text.clone().prop_map(|s| json!(s)),
    ];
    (
        kinds,
        ids.clone(),
        ids.clone(),
        ids,
        text,
        leaf.clone(),
        leaf,
    )
        .prop_map(|(kind, rid, cid, item, t, junk1, junk2)| {
            json!({
                "type": kind,
                "response_id": rid,
                "call_id": cid,
                "item_id": item,
                "delta": t,
                "arguments": junk1,
                "name": "f",
                "output_index": junk2,
                "response": {"id": rid, "status": t},
                "item": {"type": "function_call", "call_id": cid, "id": item, "status": t},
                "error": junk1,
                "serverContent": {"modelTurn": {"parts": [{"text": t}]}, "turnComplete": junk2},
                "toolCall": {"functionCalls": [{"id": cid, "name": t, "args": junk1}]},
                "toolCallCancellation": {"ids": [cid]},
            })
        })
}

#[test]
fn no_event_sequence_panics_and_every_response_ends() {
    let mut runner = runner(256);
    runner
        .run(
            &(
                prop::sample::select(RealtimeKind::ALL.to_vec()),
                proptest::collection::vec(arbitrary_event(), 0..40),
            ),
            |(kind, events)| {
                let mut codec = RealtimeCodec::new(kind);
                let mut out = Vec::new();
                for e in events {
                    codec.feed(e, &mut out);
                    let _ = codec.take_outgoing();
                }
                codec.close(None, "end", &mut out);
                prop_assert!(!codec.is_responding());
                let started = out
                    .iter()
                    .filter(|e| {
                        matches!(e, toolwire::realtime::RealtimeEvent::ResponseStarted { .. })
                    })
                    .count();
                let done = out
                    .iter()
                    .filter(|e| matches!(e, toolwire::realtime::RealtimeEvent::ResponseDone { .. }))
                    .count();
                prop_assert_eq!(started, done);
                Ok(())
            },
        )
        .unwrap();
}

/// One call of [`distinct_calls_session`]: its argument text and which keys its events carry
/// besides `call_id`.
#[derive(Debug, Clone)]
struct PlannedCall {
    text: String,
    item_id: bool,
    output_index: bool,
}

fn planned_call() -> impl Strategy<Value = PlannedCall> {
    ("[a-z\u{e9}\"{}:,]{0,12}", any::<bool>(), any::<bool>()).prop_map(
        |(value, item_id, output_index)| PlannedCall {
            text: json!({ "v": value }).to_string(),
            item_id,
            output_index,
        },
    )
}

/// One response whose calls' deltas interleave as `order` says (each entry picks, modulo the
/// calls with text left, whose next piece comes), each cut at character boundaries by `cuts`;
/// each call's `.done` (with its name and whole text) follows its last piece.
fn distinct_calls_session(calls: &[PlannedCall], order: &[usize], cuts: &[usize]) -> Vec<Value> {
    let mut events = vec![json!({"type": "response.created", "response": {"id": "resp_p"}})];
    let keys = |i: usize, c: &PlannedCall, mut e: Value| {
        e["response_id"] = json!("resp_p");
        e["call_id"] = json!(format!("call_p{i}"));
        if c.item_id {
            e["item_id"] = json!(format!("item_p{i}"));
        }
        if c.output_index {
            e["output_index"] = json!(i);
        }
        e
    };
    // Each call's pieces, in order.
    let mut cut = cuts.iter().cycle();
    let mut pieces: Vec<std::collections::VecDeque<String>> = calls
        .iter()
        .map(|c| {
            let bounds: Vec<usize> = c
                .text
                .char_indices()
                .map(|(b, _)| b)
                .chain(std::iter::once(c.text.len()))
                .collect();
            let mut out = std::collections::VecDeque::new();
            let mut p = 0;
            while p + 1 < bounds.len() {
                let q = (p + 1 + cut.next().copied().unwrap_or(0) % 4).min(bounds.len() - 1);
                out.push_back(c.text[bounds[p]..bounds[q]].to_owned());
                p = q;
            }
            out
        })
        .collect();
    let mut pick = order.iter().cycle();
    loop {
        let live: Vec<usize> = (0..calls.len())
            .filter(|&i| !pieces[i].is_empty())
            .collect();
        if live.is_empty() {
            break;
        }
        let i = live[pick.next().copied().unwrap_or(0) % live.len()];
        let delta = pieces[i].pop_front().unwrap_or_default();
        events.push(keys(
            i,
            &calls[i],
            json!({"type": "response.function_call_arguments.delta", "delta": delta}),
        ));
        if pieces[i].is_empty() {
            events.push(keys(
                i,
                &calls[i],
                json!({"type": "response.function_call_arguments.done",
                       "name": format!("tool_{i}"), "arguments": calls[i].text}),
            ));
        }
    }
    events.push(json!({"type": "response.done",
                       "response": {"id": "resp_p", "status": "completed"}}));
    events
}

#[test]
fn distinct_call_ids_are_never_merged() {
    // Argument deltas of N calls, each with its own call_id, with or without item_id and
    // output_index, interleaved: N calls, each with exactly its own text.
    let mut runner = runner(256);
    runner
        .run(
            &(
                prop::sample::select(vec![
                    RealtimeKind::OpenAiRealtime,
                    RealtimeKind::QwenRealtime,
                    RealtimeKind::StepFunRealtime,
                    RealtimeKind::GlmRealtime,
                ]),
                proptest::collection::vec(planned_call(), 1..5),
                proptest::collection::vec(0usize..8, 1..16),
                proptest::collection::vec(0usize..8, 1..16),
            ),
            |(kind, calls, order, cuts)| {
                let lines: Vec<SessionLine> = distinct_calls_session(&calls, &order, &cuts)
                    .into_iter()
                    .map(|e| SessionLine::event(Direction::Server, e))
                    .collect();
                let replay = replay_lines(kind, &lines);
                prop_assert_eq!(replay.responses.len(), 1);
                let got: Vec<(String, String, String)> = replay.responses[0]
                    .tool_calls
                    .iter()
                    .map(|c| (c.id.clone(), c.name.clone(), c.raw_arguments.clone()))
                    .collect();
                let want: Vec<(String, String, String)> = (0..calls.len())
                    .map(|i| {
                        (
                            format!("call_p{i}"),
                            format!("tool_{i}"),
                            calls[i].text.clone(),
                        )
                    })
                    .collect();
                let mut got_sorted = got.clone();
                got_sorted.sort();
                prop_assert_eq!(got_sorted, want, "{} calls {:?}", kind, got);
                prop_assert!(
                    replay.responses[0]
                        .tool_calls
                        .iter()
                        .all(|c| c.is_complete())
                );
                Ok(())
            },
        )
        .unwrap();
}
