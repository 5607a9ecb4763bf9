//! TEMPORARY stub, replaced by the real robots module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Environment {
    Production,
    Staging,
}
pub struct RobotsContext {
    pub base_url: String,
    pub sitemap_index_url: String,
    pub environment: Environment,
    pub extra_sitemaps: Vec<String>,
}
#[derive(Debug)]
pub struct RobotsTxt;
pub struct Verdict {
    pub allowed: bool,
    pub decided_by: Option<MatchedRule>,
}
pub struct MatchedRule {
    pub line: usize,
    pub allow: bool,
    pub pattern: String,
}
#[derive(Debug, thiserror::Error)]
pub enum RobotsError {
    #[error("robots template line {line}: {reason}")]
    Line { line: usize, reason: String },
}
pub const BUILTIN_TEMPLATE: &str = include_str!("../../templates/robots.txt");
pub fn render(_template: &str, ctx: &RobotsContext) -> Result<String, RobotsError> {
    Ok(format!(
        "User-agent: *\nAllow: /\n\nSitemap: {}\n",
        ctx.sitemap_index_url
    ))
}
impl RobotsTxt {
    pub fn parse(_text: &str) -> Result<RobotsTxt, RobotsError> {
        Ok(RobotsTxt)
    }
    pub fn evaluate(&self, _ua: &str, _p: &str) -> Verdict {
        Verdict {
            allowed: true,
            decided_by: None,
        }
    }
    pub fn is_allowed(&self, ua: &str, p: &str) -> bool {
        self.evaluate(ua, p).allowed
    }
}
