//! The binary event-stream framing (Bedrock ConverseStream) through the one turn reader:
//!
//! 1. Chunking never matters: every `fixtures/bedrock/*/response.eventstream` decodes to the
//!    same events and response (or the same error) cut in two at every byte boundary, and fed
//!    one byte at a time.
//! 2. Hostile input stays typed and bounded: a bad prelude or message CRC is a decode error
//!    naming the frame's byte offset; a huge announced length is refused from the 12-byte
//!    prelude, before anything is buffered; a stream cut inside a frame is a broken stream
//!    with the partial response; exception and error frames are API errors; arbitrary bytes
//!    never panic, whatever the chunking.
//! 3. Work is linear: a long stream fed one byte at a time decodes (a quadratic reader would
//!    not finish).

use std::path::PathBuf;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::json;
use toolwire::conformance::error_json;
use toolwire::eventstream::encode_frame;
use toolwire::replay::{replay, replay_chunks};
use toolwire::turn::{Limits, TurnReader};
use toolwire::{Error, FinishReason, ProviderKind, provider_for};

fn bedrock() -> Box<dyn toolwire::Provider> {
    provider_for(ProviderKind::Bedrock).unwrap()
}

fn event(kind: &str, payload: serde_json::Value) -> Vec<u8> {
    encode_frame(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// A short turn: text, one call, the stop and the usage.
fn turn() -> Vec<u8> {
    let mut out = event("messageStart", json!({"role": "assistant"}));
    out.extend(event(
        "contentBlockDelta",
        json!({"contentBlockIndex": 0, "delta": {"text": "Checking Lyon."}}),
    ));
    out.extend(event("contentBlockStop", json!({"contentBlockIndex": 0})));
    out.extend(event(
        "contentBlockStart",
        json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tooluse_x", "name": "get_weather"}}}),
    ));
    out.extend(event(
        "contentBlockDelta",
        json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"city\":\"Lyon\"}"}}}),
    ));
    out.extend(event("contentBlockStop", json!({"contentBlockIndex": 1})));
    out.extend(event("messageStop", json!({"stopReason": "tool_use"})));
    out.extend(event(
        "metadata",
        json!({"usage": {"inputTokens": 5, "outputTokens": 7, "totalTokens": 12}}),
    ));
    out
}

/// The outcome as comparable JSON: the events and response, or the error's golden form.
fn outcome<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> serde_json::Value {
    match replay_chunks(bedrock().as_ref(), chunks) {
        Ok(r) => json!({"events": r.events, "response": r.response}),
        Err(e) => error_json(&e),
    }
}

fn fixtures() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/bedrock");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path().join("response.eventstream"))
        .filter(|p| p.exists())
        .collect();
    out.sort();
    out
}

#[test]
fn every_split_of_every_fixture_decodes_the_same() {
    let files = fixtures();
    assert!(files.len() >= 6, "{files:?}");
    for path in files {
        let body = std::fs::read(&path).unwrap();
        let whole = outcome([body.as_slice()]);
        for cut in 0..=body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(outcome([a, b]), whole, "{} cut at {cut}", path.display());
        }
        assert_eq!(
            outcome(body.chunks(1)),
            whole,
            "{} byte by byte",
            path.display()
        );
    }
}

#[test]
fn a_clean_turn_decodes() {
    let r = replay(bedrock().as_ref(), &turn()).unwrap().response;
    assert_eq!(r.text.as_deref(), Some("Checking Lyon."));
    assert_eq!(r.tool_calls[0].raw_arguments, r#"{"city":"Lyon"}"#);
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(r.usage.unwrap().output_tokens, 7);
}

#[test]
fn a_bad_crc_names_the_frame_offset() {
    let body = turn();
    let first = event("messageStart", json!({"role": "assistant"})).len();
    // A payload byte of the second frame: its message CRC fails.
    let mut bad = body.clone();
    bad[first + 60] ^= 0x01;
    let err = replay(bedrock().as_ref(), &bad).unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err}");
    assert!(
        err.to_string().contains(&format!("frame at byte {first}")),
        "{err}"
    );
    assert!(err.to_string().contains("message CRC"), "{err}");
    // A length byte of the second frame: the prelude CRC fails before the length is trusted.
    let mut bad = body.clone();
    bad[first + 2] ^= 0x10;
    let err = replay(bedrock().as_ref(), &bad).unwrap_err();
    assert!(err.to_string().contains("prelude CRC"), "{err}");
    assert!(
        err.to_string().contains(&format!("frame at byte {first}")),
        "{err}"
    );
}

#[test]
fn a_huge_length_is_refused_from_the_prelude() {
    let bedrock = bedrock();
    let mut prelude = Vec::new();
    prelude.extend(0x0FFF_FFF0u32.to_be_bytes());
    prelude.extend(0u32.to_be_bytes());
    prelude.extend(crc32(&prelude).to_be_bytes());
    let mut reader = TurnReader::new(bedrock.as_ref()).with_limits(Limits::default());
    let mut events = Vec::new();
    // The 12 prelude bytes are enough to refuse it: nothing of the 256 MiB is waited for.
    let err = reader.push(&prelude, &mut events).unwrap_err();
    assert!(matches!(err, Error::Stream { .. }), "{err}");
    assert!(err.to_string().contains("Limits::max_event_bytes"), "{err}");
    // A small limit holds for a real frame too.
    let mut reader =
        TurnReader::new(bedrock.as_ref()).with_limits(Limits::default().with_max_event_bytes(40));
    let err = reader.push(&turn(), &mut events).unwrap_err();
    assert!(err.to_string().contains("larger than 40"), "{err}");
}

/// CRC32 (IEEE), bitwise: the test's own, independent of the crate's.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn the_frames_match_an_independent_crc() {
    let frame = event("messageStop", json!({"stopReason": "end_turn"}));
    let n = frame.len();
    assert_eq!(&frame[8..12], &crc32(&frame[..8]).to_be_bytes());
    assert_eq!(&frame[n - 4..], &crc32(&frame[..n - 4]).to_be_bytes());
}

#[test]
fn a_stream_cut_inside_a_frame_is_broken_with_its_partial() {
    let body = turn();
    let cut = body.len() - 30;
    let err = replay(bedrock().as_ref(), &body[..cut]).unwrap_err();
    assert!(matches!(err, Error::Stream { .. }), "{err}");
    assert!(err.to_string().contains("ended inside"), "{err}");
    let partial = err.partial().unwrap();
    assert_eq!(partial.text.as_deref(), Some("Checking Lyon."));
    // Cut between frames before messageStop: the turn never finished.
    let frames_before_stop = {
        let stop = event("messageStop", json!({"stopReason": "tool_use"}));
        let meta_len = body.len()
            - body
                .windows(stop.len())
                .position(|w| w == stop.as_slice())
                .unwrap();
        body.len() - meta_len
    };
    let err = replay(bedrock().as_ref(), &body[..frames_before_stop]).unwrap_err();
    assert!(matches!(err, Error::Stream { .. }), "{err}");
}

#[test]
fn exception_and_error_frames_are_api_errors() {
    let mut body = event("messageStart", json!({"role": "assistant"}));
    body.extend(event(
        "contentBlockDelta",
        json!({"contentBlockIndex": 0, "delta": {"text": "Half"}}),
    ));
    let mut exception = body.clone();
    exception.extend(encode_frame(
        &[
            (":exception-type", "modelStreamErrorException"),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        br#"{"message":"The model stream failed","originalStatusCode":500}"#,
    ));
    let err = replay(bedrock().as_ref(), &exception).unwrap_err();
    let api = err.api().unwrap();
    assert_eq!(api.code.as_deref(), Some("modelStreamErrorException"));
    assert_eq!(api.message, "The model stream failed");
    assert_eq!(err.partial().unwrap().text.as_deref(), Some("Half"));
    let mut error = body;
    error.extend(encode_frame(
        &[
            (":message-type", "error"),
            (":error-code", "InternalFailure"),
            (":error-message", "try again"),
        ],
        b"",
    ));
    let err = replay(bedrock().as_ref(), &error).unwrap_err();
    let api = err.api().unwrap();
    assert_eq!(api.code.as_deref(), Some("InternalFailure"));
    assert_eq!(api.message, "try again");
}

#[test]
fn a_json_body_and_a_stream_both_replay() {
    let body = br#"{"output":{"message":{"role":"assistant","content":[{"text":"Hi"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}"#;
    let r = replay(bedrock().as_ref(), body).unwrap().response;
    assert_eq!(r.text.as_deref(), Some("Hi"));
    let err = replay(bedrock().as_ref(), b"data: {\"choices\":[]}\n\n").unwrap_err();
    assert!(
        matches!(err, Error::Decode { .. } | Error::Stream { .. }),
        "{err}"
    );
}

#[test]
fn a_long_stream_byte_by_byte_is_linear() {
    let mut body = event("messageStart", json!({"role": "assistant"}));
    let n = 20_000;
    for _ in 0..n {
        body.extend(event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "ab"}}),
        ));
    }
    body.extend(event("contentBlockStop", json!({"contentBlockIndex": 0})));
    body.extend(event("messageStop", json!({"stopReason": "end_turn"})));
    let r = replay_chunks(bedrock().as_ref(), body.chunks(1)).unwrap();
    assert_eq!(r.response.text.unwrap().len(), 2 * n);
}

#[test]
fn arbitrary_bytes_never_panic_and_chunking_never_matters() {
    let config = Config {
        cases: 256,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let valid = turn();
    // Random bytes, and the valid turn with random bytes overwritten.
    let strategy = (
        prop::collection::vec(any::<u8>(), 0..400),
        prop::collection::vec((0..valid.len(), any::<u8>()), 0..4),
        0usize..400,
        any::<bool>(),
    );
    runner
        .run(&strategy, |(noise, edits, cut, mutate)| {
            let body = if mutate {
                let mut b = valid.clone();
                for (at, byte) in &edits {
                    b[*at] = *byte;
                }
                b
            } else {
                let mut b = vec![0u8];
                b.extend(&noise);
                b
            };
            let cut = cut.min(body.len());
            let whole = outcome([body.as_slice()]);
            prop_assert_eq!(outcome([&body[..cut], &body[cut..]]), whole);
            Ok(())
        })
        .unwrap();
}
