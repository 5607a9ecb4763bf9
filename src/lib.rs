//! sitemapd serves a website's sitemaps and robots.txt live from its database.
//!
//! A PHP or CMS site keeps writing page rows to a SQL table or view; sitemapd turns them into
//! protocol-exact sitemap files, an index and a robots.txt, with validators that let crawlers
//! re-fetch cheaply. `../shared/SPEC.md` in the workspace (and the README) is the contract.
//!
//! # Layout
//!
//! - [`config`]: environment and `.env` → validated [`config::Config`]. No I/O beyond reading them.
//! - [`sitemap`]: entry rules ([`sitemap::Loc`] and friends), limits, the XML writer. Pure.
//! - [`robots`]: robots.txt template rendering, strict validation, RFC 9309 matching. Pure.
//! - [`stylesheet`]: `/sitemap.xsl`, which browsers show sitemaps with, and its validators.
//! - [`store`]: every SQL statement, behind one interface for PostgreSQL, MySQL/MariaDB
//!   and SQLite.
//! - [`pages`]: which ids each sitemap file holds, and the scan that measures files.
//! - [`site`]: the snapshot of validators every request reads, and the sweep that updates it.
//! - [`render`]: a page's rows → XML → gzip, streamed.
//! - [`cache`]: rendered pages in memory, single flight.
//! - [`http`]: router, handlers, conditional requests; [`error`] maps failures to statuses.
//! - [`import`]: `sitemapd import`, existing sitemap files → the built-in table, streamed.
//! - [`metrics`]: Prometheus counters of one service.
//! - [`notify`]: IndexNow submissions and sitemap pings when files change, paced and retried.
//! - [`app`], [`cli`], [`commands`], [`demo`]: wiring and the command line.

pub mod answer;
pub mod app;
pub mod cli;
pub mod commands;
pub mod config;
pub mod demo;
pub mod error;
pub mod feed;
pub mod http;
pub mod import;
pub mod metrics;
pub mod notify;
pub mod robots;
pub mod site;
pub mod sitemap;
pub mod store;
pub mod stylesheet;
pub mod sweep;
