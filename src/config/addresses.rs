//! Where sitemapd listens besides `BIND_ADDR`: `ACCESS_LOG_ADDR` (the web server's access log)
//! and `ADMIN_BIND_ADDR` (the status page, never public).

use std::net::SocketAddr;

use super::{ConfigError, Vars};

/// `ACCESS_LOG_ADDR`: a UDP socket address, or unset.
pub(super) fn access_log_addr(vars: &Vars) -> Result<Option<SocketAddr>, ConfigError> {
    const NAME: &str = "ACCESS_LOG_ADDR";
    vars.get(NAME)
        .map(|raw| {
            raw.trim().parse().map_err(|_| {
                ConfigError::new(NAME, raw, "a UDP socket address like 127.0.0.1:5140")
            })
        })
        .transpose()
}

/// `ADMIN_BIND_ADDR`: a socket address other than the public one (the status page shows what
/// the public must not see: skipped rows, crawler activity).
/// Beyond loopback it needs `ADMIN_TOKEN`: a DNS-rebinding page or anyone on the network could
/// read it otherwise.
pub(super) fn admin_addr(
    vars: &Vars,
    public: SocketAddr,
    has_token: bool,
) -> Result<Option<SocketAddr>, ConfigError> {
    const NAME: &str = "ADMIN_BIND_ADDR";
    let Some(raw) = vars.get(NAME) else {
        return Ok(None);
    };
    let addr: SocketAddr = raw
        .trim()
        .parse()
        .map_err(|_| ConfigError::new(NAME, raw, "a socket address like 127.0.0.1:8081"))?;
    let overlaps = addr.port() == public.port()
        && (addr.ip() == public.ip() || addr.ip().is_unspecified() || public.ip().is_unspecified());
    if overlaps {
        return Err(ConfigError::new(
            NAME,
            raw,
            format!("an address other than BIND_ADDR ({public}): the status page is never public"),
        ));
    }
    if !addr.ip().is_loopback() && !has_token {
        return Err(ConfigError::new(
            NAME,
            raw,
            "a loopback address like 127.0.0.1:8081, or set ADMIN_TOKEN to require a token \
             and listen beyond loopback",
        ));
    }
    Ok(Some(addr))
}
