//! What `crawlers update` reads from elsewhere: the list (an http(s) URL or a local file) and the
//! range lists, each bounded in size and time.

use std::time::Duration;

/// How long one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest body read (the list is under 100 KiB, range lists a few dozen).
const MAX_BODY: usize = 8 << 20;

/// Why a source could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("cannot make the HTTP client")]
    Client(#[source] reqwest::Error),
    #[error("fetch failed")]
    Http(#[from] reqwest::Error),
    #[error("the server answered {0}")]
    Status(reqwest::StatusCode),
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
    let client = reqwest::Client::builder()
        .timeout(FETCH_TIMEOUT)
        .user_agent(concat!("sitemapd/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(FetchError::Client)?;
    let mut response = client.get(url).send().await?;
    if !response.status().is_success() {
        return Err(FetchError::Status(response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(FetchError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
