//! What `crawlers update` reads from elsewhere: the list (an http(s) URL or a local file) and the
//! range lists, each bounded in size and time.

use crate::verify::{fetch_client, get_bounded, ListFetchError};

/// The largest file read (the list is under 100 KiB); a download has the range lists' bound.
const MAX_BODY: usize = 8 << 20;

/// Why a source could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("fetch failed")]
    Download(#[from] ListFetchError),
    #[error("larger than {MAX_BODY} bytes")]
    TooLarge,
    #[error("cannot read the file")]
    File(#[from] std::io::Error),
    #[error("unusable range list")]
    Ranges(#[from] crate::verify::ranges::ParseError),
}

/// The bytes of `source`: fetched when it is an http(s) URL, read when it is a file path.
pub async fn fetch(source: &str) -> Result<Vec<u8>, FetchError> {
    if source.starts_with("http://") || source.starts_with("https://") {
        download(source).await
    } else {
        let bytes = tokio::fs::read(source).await?;
        if bytes.len() > MAX_BODY {
            return Err(FetchError::TooLarge);
        }
        Ok(bytes)
    }
}

/// How many prefixes the range list at `url` holds.
pub async fn range_list(url: &str) -> Result<usize, FetchError> {
    let body = download(url).await?;
    Ok(crate::verify::ranges::parse_list(&body)?.len())
}

async fn download(url: &str) -> Result<Vec<u8>, FetchError> {
    Ok(get_bounded(&fetch_client(), url).await?)
}
