-- MariaDB version of seed.sql: seeds @n entries into sitemap_entries (created by `sitemapd
-- migrate`), in one statement, with the same rows as seed.sql for the same n: same ids, locs,
-- lastmod (DATETIME, UTC), changefreq and priority. run.sh sets @n with --init-command.
--
-- The numbers come from MariaDB's SEQUENCE engine: seq_1_to_4294967295 is a virtual table that is
-- never stored, and `seq <= @n` is a range read of its first @n values (EXPLAIN: range on
-- PRIMARY), so no recursion limit (max_recursive_iterations) applies. MySQL has no such engine.
--
-- The change triggers `sitemapd migrate` put on the table fire once per row (MySQL has no
-- statement triggers), as they would for any application writing rows.
INSERT INTO sitemap_entries (id, loc, lastmod, changefreq, priority)
SELECT
  i,
  CASE i % 8
    WHEN 0 THEN CONCAT('/fr/article.php?AIndex=', i, '&lang=fr&ref=accueil')
    WHEN 1 THEN CONCAT('https://www.example.com/produits/catégorie-', i % 97, '/élément-', i, '.html')
    WHEN 2 THEN CONCAT('/de/straße/größe-', i, '?farbe=grün&sortierung=preis-aufsteigend')
    WHEN 3 THEN CONCAT('/blog/', 2010 + i % 15, '/', LPAD(1 + i % 12, 2, '0'),
                       '/post-', i, '-how-to-choose-the-right-running-shoes-for-trail-and-road')
    WHEN 4 THEN CONCAT('/search?q=shoes+size+', i % 50, '&page=', i % 400, '&id=', i,
                       '&utm_source=newsletter&utm_medium=email&utm_campaign=spring-sale')
    WHEN 5 THEN CONCAT('/ja/製品/カテゴリー/', i)
    WHEN 6 THEN CONCAT('/shop/item/', i, '?variant=', SUBSTR(MD5(i), 1, 12), '&color=navy')
    ELSE        CONCAT('/ru/статьи/', i, '-новости-дня?p=', i)
  END,
  CASE WHEN i % 10 = 3 THEN NULL
       ELSE TIMESTAMP '2015-01-01 00:00:00' + INTERVAL ((i * 7919) % 315360000) SECOND
  END,
  ELT(1 + i % 7, 'daily', 'weekly', 'monthly', NULL, 'yearly', 'hourly', 'never'),
  CASE WHEN i % 5 = 0 THEN NULL ELSE (i % 11) / 10 END
FROM (SELECT seq AS i FROM seq_1_to_4294967295 WHERE seq <= @n) AS numbers;

-- Fresh statistics, as on a settled production table (the counterpart of VACUUM ANALYZE).
ANALYZE TABLE sitemap_entries;
