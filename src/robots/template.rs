//! Rendering the robots.txt template: [`render`] (what `/robots.txt` serves) and
//! [`render_template`] (the template's own output, whatever the environment).
//!
//! The template is minijinja (Jinja2 syntax) with these variables: `base_url`,
//! `sitemap_index_url`, `environment` (`"production"` or `"staging"`) and `extra_sitemaps` (a
//! list of absolute URLs). An undefined variable is an error, not an empty string, so a typo
//! cannot silently drop a line. `trim_blocks` and `lstrip_blocks` are on: a line holding only a
//! `{% ... %}` tag leaves nothing behind, because a stray blank line inside a group splits the
//! group for crawlers that follow the original 1994 convention. Nothing is HTML-escaped.
//!
//! Guarantees on the result:
//! - it passes [`RobotsTxt::parse`]; an error names the template line it comes from when the
//!   offending rendered line appears verbatim in the template (almost every robots.txt line
//!   does), otherwise the line of the rendered text ([`RobotsError::RenderedLine`]);
//! - it has a `Sitemap:` line for `sitemap_index_url` and for each of `extra_sitemaps`: those
//!   the template does not list (same URL, character for character) are appended at the end,
//!   after a blank line. Sitemap lines belong to no group, so the end is as good as anywhere;
//! - it ends with a newline.
//!
//! Staging serves [`STAGING_ROBOTS`] only: everything disallowed and no `Sitemap:` line, since a
//! host that must stay out of search engines has no reason to advertise its URLs. The template
//! is still rendered and validated there, so a broken template fails on staging before it
//! reaches production.

use minijinja::{context, AutoEscape, UndefinedBehavior};

use super::lex;
use super::parse::check_sitemap_url;
use super::policy::{ContentSignal, Policy};
use super::{Environment, RobotsContext, RobotsError, RobotsTxt, Warning, MAX_BYTES};
use crate::crawlers::registry::Registry;

/// What `/robots.txt` serves when `SITEMAP_ENV=staging`.
pub const STAGING_ROBOTS: &str =
    "# SITEMAP_ENV=staging: this host must not be crawled.\nUser-agent: *\nDisallow: /\n";

/// A site's robots.txt: the template rendered, with the policy compiled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled {
    /// What `/robots.txt` serves ([`STAGING_ROBOTS`] on staging).
    pub body: String,
    /// The production file, even on staging: what sitemap entries are checked against.
    pub rules_text: String,
    /// What `check` reports and the start logs, template lines where they are known.
    pub warnings: Vec<Warning>,
}

/// [`render`] and [`render_template`] with the crawler policy and the `Content-Signal` line
/// compiled in (see `compile.rs`), and the template's warnings. Without a policy or a signal
/// the text is the template's, byte for byte.
pub fn compile_template(
    template: &str,
    ctx: &RobotsContext,
    policy: Option<&Policy>,
    signal: &ContentSignal,
    registry: &Registry,
) -> Result<Compiled, RobotsError> {
    let required = required_sitemaps(ctx)?;
    let rendered = expand(template, ctx)?;
    let parsed =
        RobotsTxt::parse(&rendered).map_err(|e| to_template_line(e, template, &rendered))?;
    let mut warnings: Vec<Warning> = parsed
        .warnings()
        .iter()
        .map(|w| warning_line(w, template, &rendered))
        .collect();
    let (compiled, more) = super::compile::compile(&rendered, &parsed, policy, signal, registry)?;
    warnings.extend(more.iter().map(|w| warning_line(w, template, &rendered)));
    let added = compiled != rendered;
    let text = with_sitemaps(compiled, parsed.sitemaps(), &required);
    let bytes = text.len();
    // The generated groups come last: past 500 KiB crawlers would never read them.
    if added && bytes > MAX_BYTES {
        return Err(RobotsError::TooLarge { bytes });
    }
    RobotsTxt::parse(&text)?;
    let body = match ctx.environment {
        Environment::Production => text.clone(),
        Environment::Staging => STAGING_ROBOTS.to_string(),
    };
    Ok(Compiled {
        body,
        rules_text: text,
        warnings,
    })
}

/// `warning` with its line traced back to the template, as errors are.
fn warning_line(warning: &Warning, template: &str, rendered: &str) -> Warning {
    let Some(line) = warning.line else {
        return warning.clone();
    };
    let traced = to_template_line(
        RobotsError::Line {
            line,
            reason: String::new(),
        },
        template,
        rendered,
    );
    let line = match traced {
        RobotsError::Line { line, .. } => Some(line),
        _ => None,
    };
    let message = match line {
        Some(_) => warning.message.clone(),
        None => format!(
            "line {} of the rendered robots.txt: {}",
            warning.line.unwrap_or_default(),
            warning.message
        ),
    };
    Warning { line, message }
}

/// The sitemap URLs the output must list, each checked once.
fn required_sitemaps(ctx: &RobotsContext) -> Result<Vec<&str>, RobotsError> {
    let mut urls: Vec<&str> = Vec::new();
    for url in std::iter::once(&ctx.sitemap_index_url).chain(&ctx.extra_sitemaps) {
        check_sitemap_url(url).map_err(|reason| RobotsError::SitemapUrl {
            url: url.clone(),
            reason: reason.to_string(),
        })?;
        if !urls.contains(&url.as_str()) {
            urls.push(url);
        }
    }
    Ok(urls)
}

fn expand(template: &str, ctx: &RobotsContext) -> Result<String, RobotsError> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(true);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    let vars = context! {
        base_url => ctx.base_url,
        sitemap_index_url => ctx.sitemap_index_url,
        environment => ctx.environment.as_str(),
        extra_sitemaps => ctx.extra_sitemaps,
    };
    env.render_named_str("robots.txt", template, vars)
        .map_err(|e| RobotsError::Template {
            line: e.line(),
            message: describe(&e, template),
        })
}

/// `undefined value in "Disallow: {{ privat }}"`: minijinja's message with the template line
/// it points at, instead of its `(in robots.txt:3)` suffix ([`RobotsError::Template`] has the
/// number).
fn describe(error: &minijinja::Error, template: &str) -> String {
    let mut message = error.kind().to_string();
    if let Some(detail) = error.detail() {
        message = format!("{message}: {detail}");
    }
    let lines = lex::lines(template);
    let source = error.line().and_then(|n| lines.get(n.checked_sub(1)?));
    match source.map(|line| line.trim()) {
        Some(text) if !text.is_empty() => format!("{message} in {text:?}"),
        _ => message,
    }
}

/// Turns a line number of the rendered text into one of the template, when the line is there
/// verbatim: at the same number first (no block tag above it), else the first such line.
fn to_template_line(error: RobotsError, template: &str, rendered: &str) -> RobotsError {
    let RobotsError::Line { line, reason } = error else {
        return error;
    };
    let text = lex::lines(rendered)[line - 1].trim();
    let source = lex::lines(template);
    let verbatim = |n: &usize| source.get(n - 1).is_some_and(|s| s.trim() == text);
    let found = Some(line)
        .filter(verbatim)
        .or_else(|| (1..=source.len()).find(verbatim));
    match found {
        Some(line) => RobotsError::Line { line, reason },
        None => RobotsError::RenderedLine { line, reason },
    }
}

/// `text` ending with a newline, plus a `Sitemap:` line for each required URL it does not list.
fn with_sitemaps(mut text: String, listed: &[String], required: &[&str]) -> String {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let missing: Vec<&str> = required
        .iter()
        .copied()
        .filter(|url| !listed.iter().any(|l| l == url))
        .collect();
    if missing.is_empty() {
        return text;
    }
    if !text.is_empty() && !text.ends_with("\n\n") {
        text.push('\n');
    }
    for url in missing {
        text.push_str("Sitemap: ");
        text.push_str(url);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::BUILTIN_TEMPLATE;
    use super::*;

    // The template alone, without a policy: what `compile_template` starts from.
    /// Render the template for this context and validate the result; the text served at
    /// `/robots.txt` ([`STAGING_ROBOTS`] on staging, once the template has been checked).
    fn render(template: &str, ctx: &RobotsContext) -> Result<String, RobotsError> {
        let rendered = render_template(template, ctx)?;
        Ok(match ctx.environment {
            Environment::Production => rendered,
            Environment::Staging => STAGING_ROBOTS.to_string(),
        })
    }

    /// The template's own validated output with its Sitemap lines, even on staging: the rules to
    /// filter sitemap entries with, when the served file is the staging one.
    fn render_template(template: &str, ctx: &RobotsContext) -> Result<String, RobotsError> {
        let required = required_sitemaps(ctx)?;
        let rendered = expand(template, ctx)?;
        let parsed =
            RobotsTxt::parse(&rendered).map_err(|e| to_template_line(e, template, &rendered))?;
        let text = with_sitemaps(rendered, parsed.sitemaps(), &required);
        RobotsTxt::parse(&text)?;
        Ok(text)
    }

    fn ctx(environment: Environment, extra: &[&str]) -> RobotsContext {
        RobotsContext {
            base_url: "https://example.com/".into(),
            sitemap_index_url: "https://example.com/sitemap_index.xml".into(),
            environment,
            extra_sitemaps: extra.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn production(template: &str) -> Result<String, RobotsError> {
        render(template, &ctx(Environment::Production, &[]))
    }

    #[test]
    fn builtin_template_in_production() {
        let extra = [
            "https://cdn.example.net/news.xml",
            "https://example.com/img.xml?a=1&b=2",
        ];
        let text = render(BUILTIN_TEMPLATE, &ctx(Environment::Production, &extra)).unwrap();
        let sitemaps: Vec<&str> = text.lines().filter(|l| l.starts_with("Sitemap:")).collect();
        assert_eq!(
            sitemaps,
            [
                "Sitemap: https://example.com/sitemap_index.xml",
                "Sitemap: https://cdn.example.net/news.xml",
                "Sitemap: https://example.com/img.xml?a=1&b=2",
            ]
        );
        assert!(text.contains("\nUser-agent: *\nAllow: /\n"), "{text}");
        assert!(
            !text.contains("\n\n\n") && text.ends_with(".xml?a=1&b=2\n"),
            "{text}"
        );
        let robots = RobotsTxt::parse(&text).unwrap();
        assert!(robots.is_allowed("Googlebot", "/fr/article.php?AIndex=12"));
    }

    #[test]
    fn builtin_template_without_extra_sitemaps() {
        let text = production(BUILTIN_TEMPLATE).unwrap();
        assert!(
            text.ends_with("\n\nSitemap: https://example.com/sitemap_index.xml\n"),
            "{text}"
        );
        assert!(text.starts_with('#'));
    }

    #[test]
    fn staging_disallows_everything_and_lists_no_sitemap() {
        let staging = ctx(Environment::Staging, &["https://cdn.example.net/news.xml"]);
        let text = render(BUILTIN_TEMPLATE, &staging).unwrap();
        assert_eq!(text, STAGING_ROBOTS);
        let robots = RobotsTxt::parse(&text).unwrap();
        assert!(!robots.is_allowed("Googlebot", "/"));
        assert!(robots.sitemaps().is_empty());
        // Whatever the template says.
        let open = "User-agent: *\nAllow: /\n";
        assert_eq!(render(open, &staging).unwrap(), STAGING_ROBOTS);
        // The template's own output stays available, with its Sitemap lines.
        let own = render_template(open, &staging).unwrap();
        assert!(own.starts_with(open) && own.contains("Sitemap: https://cdn.example.net/news.xml"));
    }

    #[test]
    fn staging_still_validates_the_template() {
        let staging = ctx(Environment::Staging, &[]);
        let error = render("User-agent: *\nDisallow /x\n", &staging).unwrap_err();
        assert_eq!(
            error,
            RobotsError::Line {
                line: 2,
                reason: "missing \":\" after \"Disallow\"".into(),
            }
        );
    }

    #[test]
    fn the_template_sees_the_environment() {
        let template = "User-agent: *\n{% if environment == \"staging\" %}Disallow: /\n{% else %}Allow: /\n{% endif %}";
        let staging = render_template(template, &ctx(Environment::Staging, &[])).unwrap();
        assert!(
            staging.starts_with("User-agent: *\nDisallow: /\n"),
            "{staging}"
        );
        let production = production(template).unwrap();
        assert!(
            production.starts_with("User-agent: *\nAllow: /\n"),
            "{production}"
        );
    }

    #[test]
    fn missing_sitemap_lines_are_appended() {
        let extra = [
            "https://cdn.example.net/a.xml",
            "https://example.com/sitemap_index.xml",
        ];
        let text = render(
            "User-agent: *\nDisallow: /admin/",
            &ctx(Environment::Production, &extra),
        )
        .unwrap();
        assert_eq!(
            text,
            "User-agent: *\nDisallow: /admin/\n\n\
             Sitemap: https://example.com/sitemap_index.xml\nSitemap: https://cdn.example.net/a.xml\n"
        );
        assert_eq!(
            production("").unwrap(),
            "Sitemap: https://example.com/sitemap_index.xml\n"
        );
    }

    #[test]
    fn listed_sitemap_lines_are_not_repeated() {
        let template = "Sitemap: {{ sitemap_index_url }}\n{% for url in extra_sitemaps %}\nSitemap: {{ url }}\n{% endfor %}\nUser-agent: *\nAllow: /\n";
        let extra = ["https://cdn.example.net/a.xml"];
        let text = render(template, &ctx(Environment::Production, &extra)).unwrap();
        assert_eq!(
            text,
            "Sitemap: https://example.com/sitemap_index.xml\nSitemap: https://cdn.example.net/a.xml\n\
             User-agent: *\nAllow: /\n"
        );
    }

    #[test]
    fn template_lines_are_reported_through_block_tags() {
        let template = "{% if true %}\nUser-agent: *\n{% endif %}\n{% for u in extra_sitemaps %}\nSitemap: {{ u }}\n{% endfor %}\nDisallow /x\n";
        let error = production(template).unwrap_err();
        assert!(
            matches!(error, RobotsError::Line { line: 7, .. }),
            "{error}"
        );
        assert!(error
            .to_string()
            .starts_with("robots template line 7: missing \":\" after \"Disallow\""));
    }

    #[test]
    fn lines_made_by_expressions_are_reported_as_rendered() {
        let template = "User-agent: *\n\nDisallow: {{ base_url }}private/\n";
        assert_eq!(
            production(template).unwrap_err().to_string(),
            "robots template: line 3 of the rendered robots.txt: Disallow pattern must start with \
             \"/\" or \"*\", found \"https://example.com/private/\""
        );
    }

    #[test]
    fn each_strict_check_reports_its_line() {
        let cases = [
            (
                "User-agent: *\nDisallow: /a b\n",
                2,
                "Disallow value \"/a b\" holds a space",
            ),
            (
                "# x\nDisallow: /a\nUser-agent: *\n",
                2,
                "Disallow outside any group",
            ),
            (
                "User-agent: *\nAllow: /\nSitemap: /sitemap.xml\n",
                3,
                "Sitemap URL must be an absolute",
            ),
            (
                "User-agent: *\n\n\nDisallow /x\n",
                4,
                "missing \":\" after \"Disallow\"",
            ),
            ("User-agent: /x\n", 1, "User-agent must be a product token"),
        ];
        for (template, line, reason) in cases {
            let error = production(template).unwrap_err().to_string();
            let expected = format!("robots template line {line}: {reason}");
            assert!(error.starts_with(&expected), "{error}");
            let registry = Registry::builtin();
            let signal = ContentSignal::Off;
            let compiled = compile_template(
                template,
                &ctx(Environment::Production, &[]),
                None,
                &signal,
                &registry,
            );
            let error = compiled.unwrap_err().to_string();
            assert!(error.starts_with(&expected), "{error}");
        }
    }

    #[test]
    fn template_errors_carry_their_line() {
        let error = production("User-agent: *\n{% if %}\n").unwrap_err();
        assert!(
            matches!(error, RobotsError::Template { line: Some(2), .. }),
            "{error:?}"
        );
        assert!(
            error
                .to_string()
                .starts_with("robots template line 2: syntax error: "),
            "{error}"
        );
        let error = production("User-agent: *\nDisallow: /{{ sitemap_url }}\n").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("robots template line 2: undefined value"),
            "{error}"
        );
    }

    #[test]
    fn bad_configured_sitemaps_are_refused() {
        let bad = ctx(Environment::Production, &["sitemap-news.xml"]);
        assert_eq!(
            render(BUILTIN_TEMPLATE, &bad).unwrap_err().to_string(),
            "robots.txt: sitemap URL \"sitemap-news.xml\" must be an absolute http(s) URL"
        );
    }

    #[test]
    fn a_template_over_500_kib_is_served_with_a_warning_but_not_with_a_policy() {
        let template = "User-agent: *\n{% for i in range(12000) %}\nDisallow: /private/{{ i }}/0123456789abcdef0123456789\n{% endfor %}\n";
        let registry = Registry::builtin();
        let context = ctx(Environment::Production, &[]);
        let compiled =
            compile_template(template, &context, None, &ContentSignal::Derived, &registry).unwrap();
        assert!(compiled.body.len() > 500 * 1024);
        assert_eq!(compiled.warnings.len(), 1, "{:?}", compiled.warnings);
        assert!(compiled.warnings[0]
            .message
            .contains("over the 512000 bytes"));
        // The policy's groups would come after the point where crawlers stop reading.
        let policy = Policy::parse("ai-training=disallow", "ROBOTS_POLICY").unwrap();
        let error = compile_template(
            template,
            &context,
            Some(&policy),
            &ContentSignal::Derived,
            &registry,
        )
        .unwrap_err();
        assert!(
            matches!(error, RobotsError::TooLarge { bytes } if bytes > 500 * 1024),
            "{error}"
        );
    }

    #[test]
    fn warnings_name_template_lines() {
        let template =
            "{% if true %}\nUser-agent: *\n{% endif %}\nDissallow: /x\nCrawl-delay: {{ 5 }}\n";
        let registry = Registry::builtin();
        let context = ctx(Environment::Production, &[]);
        let compiled =
            compile_template(template, &context, None, &ContentSignal::Derived, &registry).unwrap();
        let lines: Vec<Option<usize>> = compiled.warnings.iter().map(|w| w.line).collect();
        assert_eq!(lines, [Some(4), None], "{:?}", compiled.warnings);
        assert!(compiled.warnings[1]
            .to_string()
            .starts_with("robots template: line 3 of the rendered robots.txt: Crawl-delay:"));
        // Without a policy or a signal, the text is the template's.
        assert_eq!(compiled.body, production(template).unwrap());
        assert!(compiled.body.contains("Dissallow: /x\n"));
    }

    #[test]
    fn nothing_is_html_escaped() {
        let template = "User-agent: *\nDisallow: /search?q={{ \"a&b<c\" }}\n";
        assert!(production(template)
            .unwrap()
            .contains("Disallow: /search?q=a&b<c\n"));
    }
}
