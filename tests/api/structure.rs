//! The code keeps the shape `src/lib.rs` and docs/design.md describe: no top-level module
//! imports one that imports it back (through any chain), the crawler registry's folder is pure
//! (no lock, no metric), the registry file is read by the configuration alone, and no lint is
//! switched off.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, at any depth.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// A file's code without its tests and comments; `None` for a file of tests only.
fn code_of(path: &Path) -> Option<String> {
    if path.file_name().is_some_and(|n| n == "tests.rs") {
        return None;
    }
    let text = std::fs::read_to_string(path).unwrap();
    let code = text
        .split("\n#[cfg(test)]\nmod tests {")
        .next()
        .unwrap_or("");
    let lines = code.lines().filter(|l| !l.trim_start().starts_with("//"));
    Some(lines.collect::<Vec<_>>().join("\n"))
}

/// The top-level module a file under src/ belongs to (`sweep` for src/sweep/roles.rs).
fn module_of(path: &Path) -> String {
    let relative = path.strip_prefix(src()).unwrap();
    let first = relative.components().next().unwrap().as_os_str();
    first.to_string_lossy().trim_end_matches(".rs").to_string()
}

/// The top-level modules `code` names through `crate::`: `crate::a::…` and each first name of
/// a group, `crate::{a::…, b}`.
fn named_modules(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            names.insert(ident(rest));
            continue;
        };
        // The names at the group's own depth, each first after `{` or `,`.
        let (mut depth, mut expecting) = (1, true);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 1 => break,
                '}' => depth -= 1,
                ',' if depth == 1 => expecting = true,
                c if c.is_whitespace() => {}
                _ if expecting && depth == 1 => {
                    names.insert(ident(&group[i..]));
                    expecting = false;
                }
                _ => {}
            }
        }
    }
    names.retain(|n| !n.is_empty() && n != "self");
    names
}

/// Which top-level modules each one's code imports.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let files = rust_files(&src());
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(f)).collect();
    let mut imports: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let Some(code) = code_of(file) else { continue };
        let module = module_of(file);
        let named: Vec<String> = named_modules(&code)
            .into_iter()
            .filter(|n| *n != module && modules.contains(n))
            .collect();
        imports.entry(module).or_default().extend(named);
    }
    imports
}

/// A chain of imports from `from` back to itself, if there is one.
fn cycle_through(from: &str, imports: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    let mut paths = vec![vec![from.to_string()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = paths.pop() {
        let last = path.last().unwrap();
        for next in imports.get(last).into_iter().flatten() {
            let mut longer = path.clone();
            longer.push(next.clone());
            if next == from {
                return Some(longer);
            }
            if seen.insert(next.clone()) {
                paths.push(longer);
            }
        }
    }
    None
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let imports = imports();
    assert!(imports["crawlers"].is_empty(), "{:?}", imports["crawlers"]);
    let cycles: Vec<String> = imports
        .keys()
        .filter_map(|module| cycle_through(module, &imports))
        .map(|chain| chain.join(" → "))
        .collect();
    assert!(cycles.is_empty(), "{cycles:#?}");
}

#[test]
fn the_crawler_registry_is_pure_and_read_by_the_configuration_alone() {
    for file in rust_files(&src().join("crawlers")) {
        let Some(code) = code_of(&file) else { continue };
        for impure in ["Mutex", "RwLock", "prometheus", "tokio"] {
            assert!(!code.contains(impure), "{}: {impure}", file.display());
        }
    }
    for file in rust_files(&src()) {
        let Some(code) = code_of(&file) else { continue };
        let relative = file.strip_prefix(src()).unwrap();
        let reads = [
            "Registry::with_file(",
            "Registry::builtin()",
            "Registry::parse(",
        ];
        if reads.iter().any(|r| code.contains(r)) {
            assert!(
                relative.starts_with("config") || relative.starts_with("crawlers"),
                "{} reads a crawler registry",
                relative.display()
            );
        }
    }
}

#[test]
fn no_lint_is_switched_off() {
    let root = src().parent().unwrap().to_path_buf();
    let needle = concat!("#[", "allow(");
    let inner = concat!("#![", "allow(");
    for file in rust_files(&root.join("src"))
        .into_iter()
        .chain(rust_files(&root.join("tests")))
    {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains(needle) && !text.contains(inner),
            "{}",
            file.display()
        );
    }
}
