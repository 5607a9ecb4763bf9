# scripts/lib/enforce-check.sh: the `sitemapd robots enforce` part of the front checks
# (scripts/nginx-check.sh, apache-check.sh, caddy-check.sh). Sourced by them after
# scripts/lib/front-check.sh; `enforce_checks` prints the snippet for $FRONT with
# ROBOTS_POLICY=ai-training=disallow, starts a second instance of the server on a port of its own
# with the snippet included as its comments say, in front of the same sitemapd, and checks that a
# request with GPTBot's real User-Agent gets 403 on a page and 200 on /robots.txt, and Googlebot's
# 200 on both; and that the snippet's headers reach the site's pages: Content-Signal and
# Content-Usage as the policy says, the licence and llms.txt (LLMS_TXT=on) in Link. That instance
# is stopped by PID when the checks end.

GPTBOT_UA='Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)'
GOOGLEBOT_UA='Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'
CHATGPT_USER_UA='Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot'
# As OpenAI documents them (developers.openai.com/api/docs/bots): the ad checker (purpose other)
# names openai.com only in its URL; GPTBot's current string puts the product after "); ".
OAI_ADSBOT_UA='Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-AdsBot/1.0; +https://openai.com/adsbot'
GPTBOT_13_UA='Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.3; +https://openai.com/gptbot'
ENFORCE_PID=
# The sitemapd behind the server with the snippet: a demo with the same policy and llms.txt, so
# its answers carry a Link of their own (which the snippet must not double).
ENF_SP=

# enforce_snippet FILE: the snippet for $FRONT, for ai-training=disallow with llms.txt on and a
# group with its own llms.txt under /blog/ (a sites file), into FILE.
enforce_snippet() {
  printf '[[site]]\nbase_url = "%s"\nllms_txt = true\n\n[[site.group]]\nname = "pages"\nsource = "sitemap_entries"\n\n[[site.group]]\nname = "posts"\nsource = "sitemap_entries"\nllms_path = "/blog/"\n' \
    "$PROXY" >"$TMP/enforce-sites.toml"
  env -i PATH="$PATH" SITEMAP_SITES_FILE="$TMP/enforce-sites.toml" ROBOTS_POLICY=ai-training=disallow \
    "$BIN" robots enforce "$FRONT" >"$1" 2>"$TMP/enforce.err"
}

# enforce_requests URL: the checks against the server with the snippet on URL.
enforce_requests() {
  local url=$1 s
  s=$(fetch enf_gpt_page GET "$url/" -A "$GPTBOT_UA")
  check "enforce ($FRONT): GPTBot's User-Agent gets 403 on / (got $s)" eq "$s" 403
  s=$(fetch enf_gpt_php GET "$url/index.php?p=1" -A "$GPTBOT_UA")
  check "enforce ($FRONT): GPTBot's User-Agent gets 403 on /index.php?p=1 (got $s)" eq "$s" 403
  s=$(fetch enf_gpt_robots GET "$url/robots.txt" -A "$GPTBOT_UA")
  check "enforce ($FRONT): GPTBot's User-Agent gets 200 on /robots.txt (got $s)" \
    eval 'eq "$s" 200 && grep -q "^Sitemap:" "$TMP/enf_gpt_robots.b"'
  s=$(fetch enf_gpt_lower GET "$url/" -A "$(printf '%s' "$GPTBOT_UA" | tr 'A-Z' 'a-z')")
  check "enforce ($FRONT): the match ignores case (got $s)" eq "$s" 403
  s=$(fetch enf_google_page GET "$url/" -A "$GOOGLEBOT_UA")
  check "enforce ($FRONT): Googlebot's User-Agent gets 200 on / (got $s)" eq "$s" 200
  s=$(fetch enf_google_robots GET "$url/robots.txt" -A "$GOOGLEBOT_UA")
  check "enforce ($FRONT): Googlebot's User-Agent gets 200 on /robots.txt (got $s)" eq "$s" 200
  s=$(fetch enf_chatgpt GET "$url/" -A "$CHATGPT_USER_UA")
  check "enforce ($FRONT): ChatGPT-User (ai-user, allowed) gets 200 though its string names openai.com (got $s)" eq "$s" 200
  s=$(fetch enf_word GET "$url/" -A "Mozilla/5.0 (compatible; NotGPTBotter/1.0)")
  check "enforce ($FRONT): a longer word holding GPTBot is not GPTBot (got $s)" eq "$s" 200
  s=$(fetch enf_adsbot GET "$url/" -A "$OAI_ADSBOT_UA")
  check "enforce ($FRONT): OAI-AdsBot (other, allowed) gets 200 though its URL names openai.com (got $s)" eq "$s" 200
  s=$(fetch enf_adsbot_short GET "$url/" -A "Mozilla/5.0 (compatible; OAI-AdsBot/1.0; +https://openai.com/adsbot)")
  check "enforce ($FRONT): OAI-AdsBot's short string gets 200 too (got $s)" eq "$s" 200
  s=$(fetch enf_gpt13 GET "$url/" -A "$GPTBOT_13_UA")
  check "enforce ($FRONT): GPTBot/1.3's real User-Agent gets 403 (got $s)" eq "$s" 403
  s=$(fetch enf_url GET "$url/" -A "Mozilla/5.0 (compatible; LinkChecker/1.0; +https://example.com/gptbot)")
  check "enforce ($FRONT): GPTBot in a URL names no crawler (got $s)" eq "$s" 200
  enforce_header_checks "$url"
}

# enforce_header_checks URL: the policy's headers on a page of the site behind the snippet.
enforce_header_checks() {
  local url=$1 v links
  fetch enf_hdr_page GET "$url/index.php?p=1" -A "$GOOGLEBOT_UA" >/dev/null
  v=$(hdr enf_hdr_page Content-Signal)
  check "enforce ($FRONT): a page carries Content-Signal as robots.txt writes it (got '$v')" eq "$v" "ai-train=no"
  v=$(hdr enf_hdr_page Content-Usage)
  check "enforce ($FRONT): a page carries Content-Usage in the aipref vocabulary (got '$v')" eq "$v" "train-ai=n"
  links=$(grep -i '^link:' "$TMP/enf_hdr_page.h" | tr -d '\r')
  check "enforce ($FRONT): a page's Link names the licence ($links)" \
    eval 'grep -qF "<${PROXY%/}/license.xml>; rel=\"license\"; type=\"application/rsl+xml\"" <<<"$links"'
  check "enforce ($FRONT): a page's Link names llms.txt ($links)" \
    eval 'grep -qF "</llms.txt>; rel=\"describedby\"; type=\"text/markdown\"" <<<"$links"'
  fetch enf_hdr_blog GET "$url/blog/a-post" -A "$GOOGLEBOT_UA" >/dev/null
  links=$(grep -i '^link:' "$TMP/enf_hdr_blog.h" | tr -d '\r')
  check "enforce ($FRONT): a page under /blog/ names /blog/llms.txt, the most specific ($links)" \
    eval 'grep -qF "</blog/llms.txt>; rel=\"describedby\"" <<<"$links" && ! grep -qF "</llms.txt>" <<<"$links"'
  fetch enf_hdr_robots GET "$url/robots.txt" -A "$GOOGLEBOT_UA" >/dev/null
  v=$(hdr enf_hdr_robots Content-Usage)
  check "enforce ($FRONT): sitemapd's answers through the server carry them too (got '$v')" eq "$v" "train-ai=n"
  links=$(grep -i '^link:' "$TMP/enf_hdr_robots.h" | tr -d '\r')
  check "enforce ($FRONT): sitemapd's own Link is kept, not doubled ($links)" \
    eval '[ "$(grep -c . <<<"$links")" = 1 ] && grep -qF "rel=\"license\"" <<<"$links"'
}

# enforce_start URL COMMAND...: the server with the snippet, until URL answers.
enforce_start() {
  local url=$1
  shift
  "$@" >"$TMP/enforce-$FRONT.out" 2>&1 &
  ENFORCE_PID=$!
  trap 'stop_pid "$ENFORCE_PID"; cleanup' EXIT
  if wait_http "$url/robots.txt" 60 "$ENFORCE_PID"; then
    pass "enforce ($FRONT): the server with the snippet is up on $url"
    return 0
  fi
  tail -n 20 "$TMP/enforce-$FRONT.out" >&2
  fail "enforce ($FRONT): the server with the snippet did not start"
  return 1
}

enforce_checks() {
  local port dir
  port=$(free_port "$SP" "$FP" "$SG") || { fail "enforce: no free port"; return; }
  dir=$TMP/enforce
  mkdir -p "$dir"
  chmod 755 "$dir"
  case $FRONT in
  nginx) enforce_snippet "$dir/sitemapd-enforce.conf" ;;
  apache) enforce_snippet "$dir/sitemapd-enforce.conf" ;;
  caddy) enforce_snippet "$dir/sitemapd-enforce.caddy" ;;
  esac || { cat "$TMP/enforce.err" >&2; fail "sitemapd robots enforce $FRONT"; return; }
  pass "sitemapd robots enforce $FRONT prints a snippet"
  ENF_SP=$(free_port "$SP" "$FP" "$SG" "$port") || { fail "enforce: no free port"; return; }
  start_service enforced "$ENF_SP" SITEMAP_BASE_URL="$PROXY" ROBOTS_POLICY=ai-training=disallow \
    LLMS_TXT=on -- demo || return
  "enforce_$FRONT" "$dir" "$port"
  stop_pid "$ENFORCE_PID"
  ENFORCE_PID=
}

enforce_nginx() {
  local dir=$1 port=$2 saved_ng=$NG saved_opts=("${NGINX_OPTS[@]}")
  nginx_prefix "$dir/nginx" sitemapd-locations.conf sitemapd-proxy.conf
  cp "$dir/sitemapd-enforce.conf" "$NG/conf/sitemapd-enforce.conf"
  {
    nginx_main
    echo "daemon off;"
    echo "http {"
    nginx_http
    echo "    include sitemapd-enforce.conf;"
    nginx_upstream "$ENF_SP"
    cat <<EOF
    server {
        listen 127.0.0.1:$port;
        server_name localhost;
        if (\$sitemapd_refused) { return 403; }
        include snippets/sitemapd-locations.conf;
        location / {
            default_type text/plain;
            return 200 "php site\n";
        }
    }
}
EOF
  } >"$NG/conf/nginx.conf"
  if nginx_t nginx.conf; then
    pass "enforce (nginx): nginx -t accepts the snippet in the http block"
    enforce_start "http://127.0.0.1:$port" "$NGINX" "${NGINX_OPTS[@]}" -c conf/nginx.conf &&
      enforce_requests "http://127.0.0.1:$port"
  else
    fail "enforce (nginx): nginx -t accepts the snippet in the http block"
  fi
  NG=$saved_ng
  NGINX_OPTS=("${saved_opts[@]}")
}

enforce_apache() {
  local dir=$1 port=$2
  mkdir -p "$dir/apache/site"
  printf 'php site\n' >"$dir/apache/site/index.php"
  sed "s|127\\.0\\.0\\.1:8080|127.0.0.1:$ENF_SP|g" "$ROOT/deploy/apache/sitemapd.conf" >"$dir/apache/sitemapd.conf"
  cat >"$dir/apache/httpd.conf" <<CONF
ServerRoot "$dir/apache"
ServerName localhost
Listen 127.0.0.1:$port
PidFile "$dir/apache/httpd.pid"
DefaultRuntimeDir "$dir/apache"
Mutex file:$dir/apache default
ErrorLog "$dir/apache/error.log"
LogLevel warn
TypesConfig /etc/mime.types
$user_lines
$modules
<VirtualHost 127.0.0.1:$port>
    ServerName localhost
    Include "$dir/sitemapd-enforce.conf"
    DocumentRoot "$dir/apache/site"
    <Directory "$dir/apache/site">
        Require all granted
        DirectoryIndex index.php
    </Directory>
    AddType text/plain .php
    RewriteEngine On
    RewriteRule "^/(robots\.txt|sitemap_index\.xml|sitemap\.(xml|txt|xsl)|feed\.(atom|rss)|sitemap-[1-9][0-9]*\.(xml|xml\.gz|txt))$" - [END]
    RewriteCond "%{DOCUMENT_ROOT}%{REQUEST_URI}" !-f
    RewriteRule "^/" "/index.php" [L]
    Include "$dir/apache/sitemapd.conf"
</VirtualHost>
CONF
  if timeout 120 "$APACHE" -t -f "$dir/apache/httpd.conf" 2>"$TMP/enforce-apache-t.err"; then
    pass "enforce (apache): apache2 -t accepts the snippet at the top of a VirtualHost"
    enforce_start "http://127.0.0.1:$port" "$APACHE" -X -f "$dir/apache/httpd.conf" &&
      enforce_requests "http://127.0.0.1:$port"
  else
    cat "$TMP/enforce-apache-t.err" >&2
    fail "enforce (apache): apache2 -t accepts the snippet at the top of a VirtualHost"
  fi
}

enforce_caddy() {
  local dir=$1 port=$2
  mkdir -p "$dir/caddy/data" "$dir/caddy/config"
  sed "s|127\\.0\\.0\\.1:8080|127.0.0.1:$ENF_SP|g" "$ROOT/deploy/caddy/sitemapd.caddy" >"$dir/caddy/sitemapd.caddy"
  cat >"$dir/caddy/Caddyfile" <<CONF
{
	admin off
	auto_https off
	storage file_system $dir/caddy/data
}

http://127.0.0.1:$port {
	import $dir/sitemapd-enforce.caddy
	import $dir/caddy/sitemapd.caddy
	handle {
		respond "php site"
	}
}
CONF
  if HOME=$dir/caddy XDG_DATA_HOME=$dir/caddy/data XDG_CONFIG_HOME=$dir/caddy/config \
    timeout 120 "$CADDY" validate --config "$dir/caddy/Caddyfile" --adapter caddyfile >"$TMP/enforce-caddy-validate.out" 2>&1; then
    pass "enforce (caddy): caddy validate accepts the snippet imported first in a site block"
    enforce_start "http://127.0.0.1:$port" env HOME="$dir/caddy" XDG_DATA_HOME="$dir/caddy/data" \
      XDG_CONFIG_HOME="$dir/caddy/config" "$CADDY" run --config "$dir/caddy/Caddyfile" --adapter caddyfile &&
      enforce_requests "http://127.0.0.1:$port"
  else
    tail -n 20 "$TMP/enforce-caddy-validate.out" >&2
    fail "enforce (caddy): caddy validate accepts the snippet imported first in a site block"
  fi
}
