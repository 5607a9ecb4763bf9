-- Videos of entries (`video:video`, Google's video extension), keyed by the entry's id like
-- images; a change to them is a change to their entry.
CREATE TABLE IF NOT EXISTS sitemap_videos (
  id               INTEGER PRIMARY KEY,
  entry_id         INTEGER NOT NULL,
  thumbnail_loc    TEXT NULL,
  title            TEXT NULL,
  description      TEXT NULL,
  content_loc      TEXT NULL,
  player_loc       TEXT NULL,
  duration         INTEGER NULL,
  publication_date TEXT NULL
);
CREATE INDEX IF NOT EXISTS sitemap_videos_entry ON sitemap_videos (entry_id, id);

CREATE TRIGGER IF NOT EXISTS sitemap_videos_inserted AFTER INSERT ON sitemap_videos BEGIN
  UPDATE sitemapd_changes SET version = version + 1 WHERE source = 'sitemap_entries';
  INSERT INTO sitemapd_change_log (source, version, lo, hi)
    SELECT source, version, NEW.entry_id, NEW.entry_id FROM sitemapd_changes WHERE source = 'sitemap_entries';
END;

CREATE TRIGGER IF NOT EXISTS sitemap_videos_updated AFTER UPDATE ON sitemap_videos BEGIN
  UPDATE sitemapd_changes SET version = version + 1 WHERE source = 'sitemap_entries';
  INSERT INTO sitemapd_change_log (source, version, lo, hi)
    SELECT source, version, min(NEW.entry_id, OLD.entry_id), max(NEW.entry_id, OLD.entry_id) FROM sitemapd_changes WHERE source = 'sitemap_entries';
END;

CREATE TRIGGER IF NOT EXISTS sitemap_videos_deleted AFTER DELETE ON sitemap_videos BEGIN
  UPDATE sitemapd_changes SET version = version + 1 WHERE source = 'sitemap_entries';
  INSERT INTO sitemapd_change_log (source, version, lo, hi)
    SELECT source, version, OLD.entry_id, OLD.entry_id FROM sitemapd_changes WHERE source = 'sitemap_entries';
END;
