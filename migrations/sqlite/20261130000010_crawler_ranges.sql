-- Crawler verification: the last good copy of each published IP-range list (its prefixes, one
-- CIDR per line) and when it was fetched, so a restart or an outage keeps verifying against it.
-- Client addresses are never stored.
CREATE TABLE IF NOT EXISTS sitemapd_crawler_ranges (
  url         TEXT NOT NULL PRIMARY KEY,
  fetched_at  BIGINT NOT NULL,
  prefixes    TEXT NOT NULL
);
