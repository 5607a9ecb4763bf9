-- The crawl log (ACCESS_LOG_ADDR): what search crawlers fetched of the listed URLs, one row per
-- site, group, crawler and entry id; and, bounded per site, the paths crawlers fetched that no
-- sitemap lists or that robots.txt disallowed for them. Times are unix seconds, except
-- last_fetch_at, kept as lastmods are so that the two compare.
CREATE TABLE IF NOT EXISTS sitemapd_crawls (
  site          VARCHAR(512) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  grp           VARCHAR(32)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  crawler       VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  entry_id      BIGINT       NOT NULL,
  path          TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  fetches       BIGINT       NOT NULL,
  last_fetch    BIGINT       NOT NULL,
  last_fetch_at DATETIME(6)  NOT NULL,
  last_status   BIGINT       NOT NULL,
  lastmod       BIGINT       NULL,
  fresh_at      BIGINT       NULL,
  freshness     BIGINT       NULL,
  PRIMARY KEY (site, grp, crawler, entry_id),
  KEY sitemapd_crawls_recent (site, grp, crawler, last_fetch),
  KEY sitemapd_crawls_fresh (site, grp, crawler, fresh_at, freshness)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS sitemapd_crawl_paths (
  site         VARCHAR(512) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  kind         VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  crawler      VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  verification VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  path_key     BIGINT       NOT NULL,
  status       BIGINT       NOT NULL,
  path         TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  fetches      BIGINT       NOT NULL,
  last_fetch   BIGINT       NOT NULL,
  rule         TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
  PRIMARY KEY (site, kind, crawler, verification, path_key, status),
  KEY sitemapd_crawl_paths_top (site, kind, fetches)
) ENGINE=InnoDB;
