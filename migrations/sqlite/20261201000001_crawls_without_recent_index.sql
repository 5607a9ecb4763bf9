-- The crawl log on SQLite: each fetch moves its row in an index on last_fetch, and with fetches
-- spread over all listed URLs that touched a page of the index per row, written again to the
-- WAL at every batch. Without it the writer keeps up with 30,000 lines a second on 2 cores
-- instead of about 25,000 (docs/performance.md); the background report counts a group's
-- recent fetches from the table instead. PostgreSQL and MySQL keep theirs: there it costs
-- nothing measurable and counts the coverage of 10M URLs from the index alone.
DROP INDEX IF EXISTS sitemapd_crawls_recent;
