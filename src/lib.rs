//! sitemapd serves a website's sitemaps and robots.txt live from its database.
//!
//! A PHP or CMS site keeps writing page rows to a SQL table or view; sitemapd turns them into
//! protocol-exact sitemap files, an index and a robots.txt, with validators that let crawlers
//! re-fetch cheaply. `../shared/SPEC.md` in the workspace (and the README) is the contract.
//!
//! # Layout
//!
//! Two flows, each in a folder of its own, meet at the site's snapshot:
//!
//! - [`answer`], the read side: a request's site and file ([`files::File`]) become a
//!   [`answer::Document`] whose validators come from the snapshot alone, and whose body is opened
//!   only when it is sent: bytes in memory, or a render ([`answer::render`]) streamed through
//!   the single flight and the cache. [`http`] routes requests there and turns documents into
//!   responses (`304`, HEAD, headers, the access log), nothing else.
//! - [`sweep`], the write side: a change the change log reports (or a render's stale report,
//!   a verification step, or the periodic summary check of a source nothing logs) names the
//!   files to re-measure; they are measured, neighbours that fit in one merged (compaction),
//!   dated against what is stored (settled), saved compare-and-set, installed as the next
//!   snapshot, and announced to IndexNow; the change-log version they cover is stored. Opening
//!   a site, background verification, retries and the refresh period are its schedule; when
//!   replicas share a site, one holds its lease and keeps it current, the others follow the
//!   stored state and take over when the lease comes to them (its roles).
//! - [`site`]: what both share: a site and its groups (one source each: their settings, their
//!   files as id ranges, [`site::Layout`]) and the [`site::Snapshot`] requests are answered
//!   from.
//!
//! Beneath them, pure rules and formats: [`files`] (the catalogue of served files: every name
//! and path is made and parsed there, and a site's list of files), [`sitemap`] (entry rules,
//! limits, the XML writer), [`robots`] (robots.txt templates, validation, RFC 9309 matching),
//! [`crawlers`] (the crawler registry), [`feed`] (Atom and RSS), [`llms`] (llms.txt: each
//! group's newest links, read by its sweep, composed per site), [`stylesheet`]
//! (`/sitemap.xsl`'s body); and the outside world: [`store`] (every SQL statement, for
//! PostgreSQL, MySQL/MariaDB and SQLite), [`notify`] (IndexNow and pings, paced and retried),
//! [`purge`] (a cache in front told of every URL whose bytes a save changed) and
//! [`cache_headers`] (what a shared cache is told of each file),
//! [`config`] (environment, sites file and URL types → a validated [`config::Config`]),
//! [`metrics`].
//!
//! Crawlers, from who they are to what they did, each step on the one before:
//! the registry ([`crawlers`]: names, tokens, purposes, verification methods; parsed once, by
//! the configuration, and the User-Agent rule) → the policy ([`robots`]: `ROBOTS_POLICY` groups
//! by purpose, compiled into robots.txt) → verification ([`verify`]: whether a request's
//! signature or client address proves the crawler it names; one entry point,
//! [`verify::Verifier::decide`]) → what crawlers did: the [`ledger`] (their requests to sitemapd,
//! bounded, in memory) and the [`crawllog`] (the web server's access log: coverage, freshness,
//! robots.txt violations on the whole site, in the database) → llms.txt ([`llms`]: links the
//! policy lets answer engines' crawlers fetch).
//!
//! [`admin`] is the status page on its own listener, read from the same [`state::App`] as
//! [`http`]: it puts together the summary each feature makes of itself. [`import`] loads
//! existing sitemap files into the built-in table. [`app`] opens the sites (the one way `serve`
//! and the one-shot commands share) and wires a [`config::Config`] into a running
//! [`app::Service`]; [`cli`], [`commands`] (one per file) and [`demo`] are the command line;
//! [`error`] reports failures with their causes, [`sync`] says how a poisoned lock is taken.

pub mod admin;
pub(crate) mod answer;
pub mod app;
pub(crate) mod cache_headers;
pub mod cli;
pub(crate) mod commands;
pub mod config;
pub mod crawlers;
pub mod crawllog;
pub(crate) mod demo;
pub(crate) mod error;
pub(crate) mod feed;
pub(crate) mod files;
pub(crate) mod http;
pub(crate) mod import;
pub mod ledger;
pub mod llms;
pub mod metrics;
pub mod notify;
pub mod public_robots;
pub mod purge;
pub(crate) mod robots;
pub mod site;
pub mod sitemap;
pub mod state;
pub mod store;
pub mod stylesheet;
pub(crate) mod summary;
pub mod sweep;
pub(crate) mod sync;
pub mod verify;
