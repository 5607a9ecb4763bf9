-- Per file: what the database said of its rows when they were last measured (count and hash of
-- each id range, computed by the database). A source nothing logs (a view) is checked against it
-- each refresh, and only the files whose summary moved are read again.
ALTER TABLE sitemapd_pages ADD COLUMN summary TEXT NULL;
