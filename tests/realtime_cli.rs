//! The CLI on realtime names: `toolwire demo --provider <realtime name>` runs the loop offline,
//! `toolwire replay --provider <realtime name> FILE` prints one canonical response per line.

use std::path::Path;
use std::process::{Command, Output};

use toolwire::realtime::RealtimeKind;

fn toolwire(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolwire"));
    cmd.args(args);
    for kind in RealtimeKind::ALL {
        for var in kind.key_vars() {
            cmd.env_remove(var);
        }
    }
    cmd.output().expect("the toolwire binary runs")
}

#[test]
fn demo_runs_offline_on_every_realtime_dialect() {
    for kind in RealtimeKind::ALL {
        let out = toolwire(&["demo", "--provider", kind.name()]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{kind}: {stderr}\n{stdout}");
        for line in [
            format!("offline against the mock speaking the {kind} dialect"),
            "model> Let me look that up.".to_owned(),
            r#"error: Invalid parameter "unit": "kelvin" is not one of"#.to_owned(),
            "Paris is 18 °C and cloudy; Tokyo is 24 °C and sunny.".to_owned(),
            "done: 3 responses, 4 tool results".to_owned(),
            format!("checked: the mock server accepted every result in the {kind} shape"),
        ] {
            assert!(
                stdout.contains(&line),
                "{kind}: missing {line:?} in\n{stdout}"
            );
        }
    }
}

#[test]
fn replay_prints_each_fixture_session_as_its_golden_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut checked = 0;
    for kind in RealtimeKind::ALL {
        for case in toolwire::conformance::case_dirs(&root.join(kind.name())).unwrap() {
            let session = case.join("session.jsonl");
            if !session.is_file() {
                continue;
            }
            let out = toolwire(&[
                "replay",
                "--provider",
                kind.name(),
                session.to_str().unwrap(),
            ]);
            let golden = std::fs::read_to_string(case.join("expected.jsonl")).unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let lines = |t: &str| -> Vec<serde_json::Value> {
                t.lines()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect()
            };
            assert_eq!(lines(&stdout), lines(&golden), "{}", case.display());
            let summary: serde_json::Value =
                serde_json::from_slice(&std::fs::read(case.join("expected.json")).unwrap())
                    .unwrap();
            let failing = summary["ended_mid_response"] == true
                || !summary["errors"].as_array().unwrap().is_empty();
            assert_eq!(
                out.status.code(),
                Some(if failing { 1 } else { 0 }),
                "{}: {}",
                case.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            checked += 1;
        }
    }
    assert!(checked >= 40, "{checked}");
}

#[test]
fn replay_names_a_bad_line_and_exits_2() {
    let dir = std::env::temp_dir().join(format!("toolwire-rt-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.jsonl");
    std::fs::write(
        &file,
        "{\"dir\":\"server\",\"event\":{\"type\":\"x\"}}\n{\"dir\":\n",
    )
    .unwrap();
    let out = toolwire(&[
        "replay",
        "--provider",
        "glm-realtime",
        file.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.jsonl:line 2"), "{stderr}");
    let out = toolwire(&["replay", "--provider", "glm-live", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("gemini-live"),
        "the names are listed: {stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn conformance_runs_the_realtime_cases() {
    let out = toolwire(&["conformance", "--provider", "qwen-realtime"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("qwen-realtime session_configuration"),
        "{stdout}"
    );
    assert!(!stdout.contains("openai-realtime"), "{stdout}");
}
