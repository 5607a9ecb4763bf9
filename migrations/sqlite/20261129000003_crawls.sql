-- The crawl log (ACCESS_LOG_ADDR): what search crawlers fetched of the listed URLs, one row per
-- site, group, crawler and entry id; and, bounded per site, the paths crawlers fetched that no
-- sitemap lists or that robots.txt disallowed for them. Times are unix seconds, except
-- last_fetch_at: microseconds, as lastmods compare.
CREATE TABLE IF NOT EXISTS sitemapd_crawls (
  site          TEXT    NOT NULL,
  grp           TEXT    NOT NULL,
  crawler       TEXT    NOT NULL,
  entry_id      INTEGER NOT NULL,
  path          TEXT    NOT NULL,
  fetches       INTEGER NOT NULL,
  last_fetch    INTEGER NOT NULL,
  last_fetch_at INTEGER NOT NULL,
  last_status   INTEGER NOT NULL,
  lastmod       INTEGER NULL,
  fresh_at      INTEGER NULL,
  freshness     INTEGER NULL,
  PRIMARY KEY (site, grp, crawler, entry_id)
);
CREATE INDEX IF NOT EXISTS sitemapd_crawls_recent ON sitemapd_crawls (site, grp, crawler, last_fetch);
CREATE INDEX IF NOT EXISTS sitemapd_crawls_fresh ON sitemapd_crawls (site, grp, crawler, fresh_at, freshness);

CREATE TABLE IF NOT EXISTS sitemapd_crawl_paths (
  site         TEXT    NOT NULL,
  kind         TEXT    NOT NULL,
  crawler      TEXT    NOT NULL,
  verification TEXT    NOT NULL,
  path_key     INTEGER NOT NULL,
  status       INTEGER NOT NULL,
  path         TEXT    NOT NULL,
  fetches      INTEGER NOT NULL,
  last_fetch   INTEGER NOT NULL,
  rule         TEXT    NULL,
  PRIMARY KEY (site, kind, crawler, verification, path_key, status)
);
CREATE INDEX IF NOT EXISTS sitemapd_crawl_paths_top ON sitemapd_crawl_paths (site, kind, fetches);
