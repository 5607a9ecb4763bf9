-- The URLs each view-fed group last listed, by id, kept only while IndexNow is on: when a view's
-- row leaves it (or its loc changes, or it is now skipped), the URL it had is submitted as
-- removed. The built-in table's triggers note such URLs in sitemapd_removed instead.
CREATE TABLE IF NOT EXISTS sitemapd_listed (
  site TEXT    NOT NULL,
  id   INTEGER NOT NULL,
  loc  TEXT    NOT NULL,
  PRIMARY KEY (site, id)
);
