//! Sampling and reasoning settings on every wire, read from the two tables of
//! `docs/settings.md`: each cell of the settings × wires table and each row of the reasoning
//! table is encoded here and checked, so the document cannot say what the code does not do.

use serde_json::{Value, json};
use toolwire::providers::builtin;
use toolwire::types::{Effort, Reasoning, ReasoningSummary};
use toolwire::{ChatRequest, Error, HttpRequest, Message, ProviderKind};

const DOC: &str = include_str!("../docs/settings.md");

/// The rows of the table between `<!-- name -->` and `<!-- /name -->`, header and rule left
/// out, each split into trimmed cells.
fn table(name: &str) -> Vec<Vec<String>> {
    let open = format!("<!-- {name} -->");
    let close = format!("<!-- /{name} -->");
    let start = DOC.find(&open).expect("table start") + open.len();
    let end = DOC.find(&close).expect("table end");
    DOC[start..end]
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_owned())
                .collect()
        })
        .collect()
}

fn encode(kind: ProviderKind, req: &ChatRequest) -> toolwire::Result<HttpRequest> {
    let b = builtin(kind).expect("a built-in provider");
    (b.provider)().encode(req, false)
}

fn kind(name: &str) -> ProviderKind {
    name.parse()
        .unwrap_or_else(|_| panic!("{name} is not a provider"))
}

/// A request setting `setting` to a non-neutral value (and the value as the wire carries it).
fn with_setting(mut req: ChatRequest, setting: &str, neutral: bool) -> (ChatRequest, Value) {
    let value = match (setting, neutral) {
        ("top_p", false) => {
            req.top_p = Some(0.5);
            json!(0.5)
        }
        ("top_p", true) => {
            req.top_p = Some(1.0);
            json!(1.0)
        }
        ("top_k", _) => {
            req.top_k = Some(40);
            json!(40)
        }
        ("stop", _) => {
            req.stop = vec!["END".into()];
            json!(["END"])
        }
        ("seed", _) => {
            req.seed = Some(7);
            json!(7)
        }
        ("presence_penalty", n) => {
            let v = if n { 0.0 } else { 0.5 };
            req.presence_penalty = Some(v);
            json!(v)
        }
        ("frequency_penalty", n) => {
            let v = if n { 0.0 } else { 0.5 };
            req.frequency_penalty = Some(v);
            json!(v)
        }
        ("reasoning.summary", _) => {
            req.reasoning = Some(Reasoning::default().with_summary(ReasoningSummary::Concise));
            json!("concise")
        }
        (other, _) => panic!("unknown setting {other}"),
    };
    (req, value)
}

fn has_neutral(setting: &str) -> bool {
    matches!(setting, "top_p" | "presence_penalty" | "frequency_penalty")
}

fn refused_naming(result: toolwire::Result<HttpRequest>, setting: &str, at: &str) {
    match result {
        Err(Error::Unsupported { feature, .. }) => {
            assert!(
                feature.contains(setting),
                "{at}: {feature:?} names {setting}"
            );
        }
        other => panic!("{at}: expected Unsupported naming {setting}, got {other:?}"),
    }
}

#[test]
fn every_setting_cell_holds_on_its_wire() {
    let rows = table("settings-table");
    let header = [
        "top_p",
        "top_k",
        "stop",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "reasoning.summary",
    ];
    let wires = toolwire::providers::BUILTINS.len();
    assert_eq!(rows.len(), wires, "one row per built-in wire");
    let mut cells = 0;
    for row in &rows {
        let kind = kind(&row[0]);
        let model = builtin(kind).expect("built-in").default_model;
        let base = ChatRequest::new(model, vec![Message::user("hi")]);
        for (setting, cell) in header.iter().zip(&row[1..]) {
            let at = format!("{kind} × {setting}");
            let (req, value) = with_setting(base.clone(), setting, false);
            if cell == "refused" {
                refused_naming(encode(kind, &req), setting, &at);
                // Allowed to drop: left out and listed.
                let dropped = encode(kind, &req.clone().with_drop_unsupported(true))
                    .unwrap_or_else(|e| panic!("{at}: {e}"));
                assert!(
                    dropped.dropped.iter().any(|d| d.setting == *setting),
                    "{at}: listed as dropped"
                );
                if has_neutral(setting) {
                    let (req, _) = with_setting(base.clone(), setting, true);
                    let http = encode(kind, &req).unwrap_or_else(|e| panic!("{at} neutral: {e}"));
                    assert!(
                        http.dropped.is_empty(),
                        "{at}: a neutral value is not listed"
                    );
                }
            } else {
                let pointer = cell.trim_matches('`');
                let http = encode(kind, &req).unwrap_or_else(|e| panic!("{at}: {e}"));
                assert_eq!(http.body.pointer(pointer), Some(&value), "{at}: {pointer}");
                assert!(http.dropped.is_empty(), "{at}: nothing dropped");
            }
            cells += 1;
        }
    }
    assert_eq!(cells, wires * header.len());
}

/// `effort high`, `budget 2048`, `thinking true`, `top_p 0.5`.
fn asked(req: ChatRequest, asked: &str) -> ChatRequest {
    let (what, value) = asked.split_once(' ').expect("`what value`");
    match what {
        "effort" => req.with_effort(value.parse::<Effort>().expect("an effort")),
        "budget" => req.with_reasoning(Reasoning::budget(value.parse().expect("a number"))),
        "thinking" => req.with_thinking(value == "true"),
        "top_p" => req.with_top_p(value.parse().expect("a number")),
        other => panic!("unknown ask {other}"),
    }
}

#[test]
fn every_reasoning_row_holds() {
    let rows = table("reasoning-table");
    assert!(rows.len() >= 40, "the reasoning table has its rows");
    for row in &rows {
        let (wire, model, ask, sent) = (&row[0], &row[1], &row[2], &row[3]);
        let at = format!("{wire} {model} {ask}");
        let req = asked(
            ChatRequest::new(model.as_str(), vec![Message::user("hi")]).with_max_tokens(64000),
            ask,
        );
        let result = encode(kind(wire), &req);
        if sent == "refused" {
            let setting = match ask.split(' ').next() {
                Some("effort") => "reasoning.effort",
                Some("budget") => "reasoning.budget_tokens",
                Some(other) => other,
                None => unreachable!(),
            };
            refused_naming(result, setting, &at);
            continue;
        }
        let http = result.unwrap_or_else(|e| panic!("{at}: {e}"));
        for check in sent.split(';').map(str::trim) {
            if let Some(pointer) = check.strip_prefix("absent ") {
                let pointer = pointer.trim_matches('`');
                assert_eq!(http.body.pointer(pointer), None, "{at}: {pointer} absent");
            } else {
                let (pointer, value) = check.split_once(" = ").expect("`pointer` = json");
                let pointer = pointer.trim_matches('`');
                let value: Value = serde_json::from_str(value).expect("a JSON value");
                assert_eq!(http.body.pointer(pointer), Some(&value), "{at}: {pointer}");
            }
        }
    }
}

#[test]
fn no_adaptive_only_claude_model_is_sent_a_budget() {
    for model in [
        "claude-opus-4-7",
        "claude-opus-4-8",
        "claude-mythos-preview",
        "us.anthropic.claude-opus-4-7",
    ] {
        for ask in [
            "thinking true",
            "effort minimal",
            "effort low",
            "effort medium",
            "effort high",
            "effort xhigh",
            "effort max",
            "budget 1024",
            "budget 30000",
        ] {
            for wire in [ProviderKind::Anthropic, ProviderKind::Bedrock] {
                let req = asked(
                    ChatRequest::new(model, vec![Message::user("hi")]).with_max_tokens(64000),
                    ask,
                );
                let http = encode(wire, &req).unwrap_or_else(|e| panic!("{model} {ask}: {e}"));
                let text = http.body.to_string();
                assert!(
                    !text.contains("budget_tokens"),
                    "{wire} {model} {ask}: {text}"
                );
                assert!(
                    !text.contains("\"enabled\""),
                    "{wire} {model} {ask}: {text}"
                );
                assert!(
                    text.contains("\"adaptive\""),
                    "{wire} {model} {ask}: {text}"
                );
            }
        }
    }
}

#[test]
fn bad_values_are_input_errors_naming_the_field() {
    let base = ChatRequest::new("gpt-4o-mini", vec![Message::user("hi")]);
    let cases = [
        ("top_p", base.clone().with_top_p(1.5)),
        ("top_k", base.clone().with_top_k(0)),
        ("presence_penalty", base.clone().with_presence_penalty(-3.0)),
        (
            "frequency_penalty",
            base.clone().with_frequency_penalty(f64::NAN),
        ),
        ("stop[1]", base.clone().with_stop(["a", ""])),
        (
            "reasoning.budget_tokens",
            base.clone().with_reasoning(Reasoning::budget(0)),
        ),
        (
            "thinking",
            base.clone().with_thinking(false).with_effort(Effort::High),
        ),
    ];
    for (field, req) in cases {
        for b in toolwire::providers::BUILTINS {
            match (b.provider)().encode(&req, false) {
                Err(Error::Input { path, .. }) => assert_eq!(path, field, "{}", b.name()),
                other => panic!(
                    "{} {field}: expected an input error, got {other:?}",
                    b.name()
                ),
            }
        }
    }
}

#[test]
fn settings_json_is_as_pinned() {
    let text = r#"{"model": "m", "messages": [],
        "reasoning": {"effort": "xhigh", "budget_tokens": 4096, "summary": "detailed"},
        "top_p": 0.9, "top_k": 40, "stop": ["\n\n"], "seed": 7,
        "presence_penalty": 0.5, "frequency_penalty": -0.5, "drop_unsupported": true}"#;
    let req: ChatRequest = serde_json::from_str(text).expect("the pinned JSON reads");
    let r = req.reasoning.expect("reasoning");
    assert_eq!(r.effort, Some(Effort::Xhigh));
    assert_eq!(r.budget_tokens, Some(4096));
    assert_eq!(r.summary, Some(ReasoningSummary::Detailed));
    assert_eq!(req.top_k, Some(40));
    assert_eq!(req.stop, vec!["\n\n".to_owned()]);
    assert_eq!(req.seed, Some(7));
    assert!(req.drop_unsupported);
    let back = serde_json::to_value(&req).expect("serializes");
    let original: Value = serde_json::from_str(text).expect("json");
    assert_eq!(back, original, "written back exactly");
    // Unset settings are not written at all.
    let plain = serde_json::to_value(ChatRequest::new("m", vec![])).expect("serializes");
    assert_eq!(plain, json!({"model": "m", "messages": []}));
    // A misspelled effort is refused by serde, naming the values.
    let bad = r#"{"model": "m", "messages": [], "reasoning": {"effort": "extreme"}}"#;
    let err = serde_json::from_str::<ChatRequest>(bad).expect_err("unknown effort");
    assert!(err.to_string().contains("xhigh"), "{err}");
}

// The realtime dialects: the two realtime tables of `docs/settings.md`, each cell and row
// configured through a codec and checked in the configuring event.

use toolwire::provider::Dropped;
use toolwire::realtime::{RealtimeCodec, RealtimeKind, SessionConfig};

/// The configuring event of a session set up with `config`, and what it dropped.
fn configure(
    kind: RealtimeKind,
    config: &SessionConfig,
) -> toolwire::Result<(Value, Vec<Dropped>)> {
    let mut codec = RealtimeCodec::new(kind);
    let events = codec.configure(config)?;
    let event = events.into_iter().next().expect("a configuring event");
    Ok((event, codec.dropped().to_vec()))
}

fn realtime_kind(name: &str) -> RealtimeKind {
    name.parse()
        .unwrap_or_else(|_| panic!("{name} is not a realtime dialect"))
}

/// A configuration setting `setting` (neutral or not), and the value as the dialect carries it.
fn realtime_setting(
    mut config: SessionConfig,
    setting: &str,
    neutral: bool,
) -> (SessionConfig, Value) {
    let value = match setting {
        "max_tokens" => {
            config.max_tokens = Some(300);
            json!(300)
        }
        "temperature" => {
            config.temperature = Some(0.7);
            json!(0.7)
        }
        other => {
            // The HTTP settings: the same values, moved onto the configuration.
            let (req, value) = with_setting(ChatRequest::new("m", vec![]), other, neutral);
            let model = config.model.clone();
            config = config.with_settings_of(&req);
            config.model = model;
            value
        }
    };
    (config, value)
}

fn refused_setting<T: std::fmt::Debug>(result: toolwire::Result<T>, setting: &str, at: &str) {
    match result {
        Err(Error::Unsupported { feature, .. }) => {
            assert!(
                feature.contains(setting),
                "{at}: {feature:?} names {setting}"
            );
        }
        other => panic!("{at}: expected Unsupported naming {setting}, got {other:?}"),
    }
}

#[test]
fn every_realtime_setting_cell_holds_on_its_dialect() {
    let rows = table("realtime-settings-table");
    let header = [
        "max_tokens",
        "temperature",
        "top_p",
        "top_k",
        "stop",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "reasoning.summary",
    ];
    assert_eq!(rows.len(), RealtimeKind::ALL.len(), "one row per dialect");
    let mut cells = 0;
    for row in &rows {
        let kind = realtime_kind(&row[0]);
        let base = SessionConfig::new(row[1].as_str(), vec![]);
        assert_eq!(row.len(), header.len() + 2, "{kind}: a cell per setting");
        for (setting, cell) in header.iter().zip(&row[2..]) {
            let at = format!("{kind} × {setting}");
            let (config, value) = realtime_setting(base.clone(), setting, false);
            if cell == "refused" {
                refused_setting(configure(kind, &config), setting, &at);
                let (event, dropped) = configure(kind, &config.clone().with_drop_unsupported(true))
                    .unwrap_or_else(|e| panic!("{at}: {e}"));
                assert!(
                    dropped.iter().any(|d| d.setting == *setting),
                    "{at}: listed as dropped"
                );
                let (plain, _) = configure(kind, &base).unwrap_or_else(|e| panic!("{at}: {e}"));
                assert_eq!(event, plain, "{at}: a dropped setting leaves no trace");
                if has_neutral(setting) || *setting == "reasoning.summary" {
                    let mut neutral = realtime_setting(base.clone(), setting, true).0;
                    if *setting == "reasoning.summary" {
                        neutral.reasoning =
                            Some(Reasoning::default().with_summary(ReasoningSummary::Auto));
                    }
                    let (_, dropped) =
                        configure(kind, &neutral).unwrap_or_else(|e| panic!("{at} neutral: {e}"));
                    assert!(dropped.is_empty(), "{at}: a neutral value is not listed");
                }
            } else {
                let pointer = cell.trim_matches('`');
                let (event, dropped) =
                    configure(kind, &config).unwrap_or_else(|e| panic!("{at}: {e}"));
                assert_eq!(event.pointer(pointer), Some(&value), "{at}: {pointer}");
                assert!(dropped.is_empty(), "{at}: nothing dropped");
            }
            cells += 1;
        }
    }
    assert_eq!(cells, RealtimeKind::ALL.len() * header.len());
}

#[test]
fn every_realtime_reasoning_row_holds() {
    let rows = table("realtime-reasoning-table");
    assert!(
        rows.len() >= 10,
        "the realtime reasoning table has its rows"
    );
    let mut seen = std::collections::BTreeSet::new();
    for row in &rows {
        let (dialect, model, ask, sent) = (&row[0], &row[1], &row[2], &row[3]);
        let at = format!("{dialect} {model} {ask}");
        let kind = realtime_kind(dialect);
        seen.insert(kind);
        // The HTTP table's asks, moved onto a session.
        let req = asked(ChatRequest::new(model.as_str(), vec![]), ask);
        let config = SessionConfig::new(model.as_str(), vec![]).with_settings_of(&req);
        let result = configure(kind, &config);
        if sent == "refused" {
            let setting = match ask.split(' ').next() {
                Some("effort") => "reasoning.effort",
                Some("budget") => "reasoning.budget_tokens",
                Some(other) => other,
                None => unreachable!(),
            };
            refused_setting(result, setting, &at);
            let (_, dropped) = configure(kind, &config.clone().with_drop_unsupported(true))
                .unwrap_or_else(|e| panic!("{at} dropped: {e}"));
            assert!(dropped.iter().any(|d| d.setting == setting), "{at}: listed");
            continue;
        }
        let (event, _) = result.unwrap_or_else(|e| panic!("{at}: {e}"));
        for check in sent.split(';').map(str::trim) {
            if let Some(pointer) = check.strip_prefix("absent ") {
                let pointer = pointer.trim_matches('`');
                assert_eq!(event.pointer(pointer), None, "{at}: {pointer} absent");
            } else {
                let (pointer, value) = check.split_once(" = ").expect("`pointer` = json");
                let pointer = pointer.trim_matches('`');
                let value: Value = serde_json::from_str(value).expect("a JSON value");
                assert_eq!(event.pointer(pointer), Some(&value), "{at}: {pointer}");
            }
        }
    }
    assert_eq!(
        seen.len(),
        RealtimeKind::ALL.len(),
        "a row for every dialect"
    );
}

#[test]
fn realtime_settings_json_uses_the_request_names() {
    let text = r#"{"model": "gpt-realtime-2", "max_tokens": 512,
        "reasoning": {"effort": "medium"}, "drop_unsupported": true, "temperature": 0.8}"#;
    let config: SessionConfig = serde_json::from_str(text).expect("the settings read");
    assert_eq!(config.max_tokens, Some(512));
    assert_eq!(
        config.reasoning.and_then(|r| r.effort),
        Some(Effort::Medium)
    );
    let back = serde_json::to_value(&config).expect("serializes");
    assert_eq!(back, serde_json::from_str::<Value>(text).expect("json"));
    // The GA session has no temperature: dropped and listed, the rest carried.
    let (event, dropped) = configure(RealtimeKind::OpenAiRealtime, &config).expect("configures");
    assert_eq!(event["session"]["max_output_tokens"], json!(512));
    assert_eq!(event["session"]["reasoning"], json!({"effort": "medium"}));
    assert_eq!(event["session"].get("temperature"), None);
    let names: Vec<&str> = dropped.iter().map(|d| d.setting.as_str()).collect();
    assert_eq!(names, ["temperature"]);
    // Out-of-range values are input errors naming the field, as on the HTTP wires.
    let bad = SessionConfig::new("qwen3-omni-flash-realtime", vec![]).with_temperature(3.0);
    match configure(RealtimeKind::QwenRealtime, &bad) {
        Err(Error::Input { path, .. }) => assert_eq!(path, "temperature"),
        other => panic!("expected an input error, got {other:?}"),
    }
}

#[test]
fn realtime_extra_fields_still_win_over_settings() {
    // `extra` is merged last: a caller can always override a mapped setting verbatim.
    let config = SessionConfig::new("qwen3-omni-flash-realtime", vec![])
        .with_temperature(0.5)
        .with_extra("temperature", json!(0.9));
    let (event, _) = configure(RealtimeKind::QwenRealtime, &config).expect("configures");
    assert_eq!(event["session"]["temperature"], json!(0.9));
}
