-- Per site: the change-log version its stored files cover, so a restarted service reads only
-- what changed while it was stopped.
CREATE TABLE IF NOT EXISTS sitemapd_cursors (
  site    VARCHAR(2048) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
  version BIGINT NOT NULL
) ENGINE=InnoDB;
