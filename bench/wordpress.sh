#!/usr/bin/env bash
# bench/wordpress.sh [POSTS]: sitemapd on the site it is for, beside WordPress core's own sitemaps.
#
# A real WordPress (Debian's package, its php-fpm behind nginx, set up as scripts/wordpress-check.sh
# does) on the MariaDB/MySQL server at MYSQL_HOST:MYSQL_PORT as it is configured (untuned: the
# 128 MiB buffer pool of a Debian install), POSTS published posts (default 1,000,000) seeded by
# SQL, a few nested pages, the home page listing the latest posts. sitemapd reads the single view
# `sitemap_wp` exactly as docs/guide.md prints it, as its own MariaDB user, and is measured on:
#   - how long after its first start the index answers 200;
#   - a cold crawl of every file (gzip accepted), and a second one: time, 503s, bytes;
#   - how long a post updated through SQL takes to show (SITEMAP_REFRESH_SECS, default 10 here);
#   - an edit stream (EDITS single-post edits, one a second, each as an editor's save writes it:
#     the post's post_modified_gmt and a new revision row): how long each edit takes to show (a
#     new ETag on its file) and the CPU the whole database server spent on the stream and the
#     20 s after it, read from the server's process;
#   - what an idle refresh costs the database: the server's CPU seconds per refresh period, and
#     those of sitemapd's own statements from MariaDB's USER_STATISTICS for its user (userstat
#     is switched on for the run, then restored);
#   - statement timeouts in its log (there must be none).
# Then WordPress core's sitemaps of the same site: the index, the first and the last posts page
# (OFFSET paging), and, with WP_FULL=1, a crawl of every file.
#
# Usage: bench/wordpress.sh [POSTS]    e.g. bench/wordpress.sh 100000
#   SITEMAPD_BIN=path   this binary instead of target/release/sitemapd (built when missing)
#   REFRESH=10          SITEMAP_REFRESH_SECS for the run
#   EDITS=60            edits in the edit stream (0: none)
#   WP_FULL=1           also crawl every file of WordPress's own sitemaps (36 min at 1M posts)
#   KEEP_TMP=1          keep the temporary directory and both databases
# Loopback only; drops its databases and its user at the end.
set -uo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
FRONT=wordpress-bench

# shellcheck source=../scripts/lib/checks.sh
. "$ROOT/scripts/lib/checks.sh"
# shellcheck source=../scripts/lib/nginx.sh
. "$ROOT/scripts/lib/nginx.sh"
# shellcheck source=../scripts/lib/wordpress/setup.sh
. "$ROOT/scripts/lib/wordpress/setup.sh"

POSTS=${1:-1000000}
REFRESH=${REFRESH:-10}
EDITS=${EDITS:-60}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/wordpress-bench.XXXXXX") || exit 1
chmod 755 "$TMP"
SITEMAPD_PID=
NGINX_PID=
FPM_PID=
MYSQL_HOST=${MYSQL_HOST:-127.0.0.1}
MYSQL_PORT=${MYSQL_PORT:-3306}
WDB=wpbench_wp_$$
SDB=wpbench_sitemapd_$$
SUSER=wpbench_$$
DBS_MADE=
USERSTAT_WAS=

sql() { # sql [DATABASE]: runs stdin on the server as root, tab-separated output without headers
  timeout 600 mysql --protocol=tcp -h "$MYSQL_HOST" -P "$MYSQL_PORT" -u root --default-character-set=utf8mb4 -N -B "$@"
}
cleanup() {
  stop_pid "$NGINX_PID"
  stop_pid "$SITEMAPD_PID"
  stop_pid "$FPM_PID"
  [ -n "$USERSTAT_WAS" ] && echo "SET GLOBAL userstat = $USERSTAT_WAS" | sql
  if [ "${KEEP_TMP:-}" = 1 ]; then
    say "kept $TMP, the databases $WDB, $SDB and the user $SUSER"
  else
    [ -n "$DBS_MADE" ] && echo "DROP DATABASE IF EXISTS $WDB; DROP DATABASE IF EXISTS $SDB; DROP USER IF EXISTS '$SUSER'@'127.0.0.1';" | sql
    rm -rf "$TMP"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

wp_tools
SP=$(free_port) || abort "no free port for sitemapd"
FP=$(free_port "$SP") || abort "no free port for nginx"
SITE=http://127.0.0.1:$FP
DIRECT=http://127.0.0.1:$SP
CURL=(curl -s --max-time 120)

echo "CREATE DATABASE $WDB CHARACTER SET utf8mb4; CREATE DATABASE $SDB;
      CREATE USER '$SUSER'@'127.0.0.1';
      GRANT ALL ON $SDB.* TO '$SUSER'@'127.0.0.1'; GRANT SELECT ON $WDB.* TO '$SUSER'@'127.0.0.1';" | sql ||
  abort "create the databases $WDB, $SDB and the user $SUSER"
DBS_MADE=1
wp_docroot
site_php install >/dev/null 2>"$TMP/install.err" || {
  cat "$TMP/install.err" >&2
  abort "WordPress install"
}

# ---------------------------------------------------------------- the site, seeded by SQL

say "seeding $POSTS published posts by SQL"
started=$(now)
echo "UPDATE wp_options SET option_value = 'posts' WHERE option_name = 'show_on_front'" | sql "$WDB" ||
  abort "set show_on_front"
# Posts dated from 2021 over about five years (157 s apart at 1M posts): every date is in the
# past, as a site's published posts are (a future lastmod is left out of the file).
STEP=$((157000000 / POSTS))
[ "$STEP" -ge 1 ] || STEP=1
# In batches of a million posts: one statement for ten million would hold an undo log of them all.
for ((from = 0; from < POSTS; from += 1000000)); do
  batch=$((POSTS - from < 1000000 ? POSTS - from : 1000000))
  sql "$WDB" <<EOF || abort "seed posts $from.. of $POSTS"
INSERT INTO wp_posts (post_author, post_date, post_date_gmt, post_content, post_title, post_excerpt,
  post_status, post_name, to_ping, pinged, post_modified, post_modified_gmt, post_content_filtered,
  post_parent, guid, post_type)
SELECT 1, TIMESTAMP('2021-01-01') + INTERVAL (s.seq * $STEP) SECOND,
  TIMESTAMP('2021-01-01') + INTERVAL (s.seq * $STEP) SECOND,
  CONCAT('<p>Post ', s.seq, '. ', REPEAT('Lorem ipsum dolor sit amet, consectetur adipiscing elit. ', 10), '</p>'),
  CONCAT('Post number ', s.seq), '', 'publish', CONCAT('post-number-', s.seq), '', '',
  TIMESTAMP('2021-01-01') + INTERVAL (s.seq * $STEP + 3600) SECOND,
  TIMESTAMP('2021-01-01') + INTERVAL (s.seq * $STEP + 3600) SECOND,
  '', 0, CONCAT('$SITE/?p=', s.seq), 'post'
FROM (SELECT seq + $from AS seq FROM seq_1_to_$batch) s;
EOF
done
sql "$WDB" <<EOF || abort "seed the pages"
INSERT INTO wp_posts (post_author, post_date, post_date_gmt, post_content, post_title, post_excerpt,
  post_status, post_name, to_ping, pinged, post_modified, post_modified_gmt, post_content_filtered,
  post_parent, guid, post_type)
SELECT 1, '2022-01-01', '2022-01-01', '<p>A page.</p>', CONCAT('Page ', s.seq), '', 'publish',
  CONCAT('page-', s.seq), '', '', '2022-01-02', '2022-01-02', '', 0, CONCAT('$SITE/?page_id=', s.seq), 'page'
FROM seq_1_to_20 s;
UPDATE wp_posts c JOIN wp_posts p ON p.post_name = 'page-1' AND p.post_type = 'page'
  SET c.post_parent = p.ID WHERE c.post_type = 'page' AND c.post_name IN ('page-2', 'page-3');
EOF
say "seeded in $(since "$started") s: $(echo "SELECT COUNT(*) FROM wp_posts WHERE post_status = 'publish'" | sql "$WDB") published posts and pages"

wp_start_fpm
wp_start_nginx

# ---------------------------------------------------------------- sitemapd

timeout 120 env -i PATH="$PATH" DATABASE_URL="mysql://root@$MYSQL_HOST:$MYSQL_PORT/$SDB" SITEMAP_BASE_URL="$SITE" "$BIN" migrate >"$TMP/migrate.log" 2>&1 ||
  {
    cat "$TMP/migrate.log" >&2
    abort "sitemapd migrate"
  }
guide_view sitemap_wp | sql "$SDB" || abort "the guide's view sitemap_wp"
# What the guide asks of a site owner: sitemapd's user may put triggers on the tables the view
# reads, and watches them from its start.
echo "GRANT TRIGGER ON $WDB.wp_posts TO '$SUSER'@'127.0.0.1'; GRANT TRIGGER ON $WDB.wp_options TO '$SUSER'@'127.0.0.1';" | sql ||
  abort "grant TRIGGER to $SUSER"
USERSTAT_WAS=$(echo 'SELECT @@userstat' | sql)
echo "SET GLOBAL userstat = 1; FLUSH USER_STATISTICS;" | sql
user_cpu() { echo "SELECT COALESCE(SUM(CPU_TIME), 0) FROM information_schema.USER_STATISTICS WHERE USER = '$SUSER'" | sql; }
# The whole database server's CPU seconds so far (user + system), read from its process.
SERVER_PID=$(pgrep -o -x mariadbd || pgrep -o -x mysqld)
server_cpu() {
  awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$SERVER_PID/stat" 2>/dev/null || echo 0
}
# ETags of every file, one line each (HEAD reads validators only).
etags() {
  local f
  for f in "${FILES[@]}"; do
    "${CURL[@]}" -I "$f" | tr -d '\r' | awk 'tolower($1) == "etag:" { print $2 }'
  done
}

started=$(now)
(
  cd "$TMP" &&
    exec env -i PATH="$PATH" HOME="${HOME:-/tmp}" RUST_LOG="${RUST_LOG:-info}" \
      DATABASE_URL="mysql://$SUSER@$MYSQL_HOST:$MYSQL_PORT/$SDB" BIND_ADDR="127.0.0.1:$SP" \
      SITEMAP_BASE_URL="$SITE" SITEMAP_SOURCE=sitemap_wp SITEMAP_REFRESH_SECS="$REFRESH" "$BIN" serve
) >>"$TMP/sitemapd.log" 2>&1 &
SITEMAPD_PID=$!
status=
for _ in $(seq 1 3000); do
  status=$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$DIRECT/sitemap_index.xml")
  [ "$status" = 200 ] && break
  kill -0 "$SITEMAPD_PID" 2>/dev/null || break
  sleep 0.2
done
first_index=$(since "$started")
[ "$status" = 200 ] || {
  tail -n 30 "$TMP/sitemapd.log" >&2
  abort "sitemapd's index did not answer 200 within 10 minutes (last: $status)"
}

"${CURL[@]}" -o "$TMP/index.xml" "$DIRECT/sitemap_index.xml"
mapfile -t FILES < <(grep -o '<loc>[^<]*</loc>' "$TMP/index.xml" | sed -e 's#</\?loc>##g' -e "s#^$SITE#$DIRECT#")

crawl() { # crawl LABEL: every file once, gzip accepted; prints "seconds 503s bytes"
  local f s bytes=0 unavailable=0 t
  t=$(now)
  for f in "${FILES[@]}"; do
    read -r s b < <("${CURL[@]}" -H 'Accept-Encoding: gzip' -o /dev/null -w '%{http_code} %{size_download}\n' "$f")
    [ "$s" = 503 ] && unavailable=$((unavailable + 1))
    bytes=$((bytes + b))
  done
  echo "$(since "$t") $unavailable $bytes"
}
read -r cold_s cold_503 cold_bytes < <(crawl)
read -r warm_s warm_503 _ < <(crawl)

# A post updated through SQL: how long until its file lists the new lastmod.
target=$(echo "SELECT ID FROM wp_posts WHERE post_type = 'post' AND post_status = 'publish' ORDER BY ID LIMIT 1 OFFSET $((POSTS / 2))" | sql "$WDB")
slug=$(echo "SELECT post_name FROM wp_posts WHERE ID = $target" | sql "$WDB")
# (Bodies go to a file first: `curl | grep -q` fails under pipefail when grep stops early.)
holder=
for f in "${FILES[@]}"; do
  "${CURL[@]}" -o "$TMP/file.xml" "${f%.gz}"
  grep -q "/$slug/<" "$TMP/file.xml" && holder=${f%.gz} && break
done
[ -n "$holder" ] || abort "no file lists the post $slug"
# A date before the seeded ones, never in the future (a future lastmod is left out).
echo "UPDATE wp_posts SET post_modified_gmt = '2020-02-02 02:02:02', post_modified = '2020-02-02 02:02:02' WHERE ID = $target" | sql "$WDB"
t=$(now)
shown=
for _ in $(seq 1 $((REFRESH * 10 + 300))); do
  "${CURL[@]}" -o "$TMP/file.xml" "$holder"
  if tr '<' '\n' <"$TMP/file.xml" | grep -A3 "/$slug/" | grep -c '2020-02-02T02:02:02' >/dev/null; then
    shown=$(since "$t")
    break
  fi
  sleep 0.2
done

# The edit stream: EDITS published posts, spread over the site, one edit a second, each as an
# editor's save writes it (the post's dates, then a revision row, which the view does not list).
# The post edited is the first at or after an id spread over the site: ids have gaps (each
# seeding batch leaves the auto-increment values it reserved and did not use).
edit_post() { # edit_post N: the Nth edit of the stream
  local from=$((N_FIRST + ($1 * 104047) % (N_LAST - N_FIRST)))
  sql "$WDB" <<SQL
SET @id = (SELECT ID FROM wp_posts FORCE INDEX (PRIMARY) WHERE ID >= $from AND post_type = 'post'
  ORDER BY ID LIMIT 1);
UPDATE wp_posts SET post_modified_gmt = UTC_TIMESTAMP() - INTERVAL 1 HOUR + INTERVAL $1 SECOND,
  post_modified = NOW() - INTERVAL 1 HOUR WHERE ID = @id;
INSERT INTO wp_posts (post_author, post_date, post_date_gmt, post_content, post_title, post_excerpt,
  post_status, post_name, to_ping, pinged, post_modified, post_modified_gmt, post_content_filtered,
  post_parent, guid, post_type)
VALUES (1, NOW(), UTC_TIMESTAMP(), '', 'revision', '', 'inherit', CONCAT(@id, '-revision-v1'), '', '',
  NOW(), UTC_TIMESTAMP(), '', @id, '', 'revision');
SQL
}
read -r N_FIRST N_LAST < <(echo "SELECT MIN(ID), MAX(ID) FROM wp_posts WHERE post_type = 'post'" | sql "$WDB")
# The index's ETag: it moves when a file's does (the index dates each file by its last change),
# one request where every file's ETag is 201 at 10M posts (about a second a round).
index_etag() {
  "${CURL[@]}" -I "$DIRECT/sitemap_index.xml" | tr -d '\r' | awk 'tolower($1) == "etag:" { print $2 }'
}
# shown_after N: edit N alone, then seconds until the index's ETag moves and some file's ETag
# with it ("never" after 30 s).
shown_after() {
  local before files t
  before=$(index_etag)
  files=$(etags)
  edit_post "$1"
  t=$(now)
  for _ in $(seq 1 600); do
    if [ "$(index_etag)" != "$before" ]; then
      local shown
      shown=$(since "$t")
      [ "$(etags)" != "$files" ] && { echo "$shown"; return; }
    fi
    sleep 0.05
  done
  echo never
}
sleep 2
single_edits=
stream_cpu=-
stream_user_cpu=-
if [ "$EDITS" -gt 0 ]; then
  for n in 1 2 3 4 5; do
    single_edits="$single_edits $(shown_after $((1000 + n)))"
    sleep 1
  done
  cpu_a=$(server_cpu)
  ucpu_a=$(user_cpu)
  edits=()
  for n in $(seq 1 "$EDITS"); do
    edit_post "$n" &
    edits+=($!)
    sleep 1
  done
  wait "${edits[@]}"
  sleep 20
  stream_cpu=$(awk -v a="$cpu_a" -v b="$(server_cpu)" 'BEGIN { printf "%.2f", b - a }')
  stream_user_cpu=$(awk -v a="$ucpu_a" -v b="$(user_cpu)" 'BEGIN { printf "%.2f", b - a }')
fi

# Idle: what refreshes cost the database while nothing changes (three periods, after one to settle).
sleep "$REFRESH"
cpu_before=$(user_cpu)
server_before=$(server_cpu)
sleep $((REFRESH * 3))
cpu_after=$(user_cpu)
server_after=$(server_cpu)
idle_cpu=$(awk -v a="$cpu_before" -v b="$cpu_after" 'BEGIN { printf "%.3f", (b - a) / 3 }')
idle_server=$(awk -v a="$server_before" -v b="$server_after" 'BEGIN { printf "%.3f", (b - a) / 3 }')
watching=$(grep -o 'sitemap_wp: [^"]*' "$TMP/sitemapd.log" | head -n 1)
timeouts=$(grep -c -i 'max_statement_time\|execution was interrupted' "$TMP/sitemapd.log")
rss=$(awk '/VmHWM/ { print $2 / 1024 }' "/proc/$SITEMAPD_PID/status")

# ---------------------------------------------------------------- WordPress core's own sitemaps

wp_time() { "${CURL[@]}" -o "$TMP/wp.xml" -w '%{time_total} %{http_code}' "$1"; }
read -r wp_index_s _ < <(wp_time "$SITE/wp-sitemap.xml")
wp_posts_files=$(grep -o 'wp-sitemap-posts-post-[0-9]*\.xml' "$TMP/wp.xml" | sort -u | wc -l)
read -r wp_first_s _ < <(wp_time "$SITE/wp-sitemap-posts-post-1.xml")
read -r wp_last_s wp_last_status < <(wp_time "$SITE/wp-sitemap-posts-post-$wp_posts_files.xml")
wp_full="(WP_FULL=1 to crawl)"
if [ "${WP_FULL:-}" = 1 ]; then
  t=$(now)
  wp_bytes=0
  for n in $(seq 1 "$wp_posts_files"); do
    b=$("${CURL[@]}" -o /dev/null -w '%{size_download}' "$SITE/wp-sitemap-posts-post-$n.xml")
    wp_bytes=$((wp_bytes + b))
  done
  wp_full="$(since "$t") s, $wp_bytes bytes"
fi

cat <<EOF

WordPress ($POSTS posts, $(echo 'SELECT VERSION()' | sql), buffer pool $(echo 'SELECT @@innodb_buffer_pool_size DIV 1048576' | sql) MiB), the guide's view sitemap_wp
sitemapd                                      $($BIN --version 2>/dev/null || echo sitemapd)
  index answers 200 after first start         $first_index s
  files                                       ${#FILES[@]}
  cold crawl, gzip                            $cold_s s, $cold_503 x 503, $cold_bytes bytes
  second crawl                                $warm_s s, $warm_503 x 503
  a post updated through SQL shows after      ${shown:-never} s (SITEMAP_REFRESH_SECS=$REFRESH)
  five single edits shown after (s)          $single_edits
  $EDITS edits, one a second: server CPU        $stream_cpu s (sitemapd's statements $stream_user_cpu s), stream and 20 s after
  database CPU per idle refresh period        server $idle_server s, sitemapd's statements $idle_cpu s
  how the view is followed                    ${watching:-?}
  statement timeouts in the log               $timeouts
  peak RSS                                    $rss MiB
WordPress core's sitemaps
  /wp-sitemap.xml                             $wp_index_s s
  posts files                                 $wp_posts_files
  first posts page                            $wp_first_s s
  last posts page                             $wp_last_s s ($wp_last_status)
  every posts page                            $wp_full
EOF
[ -n "$shown" ] && [ "$timeouts" = 0 ] && [ "$cold_503" = 0 ] && [[ "$single_edits" != *never* ]]
