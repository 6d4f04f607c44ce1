use super::*;
use serde_json::json;

fn run(format: TextCallFormat, chunks: &[&str]) -> Vec<Piece> {
    let config = TextCalls::new(
        format,
        [(
            "get_weather".to_owned(),
            json!({"type": "object", "properties": {
                "city": {"type": "string"}, "days": {"type": "integer"},
                "metric": {"type": "boolean"}, "tags": {"type": "array"}}}),
        )],
    );
    let mut r = Recogniser::new(&config);
    let mut out = Vec::new();
    for c in chunks {
        r.push(c, &mut out);
    }
    r.finish(&mut out);
    merged(out)
}

/// Adjacent text and argument pieces joined, so chunkings compare equal.
fn merged(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    for p in pieces {
        match (out.last_mut(), p) {
            (Some(Piece::Text(a)), Piece::Text(b)) => a.push_str(&b),
            (Some(Piece::Arguments(a)), Piece::Arguments(b)) => a.push_str(&b),
            (_, p) => out.push(p),
        }
    }
    out
}

fn every_split(format: TextCallFormat, text: &str) -> Vec<Piece> {
    let whole = run(format, &[text]);
    let bytes: Vec<(usize, char)> = text.char_indices().collect();
    for &(i, _) in &bytes {
        assert_eq!(
            run(format, &[&text[..i], &text[i..]]),
            whole,
            "split at {i} of {text:?}"
        );
    }
    let singles: Vec<String> = text.chars().map(String::from).collect();
    let singles: Vec<&str> = singles.iter().map(String::as_str).collect();
    assert_eq!(run(format, &singles), whole, "one character at a time");
    whole
}

fn t(s: &str) -> Piece {
    Piece::Text(s.into())
}
fn start(s: &str) -> Piece {
    Piece::Start { name: s.into() }
}
fn args(s: &str) -> Piece {
    Piece::Arguments(s.into())
}

#[test]
fn hermes_call_with_text_around() {
    let got = every_split(
        TextCallFormat::Hermes,
        "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\nDone.",
    );
    assert_eq!(
        got,
        [
            t("Let me check.\n"),
            start("get_weather"),
            args("{\"city\": \"Oslo\"}"),
            Piece::End,
            t("\nDone.")
        ]
    );
}

#[test]
fn hermes_unclosed_is_cut_and_prose_stays_text() {
    let got = every_split(
        TextCallFormat::Hermes,
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"ci",
    );
    assert_eq!(
        got,
        [
            start("get_weather"),
            args("{\"name\": \"get_weather\", \"arguments\": {\"ci"),
            Piece::Cut
        ]
    );
    let prose = "Wrap each call in <tool_call> tags, then stop.";
    assert_eq!(every_split(TextCallFormat::Auto, prose), [t(prose)]);
}

#[test]
fn qwen_xml_values_are_typed_by_the_schema() {
    let got = every_split(
        TextCallFormat::QwenXml,
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=metric>\nTrue\n</parameter>\n<parameter=note>\n7\n</parameter>\n</function>\n</tool_call>",
    );
    assert_eq!(
        got,
        [
            start("get_weather"),
            args("{\"city\":\"Oslo\",\"days\":3,\"metric\":true,\"note\":\"7\"}"),
            Piece::End
        ]
    );
}

#[test]
fn glm_and_auto_tell_tool_call_bodies_apart() {
    let text = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Oslo</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>";
    let want = [
        start("get_weather"),
        args("{\"city\":\"Oslo\",\"days\":2}"),
        Piece::End,
    ];
    assert_eq!(every_split(TextCallFormat::Glm, text), want);
    assert_eq!(every_split(TextCallFormat::Auto, text), want);
}

#[test]
fn deepseek_v3_and_v31() {
    let v3 = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Oslo\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    let v31 = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Oslo\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    let want = [
        start("get_weather"),
        args("{\"city\": \"Oslo\"}"),
        Piece::End,
    ];
    assert_eq!(every_split(TextCallFormat::Deepseek, v3), want);
    assert_eq!(every_split(TextCallFormat::Auto, v31), want);
}

#[test]
fn kimi_sections() {
    let text = "Sure.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Oslo\"}<|tool_call_end|><|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>";
    assert_eq!(
        every_split(TextCallFormat::Kimi, text),
        [
            t("Sure."),
            start("get_weather"),
            args("{\"city\": \"Oslo\"}"),
            Piece::End,
            start("get_time"),
            args("{}"),
            Piece::End
        ]
    );
}

#[test]
fn mistral_forms() {
    let want = [
        start("get_weather"),
        args("{\"city\": \"Oslo\"}"),
        Piece::End,
    ];
    for text in [
        "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Oslo\"}",
        "[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{\"city\": \"Oslo\"}",
        "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]",
    ] {
        assert_eq!(every_split(TextCallFormat::Mistral, text), want, "{text}");
    }
    assert_eq!(
        every_split(
            TextCallFormat::Mistral,
            "[TOOL_CALLS]get_weather[ARGS]{\"city\": {\"a\""
        ),
        [start("get_weather"), args("{\"city\": {\"a\""), Piece::Cut]
    );
}

#[test]
fn llama_bare_json_only_at_the_start() {
    let call = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}";
    assert_eq!(
        every_split(TextCallFormat::Llama, call),
        [
            start("get_weather"),
            args("{\"city\": \"Oslo\"}"),
            Piece::End
        ]
    );
    let answer = "{\"temperature\": 3}";
    assert_eq!(every_split(TextCallFormat::Llama, answer), [t(answer)]);
    let later = format!("Here: {call}");
    assert_eq!(every_split(TextCallFormat::Llama, &later), [t(&later)]);
    // `auto` never reads a bare JSON answer as a call.
    assert_eq!(every_split(TextCallFormat::Auto, call), [t(call)]);
}

#[test]
fn a_held_back_prefix_that_is_no_marker_becomes_text_at_the_end() {
    assert_eq!(
        every_split(TextCallFormat::Auto, "a <tool_ca"),
        [t("a <tool_ca")]
    );
    assert_eq!(every_split(TextCallFormat::Auto, "x [TOOL"), [t("x [TOOL")]);
}

#[test]
fn a_million_unclosed_markers_is_linear_text() {
    // Each would-be marker is decided by the byte after it: prose, never a call.
    let text = format!("{}x", "<tool_call><".repeat(100_000));
    let got = run(TextCallFormat::Auto, &[&text]);
    assert!(got == [t(&text)], "not one text piece");
    // Ended right after a marker (or inside what may still be `<function=`): a cut call.
    assert_eq!(
        run(TextCallFormat::Auto, &["<tool_call><"]),
        [start(""), Piece::Cut]
    );
}
