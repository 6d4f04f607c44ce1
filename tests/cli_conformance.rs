//! `toolwire conformance` on a user's own goldens: a golden written before an additive change to
//! the canonical JSON still passes, a changed value fails naming `--bless`, and `--bless` says
//! which files it rewrote.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A copy of one of the repository's cases in a fresh folder of its own.
fn copy_case(provider: &str, case: &str, tag: &str) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(provider)
        .join(case);
    let root = std::env::temp_dir().join(format!(
        "toolwire-cli-conformance-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    let to = root.join(provider).join(case);
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
    root
}

fn conformance(root: &Path, bless: bool) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolwire"));
    cmd.arg("conformance").arg(root);
    if bless {
        cmd.arg("--bless");
    }
    cmd.output().expect("the binary runs")
}

fn edit(path: &Path, f: impl FnOnce(&mut Value)) {
    let mut golden: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    f(&mut golden);
    let text = serde_json::to_string_pretty(&golden).unwrap() + "\n";
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_golden_from_before_an_additive_field_still_passes() {
    let root = copy_case("openai", "stream_single_call", "additive");
    let golden = root.join("openai/stream_single_call/expected.json");
    // Written before `raw_finish_reason` (default null) and a call's `error` existed.
    edit(&golden, |g| {
        g.as_object_mut().unwrap().shift_remove("raw_finish_reason");
        g["tool_calls"][0]
            .as_object_mut()
            .unwrap()
            .shift_remove("error");
    });
    let out = conformance(&root, false);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A value that differs still fails, and the failure says how to accept it.
    edit(&golden, |g| g["tool_calls"][0]["name"] = "other".into());
    let out = conformance(&root, false);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("$.tool_calls[0].name") && stderr.contains("--bless"),
        "{stderr}"
    );
    // `--bless` rewrites it and says so; the case then passes byte for byte.
    let out = conformance(&root, true);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("rewrote {}", golden.display()))
            && stderr.contains("1 golden files rewritten"),
        "{stderr}"
    );
    let out = conformance(&root, true);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("0 golden files rewritten"),
        "a second bless writes nothing"
    );
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn a_wire_golden_stays_exact() {
    // A wire body is what goes on the wire: a field the golden lacks is a real difference.
    let root = copy_case("openai", "single_call", "wire");
    let golden = root.join("openai/single_call/wire_request.json");
    edit(&golden, |g| {
        g.as_object_mut().unwrap().remove("model");
    });
    let out = conformance(&root, false);
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn tables_keep_their_columns_for_long_names() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolwire"))
        .arg("providers")
        .output()
        .expect("the binary runs");
    let text = String::from_utf8_lossy(&out.stdout);
    // Every endpoint (HTTP and realtime) starts in its section's one column.
    for section in text.split("\n\n") {
        let starts: Vec<usize> = section
            .lines()
            .filter_map(|l| l.find(" http").or_else(|| l.find(" ws")))
            .collect();
        assert!(!starts.is_empty(), "{section}");
        assert!(
            starts.iter().all(|&s| s == starts[0]),
            "columns shift: {starts:?}\n{section}"
        );
    }
    let root = copy_case("openai-responses", "single_call", "table");
    let out = conformance(&root, false);
    let text = String::from_utf8_lossy(&out.stdout);
    let header = text.lines().next().unwrap_or_default();
    let row = text.lines().nth(1).unwrap_or_default();
    assert_eq!(header.find("case"), row.find("single_call"), "{text}");
    std::fs::remove_dir_all(&root).ok();
}
