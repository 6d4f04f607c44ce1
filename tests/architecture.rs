//! The layering rule of `docs/architecture.md`, checked on the source: no import cycle between
//! modules, and no provider that reaches into the mock.
//!
//! The graph is built from the text of `src/`: every `crate::…` (`toolwire::…` in the binary's
//! modules), `super::…` and `self::…` path
//! (in `use` lines, braces expanded, and in expressions) and, in a `mod.rs`, every path through
//! a child module, is an edge from the file's node to the node the path names. Nodes are the
//! top-level modules, with three exceptions: each provider under `src/providers/` (a folder or a
//! file) and each file of `src/realtime/` and `src/server/` is a node of its own, beside
//! `providers`, `realtime` and `server` (their `mod.rs`). A parent declaring its children (`mod x;`) is not an edge,
//! comments are not code, and test modules (`#[cfg(test)] mod …`) may reach anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Modules split into one node per child.
const SPLIT: [&str; 3] = ["providers", "realtime", "server"];

/// Modules that are one node with another: `error` is part of the canonical model (an
/// `Error` carries the partial `ChatResponse`; the model's constructors return `Error::Input`).
const SAME: [(&str, &str); 1] = [("error", "types")];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file: `src/providers/openai/decode.rs` is `providers::openai::decode`,
/// a `mod.rs` is its folder's module, `lib.rs` and `main.rs` are the root (empty).
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_owned());
    }
    parts
}

/// Whether `module` is a module of the crate (a file or a folder below `src/`).
fn is_module(module: &[String]) -> bool {
    if module.is_empty() {
        return true;
    }
    let base = module.iter().fold(src(), |p, m| p.join(m));
    base.is_dir() || base.with_extension("rs").is_file()
}

/// The node an absolute module path belongs to.
fn node_of(path: &[String]) -> Option<String> {
    // The longest prefix that is a module.
    let mut module: Vec<String> = Vec::new();
    for seg in path {
        let mut next = module.clone();
        next.push(seg.clone());
        if !is_module(&next) {
            break;
        }
        module = next;
    }
    let first = module.first()?;
    if SPLIT.contains(&first.as_str()) && module.len() >= 2 {
        return Some(format!("{first}/{}", module[1]));
    }
    let same = SAME.iter().find(|(m, _)| m == first).map(|(_, node)| *node);
    Some(same.unwrap_or(first).to_owned())
}

/// The text with comments and test modules removed.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    let mut skip_until: Option<String> = None;
    let mut pending_test_attr = false;
    let mut skip_statement = false;
    for line in text.lines() {
        if let Some(end) = &skip_until {
            if line == end {
                skip_until = None;
            }
            continue;
        }
        if skip_statement {
            skip_statement = !line.trim_end().ends_with(';');
            continue;
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(") && trimmed.contains("test") {
            pending_test_attr = true;
            continue;
        }
        if pending_test_attr && !trimmed.starts_with("#[") {
            pending_test_attr = false;
            let indent = &line[..line.len() - trimmed.len()];
            if trimmed.trim_end().ends_with('{') {
                skip_until = Some(format!("{indent}}}"));
            } else {
                skip_statement = !trimmed.trim_end().ends_with(';');
            }
            continue;
        }
        let code = match trimmed.find("//") {
            // A `//` inside a string literal is rare in paths' lines; cutting it loses no path.
            Some(at) => &trimmed[..at],
            None => trimmed,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Reads `a::b::{c, d::e}` from the start of `s` into full paths, each prefixed by `prefix`.
fn read_paths(s: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    let mut rest = s;
    loop {
        rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut end = group.len();
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = i;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let inner = &group[..end];
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        read_paths(&inner[start..i], &path, out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            read_paths(&inner[start..], &path, out);
            return;
        }
        let len = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        if len == 0 {
            break;
        }
        path.push(rest[..len].to_owned());
        rest = &rest[len..];
        match rest.strip_prefix("::") {
            Some(r) => rest = r,
            None => break,
        }
    }
    out.push(path);
}

/// The absolute module paths a file's code names.
fn paths_in(file: &Path, code: &str) -> Vec<Vec<String>> {
    let module = module_of(file);
    let is_mod_file = file
        .file_name()
        .is_some_and(|n| n == "mod.rs" || n == "lib.rs" || n == "main.rs");
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let at_word = i == 0 || !is_ident(bytes[i - 1] as char) && bytes[i - 1] != b':';
        if !at_word || !is_ident(bytes[i] as char) {
            i += 1;
            continue;
        }
        let len = code[i..]
            .find(|c: char| !is_ident(c))
            .unwrap_or(code.len() - i);
        let word = &code[i..i + len];
        let after = &code[i + len..];
        if let Some(rest) = after.strip_prefix("::") {
            let (base, rest) = match word {
                // The binary's modules (`cli`) name the library by its crate name.
                "crate" | "toolwire" => (Some(Vec::new()), rest),
                "self" => (Some(module.clone()), rest),
                "super" => {
                    let mut base = module.clone();
                    let mut rest = rest;
                    base.pop();
                    while let Some(r) = rest.strip_prefix("super::") {
                        base.pop();
                        rest = r;
                    }
                    (Some(base), rest)
                }
                child if is_mod_file => {
                    let mut m = module.clone();
                    m.push(child.to_owned());
                    let here = is_module(&m) && !module.is_empty();
                    (here.then_some(module.clone()), after)
                }
                _ => (None, rest),
            };
            if let Some(base) = base {
                let rest = if matches!(word, "crate" | "toolwire" | "self" | "super") {
                    rest
                } else {
                    &code[i..]
                };
                read_paths(rest, &base, &mut out);
            }
        }
        i += len;
    }
    out
}

/// Every edge between distinct nodes, with one file and path that makes it.
fn graph() -> BTreeMap<String, BTreeMap<String, String>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.sort();
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for file in files {
        let module = module_of(&file);
        let Some(from) = node_of(&module) else {
            continue; // the crate root only declares and re-exports
        };
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        for path in paths_in(&file, &code) {
            let Some(to) = node_of(&path) else { continue };
            if to != from {
                let rel = file.strip_prefix(src()).unwrap().display().to_string();
                edges
                    .entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_insert_with(|| format!("{rel}: {}", path.join("::")));
            }
        }
        edges.entry(from).or_default();
    }
    edges
}

/// The strongly connected components of more than one node (each holds a cycle), each as the
/// edges inside it with the file and path that make them.
fn cycles(edges: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<String> {
    // Kosaraju: finish order on the graph, then components on the reversed graph.
    fn order(
        node: &str,
        edges: &BTreeMap<String, BTreeMap<String, String>>,
        seen: &mut BTreeSet<String>,
        out: &mut Vec<String>,
    ) {
        if !seen.insert(node.to_owned()) {
            return;
        }
        for next in edges.get(node).into_iter().flat_map(BTreeMap::keys) {
            order(next, edges, seen, out);
        }
        out.push(node.to_owned());
    }
    let mut finished = Vec::new();
    let mut seen = BTreeSet::new();
    for node in edges.keys() {
        order(node, edges, &mut seen, &mut finished);
    }
    let mut reversed: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (from, tos) in edges {
        for to in tos.keys() {
            reversed
                .entry(to.clone())
                .or_default()
                .insert(from.clone(), String::new());
        }
    }
    let mut assigned = BTreeSet::new();
    let mut found = Vec::new();
    for node in finished.iter().rev() {
        let mut component = Vec::new();
        order(node, &reversed, &mut assigned, &mut component);
        if component.len() < 2 {
            continue;
        }
        let members: BTreeSet<&String> = component.iter().collect();
        let mut lines = vec![format!(
            "  {}",
            members
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )];
        for from in &members {
            for (to, why) in &edges[*from] {
                if members.contains(to) {
                    lines.push(format!("    {from} -> {to}  ({why})"));
                }
            }
        }
        found.push(lines.join("\n"));
    }
    found
}

/// The layers of `docs/architecture.md`, bottom first: a node may use nodes of lower rows, and
/// its siblings in its own row (which the cycle check keeps acyclic), never a row above.
const LAYERS: &[&[&str]] = &[
    &["types", "sse", "eventstream", "tls", "seal"],
    &[
        "provider",
        "assemble",
        "text_calls",
        "partial_json",
        "schema",
        "tools",
    ],
    &["providers/shared", "providers/lenient"],
    &[
        "providers/openai",
        "providers/glm",
        "providers/qwen",
        "providers/stepfun",
        "providers/gemini",
        "providers/dashscope",
        "providers/openai_responses",
        "providers/anthropic",
        "providers/ollama",
        "providers/mistral",
        "providers/cohere",
        "providers/bedrock",
    ],
    &["providers", "providers/seal"],
    &["turn"],
    &["replay"],
    &["fixture"],
    &["realtime/model"],
    &["realtime/settings", "realtime/state"],
    &["realtime/dialect", "realtime/gemini_live"],
    &["realtime/codec"],
    &["realtime/replay"],
    &["realtime/session", "realtime/mock"],
    &["realtime/agent"],
    &["realtime"],
    &["client", "mock", "conformance", "mcp"],
    &["agent"],
    // The server's shared pieces, then its areas (each owns its routes), then `mod.rs`, which
    // merges the areas' routers and starts the server.
    &[
        "server/body",
        "server/ledger",
        "server/offline",
        "server/gate",
        "server/store",
        "server/live",
        "server/mount",
        "server/listen",
        "server/passthrough",
        "server/state_key",
        "server/bounds",
    ],
    &["server/config"],
    &["server/app"],
    // The gateway's upstream selection and its keys' limits, under the gateway area.
    &["server/redis_limits"],
    &["server/limits", "server/fallback"],
    &[
        "server/mcp",
        "server/api",
        "server/chat",
        "server/gateway",
        "server/page",
    ],
    &["server"],
    &["plugin"],
    &["cli"],
    &["test_support"],
];

#[test]
fn every_arrow_points_down_the_layers() {
    // A provider folder or file not listed yet (a new provider) is in the providers' row.
    let provider_row = LAYERS
        .iter()
        .position(|row| row.contains(&"providers/openai"));
    let rank = |node: &str| {
        LAYERS
            .iter()
            .position(|row| row.contains(&node))
            .or(provider_row.filter(|_| node.starts_with("providers/")))
    };
    let mut problems = Vec::new();
    for (from, tos) in graph() {
        let Some(r) = rank(&from) else {
            problems.push(format!(
                "{from} is in no layer: add it to LAYERS and docs/architecture.md"
            ));
            continue;
        };
        for (to, why) in tos {
            match rank(&to) {
                Some(t) if t <= r => {}
                Some(_) => problems.push(format!("{from} -> {to} points up ({why})")),
                None => problems.push(format!("{to} is in no layer ({why})")),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_import_cycle_between_modules() {
    let edges = graph();
    assert!(edges.contains_key("providers/openai"), "{:?}", edges.keys());
    assert!(edges.contains_key("realtime/codec"), "{:?}", edges.keys());
    assert!(edges.contains_key("server/api"), "{:?}", edges.keys());
    let found = cycles(&edges);
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n\n"));
}

#[test]
fn the_graph_sees_every_kind_of_path() {
    let code =
        "use crate::{a::B, types::{C, D}};\nlet x = super::super::shared::f();\nself::wire::X;";
    let file = src().join("providers/openai/decode.rs");
    let paths: Vec<String> = paths_in(&file, code).iter().map(|p| p.join("::")).collect();
    assert_eq!(
        paths,
        [
            "a::B",
            "types::C",
            "types::D",
            "providers::shared::f",
            "providers::openai::decode::wire::X"
        ]
    );
    assert_eq!(
        node_of(&["providers".into(), "openai".into(), "Dialect".into()]),
        Some("providers/openai".into())
    );
    assert_eq!(
        node_of(&["providers".into(), "provider_for".into()]),
        Some("providers".into())
    );
    let stripped = code_of(
        "use crate::a;\n// crate::b\n#[cfg(test)]\nmod tests {\n    use crate::c;\n}\nuse crate::d;\n",
    );
    assert_eq!(stripped, "use crate::a;\n\nuse crate::d;\n");
}

#[test]
fn providers_do_not_reach_into_the_mock() {
    let mut files = Vec::new();
    rust_files(&src().join("providers"), &mut files);
    let offenders: Vec<String> = files
        .iter()
        .filter(|f| std::fs::read_to_string(f).unwrap().contains("crate::mock"))
        .map(|f| f.display().to_string())
        .collect();
    assert!(offenders.is_empty(), "{offenders:#?}");
}
