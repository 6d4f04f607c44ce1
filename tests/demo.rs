//! `toolwire demo` runs the whole loop offline, with no key, on every provider built in.

use std::process::{Command, Output};

use toolwire::{ProviderKind, provider_for};

fn demo(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolwire"));
    cmd.arg("demo").args(args);
    // A fresh machine: no provider key anywhere.
    for kind in ProviderKind::ALL {
        if let Ok(p) = provider_for(kind) {
            for var in p.info().key_vars {
                cmd.env_remove(var);
            }
        }
    }
    cmd.output().expect("the toolwire binary runs")
}

fn check_full_loop(out: &Output, kind: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{kind}: {stderr}\n{stdout}");
    for line in [
        format!("offline against the mock provider speaking the {kind} wire"),
        "model> Let me look that up.".to_owned(),
        "assembled get_weather".to_owned(),
        "<- get_weather (call_paris) ok:".to_owned(),
        // The tool's summary, for the people waiting (never sent to the model: the follow-up
        // requests are checked against the wire JSON shown).
        ".. get_weather (call_paris): Looking at the sky over Paris…".to_owned(),
        r#"error: Invalid parameter "unit": "kelvin" is not one of"#.to_owned(),
        format!("wire JSON sent back (3 results, {kind} format)"),
        "-- turn 2 done".to_owned(),
        "Paris is 18 °C and cloudy; Tokyo is 24 °C and sunny.".to_owned(),
        "done: 3 turns, 4 tool results, finish reason stop".to_owned(),
        "checked: the 2 follow-up requests the mock provider received".to_owned(),
    ] {
        assert!(
            stdout.contains(&line),
            "{kind}: missing {line:?} in\n{stdout}"
        );
    }
    assert!(
        stdout.contains("sky") && stdout.contains("9712"),
        "results reached the output: {stdout}"
    );
}

#[test]
fn demo_runs_offline_without_a_key() {
    check_full_loop(&demo(&[]), "openai");
}

/// The wires the demo must run on: each one runs the whole loop, with and without `--offline`
/// (no key is set either way), and none may be skipped.
const WIRES: [ProviderKind; 7] = [
    ProviderKind::OpenAi,
    ProviderKind::Gemini,
    ProviderKind::Glm,
    ProviderKind::Qwen,
    ProviderKind::DashScope,
    ProviderKind::StepFun,
    ProviderKind::GeminiInteractions,
];

#[test]
fn demo_runs_offline_on_every_listed_wire() {
    for kind in WIRES {
        check_full_loop(&demo(&["--provider", kind.name()]), kind.name());
        check_full_loop(
            &demo(&["--provider", kind.name(), "--offline"]),
            kind.name(),
        );
    }
}

#[test]
fn demo_runs_offline_on_every_other_built_in_provider() {
    for kind in ProviderKind::ALL {
        if provider_for(kind).is_err() || WIRES.contains(&kind) {
            continue;
        }
        let out = demo(&["--provider", kind.name(), "--offline"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("unsupported: encoding responses") {
            // This provider cannot act as the mock yet.
            continue;
        }
        check_full_loop(&out, kind.name());
    }
}

#[test]
fn demo_refuses_an_unknown_provider_with_usage_status() {
    let out = demo(&["--provider", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown provider"));
}

/// The mock sends token usage the way each wire does, so `demo -v` traces show it on every
/// provider (the demo's scripted replies carry none: the mock estimates it).
#[test]
fn demo_traces_show_token_usage_on_every_provider() {
    for kind in ProviderKind::ALL {
        let out = demo(&["-v", "--provider", kind.name(), "--offline"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{kind}: {stderr}");
        for field in ["gen_ai.usage.input_tokens=", "gen_ai.usage.output_tokens="] {
            assert!(stderr.contains(field), "{kind}: no {field} in\n{stderr}");
        }
    }
}

#[test]
fn demo_takes_an_effort() {
    for kind in ["openai", "anthropic", "gemini"] {
        let out = demo(&["--provider", kind, "--effort", "high"]);
        check_full_loop(&out, kind);
    }
    let out = demo(&["--effort", "extreme"]);
    assert_eq!(out.status.code(), Some(2), "a bad level is a usage error");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("extreme") && stderr.contains("xhigh"),
        "{stderr}"
    );
}

/// On the wires with tools the provider runs itself, the demo's first turn has one: it is
/// shown as it runs, never run by the agent, and the loop ends as on every other wire.
#[test]
fn demo_shows_a_hosted_call_where_the_wire_has_them() {
    for (kind, name) in [
        ("anthropic", "web_search"),
        ("openai-responses", "web_search"),
        ("gemini", "code_execution"),
        ("bedrock", "nova_code_interpreter"),
    ] {
        let out = demo(&["--provider", kind, "--offline"]);
        check_full_loop(&out, kind);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(&format!("hosted [0] {name}: running (run by the provider")),
            "{kind}: {stdout}"
        );
        assert!(
            !stdout.contains(&format!("run  {name}")),
            "{kind}: {stdout}"
        );
    }
    let plain = demo(&["--provider", "openai", "--offline"]);
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("hosted ["));
}
