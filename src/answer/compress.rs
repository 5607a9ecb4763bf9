//! Compression on the read side: the two content codings sitemapd sends (gzip, brotli) with the
//! settings every replica shares, and [`Pipeline`], which compresses a render's XML on a thread
//! of its own while the render reads the next rows.
//!
//! Reading a page (rows decoded, XML written) and compressing it each take one core; done one
//! after the other a cold render costs their sum, side by side about the larger of the two. The
//! compressor is synchronous code on tokio's blocking pool, fed batches of XML through a channel
//! two batches deep, so memory stays a few batches plus the encoder's window whatever the page.
//!
//! Same input, same bytes: the gzip header carries no time or name, and brotli has no header, so
//! every replica sends the same file under the same ETag.

use std::io::{self, Write};

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// A compressed form sitemapd keeps and sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Coding {
    Gzip,
    Brotli,
}

/// gzip -6: the usual balance; pages are compressed once and then served from cache.
const GZIP_LEVEL: u32 = 6;
/// Brotli quality 5, window 2^20, and the size of a full page as the hint, measured on a page of
/// 50,000 URLs (docs/performance.md, "Brotli and reading beside compressing"): 0.78 of gzip -6's
/// bytes. Quality 4 and below come out larger than gzip; 6 and 7 gain under 1 % for more time.
/// A 4 MiB window (22) gave more bytes and took longer: sitemap XML repeats itself within a few
/// URLs, and each brotli render in flight holds its window in memory.
const BROTLI_QUALITY: u32 = 5;
const BROTLI_WINDOW_BITS: u32 = 20;
/// What the encoder is told to expect when it cannot know: a full page. Without a hint the
/// streaming encoder sizes its choices by the first batch it sees (64 KiB) and a page comes out
/// 36 % larger (950,616 bytes against 696,694 for the same 10.6 MB of XML). A constant, so the
/// bytes depend on the XML alone, the same on every replica.
const BROTLI_PAGE_SIZE_HINT: usize = 16 << 20;
/// The brotli writer's internal buffer.
const BROTLI_BUFFER: usize = 64 * 1024;

/// Compressed bytes gathered before they are handed out as one chunk.
const CHUNK_BYTES: usize = 16 * 1024;
/// Batches of XML waiting for the compressor: enough that neither side waits for the other on
/// a batch's worth of jitter, few enough that memory stays small.
const BATCHES_IN_FLIGHT: usize = 2;

/// The whole of a small in-memory document (index, robots.txt, feeds, llms.txt) compressed.
pub fn whole(coding: Coding, bytes: &[u8]) -> Bytes {
    let out = Vec::with_capacity(bytes.len() / 4 + 64);
    let mut encoder = Encoder::new(coding, out, bytes.len());
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    Bytes::from(encoder.finish().unwrap_or_default())
}

/// Why a pipeline's compressor stopped before the end of its input.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("compressing failed")]
    Compress(#[source] io::Error),
    #[error("the compressor stopped")]
    Stopped(#[source] tokio::task::JoinError),
}

impl From<PipelineError> for io::Error {
    fn from(e: PipelineError) -> Self {
        io::Error::other(e)
    }
}

/// A compressor running beside its caller: [`Pipeline::send`] hands it XML, `emit` gets the
/// compressed stream in chunks as it grows, and [`Pipeline::finish`] returns the last chunk (the
/// end of the stream), which `emit` never sees. A pipeline abandoned (or dropped) before
/// `finish` (the rows failed) never ends its stream: what `emit` got stays a truncated file,
/// never a complete one.
pub struct Pipeline {
    input: mpsc::Sender<Input>,
    compressor: JoinHandle<io::Result<Bytes>>,
}

/// What the compressor is handed: XML, then the end of it.
enum Input {
    Batch(Vec<u8>),
    End,
}

impl Pipeline {
    pub fn start(coding: Coding, emit: impl FnMut(Bytes) + Send + 'static) -> Self {
        let (input, mut incoming) = mpsc::channel::<Input>(BATCHES_IN_FLIGHT);
        let compressor = tokio::task::spawn_blocking(move || {
            let mut encoder = Encoder::new(coding, Chunks::new(emit), BROTLI_PAGE_SIZE_HINT);
            match compress_until_the_end(&mut encoder, &mut incoming) {
                Ok(()) => Ok(encoder.finish()?.into_rest()),
                Err(e) => {
                    // Both encoders end their stream when dropped: nothing more may go out.
                    encoder.sink_mut().seal();
                    Err(e)
                }
            }
        });
        Self { input, compressor }
    }

    /// Queues `batch` for the compressor, waiting while it is [`BATCHES_IN_FLIGHT`] behind. An
    /// error ends the pipeline: the caller drops it.
    pub async fn send(&mut self, batch: Vec<u8>) -> Result<(), PipelineError> {
        if self.input.send(Input::Batch(batch)).await.is_ok() {
            return Ok(());
        }
        // The compressor drops its end only when it stops on an error: that error is the cause.
        Err(match (&mut self.compressor).await {
            Ok(Err(e)) => PipelineError::Compress(e),
            Err(e) => PipelineError::Stopped(e),
            Ok(Ok(_)) => PipelineError::Compress(io::Error::other("input refused")),
        })
    }

    /// Stops the compressor without ending its stream (the rows failed) and waits until it
    /// has: `emit` gets nothing after this returns.
    pub async fn abandon(self) {
        drop(self.input);
        // It ends on the abandoned input; how it ended says nothing more than the rows' error.
        let _ = self.compressor.await;
    }

    /// Ends the input and waits for the compressor: the stream's last chunk.
    pub async fn finish(self) -> Result<Bytes, PipelineError> {
        // A failed send means the compressor stopped on an error, which awaiting it reports.
        let _ = self.input.send(Input::End).await;
        self.compressor
            .await
            .map_err(PipelineError::Stopped)?
            .map_err(PipelineError::Compress)
    }
}

/// Feeds the encoder until [`Input::End`]; an error if the input stops without it.
fn compress_until_the_end<W: Write>(
    encoder: &mut Encoder<W>,
    incoming: &mut mpsc::Receiver<Input>,
) -> io::Result<()> {
    loop {
        match incoming.blocking_recv() {
            Some(Input::Batch(batch)) => encoder.write_all(&batch)?,
            Some(Input::End) => return Ok(()),
            None => return Err(io::Error::other("abandoned before the end of its input")),
        }
    }
}

/// The two encoders behind one writing interface (boxed: each holds its state inline, and the
/// two differ widely in size).
enum Encoder<W: Write> {
    Gzip(Box<flate2::write::GzEncoder<W>>),
    Brotli(Box<brotli::CompressorWriter<W>>),
}

impl<W: Write> Encoder<W> {
    /// An encoder writing into `out`, for input of about `size_hint` bytes.
    fn new(coding: Coding, out: W, size_hint: usize) -> Self {
        match coding {
            Coding::Gzip => Self::Gzip(Box::new(
                flate2::GzBuilder::new().write(out, flate2::Compression::new(GZIP_LEVEL)),
            )),
            Coding::Brotli => {
                let params = brotli::enc::BrotliEncoderParams {
                    quality: BROTLI_QUALITY as i32,
                    lgwin: BROTLI_WINDOW_BITS as i32,
                    size_hint,
                    ..Default::default()
                };
                let writer = brotli::CompressorWriter::with_params(out, BROTLI_BUFFER, &params);
                Self::Brotli(Box::new(writer))
            }
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Self::Gzip(gz) => gz.write_all(bytes),
            Self::Brotli(br) => br.write_all(bytes),
        }
    }

    fn sink_mut(&mut self) -> &mut W {
        match self {
            Self::Gzip(gz) => gz.get_mut(),
            Self::Brotli(br) => br.get_mut(),
        }
    }

    /// Ends the stream (gzip's checksum, brotli's last meta-block) and returns the output.
    fn finish(self) -> io::Result<W> {
        match self {
            Self::Gzip(gz) => gz.finish(),
            Self::Brotli(br) => Ok(br.into_inner()),
        }
    }
}

/// The compressed stream cut into chunks of about [`CHUNK_BYTES`], each handed to `emit` as an
/// exact-size copy (a chunk may be cached; the working buffer is reused).
struct Chunks<F> {
    buffer: Vec<u8>,
    emit: F,
    /// Set when the stream is abandoned: whatever the encoder still writes is dropped.
    sealed: bool,
}

impl<F: FnMut(Bytes)> Chunks<F> {
    fn new(emit: F) -> Self {
        Self {
            buffer: Vec::with_capacity(2 * CHUNK_BYTES),
            emit,
            sealed: false,
        }
    }

    fn seal(&mut self) {
        self.sealed = true;
    }

    /// What was not handed out yet.
    fn into_rest(self) -> Bytes {
        Bytes::from(self.buffer)
    }
}

impl<F: FnMut(Bytes)> Write for Chunks<F> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.sealed {
            return Ok(bytes.len());
        }
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= CHUNK_BYTES {
            (self.emit)(Bytes::copy_from_slice(&self.buffer));
            self.buffer.clear();
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::sync::{Arc, Mutex};

    fn sample(urls: usize) -> Vec<u8> {
        let mut xml = b"<urlset>".to_vec();
        for i in 0..urls {
            xml.extend_from_slice(
                format!(
                    "<url><loc>https://e.com/p/{i}?a={}&amp;b={}</loc></url>\n",
                    (i * 7919) % 1_000_003,
                    i % 7
                )
                .as_bytes(),
            );
        }
        xml
    }

    fn decode(coding: Coding, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        match coding {
            Coding::Gzip => flate2::read::GzDecoder::new(bytes).read_to_end(&mut out),
            Coding::Brotli => brotli::Decompressor::new(bytes, 4096).read_to_end(&mut out),
        }
        .expect("decodes");
        out
    }

    async fn through_pipeline(coding: Coding, xml: &[u8]) -> (Vec<u8>, usize) {
        let chunks = Arc::new(Mutex::new(Vec::<Bytes>::new()));
        let sink = chunks.clone();
        let mut pipeline = Pipeline::start(coding, move |chunk| sink.lock().unwrap().push(chunk));
        for batch in xml.chunks(10_000) {
            pipeline.send(batch.to_vec()).await.unwrap();
        }
        let last = pipeline.finish().await.unwrap();
        let chunks = chunks.lock().unwrap();
        let mut all: Vec<u8> = chunks.iter().flat_map(|c| c.to_vec()).collect();
        all.extend_from_slice(&last);
        (all, chunks.len())
    }

    #[tokio::test]
    async fn a_pipeline_streams_a_whole_file_and_the_same_batches_give_the_same_bytes() {
        let xml = sample(20_000);
        for coding in [Coding::Gzip, Coding::Brotli] {
            let (piped, emitted) = through_pipeline(coding, &xml).await;
            assert_eq!(decode(coding, &piped), xml, "{coding:?} round trip");
            assert!(emitted >= 1, "{coding:?}: chunks come out before the end");
            // zlib's output depends on how its input is cut, so replicas agree because a page
            // is always cut at the same places (batches end after the element that fills them).
            let (again, _) = through_pipeline(coding, &xml).await;
            assert_eq!(again, piped, "{coding:?}");
        }
    }

    #[tokio::test]
    async fn a_pipeline_abandoned_before_its_end_never_ends_the_stream_nor_emits_after() {
        let xml = sample(20_000);
        for coding in [Coding::Gzip, Coding::Brotli] {
            let chunks = Arc::new(Mutex::new(Vec::<Bytes>::new()));
            let sink = chunks.clone();
            let mut pipeline = Pipeline::start(coding, move |c| sink.lock().unwrap().push(c));
            for batch in xml.chunks(10_000) {
                pipeline.send(batch.to_vec()).await.unwrap();
            }
            pipeline.abandon().await;
            assert_eq!(
                Arc::strong_count(&chunks),
                1,
                "{coding:?}: the compressor (and its emit) is gone once abandoned"
            );
            let sent: Vec<u8> = chunks
                .lock()
                .unwrap()
                .iter()
                .flat_map(|c| c.to_vec())
                .collect();
            let mut out = Vec::new();
            let decoded = match coding {
                Coding::Gzip => flate2::read::GzDecoder::new(&sent[..]).read_to_end(&mut out),
                Coding::Brotli => brotli::BrotliDecompress(&mut &sent[..], &mut out).map(|_| 0),
            };
            assert!(
                decoded.is_err(),
                "{coding:?}: what was emitted ({} bytes) is a truncated file: {decoded:?}",
                sent.len()
            );
        }
    }

    #[test]
    fn brotli_is_smaller_than_gzip_on_sitemap_xml() {
        let xml = sample(20_000);
        let (gz, br) = (whole(Coding::Gzip, &xml), whole(Coding::Brotli, &xml));
        assert!(br.len() < gz.len(), "brotli {} gzip {}", br.len(), gz.len());
    }

    #[test]
    fn the_same_input_gives_the_same_bytes() {
        let xml = sample(1_000);
        for coding in [Coding::Gzip, Coding::Brotli] {
            assert_eq!(whole(coding, &xml), whole(coding, &xml));
        }
    }
}
