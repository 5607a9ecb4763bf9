//! The documentation holds together: README.md stays short, every relative link of README.md and
//! docs/ leads to a file (and heading) that exists, every docs page is reachable from
//! docs/README.md, and every variable of the contract's tables and of the configuration code is
//! in the configuration reference, with the default the code declares.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// README.md and every Markdown file under docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    pages.extend(files_under(&root().join("docs"), "md"));
    pages
}

/// The files under `dir` whose name ends in `.ext`, at any depth.
fn files_under(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == ext) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The lines of a Markdown text outside fenced code blocks, with inline code spans blanked.
fn prose_lines(text: &str) -> Vec<String> {
    let mut in_fence = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            lines.push(without_code_spans(line));
        }
    }
    lines
}

fn without_code_spans(line: &str) -> String {
    line.split('`')
        .enumerate()
        .map(|(i, part)| if i % 2 == 0 { part } else { "" })
        .collect::<Vec<_>>()
        .join("``")
}

/// The targets of the `[text](target)` links of a Markdown text.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose_lines(text) {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push(after[..end].trim().to_string());
            rest = &after[end..];
        }
    }
    targets
}

/// GitHub's anchors for the headings of a Markdown text (repeats get `-1`, `-2`, …).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut anchors = BTreeSet::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        let heading = line.trim_start_matches('#');
        if in_fence || heading.len() == line.len() || !heading.starts_with(' ') {
            continue;
        }
        let slug = slug(heading.trim());
        let count = seen.entry(slug.clone()).or_default();
        anchors.insert(if *count == 0 {
            slug.clone()
        } else {
            format!("{slug}-{count}")
        });
        *count += 1;
    }
    anchors
}

fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// What is wrong with one relative link of `page`, if anything.
fn broken(page: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        page.to_path_buf()
    } else {
        page.parent().unwrap().join(path)
    };
    if !file.exists() {
        return Some(format!("{target}: no {}", file.display()));
    }
    let anchor = anchor.filter(|_| file.extension().is_some_and(|e| e == "md"))?;
    (!anchors(&read(&file)).contains(anchor))
        .then(|| format!("{target}: no heading #{anchor} in {}", file.display()))
}

#[test]
fn every_relative_link_leads_to_a_file_and_heading_that_exist() {
    let mut broken_links = Vec::new();
    let pages = pages();
    assert!(pages.len() > 2, "README.md and docs/: {pages:?}");
    for page in &pages {
        for target in link_targets(&read(page)) {
            if let Some(why) = broken(page, &target) {
                broken_links.push(format!("{}: {why}", page.display()));
            }
        }
    }
    assert!(broken_links.is_empty(), "{}", broken_links.join("\n"));
}

#[test]
fn the_link_checker_sees_broken_links_and_anchors() {
    let page = root().join("docs/README.md");
    assert!(broken(&page, "guide.md").is_none());
    assert!(broken(&page, "reference.md#environment-variables").is_none());
    assert!(broken(&page, "nowhere.md").is_some());
    assert!(broken(&page, "guide.md#no-such-heading").is_some());
    assert_eq!(
        link_targets("[a](x.md) `[b](y.md)` [c](z.md#k)\n```\n[d](w.md)\n```"),
        ["x.md", "z.md#k"]
    );
    assert_eq!(
        slug("Groups: posts, pages, categories, news"),
        "groups-posts-pages-categories-news"
    );
    assert_eq!(slug("`robots.txt`"), "robotstxt");
}

#[test]
fn every_docs_page_is_reachable_from_the_docs_index() {
    let index = root().join("docs/README.md").canonicalize().unwrap();
    let mut reached = BTreeSet::from([index.clone()]);
    let mut todo = vec![index];
    while let Some(page) = todo.pop() {
        for target in link_targets(&read(&page)) {
            let path = target.split('#').next().unwrap();
            if path.is_empty() || target.contains("://") || !path.ends_with(".md") {
                continue;
            }
            let Ok(next) = page.parent().unwrap().join(path).canonicalize() else {
                continue;
            };
            if next.starts_with(root().join("docs").canonicalize().unwrap())
                && reached.insert(next.clone())
            {
                todo.push(next);
            }
        }
    }
    let unreached: Vec<_> = files_under(&root().join("docs"), "md")
        .into_iter()
        .filter(|page| !reached.contains(&page.canonicalize().unwrap()))
        .collect();
    assert!(
        unreached.is_empty(),
        "not linked from docs/README.md: {unreached:?}"
    );
}

#[test]
fn the_readme_is_read_in_five_minutes() {
    let lines = read(&root().join("README.md")).lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; the rest belongs in docs/"
    );
}

/// `NAME` of an environment variable: capitals and digits, words joined by `_`.
fn is_variable(token: &str) -> bool {
    let mut words = token.split('_');
    let first = words.next().unwrap_or_default();
    token.contains('_')
        && first.starts_with(|c: char| c.is_ascii_uppercase())
        && token.split('_').all(|w| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        })
}

/// The variables of the rows of a Markdown text's tables (in backticks, before any `=`).
fn table_variables(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|line| line.starts_with('|'))
        .flat_map(|line| line.split('`').skip(1).step_by(2))
        .map(|token| token.split('=').next().unwrap().to_string())
        .filter(|token| is_variable(token))
        .collect()
}

/// The variables the configuration reference gives a row of their own.
fn documented_variables() -> BTreeSet<String> {
    read(&root().join("docs/reference.md"))
        .lines()
        .filter_map(|line| line.strip_prefix("| "))
        .filter_map(|row| row.split(" | ").next())
        .flat_map(|cell| cell.split('`').skip(1).step_by(2).map(str::to_string))
        .filter(|token| is_variable(token))
        .collect()
}

/// `shared/SPEC.md`, the contract, looked for from the crate upwards (`../shared/SPEC.md` of
/// the main checkout); a checkout without it skips what needs it.
fn spec() -> Option<String> {
    root()
        .ancestors()
        .map(|dir| dir.join("shared/SPEC.md"))
        .find(|path| path.is_file())
        .map(|path| read(&path))
}

#[test]
fn every_variable_of_the_contract_is_in_the_configuration_reference() {
    let Some(spec) = spec() else {
        eprintln!(
            "note: no shared/SPEC.md above {}; not checked",
            root().display()
        );
        return;
    };
    let named = table_variables(&spec);
    assert!(
        named.contains("SITEMAP_BASE_URL") && named.contains("ADMIN_BIND_ADDR"),
        "{named:?}"
    );
    let documented = documented_variables();
    let missing: Vec<_> = named.difference(&documented).collect();
    assert!(
        missing.is_empty(),
        "in SPEC.md's tables, not in docs/reference.md: {missing:?}"
    );
}

#[test]
fn every_variable_the_configuration_reads_is_in_the_configuration_reference() {
    let mut read_by_config = BTreeSet::new();
    for file in files_under(&root().join("src/config"), "rs") {
        let text = read(&file);
        read_by_config.extend(
            text.split('"')
                .skip(1)
                .step_by(2)
                .filter(|token| is_variable(token))
                .map(str::to_string),
        );
    }
    assert!(
        read_by_config.contains("SITEMAP_PAGE_SIZE"),
        "{read_by_config:?}"
    );
    let documented = documented_variables();
    let missing: Vec<_> = read_by_config.difference(&documented).collect();
    assert!(
        missing.is_empty(),
        "read in src/config, not in docs/reference.md: {missing:?}"
    );
}

/// The default cell of the configuration reference's row of `variable`, if it has a row.
fn documented_default(variable: &str) -> Option<String> {
    let name = format!("`{variable}`");
    read(&root().join("docs/reference.md"))
        .lines()
        .filter_map(|line| line.strip_prefix("| "))
        .map(|row| row.split(" | ").collect::<Vec<_>>())
        .find(|cells| cells[0].contains(&name))
        .and_then(|cells| cells.get(1).map(|cell| cell.to_string()))
}

#[test]
fn every_declared_default_is_the_one_the_configuration_reference_gives() {
    let settings = sitemapd::config::settings::ALL;
    assert!(settings
        .iter()
        .any(|(name, _)| *name == "SITEMAP_PAGE_SIZE"));
    let mut wrong = Vec::new();
    for (name, default) in settings {
        let Some(documented) = documented_default(name) else {
            wrong.push(format!("{name}: no row"));
            continue;
        };
        // A default is the cell's first code span; a variable without one has none there.
        let agrees = match default {
            Some(default) => documented.starts_with(&format!("`{default}`")),
            None => !documented.starts_with('`'),
        };
        if !agrees {
            wrong.push(format!(
                "{name}: {default:?} in the code, {documented:?} documented"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "declared in src/config/settings.rs, documented otherwise in docs/reference.md:\n{}",
        wrong.join("\n")
    );
}
