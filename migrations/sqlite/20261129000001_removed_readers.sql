-- Every site the built-in table feeds reads the URLs that left it (sitemapd_removed) for
-- IndexNow; each keeps here how far it read (its group key, the highest id taken, when it last
-- read), and rows every reader has passed are cleared.
CREATE TABLE IF NOT EXISTS sitemapd_removed_read (
  site       TEXT   NOT NULL PRIMARY KEY,
  through_id BIGINT NOT NULL,
  read_at    BIGINT NOT NULL
);
