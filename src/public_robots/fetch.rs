//! One fetch of a public robots.txt, as a crawler makes it: a search crawler's User-Agent, no
//! redirect followed (a redirect is itself a difference), bounded in time and size.

use std::time::Duration;

use super::compare::Answer;

/// The User-Agent sent: Googlebot's, so a front that treats crawlers apart does so here too.
pub const CRAWLER_USER_AGENT: &str =
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
/// How long the fetch may take.
const TIMEOUT: Duration = Duration::from_secs(15);
/// Crawlers read at most 500 KiB (RFC 9309); a little more tells a longer file apart.
const MAX_BODY: usize = 512 << 10;

/// Why the public robots.txt could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum PublicFetchError {
    #[error("cannot make the HTTP client")]
    Client(#[source] reqwest::Error),
    #[error("fetch failed")]
    Http(#[from] reqwest::Error),
}

/// What `url` answers a crawler.
pub async fn fetch_public(url: &str) -> Result<Answer, PublicFetchError> {
    let client = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(CRAWLER_USER_AGENT)
        .build()
        .map_err(PublicFetchError::Client)?;
    let mut response = client.get(url).send().await?;
    let header = |name: reqwest::header::HeaderName| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let location = header(reqwest::header::LOCATION);
    let age = header(reqwest::header::AGE).and_then(|a| a.trim().parse().ok());
    let etag = header(reqwest::header::ETAG);
    let status = response.status().as_u16();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_BODY {
            body.truncate(MAX_BODY);
            break;
        }
    }
    Ok(Answer {
        status,
        location,
        age,
        etag,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}
