-- Crawler verification: the last good copy of each published IP-range list (its prefixes, one
-- CIDR per line) and when it was fetched, so a restart or an outage keeps verifying against it.
-- Client addresses are never stored.
CREATE TABLE IF NOT EXISTS sitemapd_crawler_ranges (
  url         VARCHAR(2048) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
  fetched_at  BIGINT NOT NULL,
  prefixes    MEDIUMTEXT NOT NULL
) ENGINE=InnoDB;
