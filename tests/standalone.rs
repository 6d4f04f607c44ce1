//! The repository stands on its own: no file points a reader at notes that are not in it
//! (a design page or notes kept outside the repository). Evidence is a public link or
//! a description of recorded behaviour; the project's own explanations live in `docs/`.

use std::path::{Path, PathBuf};

/// What must not appear: the design page, the notes folder, its notes by name, and section
/// pointers into them (the folder's name, a space, a section number). Built from pieces so
/// this file does not match itself.
const NEEDLES: [&str; 8] = [
    concat!("DESIGN", ".md"),
    concat!("research", "/"),
    concat!("research", " "),
    concat!("wire-openai", "-gemini"),
    concat!("wire-cn", "-providers"),
    concat!("peers", ".md"),
    concat!("neko", ".md"),
    concat!("aesthetics", ".md"),
];

/// Folders and files that make up the repository's content.
const ROOTS: [&str; 10] = [
    "src",
    "providers",
    "fixtures",
    "tests",
    "benches",
    "examples",
    "docs",
    ".ci",
    "README.md",
    "Cargo.toml",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn collect(path: &Path, files: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .map(|e| e.expect("readable directory entry").path())
            .collect();
        entries.sort();
        for entry in entries {
            collect(&entry, files);
        }
    } else if path.is_file() {
        files.push(path.to_owned());
    }
}

/// Every file (relative path, `/`-separated) that mentions a needle, with the needle.
fn offenders() -> Vec<(String, &'static str)> {
    let root = root();
    let mut files = Vec::new();
    for name in ROOTS {
        collect(&root.join(name), &mut files);
    }
    assert!(
        files.len() > 100,
        "the walk found only {} files",
        files.len()
    );
    let mut found = Vec::new();
    for file in files {
        let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let rel = file
            .strip_prefix(&root)
            .expect("below the crate root")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        for needle in NEEDLES {
            if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                found.push((rel.clone(), needle));
            }
        }
    }
    found
}

#[test]
fn nothing_points_outside_the_repository() {
    let found = offenders();
    assert!(
        found.is_empty(),
        "files that point outside the repository:\n{}",
        found
            .iter()
            .map(|(file, needle)| format!("  {file}: mentions {needle:?}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
