//! Where sitemapd listens besides `BIND_ADDR` and whom it believes there: `ACCESS_LOG_ADDR`
//! with `ACCESS_LOG_SENDERS` and `ACCESS_LOG_MAX_SKEW_SECS` (the web server's access log),
//! `ADMIN_BIND_ADDR` (the status page, never public); and the one parser of address lists
//! (`TRUSTED_PROXIES` uses it too).

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;

use super::settings::{ACCESS_LOG_ADDR, ACCESS_LOG_MAX_SKEW_SECS, ADMIN_BIND_ADDR};
use super::{ConfigError, Vars};
use crate::crawllog::Listen;

/// The loopback addresses, the default of every list of addresses believed.
pub(super) const LOOPBACK: &str = "127.0.0.1,::1";

/// The crawl log's socket (`ACCESS_LOG_ADDR`, unset: off), the senders it reads
/// (`ACCESS_LOG_SENDERS`) and how far a line's time may be from its arrival
/// (`ACCESS_LOG_MAX_SKEW_SECS`); both checked even when the log is off.
pub(super) fn access_log(vars: &Vars) -> Result<Option<Listen>, ConfigError> {
    const SENDERS: &str = "ACCESS_LOG_SENDERS";
    let senders = networks(vars, SENDERS, LOOPBACK)?;
    if senders.is_empty() {
        let raw = vars.get(SENDERS).unwrap_or_default();
        return Err(ConfigError::new(
            SENDERS,
            raw,
            "at least one address or CIDR, like 127.0.0.1,::1 or 10.0.0.0/8",
        ));
    }
    let max_skew = ACCESS_LOG_MAX_SKEW_SECS.read(vars)?;
    Ok(ACCESS_LOG_ADDR.read_optional(vars)?.map(|addr| Listen {
        addr,
        senders,
        max_skew,
    }))
}

/// Comma-separated addresses or CIDRs (`10.0.0.0/8, 192.168.1.7`) of the variable `name`, else
/// of `default`; items left empty are skipped.
pub(super) fn networks(
    vars: &Vars,
    name: &'static str,
    default: &str,
) -> Result<Vec<IpNet>, ConfigError> {
    let raw = vars.get(name).unwrap_or(default);
    super::split_list(raw)
        .map(|item| {
            item.parse::<IpNet>()
                .or_else(|_| item.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| {
                    ConfigError::new(
                        name,
                        raw,
                        "comma-separated addresses or CIDRs like 10.0.0.0/8",
                    )
                })
        })
        .collect()
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
    let Some(addr) = ADMIN_BIND_ADDR.read_optional(vars)? else {
        return Ok(None);
    };
    let refuse = |expected: String| {
        let raw = vars.get(ADMIN_BIND_ADDR.name).unwrap_or_default();
        ConfigError::new(ADMIN_BIND_ADDR.name, raw, expected)
    };
    let overlaps = addr.port() == public.port()
        && (addr.ip() == public.ip() || addr.ip().is_unspecified() || public.ip().is_unspecified());
    if overlaps {
        return Err(refuse(format!(
            "an address other than BIND_ADDR ({public}): the status page is never public"
        )));
    }
    if !addr.ip().is_loopback() && !has_token {
        return Err(refuse(
            "a loopback address like 127.0.0.1:8081, or set ADMIN_TOKEN to require a token \
             and listen beyond loopback"
                .into(),
        ));
    }
    Ok(Some(addr))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vars {
        Vars::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn the_access_log_reads_loopback_senders_unless_told_otherwise() {
        let listen = access_log(&vars(&[("ACCESS_LOG_ADDR", "0.0.0.0:5140")]))
            .unwrap()
            .expect("on");
        let loopback: Vec<IpNet> =
            vec!["127.0.0.1/32".parse().unwrap(), "::1/128".parse().unwrap()];
        assert_eq!(listen.senders, loopback);
        let listen = access_log(&vars(&[
            ("ACCESS_LOG_ADDR", "0.0.0.0:5140"),
            ("ACCESS_LOG_SENDERS", "10.0.0.0/8, 192.168.1.7"),
        ]))
        .unwrap()
        .expect("on");
        assert!(listen.senders[0].contains(&"10.1.2.3".parse::<IpAddr>().unwrap()));
        assert!(!listen.senders[0].contains(&"127.0.0.1".parse::<IpAddr>().unwrap()));
        assert!(listen.senders[1].contains(&"192.168.1.7".parse::<IpAddr>().unwrap()));
    }

    #[test]
    fn a_lines_time_may_be_five_minutes_from_its_arrival_unless_told_otherwise() {
        let on = [("ACCESS_LOG_ADDR", "127.0.0.1:5140")];
        let listen = access_log(&vars(&on)).unwrap().expect("on");
        assert_eq!(listen.max_skew, Duration::from_secs(300));
        let late = [on[0], ("ACCESS_LOG_MAX_SKEW_SECS", "86400")];
        let listen = access_log(&vars(&late)).unwrap().expect("on");
        assert_eq!(listen.max_skew, Duration::from_secs(86_400));
        for bad in ["0", "-5", "5m", "2592001"] {
            let err = access_log(&vars(&[("ACCESS_LOG_MAX_SKEW_SECS", bad)])).unwrap_err();
            assert_eq!(err.variable, "ACCESS_LOG_MAX_SKEW_SECS", "{bad}: {err}");
        }
    }

    #[test]
    fn bad_or_empty_sender_lists_name_their_variable_even_with_the_log_off() {
        for bad in ["10.0.0.0/33", "web1", " , "] {
            let err = access_log(&vars(&[("ACCESS_LOG_SENDERS", bad)])).unwrap_err();
            assert_eq!(err.variable, "ACCESS_LOG_SENDERS", "{bad}: {err}");
        }
    }
}
