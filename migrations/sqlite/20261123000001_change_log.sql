-- Every service reading the changes gets all of them. Until now the triggers kept one range per
-- source, which the first service to read it cleared: a second service (another process on the
-- same file, or a second site of one process reading the same table) could miss changes. Now
-- the counter orders the changes (SQLite has one writer at a time) and each version's ids are
-- logged; each service reads the log after its own last version and trims what is long read.
-- The lo and hi columns of sitemapd_changes are no longer used.
CREATE TABLE IF NOT EXISTS sitemapd_change_log (
  source  TEXT    NOT NULL,
  version INTEGER NOT NULL,
  lo      INTEGER NOT NULL,
  hi      INTEGER NOT NULL,
  PRIMARY KEY (source, version)
);

DROP TRIGGER IF EXISTS sitemapd_entries_inserted;
CREATE TRIGGER sitemapd_entries_inserted AFTER INSERT ON sitemap_entries BEGIN
  UPDATE sitemapd_changes SET version = version + 1 WHERE source = 'sitemap_entries';
  INSERT INTO sitemapd_change_log (source, version, lo, hi)
    SELECT source, version, NEW.id, NEW.id FROM sitemapd_changes WHERE source = 'sitemap_entries';
END;

DROP TRIGGER IF EXISTS sitemapd_entries_updated;
CREATE TRIGGER sitemapd_entries_updated AFTER UPDATE ON sitemap_entries BEGIN
  UPDATE sitemapd_changes SET version = version + 1 WHERE source = 'sitemap_entries';
  INSERT INTO sitemapd_change_log (source, version, lo, hi)
    SELECT source, version, min(NEW.id, OLD.id), max(NEW.id, OLD.id) FROM sitemapd_changes WHERE source = 'sitemap_entries';
END;

DROP TRIGGER IF EXISTS sitemapd_entries_deleted;
CREATE TRIGGER sitemapd_entries_deleted AFTER DELETE ON sitemap_entries BEGIN
  UPDATE sitemapd_changes SET version = version + 1 WHERE source = 'sitemap_entries';
  INSERT INTO sitemapd_change_log (source, version, lo, hi)
    SELECT source, version, OLD.id, OLD.id FROM sitemapd_changes WHERE source = 'sitemap_entries';
END;

DROP TRIGGER IF EXISTS sitemap_alternates_inserted;
CREATE TRIGGER sitemap_alternates_inserted AFTER INSERT ON sitemap_alternates BEGIN
  UPDATE sitemapd_changes SET version = version + 1 WHERE source = 'sitemap_entries';
  INSERT INTO sitemapd_change_log (source, version, lo, hi)
    SELECT source, version, NEW.entry_id, NEW.entry_id FROM sitemapd_changes WHERE source = 'sitemap_entries';
END;

DROP TRIGGER IF EXISTS sitemap_alternates_updated;
CREATE TRIGGER sitemap_alternates_updated AFTER UPDATE ON sitemap_alternates BEGIN
  UPDATE sitemapd_changes SET version = version + 1 WHERE source = 'sitemap_entries';
  INSERT INTO sitemapd_change_log (source, version, lo, hi)
    SELECT source, version, min(NEW.entry_id, OLD.entry_id), max(NEW.entry_id, OLD.entry_id) FROM sitemapd_changes WHERE source = 'sitemap_entries';
END;

DROP TRIGGER IF EXISTS sitemap_alternates_deleted;
CREATE TRIGGER sitemap_alternates_deleted AFTER DELETE ON sitemap_alternates BEGIN
  UPDATE sitemapd_changes SET version = version + 1 WHERE source = 'sitemap_entries';
  INSERT INTO sitemapd_change_log (source, version, lo, hi)
    SELECT source, version, OLD.entry_id, OLD.entry_id FROM sitemapd_changes WHERE source = 'sitemap_entries';
END;

DROP TRIGGER IF EXISTS sitemap_images_inserted;
CREATE TRIGGER sitemap_images_inserted AFTER INSERT ON sitemap_images BEGIN
  UPDATE sitemapd_changes SET version = version + 1 WHERE source = 'sitemap_entries';
  INSERT INTO sitemapd_change_log (source, version, lo, hi)
    SELECT source, version, NEW.entry_id, NEW.entry_id FROM sitemapd_changes WHERE source = 'sitemap_entries';
END;

DROP TRIGGER IF EXISTS sitemap_images_updated;
CREATE TRIGGER sitemap_images_updated AFTER UPDATE ON sitemap_images BEGIN
  UPDATE sitemapd_changes SET version = version + 1 WHERE source = 'sitemap_entries';
  INSERT INTO sitemapd_change_log (source, version, lo, hi)
    SELECT source, version, min(NEW.entry_id, OLD.entry_id), max(NEW.entry_id, OLD.entry_id) FROM sitemapd_changes WHERE source = 'sitemap_entries';
END;

DROP TRIGGER IF EXISTS sitemap_images_deleted;
CREATE TRIGGER sitemap_images_deleted AFTER DELETE ON sitemap_images BEGIN
  UPDATE sitemapd_changes SET version = version + 1 WHERE source = 'sitemap_entries';
  INSERT INTO sitemapd_change_log (source, version, lo, hi)
    SELECT source, version, OLD.entry_id, OLD.entry_id FROM sitemapd_changes WHERE source = 'sitemap_entries';
END;
