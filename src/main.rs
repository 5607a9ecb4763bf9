//! The `sitemapd` binary: everything lives in the library; see `sitemapd --help`.

fn main() {
    std::process::exit(sitemapd::cli::run());
}
