//! Opening the sites, the one way `serve` and the one-shot commands share: robots.txt compiled
//! and checked, the store connected and migrated, each source watched, and every group made
//! with its sweeper. Nothing here listens, verifies or reads the access log: that is
//! [`super::Service`]'s, for `serve` alone.

use std::sync::Arc;

use chrono::Utc;

use super::{group_settings, StartError};
use crate::config::{Config, SiteConfig};
use crate::metrics::{Metrics, SiteLabels};
use crate::notify::Notifier;
use crate::purge::{Purger, SitePurge};
use crate::robots::{self, PolicySummary, RobotsContext, RobotsTxt};
use crate::site::{Group, Site};
use crate::sitemap::EntryRules;
use crate::store::{Store, StoreError, Watch};
use crate::sweep::lease::{replica_name, LeaseHolder, SiteLease};
use crate::sweep::Sweeper;

/// Every site of a configuration, opened: stored files are served at once, and each group's
/// sweeper is ready to bring them up to date.
pub struct Sites {
    pub store: Store,
    pub sites: Vec<Arc<Site>>,
    /// One per group of each site, in the order of `sites` and their groups.
    pub sweepers: Vec<Arc<Sweeper>>,
    /// Each site's robots.txt policy summary, for the status page.
    pub policies: Vec<PolicySummary>,
    /// What takes each site's lease, when replicas share the work (`REPLICA_LEASE` on a
    /// database replicas share): started by [`super::Service::serve`], never by a command.
    pub leases: Vec<LeaseHolder>,
}

impl Sites {
    /// Checks every template, connects and migrates, and opens every site; each sweep announces
    /// through `notifier`, tells `purger`'s caches what it changed (`CACHE_PURGE`; `serve`
    /// alone) and counts into `metrics`.
    pub async fn open(
        config: &Config,
        notifier: &Arc<Notifier>,
        purger: Option<&Arc<Purger>>,
        metrics: &Metrics,
    ) -> Result<Self, StartError> {
        // Every template is checked before anything else happens.
        let mut prepared = Vec::with_capacity(config.sites.len());
        for site in &config.sites {
            let robots = served_robots(config, site)?;
            for warning in &robots.warnings {
                tracing::warn!(site = %site.base_url.as_str(), "{warning}");
            }
            prepared.push((site, robots));
        }
        let store = Store::connect(&config.database()).await?;
        store.migrate().await?;
        for (source, watch, reader) in watch_sources(&store, config).await? {
            match watch {
                Watch::Failed { .. } => tracing::warn!("{}", watch.describe(&source)),
                _ => tracing::info!("{}", watch.describe(&source)),
            }
            if let Some(warning) = reader.range_reads(&source).await.warning(&source) {
                tracing::warn!("{warning}");
            }
        }
        let mut opened = Self {
            store,
            sites: Vec::with_capacity(prepared.len()),
            sweepers: Vec::new(),
            policies: Vec::with_capacity(prepared.len()),
            leases: Vec::new(),
        };
        let replica: Arc<str> = replica_name().into();
        for (site_config, robots) in prepared {
            opened.policies.push(robots::summary(
                site_config.robots.policy.as_ref(),
                &robots.rules,
                &config.crawlers,
            ));
            let mut groups = Vec::with_capacity(site_config.groups.len());
            let mut stale_reports = Vec::with_capacity(site_config.groups.len());
            let site_store = opened
                .store
                .for_site(site_config.source_database_url.as_ref())
                .await?;
            for group_config in &site_config.groups {
                let settings = group_settings(config, site_config, group_config, &robots);
                let (group, stale) = Group::new(
                    settings,
                    site_store.for_source(&group_config.source),
                    Utc::now().timestamp(),
                );
                // Before any sweep of any site: no site clears removed URLs another reads.
                crate::sweep::register_removed_reader(&group, notifier).await;
                groups.push(group);
                stale_reports.push(stale);
            }
            let site = Site::new(groups);
            let replicas = config.replica_lease && site.first().store.shared_by_replicas();
            let lease = match replicas {
                true => Some(opened.lease(&site, metrics, &replica)),
                false => None,
            };
            let purge = purger.map(|purger| SitePurge::new(&site, purger.clone(), replicas));
            for (group, stale) in site.groups.iter().zip(stale_reports) {
                let sweeper = Sweeper::open(
                    group.clone(),
                    stale,
                    notifier.clone(),
                    metrics.sweep.clone(),
                    lease.clone(),
                    purge.clone(),
                )
                .await?;
                opened.sweepers.push(sweeper);
            }
            opened.sites.push(site);
        }
        Ok(opened)
    }

    /// `site`'s lease, which its groups are kept current under by one replica at a time (see
    /// [`crate::sweep::lease`]); what takes it is kept to be started with the service.
    fn lease(&mut self, site: &Arc<Site>, metrics: &Metrics, replica: &Arc<str>) -> SiteLease {
        let held = metrics.lease_held.get_or_create(&SiteLabels {
            site: site.key.clone(),
        });
        let store = site.first().store.clone();
        let (lease, holder) = SiteLease::new(store, site.clone(), held.clone(), replica.clone());
        self.leases.push(holder);
        lease
    }
}

/// The robots.txt this configuration serves, and the rules entries are checked against.
pub struct ServedRobots {
    pub body: String,
    /// The template and policy as compiled for production: what entries are checked against.
    pub rules_text: String,
    /// The compiled file's rules (equal to the served file's, except on staging).
    pub rules: Arc<RobotsTxt>,
    /// What `check` reports about the template (lines crawlers ignore or misread).
    pub warnings: Vec<robots::Warning>,
    /// `/license.xml`, when the policy names a purpose RSL has a usage for and
    /// `ROBOTS_LICENSE` is not `off`; robots.txt then names it in a `License:` line.
    pub license: Option<Arc<robots::License>>,
}

/// Renders and validates robots.txt; a template error stops the start with its line number.
pub fn served_robots(config: &Config, site: &SiteConfig) -> Result<ServedRobots, StartError> {
    let template = match &site.robots_template {
        None => robots::BUILTIN_TEMPLATE.to_string(),
        Some(path) => {
            std::fs::read_to_string(path).map_err(|cause| StartError::TemplateUnreadable {
                path: path.display().to_string(),
                cause,
            })?
        }
    };
    let context = RobotsContext {
        base_url: site.base_url.as_str().to_string(),
        sitemap_index_url: site.index_url(),
        environment: config.environment,
        extra_sitemaps: config.extra_sitemaps.clone(),
    };
    let compiled = robots::compile_template(
        &template,
        &context,
        site.robots.policy.as_ref(),
        &site.robots.content_signal,
        &config.crawlers,
    )?;
    // Entries are checked against the production file: on staging the served file
    // disallows everything, and the sitemaps should still show what production would list.
    let rules = Arc::new(RobotsTxt::parse(&compiled.rules_text)?);
    let owner = site.llms.as_ref().and_then(|llms| llms.name.clone());
    let license = robots::License::of(
        site.robots.policy.as_ref(),
        &site.robots.license,
        owner.as_deref().unwrap_or(site.base_url.host()),
    );
    let mut body = compiled.body;
    if license.is_some() && !has_license_line(&body) {
        body.push_str(&format!("\nLicense: {}\n", license_url(&site.base_url)));
    }
    Ok(ServedRobots {
        body,
        license: license.map(Arc::new),
        rules_text: compiled.rules_text,
        rules,
        warnings: compiled.warnings,
    })
}

/// Where a site's `/license.xml` is: at the root of its host, like robots.txt.
pub fn license_url(base: &crate::sitemap::BaseUrl) -> String {
    format!("{}{}", base.origin_text(), crate::files::LICENSE_PATH)
}

/// Whether the template already names a licence: the owner's line is kept, none added.
fn has_license_line(robots: &str) -> bool {
    robots.lines().any(|line| {
        line.trim_start()
            .get(..8)
            .is_some_and(|key| key.eq_ignore_ascii_case("license:"))
    })
}

/// The rules every entry passes, with robots.txt consistency applied.
pub fn entry_rules(config: &Config, site: &SiteConfig, robots: &ServedRobots) -> EntryRules {
    EntryRules::new(
        site.base_url.clone(),
        Some(robots.rules.clone()),
        config.check_agents.clone(),
    )
}

/// Has the changes behind each group's source logged where the database allows it (once per
/// source and source database, in the order of the sites and their groups); says what was done
/// for each, with the store that reads it.
pub async fn watch_sources(
    store: &Store,
    config: &Config,
) -> Result<Vec<(String, Watch, Store)>, StoreError> {
    let mut done: Vec<(String, Option<&crate::config::DatabaseUrl>, Watch, Store)> = Vec::new();
    for site in &config.sites {
        let reader = store.for_site(site.source_database_url.as_ref()).await?;
        for group in &site.groups {
            let database = site.source_database_url.as_ref();
            if done
                .iter()
                .all(|(source, db, ..)| *source != group.source || *db != database)
            {
                let watch = reader.watch(&group.source).await;
                done.push((group.source.clone(), database, watch, reader.clone()));
            }
        }
    }
    Ok(done
        .into_iter()
        .map(|(source, _, watch, reader)| (source, watch, reader))
        .collect())
}
