//! The robots.txt the public gets set beside the one sitemapd serves: the same file, or what
//! differs, in the terms a site owner acts on (a redirect, another file altogether, groups or
//! lines added before or after sitemapd's, groups changed or missing, a cache's old copy).

use serde::Serialize;

use crate::sitemap::Fingerprint;

/// What a crawler got for `/robots.txt`.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    /// `Location`, for a redirect.
    pub location: Option<String>,
    /// `Age`, when a cache answered.
    pub age: Option<u64>,
    pub etag: Option<String>,
    pub body: String,
}

/// One thing that is not as sitemapd serves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// `redirect`, `status`, `other-file`, `added-before`, `added-after`, `added-within`,
    /// `missing`, `changed`, `comments`, `old-copy`.
    pub kind: &'static str,
    pub message: String,
}

/// A run of the file: a group (its User-agent lines and rules) or a line outside any group
/// (`Sitemap:`, a directive before the first group). Comments and blank lines are left out.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    /// The group's agents, lowercased; empty for a line outside groups.
    agents: Vec<String>,
    lines: Vec<String>,
}

impl Record {
    fn label(&self) -> String {
        if self.agents.is_empty() {
            format!("line {:?}", self.lines.join(" "))
        } else {
            format!("group for {}", self.agents.join(", "))
        }
    }
}

/// The differences between `served` (sitemapd's bytes) and `public` (what a crawler got through
/// the front), empty when the crawler gets sitemapd's file.
pub fn compare(served: &str, public: &Answer) -> Vec<Difference> {
    if (300..400).contains(&public.status) {
        return vec![redirect(public)];
    }
    if public.status != 200 {
        return vec![Difference {
            kind: "status",
            message: format!(
                "the public robots.txt answers {} instead of sitemapd's file ({})",
                public.status,
                if public.status < 500 {
                    "crawlers then take everything as allowed"
                } else {
                    "crawlers then take everything as disallowed, for a while"
                }
            ),
        }];
    }
    if normalized(served) == normalized(&public.body) {
        return Vec::new();
    }
    // An older version of sitemapd's own file is told group by group, never "another file".
    let ours = public
        .etag
        .as_deref()
        .and_then(sitemapd_fingerprint)
        .is_some();
    let mut differences = structural(&records(served), &records(&public.body), ours);
    if differences.is_empty() {
        differences.push(Difference {
            kind: "comments",
            message: "the same groups and lines; only comments or blank lines differ".into(),
        });
    }
    if let Some(old) = old_copy(served, public) {
        differences.push(old);
    }
    differences
}

fn redirect(public: &Answer) -> Difference {
    Difference {
        kind: "redirect",
        message: format!(
            "the public robots.txt answers {} (a redirect) to {}: crawlers follow a few redirects \
             and read what is there, which sitemapd does not serve",
            public.status,
            public.location.as_deref().unwrap_or("no Location")
        ),
    }
}

/// The groups and lines each side has that the other lacks, placed before, after or within
/// sitemapd's.
fn structural(served: &[Record], public: &[Record], ours: bool) -> Vec<Difference> {
    let found: Vec<Option<usize>> = served
        .iter()
        .map(|record| public.iter().position(|p| p == record))
        .collect();
    let kept = found.iter().flatten().count();
    if !ours && (kept * 2 < served.len() || (kept == 0 && !served.is_empty())) {
        return vec![Difference {
            kind: "other-file",
            message: format!(
                "another file altogether: {kept} of sitemapd's {} groups and lines are in it (a \
                 static robots.txt in front, or another application, answers instead){}",
                served.len(),
                first_lines(public)
            ),
        }];
    }
    let first = found.iter().flatten().min().copied().unwrap_or(0);
    let last = found.iter().flatten().max().copied().unwrap_or(0);
    // A group of sitemapd's that is not there as it is, but whose agents have a group there:
    // that group is said as changed, not as added.
    let changed_agents: Vec<&Vec<String>> = served
        .iter()
        .zip(&found)
        .filter(|(record, place)| place.is_none() && !record.agents.is_empty())
        .map(|(record, _)| &record.agents)
        .collect();
    let mut differences = Vec::new();
    for (i, record) in public.iter().enumerate() {
        if found.contains(&Some(i)) || changed_agents.contains(&&record.agents) {
            continue;
        }
        let (kind, where_) = match i {
            i if i < first => ("added-before", "before sitemapd's"),
            i if i > last => ("added-after", "after sitemapd's"),
            _ => ("added-within", "among sitemapd's"),
        };
        differences.push(Difference {
            kind,
            message: format!(
                "{} added {where_}: {}",
                record.label(),
                record.lines.join(" | ")
            ),
        });
    }
    for (record, place) in served.iter().zip(&found) {
        if place.is_some() {
            continue;
        }
        let changed = (!record.agents.is_empty())
            .then(|| public.iter().find(|p| p.agents == record.agents))
            .flatten();
        differences.push(match changed {
            Some(theirs) => changed_group(record, theirs),
            None => Difference {
                kind: "missing",
                message: format!("{} of sitemapd's is missing", record.label()),
            },
        });
    }
    differences
}

fn changed_group(ours: &Record, theirs: &Record) -> Difference {
    let added: Vec<&str> = theirs
        .lines
        .iter()
        .filter(|l| !ours.lines.contains(l))
        .map(String::as_str)
        .collect();
    let missing: Vec<&str> = ours
        .lines
        .iter()
        .filter(|l| !theirs.lines.contains(l))
        .map(String::as_str)
        .collect();
    Difference {
        kind: "changed",
        message: format!(
            "{} changed: lines added [{}], lines missing [{}]",
            ours.label(),
            added.join(" | "),
            missing.join(" | ")
        ),
    }
}

/// An answer that is not sitemapd's file but comes from a cache: a version of sitemapd's file
/// other than the current one (its ETag is one sitemapd makes, of other bytes), or an answer a
/// cache kept for a while (`Age`).
fn old_copy(served: &str, public: &Answer) -> Option<Difference> {
    let current = Fingerprint::of(served.as_bytes()).hex();
    if let Some(etag) = public.etag.as_deref() {
        if sitemapd_fingerprint(etag).is_some_and(|theirs| theirs != current) {
            return Some(Difference {
                kind: "old-copy",
                message: format!(
                    "an old copy of sitemapd's robots.txt: its ETag {etag} is that of another \
                     version than the current one ({current}): a cache in front keeps it; purge \
                     /robots.txt there"
                ),
            });
        }
    }
    let age = public.age.filter(|age| *age > 0)?;
    Some(Difference {
        kind: "old-copy",
        message: format!(
            "a cache answered (Age: {age} s{}): it may hold an old copy; purge /robots.txt there",
            public
                .etag
                .as_deref()
                .map(|e| format!(", ETag {e}"))
                .unwrap_or_default()
        ),
    })
}

/// The fingerprint in an ETag of the form sitemapd gives its files (`"<32 hex>"`, perhaps with a
/// coding's suffix, or weakened by a front: `W/"…"`).
fn sitemapd_fingerprint(etag: &str) -> Option<&str> {
    let tag = etag.trim().trim_start_matches("W/").trim_matches('"');
    let hex = tag.get(..32)?;
    let suffix = &tag[32..];
    let ours =
        hex.bytes().all(|b| b.is_ascii_hexdigit()) && matches!(suffix, "" | "-gz" | "-br" | "-txt");
    ours.then_some(hex)
}

fn first_lines(public: &[Record]) -> String {
    let lines: Vec<&str> = public
        .iter()
        .flat_map(|r| r.lines.iter().map(String::as_str))
        .take(3)
        .collect();
    if lines.is_empty() {
        "; it holds no rules".to_string()
    } else {
        format!("; it starts: {}", lines.join(" | "))
    }
}

fn normalized(text: &str) -> String {
    text.trim_start_matches('\u{feff}').replace("\r\n", "\n")
}

/// The groups and lines of a robots.txt, in order, as RFC 9309 reads them: consecutive
/// `User-agent` lines start a group, the rules after them belong to it; other lines before any
/// group, and `Sitemap` lines anywhere, stand alone.
fn records(text: &str) -> Vec<Record> {
    let mut records: Vec<Record> = Vec::new();
    let mut in_agents = false;
    for raw in normalized(text).lines() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (key, value) = line.split_once(':').unwrap_or((line, ""));
        let key = key.trim().to_ascii_lowercase();
        let line = format!("{}: {}", key, value.trim());
        if key == "user-agent" {
            let agent = value.trim().to_ascii_lowercase();
            match records.last_mut() {
                Some(group) if in_agents => group.agents.push(agent),
                _ => records.push(Record {
                    agents: vec![agent],
                    lines: Vec::new(),
                }),
            }
            in_agents = true;
            continue;
        }
        in_agents = false;
        let group = records.last_mut().filter(|r| !r.agents.is_empty());
        match group {
            Some(group) if key != "sitemap" => group.lines.push(line),
            _ => records.push(Record {
                agents: Vec::new(),
                lines: vec![line],
            }),
        }
    }
    records
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVED: &str = "User-agent: *\nContent-Signal: search=yes\nDisallow: /admin/\n\n\
        User-agent: GPTBot\nDisallow: /\n\nSitemap: https://example.com/sitemap_index.xml\n";

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status,
            location: None,
            age: None,
            etag: None,
            body: body.to_string(),
        }
    }

    fn kinds(d: &[Difference]) -> Vec<&'static str> {
        d.iter().map(|d| d.kind).collect()
    }

    #[test]
    fn the_same_bytes_even_with_crlf_are_no_difference() {
        assert!(compare(SERVED, &answer(200, SERVED)).is_empty());
        assert!(compare(SERVED, &answer(200, &SERVED.replace('\n', "\r\n"))).is_empty());
    }

    #[test]
    fn a_group_put_in_front_is_named_as_added_before() {
        let front = format!(
            "# managed by the CDN\nUser-agent: Amazonbot\nUser-agent: Bytespider\nDisallow: /\n\n{SERVED}"
        );
        let differences = compare(SERVED, &answer(200, &front));
        assert_eq!(kinds(&differences), ["added-before"], "{differences:?}");
        assert!(differences[0].message.contains("amazonbot, bytespider"));
        let after = format!("{SERVED}\nUser-agent: CCBot\nDisallow: /\n");
        assert_eq!(
            kinds(&compare(SERVED, &answer(200, &after))),
            ["added-after"]
        );
    }

    #[test]
    fn another_file_a_redirect_a_missing_line_and_a_changed_group() {
        let other = "User-agent: *\nDisallow:\n";
        assert_eq!(kinds(&compare(SERVED, &answer(200, other))), ["other-file"]);
        let mut moved = answer(301, "");
        moved.location = Some("https://www.example.com/robots.txt".into());
        let differences = compare(SERVED, &moved);
        assert_eq!(kinds(&differences), ["redirect"]);
        assert!(differences[0]
            .message
            .contains("https://www.example.com/robots.txt"));
        assert_eq!(kinds(&compare(SERVED, &answer(404, ""))), ["status"]);
        let no_sitemap = SERVED.replace("Sitemap: https://example.com/sitemap_index.xml\n", "");
        assert_eq!(
            kinds(&compare(SERVED, &answer(200, &no_sitemap))),
            ["missing"]
        );
        let changed = SERVED.replace("Disallow: /admin/", "Disallow: /admin/\nDisallow: /x/");
        let differences = compare(SERVED, &answer(200, &changed));
        assert_eq!(kinds(&differences), ["changed"]);
        assert!(differences[0].message.contains("disallow: /x/"));
    }

    #[test]
    fn only_comments_and_a_cached_copy_are_said_as_such() {
        let commented = format!("# hello\n{SERVED}");
        assert_eq!(
            kinds(&compare(SERVED, &answer(200, &commented))),
            ["comments"]
        );
        let mut cached = answer(200, &SERVED.replace("GPTBot", "ClaudeBot"));
        cached.age = Some(600);
        let differences = compare(SERVED, &cached);
        assert!(kinds(&differences).contains(&"old-copy"), "{differences:?}");
        // A version of sitemapd's file from before a change, under the ETag sitemapd gave it.
        let before = SERVED.replace("Disallow: /admin/", "Disallow: /old/");
        let mut kept = answer(200, &before);
        kept.etag = Some(format!(
            "W/\"{}\"",
            Fingerprint::of(before.as_bytes()).hex()
        ));
        let differences = compare(SERVED, &kept);
        assert_eq!(
            kinds(&differences),
            ["changed", "old-copy"],
            "{differences:?}"
        );
        // Another server's ETag says nothing.
        kept.etag = Some("\"65f1a2b3-4d\"".into());
        assert_eq!(kinds(&compare(SERVED, &kept)), ["changed"]);
    }
}
