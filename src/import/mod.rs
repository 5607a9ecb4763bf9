//! `sitemapd import FILE|-`: loads the entries of existing sitemaps into the built-in table.
//!
//! The migration path for a site that had static sitemaps. The input is an XML sitemap, the
//! same gzipped, a text sitemap, or a sitemap index whose files are found beside it; which one
//! is told by content ([`source`]). A reader thread parses ([`xml`], [`text`]) and checks every
//! entry by the rules the server serves by ([`validate`]), handing batches of about a thousand
//! entries through a small channel to the writer, which upserts each batch in one transaction
//! ([`Store::import_batch`]). Memory holds a batch or two, whatever the size of the files.
//!
//! Failures are local: a skipped entry is counted with its reason, a file that is missing or
//! malformed is reported with its position, and the rest still imports; what was written
//! stays. Everything goes into `sitemap_entries`, even when `SITEMAP_SOURCE` names a view.

mod report;
mod source;
mod text;
mod validate;
mod xml;

use std::collections::HashSet;
use std::io::BufRead;
use std::path::Path;

use tokio::sync::mpsc;

use crate::sitemap::EntryRules;
use crate::store::{ImportCounts, ImportedEntry, Store};
pub use report::ImportReport;
pub use source::Input;
use source::{Format, Opened, Tracked};
use text::TextLines;
use xml::{Item, ParsedUrl, SitemapXml};

/// Entries written per transaction.
const BATCH_SIZE: usize = 1000;
/// Batches parsed ahead of the writer.
const BATCHES_AHEAD: usize = 2;

/// Imports `input` into `store` (migrated already), checking entries with `rules`.
/// `progress` sees the running totals after each batch.
pub async fn run(
    store: &Store,
    rules: EntryRules,
    input: Input,
    mut progress: impl FnMut(&ImportCounts),
) -> ImportReport {
    let (batches, mut incoming) = mpsc::channel(BATCHES_AHEAD);
    let reading = tokio::task::spawn_blocking(move || Reader::new(rules, batches).read(&input));
    let mut written = ImportCounts::default();
    let mut stopped = None;
    while let Some(batch) = incoming.recv().await {
        match store.import_batch(&batch).await {
            Ok(counts) => {
                written.add(counts);
                progress(&written);
            }
            Err(e) => {
                stopped = Some(crate::error::Chain(&e).to_string());
                break;
            }
        }
    }
    // The reader stops at its next batch once nobody receives.
    drop(incoming);
    let mut report = match reading.await {
        Ok(report) => report,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    };
    report.written = written;
    report.stopped = stopped;
    report
}

/// Why reading stops before the end of a file.
enum Halt {
    /// This file cannot be read further; the others still can.
    File(String),
    /// The writer has stopped: nothing more will be written.
    Writer,
}

/// The index a file was listed in, for reports.
struct Listing<'a> {
    index: &'a str,
    line: Option<u64>,
}

/// The blocking side: reads files, checks entries, sends batches.
struct Reader {
    rules: EntryRules,
    out: mpsc::Sender<Vec<ImportedEntry>>,
    batch: Vec<ImportedEntry>,
    batch_locs: HashSet<String>,
    report: ImportReport,
}

impl Reader {
    fn new(rules: EntryRules, out: mpsc::Sender<Vec<ImportedEntry>>) -> Self {
        Self {
            rules,
            out,
            batch: Vec::with_capacity(BATCH_SIZE),
            batch_locs: HashSet::with_capacity(BATCH_SIZE),
            report: ImportReport::default(),
        }
    }

    fn read(mut self, input: &Input) -> ImportReport {
        if self.file(input, None).is_ok() {
            let _ = self.flush();
        }
        self.report
    }

    /// Reads one file to its end; a failure is recorded and only `Halt::Writer` goes up.
    fn file(&mut self, input: &Input, listing: Option<&Listing>) -> Result<(), Halt> {
        let label = input.label();
        let outcome = match source::open(input) {
            Ok(opened) => self.content(input, &label, opened, listing.is_some()),
            Err(e) => Err(Halt::File(open_error(&e, listing))),
        };
        match outcome {
            Ok(()) => self.report.files_read += 1,
            Err(Halt::File(reason)) => self.report.files_failed.push(format!("{label}: {reason}")),
            Err(Halt::Writer) => return Err(Halt::Writer),
        }
        Ok(())
    }

    fn content(
        &mut self,
        input: &Input,
        label: &str,
        opened: Opened,
        listed: bool,
    ) -> Result<(), Halt> {
        match opened.format {
            Format::Text => self.text(label, opened.reader),
            Format::Xml => {
                let mut doc = SitemapXml::new(Tracked::new(opened.reader));
                let result = self.xml(input, label, &mut doc, listed);
                self.report.unknown_elements += doc.unknown_elements();
                result.map_err(|halt| match halt {
                    Halt::File(reason) if opened.gzipped => {
                        Halt::File(format!("{reason} (positions in the gunzipped content)"))
                    }
                    other => other,
                })
            }
        }
    }

    fn xml<R: BufRead>(
        &mut self,
        input: &Input,
        label: &str,
        doc: &mut SitemapXml<R>,
        listed: bool,
    ) -> Result<(), Halt> {
        // An index may list one file many times: it is read once (the set holds at most the
        // index's own entries, 50,000 by the protocol).
        let mut listed_files: HashSet<String> = HashSet::new();
        loop {
            match doc.next_item() {
                Ok(None) => return Ok(()),
                Ok(Some(Item::Url(url))) => self.url(label, url)?,
                Ok(Some(Item::Sitemap { .. })) if listed => {
                    return Err(Halt::File(
                        "an index listed by an index: only one level is followed".into(),
                    ))
                }
                Ok(Some(Item::Sitemap { loc, .. })) if listed_files.contains(loc.trim()) => {
                    self.report.files_listed_again += 1;
                }
                Ok(Some(Item::Sitemap { loc, line })) => {
                    listed_files.insert(loc.trim().to_string());
                    let listing = Listing { index: label, line };
                    match listed_file(&input.directory(), &loc) {
                        Ok(file) => self.file(&file, Some(&listing))?,
                        Err(reason) => self
                            .report
                            .files_failed
                            .push(format!("{loc:?}{}: {reason}", listed_in(&listing))),
                    }
                }
                Err(e) => return Err(Halt::File(e.to_string())),
            }
        }
    }

    fn url(&mut self, label: &str, url: ParsedUrl) -> Result<(), Halt> {
        let at = match url.line {
            Some(line) => format!("{label} line {line}"),
            None => label.to_string(),
        };
        let loc = url.loc.clone().unwrap_or_default();
        match validate::xml_entry(&self.rules, url) {
            Ok(accepted) => {
                for dropped in accepted.dropped {
                    self.report
                        .dropped
                        .add(dropped.tag, || format!("{at}: {:?}", dropped.value));
                }
                self.push(accepted.entry)
            }
            Err(reason) => {
                self.report
                    .skipped
                    .add(reason.as_str(), || format!("{at}: {:?}", loc.trim()));
                Ok(())
            }
        }
    }

    fn text(&mut self, label: &str, reader: impl BufRead) -> Result<(), Halt> {
        let mut lines = TextLines::new(reader);
        while let Some(line) = lines
            .next_line()
            .map_err(|e| Halt::File(format!("line {}: cannot read: {e}", lines.number() + 1)))?
        {
            let entry = line
                .url
                .as_deref()
                .map_err(|reason| *reason)
                .and_then(|url| validate::text_entry(&self.rules, url));
            match entry {
                Ok(entry) => self.push(entry)?,
                Err(reason) => self.report.skipped.add(reason.as_str(), || {
                    let shown = line.url.as_deref().unwrap_or("(unreadable line)");
                    format!("{label} line {}: {shown:?}", line.number)
                }),
            }
        }
        Ok(())
    }

    /// Adds an entry to the batch. A URL already in the batch sends the batch first, so a
    /// URL listed twice is inserted, then updated, as if the files were read one by one.
    fn push(&mut self, entry: ImportedEntry) -> Result<(), Halt> {
        if self.batch_locs.contains(&entry.loc) {
            self.flush()?;
        }
        self.batch_locs.insert(entry.loc.clone());
        self.batch.push(entry);
        if self.batch.len() >= BATCH_SIZE {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Halt> {
        if self.batch.is_empty() {
            return Ok(());
        }
        self.batch_locs.clear();
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH_SIZE));
        self.out.blocking_send(batch).map_err(|_| Halt::Writer)
    }
}

/// The file a `<sitemap><loc>` names: its URL's last path segment, in `directory`.
fn listed_file(directory: &Path, loc: &str) -> Result<Input, String> {
    let url = url::Url::parse(loc.trim()).map_err(|e| format!("not a URL ({e})"))?;
    let segment = url
        .path_segments()
        .and_then(|mut segments| segments.next_back())
        .unwrap_or("");
    let name = percent_encoding::percent_decode_str(segment)
        .decode_utf8()
        .map_err(|_| "its file name is not UTF-8".to_string())?;
    let plain =
        !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0']);
    if !plain {
        return Err(format!("no file name in its path {:?}", url.path()));
    }
    Ok(Input::File(directory.join(name.as_ref())))
}

fn open_error(e: &std::io::Error, listing: Option<&Listing>) -> String {
    let listed = listing.map(listed_in).unwrap_or_default();
    match e.kind() {
        std::io::ErrorKind::NotFound => format!("not found{listed}"),
        _ => format!("cannot read: {e}{listed}"),
    }
}

fn listed_in(listing: &Listing) -> String {
    match listing.line {
        Some(line) => format!(" (listed in {} line {line})", listing.index),
        None => format!(" (listed in {})", listing.index),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_file_is_the_last_segment_of_its_url_beside_the_index() {
        let dir = Path::new("/srv/old");
        assert_eq!(
            listed_file(dir, " https://e.com/sitemaps/sitemap-3.xml.gz?v=2 "),
            Ok(Input::File("/srv/old/sitemap-3.xml.gz".into()))
        );
        assert_eq!(
            listed_file(dir, "https://e.com/a%20b.xml"),
            Ok(Input::File("/srv/old/a b.xml".into()))
        );
        for bad in [
            "https://e.com/",
            "https://e.com/x/..",
            "https://e.com/%2E%2E",
            "https://e.com/a%2Fb",
            "sitemap.xml",
        ] {
            assert!(listed_file(dir, bad).is_err(), "{bad}");
        }
    }
}
