-- Optional extensions of entries, keyed by the entry's id: alternate language versions and
-- images. Rows of entries that are not served are ignored.
CREATE TABLE IF NOT EXISTS sitemap_alternates (
  id       INTEGER PRIMARY KEY,
  entry_id INTEGER NOT NULL,
  hreflang TEXT    NOT NULL,   -- BCP 47 language tag, or x-default
  href     TEXT    NOT NULL,   -- absolute URL of the version in that language (any host)
  UNIQUE (entry_id, hreflang)
);

CREATE TABLE IF NOT EXISTS sitemap_images (
  id       INTEGER PRIMARY KEY,
  entry_id INTEGER NOT NULL,
  loc      TEXT    NOT NULL    -- absolute URL of the image (any host, e.g. a CDN)
);
CREATE INDEX IF NOT EXISTS sitemap_images_entry ON sitemap_images (entry_id, id);

-- A change to an entry's extensions is a change to its entry.
CREATE TRIGGER IF NOT EXISTS sitemap_alternates_inserted AFTER INSERT ON sitemap_alternates BEGIN
  UPDATE sitemapd_changes SET version = version + 1,
    lo = min(coalesce(lo, NEW.entry_id), NEW.entry_id), hi = max(coalesce(hi, NEW.entry_id), NEW.entry_id)
  WHERE source = 'sitemap_entries';
END;
CREATE TRIGGER IF NOT EXISTS sitemap_alternates_updated AFTER UPDATE ON sitemap_alternates BEGIN
  UPDATE sitemapd_changes SET version = version + 1,
    lo = min(coalesce(lo, NEW.entry_id), NEW.entry_id, OLD.entry_id),
    hi = max(coalesce(hi, NEW.entry_id), NEW.entry_id, OLD.entry_id)
  WHERE source = 'sitemap_entries';
END;
CREATE TRIGGER IF NOT EXISTS sitemap_alternates_deleted AFTER DELETE ON sitemap_alternates BEGIN
  UPDATE sitemapd_changes SET version = version + 1,
    lo = min(coalesce(lo, OLD.entry_id), OLD.entry_id), hi = max(coalesce(hi, OLD.entry_id), OLD.entry_id)
  WHERE source = 'sitemap_entries';
END;
CREATE TRIGGER IF NOT EXISTS sitemap_images_inserted AFTER INSERT ON sitemap_images BEGIN
  UPDATE sitemapd_changes SET version = version + 1,
    lo = min(coalesce(lo, NEW.entry_id), NEW.entry_id), hi = max(coalesce(hi, NEW.entry_id), NEW.entry_id)
  WHERE source = 'sitemap_entries';
END;
CREATE TRIGGER IF NOT EXISTS sitemap_images_updated AFTER UPDATE ON sitemap_images BEGIN
  UPDATE sitemapd_changes SET version = version + 1,
    lo = min(coalesce(lo, NEW.entry_id), NEW.entry_id, OLD.entry_id),
    hi = max(coalesce(hi, NEW.entry_id), NEW.entry_id, OLD.entry_id)
  WHERE source = 'sitemap_entries';
END;
CREATE TRIGGER IF NOT EXISTS sitemap_images_deleted AFTER DELETE ON sitemap_images BEGIN
  UPDATE sitemapd_changes SET version = version + 1,
    lo = min(coalesce(lo, OLD.entry_id), OLD.entry_id), hi = max(coalesce(hi, OLD.entry_id), OLD.entry_id)
  WHERE source = 'sitemap_entries';
END;

-- Feeds list the most recently modified entries.
CREATE INDEX IF NOT EXISTS sitemap_entries_lastmod ON sitemap_entries (lastmod);

-- Which extension namespaces a sitemap file declares (1 = xhtml, 2 = image): decided when the
-- file is measured, so its bytes are known before it is rendered.
ALTER TABLE sitemapd_pages ADD COLUMN extensions BIGINT NOT NULL DEFAULT 0;

-- IndexNow, per site: entries up to this (lastmod in microseconds since the epoch, id) have been
-- submitted. Shared by replicas, so each change is submitted once.
CREATE TABLE IF NOT EXISTS sitemapd_indexnow (
  site         TEXT   NOT NULL PRIMARY KEY,
  through_us   BIGINT NOT NULL,
  through_id   BIGINT NOT NULL
);
