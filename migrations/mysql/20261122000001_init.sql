-- sitemapd's tables for MySQL (8.0+) and MariaDB (10.5+). Idempotent, and touches nothing it did
-- not create: a sitemap_entries table that exists already (made by hand or by a CMS) is accepted
-- as it is. The change triggers are added by `sitemapd migrate` itself, and only to the tables
-- this file created (MySQL cannot create a trigger conditionally from SQL).

-- Entries. `loc` is compared byte for byte (URL paths are case-sensitive); MySQL cannot index a
-- TEXT column whole, so uniqueness is kept on its SHA-256. `lastmod` is a DATETIME in UTC:
-- write UTC_TIMESTAMP(), not NOW(), unless the server's time zone is UTC.
CREATE TABLE IF NOT EXISTS sitemap_entries (
  id         BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  loc        TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  lastmod    DATETIME(6) NULL,
  changefreq TEXT NULL,
  priority   DOUBLE NULL,
  loc_hash   BINARY(32) AS (UNHEX(SHA2(loc, 256))) STORED,
  UNIQUE KEY sitemap_entries_loc (loc_hash),
  KEY sitemap_entries_lastmod (lastmod)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='sitemapd entries';

-- Optional extensions of entries, keyed by the entry's id: alternate language versions and
-- images. Rows of entries that are not served are ignored.
CREATE TABLE IF NOT EXISTS sitemap_alternates (
  id       BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  entry_id BIGINT NOT NULL,
  hreflang VARCHAR(255) NOT NULL,   -- BCP 47 language tag, or x-default
  href     TEXT NOT NULL,           -- absolute URL of the version in that language (any host)
  UNIQUE KEY sitemap_alternates_entry (entry_id, hreflang)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='sitemapd alternates';

CREATE TABLE IF NOT EXISTS sitemap_images (
  id       BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  entry_id BIGINT NOT NULL,
  loc      TEXT NOT NULL,           -- absolute URL of the image (any host, e.g. a CDN)
  KEY sitemap_images_entry (entry_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='sitemapd images';

-- MySQL cannot notify a client, so services poll. The triggers bump a source's counter (its row
-- lock orders writers, so versions follow commit order) and log the ids each version touched;
-- each service reads the log after its own last version, and trims what is long read.
CREATE TABLE IF NOT EXISTS sitemapd_changes (
  source  VARCHAR(255) NOT NULL PRIMARY KEY,
  version BIGINT NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS sitemapd_change_log (
  source  VARCHAR(255) NOT NULL,
  version BIGINT NOT NULL,
  lo      BIGINT NOT NULL,
  hi      BIGINT NOT NULL,
  PRIMARY KEY (source, version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- Per site (keyed by base URL, ASCII once parsed), the sitemap files: their id boundaries,
-- size, fingerprint and when their bytes last changed. Shared by every replica.
CREATE TABLE IF NOT EXISTS sitemapd_pages (
  site        VARCHAR(2048) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  page_no     BIGINT NOT NULL,
  first_id    BIGINT NOT NULL,
  urls        BIGINT NOT NULL,
  bytes       BIGINT NOT NULL,
  fingerprint VARCHAR(64) CHARACTER SET ascii NOT NULL,
  changed_at  BIGINT NOT NULL,
  extensions  BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (site, page_no)
) ENGINE=InnoDB;

-- Validators of whole files other than pages: the index, robots.txt, the feeds.
CREATE TABLE IF NOT EXISTS sitemapd_files (
  site        VARCHAR(2048) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  name        VARCHAR(255) CHARACTER SET ascii NOT NULL,
  fingerprint VARCHAR(64) CHARACTER SET ascii NOT NULL,
  changed_at  BIGINT NOT NULL,
  PRIMARY KEY (site, name)
) ENGINE=InnoDB;

-- One row per site, locked while a replica saves that site's pages and files.
CREATE TABLE IF NOT EXISTS sitemapd_locks (
  site VARCHAR(2048) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY
) ENGINE=InnoDB;

-- IndexNow, per site: entries up to this (lastmod in microseconds since the epoch, id) have been
-- submitted. Shared by replicas, so each change is submitted once.
CREATE TABLE IF NOT EXISTS sitemapd_indexnow (
  site       VARCHAR(2048) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
  through_us BIGINT NOT NULL,
  through_id BIGINT NOT NULL
) ENGINE=InnoDB;
