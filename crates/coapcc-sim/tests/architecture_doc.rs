//! `docs/architecture.md` describes the code as it is: every crate, module and file it names
//! exists (a page that lists modules goes stale otherwise).
//!
//! The page's tables under a heading that names a directory (`## Inside X (`crates/.../`)`)
//! list modules in their first column: each must be a `NAME.rs`, `NAME/mod.rs`, `NAME.py`, a
//! package or a directory there. The crates table names crates under `crates/`. Every file
//! path the page quotes anywhere (`engine/sim/step.rs`, `config/layers.rs`) must end the path
//! of a file of the repository.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The text between backticks in `s`.
fn quoted(s: &str) -> Vec<&str> {
    s.split('`').skip(1).step_by(2).collect()
}

fn files(dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.is_dir() && !name.starts_with('.') && name != "target" && name != "node_modules" {
            files(&p, out);
        } else if p.is_file() {
            out.push(p.to_string_lossy().replace('\\', "/"));
        }
    }
}

#[test]
fn every_module_the_architecture_page_lists_exists() {
    let root = root();
    let page = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let mut base: Option<PathBuf> = None;
    let mut checked = 0;
    let mut missing = Vec::new();
    for line in page.lines() {
        if line.starts_with("## ") {
            base = quoted(line).into_iter().find(|q| q.ends_with('/')).map(|d| root.join(d));
            if line.starts_with("## Crates") {
                base = Some(root.join("crates"));
            }
            continue;
        }
        let Some(dir) = &base else { continue };
        if !line.starts_with("| `") {
            continue;
        }
        // Names before any parenthesis (`coapcc-cc` (`no_std`, ...)).
        let first = line.split('|').nth(1).unwrap_or("").split('(').next().unwrap_or("");
        for name in quoted(first) {
            let name = name.trim_end_matches('/');
            let name = name.split(' ').next().unwrap_or(name);
            let found = [
                dir.join(name),
                dir.join(format!("{name}.rs")),
                dir.join(name).join("mod.rs"),
                dir.join(format!("{name}.py")),
                dir.join(name).join("__init__.py"),
            ]
            .iter()
            .any(|p| p.exists());
            checked += 1;
            if !found {
                missing.push(format!("{name} in {}", dir.display()));
            }
        }
    }
    let mut all = Vec::new();
    files(&root.join("crates"), &mut all);
    files(&root.join("python"), &mut all);
    for q in quoted(&page) {
        if (q.ends_with(".rs") || q.ends_with(".py")) && !q.contains(' ') {
            checked += 1;
            if !all.iter().any(|f| f.ends_with(&format!("/{q}"))) {
                missing.push(q.to_string());
            }
        }
    }
    assert!(checked > 60, "the page lists {checked} modules and files: the check found its tables?");
    assert!(missing.is_empty(), "docs/architecture.md names what does not exist: {missing:?}");
}
