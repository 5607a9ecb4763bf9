#!/usr/bin/env bash
# scripts/lib/mediawiki/setup.sh: a real MediaWiki for scripts/mediawiki-check.sh and
# bench/mediawiki.sh: Debian's `mediawiki` package installed by its own maintenance/install.php
# on MariaDB or PostgreSQL, run by its own php-fpm behind its own nginx with short URLs /wiki/$1,
# and the guide's views read from docs/guide.md. The caller sources scripts/lib/checks.sh and
# scripts/lib/nginx.sh first and sets ROOT, TMP, SITE, FP, SP, MYSQL_HOST, MYSQL_PORT, PG_HOST and
# PG_PORT; these functions set NGINX, FPM, MW, NG, PF, FPM_PID and NGINX_PID.
# (Function bodies are not indented: they hold here-documents.)

MW=/usr/share/mediawiki
MW_SITENAME="Check wiki"
# The namespaces the check lists beside the main one, each as the line the guide's views take to
# add it (and $wgSitemapNamespaces for generateSitemap.php): the project namespace (named after
# the wiki), a content namespace and an extra one named beyond ASCII.
MW_NS_LINES=("WHEN 4 THEN 'Check_wiki:'" "WHEN 3000 THEN 'Recipe:'" "WHEN 3002 THEN 'Café:'")
MW_NS_LIST=0,4,3000,3002

# mw_tools: installs what is missing (nginx, php-fpm and the PHP extensions MediaWiki needs on
# both databases, MediaWiki, the database clients) and checks that both servers answer.
mw_tools() {

php_fpm() { # the php-fpm binary (Debian names it php-fpmX.Y)
  local versioned
  versioned=$(find /usr/sbin -maxdepth 1 -name 'php-fpm[0-9]*' 2>/dev/null | sort -V | tail -n 1)
  find_bin php-fpm ${versioned:+"$versioned"}
}
php_has() { command -v php >/dev/null && php -r "exit($1 ? 0 : 1);"; }

# The web server and PHP first: with them installed, `mediawiki` does not pull in Apache's PHP.
missing=()
find_bin nginx >/dev/null || missing+=(nginx-light)
php_fpm >/dev/null || missing+=(php-fpm)
command -v php >/dev/null || missing+=(php-cli)
php_has 'function_exists("mysqli_connect")' || missing+=(php-mysql)
php_has 'function_exists("pg_connect")' || missing+=(php-pgsql)
php_has 'class_exists("DOMDocument")' || missing+=(php-xml)
php_has 'function_exists("mb_strlen")' || missing+=(php-mbstring)
php_has 'class_exists("Normalizer")' || missing+=(php-intl)
command -v mysql >/dev/null || missing+=(mariadb-client)
command -v psql >/dev/null || missing+=(postgresql-client)
if [ "${#missing[@]}" -gt 0 ]; then
  apt_install "${missing[@]}" || abort "could not install ${missing[*]} (apt-get install --no-install-recommends ${missing[*]})"
fi
if [ ! -f "$MW/maintenance/install.php" ]; then
  apt_install php mediawiki || abort "could not install mediawiki (apt-get install --no-install-recommends php mediawiki)"
fi
NGINX=$(find_bin nginx) || abort "nginx is missing (apt-get install nginx-light)"
FPM=$(php_fpm) || abort "php-fpm is missing (apt-get install php-fpm)"
php_has 'function_exists("pg_connect")' || abort "PHP's pgsql is missing (apt-get install php-pgsql)"
need curl gzip mysql psql
echo 'SELECT 1' | sql >/dev/null 2>&1 ||
  abort "no MariaDB/MySQL server answers on $MYSQL_HOST:$MYSQL_PORT as root without a password"
echo 'SELECT 1' | psql_do postgres >/dev/null 2>&1 ||
  abort "no PostgreSQL server answers on $PG_HOST:$PG_PORT as postgres (trust)"
say "using $("$NGINX" -v 2>&1), $("$FPM" -v | head -n 1), MediaWiki $(sed -n "s/^define( 'MW_VERSION', '\(.*\)' );/\1/p" "$MW/includes/Defines.php"), MariaDB $(echo 'SELECT VERSION()' | sql), $(echo 'SHOW server_version' | psql_do postgres | sed 's/^/PostgreSQL /')"

# sitemapd: a copy, so that a build during the run cannot swap the binary.
sitemapd_bin missing
SRC_BIN=$BIN
BIN=$TMP/sitemapd-bin
cp "$SRC_BIN" "$BIN" || abort "copy $SRC_BIN"

}

# psql_do DATABASE: runs stdin on the PostgreSQL server as postgres, unaligned, tuples only.
psql_do() {
  timeout 600 psql -X -q -v ON_ERROR_STOP=1 -h "$PG_HOST" -p "$PG_PORT" -U postgres -d "$1" -A -t -F $'\t'
}

# mw_install DIR DBTYPE DBNAME: MediaWiki's own installer (maintenance/install.php) on a database
# of that name (mysql: on MariaDB, which must exist already; postgres: made by the installer),
# writing DIR/LocalSettings.php, then the settings the checks need appended to it. Prints the
# installer's output to DIR/install.log.
mw_install() {

local dir=$1 type=$2 name=$3 server port
mkdir -p "$dir"
chmod 755 "$dir"
if [ "$type" = mysql ]; then
  server=$MYSQL_HOST:$MYSQL_PORT
  port=()
else
  server=$PG_HOST
  port=(--dbport "$PG_PORT")
fi
(cd "$MW" && timeout 600 php maintenance/install.php --confpath "$dir" --dbtype "$type" \
  --dbserver "$server" "${port[@]}" --dbname "$name" --dbuser "${MW_DBUSER:-root}" --dbpass '' \
  --installdbuser "${MW_DBUSER:-root}" --installdbpass '' --server "$SITE" --scriptpath '' \
  --lang en --skins Vector --pass "check-$$-Admin-password" "$MW_SITENAME" Admin) >"$dir/install.log" 2>&1 ||
  return 1
cat >>"$dir/LocalSettings.php" <<EOF

# scripts/lib/mediawiki/setup.sh: short URLs, the check's namespaces, and nothing run behind
# the check's back (jobs run when site.php says so).
\$wgArticlePath = "/wiki/\$1";
\$wgUsePathInfo = true;
\$wgExtraNamespaces[3000] = 'Recipe';
\$wgExtraNamespaces[3001] = 'Recipe_talk';
\$wgExtraNamespaces[3002] = 'Café';
\$wgExtraNamespaces[3003] = 'Café_talk';
\$wgContentNamespaces = [ NS_MAIN, 3000 ];
# __NOINDEX__ honoured (the robots tag sent) in every namespace, content namespaces too.
\$wgExemptFromUserRobotsControl = [];
\$wgSitemapNamespaces = [ $MW_NS_LIST ];
\$wgJobRunRate = 0;
\$wgMainCacheType = CACHE_NONE;
\$wgEnableUploads = false;
\$wgCacheDirectory = false;
EOF

}

# mw_php CONF ARGS...: PHP's CLI on MediaWiki with CONF as its LocalSettings.php.
mw_php() {
  local conf=$1
  shift
  (cd "$MW" && env MW_CONFIG_FILE="$conf" MW_INSTALL_PATH="$MW" timeout 600 php -d display_errors=stderr "$@")
}
# site_php CONF COMMAND [ARG]: scripts/lib/mediawiki/site.php through MediaWiki's runScript.php
site_php() {
  local conf=$1
  shift
  mw_php "$conf" maintenance/runScript.php "$ROOT/scripts/lib/mediawiki/site.php" "$@"
}

# mw_start_fpm CONF: php-fpm on a socket of its own, MediaWiki reading CONF.
mw_start_fpm() {

PF=$TMP/php
mkdir -p "$PF"
rm -f "$PF/fpm.sock"
fpm_user=()
[ "$(id -u)" = 0 ] && fpm_user=(-R)
{
  cat <<EOF
[global]
pid = $PF/php-fpm.pid
error_log = $PF/php-fpm.log
daemonize = no

[site]
listen = $PF/fpm.sock
listen.mode = 0666
pm = static
pm.max_children = ${FPM_CHILDREN:-4}
catch_workers_output = yes
env[MW_CONFIG_FILE] = $1
env[MW_INSTALL_PATH] = $MW
php_admin_value[error_log] = $PF/php-errors.log
php_admin_flag[log_errors] = on
EOF
  if [ "$(id -u)" = 0 ]; then
    echo "user = root"
    echo "group = root"
  fi
} >"$PF/php-fpm.conf"
fpm_ini=/etc/php/$("$FPM" -v | sed -n '1s/^PHP \([0-9]*\.[0-9]*\).*/\1/p')/fpm/php.ini
fpm_args=(--nodaemonize -y "$PF/php-fpm.conf")
[ -f "$fpm_ini" ] && fpm_args+=(-c "$fpm_ini")
"$FPM" "${fpm_args[@]}" "${fpm_user[@]}" >"$PF/stdout.log" 2>&1 &
FPM_PID=$!
for _ in $(seq 1 40); do
  [ -S "$PF/fpm.sock" ] && break
  kill -0 "$FPM_PID" 2>/dev/null || break
  sleep 0.25
done
[ -S "$PF/fpm.sock" ] || {
  cat "$PF/stdout.log" "$PF/php-fpm.log" >&2 2>/dev/null
  abort "php-fpm did not start within 10 s"
}

}

# mw_start_nginx: nginx serving MediaWiki with short URLs /wiki/$1, the sitemap paths going to
# sitemapd on $SP through the shipped deploy/nginx/sitemapd-locations.conf.
mw_start_nginx() {

nginx_prefix "$TMP/nginx-$FP-$RANDOM" sitemapd-locations.conf sitemapd-proxy.conf
cat >"$NG/conf/fastcgi_params" <<'EOF'
fastcgi_param QUERY_STRING $query_string;
fastcgi_param REQUEST_METHOD $request_method;
fastcgi_param CONTENT_TYPE $content_type;
fastcgi_param CONTENT_LENGTH $content_length;
fastcgi_param REQUEST_URI $request_uri;
fastcgi_param DOCUMENT_URI $document_uri;
fastcgi_param DOCUMENT_ROOT $document_root;
fastcgi_param SERVER_PROTOCOL $server_protocol;
fastcgi_param REQUEST_SCHEME $scheme;
fastcgi_param GATEWAY_INTERFACE CGI/1.1;
fastcgi_param SERVER_SOFTWARE nginx/$nginx_version;
fastcgi_param REMOTE_ADDR $remote_addr;
fastcgi_param REMOTE_PORT $remote_port;
fastcgi_param SERVER_ADDR $server_addr;
fastcgi_param SERVER_PORT $server_port;
fastcgi_param SERVER_NAME $server_name;
fastcgi_param REDIRECT_STATUS 200;
EOF
{
  nginx_main
  echo "daemon off;"
  echo "http {"
  nginx_http
  echo
  nginx_upstream "$SP"
  cat <<EOF

    server {
        listen 127.0.0.1:$FP;
        server_name 127.0.0.1;
        root $MW;
        index index.php;

        include snippets/sitemapd-locations.conf;

        # Short URLs (MediaWiki's manual for nginx): every /wiki/ path is index.php's.
        location ^~ /wiki/ {
            include fastcgi_params;
            fastcgi_param SCRIPT_FILENAME \$document_root/index.php;
            fastcgi_param SCRIPT_NAME /index.php;
            fastcgi_pass unix:$PF/fpm.sock;
        }
        location = / {
            return 301 /wiki/Main_Page;
        }
        location ~ ^/(index|load|api|rest)\.php\$ {
            include fastcgi_params;
            fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
            fastcgi_param SCRIPT_NAME \$fastcgi_script_name;
            fastcgi_pass unix:$PF/fpm.sock;
        }
        location ~ ^/(skins|resources)/ {
        }
        location / {
            return 404;
        }
    }
}
EOF
} >"$NG/conf/nginx.conf"
nginx_t nginx.conf || abort "nginx -t accepts the MediaWiki server including sitemapd-locations.conf"
"$NGINX" "${NGINX_OPTS[@]}" -c conf/nginx.conf >"$TMP/nginx.out" 2>&1 &
NGINX_PID=$!
if wait_http "$SITE/wiki/Main_Page" 20 "$NGINX_PID"; then
  pass "MediaWiki answers through nginx and php-fpm on $SITE (/wiki/Main_Page 200)"
else
  tail -n 20 "$TMP/nginx.out" "$NG/logs/error.log" "$PF/php-fpm.log" "$PF/php-errors.log" >&2 2>/dev/null
  "${CURL[@]}" -i "$SITE/wiki/Main_Page" 2>&1 | head -n 20 >&2
  abort "MediaWiki did not answer /wiki/Main_Page with 200 within 20 s"
fi

}

# GUIDE: the user guide, where the views users copy are written.
GUIDE="$ROOT/docs/guide.md"

# guide_mw_view mariadb|postgres: the guide's ```sql block that creates the MediaWiki view on that
# database, with the check's namespaces added as the guide says (one line each after the main
# namespace's), and on MariaDB the check's database names (MW_WDB, MW_SDB).
guide_mw_view() {
  local want lines
  if [ "$1" = mariadb ]; then want="CREATE VIEW sitemapd.sitemap_mw "; else want="CREATE VIEW sitemap_mw "; fi
  lines=
  [ "${#MW_NS_LINES[@]}" -gt 0 ] && lines=$(printf '               %s\n' "${MW_NS_LINES[@]}")
  awk -v want="$want" '
    /^```sql$/ { inblock = 1; block = ""; next }
    /^```/ && inblock { inblock = 0; if (index(block, want)) { printf "%s", block; found = 1; exit } next }
    inblock { block = block $0 "\n" }
    END { exit !found }
  ' "$GUIDE" | awk -v lines="$lines" '{ print } /^ *WHEN 0 THEN '"''"'$/ { if (lines != "") print lines; added = 1 } END { exit !added }' |
    if [ "$1" = mariadb ]; then
      sed -e "s/sitemapd\./${MW_SDB:-sitemapd}./g" -e "s/mediawiki\.page/${MW_WDB:-mediawiki}.page/g"
    else
      cat
    fi
}
