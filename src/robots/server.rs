//! The web servers sitemapd writes configuration for (`sitemapd robots enforce`): the 403 rules
//! and the headers on the site's pages are both written per server.

/// The servers a snippet can be printed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Nginx,
    Apache,
    Caddy,
}

impl Server {
    pub fn parse(name: &str) -> Option<Server> {
        match name.to_ascii_lowercase().as_str() {
            "nginx" => Some(Server::Nginx),
            "apache" | "apache2" | "httpd" => Some(Server::Apache),
            "caddy" => Some(Server::Caddy),
            _ => None,
        }
    }
}
