# sitemapd container image.
#
#   docker build -t sitemapd .
#   docker run --rm -p 8080:8080 \
#     -e SITEMAP_BASE_URL=https://www.example.com \
#     -e DATABASE_URL=postgres://sitemapd:secret@db.internal:5432/sitemapd sitemapd
#   docker run --rm -p 8080:8080 -e SITEMAP_BASE_URL=http://localhost:8080 sitemapd demo
#
# Without DATABASE_URL the embedded SQLite database is /var/lib/sitemapd/sitemapd.db (the working
# directory): mount a volume there to keep it, e.g. -v sitemapd-data:/var/lib/sitemapd.
# `demo` needs SITEMAP_BASE_URL too in a container: its default, http://<BIND_ADDR>, would be
# http://0.0.0.0:8080. docker-compose.yml runs it with PostgreSQL.

# ---------------------------------------------------------------- build
FROM rust:1-bookworm AS build
WORKDIR /src

# Dependencies first, in a layer of their own: editing the sources does not rebuild them.
# Stub targets let cargo compile every dependency from Cargo.toml and Cargo.lock alone.
COPY Cargo.toml Cargo.lock ./
RUN mkdir -p src tests/api \
 && echo 'fn main() {}' > src/main.rs \
 && touch src/lib.rs tests/api/main.rs \
 && cargo build --release --locked \
 && rm -rf src tests

# The crate itself. COPY keeps the files' own modification times, which can be older than the
# stub build: touch the crate roots so cargo rebuilds the crate rather than keep the stubs.
COPY . .
RUN touch src/main.rs src/lib.rs \
 && cargo build --release --locked \
 && install -D -m 755 target/release/sitemapd /out/sitemapd \
 && /out/sitemapd --version | grep '^sitemapd '

# ---------------------------------------------------------------- runtime
FROM debian:bookworm-slim

# sitemapd links only glibc (SQLite is compiled in). ca-certificates is there for TLS to the
# database and other HTTPS endpoints.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 sitemapd \
 && useradd --system --uid 10001 --gid sitemapd --home-dir /var/lib/sitemapd \
      --no-create-home --shell /usr/sbin/nologin sitemapd \
 && install -d -o sitemapd -g sitemapd -m 0750 /var/lib/sitemapd

COPY --from=build /out/sitemapd /usr/local/bin/sitemapd

# Numeric, so that Kubernetes' runAsNonRoot can check it.
USER 10001:10001
WORKDIR /var/lib/sitemapd

# Listen on every interface of the container; everything else comes from the environment
# (SITEMAP_BASE_URL is required; see docs/reference.md for the rest).
ENV BIND_ADDR=0.0.0.0:8080
EXPOSE 8080

# Health check without adding anything to the image: sitemapd has no health-check subcommand and
# the slim image has no curl or wget (curl would add ~10 MB of libraries for one request), but it
# has bash, whose /dev/tcp can send one HTTP request to /healthz (the process answers; /readyz
# would also test the database, and an unhealthy mark cannot fix a database). The port follows
# BIND_ADDR.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${BIND_ADDR##*:} && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && read -r _ code _ <&3 && [ \"$code\" = 200 ]"]

# SIGTERM (docker stop) makes sitemapd finish downloads for up to SHUTDOWN_GRACE_SECS (30 s):
# use `docker stop -t 40` / stop_grace_period: 40s to let it.
ENTRYPOINT ["sitemapd"]
CMD ["serve"]
