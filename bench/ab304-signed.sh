#!/usr/bin/env bash
# bench/ab304-signed.sh: bench/ab304.sh with every request signed (Web Bot Auth), so the A/B
# measures the signed 304 path: reading the signature headers, rebuilding the base, the Ed25519
# check and the replay map. One key directory is served on loopback (Python), named in a
# CRAWLERS_FILE by its origin (the form every build understands); one signature, made by
# tests/signer/sign.mjs (Cloudflare's web-bot-auth package, `npm ci --prefix tests/signer`) for
# Host www.example.com and valid for an hour, is sent with every request from 127.0.0.1.
#
#   bench/ab304-signed.sh BIN_A BIN_B        e.g. /tmp/sitemapd-before target/release/sitemapd
#
# The environment of bench/ab304.sh applies (AB_RUNS, AB_REQUESTS, …). The directory server is
# stopped by its PID on exit.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN_A=${1:?usage: bench/ab304-signed.sh BIN_A BIN_B}
BIN_B=${2:?usage: bench/ab304-signed.sh BIN_A BIN_B}
SIGNER="$HERE/../tests/signer/sign.mjs"
[ -d "$HERE/../tests/signer/node_modules/web-bot-auth" ] \
    || { echo "the signer is not installed: npm ci --prefix tests/signer" >&2; exit 1; }
PORT=$(python3 "$HERE/../scripts/lib/ports.py")
ORIGIN="http://127.0.0.1:$PORT"
WORK=$(mktemp -d)
SERVER=""

stop() {
    [ -z "$SERVER" ] || { kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; }
    rm -rf "$WORK"
}
trap stop EXIT

node "$SIGNER" keygen >"$WORK/key.json"
python3 -c 'import json,sys; k=json.load(open(sys.argv[1])); print(json.dumps({"keys":[k["public"]]}))' \
    "$WORK/key.json" >"$WORK/directory.json"
python3 - "$PORT" "$WORK/directory.json" <<'PY' &
import http.server, sys
body = open(sys.argv[2], "rb").read()
class Directory(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("content-type", "application/http-message-signatures-directory+json")
        self.send_header("cache-control", "max-age=86400")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Directory).serve_forever()
PY
SERVER=$!

cat >"$WORK/crawlers.toml" <<TOML
[[crawler]]
name = "BenchAgent"
tokens = ["BenchAgent"]
operator = "Bench"
purpose = "ai-user"
signature_agent = ["$ORIGIN"]
docs = ["https://example.com/bench"]
TOML

NOW=$(date +%s)
AGENT="sig1=\"$ORIGIN\""
ARGS=$(python3 -c 'import json,sys; print(json.dumps({"jwk": json.load(open(sys.argv[1]))["private"],
    "url": "http://www.example.com/sitemap-1.xml.gz", "agent": sys.argv[2],
    "created": int(sys.argv[3]), "expires": int(sys.argv[3]) + 3600}))' "$WORK/key.json" "$AGENT" "$NOW")
SIGNED=$(node "$SIGNER" sign "$ARGS")
HEADERS=$(python3 -c 'import json,sys; h=json.loads(sys.argv[1]); print("Host: www.example.com");
print("Signature-Agent: " + sys.argv[2]); print("Signature-Input: " + h["Signature-Input"]);
print("Signature: " + h["Signature"])' "$SIGNED" "$AGENT")

AB_ENV_A="${AB_ENV_A:-} CRAWLERS_FILE=$WORK/crawlers.toml" \
AB_ENV_B="${AB_ENV_B:-} CRAWLERS_FILE=$WORK/crawlers.toml" \
AB_HEADERS="$HEADERS" "$HERE/ab304.sh" "$BIN_A" "$BIN_B"
