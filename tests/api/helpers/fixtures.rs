//! Files a test hands the service: blocks of the user guide, templates.

/// The text of the first ```` ```FENCE ```` code block of the user guide (docs/guide.md) that
/// contains `needle`: the views and sites files users copy from it.
pub fn guide_block(fence: &str, needle: &str) -> &'static str {
    const GUIDE: &str = include_str!("../../../docs/guide.md");
    GUIDE
        .split(&format!("```{fence}\n"))
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .find(|block| block.contains(needle))
        .unwrap_or_else(|| panic!("docs/guide.md has no ```{fence} block with {needle}"))
}

/// A file holding `text` (a robots.txt template), removed when dropped.
pub fn template_file(text: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), text).unwrap();
    file
}
