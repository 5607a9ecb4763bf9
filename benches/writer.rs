//! Micro-benchmarks of the pure hot path: row → validated entry → `<url>` bytes → page digest.
//! Run with `cargo bench --bench writer`; compare entries/s between commits.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sitemapd::config::BaseUrl;
use sitemapd::sitemap::{DocumentStyle, EntryRules, Namespaces, PageBuilder, RawEntry, UrlKey};

fn rows(n: i64) -> Vec<RawEntry> {
    (0..n)
        .map(|i| RawEntry {
            id: i,
            loc: Some(match i % 3 {
                0 => format!("/fr/article.php?AIndex={i}&lang=fr"),
                1 => format!("/produits/café-crème-{i}?couleur=rouge&taille=M"),
                _ => format!("https://www.example.com/en/articles/{i}-news"),
            }),
            lastmod: (i % 5 != 0)
                .then(|| chrono::DateTime::from_timestamp(1_700_000_000 + i, 0).unwrap()),
            changefreq: Some("weekly".into()),
            priority: Some(0.5),
            ..RawEntry::default()
        })
        .collect()
}

fn page(c: &mut Criterion) {
    let rules = EntryRules::new(
        BaseUrl::parse("https://www.example.com/").unwrap(),
        None,
        vec![],
    );
    let style = DocumentStyle::default();
    let mut group = c.benchmark_group("writer");
    for n in [1_000i64, 50_000] {
        let input = rows(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("page", n), &input, |b, input| {
            let mut element = Vec::with_capacity(512);
            b.iter(|| {
                let mut builder = PageBuilder::measuring(&style, 50_000);
                for raw in input {
                    if let Ok(entry) = rules.write(raw, &mut element, Namespaces::ALL) {
                        builder.add(raw.id, UrlKey::of(&entry.loc), &element, entry.namespaces());
                    }
                }
                builder.finish()
            });
        });
    }
    group.finish();
}

criterion_group!(benches, page);
criterion_main!(benches);
