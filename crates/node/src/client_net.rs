//! Who may submit tasks: one entry of a scheduler instance's `clients` list
//! (crate::config::PoolConfig::clients).
//!
//! An entry is a client network (`"10.0.1.0/24"`, any port), one host
//! (`"10.0.1.5"`, any port) or one socket address (`"10.0.1.5:7001"`). A
//! task from a source no entry contains (and that is not an upstream spine)
//! is a counted `unregistered_source` drop (docs/runtime.md, threat model).

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use ipnet::IpNet;
use serde::{Deserialize, Deserializer};

/// One entry of a `clients` list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientNet {
    /// Any port of any address in the network (a host is a /32 or /128).
    Net(IpNet),
    /// Exactly this address and port.
    Addr(SocketAddr),
}

impl ClientNet {
    /// Does the entry admit `src`?
    #[inline]
    pub fn contains(&self, src: &SocketAddr) -> bool {
        match self {
            // An IPv4 client reaching an IPv6 socket appears mapped.
            ClientNet::Net(net) => net.contains(&canonical(src.ip())),
            ClientNet::Addr(a) => a == src,
        }
    }
}

/// `::ffff:a.b.c.d` as `a.b.c.d`, so IPv4 networks match it.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

impl FromStr for ClientNet {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if let Ok(a) = s.parse::<SocketAddr>() {
            return Ok(ClientNet::Addr(a));
        }
        if let Ok(net) = s.parse::<IpNet>() {
            return Ok(ClientNet::Net(net.trunc()));
        }
        if let Ok(ip) = s.parse::<IpAddr>() {
            return Ok(ClientNet::Net(IpNet::from(ip)));
        }
        Err(format!(
            "`{s}` is not a network (10.0.1.0/24), a host (10.0.1.5) or an address (10.0.1.5:7001)"
        ))
    }
}

impl fmt::Display for ClientNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientNet::Net(n) => write!(f, "{n}"),
            ClientNet::Addr(a) => write!(f, "{a}"),
        }
    }
}

impl From<SocketAddr> for ClientNet {
    fn from(a: SocketAddr) -> Self {
        ClientNet::Addr(a)
    }
}

impl<'de> Deserialize<'de> for ClientNet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn networks_hosts_and_addresses() {
        let net: ClientNet = "10.0.1.0/24".parse().unwrap();
        assert!(net.contains(&a("10.0.1.77:5000")));
        assert!(!net.contains(&a("10.0.2.1:5000")));
        // Host bits are ignored: the network is what is named.
        assert_eq!("10.0.1.9/24".parse::<ClientNet>().unwrap(), net);
        let host: ClientNet = "127.0.0.1".parse().unwrap();
        assert!(host.contains(&a("127.0.0.1:1")));
        assert!(!host.contains(&a("127.0.0.2:1")));
        let one: ClientNet = "127.0.0.1:7001".parse().unwrap();
        assert!(one.contains(&a("127.0.0.1:7001")));
        assert!(!one.contains(&a("127.0.0.1:7002")));
        assert!(net.contains(&a("[::ffff:10.0.1.3]:9")));
        assert!("10.0.1.0/33".parse::<ClientNet>().is_err());
        assert!("anywhere".parse::<ClientNet>().is_err());
        assert_eq!(net.to_string(), "10.0.1.0/24");
    }
}
