#!/usr/bin/env bash
# Checks the user guide's WordPress views (docs/guide.md) against a real WordPress: Debian's `wordpress` package run
# by its own php-fpm behind its own nginx, on a fresh database, with content made through
# WordPress's own PHP functions (scripts/lib/wordpress/site.php: posts, a percent-encoded slug,
# pages nested two levels, a static front page and a posts page, categories nested two levels,
# drafts, private, password-protected, trashed and scheduled posts). nginx includes the shipped
# deploy/nginx/sitemapd-locations.conf, so the sitemap paths go to sitemapd and the rest to
# WordPress, as on a real site. sitemapd serves the views exactly as docs/guide.md writes them:
# first the single view `sitemap_wp`, then the four group views through the guide's
# SITEMAP_GROUPS line. For each state of the site (static front page, latest posts on the home
# page, and after live edits, trashes and publishes made through PHP) it checks that
#   - sitemapd lists the same URLs as WordPress's core sitemaps (/wp-sitemap.xml) for the kinds
#     the views cover (posts, pages, the home page, categories; what else WordPress lists, author
#     archives and tags, is printed as left out on purpose);
#   - every URL sitemapd lists answers 200 through nginx and WordPress, without a redirect;
#   - every lastmod is what WordPress's PHP says (post_modified_gmt; the home page and each
#     category dated by the latest modified post they show);
#   - no draft, private, password-protected, trashed or scheduled post is listed by either;
#   - a change made in WordPress shows in sitemapd's files within 20 s.
#
# Usage: scripts/wordpress-check.sh
#   SITEMAPD_BIN=path  use this binary instead of target/release/sitemapd (built when missing)
#   KEEP_TMP=1         keep the temporary directory and both databases for inspection
#   MYSQL_HOST=127.0.0.1 MYSQL_PORT=3306  the MariaDB/MySQL server (user root, no password)
# Installs wordpress, php-fpm, php-mysql, php-xml, nginx-light and mariadb-client with apt-get when
# they are missing (needs root or sudo); the MariaDB server must be running already. Writes nothing
# outside its temporary directory and its two databases, which it drops at the end. Only
# 127.0.0.1 is used. Prints a PASS/FAIL line per check, then "N passed, N failed"; exits 1 when
# anything failed.
set -uo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
FRONT=wordpress

# shellcheck source=lib/checks.sh
. "$ROOT/scripts/lib/checks.sh"
# shellcheck source=lib/nginx.sh
. "$ROOT/scripts/lib/nginx.sh"
# shellcheck source=lib/wordpress/setup.sh
. "$ROOT/scripts/lib/wordpress/setup.sh"

# ---------------------------------------------------------------- temp dir, processes, databases

TMP=$(mktemp -d "${TMPDIR:-/tmp}/wordpress-check.XXXXXX") || {
  echo "FAIL mktemp"
  exit 1
}
# nginx's workers drop to an unprivileged user when it runs as root: they must reach $TMP.
chmod 755 "$TMP"
SITEMAPD_PID=
NGINX_PID=
FPM_PID=
MYSQL_HOST=${MYSQL_HOST:-127.0.0.1}
MYSQL_PORT=${MYSQL_PORT:-3306}
WDB=wpcheck_wp_$$
SDB=wpcheck_sitemapd_$$
DBS_MADE=

sql() { # sql [DATABASE]: runs stdin on the server, tab-separated output without headers
  timeout 60 mysql --protocol=tcp -h "$MYSQL_HOST" -P "$MYSQL_PORT" -u root --default-character-set=utf8mb4 -N -B "$@"
}
cleanup() {
  stop_pid "$NGINX_PID"
  stop_pid "$SITEMAPD_PID"
  stop_pid "$FPM_PID"
  if [ "${KEEP_TMP:-}" = 1 ]; then
    say "kept $TMP and the databases $WDB, $SDB"
  else
    [ -n "$DBS_MADE" ] && echo "DROP DATABASE IF EXISTS $WDB; DROP DATABASE IF EXISTS $SDB;" | sql
    rm -rf "$TMP"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- tools
wp_tools

# ---------------------------------------------------------------- ports, curl

SP=$(free_port) || abort "no free port for sitemapd"
FP=$(free_port "$SP") || abort "no free port for nginx"
SITE=http://127.0.0.1:$FP
DIRECT=http://127.0.0.1:$SP
say "WordPress and sitemapd behind nginx on $SITE, sitemapd on $DIRECT, files in $TMP"

# ---------------------------------------------------------------- databases

echo "CREATE DATABASE $WDB CHARACTER SET utf8mb4; CREATE DATABASE $SDB;" | sql || abort "create the databases $WDB and $SDB"
DBS_MADE=1

# ---------------------------------------------------------------- WordPress document root
wp_docroot

out=$(site_php install 2>"$TMP/install.err" && site_php content 2>>"$TMP/install.err")
if [ "$out" = $'installed\ncontent made' ]; then
  pass "WordPress installed, content made through its PHP functions"
else
  cat "$TMP/install.err" >&2
  abort "WordPress install (site.php install, content: '$out')"
fi

# ---------------------------------------------------------------- php-fpm
wp_start_fpm

# ---------------------------------------------------------------- nginx
wp_start_nginx

# ---------------------------------------------------------------- sitemapd and the guide's views
timeout 60 env -i PATH="$PATH" DATABASE_URL="mysql://root@$MYSQL_HOST:$MYSQL_PORT/$SDB" SITEMAP_BASE_URL="$SITE" "$BIN" migrate >"$TMP/migrate.log" 2>&1 ||
  {
    cat "$TMP/migrate.log" >&2
    abort "sitemapd migrate"
  }
VIEWS=(sitemap_wp sitemap_wp_posts sitemap_wp_pages sitemap_wp_categories sitemap_wp_news)
for v in "${VIEWS[@]}"; do
  guide_view "$v" >"$TMP/$v.sql" || abort "docs/guide.md has no view $v"
  if sql "$SDB" <"$TMP/$v.sql" 2>"$TMP/$v.err"; then
    pass "the guide's view $v created over WordPress's tables"
  else
    cat "$TMP/$v.err" >&2
    fail "the guide's view $v created over WordPress's tables"
  fi
done
GROUPS_LINE=$(grep -m 1 '^SITEMAP_GROUPS=' "$GUIDE") || abort "docs/guide.md has no SITEMAP_GROUPS line"

# start_sitemapd NAME=VALUE...: sitemapd serve with this source configuration, behind nginx.
start_sitemapd() {
  stop_pid "$SITEMAPD_PID"
  (
    cd "$TMP" &&
      exec env -i PATH="$PATH" HOME="${HOME:-/tmp}" RUST_LOG="${RUST_LOG:-info}" \
        DATABASE_URL="mysql://root@$MYSQL_HOST:$MYSQL_PORT/$SDB" BIND_ADDR="127.0.0.1:$SP" \
        SITEMAP_BASE_URL="$SITE" SITEMAP_REFRESH_SECS=1 "$@" "$BIN" serve
  ) >>"$TMP/sitemapd.log" 2>&1 &
  SITEMAPD_PID=$!
  if wait_http "$DIRECT/readyz" 60 "$SITEMAPD_PID" && wait_http "$SITE/sitemap_index.xml" 10 "$SITEMAPD_PID"; then
    pass "sitemapd serves $* behind nginx"
  else
    tail -n 20 "$TMP/sitemapd.log" >&2
    abort "sitemapd with $* not ready within 60 s"
  fi
}

# ---------------------------------------------------------------- reading sitemaps

# urlset_pairs FILE: "loc<TAB>lastmod" per <url> of a urlset (lastmod empty when absent)
urlset_pairs() {
  tr -d '\r\n' <"$1" | sed 's#</url>#</url>\n#g' | sed -n 's#.*<url>\(.*\)</url>.*#\1#p' |
    sed -e 's#^.*<loc>\([^<]*\)</loc>.*$#&\t\1#' | while IFS=$'\t' read -r inner loc; do
      lastmod=$(printf '%s' "$inner" | sed -n 's#.*<lastmod>\([^<]*\)</lastmod>.*#\1#p')
      printf '%s\t%s\n' "$(printf '%s' "$loc" | sed -e 's/&amp;/\&/g')" "$lastmod"
    done
}
index_locs() { tr -d '\r\n' <"$1" | grep -o '<loc>[^<]*</loc>' | sed -e 's#</\?loc>##g' -e 's/&amp;/\&/g'; }

# read_index DIR URL EXT HANDLER: fetches the sitemap index at URL (through nginx) to
# DIR/index.xml, then each file it lists, the Nth to DIR/fileN.EXT, and runs HANDLER DIR FILE LOC
# on each (FILE being DIR/fileN, without .EXT; LOC the URL of the file). Prints what did not
# answer 200 and fails at the first.
read_index() {
  local dir=$1 url=$2 ext=$3 handler=$4 s f n=0
  s=$("${CURL[@]}" -o "$dir/index.xml" -w '%{http_code}' "$url" 2>/dev/null)
  [ "$s" = 200 ] || {
    echo "${url##*/}: $s"
    return 1
  }
  for f in $(index_locs "$dir/index.xml"); do
    n=$((n + 1))
    s=$("${CURL[@]}" -o "$dir/file$n.$ext" -w '%{http_code}' "$f" 2>/dev/null)
    [ "$s" = 200 ] || {
      echo "$f: $s"
      return 1
    }
    "$handler" "$dir" "$dir/file$n" "$f"
  done
}

# read_sitemapd DIR: DIR/pairs (loc, lastmod of every URL sitemapd lists, through nginx)
read_sitemapd() {
  local dir=$1
  mkdir -p "$dir"
  : >"$dir/pairs"
  read_index "$dir" "$SITE/sitemap_index.xml" gz sitemapd_file || return 1
  sort -o "$dir/pairs" "$dir/pairs"
  cut -f1 "$dir/pairs" >"$dir/locs"
}
sitemapd_file() { # sitemapd_file DIR FILE LOC: FILE.gz (gzipped or not) to FILE.xml, its URLs to DIR/pairs
  gzip -dc <"$2.gz" >"$2.xml" 2>/dev/null || cp "$2.gz" "$2.xml"
  urlset_pairs "$2.xml" >>"$1/pairs"
}

# read_wordpress DIR: what WordPress's core sitemaps list: DIR/post, DIR/page, DIR/category (the
# URLs of each kind), DIR/other ("sitemap-file URL-count" of the rest)
read_wordpress() {
  local dir=$1
  mkdir -p "$dir"
  : >"$dir/post"
  : >"$dir/page"
  : >"$dir/category"
  : >"$dir/other"
  read_index "$dir" "$SITE/wp-sitemap.xml" xml wordpress_file
}
wordpress_file() { # wordpress_file DIR FILE LOC: the URLs of FILE.xml to DIR/KIND, or counted in DIR/other
  local dir=$1 file=$2.xml f=$3 kind
  case $f in
    */wp-sitemap-posts-post-*.xml) kind=post ;;
    */wp-sitemap-posts-page-*.xml) kind=page ;;
    */wp-sitemap-taxonomies-category-*.xml) kind=category ;;
    *) kind= ;;
  esac
  if [ -n "$kind" ]; then
    urlset_pairs "$file" | cut -f1 >>"$dir/$kind"
  else
    echo "${f##*/} $(urlset_pairs "$file" | wc -l)" >>"$dir/other"
  fi
}

# agree DIR KIND...: sitemapd lists what WordPress's core sitemaps list of these kinds (post,
# page, category), password-protected posts and pages aside, with the lastmods WordPress's PHP
# gives. Leaves DIR/s/locs, DIR/s/pairs (sitemapd), DIR/w/locs (WordPress), DIR/expected_pairs,
# DIR/expect (site.php expect), DIR/left_out (what WordPress lists beyond these).
agree() {
  local dir=$1 kind
  shift
  rm -rf "$dir"
  mkdir -p "$dir"
  read_sitemapd "$dir/s" >"$dir/s.err" || return 1
  read_wordpress "$dir/w" >"$dir/w.err" || return 1
  site_php expect >"$dir/expect" 2>"$dir/expect.err" || return 1
  awk -F'\t' '$1 == "protected" { print $2 }' "$dir/expect" | sort >"$dir/protected"
  cp "$dir/w/other" "$dir/left_out"
  : >"$dir/w/covered"
  for kind in post page category; do
    if [[ " $* " == *" $kind "* ]]; then
      cat "$dir/w/$kind" >>"$dir/w/covered"
    elif [ -s "$dir/w/$kind" ]; then
      echo "$kind sitemap $(wc -l <"$dir/w/$kind")" >>"$dir/left_out"
    fi
  done
  sort -u "$dir/w/covered" | comm -23 - "$dir/protected" >"$dir/w/locs"
  sort -u "$dir/w/covered" | comm -12 - "$dir/protected" >"$dir/w/protected"
  [ -s "$dir/w/protected" ] && echo "password-protected $(wc -l <"$dir/w/protected")" >>"$dir/left_out"
  awk -F'\t' -v kinds=" $* home " '$1 == "url" && index(kinds, " " $2 " ") { print $3 "\t" $4 }' "$dir/expect" |
    sort >"$dir/expected_pairs"
  cmp -s "$dir/s/locs" "$dir/w/locs" && cmp -s "$dir/s/pairs" "$dir/expected_pairs"
}

# ---------------------------------------------------------------- the checks of one state

LEFT_OUT_SAID=
KINDS=()
compare_state() { # compare_state LABEL TAG: every check, on the site as it is now
  local label=$1 dir=$TMP/state-$2 url s hidden status slug id lists
  agree "$dir" "${KINDS[@]}"
  if [ -s "$dir/s.err" ] || [ -s "$dir/w.err" ] || [ -s "$dir/expect.err" ]; then
    cat "$dir/s.err" "$dir/w.err" "$dir/expect.err" >&2
    fail "$label: sitemapd's files, WordPress's core sitemaps and WordPress's PHP read"
    return
  fi
  check "$label: sitemapd lists URLs ($(wc -l <"$dir/s/locs") of them)" test -s "$dir/s/locs"
  if cmp -s "$dir/s/locs" "$dir/w/locs"; then
    pass "$label: sitemapd lists the same $(wc -l <"$dir/s/locs") URLs as WordPress's core sitemaps (${KINDS[*]})"
  else
    fail "$label: sitemapd lists the same URLs as WordPress's core sitemaps (${KINDS[*]}; < only sitemapd, > only WordPress)"
    diff "$dir/s/locs" "$dir/w/locs" | grep '^[<>]' | sed 's/^/    /'
  fi
  if [ "$LEFT_OUT_SAID" != "${KINDS[*]}" ]; then
    LEFT_OUT_SAID=${KINDS[*]}
    say "what WordPress's core sitemaps list beyond these views, left out on purpose (sitemap, URLs): $(paste -sd, "$dir/left_out" | sed 's/,/, /g')"
  fi
  : >"$dir/bad"
  while IFS= read -r url; do
    s=$("${CURL[@]}" -o /dev/null -w '%{http_code} %{redirect_url}' "$url" 2>/dev/null)
    [ "$s" = "200 " ] || echo "    $url: $s" >>"$dir/bad"
  done <"$dir/s/locs"
  if [ -s "$dir/bad" ]; then
    fail "$label: every URL sitemapd lists answers 200 through nginx and WordPress, no redirect"
    cat "$dir/bad"
  else
    pass "$label: every URL sitemapd lists answers 200 through nginx and WordPress, no redirect"
  fi
  if cmp -s "$dir/s/pairs" "$dir/expected_pairs"; then
    pass "$label: every lastmod is what WordPress's PHP says (post_modified_gmt; home and categories by their latest post)"
  else
    fail "$label: every lastmod is what WordPress's PHP says (< sitemapd, > WordPress's PHP)"
    diff "$dir/s/pairs" "$dir/expected_pairs" | grep '^[<>]' | sed 's/^/    /'
  fi
  # Nothing unpublished is listed; password-protected posts by sitemapd only (WordPress lists them).
  : >"$dir/bad"
  while IFS=$'\t' read -r _ status slug id; do
    lists=$(cat "$dir/s/locs")
    [ "$status" = password ] || lists=$(cat "$dir/s/locs" "$dir/w/post" "$dir/w/page" "$dir/w/category")
    if [ -n "$slug" ] && grep -q -- "/$slug/" <<<"$lists"; then
      echo "    $status post $id ($slug) is listed: $(grep -- "/$slug/" <<<"$lists" | sort -u | tr '\n' ' ')" >>"$dir/bad"
    fi
    if grep -qE -- "[?&](p|page_id)=$id(&|\$)" <<<"$lists"; then
      echo "    $status post $id is listed by its id" >>"$dir/bad"
    fi
  done < <(awk -F'\t' '$1 == "hidden"' "$dir/expect")
  hidden=$(awk -F'\t' '$1 == "hidden" { print $2 }' "$dir/expect" | sort | uniq -c | awk '{ printf "%s%d %s", sep, $1, $2; sep = ", " }')
  if [ -s "$dir/bad" ]; then
    fail "$label: nothing unpublished is listed ($hidden; password-protected by sitemapd only)"
    cat "$dir/bad"
  else
    pass "$label: nothing unpublished is listed ($hidden; password-protected by sitemapd only)"
  fi
}

# live LABEL COMMAND: a change made through WordPress's PHP, then sitemapd agrees within 20 s
live() {
  local label=$1 out start
  shift
  out=$(site_php "$@" 2>"$TMP/live.err") || {
    cat "$TMP/live.err" >&2
    fail "$label: site.php $* ($out)"
    return
  }
  start=$(date +%s)
  while ! agree "$TMP/poll" "${KINDS[@]}"; do
    if [ $(($(date +%s) - start)) -ge 20 ]; then
      fail "$label ($out): sitemapd agrees with WordPress again within 20 s"
      return
    fi
    sleep 0.5
  done
  pass "$label ($out): sitemapd agrees with WordPress again after $(($(date +%s) - start)) s"
}

# ---------------------------------------------------------------- (a) the single view

start_sitemapd SITEMAP_SOURCE=sitemap_wp
KINDS=(post page)
compare_state "sitemap_wp, static front page" a1
live "sitemap_wp, live: old post edited, post trashed, draft published (wp_publish_post)" edit1
compare_state "sitemap_wp, after the edits" a2
live "sitemap_wp, live: the home page lists the latest posts" front posts
compare_state "sitemap_wp, latest posts on the home page" a3

# ---------------------------------------------------------------- (b) the group views

start_sitemapd "$GROUPS_LINE"
KINDS=(post page category)
compare_state "groups, latest posts on the home page" b1
s=$("${CURL[@]}" "$SITE/sitemap_index.xml" 2>/dev/null | index_locs /dev/stdin | sed 's#.*/##' | tr '\n' ' ')
check "groups: the index lists each group's files ($s)" \
  test "$s" = "sitemap-posts-1.xml.gz sitemap-pages-1.xml.gz sitemap-categories-1.xml.gz "
live "groups, live: protected post and a page edited, post trashed, draft published (editor)" edit2
compare_state "groups, after the edits" b2
live "groups, live: the home page is a static page again" front page
compare_state "groups, static front page" b3
# The news view, loosely: its articles are published posts the posts view lists too.
news_bad=$(echo "SELECT n.loc FROM sitemap_wp_news n LEFT JOIN sitemap_wp_posts p ON p.loc = n.loc WHERE p.id IS NULL" | sql "$SDB" 2>&1)
news_n=$(echo "SELECT COUNT(*) FROM sitemap_wp_news" | sql "$SDB" 2>&1)
news_ok() { [ -z "$news_bad" ] && [[ "$news_n" =~ ^[0-9]+$ ]]; }
check "sitemap_wp_news: its $news_n articles are posts the posts view lists${news_bad:+ (not: $news_bad)}" news_ok

# (503s while a file is dated anew after a change are expected; failed sweeps and errors are not.)
grep -E 'sweep failed| ERROR |"level":"ERROR"' "$TMP/sitemapd.log" | head -n 5 | sed 's/^/    sitemapd: /' >&2
summary
[ "$failed" = 0 ]
