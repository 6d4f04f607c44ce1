//! `toolwire replay --base-url`: a capture from another server than the provider's own is read
//! with that server's dialect, as conformance reads a case whose `meta.toml` has a `base_url`.

use std::process::Command;

use serde_json::Value;

fn replay(args: &[&str], body: &str) -> Value {
    let dir = std::env::temp_dir().join(format!("toolwire-cli-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // One file per call: tests run in parallel in this process.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir.join(format!("body-{n}.sse"));
    std::fs::write(&path, body).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolwire"))
        .args(["replay", "--provider", "openai"])
        .args(args)
        .arg(&path)
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Two calls whose fragments alternate between index 0 and index 1.
fn interleaved() -> String {
    let chunk = |call: &str| {
        format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{call}]}},\"finish_reason\":null}}]}}\n\n"
        )
    };
    let mut body = String::new();
    for i in 0..2 {
        body += &chunk(&format!(
            r#"{{"index":{i},"id":"call_{i}","type":"function","function":{{"name":"lookup","arguments":""}}}}"#
        ));
    }
    for piece in [r#"{\"q\":"#, r#"\"x\"}"#] {
        for i in 0..2 {
            body += &chunk(&format!(
                r#"{{"index":{i},"function":{{"arguments":"{piece}"}}}}"#
            ));
        }
    }
    body + "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"
}

#[test]
fn a_base_url_reads_the_capture_with_the_compatible_dialect() {
    let body = interleaved();
    let r = replay(&["--base-url", "http://127.0.0.1:8000/v1"], &body);
    let calls = r["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    for call in calls {
        assert_eq!(call["raw_arguments"], r#"{"q":"x"}"#, "{call}");
        assert_eq!(call["arguments"]["q"], "x");
        assert!(call["error"].is_null() && call.get("late_arguments").is_none());
    }
    // OpenAI's own endpoint ends a call when the next index starts (its SDK's rule), but only
    // once the call's text is a complete JSON object: interleaved fragments are never cut off,
    // and no call comes out with arguments other than the text the wire sent for it.
    let r = replay(&[], &body);
    for call in r["tool_calls"].as_array().unwrap() {
        assert_eq!(call["raw_arguments"], r#"{"q":"x"}"#, "{call}");
        assert!(call["error"].is_null(), "{call}");
    }
    // The provider's own URL is the provider's own dialect.
    let own = replay(&["--base-url", "https://api.openai.com/v1"], &body);
    assert_eq!(own, r);
}

#[test]
fn encode_reports_downgrades_on_stderr() {
    let request = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/openai/quirk_tool_result_image/request.json"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_toolwire"))
        .args(["encode", "--provider", "openai", request])
        .output()
        .expect("run toolwire");
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim_end(),
        "note: messages[2] part 1: openai tool messages carry text only: the image went in a \
         user message after the tool results"
    );
    let body: Value = serde_json::from_slice(&out.stdout).expect("a JSON body on stdout");
    assert_eq!(body["messages"][3]["role"], "user");
}

/// `--text-calls`: a call the model wrote into its text comes back as a call; without a
/// request its parameter values stay strings, with one they are typed by its tools' schemas.
#[test]
fn text_calls_are_recovered_from_the_text() {
    let case = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/openai/text_calls_qwen_xml_single"
    );
    let body = std::fs::read_to_string(format!("{case}/response.sse")).unwrap();
    let plain = replay(&[], &body);
    assert!(plain["tool_calls"].as_array().unwrap().is_empty());
    assert!(
        plain["text"]
            .as_str()
            .unwrap()
            .contains("<function=get_weather>")
    );

    let r = replay(&["--text-calls", "qwen-xml"], &body);
    assert_eq!(r["text"], "Checking.\n");
    assert_eq!(r["finish_reason"], "tool_calls");
    assert_eq!(r["tool_calls"][0]["name"], "get_weather");
    assert_eq!(
        r["tool_calls"][0]["raw_arguments"],
        r#"{"city":"Oslo","days":"2"}"#
    );

    let request = format!("{case}/request.json");
    let r = replay(&["--text-calls", "auto", "--request", &request], &body);
    assert_eq!(
        r["tool_calls"][0]["raw_arguments"],
        r#"{"city":"Oslo","days":2}"#
    );
}

#[test]
fn text_calls_are_refused_where_the_wire_has_no_text_calls() {
    let case = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/anthropic/stream_single_call"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_toolwire"))
        .args([
            "replay",
            "--provider",
            "anthropic",
            "--text-calls",
            "hermes",
        ])
        .arg(format!("{case}/response.sse"))
        .output()
        .expect("the binary runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("text_calls"), "{err}");
    let unknown = Command::new(env!("CARGO_BIN_EXE_toolwire"))
        .args(["replay", "--provider", "openai", "--text-calls", "xml"])
        .arg(format!("{case}/response.sse"))
        .output()
        .expect("the binary runs");
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("qwen-xml"));
}

/// `toolwire replay --provider bedrock FILE` reads either body form Bedrock sends: a whole
/// Converse JSON body or a ConverseStream binary event stream; a damaged frame is bad input
/// (exit 2) naming its byte offset, an exception frame the provider's error (exit 1).
#[test]
fn bedrock_replays_a_json_body_and_a_binary_event_stream() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/bedrock");
    let run = |case: &str, file: &str| {
        Command::new(env!("CARGO_BIN_EXE_toolwire"))
            .args([
                "replay",
                "--provider",
                "bedrock",
                &format!("{dir}/{case}/{file}"),
            ])
            .output()
            .expect("the binary runs")
    };
    for (case, file) in [
        ("single_call", "response.json"),
        ("stream_single_call", "response.eventstream"),
    ] {
        let out = run(case, file);
        assert!(out.status.success(), "{case}: {out:?}");
        let got: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(got["tool_calls"][0]["name"], "get_weather", "{case}");
        assert_eq!(got["finish_reason"], "tool_calls", "{case}");
    }
    let out = run("quirk_bad_crc", "response.eventstream");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("frame at byte 272"));
    let out = run("quirk_exception_frame", "response.eventstream");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("throttlingException"));
}

/// `-` reads the captured body from standard input, on the streaming path too: the same
/// response as from a file.
#[test]
fn a_dash_reads_the_stream_from_standard_input() {
    use std::io::Write;
    use std::process::Stdio;
    let body = interleaved();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolwire"))
        .args(["replay", "--provider", "openai", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(body.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "{out:?}");
    let from_stdin: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        from_stdin["tool_calls"][1]["arguments"]["q"], "x",
        "{from_stdin}"
    );
    assert_eq!(from_stdin, replay(&[], &interleaved()));
}
