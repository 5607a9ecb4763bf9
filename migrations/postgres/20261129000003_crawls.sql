-- The crawl log (ACCESS_LOG_ADDR): what search crawlers fetched of the listed URLs, one row per
-- site, group, crawler and entry id; and, bounded per site, the paths crawlers fetched that no
-- sitemap lists or that robots.txt disallowed for them.
CREATE TABLE IF NOT EXISTS sitemapd_crawls (
  site          TEXT        NOT NULL,
  grp           TEXT        NOT NULL,
  crawler       TEXT        NOT NULL,
  entry_id      BIGINT      NOT NULL,
  path          TEXT        NOT NULL,
  fetches       BIGINT      NOT NULL,
  last_fetch    BIGINT      NOT NULL,
  last_fetch_at TIMESTAMPTZ NOT NULL,
  last_status   BIGINT      NOT NULL,
  lastmod       BIGINT      NULL,
  fresh_at      BIGINT      NULL,
  freshness     BIGINT      NULL,
  PRIMARY KEY (site, grp, crawler, entry_id)
);
CREATE INDEX IF NOT EXISTS sitemapd_crawls_recent ON sitemapd_crawls (site, grp, crawler, last_fetch);
CREATE INDEX IF NOT EXISTS sitemapd_crawls_fresh ON sitemapd_crawls (site, grp, crawler, fresh_at, freshness);

CREATE TABLE IF NOT EXISTS sitemapd_crawl_paths (
  site         TEXT    NOT NULL,
  kind         TEXT    NOT NULL,
  crawler      TEXT    NOT NULL,
  verification TEXT    NOT NULL,
  path_key     BIGINT  NOT NULL,
  status       BIGINT  NOT NULL,
  path         TEXT    NOT NULL,
  fetches      BIGINT  NOT NULL,
  last_fetch   BIGINT  NOT NULL,
  rule         TEXT    NULL,
  PRIMARY KEY (site, kind, crawler, verification, path_key, status)
);
CREATE INDEX IF NOT EXISTS sitemapd_crawl_paths_top ON sitemapd_crawl_paths (site, kind, fetches);
