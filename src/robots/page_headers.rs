//! The response headers the `robots enforce` snippets set on the site's own pages: the policy
//! where crawlers read it beside robots.txt. `Content-Signal` as the served robots.txt's `*`
//! group says it, `Content-Usage` (IETF aipref vocabulary: `search`, `train-ai`, each `y` or
//! `n`, from the policy's rules on `/`, only for the purposes the policy names) and `Link`
//! (the licence and llms.txt, as sitemapd's own answers carry it). [`PageHeaders::write`] turns
//! them into each server's lines; sitemapd's own answers keep their own `Link`.

use super::lex::Extension;
use super::policy::Policy;
use super::RobotsTxt;
use crate::crawlers::registry::Purpose;

use super::server::Server;

/// The headers for the site's pages; `None` leaves one out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageHeaders {
    pub content_signal: Option<String>,
    pub content_usage: Option<String>,
    pub link: Option<String>,
    /// Path prefixes with a llms.txt of their own and the `Link` of the pages under them,
    /// longest first: the most specific applies.
    pub link_by_prefix: Vec<(String, String)>,
}

/// The aipref labels of the purposes that have one.
const USAGES: [(Purpose, &str); 2] = [
    (Purpose::Search, "search"),
    (Purpose::AiTraining, "train-ai"),
];

impl PageHeaders {
    /// From the served robots.txt (its `*` group's Content-Signal), the policy and the `Link`
    /// value sitemapd's answers carry.
    pub fn new(robots: &RobotsTxt, policy: Option<&Policy>, link: Option<String>) -> Self {
        Self {
            content_signal: star_content_signal(robots),
            content_usage: policy.and_then(content_usage),
            link,
            link_by_prefix: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    fn each(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            ("Content-Signal", &self.content_signal),
            ("Content-Usage", &self.content_usage),
            ("Link", &self.link),
        ]
        .into_iter()
        .filter_map(|(name, value)| Some((name, value.as_deref()?)))
    }

    /// The lines that set them for `server`; a `Link` already in a response (sitemapd's) is
    /// kept, not doubled.
    pub fn write(&self, server: Server, out: &mut String) {
        if self.is_empty() {
            return;
        }
        out.push_str(
            "# The policy on the site's pages: Content-Signal as in robots.txt, Content-Usage\n\
             # (IETF aipref) and Link (the licence, llms.txt). Responses that have a Link of\n\
             # their own (sitemapd's) keep it.\n",
        );
        match server {
            Server::Nginx => self.nginx(out),
            Server::Apache => self.apache(out),
            Server::Caddy => self.caddy(out),
        }
    }

    fn nginx(&self, out: &mut String) {
        out.push_str(
            "# nginx hands add_header down only to blocks without add_header of their own: a\n\
             # server or location with its own must repeat these lines.\n",
        );
        for (name, value) in self.each() {
            if name == "Link" {
                // The most specific prefix's value first (nginx tries regexes in order), on
                // the URI as requested, before any rewrite to the application's script.
                out.push_str("map $request_uri $sitemapd_page_link {\n");
                for (prefix, link) in &self.link_by_prefix {
                    out.push_str(&format!(
                        "    \"~^{}\" \"{}\";\n",
                        regex(prefix),
                        quoted(link)
                    ));
                }
                out.push_str(&format!("    default \"{}\";\n}}\n", quoted(value)));
                // An empty value adds no header: only responses without a Link get this one.
                out.push_str(
                    "map $upstream_http_link $sitemapd_link {\n    \"\" $sitemapd_page_link;\n    default \"\";\n}\n",
                );
                out.push_str("add_header Link $sitemapd_link;\n");
            } else {
                out.push_str(&format!("add_header {name} \"{}\";\n", quoted(value)));
            }
        }
    }

    fn apache(&self, out: &mut String) {
        out.push_str("# These need mod_headers (a2enmod headers).\n");
        for (name, value) in self.each() {
            if name != "Link" {
                out.push_str(&format!("Header set {name} \"{}\"\n", quoted(value)));
                continue;
            }
            // The first that applies sets it: the most specific prefix first, on the request
            // line as sent (REQUEST_URI is the rewritten one by the time headers are set).
            for (prefix, link) in &self.link_by_prefix {
                out.push_str(&format!(
                    "Header setifempty Link \"{}\" \"expr=%{{THE_REQUEST}} =~ m#^[A-Z]+ {}#\"\n",
                    quoted(link),
                    regex(prefix)
                ));
            }
            out.push_str(&format!("Header setifempty Link \"{}\"\n", quoted(value)));
        }
    }

    fn caddy(&self, out: &mut String) {
        if let Some(link) = &self.link {
            // Regexes are tried in order: the most specific prefix first, on the path as
            // requested, before any rewrite.
            out.push_str("map {http.request.orig_uri.path} {sitemapd_link} {\n");
            for (prefix, value) in &self.link_by_prefix {
                out.push_str(&format!("\t~^{} `{value}`\n", regex(prefix)));
            }
            out.push_str(&format!("\tdefault `{link}`\n}}\n"));
        }
        // `?` sets a header only where the response has none; one directive each, since the
        // condition of a `header` block holds for all of its fields together.
        for (name, value) in self.each() {
            let value = if name == "Link" {
                "{sitemapd_link}"
            } else {
                value
            };
            out.push_str(&format!("header ?{name} `{value}`\n"));
        }
    }
}

/// A path prefix as a regular expression (prefixes hold no other special character).
fn regex(prefix: &str) -> String {
    prefix.replace('.', "\\.")
}

/// `\` and `"` escaped, for a double-quoted nginx or Apache string.
fn quoted(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The value of the `*` group's Content-Signal line, as served.
fn star_content_signal(robots: &RobotsTxt) -> Option<String> {
    let extra = robots
        .groups
        .iter()
        .filter(|g| g.lists("*"))
        .flat_map(|g| &g.extras)
        .find(|extra| extra.extension == Extension::ContentSignal)?;
    let (_, value) = extra.text.split_once(':')?;
    Some(value.trim().to_string())
}

/// `search=y, train-ai=n`, from the rules of the purposes the policy names on `/`.
fn content_usage(policy: &Policy) -> Option<String> {
    let pairs: Vec<String> = USAGES
        .iter()
        .filter_map(|(purpose, label)| {
            let access = policy.purpose_rule(*purpose)?;
            Some(format!(
                "{label}={}",
                if access.allows("/") { "y" } else { "n" }
            ))
        })
        .collect();
    (!pairs.is_empty()).then(|| pairs.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(robots: &str, policy: &str) -> PageHeaders {
        let robots = RobotsTxt::parse(robots).unwrap();
        let policy = Policy::parse(policy, "ROBOTS_POLICY").unwrap();
        PageHeaders::new(
            &robots,
            Some(&policy),
            Some("<https://e.com/license.xml>; rel=\"license\"".into()),
        )
    }

    #[test]
    fn usage_names_only_the_purposes_the_policy_names() {
        let found = headers(
            "User-agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n",
            "ai-training=disallow,ai-search=allow,GPTBot=disallow",
        );
        assert_eq!(
            found.content_signal.as_deref(),
            Some("search=yes, ai-train=no")
        );
        assert_eq!(found.content_usage.as_deref(), Some("train-ai=n"));
        let both = headers(
            "User-agent: *\nAllow: /\n",
            "search=allow,ai-training=disallow:/p/",
        );
        assert_eq!(both.content_signal, None);
        assert_eq!(both.content_usage.as_deref(), Some("search=y, train-ai=y"));
    }

    #[test]
    fn each_server_keeps_a_link_the_response_has() {
        let found = headers("User-agent: *\nAllow: /\n", "ai-training=disallow");
        let mut nginx = String::new();
        found.write(Server::Nginx, &mut nginx);
        assert!(
            nginx.contains("add_header Content-Usage \"train-ai=n\";\n"),
            "{nginx}"
        );
        assert!(
            nginx.contains("    default \"<https://e.com/license.xml>; rel=\\\"license\\\"\";\n"),
            "{nginx}"
        );
        assert!(
            nginx.contains("    \"\" $sitemapd_page_link;\n"),
            "only where the response has none: {nginx}"
        );
        let mut apache = String::new();
        found.write(Server::Apache, &mut apache);
        assert!(
            apache.contains(
                "Header setifempty Link \"<https://e.com/license.xml>; rel=\\\"license\\\"\"\n"
            ),
            "{apache}"
        );
        let mut caddy = String::new();
        found.write(Server::Caddy, &mut caddy);
        assert!(
            caddy.contains("\tdefault `<https://e.com/license.xml>; rel=\"license\"`\n")
                && caddy.contains("header ?Link `{sitemapd_link}`\n"),
            "{caddy}"
        );
        let mut none = String::new();
        PageHeaders::default().write(Server::Caddy, &mut none);
        assert!(none.is_empty());
    }

    #[test]
    fn the_most_specific_prefix_comes_first_for_every_server() {
        let mut found = headers("User-agent: *\nAllow: /\n", "ai-training=disallow");
        found.link_by_prefix = vec![
            ("/blog/news.x/".into(), "<n>".into()),
            ("/blog/".into(), "<b>".into()),
        ];
        for server in [Server::Nginx, Server::Apache, Server::Caddy] {
            let mut out = String::new();
            found.write(server, &mut out);
            let news = out.find("/blog/news\\.x/").expect("the dot escaped");
            let blog = out
                .find("^/blog/\"")
                .or_else(|| out.find("^/blog/ "))
                .or_else(|| out.find("[A-Z]+ /blog/#"));
            assert!(blog.is_some_and(|blog| news < blog), "{out}");
        }
    }
}
