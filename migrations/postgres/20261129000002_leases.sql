-- Replicas share the work: per site, the replica holding the site's lease (a session advisory
-- lock on PostgreSQL, GET_LOCK on MySQL/MariaDB) keeps its files current, and notes itself here;
-- the others serve the stored state and load it again when version moves (every stored change
-- of the site's files bumps it).
CREATE TABLE IF NOT EXISTS sitemapd_leases (
  site     TEXT NOT NULL PRIMARY KEY,
  version  BIGINT NOT NULL DEFAULT 0,
  holder   TEXT NULL,
  since    BIGINT NULL
);
