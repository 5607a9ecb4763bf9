//! `sitemapd robots test` and `sitemapd robots enforce`: the served robots.txt asked about one
//! URL, and the policy turned into a web server snippet.

use crate::app::{self, StartError};
use crate::config::Config;

/// Says whether robots.txt allows `url` for `agent` (a token, a registry name or a whole
/// User-Agent, read through the registry as that crawler would), and which rule decided.
pub fn robots_test(config: &Config, url: &str, agent: &str) -> Result<i32, StartError> {
    let site = config.first_site();
    let served = crate::robots::RobotsTxt::parse(&app::served_robots(config, site)?.body)?;
    let tested = match crate::admin::tester::tested_url(url, site.base_url.host()) {
        Ok(tested) => tested,
        Err(refused) => {
            eprintln!("robots test {url:?}: {refused}");
            return Ok(2);
        }
    };
    if let Some(note) = &tested.note {
        println!("note: {note}");
    }
    let path = tested.path;
    // A crawler's name or whole User-Agent string answers for the token that crawler obeys.
    let registry = &config.crawlers;
    let token = registry.robots_token(agent);
    let verdict = served.evaluate(token, &path);
    let agent = match registry.resolve(agent) {
        Some(id) if !registry.get(id).name.eq_ignore_ascii_case(token) => {
            format!("{} (token {token})", registry.get(id).name)
        }
        Some(_) => token.to_string(),
        None => agent.to_string(),
    };
    let word = if verdict.allowed {
        "allowed"
    } else {
        "disallowed"
    };
    match &verdict.decided_by {
        Some(rule) => println!(
            "{word}: {path} for {agent}, by line {}: {}: {}",
            rule.line,
            if rule.allow { "Allow" } else { "Disallow" },
            rule.pattern
        ),
        None => println!("{word}: {path} for {agent}, no rule matched"),
    }
    Ok(if verdict.allowed { 0 } else { 1 })
}

/// Prints the `robots enforce` snippet for `server` (the first site's policy), with the headers
/// the served robots.txt, the policy and the licence give the site's pages.
pub fn robots_enforce(config: &Config, server: &str) -> Result<i32, StartError> {
    use crate::robots::enforce::{blocked, snippet, Server};
    use crate::robots::page_headers::PageHeaders;
    let server = Server::parse(server).expect("clap allows only known servers");
    let site = config.first_site();
    let policy = site.robots.policy.as_ref();
    let registry = &config.crawlers;
    let refused = blocked(policy, registry).map_err(crate::robots::RobotsError::from)?;
    let robots = app::served_robots(config, site)?;
    let served = crate::robots::RobotsTxt::parse(&robots.body)?;
    let mut headers = PageHeaders::new(&served, policy, app::links(site, &robots));
    headers.link_by_prefix = app::links_by_prefix(site, &robots);
    print!("{}", snippet(server, &refused, policy, &headers));
    Ok(0)
}
