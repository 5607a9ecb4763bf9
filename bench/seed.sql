-- Seeds :n entries into sitemap_entries (created by `sitemapd migrate`), in one statement.
-- Deterministic (no random()): the same n gives the same rows, hence the same files and ETags.
-- The URLs look like what a PHP/CMS site writes: query strings with several parameters and &,
-- non-ASCII paths (Latin, Cyrillic, Japanese), paths and absolute URLs, lengths 25 to ~190.
-- lastmod is NULL for 1 row in 10; changefreq and priority are sometimes NULL.
\set ON_ERROR_STOP on
INSERT INTO sitemap_entries (id, loc, lastmod, changefreq, priority)
SELECT
  i,
  CASE i % 8
    WHEN 0 THEN '/fr/article.php?AIndex=' || i || '&lang=fr&ref=accueil'
    WHEN 1 THEN 'https://www.example.com/produits/catégorie-' || (i % 97) || '/élément-' || i || '.html'
    WHEN 2 THEN '/de/straße/größe-' || i || '?farbe=grün&sortierung=preis-aufsteigend'
    WHEN 3 THEN '/blog/' || (2010 + i % 15) || '/' || lpad((1 + i % 12)::text, 2, '0')
                || '/post-' || i || '-how-to-choose-the-right-running-shoes-for-trail-and-road'
    WHEN 4 THEN '/search?q=shoes+size+' || (i % 50) || '&page=' || (i % 400) || '&id=' || i
                || '&utm_source=newsletter&utm_medium=email&utm_campaign=spring-sale'
    WHEN 5 THEN '/ja/製品/カテゴリー/' || i
    WHEN 6 THEN '/shop/item/' || i || '?variant=' || substr(md5(i::text), 1, 12) || '&color=navy'
    ELSE        '/ru/статьи/' || i || '-новости-дня?p=' || i
  END,
  CASE WHEN i % 10 = 3 THEN NULL
       ELSE timestamptz '2015-01-01 00:00:00+00' + ((i::bigint * 7919) % 315360000) * interval '1 second'
  END,
  (ARRAY['daily', 'weekly', 'monthly', NULL, 'yearly', 'hourly', 'never'])[1 + i % 7],
  CASE WHEN i % 5 = 0 THEN NULL ELSE ((i % 11) / 10.0)::real END
FROM generate_series(1, :n) AS i;

-- Fresh statistics and visibility map, as on a settled production table.
VACUUM (ANALYZE) sitemap_entries;
