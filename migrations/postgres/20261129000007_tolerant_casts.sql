-- A text lastmod of a source view that is no time reads as NULL (its tag is left out and
-- counted) instead of failing the whole query: PostgreSQL before 16 has no pg_input_is_valid.
-- Called only for text columns; typed columns are cast as they always were.
CREATE OR REPLACE FUNCTION sitemapd_timestamptz(value text) RETURNS timestamptz
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN value::timestamptz;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;
