-- URLs that left the built-in table (a deleted row, or a row whose loc changed), for IndexNow:
-- the protocol takes removed URLs too, and the engine then finds them gone. Read and cleared by
-- the service after submitting them.
CREATE TABLE IF NOT EXISTS sitemapd_removed (
  id  INTEGER PRIMARY KEY AUTOINCREMENT,
  loc TEXT NOT NULL
);

DROP TRIGGER IF EXISTS sitemapd_entries_gone;
CREATE TRIGGER sitemapd_entries_gone AFTER DELETE ON sitemap_entries
WHEN OLD.loc IS NOT NULL BEGIN
  INSERT INTO sitemapd_removed (loc) VALUES (OLD.loc);
END;

DROP TRIGGER IF EXISTS sitemapd_entries_moved;
CREATE TRIGGER sitemapd_entries_moved AFTER UPDATE OF loc ON sitemap_entries
WHEN OLD.loc IS NOT NULL AND OLD.loc IS NOT NEW.loc BEGIN
  INSERT INTO sitemapd_removed (loc) VALUES (OLD.loc);
END;
