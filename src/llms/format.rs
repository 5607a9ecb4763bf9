//! The llms.txt format (llmstxt.org): text in, bytes out. Every value from the database or the
//! configuration goes through [`inline`], so no title or description can leave its line, close
//! its link early, open a code span, raw HTML or a link of its own, or start a heading.

use super::Link;

/// Most characters of a link's title, before it is cut (with `…`).
pub const MAX_TITLE_CHARS: usize = 200;
/// Most characters of a link's description, before it is cut (with `…`).
pub const MAX_DESCRIPTION_CHARS: usize = 500;
/// Most characters of the file's name (H1) and summary, and of a section's title.
pub const MAX_HEADER_CHARS: usize = 500;
/// The section the format reserves for links a reader may skip.
pub const OPTIONAL_SECTION: &str = "Optional";

/// What the file says before its sections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The H1 (the site's name, by default its host).
    pub name: String,
    /// The blockquote summary, when configured.
    pub description: Option<String>,
    /// The site's sitemap index URL, named in the file's one paragraph.
    pub index_url: String,
    pub per_group: usize,
}

/// One group's part of the file: its heading and its links, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionText<'a> {
    pub title: &'a str,
    pub optional: bool,
    pub links: &'a [Link],
}

/// The whole file: `# name`, `> summary`, one paragraph, then a `## section` per group with
/// links (groups without any are left out) and, last, `## Optional` with the links of the
/// groups marked optional.
pub fn render(header: &Header, sections: &[SectionText<'_>]) -> String {
    let mut out = String::with_capacity(1024 + sections.len() * header.per_group * 160);
    out.push_str("# ");
    out.push_str(&inline(&header.name, MAX_HEADER_CHARS));
    out.push_str("\n\n");
    if let Some(description) = header.description.as_deref() {
        let description = inline(description, MAX_HEADER_CHARS);
        if !description.is_empty() {
            out.push_str("> ");
            out.push_str(&description);
            out.push_str("\n\n");
        }
    }
    // The format's free paragraph; the reference parser also needs one after the summary. Its
    // link makes a file of empty groups still hold one (Lighthouse wants a markdown link).
    out.push_str(&format!(
        "The newest pages of each section, at most {} each, most recently changed first. \
         The sitemaps list every page: [sitemap index]({})\n",
        header.per_group,
        destination(&header.index_url)
    ));
    let mut used: Vec<String> = Vec::new();
    let with_links = || sections.iter().filter(|s| !s.links.is_empty());
    if with_links().any(|s| s.optional) {
        used.push(OPTIONAL_SECTION.to_string());
    }
    for section in with_links().filter(|s| !s.optional) {
        let title = unique_title(&inline(section.title, MAX_HEADER_CHARS), &mut used);
        out.push_str(&format!("\n## {title}\n\n"));
        push_links(&mut out, section.links);
    }
    if with_links().any(|s| s.optional) {
        out.push_str(&format!("\n## {OPTIONAL_SECTION}\n\n"));
        for section in with_links().filter(|s| s.optional) {
            push_links(&mut out, section.links);
        }
    }
    out
}

/// A section title not used yet (readers key sections by title): `Posts`, then `Posts (2)`.
fn unique_title(title: &str, used: &mut Vec<String>) -> String {
    let title = if title.is_empty() { "Pages" } else { title };
    let mut candidate = title.to_string();
    let mut n = 1;
    while used.iter().any(|u| u.eq_ignore_ascii_case(&candidate)) {
        n += 1;
        candidate = format!("{title} ({n})");
    }
    used.push(candidate.clone());
    candidate
}

fn push_links(out: &mut String, links: &[Link]) {
    for link in links {
        out.push_str(&link_line(link));
        out.push('\n');
    }
}

/// `- [title](url): description` on one line; the title falls back to the URL's path, and
/// `: description` is there only when there is one.
pub fn link_line(link: &Link) -> String {
    let mut title = link
        .title
        .as_deref()
        .map(|t| inline(t, MAX_TITLE_CHARS))
        .unwrap_or_default();
    if title.is_empty() {
        title = inline(&link.path, MAX_TITLE_CHARS);
    }
    if title.is_empty() {
        title = "/".to_string();
    }
    let mut line = format!("- [{title}]({})", destination(&link.url));
    if let Some(description) = link
        .description
        .as_deref()
        .map(|d| inline(d, MAX_DESCRIPTION_CHARS))
        .filter(|d| !d.is_empty())
    {
        line.push_str(": ");
        line.push_str(&description);
    }
    line
}

/// A URL as a link destination: parentheses (which would end it), spaces and angle brackets
/// percent-encoded, the same URL to any client (a `Loc` holds none but parentheses).
pub fn destination(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    for c in url.chars() {
        match c {
            '(' => out.push_str("%28"),
            ')' => out.push_str("%29"),
            ' ' => out.push_str("%20"),
            '<' => out.push_str("%3C"),
            '>' => out.push_str("%3E"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Text made safe for one line of markdown inline content, at most `max_chars` characters of
/// the original (cut with `…`):
/// - line breaks, tabs and other whitespace runs become one space; other control characters
///   are removed; the result is trimmed;
/// - `[` and `]` become `(` and `)` (a bracket would end or nest the link text: the format's
///   parsers take a title up to the first `]`), never backslash-escaped;
/// - `` ` ``, `<` and `\` are backslash-escaped, so no code span, raw HTML or autolink can
///   swallow the link around them and no backslash escapes what follows it; they still read
///   as themselves once rendered.
///
/// A leading `#` or `>` is harmless: this text never starts a line.
pub fn inline(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars.saturating_mul(2)));
    let mut kept = 0usize;
    let mut pending_space = false;
    for c in text.chars() {
        let c = match c {
            '\n' | '\r' | '\t' | '\u{2028}' | '\u{2029}' | '\u{85}' | '\u{0B}' | '\u{0C}' => ' ',
            c if c.is_control() => continue,
            c => c,
        };
        if c.is_whitespace() {
            pending_space = !out.is_empty();
            continue;
        }
        if kept == max_chars {
            out.push('…');
            return out;
        }
        if pending_space {
            out.push(' ');
            pending_space = false;
        }
        match c {
            '[' => out.push('('),
            ']' => out.push(')'),
            '`' | '<' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
        kept += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(url: &str, title: Option<&str>, description: Option<&str>) -> Link {
        Link {
            url: url.to_string(),
            path: url::Url::parse(url).unwrap().path().to_string(),
            title: title.map(str::to_string),
            description: description.map(str::to_string),
        }
    }

    #[test]
    fn a_link_is_one_line_with_its_description_only_when_there_is_one() {
        assert_eq!(
            link_line(&link("https://e.com/a", Some("A page"), Some("About it"))),
            "- [A page](https://e.com/a): About it"
        );
        assert_eq!(
            link_line(&link("https://e.com/a", Some("A"), Some(" \n "))),
            "- [A](https://e.com/a)"
        );
        assert_eq!(
            link_line(&link("https://e.com/b/c", None, None)),
            "- [/b/c](https://e.com/b/c)"
        );
        assert_eq!(
            link_line(&link("https://e.com/b", Some("\u{1}\n"), None)),
            "- [/b](https://e.com/b)"
        );
    }

    #[test]
    fn hostile_text_stays_inline_and_brackets_are_replaced_not_escaped() {
        assert_eq!(
            inline("a]\n(b)[c\r\n## d `e` <i>x</i> \\", 100),
            "a) (b)(c ## d \\`e\\` \\<i>x\\</i> \\\\"
        );
        assert_eq!(inline("\u{7}bell\u{2028}line", 100), "bell line");
        assert_eq!(inline("abcdef", 3), "abc…");
        assert_eq!(inline("abc", 3), "abc");
    }

    #[test]
    fn parentheses_in_urls_are_percent_encoded() {
        assert_eq!(
            destination("https://e.com/a_(b)"),
            "https://e.com/a_%28b%29"
        );
    }

    #[test]
    fn optional_groups_go_last_under_optional_and_titles_stay_distinct() {
        let header = Header {
            name: "Example".into(),
            description: Some("A site".into()),
            index_url: "https://e.com/sitemap_index.xml".into(),
            per_group: 2,
        };
        let a = [link("https://e.com/a", Some("A"), None)];
        let b = [link("https://e.com/b", Some("B"), Some("bee"))];
        let text = render(
            &header,
            &[
                SectionText {
                    title: "Extra",
                    optional: true,
                    links: &b,
                },
                SectionText {
                    title: "Posts",
                    optional: false,
                    links: &a,
                },
                SectionText {
                    title: "posts",
                    optional: false,
                    links: &a,
                },
                SectionText {
                    title: "Empty",
                    optional: false,
                    links: &[],
                },
            ],
        );
        assert_eq!(
            text,
            "# Example\n\n> A site\n\nThe newest pages of each section, at most 2 each, most \
             recently changed first. The sitemaps list every page: \
             [sitemap index](https://e.com/sitemap_index.xml)\n\n## Posts\n\n- [A](https://e.com/a)\n\n\
             ## posts (2)\n\n- [A](https://e.com/a)\n\n## Optional\n\n\
             - [B](https://e.com/b): bee\n"
        );
    }
}
