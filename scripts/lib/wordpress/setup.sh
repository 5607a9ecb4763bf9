#!/usr/bin/env bash
# scripts/lib/wordpress/setup.sh: a real WordPress for scripts/wordpress-check.sh and
# bench/wordpress.sh: Debian's `wordpress` package run by its own php-fpm behind its own nginx,
# on a database of its own, and the guide's views read from docs/guide.md. The caller sources
# scripts/lib/checks.sh and scripts/lib/nginx.sh first and sets ROOT, TMP, WDB, SDB, SITE, FP, SP,
# MYSQL_HOST and MYSQL_PORT; these functions set NGINX, FPM, WP, PF, NG, FPM_PID and NGINX_PID.
# (Function bodies are not indented: they hold here-documents.)

# wp_tools: installs what is missing (nginx, php-fpm, WordPress, the mysql client) and checks
# that the MariaDB/MySQL server answers.
wp_tools() {

php_fpm() { # the php-fpm binary (Debian names it php-fpmX.Y)
  local versioned
  versioned=$(find /usr/sbin -maxdepth 1 -name 'php-fpm[0-9]*' 2>/dev/null | sort -V | tail -n 1)
  find_bin php-fpm ${versioned:+"$versioned"}
}
php_has() { command -v php >/dev/null && php -r "exit($1 ? 0 : 1);"; }
php_has_mysqli() { php_has 'function_exists("mysqli_connect")'; }
php_has_xml() { php_has 'class_exists("SimpleXMLElement")'; } # WordPress's core sitemaps need it

# The web server and PHP first: with them installed, `wordpress` (which depends on
# "apache2 | httpd" and "libapache2-mod-php | php") does not pull in Apache.
missing=()
find_bin nginx >/dev/null || missing+=(nginx-light)
php_fpm >/dev/null || missing+=(php-fpm)
command -v php >/dev/null || missing+=(php-cli)
php_has_mysqli || missing+=(php-mysql)
php_has_xml || missing+=(php-xml)
command -v mysql >/dev/null || missing+=(mariadb-client)
if [ "${#missing[@]}" -gt 0 ]; then
  apt_install "${missing[@]}" || abort "could not install ${missing[*]} (apt-get install --no-install-recommends ${missing[*]})"
fi
if [ ! -f /usr/share/wordpress/wp-settings.php ] || [ ! -d /usr/share/wordpress/wp-content/themes/twentytwentythree ]; then
  # `php` (the metapackage) here, php-fpm being installed, stands for libapache2-mod-php.
  apt_install php wordpress wordpress-theme-twentytwentythree ||
    abort "could not install wordpress (apt-get install --no-install-recommends php wordpress wordpress-theme-twentytwentythree)"
fi
NGINX=$(find_bin nginx) || abort "nginx is missing (apt-get install nginx-light)"
FPM=$(php_fpm) || abort "php-fpm is missing (apt-get install php-fpm)"
php_has_mysqli || abort "PHP's mysqli is missing (apt-get install php-mysql)"
php_has_xml || abort "PHP's SimpleXML is missing (apt-get install php-xml)"
command -v mysql >/dev/null || abort "the mysql client is missing (apt-get install mariadb-client)"
need curl gzip
echo 'SELECT 1' | sql >/dev/null 2>&1 ||
  abort "no MariaDB/MySQL server answers on $MYSQL_HOST:$MYSQL_PORT as root without a password (Debian: apt-get install mariadb-server, then start it)"
say "using $("$NGINX" -v 2>&1), $("$FPM" -v | head -n 1), WordPress $(sed -n "s/^\$wp_version = '\(.*\)';/\1/p" /usr/share/wordpress/wp-includes/version.php), $(echo 'SELECT VERSION()' | sql)"

# sitemapd: a copy, so that a build during the run cannot swap the binary.
sitemapd_bin missing
SRC_BIN=$BIN
BIN=$TMP/sitemapd-bin
cp "$SRC_BIN" "$BIN" || abort "copy $SRC_BIN"

}

# wp_docroot: a private document root, symlinks to the package with a wp-config.php of its own.
wp_docroot() {

# Debian's /usr/share/wordpress/wp-config.php reads /etc/wordpress/config-HOST.php. A private
# document root instead: a tree of symlinks to the package with a wp-config.php of its own. The
# PHP files at the top are copies: they find wp-load.php and wp-config.php through __DIR__,
# which PHP resolves through symlinks.
WP=$TMP/wp
cp -as /usr/share/wordpress "$WP" || abort "symlink tree of /usr/share/wordpress"
for f in /usr/share/wordpress/*.php; do
  rm -f "$WP/${f##*/}"
  cp "$f" "$WP/"
done
rm -f "$WP/wp-config.php"
mkdir -p "$WP/wp-content/uploads"
salt() { head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 48; }
cat >"$WP/wp-config.php" <<EOF
<?php
define( 'DB_NAME', '$WDB' );
define( 'DB_USER', 'root' );
define( 'DB_PASSWORD', '' );
define( 'DB_HOST', '$MYSQL_HOST:$MYSQL_PORT' );
define( 'DB_CHARSET', 'utf8mb4' );
define( 'DB_COLLATE', '' );
\$table_prefix = 'wp_';
define( 'WP_HOME', '$SITE' );
define( 'WP_SITEURL', '$SITE' );
define( 'WP_CONTENT_DIR', '$WP/wp-content' );
define( 'DISABLE_WP_CRON', true );
define( 'AUTOMATIC_UPDATER_DISABLED', true );
define( 'WP_AUTO_UPDATE_CORE', false );
define( 'WP_HTTP_BLOCK_EXTERNAL', true );
define( 'WP_DEBUG', false );
define( 'AUTH_KEY', '$(salt)' );
define( 'SECURE_AUTH_KEY', '$(salt)' );
define( 'LOGGED_IN_KEY', '$(salt)' );
define( 'NONCE_KEY', '$(salt)' );
define( 'AUTH_SALT', '$(salt)' );
define( 'SECURE_AUTH_SALT', '$(salt)' );
define( 'LOGGED_IN_SALT', '$(salt)' );
define( 'NONCE_SALT', '$(salt)' );
if ( ! defined( 'ABSPATH' ) ) {
	define( 'ABSPATH', __DIR__ . '/' );
}
require_once ABSPATH . 'wp-settings.php';
EOF
chmod -R a+rX "$WP"

}

site_php() { # site_php COMMAND [ARG]: scripts/lib/wordpress/site.php through PHP's CLI
  env WP_ROOT="$WP" WP_HOST="127.0.0.1:$FP" timeout 120 php -d display_errors=stderr -d error_reporting=E_ALL \
    "$ROOT/scripts/lib/wordpress/site.php" "$@"
}

# wp_start_fpm: php-fpm on a socket of its own.
wp_start_fpm() {

PF=$TMP/php
mkdir -p "$PF"
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
pm.max_children = 4
catch_workers_output = yes
php_admin_value[error_log] = $PF/php-errors.log
php_admin_flag[log_errors] = on
EOF
  if [ "$(id -u)" = 0 ]; then
    echo "user = root"
    echo "group = root"
  fi
} >"$PF/php-fpm.conf"
# The package's php.ini (read only), for the same settings as a site on this machine.
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

# wp_start_nginx: nginx serving WordPress, with the sitemap paths going to sitemapd on $SP.
wp_start_nginx() {

nginx_prefix "$TMP/nginx" sitemapd-locations.conf sitemapd-proxy.conf
cat >"$NG/conf/fastcgi_params" <<'EOF'
fastcgi_param QUERY_STRING $query_string;
fastcgi_param REQUEST_METHOD $request_method;
fastcgi_param CONTENT_TYPE $content_type;
fastcgi_param CONTENT_LENGTH $content_length;
fastcgi_param SCRIPT_NAME $fastcgi_script_name;
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
  cat <<EOF
    gzip on;
    gzip_types text/plain text/css application/javascript application/json application/xml text/xml;

EOF
  nginx_upstream "$SP"
  cat <<EOF

    server {
        listen 127.0.0.1:$FP;
        server_name 127.0.0.1;
        root $WP;
        index index.php index.html;

        include snippets/sitemapd-locations.conf;

        location / {
            try_files \$uri \$uri/ /index.php?\$args;
        }
        location ~ \.php\$ {
            try_files \$uri =404;
            include fastcgi_params;
            fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
            fastcgi_pass unix:$PF/fpm.sock;
        }
        location ~ /\.(?!well-known) {
            deny all;
        }
    }
}
EOF
} >"$NG/conf/nginx.conf"
nginx_t nginx.conf || abort "nginx -t accepts the WordPress server including sitemapd-locations.conf"
"$NGINX" "${NGINX_OPTS[@]}" -c conf/nginx.conf >"$TMP/nginx.out" 2>&1 &
NGINX_PID=$!
# The login page: it reads no posts (at 10M posts /wp-sitemap.xml alone takes longer than a
# check waits for one answer).
if wait_http "$SITE/wp-login.php" 20 "$NGINX_PID"; then
  pass "WordPress answers through nginx and php-fpm on $SITE (/wp-login.php 200)"
else
  tail -n 20 "$TMP/nginx.out" "$NG/logs/error.log" "$PF/php-fpm.log" "$PF/php-errors.log" >&2 2>/dev/null
  "${CURL[@]}" -i "$SITE/wp-login.php" 2>&1 | head -n 20 >&2
  abort "WordPress did not answer /wp-login.php with 200 within 20 s"
fi

}

# GUIDE: the user guide, where the views and the SITEMAP_GROUPS line users copy are written.
GUIDE="$ROOT/docs/guide.md"

# guide_view NAME: the guide's ```sql block that creates sitemapd.NAME, on these databases.
guide_view() {
  awk -v want="CREATE VIEW sitemapd.$1 " '
    /^```sql$/ { inblock = 1; block = ""; next }
    /^```/ && inblock { inblock = 0; if (index(block, want)) { printf "%s", block; found = 1; exit } next }
    inblock { block = block $0 "\n" }
    END { exit !found }
  ' "$GUIDE" | sed -e "s/sitemapd\./$SDB./g" -e "s/wordpress\./$WDB./g"
}
