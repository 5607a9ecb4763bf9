#!/usr/bin/env bash
# bench/mediawiki.sh [PAGES]: sitemapd on a MediaWiki, beside MediaWiki's own generateSitemap.php.
#
# A real MediaWiki (Debian's package, installed by its own maintenance/install.php, as
# scripts/mediawiki-check.sh does) on the MariaDB/MySQL server at MYSQL_HOST:MYSQL_PORT as it is
# configured (untuned: the 128 MiB buffer pool of a Debian install), PAGES pages (default
# 1,000,000) seeded by SQL into `page`: 95 % in the main namespace, the rest talk pages; one in
# 50 a redirect, one in 100 a __NOINDEX__ page (a `noindex` row in page_props); titles with
# escapes (`&`, `'`, beyond ASCII) on three in seven. sitemapd reads the guide's view `sitemap_mw`
# exactly as docs/guide.md prints it, watching `page` and `page_props`. RUNS times (default 3),
# each from an empty sitemapd database:
#   - how long after sitemapd's first start the index answers 200;
#   - a cold crawl of every file (gzip accepted), then a second one: time, 503s, bytes;
#   - how long a page whose page_touched moves (an edit, as MediaWiki writes it, by SQL) takes
#     to show in its file (SITEMAP_REFRESH_SECS=REFRESH, default 10);
#   - generateSitemap.php --skip-redirects on the same wiki ($wgSitemapNamespaces = [0], gzip
#     as by default): run time, files and bytes;
#   - the machine's load average before and after (the machine may be shared).
#
# Usage: bench/mediawiki.sh [PAGES]    e.g. bench/mediawiki.sh 100000
#   SITEMAPD_BIN=path   this binary instead of target/release/sitemapd (built when missing)
#   REFRESH=10          SITEMAP_REFRESH_SECS for the run
#   RUNS=3              measurements, each from an empty sitemapd database
#   KEEP_TMP=1          keep the temporary directory and both databases
# Loopback only; drops its databases at the end.
set -uo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
FRONT=mediawiki-bench

# shellcheck source=../scripts/lib/checks.sh
. "$ROOT/scripts/lib/checks.sh"
# shellcheck source=../scripts/lib/nginx.sh
. "$ROOT/scripts/lib/nginx.sh"
# shellcheck source=../scripts/lib/mediawiki/setup.sh
. "$ROOT/scripts/lib/mediawiki/setup.sh"

PAGES=${1:-1000000}
REFRESH=${REFRESH:-10}
RUNS=${RUNS:-3}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mediawiki-bench.XXXXXX") || exit 1
chmod 755 "$TMP"
SITEMAPD_PID=
MYSQL_HOST=${MYSQL_HOST:-127.0.0.1}
MYSQL_PORT=${MYSQL_PORT:-3306}
PG_HOST=${PG_HOST:-127.0.0.1}
PG_PORT=${PG_PORT:-5432}
MW_WDB=mwbench_wiki_$$
MW_SDB=mwbench_sitemapd_$$
DBS_MADE=

sql() { # sql [DATABASE]: runs stdin on the server as root, tab-separated output without headers
  timeout 900 mysql --protocol=tcp -h "$MYSQL_HOST" -P "$MYSQL_PORT" -u root --default-character-set=utf8mb4 -N -B "$@"
}
cleanup() {
  stop_pid "$SITEMAPD_PID"
  if [ "${KEEP_TMP:-}" = 1 ]; then
    say "kept $TMP and the databases $MW_WDB, $MW_SDB"
  else
    [ -n "$DBS_MADE" ] && echo "DROP DATABASE IF EXISTS $MW_WDB; DROP DATABASE IF EXISTS $MW_SDB;" | sql
    rm -rf "$TMP"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

mw_tools
SP=$(free_port) || abort "no free port for sitemapd"
FP=$(free_port "$SP") || abort "no free port"
SITE=http://127.0.0.1:$FP
DIRECT=http://127.0.0.1:$SP
CURL=(curl -s --max-time 120)
# The bench lists the main namespace only, as the guide's view does unchanged.
MW_NS_LINES=()
MW_NS_LIST=0

echo "CREATE DATABASE $MW_WDB;" | sql || abort "create the database $MW_WDB"
DBS_MADE=1
MW_DBUSER=root mw_install "$TMP/wiki" mysql "$MW_WDB" || {
  tail -n 20 "$TMP/wiki/install.log" >&2
  abort "MediaWiki's install.php"
}
CONF=$TMP/wiki/LocalSettings.php

# ---------------------------------------------------------------- the wiki, seeded by SQL

say "seeding $PAGES pages by SQL"
started=$(now)
sql "$MW_WDB" >/dev/null <<EOF || abort "seed $PAGES pages"
INSERT INTO page (page_namespace, page_title, page_is_redirect, page_is_new, page_random,
  page_touched, page_links_updated, page_latest, page_len, page_content_model)
SELECT IF(s.seq % 20 = 0, 1, 0),
  CONCAT(ELT(s.seq % 7 + 1, 'Café_crème_', 'Q&A_about_', 'Rock_''n''_roll_', 'Page_', 'Page_', 'Page_', 'Page_'),
         'number_', s.seq),
  IF(s.seq % 50 = 7, 1, 0), 0, RAND(),
  DATE_FORMAT(TIMESTAMP('2021-01-01') + INTERVAL (s.seq * 97) SECOND, '%Y%m%d%H%i%s'),
  NULL, 1, 1000, 'wikitext'
FROM seq_1_to_$PAGES s;
INSERT INTO page_props (pp_page, pp_propname, pp_value, pp_sortkey)
SELECT page_id, 'noindex', '', NULL FROM page WHERE page_id % 100 = 3;
ANALYZE TABLE page, page_props;
EOF
say "seeded in $(since "$started") s: $(echo "SELECT COUNT(*) FROM page" | sql "$MW_WDB") pages"

# ---------------------------------------------------------------- one measurement

# crawl: every file once, gzip accepted; prints "seconds 503s bytes"
crawl() {
  local f s b bytes=0 unavailable=0 t
  t=$(now)
  for f in "${FILES[@]}"; do
    read -r s b < <("${CURL[@]}" -H 'Accept-Encoding: gzip' -o /dev/null -w '%{http_code} %{size_download}\n' "$f")
    [ "$s" = 503 ] && unavailable=$((unavailable + 1))
    bytes=$((bytes + b))
  done
  echo "$(since "$t") $unavailable $bytes"
}

run() { # run N: one measurement from an empty sitemapd database; one line of results
  local n=$1
  local dir=$TMP/run-$n status first_index cold_s cold_503 cold_bytes warm_s warm_503 target title holder f shown t
  local load_before gen_s gen_files gen_bytes gen_urls listed
  mkdir -p "$dir"
  load_before=$(load)
  echo "DROP DATABASE IF EXISTS $MW_SDB; CREATE DATABASE $MW_SDB;" | sql || abort "create $MW_SDB"
  timeout 120 env -i PATH="$PATH" DATABASE_URL="mysql://root@$MYSQL_HOST:$MYSQL_PORT/$MW_SDB" SITEMAP_BASE_URL="$SITE" "$BIN" migrate >"$dir/migrate.log" 2>&1 || {
    cat "$dir/migrate.log" >&2
    abort "sitemapd migrate"
  }
  guide_mw_view mariadb | sql "$MW_SDB" || abort "the guide's view sitemap_mw"
  t=$(now)
  (
    cd "$TMP" &&
      exec env -i PATH="$PATH" HOME="${HOME:-/tmp}" RUST_LOG="${RUST_LOG:-info}" \
        DATABASE_URL="mysql://root@$MYSQL_HOST:$MYSQL_PORT/$MW_SDB" BIND_ADDR="127.0.0.1:$SP" \
        SITEMAP_BASE_URL="$SITE" SITEMAP_SOURCE=sitemap_mw SITEMAP_REFRESH_SECS="$REFRESH" "$BIN" serve
  ) >>"$dir/sitemapd.log" 2>&1 &
  SITEMAPD_PID=$!
  status=
  for _ in $(seq 1 3000); do
    status=$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$DIRECT/sitemap_index.xml")
    [ "$status" = 200 ] && break
    kill -0 "$SITEMAPD_PID" 2>/dev/null || break
    sleep 0.2
  done
  first_index=$(since "$t")
  [ "$status" = 200 ] || {
    tail -n 30 "$dir/sitemapd.log" >&2
    abort "sitemapd's index did not answer 200 within 10 minutes (last: $status)"
  }
  "${CURL[@]}" -o "$dir/index.xml" "$DIRECT/sitemap_index.xml"
  mapfile -t FILES < <(grep -o '<loc>[^<]*</loc>' "$dir/index.xml" | sed -e 's#</\?loc>##g' -e "s#^$SITE#$DIRECT#")
  read -r cold_s cold_503 cold_bytes < <(crawl)
  read -r warm_s warm_503 _ < <(crawl)

  # An edit as MediaWiki writes it (page_touched and page_latest), by SQL, on a page in the
  # middle of the site: how long until its file lists the new lastmod.
  target=$(echo "SELECT page_id FROM page WHERE page_namespace = 0 AND page_is_redirect = 0 AND page_title LIKE 'Page%' AND page_id >= $((PAGES / 2)) ORDER BY page_id LIMIT 1" | sql "$MW_WDB")
  title=$(echo "SELECT page_title FROM page WHERE page_id = $target" | sql "$MW_WDB")
  holder=
  for f in "${FILES[@]}"; do
    "${CURL[@]}" -o "$dir/file.xml" "${f%.gz}"
    grep -q "/wiki/$title<" "$dir/file.xml" && holder=${f%.gz} && break
  done
  [ -n "$holder" ] || abort "no file lists the page $title"
  sleep 2
  echo "UPDATE page SET page_touched = '2020020${n}020202', page_latest = page_latest + 1 WHERE page_id = $target" | sql "$MW_WDB"
  t=$(now)
  shown=never
  for _ in $(seq 1 $((REFRESH * 10 + 300))); do
    "${CURL[@]}" -o "$dir/file.xml" "$holder"
    if tr '<' '\n' <"$dir/file.xml" | grep -A3 "/wiki/$title\$" | grep -q "2020-02-0${n}T02:02:02"; then
      shown=$(since "$t")
      break
    fi
    sleep 0.1
  done
  stop_pid "$SITEMAPD_PID"
  SITEMAPD_PID=

  # MediaWiki's own answer on the same wiki, as a cron job would run it.
  t=$(now)
  mw_php "$CONF" maintenance/generateSitemap.php --fspath "$dir/generated" --server "$SITE" \
    --skip-redirects >"$dir/generate.log" 2>&1 || {
    tail -n 10 "$dir/generate.log" >&2
    abort "generateSitemap.php"
  }
  gen_s=$(since "$t")
  gen_files=$(find "$dir/generated" -type f | wc -l)
  gen_bytes=$(find "$dir/generated" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
  gen_urls=$(find "$dir/generated" -name '*NS_*' -exec zcat -f {} + | grep -c '<url>')
  listed=$(echo "SELECT COUNT(*) FROM sitemap_mw" | sql "$MW_SDB")
  local timeouts
  timeouts=$(grep -c -i 'max_statement_time\|execution was interrupted\|cannot read it by id range' "$dir/sitemapd.log")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$first_index" "${#FILES[@]}" "$cold_s" "$cold_503" \
    "$cold_bytes" "$warm_s" "$warm_503" "$shown" "$listed" "$gen_s" "$gen_files" "$gen_urls" "$gen_bytes" "$load_before / $(load)" "$timeouts"
}

echo "run	index_s	files	cold_s	cold_503	cold_bytes	warm_s	warm_503	edit_shown_s	urls	generateSitemap_s	gen_files	gen_urls	gen_bytes	load (before / after)	timeouts_or_warnings" >"$TMP/results"
for n in $(seq 1 "$RUNS"); do
  run "$n" >>"$TMP/results"
done

cat <<EOF

MediaWiki $(sed -n "s/^define( 'MW_VERSION', '\(.*\)' );/\1/p" "$MW/includes/Defines.php") ($PAGES pages seeded, $(echo "SELECT COUNT(*) FROM sitemap_mw" | sql "$MW_SDB" 2>/dev/null || echo '?') listed), $(echo 'SELECT VERSION()' | sql), buffer pool $(echo 'SELECT @@innodb_buffer_pool_size DIV 1048576' | sql) MiB, $(nproc) cores
sitemapd $($BIN --version 2>/dev/null | head -n 1), the guide's view sitemap_mw, SITEMAP_REFRESH_SECS=$REFRESH
EOF
column -t -s $'\t' "$TMP/results"
awk -F'\t' 'NR > 1 && ($5 != 0 || $9 == "never" || $10 != $13 || $16 != 0) { bad = 1 } END { exit bad }' "$TMP/results"
