//! Integration tests: the real server on a random port, a real HTTP client, a real database
//! (PostgreSQL: one database per test, so tests run in parallel; SQLite in a temp dir).

mod caching;
mod cli;
mod extensions;
mod feed_checks;
mod feeds;
mod helpers;
mod hostile;
mod hosts;
mod import;
mod notify;
mod operations;
mod outage;
mod requests;
mod robots;
mod serving;
mod stylesheet;
