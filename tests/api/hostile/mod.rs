//! Hostile data: arbitrary rows in the tables must never break a file.
//!
//! Two property tests. The first is pure: any string at all (NUL included) either is refused by
//! `Loc::parse` or becomes a URL that is ASCII, at most 2,048 characters, under the base, a fixed
//! point of the normaliser, and that survives `write_url` and a real XML parser unchanged. The
//! second puts arbitrary rows into PostgreSQL, MariaDB and SQLite, each holding them as it can (see
//! [`model::store`]): entries (hostile `loc`, extreme and junk `lastmod`, garbage `changefreq`, NaN
//! and out-of-range `priority`, extreme ids) and extension rows (hostile hreflangs and URLs,
//! several per entry, for entries that exist or not). It serves them through HTTP with tiny pages
//! and checks every file with checkers of its own: xmllint against the official schema and the
//! extension schemas, a namespace-aware parser (the root declares exactly the extension namespaces
//! its elements use; every extension URL is an RFC 3986 web URL; no hreflang twice in a `<url>`),
//! the text form of each file (the same URLs), and the library's own `EntryRules` applied to the
//! values the database holds as the oracle: every entry it accepts is served exactly once, in id
//! order, with exactly the `<url>` element `write_url` makes for it and the extension rows it
//! keeps; nothing else is served.
//!
//! `pure` holds the first property, `served` the second; `url_strategies` and `row_strategies`
//! generate the inputs, `model` says what each database holds of them, `checkers` read the files.

mod checkers;
mod model;
mod pure;
mod row_strategies;
mod served;
mod url_strategies;

use sitemapd::config::BaseUrl;
use sitemapd::sitemap::EntryRules;

use crate::helpers::BASE;

const PAGE_SIZE: usize = 7;

fn base() -> BaseUrl {
    BaseUrl::parse(BASE).unwrap()
}

fn oracle() -> EntryRules {
    EntryRules::new(base(), None, vec![])
}
