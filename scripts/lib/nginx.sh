# scripts/lib/nginx.sh: what the checks that run nginx share (scripts/nginx-check.sh and
# scripts/wordpress-check.sh), on top of scripts/lib/checks.sh: a private nginx prefix with the
# shipped snippets, the parts of its configuration every nginx.conf here has, and `nginx -t`.
# The caller sets ROOT (the checkout), TMP (its temporary directory) and NGINX (the binary),
# calls nginx_prefix, then runs nginx as "$NGINX" "${NGINX_OPTS[@]}" -c conf/FILE.

# nginx_prefix DIR SNIPPET...: a private nginx prefix DIR (conf/, logs/, tmp/) that nginx's
# workers can read when they drop to an unprivileged user, with the shipped deploy/nginx/SNIPPETs,
# as they are, at the paths the shipped include lines name (conf/snippets/). Sets NG to DIR and
# NGINX_OPTS to the options that run nginx with this prefix and its error log.
nginx_prefix() {
  local snippet
  NG=$1
  shift
  mkdir -p "$NG/conf/snippets" "$NG/logs" "$NG/tmp"
  chmod -R 755 "$NG"
  for snippet in "$@"; do
    ln -s "$ROOT/deploy/nginx/$snippet" "$NG/conf/snippets/$snippet"
  done
  NGINX_OPTS=(-p "$NG/" -e "$NG/logs/error.log")
}

# nginx_main: the main context's lines (one worker, pid and error log in the prefix).
nginx_main() {
  cat <<EOF
worker_processes 1;
pid $NG/nginx.pid;
error_log $NG/logs/error.log info;
events { worker_connections 256; }
EOF
}

# nginx_http: the http context's lines that keep nginx's files in the prefix.
nginx_http() {
  cat <<EOF
    access_log $NG/logs/access.log;
    client_body_temp_path $NG/tmp/body;
    proxy_temp_path $NG/tmp/proxy;
    fastcgi_temp_path $NG/tmp/fastcgi;
    uwsgi_temp_path $NG/tmp/uwsgi;
    scgi_temp_path $NG/tmp/scgi;
    default_type application/octet-stream;
EOF
}

# nginx_upstream PORT: the upstream the shipped sitemapd-proxy.conf names, sitemapd on PORT.
nginx_upstream() {
  cat <<EOF
    upstream sitemapd {
        server 127.0.0.1:$1;
        keepalive 4;
    }
EOF
}

# nginx_t FILE: `nginx -t` on conf/FILE of the prefix; its complaints (also kept in
# $TMP/NAME-t.err, NAME being FILE without .conf) go to stderr when it fails.
nginx_t() {
  local err=$TMP/${1%.conf}-t.err
  timeout 120 "$NGINX" -t -q "${NGINX_OPTS[@]}" -c "conf/$1" 2>"$err" && return 0
  cat "$err" >&2
  return 1
}
