-- Videos of entries (`video:video`), keyed by the entry's id like images; their change
-- triggers are added with the others' at start (see triggers.rs).
CREATE TABLE IF NOT EXISTS sitemap_videos (
  id               BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  entry_id         BIGINT NOT NULL,
  thumbnail_loc    TEXT NULL,
  title            TEXT NULL,
  description      TEXT NULL,
  content_loc      TEXT NULL,
  player_loc       TEXT NULL,
  duration         INT NULL,
  publication_date DATETIME(6) NULL,
  KEY sitemap_videos_entry (entry_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='sitemapd videos';
