#!/usr/bin/env bash
# Checks the user guide's MediaWiki views (docs/guide.md) against a real MediaWiki, on MariaDB and
# on PostgreSQL: Debian's `mediawiki` package installed by its own maintenance/install.php on a
# fresh database, run by its own php-fpm behind its own nginx with short URLs /wiki/$1, with pages
# made through MediaWiki's own PHP (scripts/lib/mediawiki/site.php: titles holding every
# character a title may hold, beyond ASCII too, in seven namespaces, redirects, __NOINDEX__
# pages). nginx includes the shipped deploy/nginx/sitemapd-locations.conf, so the sitemap paths go
# to sitemapd and the rest to MediaWiki, as on a real site. sitemapd serves the guide's view for
# that database exactly as docs/guide.md writes it, with the guide's one-line change per namespace
# for the project namespace, a content namespace and one named beyond ASCII. On each database:
#   - `sitemapd migrate` watches the view's tables, `page` logging keys (the view's ids);
#   - sitemapd lists the same URLs, with the same lastmods, as MediaWiki's generateSitemap.php
#     (--skip-redirects, $wgSitemapNamespaces the same namespaces);
#   - every URL and lastmod is byte for byte what MediaWiki's PHP says: Title::getFullURL() and
#     page_touched, for each page of those namespaces that is no redirect and no __NOINDEX__ page;
#   - nothing from another namespace, no redirect, no __NOINDEX__ page is listed;
#   - every URL sitemapd lists answers 200 through nginx and MediaWiki, without a redirect;
#   - an edit, a new page, a move (leaving a redirect) and a deletion made through MediaWiki's PHP
#     show within SITEMAP_REFRESH_SECS (REFRESH, default 5) of the change's end;
#   - then all of the above again.
#
# Usage: scripts/mediawiki-check.sh [mariadb] [postgres]    (both when none is named)
#   SITEMAPD_BIN=path  use this binary instead of target/release/sitemapd (built when missing)
#   KEEP_TMP=1         keep the temporary directory and the databases for inspection
#   REFRESH=5          SITEMAP_REFRESH_SECS, and the deadline of each live change
#   MYSQL_HOST=127.0.0.1 MYSQL_PORT=3306  the MariaDB/MySQL server (user root, no password)
#   PG_HOST=127.0.0.1 PG_PORT=5432        the PostgreSQL server (user postgres, trust)
# Installs mediawiki, php-fpm, php-mysql, php-pgsql, php-xml, php-mbstring, php-intl, nginx-light
# and the database clients with apt-get when they are missing (needs root or sudo); both database
# servers must be running already. Writes nothing outside its temporary directory and its
# databases, which it drops at the end. Only 127.0.0.1 is used. Prints a PASS/FAIL line per check,
# then "N passed, N failed"; exits 1 when anything failed.
set -uo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
FRONT=mediawiki

# shellcheck source=lib/checks.sh
. "$ROOT/scripts/lib/checks.sh"
# shellcheck source=lib/nginx.sh
. "$ROOT/scripts/lib/nginx.sh"
# shellcheck source=lib/mediawiki/setup.sh
. "$ROOT/scripts/lib/mediawiki/setup.sh"

BACKENDS=("$@")
[ "${#BACKENDS[@]}" -gt 0 ] || BACKENDS=(mariadb postgres)
for b in "${BACKENDS[@]}"; do
  case $b in mariadb | postgres) ;; *)
    echo "usage: scripts/mediawiki-check.sh [mariadb] [postgres]" >&2
    exit 2
    ;;
  esac
done

# ---------------------------------------------------------------- temp dir, processes, databases

TMP=$(mktemp -d "${TMPDIR:-/tmp}/mediawiki-check.XXXXXX") || {
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
PG_HOST=${PG_HOST:-127.0.0.1}
PG_PORT=${PG_PORT:-5432}
REFRESH=${REFRESH:-5}
MW_WDB=mwcheck_wiki_$$
MW_SDB=mwcheck_sitemapd_$$
PGDB=mwcheck_$$
MADE_MARIADB=
MADE_PG=

sql() { # sql [DATABASE]: runs stdin on the MariaDB server, tab-separated output without headers
  timeout 60 mysql --protocol=tcp -h "$MYSQL_HOST" -P "$MYSQL_PORT" -u root --default-character-set=utf8mb4 -N -B "$@"
}
stop_all() {
  stop_pid "$NGINX_PID"
  stop_pid "$SITEMAPD_PID"
  stop_pid "$FPM_PID"
  NGINX_PID=
  SITEMAPD_PID=
  FPM_PID=
}
drop_databases() {
  [ -n "$MADE_MARIADB" ] && echo "DROP DATABASE IF EXISTS $MW_WDB; DROP DATABASE IF EXISTS $MW_SDB;" | sql
  [ -n "$MADE_PG" ] && echo "DROP DATABASE IF EXISTS $PGDB WITH (FORCE)" | psql_do postgres
  MADE_MARIADB=
  MADE_PG=
}
cleanup() {
  stop_all
  if [ "${KEEP_TMP:-}" = 1 ]; then
    say "kept $TMP and the databases ${MADE_MARIADB:+$MW_WDB $MW_SDB }${MADE_PG:+$PGDB}"
  else
    drop_databases
    rm -rf "$TMP"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- tools, ports

mw_tools
SP=$(free_port) || abort "no free port for sitemapd"
FP=$(free_port "$SP") || abort "no free port for nginx"
SITE=http://127.0.0.1:$FP
DIRECT=http://127.0.0.1:$SP
say "MediaWiki and sitemapd behind nginx on $SITE, sitemapd on $DIRECT, files in $TMP"

# ---------------------------------------------------------------- reading sitemaps

# urlset_pairs FILE: "loc<TAB>lastmod" per <url> of a urlset (lastmod empty when absent), the
# entities of a loc decoded, a lastmod's Z written +00:00
urlset_pairs() {
  tr -d '\r\n\t' <"$1" | sed 's#</url>#</url>\n#g' | sed -n 's#.*<url>\(.*\)</url>.*#\1#p' |
    sed -e 's#^.*<loc>\([^<]*\)</loc>.*$#&\t\1#' | while IFS=$'\t' read -r inner loc; do
      lastmod=$(printf '%s' "$inner" | sed -n 's#.*<lastmod>\([^<]*\)</lastmod>.*#\1#p' | sed 's/Z$/+00:00/')
      printf '%s\t%s\n' "$(printf '%s' "$loc" | sed -e 's/&quot;/"/g' -e "s/&#0*39;/'/g" -e "s/&apos;/'/g" \
        -e 's/&lt;/</g' -e 's/&gt;/>/g' -e 's/&amp;/\&/g')" "$lastmod"
    done
}
index_locs() { tr -d '\r\n' <"$1" | grep -o '<loc>[^<]*</loc>' | sed -e 's#</\?loc>##g' -e 's/&amp;/\&/g'; }

# read_sitemapd DIR: DIR/pairs (loc, lastmod of every URL sitemapd lists, through nginx, sorted)
# and DIR/locs; prints what did not answer 200 and fails at the first.
read_sitemapd() {
  local dir=$1 s f n=0
  mkdir -p "$dir"
  : >"$dir/pairs"
  s=$("${CURL[@]}" -o "$dir/index.xml" -w '%{http_code}' "$SITE/sitemap_index.xml" 2>/dev/null)
  [ "$s" = 200 ] || {
    echo "sitemap_index.xml: $s"
    return 1
  }
  for f in $(index_locs "$dir/index.xml"); do
    n=$((n + 1))
    s=$("${CURL[@]}" -o "$dir/file$n.gz" -w '%{http_code}' "$f" 2>/dev/null)
    [ "$s" = 200 ] || {
      echo "$f: $s"
      return 1
    }
    gzip -dc <"$dir/file$n.gz" >"$dir/file$n.xml" 2>/dev/null || cp "$dir/file$n.gz" "$dir/file$n.xml"
    urlset_pairs "$dir/file$n.xml" >>"$dir/pairs"
  done
  sort -o "$dir/pairs" "$dir/pairs"
  cut -f1 "$dir/pairs" >"$dir/locs"
}

# read_generator DIR: MediaWiki's maintenance/generateSitemap.php run now (--skip-redirects,
# uncompressed, $wgSitemapNamespaces from the check's settings): DIR/pairs and DIR/locs as above.
read_generator() {
  local dir=$1 f
  mkdir -p "$dir/out"
  mw_php "$CONF" maintenance/generateSitemap.php --fspath "$dir/out" --server "$SITE" \
    --skip-redirects --compress no >"$dir/generate.log" 2>&1 || {
    tail -n 5 "$dir/generate.log"
    return 1
  }
  : >"$dir/pairs"
  for f in "$dir"/out/sitemap-*NS_*.xml; do
    [ -f "$f" ] && urlset_pairs "$f" >>"$dir/pairs"
  done
  sort -o "$dir/pairs" "$dir/pairs"
  cut -f1 "$dir/pairs" >"$dir/locs"
}

# read_expected DIR: what MediaWiki's PHP says (site.php expect): DIR/pairs, DIR/locs.
read_expected() {
  local dir=$1
  mkdir -p "$dir"
  site_php "$CONF" expect "$MW_NS_LIST" 2>"$dir/expect.err" | sort >"$dir/pairs" || {
    cat "$dir/expect.err"
    return 1
  }
  cut -f1 "$dir/pairs" >"$dir/locs"
}

# ---------------------------------------------------------------- the checks of one state

compare_state() { # compare_state LABEL TAG: every check, on the wiki as it is now
  local label="$BACKEND: $1" dir=$TMP/$BACKEND-state-$2 url s n
  rm -rf "$dir"
  mkdir -p "$dir"
  if ! { read_sitemapd "$dir/s" && read_generator "$dir/g" && read_expected "$dir/e"; } >"$dir/read.err" 2>&1; then
    cat "$dir/read.err" >&2
    fail "$label: sitemapd's files, generateSitemap.php's and MediaWiki's PHP read"
    return
  fi
  n=$(wc -l <"$dir/s/locs")
  check "$label: sitemapd lists URLs ($n of them)" test -s "$dir/s/locs"
  if cmp -s "$dir/s/pairs" "$dir/g/pairs"; then
    pass "$label: sitemapd lists the same $n URLs with the same lastmods as generateSitemap.php --skip-redirects ($(find "$dir/g/out" -name 'sitemap-*NS_*.xml' | wc -l) files)"
  else
    fail "$label: sitemapd lists the same URLs and lastmods as generateSitemap.php (< only sitemapd, > only generateSitemap.php)"
    diff "$dir/s/pairs" "$dir/g/pairs" | grep '^[<>]' | sed 's/^/    /'
  fi
  if cmp -s "$dir/s/pairs" "$dir/e/pairs"; then
    pass "$label: every URL is byte for byte Title::getFullURL(), every lastmod page_touched ($(grep -c '%' "$dir/s/locs") URLs with escapes)"
  else
    fail "$label: every URL is byte for byte Title::getFullURL(), every lastmod page_touched (< sitemapd, > MediaWiki's PHP)"
    diff "$dir/s/pairs" "$dir/e/pairs" | grep '^[<>]' | sed 's/^/    /'
  fi
  # What must never be listed, whatever the two others say.
  s=$(grep -E "/wiki/(Talk|User|Help|Recipe_talk|Check_wiki_talk):|Redirect|Hidden" "$dir/s/locs")
  if [ -z "$s" ]; then
    pass "$label: no talk, User or Help page, no redirect, no __NOINDEX__ page is listed"
  else
    fail "$label: no talk, User or Help page, no redirect, no __NOINDEX__ page is listed: $(echo "$s" | tr '\n' ' ')"
  fi
  : >"$dir/bad"
  while IFS= read -r url; do
    s=$("${CURL[@]}" -o /dev/null -w '%{http_code} %{redirect_url}' "$url" 2>/dev/null)
    [ "$s" = "200 " ] || echo "    $url: $s" >>"$dir/bad"
  done <"$dir/s/locs"
  if [ -s "$dir/bad" ]; then
    fail "$label: every URL sitemapd lists answers 200 through nginx and MediaWiki, no redirect"
    cat "$dir/bad"
  else
    pass "$label: every URL sitemapd lists answers 200 through nginx and MediaWiki, no redirect"
  fi
}

# live STEP: a change made through MediaWiki's PHP, then sitemapd lists what MediaWiki's PHP says
# within REFRESH seconds of the change's end.
live() {
  local step=$1 out start dir=$TMP/$BACKEND-live-$1
  mkdir -p "$dir"
  out=$(site_php "$CONF" live "$step" 2>"$dir/live.err") || {
    cat "$dir/live.err" >&2
    fail "$BACKEND, live $step: site.php live $step ($out)"
    return
  }
  start=$(date +%s.%N)
  read_expected "$dir/e" >"$dir/e.err" 2>&1 || {
    cat "$dir/e.err" >&2
    fail "$BACKEND, live $step: MediaWiki's PHP read"
    return
  }
  while :; do
    rm -rf "$dir/s"
    read_sitemapd "$dir/s" >/dev/null 2>&1 && cmp -s "$dir/s/pairs" "$dir/e/pairs" && break
    if awk -v a="$start" -v b="$(date +%s.%N)" -v r="$REFRESH" 'BEGIN { exit !(b - a > r) }'; then
      fail "$BACKEND, live $step ($out): sitemapd lists what MediaWiki says within SITEMAP_REFRESH_SECS=$REFRESH s (< sitemapd, > MediaWiki)"
      diff "$dir/s/pairs" "$dir/e/pairs" 2>&1 | grep '^[<>]' | sed 's/^/    /'
      return
    fi
    sleep 0.2
  done
  pass "$BACKEND, live $step ($out): sitemapd lists what MediaWiki says after $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s (SITEMAP_REFRESH_SECS=$REFRESH)"
}

# ---------------------------------------------------------------- one database

run_backend() {
  BACKEND=$1
  local dir=$TMP/$BACKEND out view_err
  if [ "$BACKEND" = mariadb ]; then
    echo "CREATE DATABASE $MW_WDB; CREATE DATABASE $MW_SDB;" | sql || abort "create the databases $MW_WDB and $MW_SDB"
    MADE_MARIADB=1
    DBURL="mysql://root@$MYSQL_HOST:$MYSQL_PORT/$MW_SDB"
    MW_DBUSER=root mw_install "$dir" mysql "$MW_WDB"
  else
    MADE_PG=1
    DBURL="postgres://postgres@$PG_HOST:$PG_PORT/$PGDB"
    MW_DBUSER=postgres mw_install "$dir" postgres "$PGDB"
  fi
  local installed=$?
  CONF=$dir/LocalSettings.php
  if [ "$installed" = 0 ]; then
    pass "$BACKEND: MediaWiki installed by its maintenance/install.php"
  else
    tail -n 20 "$dir/install.log" >&2
    abort "$BACKEND: MediaWiki's maintenance/install.php"
  fi
  out=$(site_php "$CONF" content 2>"$dir/content.err")
  if [ "$out" = "content made" ]; then
    pass "$BACKEND: pages, redirects and __NOINDEX__ pages made through MediaWiki's PHP"
  else
    tail -n 20 "$dir/content.err" >&2
    abort "$BACKEND: content through site.php ('$out')"
  fi
  mw_start_fpm "$CONF"
  mw_start_nginx

  # sitemapd's tables, the guide's view, then migrate again to watch the view's tables.
  timeout 60 env -i PATH="$PATH" DATABASE_URL="$DBURL" SITEMAP_BASE_URL="$SITE" "$BIN" migrate >"$dir/migrate.log" 2>&1 || {
    cat "$dir/migrate.log" >&2
    abort "$BACKEND: sitemapd migrate"
  }
  guide_mw_view "$BACKEND" >"$dir/view.sql" || abort "docs/guide.md has no MediaWiki view for $BACKEND"
  if [ "$BACKEND" = mariadb ]; then
    sql "$MW_SDB" <"$dir/view.sql" 2>"$dir/view.err"
  else
    psql_do "$PGDB" <"$dir/view.sql" 2>"$dir/view.err"
  fi
  view_err=$?
  if [ "$view_err" = 0 ]; then
    pass "$BACKEND: the guide's view sitemap_mw created over MediaWiki's tables, with a line per namespace added"
  else
    cat "$dir/view.err" >&2
    abort "$BACKEND: the guide's view sitemap_mw created over MediaWiki's tables"
  fi
  timeout 60 env -i PATH="$PATH" DATABASE_URL="$DBURL" SITEMAP_BASE_URL="$SITE" SITEMAP_SOURCE=sitemap_mw "$BIN" migrate >"$dir/migrate2.log" 2>&1 || {
    cat "$dir/migrate2.log" >&2
    abort "$BACKEND: sitemapd migrate with SITEMAP_SOURCE=sitemap_mw"
  }
  out=$(grep -m 1 '^sitemap_mw:' "$dir/migrate2.log")
  say "sitemapd migrate: $out"
  local watched=
  if [ "$BACKEND" = mariadb ]; then
    # page's keys are the view's ids; page_props logs "some row changed".
    [[ "$out" == *"watching"*"$MW_WDB.page,"* ]] && [[ "$out" == *"change to $MW_WDB.page_props (whose keys are not the view's ids)"* ]] && watched=1
  else
    [[ "$out" == *"watching"*"page"* ]] && [[ "$out" != *"cannot"* ]] && watched=1
  fi
  check "$BACKEND: sitemapd migrate watches page (logging its keys, the view's ids) and page_props" test -n "$watched"

  (
    cd "$TMP" &&
      exec env -i PATH="$PATH" HOME="${HOME:-/tmp}" RUST_LOG="${RUST_LOG:-info}" \
        DATABASE_URL="$DBURL" BIND_ADDR="127.0.0.1:$SP" SITEMAP_BASE_URL="$SITE" \
        SITEMAP_SOURCE=sitemap_mw SITEMAP_REFRESH_SECS="$REFRESH" "$BIN" serve
  ) >>"$dir/sitemapd.log" 2>&1 &
  SITEMAPD_PID=$!
  if wait_http "$DIRECT/readyz" 60 "$SITEMAPD_PID" && wait_http "$SITE/sitemap_index.xml" 10 "$SITEMAPD_PID"; then
    pass "$BACKEND: sitemapd serves sitemap_mw behind nginx"
  else
    tail -n 20 "$dir/sitemapd.log" >&2
    abort "$BACKEND: sitemapd not ready within 60 s"
  fi

  compare_state "as made" 1
  live edit
  live create
  live move
  live delete
  compare_state "after an edit, a new page, a move and a deletion" 2

  # (503s while a file is dated anew after a change are expected; failed sweeps, errors and a
  # view the database cannot read by id range are not.)
  out=$(grep -E 'sweep failed| ERROR |"level":"ERROR"|cannot read it by id range' "$dir/sitemapd.log" | head -n 5)
  check "$BACKEND: no error and no warning about reading the view by id range in sitemapd's log${out:+ ($out)}" test -z "$out"
  stop_all
  [ "${KEEP_TMP:-}" = 1 ] || drop_databases
}

for b in "${BACKENDS[@]}"; do
  run_backend "$b"
done
summary
[ "$failed" = 0 ]
