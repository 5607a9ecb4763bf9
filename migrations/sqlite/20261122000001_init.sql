-- sitemapd's tables for the embedded SQLite database. Idempotent.
CREATE TABLE IF NOT EXISTS sitemap_entries (
  id         INTEGER PRIMARY KEY,
  loc        TEXT NOT NULL UNIQUE,
  lastmod    TEXT NULL,            -- RFC 3339, or 'YYYY-MM-DD HH:MM:SS' in UTC
  changefreq TEXT NULL,
  priority   REAL NULL
);

-- The range of ids touched since the service last looked, and a counter that moves on every
-- change (SQLite cannot notify another process, so the service polls this one row).
CREATE TABLE IF NOT EXISTS sitemapd_changes (
  source  TEXT PRIMARY KEY,
  version INTEGER NOT NULL DEFAULT 0,
  lo      INTEGER NULL,
  hi      INTEGER NULL
);
INSERT OR IGNORE INTO sitemapd_changes (source, version) VALUES ('sitemap_entries', 0);

CREATE TRIGGER IF NOT EXISTS sitemapd_entries_inserted AFTER INSERT ON sitemap_entries BEGIN
  UPDATE sitemapd_changes SET version = version + 1,
    lo = min(coalesce(lo, NEW.id), NEW.id), hi = max(coalesce(hi, NEW.id), NEW.id)
  WHERE source = 'sitemap_entries';
END;
CREATE TRIGGER IF NOT EXISTS sitemapd_entries_updated AFTER UPDATE ON sitemap_entries BEGIN
  UPDATE sitemapd_changes SET version = version + 1,
    lo = min(coalesce(lo, NEW.id), NEW.id, OLD.id), hi = max(coalesce(hi, NEW.id), NEW.id, OLD.id)
  WHERE source = 'sitemap_entries';
END;
CREATE TRIGGER IF NOT EXISTS sitemapd_entries_deleted AFTER DELETE ON sitemap_entries BEGIN
  UPDATE sitemapd_changes SET version = version + 1,
    lo = min(coalesce(lo, OLD.id), OLD.id), hi = max(coalesce(hi, OLD.id), OLD.id)
  WHERE source = 'sitemap_entries';
END;

CREATE TABLE IF NOT EXISTS sitemapd_pages (
  site        TEXT    NOT NULL,
  page_no     INTEGER NOT NULL,
  first_id    INTEGER NOT NULL,
  urls        INTEGER NOT NULL,
  bytes       INTEGER NOT NULL,
  fingerprint TEXT    NOT NULL,
  changed_at  INTEGER NOT NULL,
  PRIMARY KEY (site, page_no)
);

CREATE TABLE IF NOT EXISTS sitemapd_files (
  site        TEXT    NOT NULL,
  name        TEXT    NOT NULL,
  fingerprint TEXT    NOT NULL,
  changed_at  INTEGER NOT NULL,
  PRIMARY KEY (site, name)
);
