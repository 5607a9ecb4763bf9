-- URLs that left the built-in table (a deleted row, or a row whose loc changed), for IndexNow:
-- the protocol takes removed URLs too, and the engine then finds them gone. Read and cleared by
-- the service after submitting them. Its triggers are added with the others at start
-- (see triggers.rs).
CREATE TABLE IF NOT EXISTS sitemapd_removed (
  id  BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  loc TEXT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
