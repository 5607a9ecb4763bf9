//! llms.txt's variables: `LLMS_TXT`, `SITE_NAME`, `SITE_DESCRIPTION`, `LLMS_TXT_PER_GROUP`,
//! and what a `[[site]]` of the sites file says over them (`llms_txt`, `name`, `description`).

use std::sync::Arc;

use super::settings::{LLMS_TXT, LLMS_TXT_PER_GROUP};
use super::{ConfigError, GroupConfig, GroupKind, SiteConfig, Vars};
use crate::crawlers::Registry;
use crate::llms::{
    ai_search_tokens, AiSearchPolicy, GroupLlms, Header, LlmsConfig, UNNAMED_SECTION,
};
use crate::robots::RobotsTxt;

/// What the environment says about llms.txt, for every site.
#[derive(Debug, Clone)]
pub(super) struct LlmsEnv {
    on: bool,
    name: Option<String>,
    description: Option<String>,
    per_group: usize,
}

pub(super) fn llms_env(vars: &Vars) -> Result<LlmsEnv, ConfigError> {
    Ok(LlmsEnv {
        on: LLMS_TXT.read(vars)?,
        name: text(vars.get("SITE_NAME")),
        description: text(vars.get("SITE_DESCRIPTION")),
        per_group: LLMS_TXT_PER_GROUP.read(vars)?,
    })
}

/// A site's llms.txt: a sites file's `llms_txt`, `name` and `description` win over the
/// environment's; `None` when the site serves none.
pub(super) fn site_llms(
    env: &LlmsEnv,
    on: Option<bool>,
    name: Option<String>,
    description: Option<String>,
) -> Option<LlmsConfig> {
    on.unwrap_or(env.on).then(|| LlmsConfig {
        name: text(name.as_deref()).or_else(|| env.name.clone()),
        description: text(description.as_deref()).or_else(|| env.description.clone()),
        per_group: env.per_group,
    })
}

/// What `group` of `site` contributes to the site's llms.txt, its links checked against
/// `rules` (the compiled robots.txt the sitemaps are checked against) for each token of every
/// `ai-search` crawler of the registry; `None` when the site serves no llms.txt.
pub fn group_llms(
    site: &SiteConfig,
    group: &GroupConfig,
    rules: Arc<RobotsTxt>,
    registry: &Registry,
) -> Option<Arc<GroupLlms>> {
    let config = site.llms.as_ref()?;
    let header = Header {
        name: config
            .name
            .clone()
            .unwrap_or_else(|| site.base_url.host().to_string()),
        description: config.description.clone(),
        index_url: site.index_url(),
        per_group: config.per_group,
    };
    let title = group
        .title
        .clone()
        .or_else(|| group.name.clone())
        .unwrap_or_else(|| UNNAMED_SECTION.to_string());
    Some(Arc::new(GroupLlms {
        header: Arc::new(header),
        title,
        optional: group.llms_optional,
        path: group.llms_path.clone(),
        listed: matches!(group.kind, GroupKind::Urls),
        policy: AiSearchPolicy::new(rules, ai_search_tokens(registry)),
    }))
}

fn text(value: Option<&str>) -> Option<String> {
    value
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llms_txt_is_off_unless_asked_for_and_bad_values_name_the_variable() {
        let env = |pairs: &[(&str, &str)]| llms_env(&Vars::from_pairs(pairs.iter().copied()));
        assert!(site_llms(&env(&[]).unwrap(), None, None, None).is_none());
        let on = env(&[("LLMS_TXT", "on"), ("SITE_NAME", " Example ")]).unwrap();
        let site = site_llms(&on, None, None, Some("About".into())).unwrap();
        assert_eq!(site.name.as_deref(), Some("Example"));
        assert_eq!(site.description.as_deref(), Some("About"));
        assert_eq!(site.per_group, 50);
        assert!(site_llms(&on, Some(false), None, None).is_none());
        let err = env(&[("LLMS_TXT_PER_GROUP", "0")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "LLMS_TXT_PER_GROUP=\"0\": an integer from 1 to 1000"
        );
        assert_eq!(
            env(&[("LLMS_TXT", "yes")]).unwrap_err().variable,
            "LLMS_TXT"
        );
    }
}
