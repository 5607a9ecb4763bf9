//! The configuration's tests: defaults, bad values named in one line, sites files.

use super::*;

fn config(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
    Config::from_vars(
        &Vars::from_pairs(pairs.iter().copied()),
        &Defaults::default(),
    )
}

#[test]
fn base_url_is_required() {
    let err = config(&[]).unwrap_err();
    assert_eq!(err.variable, "SITEMAP_BASE_URL");
}

#[test]
fn base_url_gets_a_trailing_slash() {
    let cfg = config(&[("SITEMAP_BASE_URL", "https://example.com/catalog")]).unwrap();
    assert_eq!(
        cfg.first_site().base_url.as_str(),
        "https://example.com/catalog/"
    );
    assert_eq!(
        cfg.first_site().index_url(),
        "https://example.com/catalog/sitemap_index.xml"
    );
}

#[test]
fn bad_page_size_names_variable_value_and_expectation() {
    let err = config(&[
        ("SITEMAP_BASE_URL", "https://e.com"),
        ("SITEMAP_PAGE_SIZE", "50001"),
    ])
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "SITEMAP_PAGE_SIZE=\"50001\": an integer from 1 to 50000"
    );
}

#[test]
fn database_password_is_never_shown() {
    let err = config(&[
        ("SITEMAP_BASE_URL", "https://e.com"),
        ("DATABASE_URL", "mysqlx://user:hunter2@db/x"),
    ])
    .unwrap_err();
    assert!(!err.to_string().contains("hunter2"), "{err}");
    let url = DatabaseUrl::parse("postgres://u:hunter2@localhost/db").unwrap();
    assert!(!format!("{url} {url:?}").contains("hunter2"));
}

#[test]
fn mysql_urls_must_name_a_database() {
    let url = DatabaseUrl::parse("mysql://wp:secret@localhost/wordpress").unwrap();
    assert_eq!(url.kind(), DatabaseKind::Mysql);
    assert_eq!(
        DatabaseUrl::parse("mariadb://root@127.0.0.1:3306/cms")
            .unwrap()
            .kind(),
        DatabaseKind::Mysql
    );
    let err = DatabaseUrl::parse("mysql://wp@localhost").unwrap_err();
    assert!(err.contains("names a database"), "{err}");
}

#[test]
fn source_must_be_an_identifier() {
    let err = config(&[
        ("SITEMAP_BASE_URL", "https://e.com"),
        ("SITEMAP_SOURCE", "x; drop table y"),
    ])
    .unwrap_err();
    assert_eq!(err.variable, "SITEMAP_SOURCE");
    assert!(config(&[
        ("SITEMAP_BASE_URL", "https://e.com"),
        ("SITEMAP_SOURCE", "cms.pages_view")
    ])
    .is_ok());
}

fn with_base(pairs: &[(&'static str, &'static str)]) -> Result<Config, ConfigError> {
    let mut all = vec![("SITEMAP_BASE_URL", "https://e.com")];
    all.extend_from_slice(pairs);
    config(&all)
}

#[test]
fn notification_is_off_by_default() {
    let notify = with_base(&[]).unwrap().notify;
    assert_eq!(notify.indexnow, None);
    assert_eq!(notify.ping, None);
    assert_eq!(notify.interval, Duration::from_secs(60));
}

#[test]
fn an_indexnow_key_turns_indexnow_on_with_the_default_endpoint() {
    let notify = with_base(&[("INDEXNOW_KEY", "0123abcd-EF")])
        .unwrap()
        .notify;
    let indexnow = notify.indexnow.expect("IndexNow on");
    assert_eq!(indexnow.key.as_str(), "0123abcd-EF");
    assert_eq!(indexnow.endpoint.as_str(), DEFAULT_INDEXNOW_ENDPOINT);
}

#[test]
fn indexnow_key_must_follow_the_protocol_rule() {
    for bad in [
        "short7c",
        "has space1",
        "under_score",
        "ключключключ",
        &"k".repeat(129),
    ] {
        let pairs = [("SITEMAP_BASE_URL", "https://e.com"), ("INDEXNOW_KEY", bad)];
        let err = config(&pairs).unwrap_err();
        assert_eq!(err.variable, "INDEXNOW_KEY", "{bad}");
        assert!(!err.to_string().contains('\n'));
    }
    assert!(with_base(&[("INDEXNOW_KEY", "abcdefgh")]).is_ok());
    let longest = "K".repeat(128);
    let pairs = [
        ("SITEMAP_BASE_URL", "https://e.com"),
        ("INDEXNOW_KEY", &longest),
    ];
    assert!(config(&pairs).is_ok());
}

#[test]
fn indexnow_endpoint_must_be_an_http_url() {
    let err = with_base(&[
        ("INDEXNOW_KEY", "abcdefgh"),
        ("INDEXNOW_ENDPOINT", "ftp://search.example/indexnow"),
    ])
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "INDEXNOW_ENDPOINT=\"ftp://search.example/indexnow\": an absolute http:// or https:// URL"
    );
    let cfg = with_base(&[
        ("INDEXNOW_KEY", "abcdefgh"),
        ("INDEXNOW_ENDPOINT", "http://127.0.0.1:9/indexnow"),
    ])
    .unwrap();
    let endpoint = cfg.notify.indexnow.unwrap().endpoint;
    assert_eq!(endpoint.as_str(), "http://127.0.0.1:9/indexnow");
}

#[test]
fn an_indexnow_endpoint_without_a_key_is_refused() {
    let err = with_base(&[("INDEXNOW_ENDPOINT", "https://bing.com/indexnow")]).unwrap_err();
    assert_eq!(err.variable, "INDEXNOW_ENDPOINT");
    assert!(err.to_string().contains("INDEXNOW_KEY"), "{err}");
}

#[test]
fn notify_interval_is_at_least_one_second() {
    let err = with_base(&[("INDEXNOW_INTERVAL_SECS", "0")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "INDEXNOW_INTERVAL_SECS=\"0\": an integer number of seconds from 1 to 86400"
    );
    let cfg = with_base(&[("INDEXNOW_INTERVAL_SECS", "5")]).unwrap();
    assert_eq!(cfg.notify.interval, Duration::from_secs(5));
}

#[test]
fn ping_url_is_a_template_with_only_the_sitemap_placeholder() {
    let cfg = with_base(&[("SITEMAP_PING_URL", "https://hooks.example/p?s={sitemap}")]).unwrap();
    let ping = cfg.notify.ping.expect("ping on");
    assert_eq!(
        ping.url_for("https://e.com/sitemap_index.xml"),
        "https://hooks.example/p?s=https%3A%2F%2Fe.com%2Fsitemap_index.xml"
    );
    for bad in [
        "hooks.example/p?s={sitemap}",
        "https://h.example/?s={sitemaps}",
        "mailto:x@e.com",
    ] {
        let pairs = [
            ("SITEMAP_BASE_URL", "https://e.com"),
            ("SITEMAP_PING_URL", bad),
        ];
        assert_eq!(
            config(&pairs).unwrap_err().variable,
            "SITEMAP_PING_URL",
            "{bad}"
        );
    }
}

#[test]
fn a_password_in_a_notification_url_is_never_shown() {
    let err = with_base(&[("SITEMAP_PING_URL", "https://u:hunter2@h.example/{nope}")]).unwrap_err();
    assert!(!err.to_string().contains("hunter2"), "{err}");
}

#[test]
fn the_stylesheet_setting_is_a_bool() {
    let with = |value| {
        config(&[
            ("SITEMAP_BASE_URL", "https://e.com"),
            ("SITEMAP_STYLESHEET", value),
        ])
    };
    assert!(
        !config(&[("SITEMAP_BASE_URL", "https://e.com")])
            .unwrap()
            .stylesheet
    );
    assert!(with("true").unwrap().stylesheet);
    assert!(!with("FALSE").unwrap().stylesheet);
    assert_eq!(
        with("yes please").unwrap_err().to_string(),
        "SITEMAP_STYLESHEET=\"yes please\": true or false"
    );
}

fn sites(toml: &str) -> Result<Config, ConfigError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sites.toml");
    std::fs::write(&path, toml).unwrap();
    config(&[("SITEMAP_SITES_FILE", path.to_str().unwrap())])
}

#[test]
fn sitemaps_url_defaults_to_the_base_url() {
    let cfg = sites("[[site]]\nbase_url = \"https://a.example.com/blog\"\n").unwrap();
    let site = &cfg.sites[0];
    assert_eq!(site.sitemaps_url, site.base_url);
    assert_eq!(
        cfg.first_site().index_url(),
        "https://a.example.com/blog/sitemap_index.xml"
    );
}

#[test]
fn sitemaps_url_moves_the_files_not_the_base() {
    let cfg = sites(
        "[[site]]\nbase_url = \"https://a.example.com\"\n\
         [[site]]\nbase_url = \"https://b.example.org/\"\n\
         sitemaps_url = \"https://sitemaps.example.net/b\"\n",
    )
    .unwrap();
    let b = &cfg.sites[1];
    assert_eq!(b.base_url.as_str(), "https://b.example.org/");
    assert_eq!(b.sitemaps_url.as_str(), "https://sitemaps.example.net/b/");
    assert_eq!(
        b.index_url(),
        "https://sitemaps.example.net/b/sitemap_index.xml"
    );
}

#[test]
fn sites_may_publish_on_one_host_under_different_paths_even_nested() {
    let cfg = sites(
        "[[site]]\nbase_url = \"https://a.example.com\"\n\
         sitemaps_url = \"https://sitemaps.example.net/shop/\"\n\
         [[site]]\nbase_url = \"https://b.example.org\"\n\
         sitemaps_url = \"https://sitemaps.example.net/shop/outlet/\"\n\
         [[site]]\nbase_url = \"https://c.example.org\"\n\
         sitemaps_url = \"https://a.example.com/c/\"\n",
    )
    .unwrap();
    assert_eq!(cfg.sites.len(), 3);
}

#[test]
fn two_sites_may_not_publish_at_one_sitemaps_url() {
    for (toml, clash) in [
        // b's files where a's are by default (a's base URL).
        (
            "[[site]]\nbase_url = \"https://a.example.com\"\n\
             [[site]]\nbase_url = \"https://b.example.org\"\n\
             sitemaps_url = \"https://A.example.com:443/\"\n",
            "https://a.example.com/",
        ),
        // Same place in another spelling, or another scheme that one Host names too.
        (
            "[[site]]\nbase_url = \"https://a.example.com\"\n\
             sitemaps_url = \"https://s.example.net/x\"\n\
             [[site]]\nbase_url = \"https://b.example.org\"\n\
             sitemaps_url = \"http://S.example.net/x/\"\n",
            "http://s.example.net/x/",
        ),
    ] {
        let err = sites(toml).unwrap_err().to_string();
        assert!(err.starts_with("SITEMAP_SITES_FILE="), "{err}");
        assert!(
            err.contains(&format!(
                "site 2: its sitemaps are published at {clash}, like those of site 1"
            )),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err}");
    }
    let err = sites(
        "[[site]]\nbase_url = \"https://a.example.com\"\n\
         [[site]]\nbase_url = \"https://b.example.org\"\nsitemaps_url = \"/sitemaps/\"\n",
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("site 2: sitemaps_url \"/sitemaps/\" must be"),
        "{err}"
    );
}

#[test]
fn a_base_host_is_one_site_whatever_the_scheme_or_port_spelling() {
    let err = sites(
        "[[site]]\nbase_url = \"https://a.example.com\"\n\
         [[site]]\nbase_url = \"http://a.example.com:443/other/\"\n",
    )
    .unwrap_err();
    assert!(err.to_string().contains("one site per host"), "{err}");
    let a = BaseUrl::parse("https://a.example.com").unwrap();
    assert!(!a.shares_host_with(&BaseUrl::parse("https://a.example.com:8443").unwrap()));
    // `Host: a.example.com` names both.
    assert!(a.shares_host_with(&BaseUrl::parse("http://a.example.com:80").unwrap()));
}

#[test]
fn base_url_rejects_other_schemes() {
    assert!(BaseUrl::parse("ftp://e.com/").is_err());
    assert!(BaseUrl::parse("/relative").is_err());
}

#[test]
fn the_public_robots_check_is_off_unless_turned_on() {
    let base = ("SITEMAP_BASE_URL", "https://e.com");
    assert!(!config(&[base]).unwrap().public_robots_check);
    let on = config(&[base, ("ROBOTS_PUBLIC_CHECK", "on")]).unwrap();
    assert!(on.public_robots_check);
    let err = config(&[base, ("ROBOTS_PUBLIC_CHECK", "hourly")]).unwrap_err();
    assert_eq!(err.variable, "ROBOTS_PUBLIC_CHECK");
}

#[test]
fn a_crawlers_file_yet_to_be_made_is_left_to_crawlers_update() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("crawlers.toml");
    let path = missing.to_str().unwrap();
    let mut vars = Vars::from_pairs([
        ("SITEMAP_BASE_URL", "https://e.com"),
        ("CRAWLERS_FILE", path),
    ]);
    assert_eq!(vars.crawlers_file_to_update(), Some(missing.clone()));
    assert_eq!(
        vars.get("CRAWLERS_FILE"),
        None,
        "the built-in registry is read"
    );
    Config::from_vars(&vars, &Defaults::default()).unwrap();
    std::fs::write(&missing, "").unwrap();
    let mut vars = Vars::from_pairs([
        ("SITEMAP_BASE_URL", "https://e.com"),
        ("CRAWLERS_FILE", path),
    ]);
    assert_eq!(vars.crawlers_file_to_update(), Some(missing.clone()));
    assert_eq!(
        vars.get("CRAWLERS_FILE"),
        Some(path),
        "the registry reads it"
    );
}

#[test]
fn every_declared_setting_is_in_the_list_of_settings() {
    let source = include_str!("settings.rs");
    let mut declared: Vec<&str> = source
        .split("    name: \"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap())
        .collect();
    let mut listed: Vec<&str> = settings::ALL.iter().map(|(name, _)| *name).collect();
    declared.sort_unstable();
    listed.sort_unstable();
    assert!(declared.len() > 20, "{declared:?}");
    assert_eq!(declared, listed);
    listed.dedup();
    assert_eq!(listed.len(), settings::ALL.len(), "a setting listed twice");
}

#[test]
fn each_switch_takes_the_words_it_always_took() {
    fn read(setting: &settings::Setting<bool>, value: &str) -> Option<bool> {
        setting
            .read(&Vars::from_pairs([(setting.name, value)]))
            .ok()
    }
    for setting in [&settings::CRAWLER_VERIFY, &settings::ROBOTS_LICENSE] {
        assert_eq!(read(setting, " off "), Some(false));
        assert_eq!(read(setting, "on"), Some(true));
        assert_eq!(read(setting, "ON"), None);
        assert_eq!(read(setting, "true"), None);
    }
    assert_eq!(read(&settings::REPLICA_LEASE, "Off"), Some(false));
    assert_eq!(read(&settings::REPLICA_LEASE, "ON"), Some(true));
    assert_eq!(read(&settings::REPLICA_LEASE, "1"), None);
    for setting in [&settings::LLMS_TXT, &settings::ROBOTS_PUBLIC_CHECK] {
        for (on, off) in [("On", "OFF"), ("TRUE", "false"), ("1", "0")] {
            assert_eq!(read(setting, on), Some(true), "{on}");
            assert_eq!(read(setting, off), Some(false), "{off}");
        }
        assert_eq!(read(setting, "yes"), None);
    }
    assert_eq!(read(&settings::SITEMAP_STYLESHEET, "1"), Some(true));
    assert_eq!(read(&settings::SITEMAP_STYLESHEET, "False"), Some(false));
    assert_eq!(read(&settings::SITEMAP_STYLESHEET, "on"), None);
}

#[test]
fn a_refused_value_is_shown_trimmed_unless_its_variable_has_no_default() {
    let vars = Vars::from_pairs([("SITEMAP_FEED_SIZE", " many "), ("DNS_SERVER", " dns ")]);
    assert_eq!(
        settings::SITEMAP_FEED_SIZE
            .read(&vars)
            .unwrap_err()
            .to_string(),
        "SITEMAP_FEED_SIZE=\"many\": an integer from 0 (no feeds) to 10000"
    );
    assert_eq!(
        settings::DNS_SERVER
            .read_optional(&vars)
            .unwrap_err()
            .to_string(),
        "DNS_SERVER=\" dns \": an IP address, with a port or not"
    );
    assert_eq!(
        settings::DNS_SERVER
            .read_optional(&Vars::from_pairs([]))
            .unwrap(),
        None
    );
}
