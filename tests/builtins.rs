//! "Adding a provider" (`docs/architecture.md`) as a test: every step of the checklist, checked
//! for every line of `providers::BUILTINS`, so a built-in that missed one fails naming the
//! provider and the step.

use std::path::{Path, PathBuf};

use toolwire::conformance;
use toolwire::providers::BUILTINS;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What a built-in named `name` must have, each missing step as one line.
fn missing_steps(root: &Path, name: &str) -> Vec<String> {
    let mut missing = Vec::new();
    let mut miss = |step: &str, what: String| missing.push(format!("{name}: step {step}: {what}"));
    // The module spells the name with `_` (`openai-responses` is `openai_responses`).
    let module = name.replace('-', "_");
    let providers = root.join("src/providers");
    // 1. Its folder (`<module>/mod.rs`) or, for an OpenAI-compatible one, its file.
    let (source, sheet_path) = if providers.join(&module).join("mod.rs").is_file() {
        (
            providers.join(&module).join("mod.rs"),
            format!("../../../providers/{name}.md"),
        )
    } else if providers.join(format!("{module}.rs")).is_file() {
        (
            providers.join(format!("{module}.rs")),
            format!("../../providers/{name}.md"),
        )
    } else {
        miss(
            "1",
            format!("no src/providers/{module}/mod.rs nor src/providers/{module}.rs"),
        );
        (PathBuf::new(), String::new())
    };
    let table = std::fs::read_to_string(providers.join("mod.rs")).unwrap();
    if !table.contains(&format!("pub mod {module};")) {
        miss(
            "1",
            format!("no `pub mod {module};` in src/providers/mod.rs"),
        );
    }
    // 3. Its fixtures: the folder, and every canonical case present or listed in SKIP.
    let fixtures = root.join("fixtures").join(name);
    if fixtures.is_dir() {
        for case in conformance::missing_canonical(&fixtures) {
            miss(
                "3",
                format!("canonical case {case} neither in fixtures/{name}/ nor in its SKIP"),
            );
        }
        // `tests/second_turn.rs` continues every built-in's history from a recorded answer
        // with a call: at least one case's golden must have one.
        if !has_a_call(&fixtures) {
            miss(
                "3",
                format!("no case in fixtures/{name}/ whose expected.json has a tool call"),
            );
        }
    } else {
        miss("3", format!("no fixtures/{name}/ folder"));
    }
    // 4. Its quirk sheet, included into the module's rustdoc.
    if !root.join("providers").join(format!("{name}.md")).is_file() {
        miss("4", format!("no quirk sheet providers/{name}.md"));
    }
    if source.is_file() {
        let text = std::fs::read_to_string(&source).unwrap();
        let include = format!("#![doc = include_str!(\"{sheet_path}\")]");
        if !text.contains(&include) {
            miss(
                "4",
                format!(
                    "{} does not include its quirk sheet: add `{include}`",
                    source.strip_prefix(root).unwrap().display()
                ),
            );
        }
    }
    missing
}

/// Whether a case folder of `fixtures` has a golden response with at least one tool call.
fn has_a_call(fixtures: &Path) -> bool {
    let Ok(cases) = std::fs::read_dir(fixtures) else {
        return false;
    };
    cases.filter_map(Result::ok).any(|case| {
        std::fs::read(case.path().join("expected.json"))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
            .and_then(|golden| golden.get("tool_calls")?.as_array().map(|c| !c.is_empty()))
            .unwrap_or(false)
    })
}

#[test]
fn every_builtin_has_every_step_of_the_checklist() {
    let root = root();
    // Step 2 is the table line itself: each built-in is one line of BUILTINS.
    assert!(BUILTINS.len() >= 12, "{} built-ins", BUILTINS.len());
    let missing: Vec<String> = BUILTINS
        .iter()
        .flat_map(|b| missing_steps(&root, b.name()))
        .collect();
    assert!(
        missing.is_empty(),
        "steps of docs/architecture.md \"Adding a provider\" missed:\n{}",
        missing.join("\n")
    );
}

/// The check fails, by name, for a provider that has none of the steps.
#[test]
fn a_provider_with_no_steps_fails_each_by_name() {
    let missing = missing_steps(&root(), "toy-wire");
    for step in [
        "no src/providers/toy_wire/mod.rs nor src/providers/toy_wire.rs",
        "no `pub mod toy_wire;` in src/providers/mod.rs",
        "no fixtures/toy-wire/ folder",
        "no quirk sheet providers/toy-wire.md",
    ] {
        assert!(
            missing.iter().any(|m| m.ends_with(step)),
            "{step}: {missing:#?}"
        );
    }
    assert_eq!(missing.len(), 4, "{missing:#?}");
}

/// A folder without its canonical cases, and a module without its sheet's `include_str!`, are
/// named too (checked on a copy of the step's inputs in a scratch folder).
#[test]
fn missed_cases_and_a_missing_include_are_named() {
    let dir = std::env::temp_dir().join(format!("toolwire-checklist-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src/providers/toy")).unwrap();
    std::fs::create_dir_all(dir.join("fixtures/toy/single_call")).unwrap();
    std::fs::create_dir_all(dir.join("providers")).unwrap();
    std::fs::write(dir.join("src/providers/mod.rs"), "pub mod toy;\n").unwrap();
    std::fs::write(dir.join("src/providers/toy/mod.rs"), "//! Toy.\n").unwrap();
    std::fs::write(dir.join("providers/toy.md"), "# toy\n").unwrap();
    std::fs::write(dir.join("fixtures/toy/single_call/meta.toml"), "").unwrap();
    std::fs::write(
        dir.join("fixtures/toy/SKIP"),
        "error_body: the toy has no errors\n",
    )
    .unwrap();
    let missing = missing_steps(&dir, "toy");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        missing
            .iter()
            .any(|m| m.contains("canonical case stream_single_call")),
        "{missing:#?}"
    );
    assert!(
        !missing.iter().any(|m| m.contains("case error_body")),
        "{missing:#?}"
    );
    assert!(
        !missing.iter().any(|m| m.contains("case single_call ")),
        "{missing:#?}"
    );
    assert!(
        missing
            .iter()
            .any(|m| m.ends_with("no case in fixtures/toy/ whose expected.json has a tool call")),
        "{missing:#?}"
    );
    assert!(
        missing.iter().any(|m| m.contains(
            "src/providers/toy/mod.rs does not include its quirk sheet: add \
             `#![doc = include_str!(\"../../../providers/toy.md\")]`"
        )),
        "{missing:#?}"
    );
}
