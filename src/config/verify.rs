//! Crawler verification's settings: `CRAWLER_VERIFY`, `DNS_SERVER` and `TRUSTED_PROXIES`.

use ipnet::IpNet;

use super::settings::{CRAWLER_VERIFY, DNS_SERVER};
use super::{ConfigError, Vars};
use crate::verify::VerifySettings;

/// `CRAWLER_VERIFY` (`on` by default, or `off`) and `DNS_SERVER` (an address, port 53 unless
/// given; unset: the system's resolver).
pub fn verify_settings(vars: &Vars) -> Result<VerifySettings, ConfigError> {
    Ok(VerifySettings {
        on: CRAWLER_VERIFY.read(vars)?,
        dns_server: DNS_SERVER.read_optional(vars)?,
    })
}

/// `TRUSTED_PROXIES`: comma-separated addresses or CIDRs (default `127.0.0.1,::1`).
pub fn trusted_proxies(vars: &Vars) -> Result<Vec<IpNet>, ConfigError> {
    super::addresses::networks(vars, "TRUSTED_PROXIES", super::addresses::LOOPBACK)
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vars {
        Vars::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn verification_is_on_by_default_and_asks_the_system_resolver() {
        let settings = verify_settings(&vars(&[])).unwrap();
        assert_eq!(settings, VerifySettings::default());
    }

    #[test]
    fn a_dns_server_without_port_listens_on_53() {
        let settings = verify_settings(&vars(&[("DNS_SERVER", "127.0.0.1")])).unwrap();
        assert_eq!(settings.dns_server, Some("127.0.0.1:53".parse().unwrap()));
        let settings = verify_settings(&vars(&[("DNS_SERVER", "[::1]:5353")])).unwrap();
        assert_eq!(settings.dns_server, Some("[::1]:5353".parse().unwrap()));
    }

    #[test]
    fn bad_values_name_their_variable() {
        let err = verify_settings(&vars(&[("CRAWLER_VERIFY", "yes")])).unwrap_err();
        assert!(err.to_string().contains("CRAWLER_VERIFY"), "{err}");
        let err = verify_settings(&vars(&[("DNS_SERVER", "dns.example")])).unwrap_err();
        assert!(err.to_string().contains("DNS_SERVER"), "{err}");
        let err = trusted_proxies(&vars(&[("TRUSTED_PROXIES", "10.0.0.0/33")])).unwrap_err();
        assert!(err.to_string().contains("TRUSTED_PROXIES"), "{err}");
    }

    #[test]
    fn trusted_proxies_default_to_loopback_and_take_cidrs() {
        let default = trusted_proxies(&vars(&[])).unwrap();
        assert_eq!(default.len(), 2);
        let list =
            trusted_proxies(&vars(&[("TRUSTED_PROXIES", "10.0.0.0/8, 192.168.1.7")])).unwrap();
        assert!(list[0].contains(&"10.1.2.3".parse::<IpAddr>().unwrap()));
        assert!(list[1].contains(&"192.168.1.7".parse::<IpAddr>().unwrap()));
    }
}
