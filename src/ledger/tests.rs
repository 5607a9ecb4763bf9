//! The ledger's tests: counts, last fetches, files behind and the metrics.

use super::*;
use prometheus_client::registry::Registry as MetricsRegistry;

impl Default for Ledger {
    /// A ledger over the built-in registry with metrics of its own, registered nowhere. Tests
    /// only: the service's ledger is over the registry the configuration parsed.
    fn default() -> Self {
        Self::new(Arc::new(Registry::builtin()), CrawlerMetrics::default())
    }
}

const SITE: &str = "https://example.com/";

fn crawler(name: &str) -> Option<CrawlerId> {
    Some(Registry::builtin().by_name(name).expect(name))
}

/// `name`'s fetch of `file` of [`SITE`], as claimed (no verdict).
fn claimed(ledger: &Ledger, name: &str, file: &str, status: u16, at: i64) {
    ledger.record(crawler(name), Trust::Unverified, SITE, file, status, at);
}

fn ledger_with_capacity(capacity: usize) -> Ledger {
    Ledger::with_file_capacity(
        Arc::new(Registry::builtin()),
        capacity,
        CrawlerMetrics::default(),
    )
}

#[test]
fn counts_and_last_fetches_are_kept_per_crawler() {
    let ledger = Ledger::default();
    claimed(&ledger, "Googlebot", "robots.txt", 200, 100);
    claimed(&ledger, "Googlebot", "sitemap_index.xml", 200, 110);
    claimed(&ledger, "Googlebot", "sitemap_index.xml", 304, 120);
    claimed(&ledger, "Googlebot", "sitemap-9.xml.gz", 404, 130);
    claimed(&ledger, "bingbot", "sitemap-3.xml.gz", 304, 90);

    let snapshot = ledger.snapshot();
    assert_eq!(
        snapshot.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(),
        ["Googlebot", "bingbot", "other"],
        "the crawlers that came, in registry order, and other"
    );
    let google = &snapshot[0];
    assert_eq!(google.last_fetch, Some(130), "a 404 is still a visit");
    assert_eq!((google.ok, google.not_modified), (2, 1));
    assert_eq!(google.robots_txt, Some(100));
    assert_eq!(google.crawler, crawler("Googlebot"));
    assert_eq!(
        google.files,
        [
            FileFetch {
                site: SITE.into(),
                file: "robots.txt".into(),
                last_fetch: 100,
            },
            FileFetch {
                site: SITE.into(),
                file: "sitemap_index.xml".into(),
                last_fetch: 120,
            },
        ],
        "sorted, and only files answered 200 or 304"
    );
    let bing = &snapshot[1];
    assert_eq!(
        (bing.last_fetch, bing.ok, bing.not_modified),
        (Some(90), 0, 1)
    );
    assert_eq!(bing.robots_txt, None, "bingbot never read robots.txt");
    let other = &snapshot[2];
    assert_eq!((other.crawler, other.last_fetch, other.ok), (None, None, 0));
    assert!(other.files.is_empty());
    assert_eq!(ledger.robots_txt_fetch(crawler("Googlebot")), Some(100));
    assert_eq!(ledger.robots_txt_fetch(crawler("GPTBot")), None);

    let json = serde_json::to_value(&snapshot[1]).unwrap();
    assert_eq!(json["name"], "bingbot");
    assert_eq!(json["not_modified"], 1);
    assert_eq!(json["files"][0]["file"], "sitemap-3.xml.gz");
}

#[test]
fn files_are_sorted_by_site_then_file() {
    let ledger = Ledger::default();
    for (site, file) in [("b/", "a"), ("a/", "z"), ("a/", "b")] {
        ledger.record(None, Trust::Unverified, site, file, 200, 1);
    }
    let other = ledger.snapshot().pop().unwrap();
    let keys: Vec<(&str, &str)> = other
        .files
        .iter()
        .map(|f| (f.site.as_str(), f.file.as_str()))
        .collect();
    assert_eq!(keys, [("a/", "b"), ("a/", "z"), ("b/", "a")]);
}

#[test]
fn files_behind_counts_files_changed_after_the_crawlers_last_fetch() {
    let ledger = Ledger::default();
    claimed(&ledger, "Googlebot", "sitemap_index.xml", 200, 100);
    claimed(&ledger, "Googlebot", "sitemap-1.xml.gz", 200, 100);
    claimed(&ledger, "Googlebot", "sitemap-2.xml.gz", 304, 100);
    claimed(&ledger, "Googlebot", "sitemap-posts-2.xml.gz", 200, 100);
    claimed(&ledger, "bingbot", "sitemap-1.xml.gz", 200, 300);
    let changed = |site: &str, file: &str| {
        assert_eq!(site, SITE);
        match file {
            "sitemap_index.xml" => Some(200), // changed since: behind
            "sitemap-1.xml.gz" => Some(200),  // behind for Google, not for Bing
            "sitemap-2.xml.gz" => Some(100),  // changed at the fetch itself: current
            "sitemap-posts-2.xml.gz" => None, // no longer exists: not counted
            _ => Some(0),
        }
    };
    assert_eq!(ledger.files_behind(crawler("Googlebot"), changed), 2);
    assert_eq!(
        ledger.files_changed_since(crawler("Googlebot"), changed),
        [
            (SITE.to_string(), "sitemap-1.xml.gz".to_string()),
            (SITE.to_string(), "sitemap_index.xml".to_string()),
        ]
    );
    assert_eq!(ledger.files_behind(crawler("bingbot"), changed), 0);
    assert_eq!(ledger.files_behind(crawler("Applebot"), changed), 0);
}

#[test]
fn metrics_count_every_status_and_files_behind() {
    let metrics = CrawlerMetrics::default();
    let mut registry = MetricsRegistry::with_prefix("sitemapd");
    metrics.register(&mut registry);
    let ledger = Ledger::new(Arc::new(Registry::builtin()), metrics);
    claimed(&ledger, "Googlebot", "robots.txt", 200, 1);
    claimed(&ledger, "Googlebot", "robots.txt", 200, 2);
    claimed(&ledger, "GPTBot", "robots.txt", 403, 2);
    ledger.record(None, Trust::Unverified, SITE, "nope.xml", 404, 3);
    ledger.refresh_files_behind(|_, _| Some(5));

    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for line in [
        r#"sitemapd_crawler_requests_total{crawler="Googlebot",status="200",verified="false"} 2"#,
        r#"sitemapd_crawler_requests_total{crawler="other",status="404",verified="false"} 1"#,
        r#"sitemapd_crawler_requests_total{crawler="GPTBot",status="403",verified="false"} 1"#,
        r#"sitemapd_crawler_files_behind{crawler="GPTBot"} 0"#,
        r#"sitemapd_crawler_files_behind{crawler="Googlebot"} 1"#,
        r#"sitemapd_crawler_files_behind{crawler="other"} 0"#,
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing from:\n{text}"
        );
    }
}

#[test]
fn crawlers_are_told_apart_by_the_ledgers_registry() {
    let registry = Registry::parse_extension(
        Registry::builtin(),
        "[[crawler]]\nname = \"ExampleBot\"\ntokens = [\"ExampleBot\"]\npurpose = \"seo\"\n",
        "extra.toml",
    )
    .unwrap();
    let ledger = Ledger::new(Arc::new(registry), CrawlerMetrics::default());
    let example = ledger.classify(Some("Mozilla/5.0 (compatible; ExampleBot/2.0)"));
    assert!(example.is_some());
    assert_eq!(ledger.name(example), "ExampleBot");
    assert_eq!(ledger.classify(Some("curl/8.5.0")), None);
    assert_eq!(ledger.classify(None), None);
    assert_eq!(ledger.name(None), OTHER);
    ledger.record(example, Trust::Unverified, SITE, "robots.txt", 200, 5);
    let names: Vec<String> = ledger.snapshot().into_iter().map(|a| a.name).collect();
    assert_eq!(names, ["ExampleBot", "other"]);
    let made = ledger.tracks.iter().filter(|t| t.get().is_some()).count();
    assert_eq!(
        made, 2,
        "only the crawlers that came (and other) have a track"
    );
}

#[test]
fn memory_stays_at_the_cap_and_keeps_the_most_recent_files() {
    let ledger = Ledger::default();
    let distinct = 3 * MAX_FILES_PER_CRAWLER;
    for i in 0..distinct {
        let at = i64::try_from(i).unwrap();
        ledger.record(
            None,
            Trust::Unverified,
            SITE,
            &format!("sitemap-{i}.xml.gz"),
            200,
            at,
        );
    }
    {
        let track = ledger.track(None);
        assert_eq!(track.files.len(), MAX_FILES_PER_CRAWLER);
        assert_eq!(
            track.files.allocated(),
            (MAX_FILES_PER_CRAWLER, MAX_FILES_PER_CRAWLER)
        );
        assert_eq!(track.ok, u64::try_from(distinct).unwrap());
    }
    let other = ledger.snapshot().pop().unwrap();
    assert_eq!(other.files.len(), MAX_FILES_PER_CRAWLER);
    let oldest_kept = distinct - MAX_FILES_PER_CRAWLER;
    let known = |i: usize| {
        other
            .files
            .iter()
            .any(|f| f.file == format!("sitemap-{i}.xml.gz"))
    };
    assert!(known(distinct - 1) && known(oldest_kept));
    assert!(!known(oldest_kept - 1) && !known(0));
    assert_eq!(
        other.files.iter().map(|f| f.last_fetch).min(),
        Some(i64::try_from(oldest_kept).unwrap())
    );
}

#[test]
fn over_long_keys_are_counted_but_not_tracked() {
    let ledger = Ledger::default();
    let long = "x".repeat(MAX_KEY_BYTES);
    ledger.record(crawler("Googlebot"), Trust::Unverified, SITE, &long, 200, 1);
    let google = &ledger.snapshot()[0];
    assert_eq!(google.ok, 1);
    assert!(google.files.is_empty());
}

#[test]
fn concurrent_recording_loses_no_counts() {
    let ledger = ledger_with_capacity(64);
    let pair = [crawler("Googlebot"), crawler("GPTBot")];
    let threads = 8;
    let per_thread = 2_000;
    std::thread::scope(|scope| {
        for t in 0..threads {
            let ledger = &ledger;
            scope.spawn(move || {
                for i in 0..per_thread {
                    let crawler = pair[(t + i) % 2];
                    let status = if i % 3 == 0 { 304 } else { 200 };
                    let file = format!("sitemap-{}.xml.gz", i % 100);
                    ledger.record(crawler, Trust::Unverified, SITE, &file, status, i as i64);
                }
            });
        }
    });
    let snapshot = ledger.snapshot();
    let total: u64 = snapshot.iter().map(|a| a.ok + a.not_modified).sum();
    assert_eq!(total, (threads * per_thread) as u64);
    let not_modified: u64 = snapshot.iter().map(|a| a.not_modified).sum();
    assert_eq!(not_modified, (threads * per_thread.div_ceil(3)) as u64);
    assert_eq!(snapshot.len(), 3, "two crawlers and other");
    let counted: u64 = ["Googlebot", "GPTBot"]
        .iter()
        .flat_map(|c| [200, 304].map(|status| (CrawlerName::from(*c), status)))
        .map(|(crawler, status)| {
            ledger
                .metrics()
                .requests
                .get_or_create(&CrawlerStatusLabels {
                    crawler,
                    status,
                    verified: Verified(Trust::Unverified),
                })
                .get()
        })
        .sum();
    assert_eq!(counted, total);
    assert!(snapshot.iter().all(|a| a.files.len() <= 64));
}

#[test]
fn a_poisoned_lock_does_not_stop_recording() {
    let ledger = Ledger::default();
    let result = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let _held = ledger.track(crawler("Googlebot"));
                panic!("poison the lock");
            })
            .join()
    });
    assert!(result.is_err());
    assert!(ledger.tracks[0].get().unwrap().is_poisoned());
    claimed(&ledger, "Googlebot", "robots.txt", 200, 1);
    assert_eq!(ledger.snapshot()[0].ok, 1);
}

#[test]
fn requests_are_counted_per_day_for_two_weeks() {
    let ledger = Ledger::default();
    let day = 86_400;
    let now = 20_000 * day + 100;
    ledger.record(
        crawler("Googlebot"),
        Trust::Unverified,
        "s",
        "robots.txt",
        200,
        now,
    );
    ledger.record(
        crawler("Googlebot"),
        Trust::Unverified,
        "s",
        "robots.txt",
        304,
        now - day,
    );
    ledger.record(
        crawler("Googlebot"),
        Trust::Unverified,
        "s",
        "sitemap_index.xml",
        200,
        now - day,
    );
    // Three weeks ago: outside the two weeks kept.
    ledger.record(
        crawler("Googlebot"),
        Trust::Unverified,
        "s",
        "robots.txt",
        200,
        now - 20 * day,
    );
    let days = per_day(&ledger.track(crawler("Googlebot")).days, now);
    let counts: Vec<u64> = days.iter().map(|d| d.requests).collect();
    assert_eq!(counts, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1]);
    assert_eq!(days[13].day, "2024-10-04");
}
