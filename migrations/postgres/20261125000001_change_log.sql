-- A change log, as MySQL and SQLite have: a service that was stopped reads what changed
-- meanwhile from its last version instead of re-reading every row. NOTIFY now only wakes it.
--
-- sitemapd_changes holds one version counter per watched source; the UPDATE's row lock
-- serialises writers until they commit, so versions follow commit order. Each statement's
-- touched ids are logged under its version; every service reads the log after its own cursor
-- (sitemapd_cursors, per site) and trims what is long read.
CREATE TABLE IF NOT EXISTS sitemapd_changes (
  source  TEXT   NOT NULL PRIMARY KEY,
  version BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS sitemapd_change_log (
  source  TEXT   NOT NULL,
  version BIGINT NOT NULL,
  lo      BIGINT NOT NULL,
  hi      BIGINT NOT NULL,
  PRIMARY KEY (source, version)
);

-- Per site: the change-log version its stored files cover.
CREATE TABLE IF NOT EXISTS sitemapd_cursors (
  site    TEXT   NOT NULL PRIMARY KEY,
  version BIGINT NOT NULL
);

-- Logs ids lo..hi of changed_source as changed, if that source is watched, and wakes services.
CREATE OR REPLACE FUNCTION sitemapd_log_change(changed_source TEXT, lo BIGINT, hi BIGINT)
RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  v BIGINT;
BEGIN
  UPDATE sitemapd_changes SET version = version + 1 WHERE source = changed_source
    RETURNING version INTO v;
  IF v IS NULL THEN
    RETURN;
  END IF;
  INSERT INTO sitemapd_change_log (source, version, lo, hi) VALUES (changed_source, v, lo, hi);
  PERFORM pg_notify('sitemapd_changed', changed_source);
END
$fn$;

CREATE OR REPLACE FUNCTION sitemapd_entries_changed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  lo BIGINT;
  hi BIGINT;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    lo := -9223372036854775808;
    hi := 9223372036854775807;
  ELSIF TG_OP = 'INSERT' THEN
    SELECT min(id), max(id) INTO lo, hi FROM sitemapd_new;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT min(id), max(id) INTO lo, hi FROM sitemapd_old;
  ELSE
    SELECT min(id), max(id) INTO lo, hi
      FROM (SELECT id FROM sitemapd_new UNION ALL SELECT id FROM sitemapd_old) touched;
  END IF;
  IF lo IS NOT NULL THEN
    PERFORM sitemapd_log_change(TG_TABLE_NAME::text, lo, hi);
  END IF;
  RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION sitemapd_extensions_changed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  lo BIGINT;
  hi BIGINT;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    lo := -9223372036854775808;
    hi := 9223372036854775807;
  ELSIF TG_OP = 'INSERT' THEN
    SELECT min(entry_id), max(entry_id) INTO lo, hi FROM sitemapd_new;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT min(entry_id), max(entry_id) INTO lo, hi FROM sitemapd_old;
  ELSE
    SELECT min(entry_id), max(entry_id) INTO lo, hi
      FROM (SELECT entry_id FROM sitemapd_new UNION ALL SELECT entry_id FROM sitemapd_old) touched;
  END IF;
  IF lo IS NOT NULL THEN
    PERFORM sitemapd_log_change('sitemap_entries', lo, hi);
  END IF;
  RETURN NULL;
END
$fn$;

-- The built-in table is watched when its triggers are ours (a table made by a CMS is not).
INSERT INTO sitemapd_changes (source, version)
  SELECT 'sitemap_entries', 0
  WHERE EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass('sitemap_entries')
                AND tgname = 'sitemapd_entries_inserted')
  ON CONFLICT DO NOTHING;
