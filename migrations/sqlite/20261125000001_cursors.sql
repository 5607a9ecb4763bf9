-- Per site: the change-log version its stored files cover, so a restarted service reads only
-- what changed while it was stopped.
CREATE TABLE IF NOT EXISTS sitemapd_cursors (
  site    TEXT    NOT NULL PRIMARY KEY,
  version INTEGER NOT NULL
);
