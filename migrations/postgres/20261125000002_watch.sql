-- Watching the tables behind a view (or any source other than sitemap_entries): sitemapd puts
-- statement triggers on them (see `sitemapd migrate`), which log the touched rows' keys under
-- the source's name, as the built-in table's triggers do.
--
-- The CMS's own database user fires these triggers: the log is written with the rights of
-- sitemapd's user (SECURITY DEFINER), and a failure to log never fails the CMS's statement.
ALTER FUNCTION sitemapd_log_change(TEXT, BIGINT, BIGINT) SECURITY DEFINER SET search_path FROM CURRENT;

-- TG_ARGV[0]: the source; TG_ARGV[1]: the table's integer key column, or '' (then every id).
CREATE OR REPLACE FUNCTION sitemapd_source_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $fn$
DECLARE
  key TEXT := TG_ARGV[1];
  lo BIGINT;
  hi BIGINT;
BEGIN
  BEGIN
    IF TG_OP = 'TRUNCATE' OR key = '' THEN
      lo := -9223372036854775808;
      hi := 9223372036854775807;
    ELSIF TG_OP = 'INSERT' THEN
      EXECUTE format('SELECT min(%I)::int8, max(%I)::int8 FROM sitemapd_new', key, key) INTO lo, hi;
    ELSIF TG_OP = 'DELETE' THEN
      EXECUTE format('SELECT min(%I)::int8, max(%I)::int8 FROM sitemapd_old', key, key) INTO lo, hi;
    ELSE
      EXECUTE format('SELECT min(k)::int8, max(k)::int8 FROM (SELECT %I AS k FROM sitemapd_new
                      UNION ALL SELECT %I FROM sitemapd_old) touched', key, key) INTO lo, hi;
    END IF;
    IF lo IS NOT NULL THEN
      PERFORM sitemapd_log_change(TG_ARGV[0], lo, hi);
    END IF;
  EXCEPTION WHEN OTHERS THEN
    RAISE WARNING 'sitemapd could not log a change of %: %', TG_ARGV[0], SQLERRM;
  END;
  RETURN NULL;
END
$fn$;
