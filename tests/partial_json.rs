//! The structured partial-arguments reader against full parses.
//!
//! 1. Every tool call of every stream fixture (`fixtures/*/*/response.sse`, decoded with
//!    `toolwire::replay`): at every fragment boundary the value rebuilt from the events so far
//!    is consistent with the full parse of the call's arguments (strings are prefixes, arrays
//!    are prefixes, members present have consistent values, scalars are equal), and at the end
//!    it is equal; text a full parse rejects is reported invalid (or incomplete when cut off).
//! 2. The same for random JSON values split at random character boundaries.
//! 3. Nothing panics on any text, cut anywhere, and the verdict matches serde_json's.

use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Map, Value};
use toolwire::conformance;
use toolwire::partial_json::{PartialJson, PartialValue};
use toolwire::replay::replay;
use toolwire::{StreamEvent, provider_for};

fn runner(cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

/// Whether `partial` could grow into `full`.
fn consistent(partial: &Value, full: &Value) -> bool {
    match (partial, full) {
        (Value::Object(p), Value::Object(f)) => p
            .iter()
            .all(|(k, v)| f.get(k).is_some_and(|fv| consistent(v, fv))),
        (Value::Array(p), Value::Array(f)) => {
            p.len() <= f.len() && p.iter().zip(f).all(|(a, b)| consistent(a, b))
        }
        (Value::String(p), Value::String(f)) => f.starts_with(p.as_str()),
        _ => partial == full,
    }
}

/// How a full parse judges a text.
#[derive(Debug, PartialEq)]
enum Verdict {
    Value(Value),
    /// Ends before the value is complete.
    Cut,
    /// Not JSON.
    Invalid,
}

fn full_parse(text: &str) -> Verdict {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => Verdict::Value(v),
        Err(e) if e.is_eof() => Verdict::Cut,
        Err(_) => Verdict::Invalid,
    }
}

/// Feeds `fragments` one by one, checking the rebuilt value against `verdict` at every
/// boundary; returns the reader's own verdict at the end.
fn check_fragments(fragments: &[&str], verdict: &Verdict) -> Result<Verdict, String> {
    let mut reader = PartialJson::new();
    let mut value = PartialValue::new();
    let mut events = Vec::new();
    for (n, fragment) in fragments.iter().enumerate() {
        reader.feed(fragment, &mut events);
        events.drain(..).for_each(|e| value.apply(&e));
        if let (Verdict::Value(full), Some(partial)) = (verdict, value.value())
            && !consistent(partial, full)
        {
            return Err(format!(
                "after fragment {n} ({fragment:?}): {partial} cannot grow into {full}"
            ));
        }
    }
    let complete = reader.finish(&mut events);
    events.drain(..).for_each(|e| value.apply(&e));
    Ok(match (complete, reader.invalid(), value.value()) {
        (true, None, Some(v)) => Verdict::Value(v.clone()),
        (_, Some(_), _) => Verdict::Invalid,
        _ => Verdict::Cut,
    })
}

#[test]
fn every_fixture_call_rebuilds_at_every_fragment_boundary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut calls = 0;
    for case in conformance::case_dirs(&root).expect("fixtures/ is readable") {
        let body_path = case.join("response.sse");
        if !body_path.is_file() {
            continue;
        }
        let meta = conformance::load_meta(&case).ok();
        let Some(kind) = conformance::case_provider(&case, meta.as_ref()) else {
            continue;
        };
        let Ok(provider) = provider_for(kind) else {
            continue;
        };
        let body = std::fs::read(&body_path).unwrap();
        // Broken streams end in an error without their events: nothing to rebuild.
        let Ok(replayed) = replay(provider.as_ref(), &body) else {
            continue;
        };
        for (index, call) in replayed.response.tool_calls.iter().enumerate() {
            let fragments: Vec<&str> = replayed
                .events
                .iter()
                .take_while(
                    |e| !matches!(e, StreamEvent::ToolCallComplete { index: i, .. } if *i == index),
                )
                .filter_map(|e| match e {
                    StreamEvent::ToolCallDelta { index: i, fragment } if *i == index => {
                        Some(fragment.as_str())
                    }
                    _ => None,
                })
                .collect();
            assert_eq!(fragments.concat(), call.raw_arguments, "{}", case.display());
            if call.raw_arguments.trim().is_empty() {
                continue; // empty text means `{}`: nothing to read
            }
            let verdict = full_parse(&call.raw_arguments);
            let got = check_fragments(&fragments, &verdict)
                .unwrap_or_else(|e| panic!("{} call {index}: {e}", case.display()));
            assert_eq!(got, verdict, "{} call {index}", case.display());
            calls += 1;
        }
    }
    assert!(calls >= 50, "only {calls} fixture calls were read");
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
        "[\"\\\\/\u{1}\n\t\u{e9}\u{1f600}]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((".{0,8}", inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// `text` cut at the character boundaries nearest to `cuts`.
fn split<'a>(text: &'a str, cuts: &[usize]) -> Vec<&'a str> {
    let mut bounds: Vec<usize> = cuts
        .iter()
        .map(|&c| {
            let mut c = c.min(text.len());
            while !text.is_char_boundary(c) {
                c -= 1;
            }
            c
        })
        .collect();
    bounds.sort_unstable();
    bounds.dedup();
    let mut out = Vec::new();
    let mut start = 0;
    for b in bounds {
        out.push(&text[start..b]);
        start = b;
    }
    out.push(&text[start..]);
    out
}

fn cuts() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(0usize..4096, 0..40)
}

#[test]
fn random_values_rebuild_at_every_cut() {
    let strategy = (arb_json(), any::<bool>(), cuts());
    runner(512)
        .run(&strategy, |(value, pretty, cuts)| {
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            let cuts: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).collect();
            let verdict = full_parse(&text);
            let got =
                check_fragments(&split(&text, &cuts), &verdict).map_err(TestCaseError::fail)?;
            prop_assert_eq!(got, verdict);
            // Every prefix is a cut-off text, never an invalid one.
            let half = split(&text, &[text.len() / 2])[0];
            if !half.trim().is_empty() && half.len() < text.len() {
                let got = check_fragments(&[half], &Verdict::Cut).map_err(TestCaseError::fail)?;
                prop_assert!(matches!(got, Verdict::Cut | Verdict::Value(_)), "{half:?}");
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn any_text_cut_anywhere_never_panics_and_agrees_with_serde() {
    let texts = prop_oneof![
        any::<String>(),
        proptest::collection::vec(any::<u8>(), 0..200)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        // Near-JSON: JSON with a byte replaced.
        (arb_json(), any::<usize>(), any::<u8>()).prop_map(|(v, at, b)| {
            let mut bytes = serde_json::to_vec(&v).unwrap();
            if !bytes.is_empty() {
                let i = at % bytes.len();
                bytes[i] = b;
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }),
        "[\\[\\]{}\",:0-9eE.+\\-tfrunlas\\\\ ]{0,40}",
    ];
    runner(2048)
        .run(&(texts, cuts()), |(text, cuts)| {
            let cuts: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).collect();
            let verdict = full_parse(&text);
            let got =
                check_fragments(&split(&text, &cuts), &verdict).map_err(TestCaseError::fail)?;
            if text.trim().is_empty() {
                prop_assert_eq!(got, Verdict::Cut);
            } else {
                prop_assert_eq!(got, verdict, "{:?}", text);
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn replay_prints_the_argument_structure_with_the_events() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/openai/stream_malformed_args/response.sse");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolwire"))
        .args([
            "replay",
            "--provider",
            "openai",
            "--events",
            "--partial-json",
        ])
        .arg(&fixture)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Value> = stdout
        .lines()
        .take_while(|l| l.starts_with('{') && l.ends_with('}'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let structure: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "tool_call_arguments")
        .collect();
    assert!(
        structure
            .iter()
            .any(|l| l["event"] == "text" && l["pointer"] == "/path"),
        "{stdout}"
    );
    // The stray `}` after the object: the reader says where, and the raw text is still whole.
    let last = structure.last().unwrap();
    assert_eq!(last["event"], "invalid");
    assert_eq!(last["offset"], 36);
    assert!(stdout.contains(r#""raw_arguments": "{\"path\": \"notes.md\", \"text\": \"todo\"}}""#));
    // Without --events the flag is a usage error.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolwire"))
        .args(["replay", "--provider", "openai", "--partial-json"])
        .arg(&fixture)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
