//! Integration tests: the real server on a random port, a real HTTP client, a real database
//! (PostgreSQL and MariaDB: one database per test, so tests run in parallel; SQLite in a temp
//! dir). Acceptance tests run once per database (`on_each_database!`).

mod admin;
mod admin_exposure;
mod audit;
mod bad_values;
mod caching;
mod cli;
mod cms_views;
mod connections;
mod crawl_join;
mod crawl_log;
mod crawl_log_fronts;
mod crawlers;
mod current;
mod docs;
mod export;
mod exposure;
mod extensions;
mod feed_checks;
mod feeds;
mod groups;
mod helpers;
mod hostile;
mod hosts;
mod import;
mod import_limits;
mod llms;
mod notify;
mod operations;
mod outage;
mod policy;
mod readiness;
mod redefined_view;
mod registry;
mod replicas;
mod requests;
mod robots;
mod serving;
mod signatures;
mod strategies;
mod stylesheet;
mod under_writes;
mod verification;
mod verify_engine;
